/* libportable OpenCL backend — turning a pt_op into kernel launches.
 *
 * The core has validated every descriptor (backend.h), so this file only
 * decides which kernel of which per-dtype program runs, packs its arguments
 * and picks work sizes. Operand byte offsets become element offsets passed as
 * kernel arguments: a cl_mem has no pointer arithmetic (ocl_launch.c). The
 * window kinds are ocl_window.c's, MATMUL ocl_gemm.c's and the convolution
 * kinds ocl_conv.c's. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ocl_internal.h"
#include "portable/ew_math.h"

/* ---- Work sizes ---- */

static size_t ocl_pow2_floor(size_t x) {
    size_t p = 1;
    while (p * 2 <= x) p *= 2;
    return p;
}

static size_t ocl_pow2_ceil(int64_t x) {
    size_t p = 1;
    while ((int64_t)p < x) p *= 2;
    return p;
}

/* ---- Element-wise layout ---- */

typedef struct ocl_layout {
    cl_int nd;
    cl_long8 shape;
    cl_long8 st[4]; /* out, in a, in b, in c */
} ocl_layout;

/* Describes out's shape with the strides of out and up to 3 inputs, as the
 * core sends them: dimensions already merged (backend.h). The kernels want the
 * innermost dimension first; nd == 0 means every operand is contiguous (the
 * _contig kernels run then, which take no layout). A 0-d operand, which the
 * core never sends, is one element. */
static void ocl_layout_build(const pt_operand *out, int n_in, const pt_operand *const *in,
                             ocl_layout *L) {
    memset(L, 0, sizeof *L);
    const pt_operand *ops[4] = {out, n_in > 0 ? in[0] : NULL, n_in > 1 ? in[1] : NULL,
                                n_in > 2 ? in[2] : NULL};
    const int nd = out->ndim;
    for (int d = 0; d < PT_MAX_DIMS; ++d) L->shape.s[d] = 1;
    for (int d = 0; d < nd; ++d) {
        L->shape.s[d] = out->shape[nd - 1 - d];
        for (int k = 0; k < 4; ++k) L->st[k].s[d] = ops[k] ? ops[k]->strides[nd - 1 - d] : 0;
    }
    L->nd = nd > 0 ? nd : 1;
    bool contiguous = nd == 1;
    for (int k = 0; contiguous && k < 4; ++k)
        if (ops[k] && L->st[k].s[0] != 1) contiguous = false;
    if (contiguous) L->nd = 0;
}

/* Runs one of the element-wise kernels, whose arguments are
 *   out, out_off, (in_k, in_k_off) for each input, n, extras..., layout
 * in the general form, and the same without the layout in the _contig form,
 * which runs when every operand is contiguous. */
