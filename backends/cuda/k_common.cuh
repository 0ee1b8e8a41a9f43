/* libportable CUDA backend — device helpers shared by the k_*.cu files:
 * dtype traits, the library's arithmetic rules (wrapping integers, NaN
 * propagation, conversions), and the two element-wise loops every
 * element-wise op is built from (a vectorised contiguous loop and a strided
 * N-d loop). Included by .cu files only. */
#ifndef PTCU_K_COMMON_CUH
#define PTCU_K_COMMON_CUH

#include <math.h>
#include <stdint.h>

#include <type_traits>

#include "cuda_kernels.h"

/* Kernels launch through PTCU_LAUNCH(kernel, grid, block, stream)(args...):
 * the <<<>>> launch under nvcc; with PTCU_EMULATE (tests/kernel_emulation.h)
 * a CPU emulation that runs every thread of every block, so the kernels'
 * indexing and reductions are tested on machines without a GPU. */
#ifdef PTCU_EMULATE
#include "tests/kernel_emulation.h"
#define PTCU_LAUNCH(kernel, grid, block, stream) ::ptcu_emu::launch(kernel, grid, block, stream)
#else
#include <cuda_runtime.h>
#define PTCU_LAUNCH(kernel, grid, block, stream) kernel<<<grid, block, 0, stream>>>
#endif

