/* The public host-buffer conversions to and from 16-bit storage: loops over
 * the one per-element definition in portable/half.h (the cpu plugin has its
 * own F16C path for tensors; these are for users' buffers). */
#include "portable/half.h"
#include "tensor/tensor_internal.h"

/* A NULL buffer (with elements to convert) is PT_ERR_INVALID_ARGUMENT naming
 * it: these return nothing, so the last error is the only report. */
static bool null_buffers(const char *fn, const void *src, const void *dst, size_t n) {
    if (n == 0 || (src && dst)) return true;
    pt__error(PT_ERR_INVALID_ARGUMENT, fn, "%s is NULL with n %zu; pass a buffer of n elements",
              src ? "dst" : "src", n);
    return false;
}

/* One definition for the four: the NULL check, then the per-element loop. */
#define PT__HOST_CONVERTER(name, from, to, one)                                   \
    void name(const from *src, to *dst, size_t n) {                              \
        if (!null_buffers(#name, src, dst, n)) return;                           \
        for (size_t i = 0; i < n; ++i) dst[i] = one(src[i]);                     \
    }

PT__HOST_CONVERTER(pt_f32_to_f16, float, uint16_t, pt_f32_to_f16_bits)
PT__HOST_CONVERTER(pt_f16_to_f32, uint16_t, float, pt_f16_bits_to_f32)
PT__HOST_CONVERTER(pt_f32_to_bf16, float, uint16_t, pt_f32_to_bf16_bits)
PT__HOST_CONVERTER(pt_bf16_to_f32, uint16_t, float, pt_bf16_bits_to_f32)
