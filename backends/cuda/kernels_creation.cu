/* libportable CUDA backend — data movement and creation: COPY (any dtype
 * pair, f16 and bf16 included, converted as from_double/convert in
 * k_common.cuh: rounded once), FILL (any dtype, any strides), ARANGE (out[i] = start + i * step, in double; in wrapping
 * int64 for integer dtypes with integral start and step) and
 * RAND_UNIFORM / RAND_NORMAL (f32/f64, element i = pt_philox_*(seed,
 * counter, i) from philox.h, so every backend draws the same bits). */
#include "k_common.cuh"
#include "portable/philox.h"

namespace ptcu {

template <class O, class I> struct CastF : EwSignature<1, O, I> {
    __device__ __forceinline__ O operator()(int64_t, I x, u8, u8) const { return convert<O, I>(x); }
};

template <class T> struct FillF : EwSignature<0, T> {
    T value;
    __device__ __forceinline__ T operator()(int64_t, u8, u8, u8) const { return value; }
};

template <class T> struct ArangeF : EwSignature<0, T> {
    double start, step;
    bool exact;              /* integer dtype, integral start and step */
    int64_t istart, istep;
    __device__ __forceinline__ T operator()(int64_t i, u8, u8, u8) const {
        if constexpr (!is_float_v<T> && !is_half_v<T>) {
            /* Wrapping 64-bit arithmetic: exact beyond 2^53, like the cpu backend. */
            if (exact) return (T)(uint64_t)((uint64_t)istart + (uint64_t)i * (uint64_t)istep);
        }
        return from_double<T>(start + (double)i * step);
    }
};

template <class T, bool NORMAL> struct RandF : EwSignature<0, T> {
    uint64_t seed, counter;
    __device__ __forceinline__ T operator()(int64_t i, u8, u8, u8) const {
        if constexpr (std::is_same<T, float>::value) {
            if constexpr (NORMAL) return pt_philox_normal_f32(seed, counter, (uint64_t)i);
            else return pt_philox_uniform_f32(seed, counter, (uint64_t)i);
        } else {
            if constexpr (NORMAL) return pt_philox_normal_f64(seed, counter, (uint64_t)i);
            else return pt_philox_uniform_f64(seed, counter, (uint64_t)i);
        }
    }
};

template <class O> static cudaError_t cast_to(const ptcu_ew_launch *l, cudaStream_t s) {
    return with_stored_type(l->dtype[1], [&](auto in) { return launch_ew(l, s, CastF<O, decltype(in)>()); });
}

template <class T> static cudaError_t fill_typed(const ptcu_ew_launch *l, cudaStream_t s) {
    FillF<T> f;
    f.value = from_double<T>(l->scalar);
    return launch_ew(l, s, f);
}

template <class T> static cudaError_t arange_typed(const ptcu_ew_launch *l, cudaStream_t s) {
    ArangeF<T> f;
    f.start = l->scalar;
    f.step = l->scalar2;
    f.exact = !is_float_v<T> && !is_half_v<T> && l->scalar == floor(l->scalar) && l->scalar2 == floor(l->scalar2) &&
              fabs(l->scalar) < 9.2e18 && fabs(l->scalar2) < 9.2e18;
    f.istart = f.exact ? (int64_t)l->scalar : 0;
    f.istep = f.exact ? (int64_t)l->scalar2 : 0;
    return launch_ew(l, s, f);
}

template <class T, bool NORMAL> static cudaError_t rand_one(const ptcu_ew_launch *l, cudaStream_t s) {
    RandF<T, NORMAL> f;
    f.seed = l->seed;
    f.counter = l->counter;
    return launch_ew(l, s, f);
}

template <class T> static cudaError_t rand_typed(const ptcu_ew_launch *l, cudaStream_t s) {
    if constexpr (is_float_v<T>)
        return l->kind == PT_OP_RAND_NORMAL ? rand_one<T, true>(l, s) : rand_one<T, false>(l, s);
    else
        return cudaErrorNotSupported;
}

} /* namespace ptcu */

extern "C" cudaError_t ptcu_launch_data(const ptcu_ew_launch *l, cudaStream_t stream) {
    using namespace ptcu;
    return with_stored_type(l->dtype[0], [&](auto out) {
        typedef decltype(out) T;
        switch (l->kind) {
        case PT_OP_COPY: return cast_to<T>(l, stream);
        case PT_OP_FILL: return fill_typed<T>(l, stream);
        case PT_OP_ARANGE: return arange_typed<T>(l, stream);
        case PT_OP_RAND_UNIFORM: case PT_OP_RAND_NORMAL: return rand_typed<T>(l, stream);
        default: return cudaErrorNotSupported;
        }
    });
}
