/* libportable CUDA backend — a CPU emulation of the CUDA features the
 * kernels use, for running them on machines without a GPU (CI has none).
 *
 * The .cu files are compiled as C++20 by the host compiler with PTCU_EMULATE
 * defined (see emulated_k_*.cpp). A launch hands a closure to
 * ptcu_emu::submit(stream, work): the kernel test runs it at once
 * (emulation_immediate.cpp), the simulated CUDA runtime queues it on its
 * stream (../sim/). Running a launch executes its blocks one after another
 * on the calling thread; the threads of a block are fibers on that thread
 * (emulation_fibers.cpp), switched at __syncthreads(), so a barrier is one
 * round over every fiber of the block and warp shuffles exchange values
 * through the block. Every kernel here calls barriers and shuffles uniformly across the
 * block, which this emulation requires. __shared__ variables are
 * thread_local statics: one copy per OS thread, i.e. per block in flight.
 *
 * Device memory is host memory. What it cannot show: timing, memory
 * coalescing, occupancy, and anything the compiler for the GPU does
 * differently (fast-math, FMA contraction). */
#ifndef PTCU_KERNEL_EMULATION_H
#define PTCU_KERNEL_EMULATION_H

#include <cuda_runtime_api.h> /* types only: dim3, cudaError_t, cudaStream_t */

#include <cstddef>
#include <cstring>
#include <functional>
#include <tuple>
#include <vector>

/* The toolkit's host_defines.h gave these GPU meanings; here they are plain C++. */
#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __shared__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static thread_local
#define __launch_bounds__(...)

namespace ptcu_emu {

/* Queues (or runs) one launch on a stream; defined by whoever links the
 * emulated kernels. */
void submit(cudaStream_t stream, std::function<void()> work);

/* The block being run on this OS thread (emulation_fibers.cpp). */
struct Block;

inline thread_local dim3 tl_thread_idx, tl_block_idx, tl_block_dim, tl_grid_dim;

/* Runs every thread of one block to completion, each on its own fiber;
 * sets the tl_* coordinates as it switches between them. */
void run_block(dim3 grid, dim3 block, dim3 block_idx, const std::function<void()> &body);
/* The calling thread has reached a barrier: the other threads of its block
 * run to theirs before it goes on. */
void sync_block();
/* One 8-byte slot per thread of the running block, for shuffles. */
unsigned long long *shuffle_slots();

/* The dynamic shared memory of the block being run (a launch's third
 * <<<>>> argument): one buffer per OS thread, which runs one block at a
 * time, sized by each launch before its first block. */
inline thread_local std::vector<std::max_align_t> tl_dynamic_shared;
inline unsigned char *dynamic_shared() { return (unsigned char *)tl_dynamic_shared.data(); }

template <class... P> struct Launch {
    void (*kernel)(P...);
    dim3 grid, block;
    cudaStream_t stream;
    size_t shared_bytes;
    template <class... A> void operator()(A &&...args) const {
        /* Parameters are copied now, as a launch copies its arguments. */
        auto params = std::make_tuple(P(args)...);
        auto k = kernel;
        const dim3 g = grid, b = block;
        const size_t smem = shared_bytes;
        submit(stream, [k, g, b, smem, params]() {
            const size_t words = (smem + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t);
            if (tl_dynamic_shared.size() < words) tl_dynamic_shared.resize(words);
            const std::function<void()> body = [&]() { std::apply(k, params); };
            for (unsigned bz = 0; bz < g.z; ++bz)
                for (unsigned by = 0; by < g.y; ++by)
                    for (unsigned bx = 0; bx < g.x; ++bx) run_block(g, b, dim3(bx, by, bz), body);
        });
    }
};

template <class... P>
Launch<P...> launch(void (*kernel)(P...), dim3 grid, dim3 block, cudaStream_t stream, size_t shared_bytes = 0) {
    return Launch<P...>{kernel, grid, block, stream, shared_bytes};
}

template <class T> T exchange(T v, unsigned src_lane_of_self) {
    static_assert(sizeof(T) <= sizeof(unsigned long long), "shuffle of a value wider than 8 bytes");
    const unsigned self = tl_thread_idx.x;
    unsigned long long bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    shuffle_slots()[self] = bits;
    sync_block();
    const unsigned src = (self & ~31u) + src_lane_of_self;
    bits = shuffle_slots()[src];
    sync_block();
    T r;
    std::memcpy(&r, &bits, sizeof(T));
    return r;
}

} /* namespace ptcu_emu */

#define threadIdx (::ptcu_emu::tl_thread_idx)
#define blockIdx (::ptcu_emu::tl_block_idx)
#define blockDim (::ptcu_emu::tl_block_dim)
#define gridDim (::ptcu_emu::tl_grid_dim)

inline void __syncthreads() { ptcu_emu::sync_block(); }

template <class T> T __shfl_down_sync(unsigned, T v, int off) {
    const unsigned lane = ptcu_emu::tl_thread_idx.x % 32;
    const unsigned src = lane + (unsigned)off < 32 ? lane + (unsigned)off : lane;
    return ptcu_emu::exchange(v, src);
}

template <class T> T __shfl_xor_sync(unsigned, T v, int mask) {
    const unsigned lane = ptcu_emu::tl_thread_idx.x % 32;
    return ptcu_emu::exchange(v, lane ^ (unsigned)mask);
}

/* cuda_runtime.h's typed overload, which the emulation does not include. */
template <class T> cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attr, T *entry) {
    return ::cudaFuncGetAttributes(attr, (const void *)entry);
}

template <class T> cudaError_t cudaFuncSetAttribute(T *entry, cudaFuncAttribute attr, int value) {
    return ::cudaFuncSetAttribute((const void *)entry, attr, value);
}

template <class T>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, T *entry, int block_size, size_t smem) {
    return ::cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, (const void *)entry, block_size, smem);
}

/* Launch errors surface at launch under CUDA; the emulation has none. */
#define cudaGetLastError() cudaSuccess

#endif
