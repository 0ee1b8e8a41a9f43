/* libportable CUDA backend — GATHER and ONE_HOT, and EMBEDDING_BACKWARD
 * (EMBEDDING is a gather: exec_index.c). GATHER and ONE_HOT copy values bit
 * for bit, so kernels are chosen by element size (1, 2, 4, 8 bytes) and
 * index dtype rather than by dtype. Indices outside the valid range write 0 (a zero row
 * for ONE_HOT) and never read out of bounds: the device cannot report them
 * without a synchronisation the caller did not ask for. */
#include "k_common.cuh"

namespace ptcu {

struct GatherGeo {
    int64_t outer, r_in, r_idx, inner;
    int64_t xs[3], is[3];
};

template <class E, class I>
__global__ void __launch_bounds__(kThreads)
    gather_kernel(const E *x, const I *index, E *out, GatherGeo g) {
    PTCU_GRID_STRIDE(k, 0, g.outer * g.r_idx * g.inner) {
        const int64_t i = k % g.inner;
        const int64_t j = (k / g.inner) % g.r_idx;
        const int64_t o = k / (g.inner * g.r_idx);
        const int64_t at = (int64_t)index[o * g.is[0] + j * g.is[1] + i * g.is[2]];
        out[k] = (at >= 0 && at < g.r_in) ? x[o * g.xs[0] + at * g.xs[1] + i * g.xs[2]] : (E)0;
    }
}

template <class E, class L>
__global__ void __launch_bounds__(kThreads)
    one_hot_kernel(const L *labels, int64_t stride, E *out, int64_t n, int64_t count, E one) {
    PTCU_GRID_STRIDE(k, 0, n * count) {
        const int64_t row = k / count, c = k % count;
        out[k] = (int64_t)labels[row * stride] == c ? one : (E)0;
    }
}

template <class E, class I> static cudaError_t gather_typed(const ptcu_gather_launch *l, cudaStream_t s) {
    GatherGeo g;
    g.outer = l->outer;
    g.r_in = l->r_in;
    g.r_idx = l->r_idx;
    g.inner = l->inner;
    for (int d = 0; d < 3; ++d) {
        g.xs[d] = l->xs[d];
        g.is[d] = l->is[d];
    }
    return launch_kernel(gather_kernel<E, I>, grid_for(g.outer * g.r_idx * g.inner, blocks_per_sms(l->sm_count, 32)),
                         s, (const E *)l->x, (const I *)l->index, (E *)l->out, g);
}

template <class E, class L> static cudaError_t one_hot_typed(const ptcu_one_hot_launch *l, cudaStream_t s) {
    return launch_kernel(one_hot_kernel<E, L>, grid_for(l->n * l->count, blocks_per_sms(l->sm_count, 32)), s,
                         (const L *)l->labels, l->label_stride, (E *)l->out, l->n, l->count, (E)l->one_bits);
}

/* EMBEDDING_BACKWARD without atomics, so the sums are the same bits run to
 * run: each position p finds whether it is its index's first occurrence
 * and the next position with its index (an O(n) scan per position: O(n^2)
 * index reads, about 17M at n = 4096, where a device sort would cost more
 * launches than it saves at a batch's few thousand tokens), then each first
 * position sums its chain for one column per thread, in increasing
 * position: O(n d) additions. Rows no index picks keep the zeros written
 * before. */
template <class I>
__global__ void __launch_bounds__(kThreads)
    embedding_links_kernel(const I *index, int64_t stride, int64_t n, int64_t rows, int64_t *first, int64_t *next) {
    PTCU_GRID_STRIDE(p, 0, n) {
        const int64_t v = (int64_t)index[p * stride];
        int64_t f = 0, nx = -1;
        if (v >= 0 && v < rows) {
            f = 1;
            for (int64_t q = 0; q < p && f; ++q) f = (int64_t)index[q * stride] != v;
            for (int64_t q = p + 1; q < n && nx < 0; ++q)
                if ((int64_t)index[q * stride] == v) nx = q;
        }
        first[p] = f;
        next[p] = nx;
    }
}

template <class T, class I>
__global__ void __launch_bounds__(kThreads)
    embedding_sum_kernel(const T *g, int64_t gs0, int64_t gs1, const I *index, int64_t stride, const int64_t *first,
                         const int64_t *next, T *out, int64_t n, int64_t d) {
    PTCU_GRID_STRIDE(k, 0, n * d) {
        const int64_t p = k / d, x = k % d;
        if (!first[p]) continue;
        T acc = 0;
        for (int64_t q = p; q >= 0; q = next[q]) acc += g[q * gs0 + x * gs1];
        out[(int64_t)index[p * stride] * d + x] = acc;
    }
}

template <class T> __global__ void __launch_bounds__(kThreads) embedding_zero_kernel(T *out, int64_t n) {
    PTCU_GRID_STRIDE(k, 0, n) { out[k] = 0; }
}

template <class T, class I>
static cudaError_t embedding_grad_typed(const ptcu_embedding_grad_launch *l, cudaStream_t s) {
    const int per_sm = blocks_per_sms(l->sm_count, 32);
    int64_t *first = l->scratch, *next = l->scratch + l->n;
    cudaError_t e = launch_kernel(embedding_zero_kernel<T>, grid_for(l->rows * l->d, per_sm), s, (T *)l->out,
                                  l->rows * l->d);
    if (e == cudaSuccess)
        e = launch_kernel(embedding_links_kernel<I>, grid_for(l->n, per_sm), s, (const I *)l->index,
                          l->index_stride, l->n, l->rows, first, next);
    if (e == cudaSuccess)
        e = launch_kernel(embedding_sum_kernel<T, I>, grid_for(l->n * l->d, per_sm), s, (const T *)l->g, l->gs[0],
                          l->gs[1], (const I *)l->index, l->index_stride, (const int64_t *)first,
                          (const int64_t *)next, (T *)l->out, l->n, l->d);
    return e;
}

} /* namespace ptcu */

extern "C" cudaError_t ptcu_launch_gather(const ptcu_gather_launch *l, cudaStream_t stream) {
    using namespace ptcu;
    return with_bits_type(l->elem_size, [&](auto e) {
        return with_index_type(l->index_dtype,
                               [&](auto i) { return gather_typed<decltype(e), decltype(i)>(l, stream); });
    });
}

extern "C" cudaError_t ptcu_launch_one_hot(const ptcu_one_hot_launch *l, cudaStream_t stream) {
    using namespace ptcu;
    return with_bits_type(l->elem_size, [&](auto e) {
        return with_index_type(l->label_dtype,
                               [&](auto i) { return one_hot_typed<decltype(e), decltype(i)>(l, stream); });
    });
}

extern "C" cudaError_t ptcu_launch_embedding_grad(const ptcu_embedding_grad_launch *l, cudaStream_t stream) {
    using namespace ptcu;
    return with_index_type(l->index_dtype, [&](auto i) {
        using I = decltype(i);
        if (l->dtype == PT_F64) return embedding_grad_typed<double, I>(l, stream);
        if (l->dtype == PT_F32) return embedding_grad_typed<float, I>(l, stream);
        return cudaErrorNotSupported;
    });
}
