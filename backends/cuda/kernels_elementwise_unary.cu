/* libportable CUDA backend — unary ops: NEG ABS RELU ADD_SCALAR MUL_SCALAR
 * CLAMP (f32 f64 i32 i64, integers wrap) and EXP LOG SQRT SIGMOID TANH SIN
 * COS GELU GELU_GRAD (f32 f64, the accurate libdevice functions: no
 * fast-math); f16 and bf16 operands are computed in f32 and rounded once
 * (Stored). RELU and
 * CLAMP keep NaN. The scalars of *_SCALAR and CLAMP are converted to the
 * dtype first (from_double, which saturates CLAMP's +-2^63). */
#include "k_common.cuh"

namespace ptcu {

template <int OP, class T> struct UnaryF : EwSignature<1, T, T> {
    T scalar, scalar2;
    __device__ __forceinline__ T operator()(int64_t, T a, u8, u8) const {
        if constexpr (OP == PT_OP_NEG) {
            return neg_w<T>(a);
        } else if constexpr (OP == PT_OP_ABS) {
            if constexpr (std::is_same<T, float>::value) return fabsf(a);
            else if constexpr (is_float_v<T>) return fabs(a);
            else return a < (T)0 ? neg_w<T>(a) : a; /* |INT_MIN| wraps to INT_MIN */
        } else if constexpr (OP == PT_OP_RELU) {
            return (a > (T)0 || is_nan(a)) ? a : (T)0;
        } else if constexpr (OP == PT_OP_ADD_SCALAR) {
            return add_w<T>(a, scalar);
        } else if constexpr (OP == PT_OP_MUL_SCALAR) {
            return mul_w<T>(a, scalar);
        } else if constexpr (OP == PT_OP_EXP) {
            return exp_t<T>(a);
        } else if constexpr (OP == PT_OP_LOG) {
            return log_t<T>(a);
        } else if constexpr (OP == PT_OP_SQRT) {
            if constexpr (std::is_same<T, float>::value) return sqrtf(a); else return sqrt(a);
        } else if constexpr (OP == PT_OP_CLAMP) {
            return min_nan<T>(max_nan<T>(a, scalar), scalar2);
        } else if constexpr (OP == PT_OP_SIN) {
            if constexpr (std::is_same<T, float>::value) return sinf(a); else return sin(a);
        } else if constexpr (OP == PT_OP_COS) {
            if constexpr (std::is_same<T, float>::value) return cosf(a); else return cos(a);
        } else if constexpr (OP == PT_OP_GELU) { /* x Phi(x), Phi through erfc (exact for x << 0) */
            if constexpr (std::is_same<T, float>::value) return a * 0.5f * erfcf(-a * 0.70710678118654752f);
            else return a * 0.5 * erfc(-a * 0.70710678118654752440);
        } else if constexpr (OP == PT_OP_GELU_GRAD) { /* Phi(x) + x phi(x) */
            if constexpr (std::is_same<T, float>::value)
                return 0.5f * erfcf(-a * 0.70710678118654752f) + a * 0.39894228040143268f * expf(-0.5f * a * a);
            else
                return 0.5 * erfc(-a * 0.70710678118654752440) + a * 0.39894228040143267794 * exp(-0.5 * a * a);
        } else if constexpr (OP == PT_OP_SIGMOID) {
            return (T)1 / ((T)1 + exp_t<T>(-a));
        } else { /* PT_OP_TANH */
            if constexpr (std::is_same<T, float>::value) return tanhf(a); else return tanh(a);
        }
    }
};

/* The transcendental kinds exist for float types only: cudaErrorNotSupported
 * from the first list means "not one of these", never a failed launch. */
template <class T, class S> static cudaError_t unary_typed(const ptcu_ew_launch *l, cudaStream_t s) {
    const T scalar = from_double<T>(l->scalar), scalar2 = from_double<T>(l->scalar2);
    auto launch = [&](auto op) {
        UnaryF<decltype(op)::value, T> f;
        f.scalar = scalar;
        f.scalar2 = scalar2;
        return launch_ew_as<S>(l, s, f);
    };
    if constexpr (is_float_v<T>) {
        const cudaError_t e =
            for_kind<PT_OP_EXP, PT_OP_LOG, PT_OP_SQRT, PT_OP_SIGMOID, PT_OP_TANH, PT_OP_SIN, PT_OP_COS,
                     PT_OP_GELU, PT_OP_GELU_GRAD>(
                l->kind, launch);
        if (e != cudaErrorNotSupported) return e;
    }
    return for_kind<PT_OP_NEG, PT_OP_ABS, PT_OP_RELU, PT_OP_ADD_SCALAR, PT_OP_MUL_SCALAR, PT_OP_CLAMP>(
        l->kind, launch);
}

} /* namespace ptcu */

extern "C" cudaError_t ptcu_launch_unary(const ptcu_ew_launch *l, cudaStream_t stream) {
    using namespace ptcu;
    return with_numeric_compute(l->dtype[0],
                                [&](auto t, auto st) { return unary_typed<decltype(t), decltype(st)>(l, stream); });
}
