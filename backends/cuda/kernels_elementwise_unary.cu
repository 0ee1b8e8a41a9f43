/* libportable CUDA backend — the unary rows of portable/ew_math.h
 * (PT_EW_UNARY: the *_SCALAR ops, CLAMP, NEG, ABS, RELU for f32 f64 i32
 * i64, integers wrapping; the FLOAT rows for f32 f64 with the accurate
 * libdevice functions, no fast-math). f16 and bf16 operands are computed in
 * f32 and rounded once (Stored). The scalars are converted to the dtype
 * first (from_double, which saturates CLAMP's +-2^63). */
#include "k_common.cuh"

namespace ptcu {

template <int OP, class T> struct UnaryF;
#define PTCU_UNARY_F(KIND, name, FORM, DOMAIN, EXPR)                                           \
    template <class T> struct UnaryF<PT_OP_##KIND, T> : EwSignature<1, T, T> {                \
        T s, s2;                                                                               \
        __device__ __forceinline__ T operator()(int64_t, T x, u8, u8) const { return EXPR; }   \
    };
PT_EW_UNARY(PTCU_UNARY_F)
#undef PTCU_UNARY_F

/* A FLOAT row asked for an integer dtype answers cudaErrorNotSupported:
 * "not one of these", never a failed launch. */
template <class T, class S> static cudaError_t unary_typed(const ptcu_ew_launch *l, cudaStream_t st) {
    const T s = from_double<T>(l->scalar), s2 = from_double<T>(l->scalar2);
    switch (l->kind) {
#define PTCU_UNARY_CASE(KIND, name, FORM, DOMAIN, EXPR)                                        \
    case PT_OP_##KIND:                                                                         \
        if constexpr (PTCU_EW_TAKES(DOMAIN, T)) {                                              \
            UnaryF<PT_OP_##KIND, T> f;                                                         \
            f.s = s;                                                                           \
            f.s2 = s2;                                                                         \
            return launch_ew_as<S>(l, st, f);                                                  \
        } else {                                                                               \
            return cudaErrorNotSupported;                                                      \
        }
        PT_EW_UNARY(PTCU_UNARY_CASE)
#undef PTCU_UNARY_CASE
    default: return cudaErrorNotSupported;
    }
}

} /* namespace ptcu */

extern "C" cudaError_t ptcu_launch_unary(const ptcu_ew_launch *l, cudaStream_t stream) {
    using namespace ptcu;
    return with_numeric_compute(l->dtype[0],
                                [&](auto t, auto st) { return unary_typed<decltype(t), decltype(st)>(l, stream); });
}