static pt_status ocl_pointwise(ocl_device *d, pt_dtype prog, ocl_kernel_id kid,
                               const pt_operand *out, int n_in, const pt_operand *const *in,
                               int n_extra, const ocl_arg *extra) {
    const char *name = ocl_kernel_name(kid);
    ocl_layout L;
    ocl_layout_build(out, n_in, in, &L);
    cl_long n = ocl_numel(out);
    cl_long offs[4];
    pt_status s = ocl_elem_offset(out, &offs[0]);
    for (int i = 0; s == PT_OK && i < n_in; ++i) s = ocl_elem_offset(in[i], &offs[1 + i]);
    if (s != PT_OK) return s;
    cl_mem bufs[4] = {(cl_mem)out->buf};
    for (int i = 0; i < n_in; ++i) bufs[1 + i] = (cl_mem)in[i]->buf;

    ocl_arg args[24];
    int na = 0;
    for (int i = 0; i <= n_in; ++i) {
        args[na++] = (ocl_arg)OCL_ARG(bufs[i]);
        args[na++] = (ocl_arg)OCL_ARG(offs[i]);
    }
    args[na++] = (ocl_arg)OCL_ARG(n);
    for (int i = 0; i < n_extra; ++i) args[na++] = extra[i];
    const int n_common = na;
    cl_kernel k = NULL, kc = NULL;
    size_t wg = 0, wgc = 0;
    if ((s = ocl_kernel_variant(d, prog, kid, OCL_GENERAL, &k, &wg)) != PT_OK) return s;
    size_t local = wg < 256 ? wg : 256, whole = 0;
    if (L.nd == 0) {
        /* Contiguous: whole groups in the _contig kernel, the rest (if any)
         * in the general one as a 1-D stride-1 walk. Both with the same
         * group size, so PoCL compiles each kernel for one size only. */
        if ((s = ocl_kernel_variant(d, prog, kid, OCL_CONTIG, &kc, &wgc)) != PT_OK) return s;
        if (wgc < local) local = wgc;
        whole = (size_t)n / local * local;
        if (whole > 0) {
            if ((s = ocl_set_args(kc, name, n_common, args)) != PT_OK) return s;
            if ((s = ocl_enqueue_at(d, kc, name, 0, whole, local)) != PT_OK) return s;
        }
        if (whole == (size_t)n) return PT_OK;
        L.nd = 1;
        L.shape.s[0] = n;
        for (int i = 0; i < 4; ++i) L.st[i].s[0] = 1;
    }
    args[na++] = (ocl_arg)OCL_ARG(L.nd);
    args[na++] = (ocl_arg)OCL_ARG(L.shape);
    for (int i = 0; i < 4; ++i) args[na++] = (ocl_arg)OCL_ARG(L.st[i]);
    if ((s = ocl_set_args(k, name, na, args)) != PT_OK) return s;
    const size_t global = ((size_t)n - whole + local - 1) / local * local;
    return ocl_enqueue_at(d, k, name, whole, global, local);
}

/* ---- Op families ---- */

/* The kinds with an ew_<name> kernel: the rows of ew_math.h (WHERE has its
 * own kernel, which selects bits). */
static const bool ocl_ew_kernels[PT_OP_COUNT] = {
#define OCL_EW_KERNEL_OF(KIND, ...) [PT_OP_##KIND] = true,
    PT_EW_UNARY(OCL_EW_KERNEL_OF) PT_EW_BINARY(OCL_EW_KERNEL_OF) PT_EW_COMPARE(OCL_EW_KERNEL_OF)
#undef OCL_EW_KERNEL_OF
};

static bool ocl_has_ew_kernel(pt_op_kind k) {
    return (unsigned)k < (unsigned)PT_OP_COUNT && ocl_ew_kernels[k];
}

static ocl_kernel_id ocl_elementwise_kernel(pt_op_kind k) {
    return (ocl_kernel_id)(OCL_K_OP_FILL + (int)k);
}

/* Unary and binary kernels: inputs, then n, then the op's two scalars as T. */
static pt_status ocl_run_arith(ocl_device *d, const pt_op *op, int n_in) {
    pt_dtype t = op->in[0].dtype;
    ocl_scalar sc = ocl_make_scalar(t, op->scalar), sc2 = ocl_make_scalar(t, op->scalar2);
    const pt_operand *in[2] = {&op->in[0], &op->in[1]};
    ocl_arg extra[2] = {{sc.size, &sc.v}, {sc2.size, &sc2.v}};
    return ocl_pointwise(d, t, ocl_elementwise_kernel(op->kind), &op->out, n_in, in, 2, extra);
}

static pt_status ocl_run_compare(ocl_device *d, const pt_op *op) {
    const pt_operand *in[2] = {&op->in[0], &op->in[1]};
    return ocl_pointwise(d, op->in[0].dtype, ocl_elementwise_kernel(op->kind), &op->out, 2, in,
                         0, NULL);
}

/* The program whose type moves t's bytes: on a device without fp64, f64
 * data is moved by the i64 program (same 8 bytes, no double arithmetic), so
 * f64 tensors can be filled, copied, selected and gathered there. */
static pt_dtype ocl_storage_dtype(const ocl_device *d, pt_dtype t) {
    return (t == PT_F64 && !d->fp64) ? PT_I64 : t;
}

/* Ops that only move elements: they run on a device without fp64 (in the
 * i64 program) when every f64 operand stays f64. */
static bool ocl_moves_bits_only(const pt_op *op) {
    switch (op->kind) {
    case PT_OP_FILL: case PT_OP_WHERE: case PT_OP_GATHER: return true;
    case PT_OP_COPY: return op->in[0].dtype == op->out.dtype;
    default: return false;
    }
}

