/* libportable CUDA backend — data movement and creation: COPY (any dtype
 * pair, converted as from_double/convert in k_common.cuh), FILL (any dtype,
 * any strides), ARANGE (out[i] = start + i * step, in double; in wrapping
 * int64 for integer dtypes with integral start and step) and
 * RAND_UNIFORM / RAND_NORMAL (f32/f64, element i = pt_philox_*(seed,
 * counter, i) from philox.h, so every backend draws the same bits). */
#include "k_common.cuh"
#include "portable/philox.h"

namespace ptcu {

template <class O, class I> struct CastF {
    typedef O Out;
    typedef I In0;
    typedef u8 In1;
    typedef u8 In2;
    static constexpr int kArity = 1;
    __device__ __forceinline__ O operator()(int64_t, I x, u8, u8) const { return convert<O, I>(x); }
};

template <class T> struct FillF {
    typedef T Out;
    typedef u8 In0;
    typedef u8 In1;
    typedef u8 In2;
    static constexpr int kArity = 0;
    T value;
    __device__ __forceinline__ T operator()(int64_t, u8, u8, u8) const { return value; }
};

template <class T> struct ArangeF {
    typedef T Out;
    typedef u8 In0;
    typedef u8 In1;
    typedef u8 In2;
    static constexpr int kArity = 0;
    double start, step;
    bool exact;              /* integer dtype, integral start and step */
    int64_t istart, istep;
    __device__ __forceinline__ T operator()(int64_t i, u8, u8, u8) const {
        if constexpr (!is_float_v<T>) {
            /* Wrapping 64-bit arithmetic: exact beyond 2^53, like the cpu backend. */
            if (exact) return (T)(uint64_t)((uint64_t)istart + (uint64_t)i * (uint64_t)istep);
        }
        return from_double<T>(start + (double)i * step);
    }
};

template <class T, bool NORMAL> struct RandF {
    typedef T Out;
    typedef u8 In0;
    typedef u8 In1;
    typedef u8 In2;
    static constexpr int kArity = 0;
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

template <class I, class O> static cudaError_t cast_pair(const ptcu_ew_launch *l, cudaStream_t s) {
    return launch_ew(l, s, CastF<O, I>());
}

template <class O> static cudaError_t cast_to(const ptcu_ew_launch *l, cudaStream_t s) {
    switch (l->dtype[1]) {
    case PT_F32: return cast_pair<float, O>(l, s);
    case PT_F64: return cast_pair<double, O>(l, s);
    case PT_I32: return cast_pair<int32_t, O>(l, s);
    case PT_I64: return cast_pair<int64_t, O>(l, s);
    case PT_U8: return cast_pair<u8, O>(l, s);
    default: return cudaErrorNotSupported;
    }
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
    f.exact = !is_float_v<T> && l->scalar == floor(l->scalar) && l->scalar2 == floor(l->scalar2) &&
              fabs(l->scalar) < 9.2e18 && fabs(l->scalar2) < 9.2e18;
    f.istart = f.exact ? (int64_t)l->scalar : 0;
    f.istep = f.exact ? (int64_t)l->scalar2 : 0;
    return launch_ew(l, s, f);
}

template <class T> static cudaError_t rand_typed(const ptcu_ew_launch *l, cudaStream_t s) {
    if constexpr (is_float_v<T>) {
        if (l->kind == PT_OP_RAND_NORMAL) {
            RandF<T, true> f;
            f.seed = l->seed;
            f.counter = l->counter;
            return launch_ew(l, s, f);
        }
        RandF<T, false> f;
        f.seed = l->seed;
        f.counter = l->counter;
        return launch_ew(l, s, f);
    } else {
        return cudaErrorNotSupported;
    }
}

} /* namespace ptcu */

extern "C" cudaError_t ptcu_launch_data(const ptcu_ew_launch *l, cudaStream_t stream) {
    using namespace ptcu;
    switch (l->kind) {
    case PT_OP_COPY: PTCU_DISPATCH_ALL(l->dtype[0], cast_to, l, stream)
    case PT_OP_FILL: PTCU_DISPATCH_ALL(l->dtype[0], fill_typed, l, stream)
    case PT_OP_ARANGE: PTCU_DISPATCH_ALL(l->dtype[0], arange_typed, l, stream)
    case PT_OP_RAND_UNIFORM:
    case PT_OP_RAND_NORMAL: PTCU_DISPATCH_NUMERIC(l->dtype[0], rand_typed, l, stream)
    default: return cudaErrorNotSupported;
    }
}
