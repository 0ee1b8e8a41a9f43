/* Scaled dot-product attention (pt_scaled_dot_product_attention) and the
 * lower-triangle mask (pt_tril).
 *
 * A device with the ATTENTION kinds (backend.h ATTENTION: the cpu) runs the
 * forward pass as one op that also writes each query row's log-sum-exp,
 * and the backward pass as one op that recomputes the probabilities in
 * blocks from it, so neither stores the [Tq, Tk] scores. Elsewhere the same
 * function is composed from matmul, softmax and where (each recording
 * itself), which stores them; decided per call by the device's answer, as
 * pt_channel_stats does. 16-bit tensors are computed in f32 and rounded
 * once, on either path.
 *
 * Recording (fused path) keeps q, k, v, the mask, the log-sum-exp and the
 * output: the rule in core/autograd/rules.c hands them to
 * pt__attention_backward. */
#include <math.h>
#include <string.h>

#include "ops/ops_internal.h"

/* Scores at or below this are a removed key on the composed path: -inf
 * (a mask's) is raised to it so a row without keys never computes
 * -inf - -inf, and the row is then zeroed as the fused kernels do. */
#define ATTN_FLOOR (-1e30)

/* ---- Shapes ---- */

/* x (2 to 4 dims) as [B, H, T, D] with leading extents 1 (a view). */
static pt_tensor *as4(pt_tensor *x) {
    int64_t s[4] = {1, 1, 1, 1};
    for (int i = 0; i < x->ndim; ++i) s[4 - x->ndim + i] = x->shape[i];
    return pt_reshape(x, 4, s);
}

/* x4 itself when its last stride is 1 (what the kernels read), else a
 * contiguous copy. */
static pt_tensor *rows_unit(pt_tensor *x4) {
    if (!x4) return NULL;
    if (x4->shape[3] == 1 || x4->strides[3] == 1) return x4;
    return pt_contiguous(x4);
}

static pt_status check(const char *fn, pt_tensor *q, pt_tensor *k, pt_tensor *v, pt_tensor *mask,
                       double scale) {
    pt_tensor *all[4] = {q, k, v, mask};
    pt_status s = pt__check_same_device(fn, mask ? 4 : 3, all);
    if (s) return s;
    char a[PT__SHAPE_STR_CAP], b[PT__SHAPE_STR_CAP], c[PT__SHAPE_STR_CAP];
    if (!pt__is_float(q->dtype)) return pt__dtype_unsupported(fn, q->dtype, PT_F32);
    if (k->dtype != q->dtype || v->dtype != q->dtype)
        return pt__error(PT_ERR_DTYPE, fn, "q, k and v are %s, %s and %s; cast them to one float dtype with pt_cast()",
                         pt_dtype_name(q->dtype), pt_dtype_name(k->dtype), pt_dtype_name(v->dtype));
    const int nd = q->ndim;
    bool ok = nd >= 2 && nd <= 4 && k->ndim == nd && v->ndim == nd;
    for (int i = 0; ok && i < nd - 2; ++i) ok = k->shape[i] == q->shape[i] && v->shape[i] == q->shape[i];
    if (ok) ok = k->shape[nd - 1] == q->shape[nd - 1] && v->shape[nd - 2] == k->shape[nd - 2];
    if (!ok)
        return pt__error(PT_ERR_SHAPE, fn,
                         "q %s, k %s and v %s do not fit: they need [..., Tq, D], [..., Tk, D] and [..., Tk, Dv] "
                         "with the same 0 to 2 leading dims ([B, H, T, D]); reshape or expand them",
                         pt__shape_str(q->ndim, q->shape, a, sizeof a), pt__shape_str(k->ndim, k->shape, b, sizeof b),
                         pt__shape_str(v->ndim, v->shape, c, sizeof c));
    if (!isfinite(scale))
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "scale %g is not finite; pass 0 for 1/sqrt(D)", scale);
    if (!mask) return PT_OK;
    if (mask->dtype != PT_U8 && !pt__is_float(mask->dtype))
        return pt__error(PT_ERR_DTYPE, fn,
                         "mask is %s; pass u8 (nonzero keeps a key) or a float mask added to the scores",
                         pt_dtype_name(mask->dtype));
    if (pt__grad_tracked(mask))
        return pt__error(PT_ERR_UNSUPPORTED, fn,
                         "mask requires grad: attention does not differentiate its mask; pass a tensor "
                         "without history (made under pt_no_grad_begin, or not marked)");
    /* The mask broadcasts to the scores' shape without growing it. */
    int64_t scores[4];
    for (int i = 0; i < nd - 1; ++i) scores[i] = q->shape[i];
    scores[nd - 1] = k->shape[nd - 2];
    ok = mask->ndim <= nd;
    for (int i = 0; ok && i < mask->ndim; ++i) {
        const int64_t m = mask->shape[mask->ndim - 1 - i], t = scores[nd - 1 - i];
        ok = m == t || m == 1;
    }
    if (!ok)
        return pt__error(PT_ERR_SHAPE, fn, "mask %s does not broadcast to the scores' shape %s ([..., Tq, Tk])",
                         pt__shape_str(mask->ndim, mask->shape, a, sizeof a), pt__shape_str(nd, scores, b, sizeof b));
    return PT_OK;
}

