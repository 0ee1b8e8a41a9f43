/* libportable OpenCL backend — the product program: kernels/gemm.cl after
 * the prelude every program starts with, f32 only. Built at the first
 * product that runs on it, through the disk cache like every program
 * (launch_program.c), and kept on the device. */
#include "internal.h"

static const char *const ocl_gemm_sources[] = {"prelude.cl", "gemm.cl"};
#define OCL_GEMM_N_SOURCES ((int)(sizeof ocl_gemm_sources / sizeof ocl_gemm_sources[0]))

static const char *const ocl_gemm_names[OCL_GEMM__COUNT] = {
    [OCL_GEMM_ROWS] = "gemm_rows",
    [OCL_GEMM_DOTS] = "gemm_dots",
};

static pt_status ocl_gemm_build(ocl_device *d, ocl_gemm_program *gp) {
    const char *what = "f32 product kernels";
    const char *texts[1 + OCL_GEMM_N_SOURCES] = {"#define PT_GEMM_PROGRAM\n"};
    const int n = ocl_embedded_texts(OCL_GEMM_N_SOURCES, ocl_gemm_sources, texts + 1);
    if (n != OCL_GEMM_N_SOURCES)
        return ocl_fail(PT_ERR_INTERNAL, "%s: %d of the %d sources they need are embedded "
                        "(CMakeLists.txt's PT_OCL_KERNEL_SOURCES)", what, n, OCL_GEMM_N_SOURCES);
    pt_status s = ocl_program_build(d, what, PT_F32, 1 + n, texts, &gp->program);
    for (int k = 0; s == PT_OK && k < OCL_GEMM__COUNT; ++k)
        s = ocl_kernel_create(d, gp->program, ocl_gemm_names[k], what, &gp->kernel[k], &gp->wg[k]);
    return s;
}

void ocl_gemm_release(ocl_device *d) {
    ocl_gemm_program *gp = &d->gemm;
    for (int k = 0; k < OCL_GEMM__COUNT; ++k)
        if (gp->kernel[k]) clReleaseKernel(gp->kernel[k]);
    if (gp->program) clReleaseProgram(gp->program);
    *gp = (ocl_gemm_program){0};
}

pt_status ocl_gemm_program_get(ocl_device *d, const ocl_gemm_program **out) {
    if (!d->gemm.kernel[OCL_GEMM__COUNT - 1]) {
        pt_status s = ocl_gemm_build(d, &d->gemm);
        if (s != PT_OK) {
            ocl_gemm_release(d);
            return s;
        }
    }
    *out = &d->gemm;
    return PT_OK;
}