namespace ptcu {

typedef unsigned char u8;

constexpr int kThreads = 256;

/* ---- Arithmetic rules ---- */

template <class T> constexpr bool is_float_v = std::is_floating_point<T>::value;

/* Integer add/sub/mul wrap around (two's complement) instead of being
 * undefined: done in the unsigned type of the same width. */
template <class T> __device__ __forceinline__ T add_w(T a, T b) {
    if constexpr (is_float_v<T>) {
        return a + b;
    } else {
        typedef typename std::make_unsigned<T>::type U;
        return (T)(U)((U)a + (U)b);
    }
}
template <class T> __device__ __forceinline__ T sub_w(T a, T b) {
    if constexpr (is_float_v<T>) {
        return a - b;
    } else {
        typedef typename std::make_unsigned<T>::type U;
        return (T)(U)((U)a - (U)b);
    }
}
template <class T> __device__ __forceinline__ T mul_w(T a, T b) {
    if constexpr (is_float_v<T>) {
        return a * b;
    } else {
        typedef typename std::make_unsigned<T>::type U;
        return (T)(U)((U)a * (U)b);
    }
}
template <class T> __device__ __forceinline__ T neg_w(T a) { return sub_w<T>((T)0, a); }

/* Integer division truncates; x / 0 is 0 and INT_MIN / -1 is INT_MIN (the
 * wrapped result), so no input can fault. */
template <class T> __device__ __forceinline__ T div_rule(T a, T b) {
    if constexpr (is_float_v<T>) {
        return a / b;
    } else {
        if (b == 0) return (T)0;
        if (b == (T)-1) return neg_w<T>(a);
        return a / b;
    }
}

template <class T> __device__ __forceinline__ bool is_nan(T v) {
    if constexpr (is_float_v<T>) {
        return v != v;
    } else {
        return false;
    }
}

/* max/min that propagate NaN (like torch.maximum), unlike fmax/fmin. */
template <class T> __device__ __forceinline__ T max_nan(T a, T b) {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return a > b ? a : b;
}
template <class T> __device__ __forceinline__ T min_nan(T a, T b) {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return a < b ? a : b;
}

/* double -> T as every backend does it (the cpu backend's cpu_internal.h):
 * floats round; i32/i64 truncate toward zero and saturate at their limits,
 * NaN -> 0; u8 truncates through int64 and wraps (-1.0 -> 255, as PyTorch
 * and NumPy do on x86). */
template <class T> __host__ __device__ __forceinline__ T from_double(double s) {
    if constexpr (is_float_v<T>) {
        return (T)s;
    } else if constexpr (std::is_same<T, int32_t>::value) {
        if (!(s == s)) return 0;
        if (s <= -2147483648.0) return INT32_MIN;
        if (s >= 2147483647.0) return INT32_MAX;
        return (int32_t)s;
    } else {
        int64_t v;
        if (!(s == s)) v = 0;
        else if (s <= -9223372036854775808.0) v = INT64_MIN;
        else if (s >= 9223372036854775808.0) v = INT64_MAX;
        else v = (int64_t)s;
        return (T)(uint64_t)v; /* int64: itself; u8: the low 8 bits */
    }
}

/* Element conversion for COPY (any dtype pair). */
template <class O, class I> __device__ __forceinline__ O convert(I x) {
    if constexpr (std::is_same<O, I>::value) {
        return x;
    } else if constexpr (is_float_v<I>) {
        return from_double<O>((double)x);
    } else if constexpr (is_float_v<O>) {
        return (O)x;
    } else {
        /* integer -> integer: sign-extend to 64 bits, keep the low bits. */
        return (O)(uint64_t)(int64_t)x;
    }
}

template <class T> __device__ __forceinline__ T exp_t(T x) {
    if constexpr (std::is_same<T, float>::value) return expf(x); else return exp(x);
}
template <class T> __device__ __forceinline__ T log_t(T x) {
    if constexpr (std::is_same<T, float>::value) return logf(x); else return log(x);
}

/* ---- Element-wise loops ---- */

template <class T, int N> struct alignas(sizeof(T) * N) Vec {
    T v[N];
};

/* Elements per thread per step of the vectorised loop: 16-byte accesses for
 * the widest operand. */
template <class A, class B, class C, class O> __host__ __device__ constexpr int vec_width() {
    constexpr size_t w = sizeof(A) > sizeof(B) ? sizeof(A) : sizeof(B);
    constexpr size_t w2 = sizeof(C) > sizeof(O) ? sizeof(C) : sizeof(O);
    constexpr size_t widest = w > w2 ? w : w2;
    return (int)(16 / widest);
}

/* The v-th Vec of p (one 16-byte load), or V copies of s when the operand
 * is a broadcast scalar. */
template <class T, int V>
__device__ __forceinline__ Vec<T, V> load_vec(const T *p, bool broadcast, T s, int64_t v) {
    Vec<T, V> r;
    if (broadcast) {
#pragma unroll
        for (int k = 0; k < V; ++k) r.v[k] = s;
    } else {
        r = ((const Vec<T, V> *)p)[v];
    }
    return r;
}

struct EwPtrs {
    void *out;
    const void *in[PT_OP_MAX_INPUTS];
};

/* A functor F for the loops below declares:
 *   typedef Out, In0, In1, In2 (u8 for unused inputs); static constexpr int
 *   kArity (inputs read); and __device__ Out operator()(int64_t i, In0, In1,
 *   In2) const, where i is the element's linear index (used by ARANGE and
 *   RAND, whose outputs are contiguous). */
#define PTCU_EW_TYPES(F)                                 \
    typedef typename F::Out O;                           \
    typedef typename F::In0 A;                           \
    typedef typename F::In1 B;                           \
    typedef typename F::In2 C;                           \
    constexpr int V = vec_width<A, B, C, O>();

/* Contiguous operands (inputs may be broadcast scalars: bit k of bcast set).
 * Grid-stride; when vec is set every non-broadcast pointer is aligned to its
 * Vec width and the bulk moves as 16-byte loads and stores. */
template <class F>
__global__ void __launch_bounds__(kThreads)
    ew_contig_kernel(EwPtrs p, unsigned bcast, int64_t n, bool vec, F f) {
    PTCU_EW_TYPES(F)
    O *out = (O *)p.out;
    const A *a = (const A *)p.in[0];
    const B *b = (const B *)p.in[1];
    const C *c = (const C *)p.in[2];
    const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t nth = (int64_t)gridDim.x * blockDim.x;
    A sa = A();
    B sb = B();
    C sc = C();
    if constexpr (F::kArity >= 1) if (bcast & 1u) sa = a[0];
    if constexpr (F::kArity >= 2) if (bcast & 2u) sb = b[0];
    if constexpr (F::kArity >= 3) if (bcast & 4u) sc = c[0];
    int64_t done = 0;
    if (vec) {
        const int64_t nv = n / V;
        for (int64_t v = tid; v < nv; v += nth) {
            Vec<A, V> va;
            Vec<B, V> vb;
            Vec<C, V> vc;
            Vec<O, V> vo;
            if constexpr (F::kArity >= 1) va = load_vec<A, V>(a, bcast & 1u, sa, v);
            if constexpr (F::kArity >= 2) vb = load_vec<B, V>(b, bcast & 2u, sb, v);
            if constexpr (F::kArity >= 3) vc = load_vec<C, V>(c, bcast & 4u, sc, v);
#pragma unroll
            for (int k = 0; k < V; ++k) {
                A x0 = A();
                B x1 = B();
                C x2 = C();
                if constexpr (F::kArity >= 1) x0 = va.v[k];
                if constexpr (F::kArity >= 2) x1 = vb.v[k];
                if constexpr (F::kArity >= 3) x2 = vc.v[k];
                vo.v[k] = f(v * V + k, x0, x1, x2);
            }
            ((Vec<O, V> *)out)[v] = vo;
        }
        done = nv * V;
    }
    for (int64_t i = done + tid; i < n; i += nth) {
        A x0 = A();
        B x1 = B();
        C x2 = C();
        if constexpr (F::kArity >= 1) x0 = (bcast & 1u) ? sa : a[i];
        if constexpr (F::kArity >= 2) x1 = (bcast & 2u) ? sb : b[i];
        if constexpr (F::kArity >= 3) x2 = (bcast & 4u) ? sc : c[i];
        out[i] = f(i, x0, x1, x2);
    }
}

/* Any strides: each linear index is split into coordinates (32-bit
 * arithmetic while the space has fewer than 2^32 elements) and every
 * operand's offset is the dot product with its strides. */
template <class F>
__global__ void __launch_bounds__(kThreads)
    ew_strided_kernel(EwPtrs p, ptcu_geometry g, int64_t n, F f) {
    PTCU_EW_TYPES(F)
    (void)V;
    constexpr int NOP = 1 + F::kArity;
    O *out = (O *)p.out;
    const A *a = (const A *)p.in[0];
    const B *b = (const B *)p.in[1];
    const C *c = (const C *)p.in[2];
    const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t nth = (int64_t)gridDim.x * blockDim.x;
    const bool small = n <= (int64_t)UINT32_MAX;
    for (int64_t i = tid; i < n; i += nth) {
        int64_t off[NOP];
#pragma unroll
        for (int k = 0; k < NOP; ++k) off[k] = 0;
        if (small) {
            uint32_t rem = (uint32_t)i;
#pragma unroll
            for (int d = PT_MAX_DIMS - 1; d >= 0; --d) {
                if (d < g.ndim) {
                    const uint32_t size = (uint32_t)g.shape[d];
                    const uint32_t coord = rem % size;
                    rem /= size;
#pragma unroll
                    for (int k = 0; k < NOP; ++k) off[k] += (int64_t)coord * g.strides[k][d];
                }
            }
        } else {
            int64_t rem = i;
#pragma unroll
            for (int d = PT_MAX_DIMS - 1; d >= 0; --d) {
                if (d < g.ndim) {
                    const int64_t coord = rem % g.shape[d];
                    rem /= g.shape[d];
#pragma unroll
                    for (int k = 0; k < NOP; ++k) off[k] += coord * g.strides[k][d];
                }
            }
        }
        A x0 = A();
        B x1 = B();
        C x2 = C();
        if constexpr (F::kArity >= 1) x0 = a[off[1]];
        if constexpr (F::kArity >= 2) x1 = b[off[2]];
        if constexpr (F::kArity >= 3) x2 = c[off[3]];
        out[off[0]] = f(i, x0, x1, x2);
    }
}

static inline int grid_for(int64_t work, int max_blocks) {
    int64_t blocks = (work + kThreads - 1) / kThreads;
    if (blocks < 1) blocks = 1;
    if (max_blocks > 0 && blocks > max_blocks) blocks = max_blocks;
    return (int)blocks;
}

static inline bool aligned_to(const void *p, size_t bytes) {
    return ((uintptr_t)p % bytes) == 0;
}

/* Launches functor f over the iteration space of l: the contiguous loop when
 * l->contiguous, the strided loop otherwise. */
template <class F> cudaError_t launch_ew(const ptcu_ew_launch *l, cudaStream_t stream, F f) {
    PTCU_EW_TYPES(F)
    EwPtrs p;
    p.out = l->ptr[0];
    for (int k = 0; k < PT_OP_MAX_INPUTS; ++k) p.in[k] = l->ptr[k + 1];
    const int64_t n = l->numel;
    if (n <= 0) return cudaSuccess;
    if (l->contiguous) {
        unsigned bcast = 0;
        for (int k = 0; k < F::kArity; ++k)
            if (l->geo.strides[k + 1][0] == 0) bcast |= 1u << k;
        bool vec = n >= V && aligned_to(p.out, sizeof(O) * V);
        if (F::kArity >= 1 && !(bcast & 1u)) vec = vec && aligned_to(p.in[0], sizeof(A) * V);
        if (F::kArity >= 2 && !(bcast & 2u)) vec = vec && aligned_to(p.in[1], sizeof(B) * V);
        if (F::kArity >= 3 && !(bcast & 4u)) vec = vec && aligned_to(p.in[2], sizeof(C) * V);
        const int64_t work = vec ? n / V : n;
        auto kernel = ew_contig_kernel<F>;
        PTCU_LAUNCH(kernel, grid_for(work, l->max_blocks), kThreads, stream)(p, bcast, n, vec, f);
    } else {
        auto kernel = ew_strided_kernel<F>;
        PTCU_LAUNCH(kernel, grid_for(n, l->max_blocks), kThreads, stream)(p, l->geo, n, f);
    }
    return cudaGetLastError();
}

/* Calls body<T>() with T the C++ type of dtype dt (numeric dtypes only);
 * cudaErrorNotSupported for others. */
#define PTCU_DISPATCH_NUMERIC(dt, FN, ...)                  \
    switch (dt) {                                           \
    case PT_F32: return FN<float>(__VA_ARGS__);             \
    case PT_F64: return FN<double>(__VA_ARGS__);            \
    case PT_I32: return FN<int32_t>(__VA_ARGS__);           \
    case PT_I64: return FN<int64_t>(__VA_ARGS__);           \
    default: return cudaErrorNotSupported;                  \
    }

#define PTCU_DISPATCH_ALL(dt, FN, ...)                      \
    switch (dt) {                                           \
    case PT_F32: return FN<float>(__VA_ARGS__);             \
    case PT_F64: return FN<double>(__VA_ARGS__);            \
    case PT_I32: return FN<int32_t>(__VA_ARGS__);           \
    case PT_I64: return FN<int64_t>(__VA_ARGS__);           \
    case PT_U8: return FN<u8>(__VA_ARGS__);                 \
    default: return cudaErrorNotSupported;                  \
    }

} /* namespace ptcu */

#endif
