/* libportable CUDA backend — the comparison rows of portable/ew_math.h
 * (PT_EW_COMPARE: any dtype in, PT_U8 0/1 out; NaN compares false; f16/bf16
 * compared as the floats they are) and WHERE (PT_EW_WHERE: cond PT_U8;
 * 16-bit values selected bit for bit). */
#include "k_common.cuh"

namespace ptcu {

template <int OP, class T> struct CompareF;
#define PTCU_COMPARE_F(KIND, name, FORM, DOMAIN, EXPR)                                         \
    template <class T> struct CompareF<PT_OP_##KIND, T> : EwSignature<2, u8, T, T> {          \
        __device__ __forceinline__ u8 operator()(int64_t, T x, T y, u8) const {               \
            return (EXPR) ? 1 : 0;                                                             \
        }                                                                                      \
    };
PT_EW_COMPARE(PTCU_COMPARE_F)
#undef PTCU_COMPARE_F

#define PTCU_WHERE_F(KIND, name, FORM, DOMAIN, EXPR)                                           \
    template <class T> struct WhereF : EwSignature<3, T, u8, T, T> {                          \
        __device__ __forceinline__ T operator()(int64_t, u8 c, T x, T y) const { return EXPR; } \
    };
PT_EW_WHERE(PTCU_WHERE_F)
#undef PTCU_WHERE_F

template <class T, class S> static cudaError_t compare_typed(const ptcu_ew_launch *l, cudaStream_t st) {
    switch (l->kind) {
#define PTCU_COMPARE_CASE(KIND, name, FORM, DOMAIN, EXPR)                                      \
    case PT_OP_##KIND: return launch_ew_as<S>(l, st, CompareF<PT_OP_##KIND, T>());
        PT_EW_COMPARE(PTCU_COMPARE_CASE)
#undef PTCU_COMPARE_CASE
    default: return cudaErrorNotSupported;
    }
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
