/* libportable OpenCL backend — the reduce family: SUM, MEAN, MAX, ARGMAX
 * over [outer, r, inner] (kernels/reduce.cl), in one pass, or two when too
 * few outputs would leave the device idle (r split into slices whose
 * partials a second pass reduces). */
#include "internal.h"

/* The fewest elements a row of reduce_serial walks when there are more
 * rows than that would need. */
#define OCL_SERIAL_ROW_MIN 16

/* The most rows reduce_columns takes (PT_COLUMNS_ROWS_MAX in reduce.cl). */
#define OCL_COLUMNS_ROWS_MAX 16

/* reduce_serial's work eight outputs at a time (reduce_columns, reduce.cl)
 * where that gives the same bits: a plain sum or mean of f32 or f64 (no
 * chain, no partials read back) whose outputs lie next to each other in
 * memory, eight to a row. */
static bool columns_apply(pt_dtype t, cl_int in_acc, cl_int op, const int64_t *st, int64_t inner,
                          cl_int ty_n, const ocl_reduce_chain *ch) {
    return !ch && !in_acc && (op == PT_K_SUM || op == PT_K_MEAN) && (t == PT_F32 || t == PT_F64) &&
           st[2] == 1 && inner % 8 == 0 && ty_n <= OCL_COLUMNS_ROWS_MAX;
}

static pt_status reduce_columns(ocl_device *d, pt_dtype t, cl_mem in, cl_long io, const int64_t *st,
                                int64_t outer, cl_long r, int64_t inner, cl_long chunk, cl_long S,
                                cl_int ty_n, cl_mem out, cl_long oo, cl_int out_dtype, cl_int op,
                                cl_int stage, cl_long count) {
    cl_kernel k;
    size_t wg;
    pt_status s = ocl_kernel(d, t, OCL_K_REDUCE_COLUMNS, &k, &wg);
    if (s != PT_OK) return s;
    cl_long s_o = st[0], s_r = st[1], c_outer = outer, c_inner = inner;
    const ocl_arg args[] = {OCL_ARG(in),    OCL_ARG(io),        OCL_ARG(s_o), OCL_ARG(s_r),
                            OCL_ARG(r),     OCL_ARG(c_outer),   OCL_ARG(c_inner), OCL_ARG(chunk),
                            OCL_ARG(S),     OCL_ARG(ty_n),      OCL_ARG(out), OCL_ARG(oo),
                            OCL_ARG(out_dtype), OCL_ARG(op),    OCL_ARG(stage), OCL_ARG(count)};
    s = ocl_set_args(d, k, "reduce_columns", (int)(sizeof args / sizeof args[0]), args);
    return s == PT_OK ? ocl_launch_items(d, k, "reduce_columns", wg, outer * (inner / 8) * S) : s;
}

/* One pass: the group kernel, or on CPU devices reduce_serial (reduce.cl),
 * which runs the rows one work item has in the group kernel's order (rows
 * of at least OCL_SERIAL_ROW_MIN elements), or reduce_columns, the same for
 * eight outputs at once where columns_apply says; with ch, the reduce kernel
 * of a fused chain's program, its arguments after the kernel's own. */
