/* The kernels_attention.cu kernels compiled for the CPU emulation (kernel_emulation.h). */
#define PTCU_EMULATE 1
#include "../kernels_attention.cu"
