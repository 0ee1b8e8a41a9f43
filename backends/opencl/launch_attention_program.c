/* libportable OpenCL backend — the attention programs: kernels/attention.cl
 * after what it needs of the prefix every program starts with (prelude,
 * shared numbers, T), one per element type (f32, f64) and width bucket. The
 * bucket is PT_ATTN_DMAX, the length of the kernels' private rows: the
 * smallest of 32, 64, 128, 256 that holds D and Dv, so a head of 64 does
 * not keep (and, on a GPU, spill) rows of 256. Each is built at the first
 * op that needs it, through the disk cache like every program
 * (launch_program.c), and kept on the device. */
#include <stdio.h>

#include "internal.h"

static const char *const ocl_attn_sources[] = {"prelude.cl", "kernel_abi.h", "common.cl", "attention.cl"};
#define OCL_ATTN_N_SOURCES ((int)(sizeof ocl_attn_sources / sizeof ocl_attn_sources[0]))

static const char *const ocl_attn_names[OCL_ATTN__COUNT] = {
    [OCL_ATTN_FORWARD] = "attn_forward",
    [OCL_ATTN_BACKWARD_KV] = "attn_backward_kv",
    [OCL_ATTN_BACKWARD_Q] = "attn_backward_q",
};

int ocl_attn_bucket(int64_t width) {
    for (int b = 0; b < OCL_ATTN_BUCKETS; ++b)
        if (width <= (int64_t)32 << b) return b;
    return -1;
}

static pt_status ocl_attn_build(ocl_device *d, pt_dtype t, int bucket, ocl_attn_program *ap) {
    char define[48], what[64];
    snprintf(define, sizeof define, "#define PT_ATTN_DMAX %d\n", 32 << bucket);
    snprintf(what, sizeof what, "%s attention kernels (D, Dv <= %d)", pt_dtype_table_name(t), 32 << bucket);
    pt_status s = ocl_program_from_sources(d, what, t, define, OCL_ATTN_N_SOURCES, ocl_attn_sources, &ap->program);
    for (int k = 0; s == PT_OK && k < OCL_ATTN__COUNT; ++k) {
        s = ocl_kernel_create(d, ap->program, ocl_attn_names[k], what, &ap->kernel[k], &ap->wg[k]);
        if (s == PT_OK && clGetKernelWorkGroupInfo(ap->kernel[k], d->id, CL_KERNEL_LOCAL_MEM_SIZE,
                                                   sizeof ap->local_used[k], &ap->local_used[k],
                                                   NULL) != CL_SUCCESS)
            ap->local_used[k] = 0;
    }
    return s;
}

static void ocl_attn_program_release(ocl_attn_program *ap) {
    for (int k = 0; k < OCL_ATTN__COUNT; ++k)
        if (ap->kernel[k]) clReleaseKernel(ap->kernel[k]);
    if (ap->program) clReleaseProgram(ap->program);
    *ap = (ocl_attn_program){0};
}

pt_status ocl_attn_program_get(ocl_device *d, pt_dtype t, int bucket, const ocl_attn_program **out) {
    ocl_attn_program *ap = &d->attn[t == PT_F64][bucket];
    if (!ap->kernel[OCL_ATTN__COUNT - 1]) {
        pt_status s = ocl_attn_build(d, t, bucket, ap);
        if (s != PT_OK) {
            ocl_attn_program_release(ap);
            return s;
        }
    }
    *out = ap;
    return PT_OK;
}

void ocl_attn_release(ocl_device *d) {
    for (int t = 0; t < 2; ++t)
        for (int b = 0; b < OCL_ATTN_BUCKETS; ++b) ocl_attn_program_release(&d->attn[t][b]);
}
