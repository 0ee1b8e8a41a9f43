/* The kernel test's launches run at once, on the calling thread: it checks
 * the kernels' results, not the runtime's queues (../sim/ has those). */
#include "kernel_emulation.h"

void ptcu_emu::submit(cudaStream_t, std::function<void()> work) { work(); }

/* An sm_90-like answer: 2048 resident threads per multiprocessor. */
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, const void *, int block_size, size_t) {
    *blocks = block_size > 0 ? 2048 / block_size : 0;
    return cudaSuccess;
}
