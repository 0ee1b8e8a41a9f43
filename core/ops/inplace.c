/* In-place ops: pt_copy_, pt_axpy_, pt_fill_ (and the FILL helper the
 * creation ops share), and pt__elementwise_into for the core's own state
 * updates. They write into an existing tensor, which may be a strided view;
 * they never record autograd. */
#include <string.h>

#include "ops/ops_internal.h"

/* Whether writing x would hit one memory location twice: an expanded
 * (stride 0) dim. Views made by the public API overlap no other way. */
static bool write_overlaps_itself(const pt_tensor *x) {
    for (int i = 0; i < x->ndim; ++i)
        if (x->shape[i] > 1 && x->strides[i] == 0) return true;
    return false;
}

static pt_status overlap_error(const char *fn, const char *what, const pt_tensor *x) {
    char s[PT__SHAPE_STR_CAP];
    return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                     "%s (shape %s) is an expanded view whose elements share memory; write into "
                     "a contiguous tensor (pt_contiguous) instead",
                     what, pt__shape_str(x->ndim, x->shape, s, sizeof s));
}

/* Same storage, same first element, same layout: an element-wise op reading
 * src while writing dst touches each element once, which is safe. Any other
 * sharing may read what the op already wrote. */
static bool same_layout(const pt_tensor *a, const pt_tensor *b) {
    return a->st == b->st && a->offset == b->offset && a->dtype == b->dtype &&
           a->ndim == b->ndim && memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof(int64_t)) == 0 &&
           memcmp(a->strides, b->strides, (size_t)a->ndim * sizeof(int64_t)) == 0;
}

/* src on another device than dst: uploaded straight into dst where one
 * transfer is the whole copy, else moved to dst's device first
 * (contiguous, same dtype), then copied in place there, broadcasting and
 * casting. */
static pt_status copy_across_devices(const char *fn, pt_tensor *dst, pt_tensor *src) {
    bool done = false;
    pt_status direct = pt__copy_into_accelerator(fn, dst, src, &done);
    if (done) return direct;
    pt_tensor *moved = pt__move(fn, src, pt__dev(dst), false);
    if (!moved) return pt_last_status();
    pt_status s = pt_copy_(dst, moved);
    pt_release(moved); /* the reference pt__move returned (and registered, inside a scope) */
    return s;
}

pt_status pt_fill_(pt_tensor *x, double value) {
    static const char fn[] = "pt_fill_";
    if (!x) return pt__null_tensor_status(fn, "x");
    double v;
    pt_status s = pt__scalar_for_dtype(fn, "value", value, x->dtype, &v);
    return s ? s : pt__fill(fn, x, v);
}

pt_status pt_copy_(pt_tensor *dst, pt_tensor *src) {
    static const char fn[] = "pt_copy_";
    if (!dst) return pt__null_tensor_status(fn, "dst");
    if (!src) return pt__null_tensor_status(fn, "src");
    /* src broadcasts to dst's shape (one way: dst never grows). Extra
     * leading src dims are allowed when they are 1. */
    for (int k = 1; k <= src->ndim; ++k) {
        int64_t s = src->shape[src->ndim - k];
        int64_t d = k <= dst->ndim ? dst->shape[dst->ndim - k] : 1;
        if (s != 1 && s != d) {
            char a[PT__SHAPE_STR_CAP], b[PT__SHAPE_STR_CAP];
            return pt__error(PT_ERR_SHAPE, fn,
                             "src shape %s cannot broadcast to dst shape %s (dim %d: %lld vs %lld)",
                             pt__shape_str(src->ndim, src->shape, a, sizeof a),
                             pt__shape_str(dst->ndim, dst->shape, b, sizeof b), -k, (long long)s,
                             (long long)d);
        }
    }
    if (write_overlaps_itself(dst)) return overlap_error(fn, "dst", dst);
    if (pt__tensor_numel(dst) == 0) return PT_OK;
    if (pt__dev(src) != pt__dev(dst)) return copy_across_devices(fn, dst, src);
    if (same_layout(dst, src)) return PT_OK; /* copying onto itself */

    pt_tensor *staged = NULL; /* src when it shares memory with dst in another layout */
    if (src->st == dst->st) {
        staged = pt__copy_new(fn, src, src->dtype, src->ndim, src->shape);
        if (!staged) return pt_last_status();
        src = staged;
    }
    pt_op op;
    pt__op_init(&op, PT_OP_COPY, src->dtype, 1);
    pt__operand(dst, &op.out);
    pt__operand_broadcast(src, dst->ndim, dst->shape, &op.in[0]);
    pt_status s = pt__execute(fn, pt__dev(dst), &op);
    pt_release(staged);
    return s;
}

