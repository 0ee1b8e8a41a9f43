/* libportable CUDA backend — comparisons EQ LT GT (any dtype in, PT_U8 0/1
 * out; NaN compares false) and WHERE (out = cond != 0 ? a : b, cond PT_U8). */
#include "k_common.cuh"

namespace ptcu {

template <int OP, class T> struct CompareF {
    typedef u8 Out;
    typedef T In0;
    typedef T In1;
    typedef u8 In2;
    static constexpr int kArity = 2;
    __device__ __forceinline__ u8 operator()(int64_t, T a, T b, u8) const {
        if constexpr (OP == PT_OP_EQ) return a == b ? 1 : 0;
        else if constexpr (OP == PT_OP_LT) return a < b ? 1 : 0;
        else return a > b ? 1 : 0; /* PT_OP_GT */
    }
};

template <class T> struct WhereF {
    typedef T Out;
    typedef u8 In0;
    typedef T In1;
    typedef T In2;
    static constexpr int kArity = 3;
    __device__ __forceinline__ T operator()(int64_t, u8 cond, T a, T b) const {
        return cond != 0 ? a : b;
    }
};

template <class T> static cudaError_t compare_typed(const ptcu_ew_launch *l, cudaStream_t s) {
    switch (l->kind) {
    case PT_OP_EQ: return launch_ew(l, s, CompareF<PT_OP_EQ, T>());
    case PT_OP_LT: return launch_ew(l, s, CompareF<PT_OP_LT, T>());
    case PT_OP_GT: return launch_ew(l, s, CompareF<PT_OP_GT, T>());
    default: return cudaErrorNotSupported;
    }
}

template <class T> static cudaError_t where_typed(const ptcu_ew_launch *l, cudaStream_t s) {
    return launch_ew(l, s, WhereF<T>());
}

} /* namespace ptcu */

extern "C" cudaError_t ptcu_launch_compare(const ptcu_ew_launch *l, cudaStream_t stream) {
    using namespace ptcu;
    if (l->kind == PT_OP_WHERE) {
        PTCU_DISPATCH_ALL(l->dtype[0], where_typed, l, stream)
    }
    PTCU_DISPATCH_ALL(l->dtype[1], compare_typed, l, stream)
}
