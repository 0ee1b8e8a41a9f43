/* The k_binary.cu kernels compiled for the CPU emulation (kernel_emulation.h). */
#define PTCU_EMULATE 1
#include "../k_binary.cu"