pt_status pt_axpy_(pt_tensor *y, double alpha, pt_tensor *x) {
    static const char fn[] = "pt_axpy_";
    if (!y) return pt__null_tensor_status(fn, "y");
    if (!x) return pt__null_tensor_status(fn, "x");
    pt_tensor *both[2] = {y, x};
    pt_status s = pt__check_same_device(fn, 2, both);
    if (s) return s;
    if (y->dtype != x->dtype)
        return pt__error(PT_ERR_DTYPE, fn, "y has dtype %s but x has %s; cast x with pt_cast()",
                         pt_dtype_name(y->dtype), pt_dtype_name(x->dtype));
    if (!pt__is_float(y->dtype)) return pt__dtype_unsupported(fn, y->dtype, PT_F32);
    if (y->ndim != x->ndim ||
        memcmp(y->shape, x->shape, (size_t)y->ndim * sizeof(int64_t)) != 0) {
        char a[PT__SHAPE_STR_CAP], b[PT__SHAPE_STR_CAP];
        return pt__error(PT_ERR_SHAPE, fn, "y shape %s and x shape %s differ; they must be equal",
                         pt__shape_str(y->ndim, y->shape, a, sizeof a),
                         pt__shape_str(x->ndim, x->shape, b, sizeof b));
    }
    if (write_overlaps_itself(y)) return overlap_error(fn, "y", y);
    if (pt__tensor_numel(y) == 0) return PT_OK;

    pt_tensor *staged = NULL;
    if (x->st == y->st && !same_layout(x, y)) {
        staged = pt__copy_new(fn, x, x->dtype, x->ndim, x->shape);
        if (!staged) return pt_last_status();
        x = staged;
    }
    pt_op op;
    pt__op_init(&op, PT_OP_AXPY, y->dtype, 2);
    op.scalar = alpha;
    pt__operand(y, &op.out);
    op.in[0] = op.out;
    pt__operand(x, &op.in[1]);
    s = pt__execute(fn, pt__dev(y), &op);
    pt_release(staged);
    return s;
}

pt_status pt__elementwise_into(const char *fn, pt_op_kind kind, pt_tensor *out, int n, pt_tensor *const *in,
                               double scalar) {
    if (write_overlaps_itself(out)) return overlap_error(fn, "out", out);
    for (int i = 0; i < n; ++i) {
        const pt_tensor *x = in[i];
        if (pt__dev(x) != pt__dev(out) || x->dtype != out->dtype || x->ndim != out->ndim ||
            memcmp(x->shape, out->shape, (size_t)x->ndim * sizeof(int64_t)) != 0 ||
            (x->st == out->st && !same_layout(x, out)))
            return pt__error(PT_ERR_INTERNAL, fn,
                             "an in-place %s got an input of another device, dtype, shape or view of its "
                             "output; please report this",
                             pt_op_name(kind));
    }
    if (pt__tensor_numel(out) == 0) return PT_OK;
    pt_op op;
    pt__op_init(&op, kind, out->dtype, n);
    op.scalar = scalar;
    pt__operand(out, &op.out);
    for (int i = 0; i < n; ++i) pt__operand(in[i], &op.in[i]);
    return pt__execute(fn, pt__dev(out), &op);
}
