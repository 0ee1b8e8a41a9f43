/* libportable CUDA backend — device helpers shared by the k_*.cu files:
 * dtype traits, the library's arithmetic rules (wrapping integers, NaN
 * propagation, conversions), and the two element-wise loops every
 * element-wise op is built from (a vectorised contiguous loop and a strided
 * N-d loop). Included by .cu files only. */
#ifndef PTCU_K_COMMON_CUH
#define PTCU_K_COMMON_CUH

#include <math.h>
#include <stdint.h>

#include <atomic>
#include <type_traits>

#include "kernels.h"
#include "portable/ew_math.h"
#include "k_values.cuh"

/* Kernels launch through PTCU_LAUNCH(kernel, grid, block, stream)(args...):
 * the <<<>>> launch under nvcc; with PTCU_EMULATE (tests/kernel_emulation.h)
 * a CPU emulation that runs every thread of every block, so the kernels'
 * indexing and reductions are tested on machines without a GPU. */
/* PTCU_LAUNCH_SHARED adds bytes of dynamic shared memory per block, which
 * the kernel reaches through PTCU_DYNAMIC_SHARED(T, name) (a T * named
 * name, 16-byte aligned). */
#ifdef PTCU_EMULATE
#include "tests/kernel_emulation.h"
#define PTCU_LAUNCH(kernel, grid, block, stream) ::ptcu_emu::launch(kernel, grid, block, stream)
#define PTCU_LAUNCH_SHARED(kernel, grid, block, bytes, stream) ::ptcu_emu::launch(kernel, grid, block, stream, bytes)
#define PTCU_DYNAMIC_SHARED(T, name) T *name = (T *)::ptcu_emu::dynamic_shared()
#else
#include <cuda_runtime.h>
#define PTCU_LAUNCH(kernel, grid, block, stream) kernel<<<grid, block, 0, stream>>>
#define PTCU_LAUNCH_SHARED(kernel, grid, block, bytes, stream) kernel<<<grid, block, bytes, stream>>>
#define PTCU_DYNAMIC_SHARED(T, name)                                \
    extern __shared__ __align__(16) unsigned char ptcu_dynamic_shared[]; \
    T *name = (T *)ptcu_dynamic_shared
#endif

namespace ptcu {

constexpr int kThreads = 256;

/* The element-wise rules of portable/ew_math.h, for the reductions and
 * softmax: NaN test (false for integers), max that propagates NaN (like
 * torch.maximum, unlike fmax). */
template <class T> __device__ __forceinline__ bool is_nan(T v) { return pt_ew_isnan<T>(v); }
template <class T> __device__ __forceinline__ T max_nan(T a, T b) { return pt_ew_max<T>(a, b); }

template <class T> __device__ __forceinline__ T exp_t(T x) { return pt_ew_exp<T>(x); }
template <class T> __device__ __forceinline__ T log_t(T x) { return pt_ew_log<T>(x); }

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

/* ---- Launching and grid-stride loops ---- */

__device__ __forceinline__ int64_t grid_thread() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_threads() { return (int64_t)gridDim.x * blockDim.x; }

/* for i = first + this thread's index, first + that + every thread of the
 * grid, ... below n: the loop of every kernel whose grid is capped. */
#define PTCU_GRID_STRIDE(i, first, n)                                                          \
    for (int64_t i = (first) + ::ptcu::grid_thread(), i##_stride = ::ptcu::grid_threads(); \
         i < (n); i += i##_stride)

/* Blocks of kThreads threads for `items` threads' worth of work: at least
 * one, at most max_blocks (no cap when <= 0). */
static inline unsigned grid_for(int64_t items, int64_t max_blocks) {
    int64_t blocks = (items + kThreads - 1) / kThreads;
    if (blocks < 1) blocks = 1;
    if (max_blocks > 0 && blocks > max_blocks) blocks = max_blocks;
    return (unsigned)blocks;
}

/* A grid cap of per_sm blocks for each multiprocessor (one when unknown). */
static inline int64_t blocks_per_sms(int sm_count, int per_sm) {
    return (int64_t)per_sm * (sm_count > 0 ? sm_count : 1);
}

/* How many blocks of kThreads threads of kernel fit on one multiprocessor at
 * once (cudaOccupancyMaxActiveBlocksPerMultiprocessor: registers, shared
 * memory and thread limits of the current device), asked once per kernel
 * instantiation; 1 when the runtime cannot say. A grid of SMs x this keeps
 * every SM full with one wave. The first device asked answers for all: a
 * process mixing GPU generations gets grids sized for one of them, which
 * changes speed, never results. */
template <class... P> static int resident_blocks_per_sm(void (*kernel)(P...)) {
    static std::atomic<int> cached{0};
    int n = cached.load(std::memory_order_relaxed);
    if (n > 0) return n;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kThreads, 0) != cudaSuccess || n < 1) {
        (void)cudaGetLastError();
        n = 1;
    }
    cached.store(n, std::memory_order_relaxed);
    return n;
}
/* A grid cap of one full wave of kernel: sm_count x resident blocks. */
template <class... P> static int64_t full_wave(void (*kernel)(P...), int sm_count) {
    return blocks_per_sms(sm_count, resident_blocks_per_sm(kernel));
}
/* Queues kernel over grid blocks of kThreads threads on stream and returns
 * the launch's error: the one way every launcher starts a kernel. */
