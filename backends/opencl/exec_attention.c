/* libportable OpenCL backend — the ATTENTION family (backend.h ATTENTION):
 * softmax(q k^T scale + mask) v and its gradients with the kernels of
 * kernels/attention.cl, which never hold the [Tq, Tk] scores: the forward
 * pass saves each query row's log-sum-exp, and the backward pass
 * recomputes the probabilities from it, once by key rows (dk, dv) and once
 * by query rows (dq), without atomics.
 *
 * The geometry comes from the device: a work-group of up to 64 rows, fewer
 * where the kernel's CL_KERNEL_WORK_GROUP_SIZE says so, and tiles of the
 * other side's rows as long as the local memory holds (at most
 * PT_K_ATTN_TILE_MAX). Heads wider than OCL_ATTN_MAX_WIDTH, or a device
 * whose local memory does not hold one row of each, are refused with
 * PT_ERR_UNSUPPORTED, and the core composes them.
 * PORTABLE_OPENCL_ATTENTION=composed refuses the forward kind the same
 * way (and so never gets the backward one), so both paths can be measured and tested on one device; it is read
 * at every op (a getenv beside a kernel over [T, D] rows), so one program
 * can alternate them (bench/bench_attention_opencl.c). */
#include "internal.h"

_Static_assert(PT_K_ATTN_CAUSAL == PT_ATTN_CAUSAL && PT_K_ATTN_MASK_KEEP == PT_ATTN_MASK_KEEP &&
                   PT_K_ATTN_MASK_ADD == PT_ATTN_MASK_ADD,
               "kernel_abi.h's attention flags must equal backend.h's");

/* Rows of a work-group at most: enough work-items to load a tile together
 * and to fill a GPU's scheduling unit, few enough that a (b, h) of a short
 * sequence still splits into several groups. */
#define OCL_ATTN_ROWS 64

/* Whether x is [b, h, t, w] with its last stride 1. */
static bool ocl_attn_shape(const pt_operand *x, int64_t b, int64_t h, int64_t t, int64_t w) {
    return x->ndim == 4 && x->shape[0] == b && x->shape[1] == h && x->shape[2] == t && x->shape[3] == w &&
           (w == 1 || x->strides[3] == 1);
}

/* Whether x, of shape[0..n-1], lies row-major without gaps (extent-1
 * dims' strides do not count). */
static bool ocl_attn_dense(const pt_operand *x, int n) {
    int64_t want = 1;
    for (int i = n - 1; i >= 0; --i) {
        if (x->shape[i] != 1 && x->strides[i] != want) return false;
        want *= x->shape[i];
    }
    return true;
}

/* Whether PORTABLE_OPENCL_ATTENTION asks for the core's composed path. */
static bool ocl_attention_composed(void) {
    static const char *const paths[] = {"fused", "composed", NULL};
    return PT_HOST_HAS(ocl_host, env_choice) && ocl_host->env_choice("PORTABLE_OPENCL_ATTENTION", paths, 0) == 1;
}