static pt_status ocl_run_where(ocl_device *d, const pt_op *op) {
    const pt_operand *in[3] = {&op->in[0], &op->in[1], &op->in[2]};
    return ocl_pointwise(d, ocl_storage_dtype(d, op->out.dtype), OCL_K_EW_WHERE, &op->out, 3, in,
                         0, NULL);
}

/* A cast that needs double arithmetic the device lacks: to or from f64. */
static bool ocl_cast_needs_host(const ocl_device *d, const pt_op *op) {
    return op->kind == PT_OP_COPY && !d->fp64 && op->in[0].dtype != op->out.dtype &&
           (op->in[0].dtype == PT_F64 || op->out.dtype == PT_F64);
}

static pt_status ocl_copy_kernel(ocl_device *d, const pt_operand *dst, const pt_operand *src) {
    const pt_operand *in[1] = {src};
    const pt_dtype from = ocl_storage_dtype(d, src->dtype);
    const pt_dtype to = ocl_storage_dtype(d, dst->dtype);
    return ocl_pointwise(d, from, (ocl_kernel_id)(OCL_K_COPY_TO_F32 + to), dst, 1, in, 0, NULL);
}

pt_status ocl_move(ocl_device *d, const pt_operand *dst, const pt_operand *src) {
    return ocl_copy_kernel(d, dst, src);
}

static pt_status ocl_run_copy(ocl_device *d, const pt_op *op) {
    if (ocl_cast_needs_host(d, op)) return ocl_cast_via_host(d, op);
    return ocl_copy_kernel(d, &op->out, &op->in[0]);
}

static pt_status ocl_run_fill(ocl_device *d, const pt_op *op) {
    const pt_dtype t = ocl_storage_dtype(d, op->out.dtype);
    ocl_scalar sc = ocl_make_scalar(op->out.dtype, op->scalar);
    if (t != op->out.dtype) { /* f64 through the i64 program: the double's bits */
        const double v = op->scalar;
        memcpy(&sc.v.i64, &v, sizeof v);
        sc.size = sizeof(cl_long);
    }
    ocl_arg extra[1] = {{sc.size, &sc.v}};
    return ocl_pointwise(d, t, OCL_K_FILL, &op->out, 0, NULL, 1, extra);
}

