/* libportable CUDA backend — reductions over the middle axis of
 * in [outer, r, inner] (any strides) into out [outer, inner] (contiguous):
 * SUM, MEAN, MAX, ARGMAX (f32 f64 i32 i64 f16 bf16; MAX also u8). f16/bf16
 * are widened as they are loaded: sums accumulate in double like f32's and
 * round once to the 16-bit output, MAX/ARGMAX compare them as floats.
 *
 * Accumulators: f32/f64 sums in double, integer sums in uint64 (wrapping,
 * then truncated to the output's width); MAX propagates NaN; ARGMAX keeps
 * (value, index) pairs and prefers NaN, then the larger value, then the
 * smaller index, so the first maximum (or first NaN) wins in any order.
 *
 * One block of 256 threads = bx x by: bx outputs side by side along inner
 * (coalesced when inner has stride 1), by threads splitting r. Rows with
 * inner == 1 use bx = 1 and reduce a row with warp shuffles. When there are
 * too few outputs to fill the GPU (one full wave: SMs x resident blocks per
 * SM from the occupancy API), r is split into G chunks (grid.y); the
 * chunks write partial accumulators to scratch [outer, G, inner] and a
 * second launch reduces those. Each thread keeps two accumulators, and a
 * contiguous row is read as 16-byte vectors (reduce_span). */
#include "k_common.cuh"
#include "k_reduce_acc.cuh"