template <class... P, class... Args>
static cudaError_t launch_kernel(void (*kernel)(P...), dim3 grid, cudaStream_t stream, Args... args) {
    PTCU_LAUNCH(kernel, grid, kThreads, stream)(args...);
    return cudaGetLastError();
}

/* Whether the rows of ew_math.h with DOMAIN (ALL, FLOAT) compute in T. */
template <class T> constexpr bool ew_takes_ALL = true;
template <class T> constexpr bool ew_takes_FLOAT = is_float_v<T>;
#define PTCU_EW_TAKES(DOMAIN, T) ::ptcu::ew_takes_##DOMAIN<T>

/* fn(T()) with T the C++ type of dtype dt: numeric dtypes only, or any;
 * cudaErrorNotSupported for others. Callers pick the kernel instantiation
 * with decltype of the argument. */
template <class Fn> static cudaError_t with_numeric_type(pt_dtype dt, Fn fn) {
    switch (dt) {
    case PT_F32: return fn(float());
    case PT_F64: return fn(double());
    case PT_I32: return fn(int32_t());
    case PT_I64: return fn(int64_t());
    default: return cudaErrorNotSupported;
    }
}
template <class Fn> static cudaError_t with_any_type(pt_dtype dt, Fn fn) {
    return dt == PT_U8 ? fn(u8()) : with_numeric_type(dt, fn);
}
/* with_any_type, plus the 16-bit storage types (for kernels that only move
 * or convert values: COPY, FILL, ARANGE, WHERE). */
template <class Fn> static cudaError_t with_stored_type(pt_dtype dt, Fn fn) {
    switch (dt) {
    case PT_F16: return fn(f16());
    case PT_BF16: return fn(bf16());
    default: return with_any_type(dt, fn);
    }
}
/* fn(T(), S()) for arithmetic: T the type the op computes in, S the type
 * its float operands are stored in: the same type for f32 f64 i32 i64 (and
 * u8 with_any_compute), float and the 16-bit type for f16 and bf16. */
template <class Fn> static cudaError_t with_numeric_compute(pt_dtype dt, Fn fn) {
    switch (dt) {
    case PT_F16: return fn(float(), f16());
    case PT_BF16: return fn(float(), bf16());
    default: return with_numeric_type(dt, [&](auto t) { return fn(t, t); });
    }
}
template <class Fn> static cudaError_t with_any_compute(pt_dtype dt, Fn fn) {
    return dt == PT_U8 ? fn(u8(), u8()) : with_numeric_compute(dt, fn);
}

