/* libportable CUDA backend — the binary rows of portable/ew_math.h
 * (PT_EW_BINARY: arithmetic, MAXIMUM, MINIMUM, and AXPY, out = in0 +
 * alpha * in1). f32 f64 i32 i64 f16 bf16 (16-bit: computed in f32, rounded
 * once); FLOAT rows (POW) floats only. */
#include "k_common.cuh"

namespace ptcu {

template <int OP, class T> struct BinaryF;
#define PTCU_BINARY_F(KIND, name, FORM, DOMAIN, EXPR)                                          \
    template <class T> struct BinaryF<PT_OP_##KIND, T> : EwSignature<2, T, T, T> {            \
        T s;                                                                                   \
        __device__ __forceinline__ T operator()(int64_t, T x, T y, u8) const { return EXPR; }  \
    };
PT_EW_BINARY(PTCU_BINARY_F)
#undef PTCU_BINARY_F

/* Computed in T, operands stored as S (f16/bf16 compute in float). */
template <class T, class S> static cudaError_t binary_typed(const ptcu_ew_launch *l, cudaStream_t st) {
    const T s = from_double<T>(l->scalar);
    switch (l->kind) {
#define PTCU_BINARY_CASE(KIND, name, FORM, DOMAIN, EXPR)                                       \
    case PT_OP_##KIND:                                                                         \
        if constexpr (PTCU_EW_TAKES(DOMAIN, T)) {                                              \
            BinaryF<PT_OP_##KIND, T> f;                                                        \
            f.s = s;                                                                           \
            return launch_ew_as<S>(l, st, f);                                                  \
        } else {                                                                               \
            return cudaErrorNotSupported;                                                      \
        }
        PT_EW_BINARY(PTCU_BINARY_CASE)
#undef PTCU_BINARY_CASE
    default: return cudaErrorNotSupported;
    }
}

} /* namespace ptcu */

extern "C" cudaError_t ptcu_launch_binary(const ptcu_ew_launch *l, cudaStream_t stream) {
    using namespace ptcu;
    return with_numeric_compute(l->dtype[0],
                                [&](auto t, auto st) { return binary_typed<decltype(t), decltype(st)>(l, stream); });
}
