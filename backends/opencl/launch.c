/* libportable OpenCL backend — launching a kernel: operand offsets in
 * elements, kernel arguments, scalars of a program's element type, work
 * sizes, the element-wise launch (layout, _contig and general forms), the
 * element move and the [outer, r, inner] row kernels' shapes, for every
 * exec_<family>.c file that queues kernels and for the GEMMs' offsets
 * (exec_matmul.c). The kernels themselves come from launch_program.c. */
#include <string.h>

#include "internal.h"
#include "portable/half.h"
#include "portable/numeric_rules.h"

pt_status ocl_elem_offset(const pt_operand *x, cl_long *out) {
    size_t es = pt_dtype_table_size(x->dtype);
    if (es == 0 || x->offset % es != 0)
        return ocl_fail(PT_ERR_INTERNAL,
                        "operand byte offset %zu is not a multiple of its %s element size",
                        x->offset, pt_dtype_table_name(x->dtype));
    *out = (cl_long)(x->offset / es);
    return PT_OK;
}

int64_t ocl_numel(const pt_operand *x) {
    int64_t n = 1;
    for (int d = 0; d < x->ndim; ++d) n *= x->shape[d];
    return n;
}

/* Integer scalars convert as portable/numeric_rules.h says (as in copy_to_<dst>). */
ocl_scalar ocl_make_scalar(pt_dtype t, double v) {
    ocl_scalar s;
    memset(&s, 0, sizeof s);
    switch (t) {
    case PT_F32: s.v.f32 = (cl_float)v; s.size = sizeof(cl_float); break;
    case PT_F64: s.v.f64 = v; s.size = sizeof(cl_double); break;
    case PT_I32: s.v.i32 = pt_sat_i32_f64(v); s.size = sizeof(cl_int); break;
    case PT_I64: s.v.i64 = pt_sat_i64_f64(v); s.size = sizeof(cl_long); break;
    case PT_F16: s.v.u16 = pt_f64_to_f16_bits(v); s.size = sizeof(cl_ushort); break;
    case PT_BF16: s.v.u16 = pt_f64_to_bf16_bits(v); s.size = sizeof(cl_ushort); break;
    default: s.v.u8 = pt_wrap_u8_f64(v); s.size = sizeof(cl_uchar); break;
    }
    return s;
}

/* One 1-D launch of global work-items (from global id `offset`) in groups of
 * local. */
pt_status ocl_enqueue_at(ocl_device *d, cl_kernel k, const char *name, size_t offset,
                                size_t global, size_t local) {
    if (d->recording) return ocl_record_kernel(d, k, name, offset, global, local);
    cl_int err = clEnqueueNDRangeKernel(d->queue, k, 1, offset ? &offset : NULL, &global, &local,
                                        0, NULL, NULL);
    if (err != CL_SUCCESS)
        return ocl_cl_fail(err, "clEnqueueNDRangeKernel(%s, offset %zu, global %zu, local %zu) on %s",
                           name, offset, global, local, d->name);
    return PT_OK;
}

pt_status ocl_enqueue(ocl_device *d, cl_kernel k, const char *name, size_t global,
                             size_t local) {
    return ocl_enqueue_at(d, k, name, 0, global, local);
}

/* Work sizes of a one-work-item-per-element kernel over n items: groups of
 * up to 256, n rounded up to a whole number of groups. */
pt_status ocl_launch_items(ocl_device *d, cl_kernel k, const char *name, size_t wg,
                                  int64_t n) {
    size_t local = wg < 256 ? wg : 256;
    size_t global = ((size_t)n + local - 1) / local * local;
    return ocl_enqueue(d, k, name, global, local);
}

/* ---- Work sizes ---- */

size_t ocl_pow2_floor(size_t x) {
    size_t p = 1;
    while (p * 2 <= x) p *= 2;
    return p;
}

size_t ocl_pow2_ceil(int64_t x) {
    size_t p = 1;
    while ((int64_t)p < x) p *= 2;
    return p;
}