static unsigned flags_of(const pt_tensor *mask, bool causal) {
    unsigned f = causal ? PT_ATTN_CAUSAL : 0u;
    if (mask) f |= mask->dtype == PT_U8 ? PT_ATTN_MASK_KEEP : PT_ATTN_MASK_ADD;
    return f;
}

/* ---- The fused kinds ---- */

/* The kind's descriptor over 4-D q4, k4, v4 (last stride 1) and the mask
 * broadcast to [B, H, Tq, Tk] (already in q's dtype when additive). */
static void attn_op(pt_op *op, pt_op_kind kind, pt_tensor *q4, pt_tensor *k4, pt_tensor *v4, pt_tensor *mask,
                    unsigned flags, double scale) {
    pt__op_init(op, kind, q4->dtype, 3);
    op->scalar = scale;
    op->flags = flags;
    op->n_extra = PT_OP_MAX_EXTRA;
    memset(op->extra, 0, sizeof op->extra);
    pt__operand(q4, &op->in[0]);
    pt__operand(k4, &op->in[1]);
    pt__operand(v4, &op->in[2]);
    if (mask) {
        const int64_t s[4] = {q4->shape[0], q4->shape[1], q4->shape[2], k4->shape[2]};
        pt__operand_broadcast(mask, 4, s, &op->extra[PT_ATTN_X_MASK]);
    }
}

/* The forward kind into *o (the 4-D output) and *lse; PT_ERR_UNSUPPORTED
 * with no error set when the device refuses it. Called inside a scope;
 * *o and *lse are unregistered references. */
static pt_status fused_forward(const char *fn, pt_tensor *q4, pt_tensor *k4, pt_tensor *v4, pt_tensor *mask,
                               unsigned flags, double scale, pt_tensor **o, pt_tensor **lse) {
    const int64_t os[4] = {q4->shape[0], q4->shape[1], q4->shape[2], v4->shape[3]};
    *o = pt__tensor_new(fn, pt__dev(q4), q4->dtype, 4, os);
    *lse = *o ? pt__tensor_new(fn, pt__dev(q4), q4->dtype, 3, os) : NULL;
    if (!*lse) return pt_last_status();
    pt_op op;
    attn_op(&op, PT_OP_ATTENTION, q4, k4, v4, mask, flags, scale);
    pt__operand(*o, &op.out);
    pt__operand(*lse, &op.extra[PT_ATTN_X_LSE]);
    pt_status s = pt__run_kind(fn, pt__dev(q4), &op);
    if (s != PT_OK) {
        pt_release(*o);
        pt_release(*lse);
        *o = *lse = NULL;
    }
    return s;
}

