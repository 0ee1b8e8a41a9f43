/* The rules every op shares: dtype promotion, scalar
 * conversion, NumPy broadcasting, and the dimension merging that lets
 * backends see strided operands in their simplest form. */
#include <math.h>
#include <stdio.h>

#include "tensor/tensor_internal.h"

/* ---- dtypes ---- */

/* The promotion order is a column of PT_DTYPE_TABLE (names and sizes are
 * the runtime's: core/runtime/dtype.c). */

pt_dtype pt__promote(pt_dtype a, pt_dtype b) {
    /* f16 and bf16 each lack values of the other (range, precision): f32
     * holds both exactly. */
    if (a != b && pt_dtype_is_half(a) && pt_dtype_is_half(b)) return PT_F32;
    return pt_dtype_promotion_rank(a) >= pt_dtype_promotion_rank(b) ? a : b;
}

pt_status pt__dtype_unsupported(const char *fn, pt_dtype t, pt_dtype fix) {
    return pt__error(PT_ERR_DTYPE, fn, "dtype %s not supported; cast to %s with pt_cast()",
                     pt_dtype_name(t), pt_dtype_name(fix));
}

pt_status pt__scalar_for_dtype(const char *fn, const char *what, double v, pt_dtype t,
                               double *out) {
    double lo, hi; /* integer range: lo <= trunc(v) < hi */
    switch (t) {
    case PT_I32: lo = -2147483648.0; hi = 2147483648.0; break;
    case PT_I64: lo = -9223372036854775808.0; hi = 9223372036854775808.0; break;
    case PT_U8: lo = 0.0; hi = 256.0; break;
    default: *out = v; return PT_OK; /* f32/f64 store any double (f32 rounds) */
    }
    if (isnan(v) || isinf(v))
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "%s %g cannot be stored in dtype %s; use a float dtype (pt_cast())", what,
                         v, pt_dtype_name(t));
    double tv = trunc(v);
    if (tv < lo || tv >= hi)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "%s %.17g does not fit in dtype %s (range %.0f..%.0f)", what, v,
                         pt_dtype_name(t), lo, hi - 1.0);
    *out = tv;
    return PT_OK;
}

void pt__null_device(const char *fn) {
    if (pt_last_status() == PT_OK)
        pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                  "device is NULL; get one with pt_cpu(), pt_default_device() or pt_device_get()");
}

pt_tensor *pt__null_input(const char *fn, const char *what) {
    if (pt_last_status() == PT_OK)
        pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                  "%s is NULL (and no earlier error is pending: pass a tensor)", what);
    return NULL;
}

pt_status pt__null_tensor_status(const char *fn, const char *what) {
    pt_status s = pt_last_status();
    if (s != PT_OK) return s;
    return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "%s is NULL", what);
}

/* ---- Broadcasting ---- */

int pt__broadcast_shapes(int n, const int *ndims, const int64_t *const *shapes, int *ndim,
                         int64_t *shape, int64_t *clash_a, int64_t *clash_b) {
    int nd = 0;
    for (int i = 0; i < n; ++i)
        if (ndims[i] > nd) nd = ndims[i];
    for (int k = 1; k <= nd; ++k) { /* k-th dim from the end */
        int64_t e = 1;
        for (int i = 0; i < n; ++i) {
            if (ndims[i] < k) continue;
            int64_t s = shapes[i][ndims[i] - k];
            if (s == 1) continue;
            if (e == 1) {
                e = s;
            } else if (s != e) {
                *clash_a = e;
                *clash_b = s;
                return -k;
            }
        }
        shape[nd - k] = e;
    }
    *ndim = nd;
    return 0;
}

