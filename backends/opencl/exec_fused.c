/* libportable OpenCL backend — the FUSED family: a graph's chain of
 * element-wise steps run as one generated kernel (launch_fused_source.c
 * writes it, launch_fused_program.c builds and keeps it). Here: what such a
 * kernel can run, and its launch, whose arguments (buffers, element
 * offsets, the strided inputs' layouts, the steps' scalars) are set at
 * every launch through ocl_set_args / ocl_enqueue_at, so a chain records
 * into a graph's command buffer like any kernel. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* On CPU devices (reduce_serial, one work-item per output) the chain's
 * value computed inside the reduction's loop is slower than the chain and
 * the reduction apart once the kernels stop being launch-bound, measured on
 * PoCL 3.1 (2-core Xeon, AVX-512): where(x > 0, g, 0) summed over [64, 256]
 * took 111 us fused against 28 us apart when the where's value is also
 * stored, 38 against 27 over dim 0 without it, 4.7 ms against 2.3 ms over
 * dim 0 of [1024, 1024]; fused won below about 2K elements (6.9 against
 * 13.7 us for [64, 10]) and over the last dim with nothing stored (0.60
 * against 0.75 ms for [1024, 1024], 7.2 against 11.1 ms for [4096, 4096]).
 * So there the reduction joins only where it was measured to win; the core
 * then fuses the chain without it. GPUs run the group kernel: unmeasured,
 * taken. */
static bool ocl_fused_reduce_pays(const ocl_device *d, const pt_fused_chain *c, char *why, size_t cap) {
    if (!d->cpu_forms || !c->reduce) return true;
    const int64_t numel = c->numel, inner = c->reduce->in[0].shape[2];
    if (numel <= 2048) return true;
    bool stored = false;
    for (int32_t k = 0; k < c->n_steps; ++k) stored = stored || c->steps[k].store;
    if (!stored && (inner == 1 || numel <= 8192)) return true;
    snprintf(why, cap,
             "a %s over %lld elements (%lld outputs, inner extent %lld)%s runs faster apart from its chain "
             "on this CPU device: the chain is fused without it",
             pt_op_name(c->reduce->kind), (long long)numel, (long long)ocl_numel(&c->reduce->out),
             (long long)inner, stored ? " with a step's value stored" : "");
    return false;
}

pt_status ocl_fused_supports(const ocl_device *d, const pt_op *op) {
    char why[512] = "";
    if (op->fused && !ocl_fused_reduce_pays(d, op->fused, why, sizeof why))
        return ocl_fail(PT_ERR_UNSUPPORTED, "fused chain: %s", why);
    pt_status s = ocl_fused_generate(d, op->fused, NULL, NULL, NULL, NULL, why, sizeof why);
    return s == PT_OK ? PT_OK : ocl_fail(s, "fused chain: %s", why);
}

/* The layout of a strided input: innermost dimension first (common.cl). */
static void ocl_fused_layout(const pt_operand *x, cl_int *nd, cl_long8 *shape, cl_long8 *strides) {
    memset(shape, 0, sizeof *shape);
    memset(strides, 0, sizeof *strides);
    for (int i = 0; i < PT_MAX_DIMS; ++i) shape->s[i] = 1;
    for (int i = 0; i < x->ndim; ++i) {
        shape->s[i] = x->shape[x->ndim - 1 - i];
        strides->s[i] = x->strides[x->ndim - 1 - i];
    }
    *nd = x->ndim > 0 ? x->ndim : 1;
}

