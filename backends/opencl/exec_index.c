/* libportable OpenCL backend — the index family: GATHER, ONE_HOT and the
 * EMBEDDING kinds (kernels/index.cl); indices outside the range give 0
 * (EMBEDDING_BACKWARD: they add nothing). */
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


/* Three launches (index.cl says why): zero the rows, link the positions,
 * sum each index's chain. */
static pt_status ocl_run_embedding_backward(ocl_device *d, const pt_op *op) {
    const pt_operand *g = &op->in[0], *ix = &op->in[1], *sc = &op->extra[PT_EMB_X_SCRATCH];
    cl_kernel kz, kl, ks;
    size_t wgz, wgl, wgs;
    pt_status s = ocl_kernel(d, op->dtype, OCL_K_EMBEDDING_ZERO, &kz, &wgz);
    if (s == PT_OK) s = ocl_kernel(d, op->dtype, OCL_K_EMBEDDING_LINKS, &kl, &wgl);
    if (s == PT_OK) s = ocl_kernel(d, op->dtype, OCL_K_EMBEDDING_SUM, &ks, &wgs);
    cl_long oo = 0, go = 0, ixo = 0, so = 0;
    if (s == PT_OK) s = ocl_elem_offset(&op->out, &oo);
    if (s == PT_OK) s = ocl_elem_offset(g, &go);
    if (s == PT_OK) s = ocl_elem_offset(ix, &ixo);
    if (s == PT_OK) s = ocl_elem_offset(sc, &so);
    if (s != PT_OK) return s;
    cl_mem out = (cl_mem)op->out.buf, gb = (cl_mem)g->buf, ib = (cl_mem)ix->buf, sb = (cl_mem)sc->buf;
    cl_long n = ix->shape[0], dd = g->shape[1], rows = op->out.shape[0], total = rows * dd;
    cl_long gs0 = g->strides[0], gs1 = g->strides[1], is = ix->strides[0];
    cl_int idx_i64 = ix->dtype == PT_I64;
    ocl_arg zero[] = {OCL_ARG(out), OCL_ARG(oo), OCL_ARG(total)};
    ocl_arg links[] = {OCL_ARG(sb), OCL_ARG(so), OCL_ARG(ib), OCL_ARG(ixo),
                       OCL_ARG(idx_i64), OCL_ARG(is), OCL_ARG(n), OCL_ARG(rows)};
    ocl_arg sum[] = {OCL_ARG(out), OCL_ARG(oo),  OCL_ARG(gb),      OCL_ARG(go), OCL_ARG(gs0),
                     OCL_ARG(gs1), OCL_ARG(sb),  OCL_ARG(so),      OCL_ARG(ib), OCL_ARG(ixo),
                     OCL_ARG(idx_i64), OCL_ARG(is), OCL_ARG(n), OCL_ARG(dd)};
    if ((s = ocl_set_args(d, kz, "embedding_zero", 3, zero)) != PT_OK ||
        (s = ocl_launch_items(d, kz, "embedding_zero", wgz, total)) != PT_OK)
        return s;
    if ((s = ocl_set_args(d, kl, "embedding_links", 8, links)) != PT_OK ||
        (s = ocl_launch_items(d, kl, "embedding_links", wgl, n)) != PT_OK)
        return s;
    if ((s = ocl_set_args(d, ks, "embedding_sum", 14, sum)) != PT_OK) return s;
    return ocl_launch_items(d, ks, "embedding_sum", wgs, n * dd);
}

pt_status ocl_index(ocl_device *d, const pt_op *op) {
    switch (op->kind) {
    case PT_OP_GATHER: return ocl_run_gather(d, op);
    case PT_OP_EMBEDDING: { /* a gather of whole rows */
        const pt_op g = pt_embedding_as_gather(op);
        return ocl_run_gather(d, &g);
    }
    case PT_OP_EMBEDDING_BACKWARD: return ocl_run_embedding_backward(d, op);
    default: return ocl_run_one_hot(d, op);
    }
}
