/* libportable CUDA backend — comparisons EQ LT GT LE GE NE (any dtype in, PT_U8 0/1
 * out; NaN compares false; f16/bf16 compared as the floats they are) and
 * WHERE (out = cond != 0 ? a : b, cond PT_U8; 16-bit values selected bit for bit). */
#include "k_common.cuh"

namespace ptcu {

template <int OP, class T> struct CompareF : EwSignature<2, u8, T, T> {
    __device__ __forceinline__ u8 operator()(int64_t, T a, T b, u8) const {
        if constexpr (OP == PT_OP_EQ) return a == b ? 1 : 0;
        else if constexpr (OP == PT_OP_LT) return a < b ? 1 : 0;
        else if constexpr (OP == PT_OP_GT) return a > b ? 1 : 0;
        else if constexpr (OP == PT_OP_LE) return a <= b ? 1 : 0;
        else if constexpr (OP == PT_OP_GE) return a >= b ? 1 : 0;
        else return a != b ? 1 : 0; /* PT_OP_NE: NaN != NaN */
    }
};

template <class T> struct WhereF : EwSignature<3, T, u8, T, T> {
    __device__ __forceinline__ T operator()(int64_t, u8 cond, T a, T b) const {
        return cond != 0 ? a : b;
    }
};

template <class T, class S> static cudaError_t compare_typed(const ptcu_ew_launch *l, cudaStream_t s) {
    return for_kind<PT_OP_EQ, PT_OP_LT, PT_OP_GT, PT_OP_LE, PT_OP_GE, PT_OP_NE>(
        l->kind, [&](auto op) { return launch_ew_as<S>(l, s, CompareF<decltype(op)::value, T>()); });
}

template <class T> static cudaError_t where_typed(const ptcu_ew_launch *l, cudaStream_t s) {
    return launch_ew(l, s, WhereF<T>());
}

} /* namespace ptcu */

extern "C" cudaError_t ptcu_launch_compare(const ptcu_ew_launch *l, cudaStream_t stream) {
    using namespace ptcu;
    if (l->kind == PT_OP_WHERE)
        return with_stored_type(l->dtype[0], [&](auto t) { return where_typed<decltype(t)>(l, stream); });
    return with_any_compute(l->dtype[1],
                            [&](auto t, auto st) { return compare_typed<decltype(t), decltype(st)>(l, stream); });
}