pt_status ocl_attention_supports(const ocl_device *d, const pt_op *op) {
    const char *kind = pt_op_name(op->kind);
    /* The forward kind decides: the backward of a forward this plugin ran
     * has no composed form to fall back on, whatever the switch says now. */
    if (op->kind == PT_OP_ATTENTION && ocl_attention_composed())
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s: PORTABLE_OPENCL_ATTENTION=composed sends it to products "
                        "and a softmax", kind);
    const pt_dtype t = op->dtype;
    if (t != PT_F32 && t != PT_F64)
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s on %s: the OpenCL kernels take f32 and f64 (the core "
                        "computes 16-bit tensors in f32)", kind, pt_dtype_table_name(t));
    const bool backward = op->kind == PT_OP_ATTENTION_BACKWARD;
    const pt_operand *q = &op->in[0], *k = &op->in[1], *v = &op->in[2], *lse = &op->extra[PT_ATTN_X_LSE];
    if (op->n_inputs != 3 || op->n_extra < (backward ? PT_ATTN_X_GRAD_V + 1 : PT_ATTN_X_LSE + 1) ||
        q->ndim != 4 || k->ndim != 4 || v->ndim != 4)
        return ocl_fail(PT_ERR_INVALID_ARGUMENT, "%s takes 4-D q, k, v and its extra operands (backend.h)", kind);
    const int64_t b = q->shape[0], h = q->shape[1], tq = q->shape[2], tk = k->shape[2], dq = q->shape[3],
                  dv = v->shape[3];
    bool ok = b >= 1 && h >= 1 && tq >= 1 && tk >= 1 && dq >= 1 && dv >= 1 && ocl_attn_shape(q, b, h, tq, dq) &&
              ocl_attn_shape(k, b, h, tk, dq) && ocl_attn_shape(v, b, h, tk, dv) && ocl_attn_shape(&op->out, b, h, tq, backward ? dq : dv) &&
              ocl_attn_dense(&op->out, 4) && lse->ndim == 3 && lse->dtype == t && ocl_attn_dense(lse, 3);
    const pt_operand *mask = &op->extra[PT_ATTN_X_MASK];
    if (op->flags & (PT_ATTN_MASK_KEEP | PT_ATTN_MASK_ADD))
        ok = ok && mask->ndim == 4 && mask->dtype == (op->flags & PT_ATTN_MASK_KEEP ? PT_U8 : t);
    if (backward)
        ok = ok && ocl_attn_shape(&op->extra[PT_ATTN_X_OUT], b, h, tq, dv) &&
             ocl_attn_shape(&op->extra[PT_ATTN_X_GRAD_OUT], b, h, tq, dv) &&
             ocl_attn_shape(&op->extra[PT_ATTN_X_GRAD_K], b, h, tk, dq) &&
             ocl_attn_shape(&op->extra[PT_ATTN_X_GRAD_V], b, h, tk, dv) &&
             ocl_attn_dense(&op->extra[PT_ATTN_X_GRAD_K], 4) && ocl_attn_dense(&op->extra[PT_ATTN_X_GRAD_V], 4);
    if (!ok)
        return ocl_fail(PT_ERR_INVALID_ARGUMENT, "%s: operands do not match backend.h's ATTENTION layout", kind);
    const int64_t width = dq > dv ? dq : dv;
    if (ocl_attn_bucket(width) < 0)
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s with D = %lld, Dv = %lld: the OpenCL kernels take heads up to "
                        "%d wide (the core composes wider ones)", kind, (long long)dq, (long long)dv,
                        OCL_ATTN_MAX_WIDTH);
    /* Each work-item walks every row of the other side, doing about
     * 2 (D + Dv) steps per row in the backward kernels (one load step more
     * per element where groups are small): an upper bound, for devices
     * that end long loops (llvmpipe). */
    const int64_t longest = (tq > tk ? tq : tk) * (3 * (dq + dv) + 8);
    if (d->loop_budget && longest > d->loop_budget)
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s with Tq = %lld, Tk = %lld, D = %lld, Dv = %lld: its work-items would "
                        "loop up to %lld times and %s ends a work-item's loops after %lld (the core composes it)",
                        kind, (long long)tq, (long long)tk, (long long)dq, (long long)dv, (long long)longest,
                        d->name, (long long)d->loop_budget);
    /* The largest tile row: a query row, its do row, lse and delta. */
    const cl_ulong row = (cl_ulong)(dq + dv + 2) * pt_dtype_table_size(t);
    if (d->local_mem < row)
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s with D = %lld, Dv = %lld in %s: a tile row takes %llu bytes of "
                        "local memory and %s has %llu", kind, (long long)dq, (long long)dv, pt_dtype_table_name(t),
                        (unsigned long long)row, d->name, (unsigned long long)d->local_mem);
    return PT_OK;
}

