/* The k_data.cu kernels compiled for the CPU emulation (kernel_emulation.h). */
#define PTCU_EMULATE 1
#include "../k_data.cu"
