/* libportable OpenCL backend — the index family: GATHER and ONE_HOT
 * (kernels/index.cl); indices outside the range give 0. */
#include "internal.h"

static pt_status ocl_run_gather(ocl_device *d, const pt_op *op) {
    const pt_operand *x = &op->in[0], *ix = &op->in[1];
    cl_kernel k;
    size_t wg;
    pt_status s = ocl_kernel(d, ocl_storage_dtype(d, x->dtype), OCL_K_GATHER, &k, &wg);
    if (s != PT_OK) return s;
    cl_long oo = 0, xo = 0, ixo = 0;
    if ((s = ocl_elem_offset(&op->out, &oo)) != PT_OK || (s = ocl_elem_offset(x, &xo)) != PT_OK ||
        (s = ocl_elem_offset(ix, &ixo)) != PT_OK)
        return s;
    cl_mem out = (cl_mem)op->out.buf, xb = (cl_mem)x->buf, ib = (cl_mem)ix->buf;
    cl_long xs_o = x->strides[0], xs_r = x->strides[1], xs_i = x->strides[2], r_in = x->shape[1];
    cl_long is_o = ix->strides[0], is_r = ix->strides[1], is_i = ix->strides[2];
    cl_long r_idx = ix->shape[1], inner = ix->shape[2], n = ocl_numel(&op->out);
    cl_int idx_i64 = ix->dtype == PT_I64;
    ocl_arg args[] = {OCL_ARG(out),  OCL_ARG(oo),   OCL_ARG(xb),      OCL_ARG(xo),
                      OCL_ARG(xs_o), OCL_ARG(xs_r), OCL_ARG(xs_i),    OCL_ARG(r_in),
                      OCL_ARG(ib),   OCL_ARG(ixo),  OCL_ARG(idx_i64), OCL_ARG(is_o),
                      OCL_ARG(is_r), OCL_ARG(is_i), OCL_ARG(r_idx),   OCL_ARG(inner),
                      OCL_ARG(n)};
    if ((s = ocl_set_args(d, k, "gather", (int)(sizeof args / sizeof args[0]), args)) != PT_OK)
        return s;
    return ocl_launch_items(d, k, "gather", wg, n);
}

static pt_status ocl_run_one_hot(ocl_device *d, const pt_op *op) {
    const pt_operand *lab = &op->in[0];
    cl_kernel k;
    size_t wg;
    pt_status s = ocl_kernel(d, op->out.dtype, OCL_K_ONE_HOT, &k, &wg);
    if (s != PT_OK) return s;
    cl_long oo = 0, lo = 0;
    if ((s = ocl_elem_offset(&op->out, &oo)) != PT_OK || (s = ocl_elem_offset(lab, &lo)) != PT_OK)
        return s;
    cl_mem out = (cl_mem)op->out.buf, lb = (cl_mem)lab->buf;
    cl_long ls = lab->strides[0], count = op->count, n = lab->shape[0] * op->count;
    cl_int lab_i64 = lab->dtype == PT_I64;
    ocl_arg args[] = {OCL_ARG(out), OCL_ARG(oo),      OCL_ARG(lb),    OCL_ARG(lo),
                      OCL_ARG(ls),  OCL_ARG(lab_i64), OCL_ARG(count), OCL_ARG(n)};
    if ((s = ocl_set_args(d, k, "one_hot", (int)(sizeof args / sizeof args[0]), args)) != PT_OK)
        return s;
    return ocl_launch_items(d, k, "one_hot", wg, n);
}

pt_status ocl_index(ocl_device *d, const pt_op *op) {
    return op->kind == PT_OP_GATHER ? ocl_run_gather(d, op) : ocl_run_one_hot(d, op);
}