pt_status ocl_fused_arg_value(const ocl_fused_arg *a, const pt_fused_chain *const *parts,
                                     ocl_fused_value *v, ocl_arg *arg) {
    const pt_fused_chain *c = parts[a->part];
    const cl_long n = c->numel;
    const pt_op *op = &c->steps[a->step].op;
    const pt_operand *x = a->kind <= OCL_FA_IN_STRIDES ? &op->in[a->input] : &op->out;
    pt_status s = PT_OK;
    cl_int nd = 0;
    cl_long8 other;
    switch ((ocl_fused_arg_kind)a->kind) {
    case OCL_FA_IN_BUF:
    case OCL_FA_OUT_BUF: v->mem = (cl_mem)x->buf; *arg = (ocl_arg)OCL_ARG(v->mem); break;
    case OCL_FA_IN_OFF:
    case OCL_FA_OUT_OFF:
        s = ocl_elem_offset(x, &v->i64);
        *arg = (ocl_arg)OCL_ARG(v->i64);
        break;
    case OCL_FA_IN_ND:
        ocl_fused_layout(x, &v->i32, &other, &other);
        *arg = (ocl_arg)OCL_ARG(v->i32);
        break;
    case OCL_FA_IN_SHAPE:
        ocl_fused_layout(x, &nd, &v->v8, &other);
        *arg = (ocl_arg)OCL_ARG(v->v8);
        break;
    case OCL_FA_IN_STRIDES:
        ocl_fused_layout(x, &nd, &other, &v->v8);
        *arg = (ocl_arg)OCL_ARG(v->v8);
        break;
    case OCL_FA_SCALAR:
    case OCL_FA_SCALAR2:
        /* as the eager kernel gets it: the op's double as its input dtype */
        v->scalar = ocl_make_scalar(op->in[0].dtype, a->kind == OCL_FA_SCALAR ? op->scalar : op->scalar2);
        *arg = (ocl_arg){v->scalar.size, &v->scalar.v};
        break;
    case OCL_FA_N: v->i64 = n; *arg = (ocl_arg)OCL_ARG(v->i64); break;
    }
    return s;
}

pt_status ocl_fused(ocl_device *d, const pt_op *op) {
    const pt_fused_chain *c = op->fused;
    ocl_fused_kernel *fk = NULL;
    pt_status s = ocl_fused_kernels(d, c, &fk);
    if (s != PT_OK) return s;
    const cl_long n = c->numel;
    if (n <= 0 && !c->reduce) return PT_OK; /* a reduction still writes its outputs */
    ocl_fused_value vals[OCL_REC_MAX_ARGS];
    ocl_arg args[OCL_REC_MAX_ARGS];
    for (int i = 0; s == PT_OK && i < fk->n_args; ++i)
        s = ocl_fused_arg_value(&fk->args[i], &c, &vals[i], &args[i]);
    if (s != PT_OK) return s;
    if (c->reduce) {
        const ocl_reduce_chain ch = {fk->reduce, fk->wg, fk->n_args, args};
        return ocl_reduce_chained(d, c->reduce, &ch);
    }
    /* Strided inputs through the row walk where a group size divides
     * their rows (every element in whole groups, from 0); otherwise, as
     * ocl_pointwise's contiguous launch: whole groups without a bounds
     * test (PoCL vectorises those), the rest bounds-checked. */
    const size_t local = fk->wg < 256 ? fk->wg : 256;
    int nd = 0;
    const int64_t inner = fk->rows ? ocl_fused_strided_inner(c, &nd) : 0;
    const size_t rows = inner > 0 ? ocl_rows_group(d, nd, inner, local) : 0;
    if (rows > 0) {
        if ((s = ocl_set_args(d, fk->rows, "fused_rows", fk->n_args, args)) != PT_OK) return s;
        return ocl_enqueue_at(d, fk->rows, "fused_rows", 0, (size_t)n, rows);
    }
    const size_t whole = (size_t)n / local * local;
    if (whole > 0) {
        if ((s = ocl_set_args(d, fk->whole, "fused_whole", fk->n_args, args)) != PT_OK) return s;
        if ((s = ocl_enqueue_at(d, fk->whole, "fused_whole", 0, whole, local)) != PT_OK) return s;
    }
    if (whole == (size_t)n) return PT_OK;
    if ((s = ocl_set_args(d, fk->tail, "fused_tail", fk->n_args, args)) != PT_OK) return s;
    return ocl_enqueue_at(d, fk->tail, "fused_tail", whole, local, local);
}