namespace ptcu {

template <class T> struct ArgAcc {
    T v;
    int64_t i; /* -1: empty (identity) */
};

template <class T> struct ArgmaxR {
    typedef ArgAcc<compute_t<T>> Acc;
    __device__ static Acc identity() {
        Acc a;
        a.v = 0;
        a.i = -1;
        return a;
    }
    __device__ static Acc lift(T v, int64_t j) {
        Acc a;
        a.v = widen(v);
        a.i = j;
        return a;
    }
    __device__ static Acc combine(Acc a, Acc b) {
        if (a.i < 0) return b;
        if (b.i < 0) return a;
        const bool an = is_nan(a.v), bn = is_nan(b.v);
        if (an || bn) {
            if (an && bn) return a.i < b.i ? a : b;
            return an ? a : b;
        }
        if (a.v > b.v) return a;
        if (b.v > a.v) return b;
        return a.i < b.i ? a : b;
    }
};

template <class T> __device__ __forceinline__ T shfl_down(T v, int off) {
    return __shfl_down_sync(0xffffffffu, v, off);
}
template <class T> __device__ __forceinline__ ArgAcc<T> shfl_down(ArgAcc<T> a, int off) {
    ArgAcc<T> r;
    r.v = __shfl_down_sync(0xffffffffu, a.v, off);
    r.i = (int64_t)__shfl_down_sync(0xffffffffu, (long long)a.i, off);
    return r;
}

/* Writes one finished accumulator as the output dtype (k_reduce_acc.cuh),
 * MEAN's divided by count. */
template <class Acc>
__device__ __forceinline__ void store_as(void *out, pt_dtype dt, int64_t k, Acc v, bool mean, int64_t count) {
    switch (dt) {
    case PT_F32: store_result((float *)out, k, v, mean, count); break;
    case PT_F64: store_result((double *)out, k, v, mean, count); break;
    case PT_I32: store_result((int32_t *)out, k, v, mean, count); break;
    case PT_I64: store_result((int64_t *)out, k, v, mean, count); break;
    case PT_U8: store_result((u8 *)out, k, v, mean, count); break;
    case PT_F16: store_result((f16 *)out, k, v, mean, count); break;
    case PT_BF16: store_result((bf16 *)out, k, v, mean, count); break;
    default: break;
    }
}
template <class T>
__device__ __forceinline__ void store_as(void *out, pt_dtype dt, int64_t k, ArgAcc<T> v, bool, int64_t) {
    (void)dt;
    ((int64_t *)out)[k] = v.i; /* ARGMAX writes PT_I64 */
}

/* An input element as the accumulator: lifted (with its index along r)
 * in the first pass, as it is when reducing partials. */
template <class R, class In> __device__ __forceinline__ typename R::Acc lift_in(In v, int64_t j) {
    if constexpr (std::is_same<In, typename R::Acc>::value) {
        (void)j;
        return v;
    } else {
        return R::lift(v, j);
    }
}

/* This thread's share of base[j * s_r] for j in [j0, j1), every by-th
 * element from j0 + ty, in two accumulators (two independent chains of
 * loads and combines in flight instead of one). A contiguous span
 * (s_r == 1) moves as 16-byte vectors from its first 16-byte-aligned
 * element on, with the unaligned head and the tail element by element.
 * Every combine used here is order-independent (ARGMAX breaks ties by
 * index), so the split changes no result beyond float rounding of sums. */
template <class R, class In>
__device__ __forceinline__ typename R::Acc reduce_span(const In *base, int64_t j0, int64_t j1, int64_t s_r, int ty,
                                                       int by) {
    typedef typename R::Acc Acc;
    Acc a0 = R::identity(), a1 = R::identity();
    constexpr int V = (int)(16 / sizeof(In));
    if constexpr (V > 1 && sizeof(In) * V == 16) {
        const uintptr_t addr = (uintptr_t)(base + j0);
        if (s_r == 1 && addr % sizeof(In) == 0) {
            int64_t head = (int64_t)(((16 - addr % 16) % 16) / sizeof(In));
            if (head > j1 - j0) head = j1 - j0;
            const int64_t jv = j0 + head, nv = (j1 - jv) / V;
            for (int64_t k = j0 + ty; k < jv; k += by) a1 = R::combine(a1, lift_in<R, In>(base[k], k));
            const Vec<In, V> *vp = (const Vec<In, V> *)(base + jv);
            int64_t v = ty;
            for (; v + by < nv; v += 2 * (int64_t)by) {
                const Vec<In, V> x0 = vp[v], x1 = vp[v + by];
#pragma unroll
                for (int k = 0; k < V; ++k) {
                    a0 = R::combine(a0, lift_in<R, In>(x0.v[k], jv + v * V + k));
                    a1 = R::combine(a1, lift_in<R, In>(x1.v[k], jv + (v + by) * V + k));
                }
            }
            if (v < nv) {
                const Vec<In, V> x0 = vp[v];
#pragma unroll
                for (int k = 0; k < V; ++k) a0 = R::combine(a0, lift_in<R, In>(x0.v[k], jv + v * V + k));
            }
            for (int64_t k = jv + nv * V + ty; k < j1; k += by) a1 = R::combine(a1, lift_in<R, In>(base[k], k));
            return R::combine(a0, a1);
        }
    }
    int64_t j = j0 + ty;
    for (; j + by < j1; j += 2 * (int64_t)by) {
        a0 = R::combine(a0, lift_in<R, In>(base[j * s_r], j));
        a1 = R::combine(a1, lift_in<R, In>(base[(j + by) * s_r], j + by));
    }
    if (j < j1) a0 = R::combine(a0, lift_in<R, In>(base[j * s_r], j));
    return R::combine(a0, a1);
}

struct ReducePlan {
    int64_t outer, r, inner;
    int64_t s_outer, s_r, s_inner;
    int bx, by;
    int64_t tiles;   /* ceil(inner / bx) */
    int64_t chunks;  /* G: r split into this many chunks (grid.y) */
    int64_t r_chunk; /* elements of r per chunk */
};

/* In is T for the first pass and R::Acc when reducing partials. partial
 * NULL: write finished values to out (divided by count for MEAN). */
template <class R, class In>
__global__ void __launch_bounds__(kThreads)
    reduce_kernel(const In *x, ReducePlan p, void *out, pt_dtype out_dtype, bool mean,
                  int64_t count, typename R::Acc *partial) {
    typedef typename R::Acc Acc;
    __shared__ Acc smem[kThreads];
    const int tx = threadIdx.x % p.bx, ty = threadIdx.x / p.bx;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t g = blockIdx.y;
    const int64_t j0 = g * p.r_chunk;
    const int64_t j1 = j0 + p.r_chunk < p.r ? j0 + p.r_chunk : p.r;
    for (int64_t t = blockIdx.x; t < p.outer * p.tiles; t += gridDim.x) {
        const int64_t o = t / p.tiles;
        const int64_t i = (t % p.tiles) * p.bx + tx;
        Acc acc = R::identity();
        if (i < p.inner) acc = reduce_span<R, In>(x + o * p.s_outer + i * p.s_inner, j0, j1, p.s_r, ty, p.by);
        /* Threads of a warp with the same tx sit bx lanes apart: fold them
         * onto lanes [0, bx). With bx >= 32 every lane is its own output. */
        for (int off = 16; off >= p.bx; off >>= 1) acc = R::combine(acc, shfl_down(acc, off));
        /* One partial per (group, tx): a group is a warp when bx < 32, a
         * row of the block otherwise. */
        int ngroups, grp;
        if (p.bx < 32) {
            ngroups = kThreads / 32;
            grp = warp;
        } else {
            ngroups = p.by;
            grp = ty;
        }
        __syncthreads(); /* the previous tile's readers are done with smem */
        if (p.bx >= 32 || lane < p.bx) smem[grp * p.bx + (p.bx < 32 ? lane : tx)] = acc;
        __syncthreads();
        if (ty == 0 && i < p.inner) {
            Acc r = smem[tx];
            for (int k = 1; k < ngroups; ++k) r = R::combine(r, smem[k * p.bx + tx]);
            if (partial) partial[(o * p.chunks + g) * p.inner + i] = r;
            else store_as(out, out_dtype, o * p.inner + i, r, mean, count);
        }
    }
}

static int64_t next_pow2(int64_t v) {
    int64_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

/* Chooses the block shape and the split of r. allow_split false for the
 * second pass over partials. per_sm: resident blocks of the kernel per
 * multiprocessor (occupancy API): too few outputs to give sm_count x per_sm
 * blocks (one full wave) work get r split into chunks. */
static ReducePlan make_plan(const ptcu_axis_view &x, int sm_count, int per_sm, bool allow_split) {
    ReducePlan p;
    int64_t outer = x.outer, r = x.r, inner = x.inner;
    int64_t s_outer = x.s_outer, s_r = x.s_r, s_inner = x.s_inner;
    /* Short rows (inner == 1, r small) are better as one thread per row:
     * view [outer, r, 1] as [1, r, outer]; the output layout is the same. */
    if (inner == 1 && r < 64 && outer > 1) {
        inner = outer;
        s_inner = s_outer;
        outer = 1;
        s_outer = 0;
    }
    p.outer = outer;
    p.r = r;
    p.inner = inner;
    p.s_outer = s_outer;
    p.s_r = s_r;
    p.s_inner = s_inner;
    int64_t bx;
    if (inner == 1) {
        bx = 1;
    } else if (r >= 8) {
        bx = next_pow2(inner) < 32 ? next_pow2(inner) : 32;
    } else {
        const int64_t cap = kThreads / next_pow2(r);
        bx = next_pow2(inner) < cap ? next_pow2(inner) : cap;
    }
    p.bx = (int)bx;
    p.by = (int)(kThreads / bx);
    p.tiles = (inner + bx - 1) / bx;
    p.chunks = 1;
    const int64_t blocks = outer * p.tiles;
    const int64_t target = blocks_per_sms(sm_count, per_sm);
    if (allow_split && blocks < target) {
        int64_t want = (target + blocks - 1) / blocks;
        const int64_t by_work = r / ((int64_t)p.by * 16); /* >= 16 elements per thread */
        if (want > by_work) want = by_work;
        if (want > 65535) want = 65535;
        if (want > 1) p.chunks = want;
    }
    p.r_chunk = (r + p.chunks - 1) / p.chunks;
    p.chunks = (r + p.r_chunk - 1) / p.r_chunk;
    return p;
}

static unsigned grid_x(const ReducePlan &p) {
    const int64_t blocks = p.outer * p.tiles;
    return (unsigned)(blocks < (1 << 30) ? blocks : (1 << 30));
}

template <class R, class In> static ReducePlan first_plan(const ptcu_reduce_launch *l) {
    return make_plan(l->x, l->sm_count, resident_blocks_per_sm(reduce_kernel<R, In>), true);
}

template <class R, class In> static size_t scratch_from(const ptcu_reduce_launch *l) {
    const ReducePlan p = first_plan<R, In>(l);
    if (p.chunks <= 1) return 0;
    return (size_t)(p.outer * p.chunks * p.inner) * sizeof(typename R::Acc);
}

/* In: T, or R::Acc where the input holds partials (l->partials). */
template <class R, class In> static cudaError_t reduce_from(const ptcu_reduce_launch *l, cudaStream_t s) {
    typedef typename R::Acc Acc;
    const ReducePlan p = first_plan<R, In>(l);
    const bool mean = l->kind == PT_OP_MEAN;
    const int64_t count = l->partials ? l->count : l->x.r;
    if (p.chunks <= 1)
        return launch_kernel(reduce_kernel<R, In>, dim3(grid_x(p), 1), s, (const In *)l->in, p, l->out,
                             l->out_dtype, mean, count, (Acc *)nullptr);
    if (!l->scratch) return cudaErrorInvalidValue;
    Acc *partial = (Acc *)l->scratch;
    cudaError_t e = launch_kernel(reduce_kernel<R, In>, dim3(grid_x(p), (unsigned)p.chunks), s, (const In *)l->in,
                                  p, l->out, l->out_dtype, mean, count, partial);
    if (e != cudaSuccess) return e;
    /* The partials are [outer', chunks, inner'] contiguous in the plan's
     * (possibly transposed) view, whose outputs map to out identically. */
    const ptcu_axis_view partials = {p.outer, p.chunks, p.inner, p.chunks * p.inner, p.inner, 1};
    const ReducePlan p2 = make_plan(partials, l->sm_count, 1, false);
    return launch_kernel(reduce_kernel<R, Acc>, dim3(grid_x(p2), 1), s, (const Acc *)partial, p2, l->out,
                         l->out_dtype, mean, count, (Acc *)nullptr);
}

template <class R, class T> static cudaError_t reduce_typed(const ptcu_reduce_launch *l, cudaStream_t s) {
    return l->partials ? reduce_from<R, typename R::Acc>(l, s) : reduce_from<R, T>(l, s);
}

template <class R, class T> static size_t scratch_typed(const ptcu_reduce_launch *l) {
    return l->partials ? scratch_from<R, typename R::Acc>(l) : scratch_from<R, T>(l);
}

template <class T> static cudaError_t reduce_dtype(const ptcu_reduce_launch *l, cudaStream_t s) {
    if constexpr (std::is_same<T, u8>::value) { /* u8: MAX only (the core sums u8 as i64) */
        if (l->kind == PT_OP_MAX) return reduce_typed<MaxR<T>, T>(l, s);
        return cudaErrorNotSupported;
    }
    switch (l->kind) {
    case PT_OP_SUM:
    case PT_OP_MEAN: return reduce_typed<SumR<T>, T>(l, s);
    case PT_OP_MAX: return reduce_typed<MaxR<T>, T>(l, s);
    case PT_OP_ARGMAX: return reduce_typed<ArgmaxR<T>, T>(l, s);
    default: return cudaErrorNotSupported;
    }
}

template <class T> static cudaError_t scratch_dtype(const ptcu_reduce_launch *l, size_t *bytes) {
    if constexpr (std::is_same<T, u8>::value) {
        *bytes = scratch_typed<MaxR<T>, T>(l);
        return l->kind == PT_OP_MAX ? cudaSuccess : cudaErrorNotSupported;
    }
    switch (l->kind) {
    case PT_OP_SUM:
    case PT_OP_MEAN: *bytes = scratch_typed<SumR<T>, T>(l); return cudaSuccess;
    case PT_OP_MAX: *bytes = scratch_typed<MaxR<T>, T>(l); return cudaSuccess;
    case PT_OP_ARGMAX: *bytes = scratch_typed<ArgmaxR<T>, T>(l); return cudaSuccess;
    default: *bytes = 0; return cudaErrorNotSupported;
    }
}

} /* namespace ptcu */

extern "C" size_t ptcu_reduce_scratch_bytes(const ptcu_reduce_launch *l) {
    using namespace ptcu;
    size_t bytes = 0;
    const cudaError_t e =
        with_stored_type(l->in_dtype, [&](auto t) { return scratch_dtype<decltype(t)>(l, &bytes); });
    return e == cudaSuccess ? bytes : 0;
}

extern "C" size_t ptcu_reduce_acc_bytes(pt_op_kind kind, pt_dtype in_dtype) {
    using namespace ptcu;
    size_t bytes = 0;
    (void)with_stored_type(in_dtype, [&](auto t) {
        typedef decltype(t) T;
        if (kind == PT_OP_MAX) bytes = sizeof(typename MaxR<T>::Acc);
        else if ((kind == PT_OP_SUM || kind == PT_OP_MEAN) && !std::is_same<T, u8>::value)
            bytes = sizeof(typename SumR<T>::Acc);
        return cudaSuccess;
    });
    return bytes;
}

extern "C" cudaError_t ptcu_launch_reduce(const ptcu_reduce_launch *l, cudaStream_t stream) {
    using namespace ptcu;
    return with_stored_type(l->in_dtype, [&](auto t) { return reduce_dtype<decltype(t)>(l, stream); });
}
