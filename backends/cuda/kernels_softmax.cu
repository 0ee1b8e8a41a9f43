/* libportable CUDA backend — SOFTMAX and LOG_SOFTMAX over the middle axis
 * of in [outer, r, inner] (any strides) into out of the same shape,
 * contiguous. f32/f64, and f16/bf16 computed in f32 (S: the stored type,
 * widened on load, each output rounded once).
 *
 * Three passes per row: the maximum (NaN propagates, so a row holding a NaN
 * becomes NaN), the sum of exp(x - max), then the outputs exp(x - max) / sum
 * or (x - max) - log(sum). Rows (inner == 1) get a warp each (a block of 256
 * when r > 1024) and reduce with shuffles; columns (inner > 1) get up to 32
 * threads each along r, adjacent threads on adjacent columns, meeting in
 * shared memory. Grids are one full wave (SMs x resident blocks per SM). */
#include "k_common.cuh"

namespace ptcu {

template <class T> struct MaxOp {
    __device__ T operator()(T a, T b) const { return max_nan<T>(a, b); }
};
template <class T> struct SumOp {
    __device__ T operator()(T a, T b) const { return a + b; }
};

/* Reduces v over a group of tpr threads (32: one warp, every lane gets the
 * result from the butterfly; 256: the whole block, through smem). Called by
 * every thread of the block. */
template <class T, class Op> __device__ T group_reduce(T v, int tpr, T *smem, Op op) {
    for (int off = 16; off > 0; off >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, off));
    if (tpr <= 32) return v;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads(); /* earlier readers of smem are done */
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    T r = smem[0];
    for (int w = 1; w < kThreads / 32; ++w) r = op(r, smem[w]);
    return r;
}

template <class T, class S>
__global__ void __launch_bounds__(kThreads)
    softmax_rows_kernel(const S *x, S *out, ptcu_axis_view g, int tpr, bool log_out) {
    __shared__ T smem[kThreads / 32];
    const int rows_per_block = kThreads / tpr;
    const int group = threadIdx.x / tpr, lane = threadIdx.x % tpr;
    for (int64_t base = (int64_t)blockIdx.x * rows_per_block; base < g.outer;
         base += (int64_t)gridDim.x * rows_per_block) {
        const int64_t row = base + group;
        const bool active = row < g.outer;
        const S *xr = x + (active ? row : 0) * g.s_outer;
        S *orow = out + (active ? row : 0) * g.r;
        T m = (T)-INFINITY;
        if (active)
            for (int64_t j = lane; j < g.r; j += tpr) m = max_nan<T>(m, widen(xr[j * g.s_r]));
        m = group_reduce(m, tpr, smem, MaxOp<T>());
        T sum = (T)0;
        if (active)
            for (int64_t j = lane; j < g.r; j += tpr) sum += exp_t<T>(widen(xr[j * g.s_r]) - m);
        sum = group_reduce(sum, tpr, smem, SumOp<T>());
        if (active) {
            if (log_out) {
                const T ls = log_t<T>(sum);
                for (int64_t j = lane; j < g.r; j += tpr) orow[j] = narrow<S>((widen(xr[j * g.s_r]) - m) - ls);
            } else {
                const T inv = (T)1 / sum;
                for (int64_t j = lane; j < g.r; j += tpr) orow[j] = narrow<S>(exp_t<T>(widen(xr[j * g.s_r]) - m) * inv);
            }
        }
    }
}

/* Columns (inner > 1): a block takes bx adjacent columns of one outer
 * index (adjacent threads on adjacent columns, so loads coalesce when
 * s_inner == 1) and by threads along r for each, by * bx == kThreads. The
 * by partial maxima and sums of a column meet in shared memory. */
