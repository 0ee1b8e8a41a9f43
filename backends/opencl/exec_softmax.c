/* libportable OpenCL backend — the softmax family: SOFTMAX and LOG_SOFTMAX
 * along the middle axis of [outer, r, inner], one work-group per run of
 * columns (kernels/reduce.cl). On CPU devices each work-item takes a whole
 * row (ocl_cpu_rows_shape). */
#include "internal.h"

pt_status ocl_softmax(ocl_device *d, const pt_op *op) {
    const pt_operand *x = &op->in[0];
    pt_dtype t = x->dtype;
    cl_kernel k;
    size_t wg;
    cl_long io = 0, oo = 0;
    pt_status s = ocl_row_kernel(d, OCL_K_SOFTMAX, op, &k, &wg, &io, &oo);
    if (s != PT_OK) return s;
    int64_t outer = x->shape[0], inner = x->shape[2];
    cl_long r = x->shape[1], s_o = x->strides[0], s_r = x->strides[1], s_i = x->strides[2];
    cl_long c_outer = outer, c_inner = inner;
    size_t L;
    cl_int tx_n;
    const cl_int blocked = ocl_blocked_rows(d);
    if (blocked)
        ocl_cpu_rows_shape(d, wg, outer * inner, &L, &tx_n);
    else
        ocl_reduce_shape(wg, outer, r, inner, &L, &tx_n);
    cl_mem in = (cl_mem)x->buf, out = (cl_mem)op->out.buf;
    cl_int log_mode = op->kind == PT_OP_LOG_SOFTMAX;
    ocl_arg args[] = {OCL_ARG(in),       OCL_ARG(io),   OCL_ARG(s_o),     OCL_ARG(s_r),
                      OCL_ARG(s_i),      OCL_ARG(r),    OCL_ARG(c_outer), OCL_ARG(c_inner),
                      OCL_ARG(tx_n),     OCL_ARG(blocked), OCL_ARG(out),  OCL_ARG(oo),
                      OCL_ARG(log_mode), OCL_LOCAL(L * pt_dtype_table_size(t))};
    if ((s = ocl_set_args(d, k, "softmax", (int)(sizeof args / sizeof args[0]), args)) != PT_OK)
        return s;
    size_t groups = (size_t)((outer * inner + tx_n - 1) / tx_n);
    return ocl_enqueue(d, k, "softmax", groups * L, L);
}