/* What the three kernels take, held where the argument lists point. */
typedef struct ocl_attn_args {
    cl_mem q, k, v, mask, lse, o, dout, out[2];
    cl_long8 off, dims;
    cl_long2 oo;
    cl_long4 sq, sk, sv, sm, so, sdo;
    ocl_scalar scale;
    cl_int flags, tile;
} ocl_attn_args;

/* Strides of dims b, h, t of x (and, for the mask, j), 0 on extent-1 dims. */
static cl_long4 ocl_attn_strides(const pt_operand *x) {
    cl_long4 s = {{0, 0, 0, 0}};
    for (int i = 0; i < x->ndim && i < 4; ++i) s.s[i] = x->shape[i] == 1 ? 0 : x->strides[i];
    return s;
}

/* Buffer and element offset of an input (absent: `absent` and 0, never
 * read: the kernels take every buffer whether their flags read it or not). */
static pt_status ocl_attn_input(const pt_operand *x, cl_mem absent, cl_mem *buf, cl_long *off) {
    *buf = x && x->buf ? (cl_mem)x->buf : absent;
    *off = 0;
    return x && x->buf ? ocl_elem_offset(x, off) : PT_OK;
}

/* Buffer and element offset of output slot i of the next launch. */
static pt_status ocl_attn_output(const pt_operand *x, ocl_attn_args *a, int i) {
    a->out[i] = (cl_mem)x->buf;
    return ocl_elem_offset(x, &a->oo.s[i]);
}

/* Everything but the outputs, the tile and dims.s5 (the launch's blocks). */
static pt_status ocl_attn_args_init(const pt_op *op, ocl_attn_args *a) {
    const pt_operand *q = &op->in[0], *x = op->extra;
    const bool backward = op->kind == PT_OP_ATTENTION_BACKWARD;
    *a = (ocl_attn_args){0};
    const pt_operand *in[7] = {q, &op->in[1], &op->in[2], &x[PT_ATTN_X_MASK], &x[PT_ATTN_X_LSE],
                               backward ? &x[PT_ATTN_X_OUT] : NULL, backward ? &x[PT_ATTN_X_GRAD_OUT] : NULL};
    cl_mem *bufs[7] = {&a->q, &a->k, &a->v, &a->mask, &a->lse, &a->o, &a->dout};
    pt_status s = PT_OK;
    for (int i = 0; s == PT_OK && i < 7; ++i) s = ocl_attn_input(in[i], (cl_mem)q->buf, bufs[i], &a->off.s[i]);
    if (s != PT_OK) return s;
    a->sq = ocl_attn_strides(q);
    a->sk = ocl_attn_strides(&op->in[1]);
    a->sv = ocl_attn_strides(&op->in[2]);
    a->sm = ocl_attn_strides(&x[PT_ATTN_X_MASK]);
    if (backward) {
        a->so = ocl_attn_strides(&x[PT_ATTN_X_OUT]);
        a->sdo = ocl_attn_strides(&x[PT_ATTN_X_GRAD_OUT]);
    }
    a->dims.s[0] = q->shape[1];
    a->dims.s[1] = q->shape[2];
    a->dims.s[2] = op->in[1].shape[2];
    a->dims.s[3] = q->shape[3];
    a->dims.s[4] = op->in[2].shape[3];
    a->scale = ocl_make_scalar(op->dtype, op->scalar);
    a->flags = (cl_int)op->flags;
    return PT_OK;
}

/* Work-group size, tile and group count of kernel kid over `rows` own rows
 * per (b, h), each tile row taking tile_row bytes of local memory. */
typedef struct ocl_attn_geometry {
    size_t local, groups;
    cl_int tile;
} ocl_attn_geometry;

