/* libportable CUDA backend — the accumulators of SUM, MEAN and MAX and how
 * a finished one is stored: shared by the eager reductions
 * (kernels_reduce.cu) and the kernels generated at run time for a fused
 * chain with a reduction after it (exec_fused_source.c), which NVRTC and
 * the simulator's host compiler build from this same text. Like
 * k_values.cuh it includes nothing that needs the CUDA runtime's headers.
 *
 * Accumulators: f32/f64 (and f16/bf16, widened) sums in double, integer
 * sums in uint64 (wrapping, then truncated to the output's width); MAX in
 * the compute type, propagating NaN. */
#ifndef PTCU_K_REDUCE_ACC_CUH
#define PTCU_K_REDUCE_ACC_CUH

#include <math.h>
#include <stdint.h>

#include <type_traits>

#include "k_values.cuh"
#include "portable/ew_math.h"

namespace ptcu {

template <class T> struct SumR {
    typedef typename std::conditional<is_float_v<compute_t<T>>, double, unsigned long long>::type Acc;
    __device__ static Acc identity() { return (Acc)0; }
    __device__ static Acc lift(T v, int64_t) {
        if constexpr (is_float_v<compute_t<T>>) return (double)widen(v);
        else return (unsigned long long)(long long)v;
    }
    __device__ static Acc combine(Acc a, Acc b) { return a + b; }
};

template <class T> struct MaxR {
    typedef compute_t<T> Acc;
    __device__ static Acc identity() {
        if constexpr (is_float_v<Acc>) return (Acc)-INFINITY;
        else if constexpr (std::is_same<T, u8>::value) return (T)0;
        else if constexpr (std::is_same<T, int32_t>::value) return (T)INT32_MIN;
        else return (T)INT64_MIN;
    }
    __device__ static Acc lift(T v, int64_t) { return widen(v); }
    __device__ static Acc combine(Acc a, Acc b) { return pt_ew_max<Acc>(a, b); }
};

/* A finished accumulator written as the output's stored type O: floats
 * round once (16-bit outputs from the double), integers truncate to O's
 * width through int64 as C's conversions of the wrapped sum do. */
template <class O, class Acc> __device__ __forceinline__ void store_acc(O *out, int64_t k, Acc v) {
    if constexpr (is_half_v<O>) out[k] = from_double<O>((double)v);
    else if constexpr (is_float_v<O> || std::is_same<O, int64_t>::value) out[k] = (O)v;
    else out[k] = (O)(uint64_t)(int64_t)v;
}

/* The result of a finished accumulator: MEAN divides a float sum by count
 * (the reduced extent; 0 gives NaN as 0/0 does). */
template <class O, class Acc>
__device__ __forceinline__ void store_result(O *out, int64_t k, Acc v, bool mean, int64_t count) {
    if (!mean) {
        store_acc(out, k, v);
    } else {
        if constexpr (std::is_same<Acc, double>::value) store_acc(out, k, v / (double)count);
    }
}

} /* namespace ptcu */

#endif