size_t ocl_rows_group(const ocl_device *d, int nd, int64_t inner, size_t cap) {
    if (inner < 1 || cap < 1) return 0;
    if (d->cpu_forms && nd > OCL_ROWS_CPU_MAX_ND) return 0;
    size_t g = (size_t)inner < cap ? (size_t)inner : cap;
    while ((size_t)inner % g) --g;
    /* whole rows of a short inner extent, or groups wide enough to vectorise */
    return g == (size_t)inner || g >= 32 ? g : 0;
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

/* Contiguous operands take at most this many items in one launch of the
 * _tail kernel, and more in whole groups of the _contig one and the rest of
 * the _tail one: below it, the second launch costs the host more than the
 * unvectorised loop costs PoCL. */
#define OCL_ONE_LAUNCH_ITEMS 4096

/* The launches of an element-wise kernel over n items whose operands are
 * all contiguous: args as the _contig and _tail forms take them. Both forms
 * with the same group size, so PoCL compiles each for one size only. */
static pt_status ocl_pointwise_contig(ocl_device *d, pt_dtype prog, ocl_kernel_id kid, size_t n,
                                      int na, const ocl_arg *args) {
    const char *name = ocl_kernel_name(kid);
    cl_kernel kc = NULL, kt = NULL;
    size_t wgc = 0, wgt = 0;
    pt_status s = ocl_kernel_variant(d, prog, kid, OCL_TAIL, &kt, &wgt);
    if (s == PT_OK) s = ocl_kernel_variant(d, prog, kid, OCL_CONTIG, &kc, &wgc);
    if (s != PT_OK) return s;
    size_t local = wgc < wgt ? wgc : wgt;
    if (local > 256) local = 256;
    const size_t whole = n > OCL_ONE_LAUNCH_ITEMS ? n / local * local : 0;
    if (whole > 0) {
        if ((s = ocl_set_args(d, kc, name, na, args)) != PT_OK) return s;
        if ((s = ocl_enqueue_at(d, kc, name, 0, whole, local)) != PT_OK) return s;
    }
    if (whole == n) return PT_OK;
    if ((s = ocl_set_args(d, kt, name, na, args)) != PT_OK) return s;
    return ocl_enqueue_at(d, kt, name, whole, (n - whole + local - 1) / local * local, local);
}

/* Runs one of the element-wise kernels, whose arguments are
 *   out, in_k for each input, pos (the offsets, n and the scalars), layout
 * in the general form, and the same without the layout in the _contig and
 * _tail forms, which run when every operand is contiguous. */
pt_status ocl_pointwise(ocl_device *d, pt_dtype prog, ocl_kernel_id kid,
                               const pt_operand *out, int n_in, const pt_operand *const *in,
                               int n_scalars, const ocl_scalar *scalars) {
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

    /* The element offsets, the count and the scalars' bytes in one long8
     * (elementwise.cl's pos). */
    cl_long8 pos;
    memset(&pos, 0, sizeof pos);
    for (int i = 0; i <= n_in; ++i) pos.s[i] = offs[i];
    pos.s[4] = n;
    for (int i = 0; i < n_scalars && i < 2; ++i) memcpy(&pos.s[5 + i], &scalars[i].v, scalars[i].size);
    ocl_arg args[24];
    int na = 0;
    for (int i = 0; i <= n_in; ++i) args[na++] = (ocl_arg)OCL_ARG(bufs[i]);
    args[na++] = (ocl_arg)OCL_ARG(pos);
    cl_kernel k = NULL;
    size_t wg = 0;
    if (L.nd == 0) return ocl_pointwise_contig(d, prog, kid, (size_t)n, na, args);
    args[na++] = (ocl_arg)OCL_ARG(L.nd);
    args[na++] = (ocl_arg)OCL_ARG(L.shape);
    for (int i = 0; i < 4; ++i) args[na++] = (ocl_arg)OCL_ARG(L.st[i]);
    /* The row walk where a group size divides the innermost extent (its
     * divisions once per group), else the walk of each element. */
    if ((s = ocl_kernel_variant(d, prog, kid, OCL_ROWS, &k, &wg)) != PT_OK) return s;
    const size_t rows = ocl_rows_group(d, L.nd, L.shape.s[0], wg < 256 ? wg : 256);
    if (rows > 0) {
        if ((s = ocl_set_args(d, k, name, na, args)) != PT_OK) return s;
        return ocl_enqueue(d, k, name, (size_t)n, rows);
    }
    if ((s = ocl_kernel_variant(d, prog, kid, OCL_GENERAL, &k, &wg)) != PT_OK) return s;
    const size_t local = wg < 256 ? wg : 256;
    if ((s = ocl_set_args(d, k, name, na, args)) != PT_OK) return s;
    return ocl_enqueue(d, k, name, ((size_t)n + local - 1) / local * local, local);
}

/* The program whose type moves t's bytes: on a device without fp64, f64
 * data is moved by the i64 program (same 8 bytes, no double arithmetic), so
 * f64 tensors can be filled, copied, selected and gathered there. */
pt_dtype ocl_storage_dtype(const ocl_device *d, pt_dtype t) {
    return (t == PT_F64 && !d->fp64) ? PT_I64 : t;
}

/* dst = src through the copy kernel of src's storage program. */
pt_status ocl_move(ocl_device *d, const pt_operand *dst, const pt_operand *src) {
    const pt_operand *in[1] = {src};
    const pt_dtype from = ocl_storage_dtype(d, src->dtype);
    const pt_dtype to = ocl_storage_dtype(d, dst->dtype);
    return ocl_pointwise(d, from, (ocl_kernel_id)(OCL_K_COPY_TO_F32 + to), dst, 1, in, 0, NULL);
}

/* ---- Reductions and softmax ---- */

/* Whether a reduction row walks a contiguous run of r (CPU devices) rather
 * than every ty_n-th element (GPUs coalesce the interleaved reads); see
 * reduce.cl. */
cl_int ocl_blocked_rows(const ocl_device *d) {
    return d->cpu_forms ? 1 : 0;
}

/* Work-group shape for [outer, r, inner] (see reduce.cl): local size L, tx_n
 * columns. Rows go to r when it is long; columns to outputs when r is short,
 * and at least 32 columns when inner is wide enough for coalesced reads. */
void ocl_reduce_shape(size_t wg, int64_t outer, int64_t r,
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

/* The same for CPU devices, for kernels that give each work-item a whole
 * row when a group has one row (ty_n == 1): a CPU device runs a
 * work-group's items one after another on one core, so rows split over a
 * group gain nothing and pay a barrier for each level of the combining
 * tree (PoCL took 30-40 us for a [64, 10] log_softmax so). Parallelism
 * comes from groups: columns are dealt out so that every compute unit
 * gets about two groups. */
void ocl_cpu_rows_shape(const ocl_device *d, size_t wg, int64_t outputs, size_t *L, cl_int *tx_n) {
    const size_t l = ocl_pow2_floor(wg < 256 ? wg : 256);
    const int64_t groups = 2 * (int64_t)(d->compute_units ? d->compute_units : 1);
    size_t tx = ocl_pow2_floor((size_t)(outputs / groups > 1 ? outputs / groups : 1));
    if (tx > l) tx = l;
    *L = tx;
    *tx_n = (cl_int)tx;
}

/* The kernel kid of in[0]'s dtype program and the element offsets of in[0]
 * and out: the start of every [outer, r, inner] row kernel (reduce, softmax). */
pt_status ocl_row_kernel(ocl_device *d, ocl_kernel_id kid, const pt_op *op, cl_kernel *k,
                                size_t *wg, cl_long *io, cl_long *oo) {
    pt_status s = ocl_kernel(d, op->in[0].dtype, kid, k, wg);
    if (s == PT_OK) s = ocl_elem_offset(&op->in[0], io);
    if (s == PT_OK) s = ocl_elem_offset(&op->out, oo);
    return s;
}

/* ---- Waiting for the queue ---- */

pt_status ocl_synchronize(int dev) {
    ocl_device *d = NULL;
    pt_status st = ocl_device_ready(dev, "synchronize", &d);
    if (st != PT_OK) return st;
    cl_int err = clFinish(d->queue);
    if (err != CL_SUCCESS) return ocl_cl_fail(err, "clFinish on %s", d->name);
    return PT_OK;
}
