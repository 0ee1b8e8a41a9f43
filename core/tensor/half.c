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

pt_status pt_f32_to_f16(const float *src, uint16_t *dst, size_t n) {
    if (!buffers_given("pt_f32_to_f16", src, dst, n)) return PT_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; ++i) dst[i] = pt_f32_to_f16_bits(src[i]);
    return PT_OK;
}

pt_status pt_f16_to_f32(const uint16_t *src, float *dst, size_t n) {
    if (!buffers_given("pt_f16_to_f32", src, dst, n)) return PT_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; ++i) dst[i] = pt_f16_bits_to_f32(src[i]);
    return PT_OK;
}

pt_status pt_f32_to_bf16(const float *src, uint16_t *dst, size_t n) {
    if (!buffers_given("pt_f32_to_bf16", src, dst, n)) return PT_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; ++i) dst[i] = pt_f32_to_bf16_bits(src[i]);
    return PT_OK;
}

pt_status pt_bf16_to_f32(const uint16_t *src, float *dst, size_t n) {
    if (!buffers_given("pt_bf16_to_f32", src, dst, n)) return PT_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; ++i) dst[i] = pt_bf16_bits_to_f32(src[i]);
    return PT_OK;
}
