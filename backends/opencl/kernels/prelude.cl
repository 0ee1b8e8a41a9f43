/* libportable OpenCL kernels — the first text of every program.
 *
 * Prepares include/portable/philox.h (embedded right after kernel_abi.h) and
 * include/portable/numeric_rules.h (right after philox.h) for OpenCL C:
 * PT_PHILOX_OPENCL and PT_NUMERIC_OPENCL select their OpenCL types,
 * PT_EW_OPENCL the OpenCL helpers of include/portable/ew_math.h (embedded
 * after common.cl), the float math names philox.h uses map to OpenCL's
 * overloaded built-ins, and f64 functions are compiled only where the device
 * has doubles (-DPT_FP64, set by the host from cl_khr_fp64). */

/* No fused multiply-add unless written: OpenCL C contracts a * b + c by
 * default, which rounds differently from the cpu backend's C code (arange,
 * axpy, add_scalar chains would differ in the last bit). */
#pragma OPENCL FP_CONTRACT OFF

#ifdef PT_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define PT_PHILOX_FP64
#endif
#define PT_PHILOX_OPENCL
#define PT_NUMERIC_OPENCL
#define PT_EW_OPENCL
#define PT_HALF_OPENCL
#define sqrtf sqrt
#define logf log
#define cosf cos
#define sinf sin
