/* libportable CUDA backend — can this device run our kernels? Asking for a
 * kernel's attributes loads its module for the current device, which fails
 * when none of the compiled architectures suits the GPU (for example a
 * Turing card under a build for sm_80/sm_90 without older PTX). Every .cu
 * file is compiled for the same architectures, so one kernel answers for
 * all. */
#include "k_common.cuh"

#ifndef PTCU_ARCHITECTURES
#define PTCU_ARCHITECTURES "unknown"
#endif

namespace ptcu {
__global__ void probe_kernel(int *flag) {
    if (flag) *flag = 1;
}
} /* namespace ptcu */

extern "C" cudaError_t ptcu_probe_kernels(void) {
    cudaFuncAttributes attr;
    cudaError_t e = cudaFuncGetAttributes(&attr, ptcu::probe_kernel);
    if (e != cudaSuccess) (void)cudaGetLastError();
    return e;
}

extern "C" const char *ptcu_compiled_architectures(void) { return PTCU_ARCHITECTURES; }

#ifndef PTCU_ARCHITECTURE_CODES
#define PTCU_ARCHITECTURE_CODES "unknown"
#endif

extern "C" const char *ptcu_compiled_architecture_codes(void) { return PTCU_ARCHITECTURE_CODES; }