static pt_status ocl_attn_geometry_of(const ocl_device *d, const ocl_attn_program *ap, ocl_attn_kernel kid,
                                      int64_t bh, int64_t rows, size_t tile_row, ocl_attn_geometry *g) {
    size_t local = ap->wg[kid] < OCL_ATTN_ROWS ? ap->wg[kid] : OCL_ATTN_ROWS;
    if ((int64_t)local > rows) local = (size_t)rows;
    const cl_ulong budget = d->local_mem > ap->local_used[kid] ? d->local_mem - ap->local_used[kid] : 0;
    cl_ulong tile = budget / tile_row;
    if (tile > PT_K_ATTN_TILE_MAX) tile = PT_K_ATTN_TILE_MAX;
    if (tile < 1)
        return ocl_fail(PT_ERR_UNSUPPORTED, "attention on %s: a tile row of %zu bytes does not fit the %llu "
                        "bytes of local memory the kernel leaves", d->name, tile_row,
                        (unsigned long long)budget);
    const int64_t blocks = (rows + (int64_t)local - 1) / (int64_t)local;
    g->local = local;
    g->groups = (size_t)(bh * blocks);
    g->tile = (cl_int)tile;
    return PT_OK;
}

/* Sets the n arguments of kernel kid and launches it over g. */
static pt_status ocl_attn_launch(ocl_device *d, const ocl_attn_program *ap, ocl_attn_kernel kid,
                                 const ocl_attn_geometry *g, int n, const ocl_arg *args) {
    static const char *const names[OCL_ATTN__COUNT] = {"attn_forward", "attn_backward_kv", "attn_backward_q"};
    pt_status s = ocl_set_args(d, ap->kernel[kid], names[kid], n, args);
    if (s != PT_OK) return s;
    return ocl_enqueue(d, ap->kernel[kid], names[kid], g->groups * g->local, g->local);
}