/* fn(E()) with E the unsigned integer type of `bytes` bytes (values copied
 * bit for bit), and fn(I()) with I the C++ type of an index dtype. */
template <class Fn> static cudaError_t with_bits_type(size_t bytes, Fn fn) {
    switch (bytes) {
    case 1: return fn(uint8_t());
    case 2: return fn(uint16_t());
    case 4: return fn(uint32_t());
    case 8: return fn(uint64_t());
    default: return cudaErrorNotSupported;
    }
}
template <class Fn> static cudaError_t with_index_type(pt_dtype dt, Fn fn) {
    switch (dt) {
    case PT_I32: return fn(int32_t());
    case PT_I64: return fn(int64_t());
    default: return cudaErrorNotSupported;
    }
}

/* ---- Element-wise loops ---- */

/* What an element-wise functor declares, by deriving from this: its output
 * type, its input types (u8 for unused ones) and how many inputs it reads.
 * It also has __device__ Out operator()(int64_t i, In0, In1, In2) const,
 * where i is the element's linear index (used by ARANGE and RAND, whose
 * outputs are contiguous). */
template <int ARITY, class O, class A = u8, class B = u8, class C = u8> struct EwSignature {
    typedef O Out;
    typedef A In0;
    typedef B In1;
    typedef C In2;
    static constexpr int kArity = ARITY;
};

/* The operands of functor F, typed. */
template <class F> struct EwOperands {
    typename F::Out *out;
    const typename F::In0 *a;
    const typename F::In1 *b;
    const typename F::In2 *c;
};

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
    ew_contig_kernel(EwOperands<F> p, unsigned bcast, int64_t n, bool vec, F f) {
    PTCU_EW_TYPES(F)
    A sa = A();
    B sb = B();
    C sc = C();
    if constexpr (F::kArity >= 1) if (bcast & 1u) sa = p.a[0];
    if constexpr (F::kArity >= 2) if (bcast & 2u) sb = p.b[0];
    if constexpr (F::kArity >= 3) if (bcast & 4u) sc = p.c[0];
    int64_t done = 0;
    if (vec) {
        const int64_t nv = n / V;
        PTCU_GRID_STRIDE(v, 0, nv) {
            Vec<A, V> va;
            Vec<B, V> vb;
            Vec<C, V> vc;
            Vec<O, V> vo;
            if constexpr (F::kArity >= 1) va = load_vec<A, V>(p.a, bcast & 1u, sa, v);
            if constexpr (F::kArity >= 2) vb = load_vec<B, V>(p.b, bcast & 2u, sb, v);
            if constexpr (F::kArity >= 3) vc = load_vec<C, V>(p.c, bcast & 4u, sc, v);
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
            ((Vec<O, V> *)p.out)[v] = vo;
        }
        done = nv * V;
    }
    PTCU_GRID_STRIDE(i, done, n) {
        A x0 = A();
        B x1 = B();
        C x2 = C();
        if constexpr (F::kArity >= 1) x0 = (bcast & 1u) ? sa : p.a[i];
        if constexpr (F::kArity >= 2) x1 = (bcast & 2u) ? sb : p.b[i];
        if constexpr (F::kArity >= 3) x2 = (bcast & 4u) ? sc : p.c[i];
        p.out[i] = f(i, x0, x1, x2);
    }
}

/* Any strides: each linear index is split into coordinates (32-bit
 * arithmetic while the space has fewer than 2^32 elements) and every
 * operand's offset is the dot product with its strides. */
