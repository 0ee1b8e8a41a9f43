/* libportable CUDA backend — unary ops: NEG ABS RELU ADD_SCALAR MUL_SCALAR
 * (f32 f64 i32 i64, integers wrap) and EXP LOG SQRT SIGMOID TANH (f32 f64,
 * the accurate libdevice functions: no fast-math). RELU keeps NaN. The
 * scalar of *_SCALAR is converted to the dtype first (from_double). */
#include "k_common.cuh"

namespace ptcu {

template <int OP, class T> struct UnaryF {
    typedef T Out;
    typedef T In0;
    typedef u8 In1;
    typedef u8 In2;
    static constexpr int kArity = 1;
    T scalar;
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
        } else if constexpr (OP == PT_OP_SIGMOID) {
            return (T)1 / ((T)1 + exp_t<T>(-a));
        } else { /* PT_OP_TANH */
            if constexpr (std::is_same<T, float>::value) return tanhf(a); else return tanh(a);
        }
    }
};

template <int OP, class T> static cudaError_t unary_one(const ptcu_ew_launch *l, cudaStream_t s) {
    UnaryF<OP, T> f;
    f.scalar = from_double<T>(l->scalar);
    return launch_ew(l, s, f);
}

template <class T> static cudaError_t unary_typed(const ptcu_ew_launch *l, cudaStream_t s) {
    switch (l->kind) {
    case PT_OP_NEG: return unary_one<PT_OP_NEG, T>(l, s);
    case PT_OP_ABS: return unary_one<PT_OP_ABS, T>(l, s);
    case PT_OP_RELU: return unary_one<PT_OP_RELU, T>(l, s);
    case PT_OP_ADD_SCALAR: return unary_one<PT_OP_ADD_SCALAR, T>(l, s);
    case PT_OP_MUL_SCALAR: return unary_one<PT_OP_MUL_SCALAR, T>(l, s);
    default: break;
    }
    if constexpr (is_float_v<T>) {
        switch (l->kind) {
        case PT_OP_EXP: return unary_one<PT_OP_EXP, T>(l, s);
        case PT_OP_LOG: return unary_one<PT_OP_LOG, T>(l, s);
        case PT_OP_SQRT: return unary_one<PT_OP_SQRT, T>(l, s);
        case PT_OP_SIGMOID: return unary_one<PT_OP_SIGMOID, T>(l, s);
        case PT_OP_TANH: return unary_one<PT_OP_TANH, T>(l, s);
        default: break;
        }
    }
    return cudaErrorNotSupported;
}

} /* namespace ptcu */

extern "C" cudaError_t ptcu_launch_unary(const ptcu_ew_launch *l, cudaStream_t stream) {
    using namespace ptcu;
    PTCU_DISPATCH_NUMERIC(l->dtype[0], unary_typed, l, stream)
}