template <class T, class S>
__global__ void __launch_bounds__(kThreads)
    softmax_cols_kernel(const S *x, S *out, ptcu_axis_view g, int bx, bool log_out) {
    __shared__ T part[kThreads];
    __shared__ T total[2 * kThreads]; /* maxima, then sums at bx.. */
    const int by = kThreads / bx;
    const int tx = threadIdx.x % bx, ty = threadIdx.x / bx;
    const int64_t tiles = (g.inner + bx - 1) / bx;
    for (int64_t t = blockIdx.x; t < g.outer * tiles; t += gridDim.x) {
        const int64_t o = t / tiles, i = (t % tiles) * bx + tx;
        const bool active = i < g.inner;
        const S *xc = x + o * g.s_outer + (active ? i : 0) * g.s_inner;
        S *oc = out + o * g.r * g.inner + i;
        T m = (T)-INFINITY;
        if (active)
            for (int64_t j = ty; j < g.r; j += by) m = max_nan<T>(m, widen(xc[j * g.s_r]));
        __syncthreads(); /* the previous tile's readers of total are done */
        part[threadIdx.x] = m;
        __syncthreads();
        if (ty == 0) {
            T r = part[tx];
            for (int k = 1; k < by; ++k) r = max_nan<T>(r, part[k * bx + tx]);
            total[tx] = r;
        }
        __syncthreads();
        m = total[tx];
        T sum = (T)0;
        if (active)
            for (int64_t j = ty; j < g.r; j += by) sum += exp_t<T>(widen(xc[j * g.s_r]) - m);
        __syncthreads();
        part[threadIdx.x] = sum;
        __syncthreads();
        if (ty == 0) {
            T r = part[tx];
            for (int k = 1; k < by; ++k) r += part[k * bx + tx];
            total[bx + tx] = r;
        }
        __syncthreads();
        sum = total[bx + tx];
        if (active) {
            if (log_out) {
                const T ls = log_t<T>(sum);
                for (int64_t j = ty; j < g.r; j += by) oc[j * g.inner] = narrow<S>((widen(xc[j * g.s_r]) - m) - ls);
            } else {
                const T inv = (T)1 / sum;
                for (int64_t j = ty; j < g.r; j += by) oc[j * g.inner] = narrow<S>(exp_t<T>(widen(xc[j * g.s_r]) - m) * inv);
            }
        }
    }
}

static int pow2_at_least(int64_t v, int cap) {
    int p = 1;
    while (p < v && p < cap) p <<= 1;
    return p;
}

/* Computed in T, stored as S. */
template <class T, class S> static cudaError_t softmax_typed(const ptcu_softmax_launch *l, cudaStream_t s) {
    const ptcu_axis_view &g = l->x;
    if (g.inner == 1) {
        const int64_t cap = full_wave(softmax_rows_kernel<T, S>, l->sm_count);
        /* A group of tpr threads per row: kThreads / tpr rows a block. */
        const int tpr = g.r > 1024 ? kThreads : 32;
        return launch_kernel(softmax_rows_kernel<T, S>, grid_for(g.outer * tpr, cap), s, (const S *)l->in,
                             (S *)l->out, g, tpr, l->log);
    }
    /* Up to 32 threads along r (fewer for short columns, whose threads then
     * go to more columns), at least 8 columns a block. */
    const int by = pow2_at_least(g.r, 32);
    const int bx = kThreads / by;
    const int64_t tiles = g.outer * ((g.inner + bx - 1) / bx);
    const int64_t wave = full_wave(softmax_cols_kernel<T, S>, l->sm_count);
    return launch_kernel(softmax_cols_kernel<T, S>, (unsigned)(tiles < wave ? tiles : wave), s, (const S *)l->in,
                         (S *)l->out, g, bx, l->log);
}

} /* namespace ptcu */

extern "C" cudaError_t ptcu_launch_softmax(const ptcu_softmax_launch *l, cudaStream_t stream) {
    using namespace ptcu;
    switch (l->dtype) {
    case PT_F32: return softmax_typed<float, float>(l, stream);
    case PT_F64: return softmax_typed<double, double>(l, stream);
    case PT_F16: return softmax_typed<float, f16>(l, stream);
    case PT_BF16: return softmax_typed<float, bf16>(l, stream);
    default: return cudaErrorNotSupported;
    }
}