pt_status ocl_attention(ocl_device *d, const pt_op *op) {
    const pt_dtype t = op->dtype;
    const size_t es = pt_dtype_table_size(t);
    const int64_t bh = op->in[0].shape[0] * op->in[0].shape[1], tq = op->in[0].shape[2], tk = op->in[1].shape[2];
    const int64_t dq = op->in[0].shape[3], dv = op->in[2].shape[3];
    const ocl_attn_program *ap = NULL;
    ocl_attn_args a;
    ocl_attn_geometry g = {0};
    pt_status s = ocl_attn_args_init(op, &a);
    if (s == PT_OK) s = ocl_attn_program_get(d, t, ocl_attn_bucket(dq > dv ? dq : dv), &ap);
    if (s != PT_OK) return s;
    const ocl_arg scale = {a.scale.size, &a.scale.v};
    if (op->kind == PT_OP_ATTENTION) {
        if ((s = ocl_attn_output(&op->out, &a, 0)) != PT_OK ||
            (s = ocl_attn_geometry_of(d, ap, OCL_ATTN_FORWARD, bh, tq, (size_t)(dq + dv) * es, &g)) != PT_OK)
            return s;
        a.dims.s[5] = (tq + (int64_t)g.local - 1) / (int64_t)g.local;
        a.tile = g.tile;
        const ocl_arg args[] = {OCL_ARG(a.q),  OCL_ARG(a.k),     OCL_ARG(a.v),    OCL_ARG(a.mask),
                                OCL_ARG(a.out[0]), OCL_ARG(a.lse), OCL_ARG(a.off), OCL_ARG(a.oo),
                                OCL_ARG(a.sq), OCL_ARG(a.sk),    OCL_ARG(a.sv),   OCL_ARG(a.sm),
                                OCL_ARG(a.dims), scale,          OCL_ARG(a.flags), OCL_ARG(a.tile),
                                OCL_LOCAL((size_t)g.tile * (size_t)dq * es),
                                OCL_LOCAL((size_t)g.tile * (size_t)dv * es)};
        ocl_log(PT_LOG_DEBUG, "%s: attention forward, %lld heads of [%lld, %lld] x [%lld, %lld] in groups of "
                "%zu query rows, key tiles of %d", d->name, (long long)bh, (long long)tq, (long long)dq,
                (long long)tk, (long long)dv, g.local, (int)g.tile);
        return ocl_attn_launch(d, ap, OCL_ATTN_FORWARD, &g, (int)(sizeof args / sizeof args[0]), args);
    }
    /* dk and dv by key rows: tiles of query rows, their do rows, lse and delta. */
    if ((s = ocl_attn_output(&op->extra[PT_ATTN_X_GRAD_K], &a, 0)) != PT_OK ||
        (s = ocl_attn_output(&op->extra[PT_ATTN_X_GRAD_V], &a, 1)) != PT_OK ||
        (s = ocl_attn_geometry_of(d, ap, OCL_ATTN_BACKWARD_KV, bh, tk, (size_t)(dq + dv + 2) * es, &g)) != PT_OK)
        return s;
    a.dims.s[5] = (tk + (int64_t)g.local - 1) / (int64_t)g.local;
    a.tile = g.tile;
    const ocl_arg kv[] = {OCL_ARG(a.q),   OCL_ARG(a.k),    OCL_ARG(a.v),      OCL_ARG(a.mask), OCL_ARG(a.lse),
                          OCL_ARG(a.o),   OCL_ARG(a.dout), OCL_ARG(a.out[0]), OCL_ARG(a.out[1]), OCL_ARG(a.off),
                          OCL_ARG(a.oo),  OCL_ARG(a.sq),   OCL_ARG(a.sk),     OCL_ARG(a.sv),   OCL_ARG(a.sm),
                          OCL_ARG(a.so),  OCL_ARG(a.sdo),  OCL_ARG(a.dims),   scale,           OCL_ARG(a.flags),
                          OCL_ARG(a.tile), OCL_LOCAL((size_t)g.tile * (size_t)dq * es),
                          OCL_LOCAL((size_t)g.tile * (size_t)dv * es), OCL_LOCAL((size_t)g.tile * 2 * es)};
    ocl_log(PT_LOG_DEBUG, "%s: attention backward, %lld heads of [%lld, %lld] x [%lld, %lld]: dk, dv in groups "
            "of %zu key rows, query tiles of %d", d->name, (long long)bh, (long long)tq, (long long)dq,
            (long long)tk, (long long)dv, g.local, (int)g.tile);
    if ((s = ocl_attn_launch(d, ap, OCL_ATTN_BACKWARD_KV, &g, (int)(sizeof kv / sizeof kv[0]), kv)) != PT_OK)
        return s;
    /* dq by query rows: tiles of key and value rows. */
    if ((s = ocl_attn_output(&op->out, &a, 0)) != PT_OK ||
        (s = ocl_attn_geometry_of(d, ap, OCL_ATTN_BACKWARD_Q, bh, tq, (size_t)(dq + dv) * es, &g)) != PT_OK)
        return s;
    a.dims.s[5] = (tq + (int64_t)g.local - 1) / (int64_t)g.local;
    a.tile = g.tile;
    const ocl_arg qa[] = {OCL_ARG(a.q),   OCL_ARG(a.k),    OCL_ARG(a.v),      OCL_ARG(a.mask), OCL_ARG(a.lse),
                          OCL_ARG(a.o),   OCL_ARG(a.dout), OCL_ARG(a.out[0]), OCL_ARG(a.off),  OCL_ARG(a.oo),
                          OCL_ARG(a.sq),  OCL_ARG(a.sk),   OCL_ARG(a.sv),     OCL_ARG(a.sm),   OCL_ARG(a.so),
                          OCL_ARG(a.sdo), OCL_ARG(a.dims), scale,             OCL_ARG(a.flags), OCL_ARG(a.tile),
                          OCL_LOCAL((size_t)g.tile * (size_t)dq * es), OCL_LOCAL((size_t)g.tile * (size_t)dv * es)};
    return ocl_attn_launch(d, ap, OCL_ATTN_BACKWARD_Q, &g, (int)(sizeof qa / sizeof qa[0]), qa);
}
