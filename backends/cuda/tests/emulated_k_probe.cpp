/* The kernels_probe.cu admission check compiled for the CPU emulation (kernel_emulation.h). */
#define PTCU_EMULATE 1
#include "../kernels_probe.cu"
