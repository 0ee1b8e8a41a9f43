/* libportable OpenCL backend — f32 products on the plugin's own kernels
 * (kernels/gemm.cl says how they work and why): which products go there
 * rather than to CLBlast, and their launch.
 *
 * By default (PORTABLE_OPENCL_GEMM=auto) they run f32 products of up to
 * OCL_GEMM_OWN_MACS multiply-adds on CPU devices, where they beat CLBlast's
 * kernels at every size measured (bench/opencl's matmul part compares the
 * two); GPUs keep CLBlast, whose kernels are tuned per device. =own takes
 * every f32 product it can lay out on any device (how the conformance
 * suite tests these kernels on a GPU), =clblast none. A product whose A and
 * B are both column-major (A^T B^T) has no form here and stays on CLBlast. */
#include "internal.h"

/* Up to 512 x 512 x 1024: past that the kernels' lack of cache blocking
 * starts to show, and CLBlast's indirect GEMM takes over. */
#define OCL_GEMM_OWN_MACS ((uint64_t)1 << 28)

/* The form that lays g out, or -1. */
static int ocl_gemm_form(const ocl_gemm_call *g) {
    if (g->b_col == 1 || g->N == 1) return OCL_GEMM_ROWS;
    if ((g->a_col == 1 || g->K == 1) && (g->b_row == 1 || g->K == 1)) return OCL_GEMM_DOTS;
    return -1;
}

bool ocl_gemm_own_takes(const ocl_device *d, const ocl_gemm_call *g) {
    if (g->dtype != PT_F32 || d->gemm_mode == OCL_GEMM_CLBLAST || ocl_gemm_form(g) < 0) return false;
    if (g->M > INT32_MAX || g->N > INT32_MAX || g->K > INT32_MAX) return false;
    if (d->gemm_mode == OCL_GEMM_OWN) return true;
    const double macs = (double)g->batch * (double)(g->sums > 1 ? g->sums : 1) * (double)g->M * (double)g->N *
                        (double)g->K;
    return (d->cl_type & CL_DEVICE_TYPE_CPU) && macs <= (double)OCL_GEMM_OWN_MACS;
}

pt_status ocl_gemm_own(ocl_device *d, const ocl_gemm_call *g) {
    if (g->batch == 0 || g->M == 0 || g->N == 0) return PT_OK; /* nothing to write */
    const ocl_gemm_program *gp = NULL;
    pt_status s = ocl_gemm_program_get(d, &gp);
    if (s != PT_OK) return s;
    const int form = ocl_gemm_form(g);
    const char *name = gp->forms[form].name;
    const cl_kernel k = gp->kernel[form];
    const cl_int M = (cl_int)g->M, N = (cl_int)g->N, K = (cl_int)g->K, acc = g->accumulate,
                 sums = g->sums > 1 ? (cl_int)g->sums : 1;
    const size_t tile_r = (size_t)gp->forms[form].rows, tile_c = (size_t)gp->forms[form].cols;
    const cl_long items = (cl_long)(((g->M + tile_r - 1) / tile_r) * ((g->N + tile_c - 1) / tile_c) * g->batch);
    const cl_long ao = (cl_long)g->ao, bo = (cl_long)g->bo, co = (cl_long)g->co, a_row = g->a_row,
                  a_col = g->a_col, b_row = g->b_row, b_col = g->b_col, a_batch = (cl_long)g->a_stride,
                  b_batch = (cl_long)g->b_stride, c_batch = (cl_long)g->c_stride;
    const cl_mem a = g->a, b = g->b, c = g->c;
    if (form == OCL_GEMM_ROWS) {
        ocl_arg args[] = {OCL_ARG(a),     OCL_ARG(ao),      OCL_ARG(a_row), OCL_ARG(a_col), OCL_ARG(a_batch),
                          OCL_ARG(b),     OCL_ARG(bo),      OCL_ARG(b_row), OCL_ARG(b_col), OCL_ARG(b_batch),
                          OCL_ARG(c),     OCL_ARG(co),      OCL_ARG(c_batch), OCL_ARG(M),   OCL_ARG(N),
                          OCL_ARG(K),     OCL_ARG(acc),     OCL_ARG(sums),  OCL_ARG(items)};
        s = ocl_set_args(d, k, name, (int)(sizeof args / sizeof args[0]), args);
    } else {
        ocl_arg args[] = {OCL_ARG(a),   OCL_ARG(ao),      OCL_ARG(a_row), OCL_ARG(a_batch), OCL_ARG(b),
                          OCL_ARG(bo),  OCL_ARG(b_col),   OCL_ARG(b_batch), OCL_ARG(c),     OCL_ARG(co),
                          OCL_ARG(c_batch), OCL_ARG(M),   OCL_ARG(N),     OCL_ARG(K),       OCL_ARG(acc),
                          OCL_ARG(sums),    OCL_ARG(items)};
        s = ocl_set_args(d, k, name, (int)(sizeof args / sizeof args[0]), args);
    }
    if (s != PT_OK) return s;
    /* Groups of 32 tiles: enough groups to spread over a CPU's cores for
     * the small products this is for, few enough to cost little each. */
    size_t local = gp->wg[form] < 32 ? ocl_pow2_floor(gp->wg[form]) : 32;
    return ocl_enqueue(d, k, name, ((size_t)items + local - 1) / local * local, local);
}