template <class F>
__global__ void __launch_bounds__(kThreads)
    ew_strided_kernel(EwOperands<F> p, ptcu_geometry g, int64_t n, F f) {
    PTCU_EW_TYPES(F)
    (void)V;
    constexpr int NOP = 1 + F::kArity;
    const bool small = n <= (int64_t)UINT32_MAX;
    PTCU_GRID_STRIDE(i, 0, n) {
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
        if constexpr (F::kArity >= 1) x0 = p.a[off[1]];
        if constexpr (F::kArity >= 2) x1 = p.b[off[2]];
        if constexpr (F::kArity >= 3) x2 = p.c[off[3]];
        p.out[off[0]] = f(i, x0, x1, x2);
    }
}

static inline bool aligned_to(const void *p, size_t bytes) {
    return ((uintptr_t)p % bytes) == 0;
}

/* Launches functor f over the iteration space of l: the contiguous loop when
 * l->contiguous, the strided loop otherwise. */
template <class F> cudaError_t launch_ew(const ptcu_ew_launch *l, cudaStream_t stream, F f) {
    PTCU_EW_TYPES(F)
    const EwOperands<F> p = {(O *)l->ptr[0], (const A *)l->ptr[1], (const B *)l->ptr[2],
                             (const C *)l->ptr[3]};
    const int64_t n = l->numel;
    if (n <= 0) return cudaSuccess;
    /* Grid-stride loops over one full wave (SMs x resident blocks per SM)
     * unless the caller capped the grid itself. */
    if (!l->contiguous) {
        const int64_t cap = l->max_blocks > 0 ? l->max_blocks : full_wave(ew_strided_kernel<F>, l->sm_count);
        return launch_kernel(ew_strided_kernel<F>, grid_for(n, cap), stream, p, l->geo, n, f);
    }
    unsigned bcast = 0;
    for (int k = 0; k < F::kArity; ++k)
        if (l->geo.strides[k + 1][0] == 0) bcast |= 1u << k;
    bool vec = n >= V && aligned_to(p.out, sizeof(O) * V);
    if (F::kArity >= 1 && !(bcast & 1u)) vec = vec && aligned_to(p.a, sizeof(A) * V);
    if (F::kArity >= 2 && !(bcast & 2u)) vec = vec && aligned_to(p.b, sizeof(B) * V);
    if (F::kArity >= 3 && !(bcast & 4u)) vec = vec && aligned_to(p.c, sizeof(C) * V);
    const int64_t cap = l->max_blocks > 0 ? l->max_blocks : full_wave(ew_contig_kernel<F>, l->sm_count);
    return launch_kernel(ew_contig_kernel<F>, grid_for(vec ? n / V : n, cap), stream, p, bcast, n, vec, f);
}

/* Functor F (computing in float) with its float operands stored as S: each
 * such input is widened on load and the float result rounded once to S on
 * store. Other operand types (a u8 condition or result) pass through. */
template <class T, class S> using stored_as_t = typename std::conditional<std::is_same<T, float>::value, S, T>::type;

template <class S, class F>
struct Stored : EwSignature<F::kArity, stored_as_t<typename F::Out, S>, stored_as_t<typename F::In0, S>,
                            stored_as_t<typename F::In1, S>, stored_as_t<typename F::In2, S>> {
    F f;
    typedef stored_as_t<typename F::Out, S> O;
    __device__ __forceinline__ O operator()(int64_t i, stored_as_t<typename F::In0, S> a,
                                            stored_as_t<typename F::In1, S> b,
                                            stored_as_t<typename F::In2, S> c) const {
        const auto r = f(i, widen(a), widen(b), widen(c));
        if constexpr (is_half_v<O>) return narrow<O>(r);
        else return r;
    }
};

/* launch_ew(f) for operands stored as T (S == T: f itself), or as S. */
template <class S, class F> cudaError_t launch_ew_as(const ptcu_ew_launch *l, cudaStream_t stream, F f) {
    if constexpr (is_half_v<S>) {
        Stored<S, F> w;
        w.f = f;
        return launch_ew(l, stream, w);
    } else {
        return launch_ew(l, stream, f);
    }
}

} /* namespace ptcu */

#endif