static bool ocl_is_int64_value(double v) {
    return v == floor(v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0;
}

static pt_status ocl_run_arange(ocl_device *d, const pt_op *op) {
    pt_dtype t = op->out.dtype;
    cl_kernel k;
    size_t wg;
    pt_status s = ocl_kernel(d, t, OCL_K_ARANGE, &k, &wg);
    if (s != PT_OK) return s;
    cl_long oo = 0, n = ocl_numel(&op->out);
    if ((s = ocl_elem_offset(&op->out, &oo)) != PT_OK) return s;
    /* Integers from integral start/step: exact 64-bit arithmetic. */
    bool integral = !pt_dtype_is_float(t) && ocl_is_int64_value(op->scalar) &&
                    ocl_is_int64_value(op->scalar2);
    cl_int mode = integral ? PT_K_ARANGE_INT : PT_K_ARANGE_FLOAT;
    cl_long start_i = integral ? (cl_long)op->scalar : 0;
    cl_long step_i = integral ? (cl_long)op->scalar2 : 0;
    cl_double start_d = op->scalar, step_d = op->scalar2;
    cl_float start_f = (cl_float)op->scalar, step_f = (cl_float)op->scalar2;
    cl_mem out = (cl_mem)op->out.buf;
    ocl_arg args[8] = {OCL_ARG(out),     OCL_ARG(oo),     OCL_ARG(n), OCL_ARG(mode),
                       OCL_ARG(start_i), OCL_ARG(step_i), {0, NULL},  {0, NULL}};
    /* The kernel computes in double where the device has it (see creation.cl). */
    if (d->fp64) {
        args[6] = (ocl_arg)OCL_ARG(start_d);
        args[7] = (ocl_arg)OCL_ARG(step_d);
    } else {
        args[6] = (ocl_arg)OCL_ARG(start_f);
        args[7] = (ocl_arg)OCL_ARG(step_f);
    }
    if ((s = ocl_set_args(k, "arange", 8, args)) != PT_OK) return s;
    return ocl_launch_items(d, k, "arange", wg, n);
}

static pt_status ocl_run_rand(ocl_device *d, const pt_op *op) {
    pt_dtype t = op->out.dtype;
    bool normal = op->kind == PT_OP_RAND_NORMAL;
    const char *name = normal ? "rand_normal" : "rand_uniform";
    cl_kernel k;
    size_t wg;
    pt_status s = ocl_kernel(d, t, normal ? OCL_K_RAND_NORMAL : OCL_K_RAND_UNIFORM, &k, &wg);
    if (s != PT_OK) return s;
    cl_long oo = 0, n = ocl_numel(&op->out);
    if ((s = ocl_elem_offset(&op->out, &oo)) != PT_OK) return s;
    cl_mem out = (cl_mem)op->out.buf;
    cl_ulong seed = op->seed, counter = op->counter;
    ocl_arg args[5] = {OCL_ARG(out), OCL_ARG(oo), OCL_ARG(n), OCL_ARG(seed), OCL_ARG(counter)};
    if ((s = ocl_set_args(k, name, 5, args)) != PT_OK) return s;
    return ocl_launch_items(d, k, name, wg, n);
}

/* ---- Reductions and softmax ---- */

/* Whether a reduction row walks a contiguous run of r (CPU devices) rather
 * than every ty_n-th element (GPUs coalesce the interleaved reads); see
 * reduce.cl. */
static cl_int ocl_blocked_rows(const ocl_device *d) {
    return (d->cl_type & CL_DEVICE_TYPE_CPU) ? 1 : 0;
}

/* Work-group shape for [outer, r, inner] (see reduce.cl): local size L, tx_n
 * columns. Rows go to r when it is long; columns to outputs when r is short,
 * and at least 32 columns when inner is wide enough for coalesced reads. */
static void ocl_reduce_shape(size_t wg, int64_t outer, int64_t r,
                             int64_t inner, size_t *L, cl_int *tx_n) {
    size_t l = ocl_pow2_floor(wg < 256 ? wg : 256);
    size_t ty_want = ocl_pow2_ceil(r);
    if (ty_want > l) ty_want = l;
    size_t tx = l / ty_want;
    if (inner >= 32 && tx < 32) tx = l < 32 ? l : 32;
    size_t q_cap = ocl_pow2_ceil(outer * inner);
    if (tx > q_cap) tx = q_cap;
    *L = l;
    *tx_n = (cl_int)tx;
}

/* The kernel kid of in[0]'s dtype program and the element offsets of in[0]
 * and out: the start of every [outer, r, inner] row kernel (reduce, softmax). */
static pt_status ocl_row_kernel(ocl_device *d, ocl_kernel_id kid, const pt_op *op, cl_kernel *k,
                                size_t *wg, cl_long *io, cl_long *oo) {
    pt_status s = ocl_kernel(d, op->in[0].dtype, kid, k, wg);
    if (s == PT_OK) s = ocl_elem_offset(&op->in[0], io);
    if (s == PT_OK) s = ocl_elem_offset(&op->out, oo);
    return s;
}

static pt_status ocl_reduce_pass(ocl_device *d, pt_dtype t, cl_kernel k, size_t wg, cl_mem in,
                                 cl_long io, cl_int in_acc, cl_mem in_idx, cl_long iio,
                                 const int64_t *st, int64_t outer, cl_long r, int64_t inner,
                                 cl_long chunk, cl_long S, cl_mem out, cl_long oo,
                                 cl_int out_dtype, cl_mem out_idx, cl_long oio, cl_int op,
                                 cl_int stage, cl_long count) {
    size_t L;
    cl_int tx_n;
    ocl_reduce_shape(wg, outer, chunk, inner, &L, &tx_n);
    size_t acc_bytes = pt_dtype_is_float(t) ? pt_dtype_table_size(t) : sizeof(cl_long);
    cl_long s_o = st[0], s_r = st[1], s_i = st[2], c_outer = outer, c_inner = inner;
    cl_int blocked = ocl_blocked_rows(d);
    ocl_arg args[] = {OCL_ARG(in),      OCL_ARG(io),      OCL_ARG(in_acc),    OCL_ARG(in_idx),
                      OCL_ARG(iio),     OCL_ARG(s_o),     OCL_ARG(s_r),       OCL_ARG(s_i),
                      OCL_ARG(r),       OCL_ARG(c_outer), OCL_ARG(c_inner),   OCL_ARG(chunk),
                      OCL_ARG(S),       OCL_ARG(tx_n),    OCL_ARG(blocked),   OCL_ARG(out),
                      OCL_ARG(oo),
                      OCL_ARG(out_dtype), OCL_ARG(out_idx), OCL_ARG(oio),     OCL_ARG(op),
                      OCL_ARG(stage),   OCL_ARG(count),   OCL_LOCAL(L * acc_bytes),
                      OCL_LOCAL(L * sizeof(cl_long))};
    pt_status s = ocl_set_args(k, "reduce", (int)(sizeof args / sizeof args[0]), args);
    if (s != PT_OK) return s;
    size_t nqb = (size_t)((outer * inner + tx_n - 1) / tx_n);
    return ocl_enqueue(d, k, "reduce", nqb * (size_t)S * L, L);
}

static pt_status ocl_run_reduce(ocl_device *d, const pt_op *op) {
    const pt_operand *x = &op->in[0];
    pt_dtype t = x->dtype;
    cl_kernel k;
    size_t wg;
    cl_long io = 0, oo = 0;
    pt_status s = ocl_row_kernel(d, OCL_K_REDUCE, op, &k, &wg, &io, &oo);
    if (s != PT_OK) return s;
    int64_t outer = x->shape[0], r = x->shape[1], inner = x->shape[2];
    cl_int code = op->kind == PT_OP_SUM    ? PT_K_SUM
                  : op->kind == PT_OP_MEAN ? PT_K_MEAN
                  : op->kind == PT_OP_MAX  ? PT_K_MAX
                                           : PT_K_ARGMAX;
    cl_mem in = (cl_mem)x->buf, out = (cl_mem)op->out.buf;
    cl_int out_dtype = (cl_int)op->out.dtype;

    /* Too few outputs to fill the device: split r into S slices, reduce each
     * slice into scratch, then reduce the S partials. */
    size_t L;
    cl_int tx_n;
    ocl_reduce_shape(wg, outer, r, inner, &L, &tx_n);
    int64_t groups = (outer * inner + tx_n - 1) / tx_n;
    int64_t target = 4 * (int64_t)(d->compute_units ? d->compute_units : 1);
    if (target < 8) target = 8;
    int64_t S = 1;
    if (groups < target && r >= 4096) {
        S = (target + groups - 1) / groups;
        int64_t by_len = r / 1024;
        if (S > by_len) S = by_len;
    }
    if (S < 2)
        return ocl_reduce_pass(d, t, k, wg, in, io, 0, in, 0, x->strides, outer, r, inner, r, 1,
                               out, oo, out_dtype, out, 0, code, PT_K_STAGE_FINAL, r);

    int64_t chunk = (r + S - 1) / S;
    S = (r + chunk - 1) / chunk;
    size_t acc_bytes = pt_dtype_is_float(t) ? pt_dtype_table_size(t) : sizeof(cl_long);
    size_t n_part = (size_t)(outer * S * inner);
    size_t val_bytes = (n_part * acc_bytes + 7) / 8 * 8;
    cl_mem scratch;
    if ((s = ocl_scratch(d, val_bytes + n_part * sizeof(cl_long), &scratch)) != PT_OK) return s;
    cl_long idx_off = (cl_long)(val_bytes / sizeof(cl_long));
    cl_int first_code = code == PT_K_MEAN ? PT_K_SUM : code;
    s = ocl_reduce_pass(d, t, k, wg, in, io, 0, in, 0, x->strides, outer, r, inner, chunk, S,
                        scratch, 0, out_dtype, scratch, idx_off, first_code, PT_K_STAGE_PARTIAL, r);
    if (s != PT_OK) return s;
    const int64_t part_st[3] = {S * inner, inner, 1};
    return ocl_reduce_pass(d, t, k, wg, scratch, 0, 1, scratch, idx_off, part_st, outer, S, inner,
                           S, 1, out, oo, out_dtype, out, 0, code, PT_K_STAGE_FINAL, r);
}

static pt_status ocl_run_softmax(ocl_device *d, const pt_op *op) {
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
    ocl_reduce_shape(wg, outer, r, inner, &L, &tx_n);
    cl_mem in = (cl_mem)x->buf, out = (cl_mem)op->out.buf;
    cl_int log_mode = op->kind == PT_OP_LOG_SOFTMAX, blocked = ocl_blocked_rows(d);
    ocl_arg args[] = {OCL_ARG(in),       OCL_ARG(io),   OCL_ARG(s_o),     OCL_ARG(s_r),
                      OCL_ARG(s_i),      OCL_ARG(r),    OCL_ARG(c_outer), OCL_ARG(c_inner),
                      OCL_ARG(tx_n),     OCL_ARG(blocked), OCL_ARG(out),  OCL_ARG(oo),
                      OCL_ARG(log_mode), OCL_LOCAL(L * pt_dtype_table_size(t))};
    if ((s = ocl_set_args(k, "softmax", (int)(sizeof args / sizeof args[0]), args)) != PT_OK)
        return s;
    size_t groups = (size_t)((outer * inner + tx_n - 1) / tx_n);
    return ocl_enqueue(d, k, "softmax", groups * L, L);
}

/* ---- Indexing ---- */

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
    if ((s = ocl_set_args(k, "gather", (int)(sizeof args / sizeof args[0]), args)) != PT_OK)
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
    if ((s = ocl_set_args(k, "one_hot", (int)(sizeof args / sizeof args[0]), args)) != PT_OK)
        return s;
    return ocl_launch_items(d, k, "one_hot", wg, n);
}

