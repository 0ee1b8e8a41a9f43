/* libportable OpenCL backend — the product program: kernels/gemm.cl after
 * the prelude every program starts with, f32 only. Built at the first
 * product that runs on it, through the disk cache like every program
 * (launch_program.c), and kept on the device. */
#include <stdio.h>

#include "internal.h"

static const char *const ocl_gemm_sources[] = {"prelude.cl", "gemm.cl"};
#define OCL_GEMM_N_SOURCES ((int)(sizeof ocl_gemm_sources / sizeof ocl_gemm_sources[0]))

/* gemm_rows' columns are one vector; gemm_dots' tile keeps R x C vector
 * accumulators: 8 in 256-bit registers, 16 in 512-bit ones (of 32), where
 * 2 x 4 ran no faster than at 8 floats (backends/opencl/README.md). */
const ocl_gemm_form_info ocl_gemm_forms[2][OCL_GEMM__COUNT] = {
    {[OCL_GEMM_ROWS] = {"gemm_rows", 4, 8}, [OCL_GEMM_DOTS] = {"gemm_dots", 2, 4}},
    {[OCL_GEMM_ROWS] = {"gemm_rows", 4, 16}, [OCL_GEMM_DOTS] = {"gemm_dots", 4, 4}},
};

static pt_status ocl_gemm_build(ocl_device *d, ocl_gemm_program *gp) {
    const char *what = "f32 product kernels";
    gp->width = d->gemm_width;
    gp->forms = ocl_gemm_forms[gp->width == 16];
    char defines[192];
    snprintf(defines, sizeof defines,
             "#define PT_GEMM_PROGRAM\n#define GEMM_V %d\n#define GEMM_ROWS_R %d\n#define GEMM_ROWS_C %d\n"
             "#define GEMM_DOTS_R %d\n#define GEMM_DOTS_C %d\n",
             gp->width, gp->forms[OCL_GEMM_ROWS].rows, gp->forms[OCL_GEMM_ROWS].cols,
             gp->forms[OCL_GEMM_DOTS].rows, gp->forms[OCL_GEMM_DOTS].cols);
    pt_status s = ocl_program_from_sources(d, what, PT_F32, defines, OCL_GEMM_N_SOURCES, ocl_gemm_sources,
                                           &gp->program);
    for (int k = 0; s == PT_OK && k < OCL_GEMM__COUNT; ++k)
        s = ocl_kernel_create(d, gp->program, gp->forms[k].name, what, &gp->kernel[k], &gp->wg[k]);
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
