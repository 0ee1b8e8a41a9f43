/* libportable CUDA backend — GATHER and ONE_HOT. Both copy values bit for
 * bit, so kernels are chosen by element size (1, 4, 8 bytes) and index dtype
 * rather than by dtype. Indices outside the valid range write 0 (a zero row
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