pt_status pt__broadcast_tensors(const char *fn, int n, pt_tensor *const *xs, int *ndim,
                                int64_t *shape) {
    /* The arrays below hold one entry per operand: a count outside them is a
     * caller's bug inside the core, reported rather than overrun. */
    if (n < 1 || n > PT_OP_MAX_INPUTS)
        return pt__error(PT_ERR_INTERNAL, fn, "broadcasting %d operands (1..%d supported)", n,
                         PT_OP_MAX_INPUTS);
    int ndims[PT_OP_MAX_INPUTS];
    const int64_t *shapes[PT_OP_MAX_INPUTS];
    for (int i = 0; i < n; ++i) {
        ndims[i] = xs[i]->ndim;
        shapes[i] = xs[i]->shape;
    }
    int64_t ca = 0, cb = 0;
    int bad = pt__broadcast_shapes(n, ndims, shapes, ndim, shape, &ca, &cb);
    if (bad == 0) return PT_OK;
    char s[PT_OP_MAX_INPUTS][PT__SHAPE_STR_CAP];
    for (int i = 0; i < n; ++i) pt__shape_str(xs[i]->ndim, xs[i]->shape, s[i], sizeof s[i]);
    if (n == 2)
        return pt__error(PT_ERR_SHAPE, fn, "shapes %s and %s cannot broadcast (dim %d: %lld vs %lld)",
                         s[0], s[1], bad, (long long)ca, (long long)cb);
    return pt__error(PT_ERR_SHAPE, fn, "shapes %s, %s and %s cannot broadcast (dim %d: %lld vs %lld)",
                     s[0], s[1], s[2], bad, (long long)ca, (long long)cb);
}

/* ---- Dimension merging ---- */

bool pt__merge_dims(int n, const int64_t *shape, const int64_t *strides, int64_t *stride) {
    int64_t st = 1, span = 0; /* span: elements covered by the dims seen so far (0: none) */
    for (int i = n - 1; i >= 0; --i) {
        if (shape[i] == 1) continue;
        if (span == 0) {
            st = strides[i];
            span = shape[i];
        } else {
            if (strides[i] != st * span) return false;
            span *= shape[i];
        }
    }
    *stride = st;
    return true;
}

/* ---- Operands and copies ---- */

void pt__operand(const pt_tensor *x, pt_operand *out) {
    out->buf = x->st->buf;
    out->offset = x->offset;
    out->dtype = x->dtype;
    out->ndim = x->ndim;
    for (int i = 0; i < x->ndim; ++i) {
        out->shape[i] = x->shape[i];
        out->strides[i] = x->strides[i];
    }
    /* Last, so that the call is a jump and the eager path pays the test
     * alone, without a stack frame. */
    if (__builtin_expect(pt__capture_now != NULL, 0)) pt__storage_capture_keep(x->st);
}

void pt__operand_broadcast(const pt_tensor *x, int ndim, const int64_t *shape, pt_operand *out) {
    out->buf = x->st->buf;
    out->offset = x->offset;
    out->dtype = x->dtype;
    out->ndim = ndim;
    int lead = ndim - x->ndim;
    for (int i = 0; i < ndim; ++i) {
        out->shape[i] = shape[i];
        int xi = i - lead;
        out->strides[i] = xi < 0 || x->shape[xi] == 1 ? 0 : x->strides[xi];
    }
    if (__builtin_expect(pt__capture_now != NULL, 0)) pt__storage_capture_keep(x->st);
}

void *pt__host_ptr(const pt_tensor *x) {
    return (char *)x->st->buf + x->offset;
}

pt_tensor *pt__copy_new(const char *fn, pt_tensor *x, pt_dtype t, int ndim, const int64_t *shape) {
    pt_tensor *out = pt__tensor_new(fn, pt__dev(x), t, ndim, shape);
    if (!out || pt__tensor_numel(out) == 0) return out;
    pt_op op;
    pt__op_init(&op, PT_OP_COPY, x->dtype, 1);
    pt__operand(out, &op.out);
    pt__operand_broadcast(x, ndim, shape, &op.in[0]);
    if (pt__execute(fn, pt__dev(x), &op) != PT_OK) {
        pt_release(out);
        return NULL;
    }
    return out;
}


void pt__operand_packed(const pt_tensor *x, int ndim, const int64_t *shape, pt_operand *o) {
    pt__operand(x, o);
    o->ndim = ndim;
    for (int i = 0; i < ndim; ++i) o->shape[i] = shape[i];
    pt__contiguous_strides(ndim, shape, o->strides);
}

pt_status pt_tensor_storage(const pt_tensor *x, void **buffer, size_t *offset_bytes) {
    static const char fn[] = "pt_tensor_storage";
    if (!x) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "x is NULL; pass a tensor");
    if (!buffer || !offset_bytes)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "buffer and offset_bytes must both be non-NULL");
    *buffer = x->st->buf;
    *offset_bytes = x->offset;
    return PT_OK;
}