pt_status pt__attention_backward(const char *fn, pt_tensor *q, pt_tensor *k, pt_tensor *v, pt_tensor *mask,
                                 pt_tensor *lse, pt_tensor *o, pt_tensor *g, double scale, unsigned flags,
                                 pt_tensor *grads[3]) {
    grads[0] = grads[1] = grads[2] = NULL;
    pt_tensor *made[3] = {NULL};
    pt_scope scope = pt_scope_begin();
    pt_tensor *q4 = rows_unit(as4(q)), *k4 = rows_unit(as4(k)), *v4 = rows_unit(as4(v));
    pt_tensor *o4 = rows_unit(as4(o)), *g4 = rows_unit(as4(pt_cast(g, q->dtype)));
    pt_tensor *m = mask && mask->dtype != PT_U8 ? pt_cast(mask, q->dtype) : mask;
    pt_status s = q4 && k4 && v4 && o4 && g4 && (m || !mask) ? PT_OK : pt__error_as(fn);
    pt_tensor *src[3] = {q4, k4, v4};
    for (int i = 0; i < 3 && !s; ++i)
        if (!(made[i] = pt__tensor_new(fn, pt__dev(q), q->dtype, 4, src[i]->shape))) s = pt_last_status();
    if (!s) {
        pt_op op;
        attn_op(&op, PT_OP_ATTENTION_BACKWARD, q4, k4, v4, m, flags, scale);
        const int64_t ls[3] = {q4->shape[0], q4->shape[1], q4->shape[2]};
        pt_tensor *lse3 = pt_reshape(lse, 3, ls);
        if (!lse3) s = pt__error_as(fn);
        if (!s) {
            pt__operand(lse3, &op.extra[PT_ATTN_X_LSE]);
            pt__operand(o4, &op.extra[PT_ATTN_X_OUT]);
            pt__operand(g4, &op.extra[PT_ATTN_X_GRAD_OUT]);
            pt__operand(made[0], &op.out);
            pt__operand(made[1], &op.extra[PT_ATTN_X_GRAD_K]);
            pt__operand(made[2], &op.extra[PT_ATTN_X_GRAD_V]);
            s = pt__execute(fn, pt__dev(q), &op);
        }
    }
    pt_tensor *orig[3] = {q, k, v};
    for (int i = 0; i < 3 && !s; ++i) {
        pt_tensor *r = pt_reshape(pt__ret(made[i]), orig[i]->ndim, orig[i]->shape);
        made[i] = NULL;
        if (!(grads[i] = pt_keep(r))) s = pt__error_as(fn);
    }
    for (int i = 0; i < 3; ++i) pt_release(made[i]);
    pt_scope_end(scope);
    if (s)
        for (int i = 0; i < 3; ++i) {
            pt_release(grads[i]);
            grads[i] = NULL;
        }
    return s;
}

/* ---- The composed path ---- */

/* U8 [rows, cols] on d: 1 where j - i <= diagonal. */
static pt_tensor *tril_keep(pt_device *d, int64_t rows, int64_t cols, int64_t diagonal) {
    pt_tensor *i = pt_reshape(pt_arange(d, PT_I64, (double)diagonal, (double)(diagonal + rows), 1), 2,
                              (int64_t[]){rows, 1});
    pt_tensor *j = pt_reshape(pt_arange(d, PT_I64, 0, (double)cols, 1), 2, (int64_t[]){1, cols});
    return pt_le(j, i);
}

/* softmax(q k^T scale + mask) v from public ops (each records itself),
 * with rows that keep no key set to 0; called in a scope. */
static pt_tensor *composed(pt_tensor *q, pt_tensor *k, pt_tensor *v, pt_tensor *mask, bool causal, double scale) {
    const int nd = q->ndim;
    const int64_t tq = q->shape[nd - 2], tk = k->shape[nd - 2];
    pt_device *d = pt__dev(q);
    pt_tensor *s = pt_mul_scalar(pt_matmul(q, pt_transpose(k, nd - 2, nd - 1)), scale);
    if (!mask && !causal) return pt_matmul(pt_softmax(s, -1), v);
    pt_tensor *floor = pt_full(d, q->dtype, 0, NULL, ATTN_FLOOR);
    if (mask && mask->dtype != PT_U8) s = pt_add(s, pt_cast(mask, q->dtype));
    if (mask && mask->dtype == PT_U8) s = pt_where(pt_ne(mask, pt_zeros(d, PT_U8, 0, NULL)), s, floor);
    if (causal) s = pt_where(tril_keep(d, tq, tk, 0), s, floor);
    s = pt_maximum(s, floor); /* -inf from an additive mask */
    pt_tensor *p = pt_softmax(s, -1);
    pt_tensor *alive = pt_cast(pt_gt(pt_max(s, -1, true), floor), q->dtype);
    return pt_matmul(pt_mul(p, alive), v);
}

/* ---- Public ---- */

/* q, k, v in a float dtype the kinds take (f32, f64): the fused kind, else
 * the composed path. Called in a scope; the result is registered there. */
