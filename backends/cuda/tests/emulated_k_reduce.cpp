/* The k_reduce.cu kernels compiled for the CPU emulation (kernel_emulation.h). */
#define PTCU_EMULATE 1
#include "../k_reduce.cu"