/* ---- What is supported ---- */

pt_status ocl_supports(int dev, const pt_op *op) {
    if (dev < 0 || dev >= ocl_g.n_devices)
        return ocl_fail(PT_ERR_NO_DEVICE, "no OpenCL device %d (%d present)", dev,
                        ocl_g.n_devices);
    const ocl_device *d = &ocl_g.devices[dev];
    const pt_op_info *info = pt_op_info_of(op->kind);
    if (!info) return ocl_fail(PT_ERR_UNSUPPORTED, "unknown op kind %d", (int)op->kind);
    const pt_operand *ops[1 + PT_OP_MAX_INPUTS] = {&op->out, &op->in[0], &op->in[1], &op->in[2]};
    int n = 1 + (op->n_inputs < PT_OP_MAX_INPUTS ? op->n_inputs : PT_OP_MAX_INPUTS);
    for (int i = 0; i < n; ++i) {
        if (ops[i]->dtype < 0 || ops[i]->dtype >= PT_DTYPE_COUNT)
            return ocl_fail(PT_ERR_UNSUPPORTED, "%s: unknown dtype %d", pt_op_name(op->kind),
                            (int)ops[i]->dtype);
        if (ops[i]->dtype == PT_F64 && !d->fp64 && !ocl_moves_bits_only(op) &&
            !ocl_cast_needs_host(d, op))
            return ocl_fail(PT_ERR_UNSUPPORTED,
                            "%s on f64: %s (%s) lacks cl_khr_fp64, so OpenCL f64 is unavailable "
                            "there; use f32",
                            pt_op_name(op->kind), d->name, d->platform_name);
    }
    /* f16/bf16: the programs of those types move and convert bits; any
     * arithmetic is refused here and the core runs it in f32 through these
     * conversions (types.h). The exception: f16 MATMUL on a cl_khr_fp16
     * device is CLBlastHgemm (ocl_gemm.c). CLBlast has no bf16 GEMM. */
    const bool hgemm = op->kind == PT_OP_MATMUL && d->fp16 && op->out.dtype == PT_F16 &&
                       op->in[0].dtype == PT_F16 && op->in[1].dtype == PT_F16;
    for (int i = 0; i < n && !hgemm; ++i)
        if (pt_dtype_is_half(ops[i]->dtype) && !ocl_moves_bits_only(op) && op->kind != PT_OP_COPY &&
            op->kind != PT_OP_ONE_HOT)
            return ocl_fail(PT_ERR_UNSUPPORTED,
                            "%s on %s: this plugin stores 16-bit floats but computes them in f32 "
                            "(the core converts)",
                            pt_op_name(op->kind), pt_dtype_table_name(ops[i]->dtype));
    /* The dtype the op computes in (creation ops: the output's). */
    pt_dtype t = (info->family == PT_OP_FAMILY_CREATION || op->kind == PT_OP_WHERE ||
                  op->kind == PT_OP_ONE_HOT)
                     ? op->out.dtype
                     : op->in[0].dtype;
    if (info->family == PT_OP_FAMILY_ELEMENTWISE && op->kind != PT_OP_COPY &&
        op->kind != PT_OP_WHERE && !ocl_has_ew_kernel(op->kind))
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s has no OpenCL kernel in this plugin",
                        pt_op_name(op->kind));
    /* The dtypes of the kind's row in op_table.h (FLOAT kinds: not integers). */
    if (!pt_op_takes_dtype(op->kind, t))
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s is not defined for %s (op_table.h)",
                        pt_op_name(op->kind), pt_dtype_table_name(t));
    if ((op->kind == PT_OP_GATHER && op->in[1].dtype != PT_I32 && op->in[1].dtype != PT_I64) ||
        (op->kind == PT_OP_ONE_HOT && op->in[0].dtype != PT_I32 && op->in[0].dtype != PT_I64))
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s needs i32 or i64 indices", pt_op_name(op->kind));
    if (op->kind == PT_OP_MAX_UNPOOL2D && op->in[1].dtype != PT_I64)
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s needs i64 indices", pt_op_name(op->kind));
    if (info->family == PT_OP_FAMILY_CONV) return ocl_conv_supports(d, op);
    return PT_OK;
}

