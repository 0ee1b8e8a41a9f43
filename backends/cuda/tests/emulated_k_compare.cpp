/* The k_compare.cu kernels compiled for the CPU emulation (kernel_emulation.h). */
#define PTCU_EMULATE 1
#include "../k_compare.cu"
