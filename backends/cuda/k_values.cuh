/* libportable CUDA backend — how values are stored and converted: the
 * 16-bit storage types, widening to the compute type and rounding back,
 * and the conversions of scalars and of COPY. Shared by the eager kernels
 * (k_common.cuh) and the kernels generated at run time for fused chains
 * (exec_fused_source.c), which NVRTC and the simulator's host compiler
 * build from this same text: it includes nothing that needs the CUDA
 * runtime's headers. */
#ifndef PTCU_K_VALUES_CUH
#define PTCU_K_VALUES_CUH

#include <stdint.h>

#include <type_traits>

#include "portable/half.h"
#include "portable/numeric_rules.h"

namespace ptcu {

typedef unsigned char u8;

/* ---- Arithmetic rules ---- */

template <class T> constexpr bool is_float_v = std::is_floating_point<T>::value;

/* 16-bit storage (PT_F16, PT_BF16): the bit pattern, converted only through
 * portable/half.h, so the GPU build and the CPU simulator round the same
 * way bit for bit (round to nearest even in integer arithmetic: no
 * flush-to-zero or fast-math can change it). Kernels never compute in
 * these types: they load them as float (widen), compute in f32 and round
 * the result once (narrow); see Stored in k_common.cuh. */
struct f16 {
    uint16_t bits;
};
struct bf16 {
    uint16_t bits;
};
template <class T> constexpr bool is_half_v = std::is_same<T, f16>::value || std::is_same<T, bf16>::value;

__host__ __device__ __forceinline__ float widen(f16 x) { return pt_f16_bits_to_f32(x.bits); }
__host__ __device__ __forceinline__ float widen(bf16 x) { return pt_bf16_bits_to_f32(x.bits); }
/* Anything else is read as it is. */
template <class T> __host__ __device__ __forceinline__ T widen(T x) { return x; }

/* A computed value (float for 16-bit storage) -> S: rounded once when S is
 * 16-bit, converted as C does otherwise (S == T: itself). */
template <class S, class T> __host__ __device__ __forceinline__ S narrow(T v) {
    if constexpr (std::is_same<S, f16>::value) return f16{pt_f32_to_f16_bits((float)v)};
    else if constexpr (std::is_same<S, bf16>::value) return bf16{pt_f32_to_bf16_bits((float)v)};
    else return (S)v;
}
/* The type a kernel computes a stored T in: float for f16/bf16. */
template <class T> using compute_t = typename std::conditional<is_half_v<T>, float, T>::type;

/* double -> T as every backend does it: floats round; integers follow
 * portable/numeric_rules.h (i32/i64 truncate toward zero and saturate, NaN
 * -> 0; u8 truncates through int64 and wraps, -1.0 -> 255). */
template <class T> __host__ __device__ __forceinline__ T from_double(double s) {
    if constexpr (std::is_same<T, f16>::value) return f16{pt_f64_to_f16_bits(s)}; /* rounded once */
    else if constexpr (std::is_same<T, bf16>::value) return bf16{pt_f64_to_bf16_bits(s)};
    else if constexpr (is_float_v<T>) return (T)s;
    else if constexpr (std::is_same<T, int32_t>::value) return pt_sat_i32_f64(s);
    else if constexpr (std::is_same<T, int64_t>::value) return pt_sat_i64_f64(s);
    else return pt_wrap_u8_f64(s);
}

/* Element conversion for COPY (any dtype pair). A 16-bit input is exactly
 * a float; every conversion to 16 bits rounds once from the exact value
 * (integers go through double: exact up to 2^53). */
template <class O, class I> __device__ __forceinline__ O convert(I x) {
    if constexpr (std::is_same<O, I>::value) {
        return x;
    } else if constexpr (is_half_v<I>) {
        return convert<O, float>(widen(x));
    } else if constexpr (is_float_v<I> || is_half_v<O>) {
        return from_double<O>((double)x);
    } else if constexpr (is_float_v<O>) {
        return (O)x;
    } else {
        /* integer -> integer: sign-extend to 64 bits, keep the low bits. */
        return (O)(uint64_t)(int64_t)x;
    }
}

} /* namespace ptcu */

#endif
