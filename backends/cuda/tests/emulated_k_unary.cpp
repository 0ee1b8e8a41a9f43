/* The kernels_elementwise_unary.cu kernels compiled for the CPU emulation (kernel_emulation.h). */
#define PTCU_EMULATE 1
#include "../kernels_elementwise_unary.cu"
