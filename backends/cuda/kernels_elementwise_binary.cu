/* libportable CUDA backend — binary arithmetic: ADD SUB MUL DIV POW MAXIMUM
 * MINIMUM, and AXPY (out = in0 + alpha * in1). f32 f64 i32 i64 f16 bf16
 * (16-bit: computed in f32, rounded once); POW floats only.
 * Integers wrap; integer DIV truncates, x/0 = 0, INT_MIN/-1 = INT_MIN;
 * MAXIMUM/MINIMUM propagate NaN. */
#include "k_common.cuh"

namespace ptcu {

template <int OP, class T> struct BinaryF : EwSignature<2, T, T, T> {
    __device__ __forceinline__ T operator()(int64_t, T a, T b, u8) const {
        if constexpr (OP == PT_OP_ADD) return add_w<T>(a, b);
        else if constexpr (OP == PT_OP_SUB) return sub_w<T>(a, b);
        else if constexpr (OP == PT_OP_MUL) return mul_w<T>(a, b);
        else if constexpr (OP == PT_OP_DIV) return div_rule<T>(a, b);
        else if constexpr (OP == PT_OP_MAXIMUM) return max_nan<T>(a, b);
        else if constexpr (OP == PT_OP_MINIMUM) return min_nan<T>(a, b);
        else if constexpr (std::is_same<T, float>::value) return powf(a, b); /* PT_OP_POW */
        else return pow(a, b);
    }
};

template <class T> struct AxpyF : EwSignature<2, T, T, T> {
    T alpha;
    __device__ __forceinline__ T operator()(int64_t, T y, T x, u8) const {
        return add_w<T>(y, mul_w<T>(alpha, x));
    }
};

/* Computed in T, operands stored as S (f16/bf16 compute in float). */
template <class T, class S> static cudaError_t binary_typed(const ptcu_ew_launch *l, cudaStream_t s) {
    if (l->kind == PT_OP_AXPY) {
        AxpyF<T> f;
        f.alpha = from_double<T>(l->scalar);
        return launch_ew_as<S>(l, s, f);
    }
    if constexpr (is_float_v<T>)
        if (l->kind == PT_OP_POW) return launch_ew_as<S>(l, s, BinaryF<PT_OP_POW, T>());
    return for_kind<PT_OP_ADD, PT_OP_SUB, PT_OP_MUL, PT_OP_DIV, PT_OP_MAXIMUM, PT_OP_MINIMUM>(
        l->kind, [&](auto op) { return launch_ew_as<S>(l, s, BinaryF<decltype(op)::value, T>()); });
}

} /* namespace ptcu */

extern "C" cudaError_t ptcu_launch_binary(const ptcu_ew_launch *l, cudaStream_t stream) {
    using namespace ptcu;
    return with_numeric_compute(l->dtype[0],
                                [&](auto t, auto st) { return binary_typed<decltype(t), decltype(st)>(l, stream); });
}