static pt_status ocl_reduce_pass(ocl_device *d, pt_dtype t, cl_kernel k, size_t wg, cl_mem in,
                                 cl_long io, cl_int in_acc, cl_mem in_idx, cl_long iio,
                                 const int64_t *st, int64_t outer, cl_long r, int64_t inner,
                                 cl_long chunk, cl_long S, cl_mem out, cl_long oo,
                                 cl_int out_dtype, cl_mem out_idx, cl_long oio, cl_int op,
                                 cl_int stage, cl_long count, const ocl_reduce_chain *ch) {
    size_t L;
    cl_int tx_n;
    ocl_reduce_shape(wg, outer, chunk, inner, &L, &tx_n);
    size_t acc_bytes = pt_dtype_is_float(t) ? pt_dtype_table_size(t) : sizeof(cl_long);
    cl_long s_o = st[0], s_r = st[1], s_i = st[2], c_outer = outer, c_inner = inner;
    cl_int blocked = ocl_blocked_rows(d), ty_n = (cl_int)(L / (size_t)tx_n);
    if (blocked) {
        /* reduce_serial's rows: one work-item runs them all, so a row of
         * fewer than OCL_SERIAL_ROW_MIN elements only adds a share to fold
         * (a sum over 256 took 256 rows of one element, 34 us for [64, 256]
         * on PoCL; with rows of 16, 11 us). Each row still sums its run in
         * order and the rows combine as a tree, so long sums stay accurate. */
        const int64_t per = chunk / OCL_SERIAL_ROW_MIN;
        const size_t rows = ocl_pow2_floor((size_t)(per > 1 ? per : 1));
        if ((cl_int)rows < ty_n) ty_n = (cl_int)rows;
        if (columns_apply(t, in_acc, op, st, inner, ty_n, ch))
            return reduce_columns(d, t, in, io, st, outer, r, inner, chunk, S, ty_n, out, oo, out_dtype, op,
                                  stage, count);
    }
    const ocl_arg own[] = {OCL_ARG(in),      OCL_ARG(io),      OCL_ARG(in_acc),    OCL_ARG(in_idx),
                           OCL_ARG(iio),     OCL_ARG(s_o),     OCL_ARG(s_r),       OCL_ARG(s_i),
                           OCL_ARG(r),       OCL_ARG(c_outer), OCL_ARG(c_inner),   OCL_ARG(chunk),
                           OCL_ARG(S),       OCL_ARG(tx_n),    OCL_ARG(blocked),   OCL_ARG(out),
                           OCL_ARG(oo),
                           OCL_ARG(out_dtype), OCL_ARG(out_idx), OCL_ARG(oio),     OCL_ARG(op),
                           OCL_ARG(stage),   OCL_ARG(count),   OCL_LOCAL(L * acc_bytes),
                           OCL_LOCAL(L * sizeof(cl_long))};
    _Static_assert(sizeof own / sizeof own[0] == OCL_REDUCE_ARGS, "OCL_REDUCE_ARGS counts reduce's arguments");
    /* reduce_serial: ty_n in place of tx_n, no local memory; then a chain's own */
    ocl_arg args[OCL_REC_MAX_ARGS];
    int n_args = 0;
    for (int a = 0; a < OCL_REDUCE_ARGS - (blocked ? 2 : 0); ++a) args[n_args++] = own[a];
    if (blocked) args[13] = (ocl_arg)OCL_ARG(ty_n);
    for (int a = 0; ch && a < ch->n_args; ++a) args[n_args++] = ch->args[a];
    if (blocked) {
        cl_kernel ks = ch ? ch->k : NULL;
        size_t wg_s = ch ? ch->wg : 0;
        pt_status s = ch ? PT_OK : ocl_kernel(d, t, OCL_K_REDUCE_SERIAL, &ks, &wg_s);
        if (s == PT_OK) s = ocl_set_args(d, ks, "reduce_serial", n_args, args);
        return s == PT_OK ? ocl_launch_items(d, ks, "reduce_serial", wg_s, outer * inner * S) : s;
    }
    if (ch) k = ch->k;
    pt_status s = ocl_set_args(d, k, "reduce", n_args, args);
    if (s != PT_OK) return s;
    size_t nqb = (size_t)((outer * inner + tx_n - 1) / tx_n);
    return ocl_enqueue(d, k, "reduce", nqb * (size_t)S * L, L);
}

pt_status ocl_reduce(ocl_device *d, const pt_op *op) { return ocl_reduce_chained(d, op, NULL); }

pt_status ocl_reduce_chained(ocl_device *d, const pt_op *op, const ocl_reduce_chain *ch) {
    const pt_operand *x = &op->in[0];
    pt_dtype t = x->dtype;
    cl_kernel k;
    size_t wg;
    cl_long io = 0, oo = 0;
    pt_status s = ocl_row_kernel(d, OCL_K_REDUCE, op, &k, &wg, &io, &oo);
    if (s != PT_OK) return s;
    if (ch && ch->wg < wg) wg = ch->wg; /* both passes shape their groups alike */
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
                               out, oo, out_dtype, out, 0, code, PT_K_STAGE_FINAL, r, ch);

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
                        scratch, 0, out_dtype, scratch, idx_off, first_code, PT_K_STAGE_PARTIAL, r, ch);
    if (s != PT_OK) return s;
    const int64_t part_st[3] = {S * inner, inner, 1};
    return ocl_reduce_pass(d, t, k, wg, scratch, 0, 1, scratch, idx_off, part_st, outer, S, inner,
                           S, 1, out, oo, out_dtype, out, 0, code, PT_K_STAGE_FINAL, r, NULL);
}
