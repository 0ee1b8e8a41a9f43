/* libportable CUDA backend — a CPU emulation of the CUDA features the
 * kernels use, for testing them on machines without a GPU (CI has none).
 *
 * The .cu files are compiled as C++20 by the host compiler with PTCU_EMULATE
 * defined (see test_kernels_emulated.cpp). Each launch runs its blocks one
 * after another; the threads of a block are real threads, so
 * __syncthreads() is a barrier and warp shuffles exchange values through
 * the block (every kernel here calls them uniformly across the block, which
 * this emulation requires). Device memory is host memory. What it cannot
 * show: timing, memory coalescing, occupancy, and anything the compiler for
 * the GPU does differently (fast-math, FMA contraction). */
#ifndef PTCU_KERNEL_EMULATION_H
#define PTCU_KERNEL_EMULATION_H

#include <cuda_runtime_api.h> /* types only: dim3, cudaError_t, cudaStream_t */

#include <barrier>
#include <cstring>
#include <functional>
#include <thread>
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
#define __shared__ static
#define __launch_bounds__(...)

namespace ptcu_emu {

struct Block {
    std::barrier<> *barrier;
    unsigned long long slots[1024]; /* one per thread, for shuffles */
};

inline thread_local dim3 tl_thread_idx, tl_block_idx, tl_block_dim, tl_grid_dim;
inline thread_local Block *tl_block;

template <class... P> struct Launch {
    void (*kernel)(P...);
    dim3 grid, block;
    template <class... A> void operator()(A &&...args) const {
        const unsigned nthreads = block.x * block.y * block.z;
        for (unsigned bz = 0; bz < grid.z; ++bz)
            for (unsigned by = 0; by < grid.y; ++by)
                for (unsigned bx = 0; bx < grid.x; ++bx) {
                    std::barrier<> barrier((std::ptrdiff_t)nthreads);
                    Block blk;
                    blk.barrier = &barrier;
                    std::vector<std::thread> threads;
                    threads.reserve(nthreads);
                    for (unsigned t = 0; t < nthreads; ++t) {
                        threads.emplace_back([&, t, bx, by, bz] {
                            tl_thread_idx = dim3(t % block.x, (t / block.x) % block.y, t / (block.x * block.y));
                            tl_block_idx = dim3(bx, by, bz);
                            tl_block_dim = block;
                            tl_grid_dim = grid;
                            tl_block = &blk;
                            kernel(P(args)...); /* by value, as a launch copies its parameters */
                        });
                    }
                    for (auto &th : threads) th.join();
                }
    }
};

template <class... P> Launch<P...> launch(void (*kernel)(P...), dim3 grid, dim3 block, cudaStream_t) {
    return Launch<P...>{kernel, grid, block};
}

inline void sync_block() { tl_block->barrier->arrive_and_wait(); }

template <class T> T exchange(T v, unsigned src_lane_of_self) {
    static_assert(sizeof(T) <= sizeof(unsigned long long), "shuffle of a value wider than 8 bytes");
    const unsigned self = tl_thread_idx.x;
    unsigned long long bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    tl_block->slots[self] = bits;
    sync_block();
    const unsigned src = (self & ~31u) + src_lane_of_self;
    bits = tl_block->slots[src];
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

/* Launch errors surface at launch under CUDA; the emulation has none. */
#define cudaGetLastError() cudaSuccess

#endif