/* By the family column of op_table.h; ocl_supports has checked the kind. */
static pt_status ocl_dispatch(ocl_device *d, int dev, const pt_op *op) {
    const pt_op_info *info = pt_op_info_of(op->kind);
    switch (info->family) {
    case PT_OP_FAMILY_CREATION:
        return op->kind == PT_OP_FILL     ? ocl_run_fill(d, op)
               : op->kind == PT_OP_ARANGE ? ocl_run_arange(d, op)
                                          : ocl_run_rand(d, op);
    case PT_OP_FAMILY_ELEMENTWISE:
        if (op->kind == PT_OP_COPY) return ocl_run_copy(d, op);
        if (op->kind == PT_OP_WHERE) return ocl_run_where(d, op);
        if (info->result == PT_OP_RESULT_U8) return ocl_run_compare(d, op);
        return ocl_run_arith(d, op, info->arity);
    case PT_OP_FAMILY_REDUCE: return ocl_run_reduce(d, op);
    case PT_OP_FAMILY_SOFTMAX: return ocl_run_softmax(d, op);
    case PT_OP_FAMILY_MATMUL: return ocl_matmul(d, op);
    case PT_OP_FAMILY_INDEX:
        return op->kind == PT_OP_GATHER ? ocl_run_gather(d, op) : ocl_run_one_hot(d, op);
    case PT_OP_FAMILY_WINDOW: return ocl_window_run(d, op);
    case PT_OP_FAMILY_CONV: return ocl_conv(d, dev, op);
    }
    return ocl_fail(PT_ERR_UNSUPPORTED, "unknown op kind %d", (int)op->kind);
}

pt_status ocl_execute(int dev, const pt_op *op) {
    pt_status s = ocl_supports(dev, op);
    if (s != PT_OK) return s;
    ocl_device *d = NULL;
    if ((s = ocl_device_ready(dev, "execute", &d)) != PT_OK) return s;
    pthread_mutex_lock(&d->lock);
    s = ocl_dispatch(d, dev, op);
    /* Hand the launches to the device now: NVIDIA's driver may otherwise
     * hold non-blocking work until the next blocking call. */
    if (s == PT_OK) {
        clFlush(d->queue);
        ocl_after_new_kernels(d);
    }
    pthread_mutex_unlock(&d->lock);
    return s;
}
