/* libportable CUDA backend — binary arithmetic: ADD SUB MUL DIV POW MAXIMUM
 * MINIMUM, and AXPY (out = in0 + alpha * in1). f32 f64 i32 i64; POW f32/f64.
 * Integers wrap; integer DIV truncates, x/0 = 0, INT_MIN/-1 = INT_MIN;
 * MAXIMUM/MINIMUM propagate NaN. */
#include "k_common.cuh"

namespace ptcu {

template <int OP, class T> struct BinaryF {
    typedef T Out;
    typedef T In0;
    typedef T In1;
    typedef u8 In2;
    static constexpr int kArity = 2;
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

template <class T> struct AxpyF {
    typedef T Out;
    typedef T In0;
    typedef T In1;
    typedef u8 In2;
    static constexpr int kArity = 2;
    T alpha;
    __device__ __forceinline__ T operator()(int64_t, T y, T x, u8) const {
        return add_w<T>(y, mul_w<T>(alpha, x));
    }
};

template <class T> static cudaError_t binary_typed(const ptcu_ew_launch *l, cudaStream_t s) {
    switch (l->kind) {
    case PT_OP_ADD: return launch_ew(l, s, BinaryF<PT_OP_ADD, T>());
    case PT_OP_SUB: return launch_ew(l, s, BinaryF<PT_OP_SUB, T>());
    case PT_OP_MUL: return launch_ew(l, s, BinaryF<PT_OP_MUL, T>());
    case PT_OP_DIV: return launch_ew(l, s, BinaryF<PT_OP_DIV, T>());
    case PT_OP_MAXIMUM: return launch_ew(l, s, BinaryF<PT_OP_MAXIMUM, T>());
    case PT_OP_MINIMUM: return launch_ew(l, s, BinaryF<PT_OP_MINIMUM, T>());
    case PT_OP_POW:
        if constexpr (is_float_v<T>) return launch_ew(l, s, BinaryF<PT_OP_POW, T>());
        else return cudaErrorNotSupported;
    case PT_OP_AXPY: {
        AxpyF<T> f;
        f.alpha = from_double<T>(l->scalar);
        return launch_ew(l, s, f);
    }
    default: return cudaErrorNotSupported;
    }
}

} /* namespace ptcu */

extern "C" cudaError_t ptcu_launch_binary(const ptcu_ew_launch *l, cudaStream_t stream) {
    using namespace ptcu;
    PTCU_DISPATCH_NUMERIC(l->dtype[0], binary_typed, l, stream)
}