static pt_tensor *attention(const char *fn, pt_tensor *q, pt_tensor *k, pt_tensor *v, pt_tensor *mask, bool causal,
                            double scale) {
    const int nd = q->ndim;
    const unsigned flags = flags_of(mask, causal);
    const bool empty = pt__tensor_numel(q) == 0 || pt__tensor_numel(v) == 0 || k->shape[nd - 2] == 0 ||
                       q->shape[nd - 1] == 0;
    if (empty) {
        if (q->shape[nd - 1] == 0 && k->shape[nd - 2] > 0) return composed(q, k, v, mask, causal, scale);
        int64_t s[4];
        memcpy(s, q->shape, sizeof(int64_t) * (size_t)nd);
        s[nd - 1] = v->shape[nd - 1];
        return pt_zeros(pt__dev(q), q->dtype, nd, s); /* no key: every row 0 */
    }
    pt_tensor *q4 = rows_unit(as4(q)), *k4 = rows_unit(as4(k)), *v4 = rows_unit(as4(v));
    pt_tensor *m = mask && mask->dtype != PT_U8 ? pt_cast(mask, q->dtype) : mask;
    if (!q4 || !k4 || !v4 || (mask && !m)) return NULL;
    pt_tensor *o4, *lse;
    pt_status st = fused_forward(fn, q4, k4, v4, m, flags, scale, &o4, &lse);
    if (st == PT_ERR_UNSUPPORTED) return composed(q, k, v, mask, causal, scale);
    if (st != PT_OK) return NULL;
    int64_t os[4];
    memcpy(os, q->shape, sizeof(int64_t) * (size_t)nd);
    os[nd - 1] = v->shape[nd - 1];
    pt_tensor *out = pt__ret(o4);
    if (nd != 4) out = pt_reshape(out, nd, os);
    pt__grad_args args = pt__no_grad_args;
    args.scalar = scale;
    args.dim = (int)flags;
    pt_tensor *in[5] = {q, k, v, m, lse};
    pt__record(out, PT__G_ATTENTION, 5, in, &args);
    pt_release(lse);
    return out;
}

pt_tensor *pt_scaled_dot_product_attention(pt_tensor *q, pt_tensor *k, pt_tensor *v, pt_tensor *mask, bool causal,
                                           double scale) {
    static const char fn[] = "pt_scaled_dot_product_attention";
    if (!q) return pt__null_input(fn, "q");
    if (!k) return pt__null_input(fn, "k");
    if (!v) return pt__null_input(fn, "v");
    if (check(fn, q, k, v, mask, scale)) return NULL;
    if (scale == 0) scale = q->shape[q->ndim - 1] > 0 ? 1.0 / sqrt((double)q->shape[q->ndim - 1]) : 1.0;
    pt_scope scope = pt_scope_begin();
    pt_tensor *out;
    if (pt_dtype_is_half(q->dtype)) { /* in f32, rounded once */
        pt_tensor *m = mask && mask->dtype != PT_U8 ? pt_cast(mask, PT_F32) : mask;
        pt_tensor *q32 = pt_cast(q, PT_F32), *k32 = pt_cast(k, PT_F32), *v32 = pt_cast(v, PT_F32);
        out = q32 && k32 && v32 && (m || !mask)
                  ? pt_cast(attention(fn, q32, k32, v32, m, causal, scale), q->dtype)
                  : NULL; /* a cast's error stands */
    } else {
        out = attention(fn, q, k, v, mask, causal, scale);
    }
    out = pt_keep(out);
    pt_scope_end(scope);
    if (!out) pt__error_as(fn);
    return out;
}

pt_tensor *pt_tril(pt_tensor *x, int64_t diagonal) {
    static const char fn[] = "pt_tril";
    if (!x) return pt__null_input(fn, "x");
    char s[PT__SHAPE_STR_CAP];
    if (x->ndim < 2) {
        pt__error(PT_ERR_SHAPE, fn, "x has shape %s; it needs 2 or more dims (the last two are the matrix)",
                  pt__shape_str(x->ndim, x->shape, s, sizeof s));
        return NULL;
    }
    const int64_t rows = x->shape[x->ndim - 2], cols = x->shape[x->ndim - 1];
    if (rows == 0 || cols == 0) return pt_contiguous(x);
    /* The diagonal only matters within [-rows, cols]: clamped, so the
     * arange below stays small whatever the caller passed. */
    if (diagonal < -rows) diagonal = -rows;
    if (diagonal > cols) diagonal = cols;
    pt_scope scope = pt_scope_begin();
    pt_device *d = pt__dev(x);
    pt_tensor *out = pt_keep(pt_where(tril_keep(d, rows, cols, diagonal), x, pt_zeros(d, x->dtype, 0, NULL)));
    pt_scope_end(scope);
    if (!out) pt__error_as(fn);
    return out;
}
