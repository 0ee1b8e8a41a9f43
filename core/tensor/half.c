/* The public host-buffer conversions to and from 16-bit storage: loops over
 * the one per-element definition in portable/half.h (the cpu plugin has its
 * own F16C path for tensors; these are for users' buffers). */
#include "portable/half.h"
#include "tensor/tensor_internal.h"

/* Both buffers, unless there is nothing to convert. */
static bool buffers_given(const char *fn, const void *src, const void *dst, size_t n) {
    if (n == 0 || (src && dst)) return true;
    pt__error(PT_ERR_INVALID_ARGUMENT, fn, "%s NULL for %zu elements; pass host buffers of n elements each",
              !src ? (!dst ? "src and dst are" : "src is") : "dst is", n);
    return false;
}

/* One definition for the four: check the buffers, then convert each
 * element with portable/half.h's per-element function. */
#define PT__HOST_CONVERTER(name, src_t, dst_t, convert)                       \
    pt_status name(const src_t *src, dst_t *dst, size_t n) {                 \
        if (!buffers_given(#name, src, dst, n)) return PT_ERR_INVALID_ARGUMENT; \
        for (size_t i = 0; i < n; ++i) dst[i] = convert(src[i]);             \
        return PT_OK;                                                        \
    }

PT__HOST_CONVERTER(pt_f32_to_f16, float, uint16_t, pt_f32_to_f16_bits)
PT__HOST_CONVERTER(pt_f16_to_f32, uint16_t, float, pt_f16_bits_to_f32)
PT__HOST_CONVERTER(pt_f32_to_bf16, float, uint16_t, pt_f32_to_bf16_bits)
PT__HOST_CONVERTER(pt_bf16_to_f32, uint16_t, float, pt_bf16_bits_to_f32)
