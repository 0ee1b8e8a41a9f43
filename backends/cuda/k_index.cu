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
    const int64_t n = g.outer * g.r_idx * g.inner;
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n;
         k += (int64_t)gridDim.x * blockDim.x) {
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
    const int64_t total = n * count;
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < total;
         k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t row = k / count, c = k % count;
        out[k] = (int64_t)labels[row * stride] == c ? one : (E)0;
    }
}

static unsigned blocks_for(int64_t n, int sm_count) {
    const int64_t cap = 32 * (int64_t)(sm_count > 0 ? sm_count : 1);
    int64_t b = (n + kThreads - 1) / kThreads;
    if (b < 1) b = 1;
    return (unsigned)(b < cap ? b : cap);
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
    const int64_t n = g.outer * g.r_idx * g.inner;
    auto kernel = gather_kernel<E, I>;
    PTCU_LAUNCH(kernel, blocks_for(n, l->sm_count), kThreads, s)(
        (const E *)l->x, (const I *)l->index, (E *)l->out, g);
    return cudaGetLastError();
}

template <class E> static cudaError_t gather_elem(const ptcu_gather_launch *l, cudaStream_t s) {
    switch (l->index_dtype) {
    case PT_I32: return gather_typed<E, int32_t>(l, s);
    case PT_I64: return gather_typed<E, int64_t>(l, s);
    default: return cudaErrorNotSupported;
    }
}

template <class E, class L> static cudaError_t one_hot_typed(const ptcu_one_hot_launch *l, cudaStream_t s) {
    const E one = (E)l->one_bits;
    auto kernel = one_hot_kernel<E, L>;
    PTCU_LAUNCH(kernel, blocks_for(l->n * l->count, l->sm_count), kThreads, s)(
        (const L *)l->labels, l->label_stride, (E *)l->out, l->n, l->count, one);
    return cudaGetLastError();
}

template <class E> static cudaError_t one_hot_elem(const ptcu_one_hot_launch *l, cudaStream_t s) {
    switch (l->label_dtype) {
    case PT_I32: return one_hot_typed<E, int32_t>(l, s);
    case PT_I64: return one_hot_typed<E, int64_t>(l, s);
    default: return cudaErrorNotSupported;
    }
}

} /* namespace ptcu */

extern "C" cudaError_t ptcu_launch_gather(const ptcu_gather_launch *l, cudaStream_t stream) {
    using namespace ptcu;
    switch (l->elem_size) {
    case 1: return gather_elem<uint8_t>(l, stream);
    case 4: return gather_elem<uint32_t>(l, stream);
    case 8: return gather_elem<uint64_t>(l, stream);
    default: return cudaErrorNotSupported;
    }
}

extern "C" cudaError_t ptcu_launch_one_hot(const ptcu_one_hot_launch *l, cudaStream_t stream) {
    using namespace ptcu;
    switch (l->elem_size) {
    case 1: return one_hot_elem<uint8_t>(l, stream);
    case 4: return one_hot_elem<uint32_t>(l, stream);
    case 8: return one_hot_elem<uint64_t>(l, stream);
    default: return cudaErrorNotSupported;
    }
}
