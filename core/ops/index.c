/* Index ops: pt_gather and pt_one_hot.
 *
 * Both read integer positions chosen at run time. Where the index lives in
 * host-visible memory (the cpu backend) the core checks every value first and
 * reports the first one out of range with its position; an accelerator would
 * have to wait for the device to do that, so there the kernels write 0 for a
 * bad index instead (backend.h), never reading out of bounds. So does the
 * cpu while this thread captures a graph on it: the values do not exist
 * before a replay. */
#include <stdio.h>
#include <string.h>

#include "ops/ops_internal.h"

static bool is_index_dtype(pt_dtype t) { return t == PT_I32 || t == PT_I64; }

/* Waits for idx's device first: the values may still be in flight. */
pt_status pt__check_index_values(const char *fn, const char *what, const pt_tensor *idx, int64_t limit,
                                 const char *range_what) {
    pt_status s = pt__synchronize(fn, pt__dev(idx));
    if (s) return s;
    const int nd = idx->ndim;
    const int64_t n = pt__tensor_numel(idx);
    const char *base = pt__host_ptr(idx);
    const size_t es = pt_dtype_size(idx->dtype);
    int64_t pos[PT_MAX_DIMS] = {0};
    int64_t off = 0; /* element offset of pos */
    for (int64_t e = 0; e < n; ++e) {
        int64_t v;
        if (idx->dtype == PT_I32) {
            int32_t v32;
            memcpy(&v32, base + (size_t)off * es, sizeof v32);
            v = v32;
        } else {
            memcpy(&v, base + (size_t)off * es, sizeof v);
        }
        if (v < 0 || v >= limit) {
            char p[PT__SHAPE_STR_CAP];
            return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                             "%s value %lld at position %s is out of range for %s (valid: 0..%lld)",
                             what, (long long)v, pt__shape_str(nd, pos, p, sizeof p), range_what,
                             (long long)limit - 1);
        }
        for (int k = nd - 1; k >= 0; --k) { /* next position in C order */
            off += idx->strides[k];
            if (++pos[k] < idx->shape[k]) break;
            off -= idx->strides[k] * pos[k];
            pos[k] = 0;
        }
    }
    return PT_OK;
}

pt_status pt__index_run(const char *fn, pt_tensor *idx, pt_operand *o, pt_tensor **copy) {
    const int64_t n = pt__tensor_numel(idx);
    pt_tensor *src = idx;
    int64_t stride;
    *copy = NULL;
    if (!pt__merge_dims(idx->ndim, idx->shape, idx->strides, &stride)) {
        *copy = pt__copy_new(fn, idx, idx->dtype, idx->ndim, idx->shape);
        if (!*copy) return pt_last_status();
        src = *copy;
        stride = 1;
    }
    pt__operand(src, o);
    o->ndim = 1;
    o->shape[0] = n;
    o->strides[0] = n == 1 ? 1 : stride;
    return PT_OK;
}

/* ---- gather ---- */

pt_tensor *pt_gather(pt_tensor *x, int dim, pt_tensor *index) {
    static const char fn[] = "pt_gather";
    if (!x) return pt__null_input("pt_gather", "x");
    if (!index) return pt__null_input("pt_gather", "index");
    pt_tensor *in[2] = {x, index};
    if (pt__check_same_device(fn, 2, in)) return NULL;
    if (!is_index_dtype(index->dtype)) {
        pt__error(PT_ERR_DTYPE, fn, "index has dtype %s; it must be i32 or i64 (cast with pt_cast())",
                  pt_dtype_name(index->dtype));
        return NULL;
    }
    char sx[PT__SHAPE_STR_CAP], si[PT__SHAPE_STR_CAP];
    if (x->ndim == 0 || index->ndim != x->ndim) {
        pt__error(PT_ERR_SHAPE, fn, "x shape %s and index shape %s: both need the same number (>= 1) of dims",
                  pt__shape_str(x->ndim, x->shape, sx, sizeof sx),
                  pt__shape_str(index->ndim, index->shape, si, sizeof si));
        return NULL;
    }
    int d;
    if (pt__resolve_dim_only(fn, dim, x->ndim, &d)) return NULL;
    for (int k = 0; k < x->ndim; ++k) {
        if (k != d && index->shape[k] != x->shape[k]) {
            pt__error(PT_ERR_SHAPE, fn,
                      "x shape %s and index shape %s differ at dim %d (%lld vs %lld); they may "
                      "differ only at dim %d",
                      pt__shape_str(x->ndim, x->shape, sx, sizeof sx),
                      pt__shape_str(index->ndim, index->shape, si, sizeof si), k,
                      (long long)x->shape[k], (long long)index->shape[k], d);
            return NULL;
        }
    }
    const int64_t n = pt__tensor_numel(index);
    if (n > 0 && x->shape[d] == 0) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                  "dim %d of x (shape %s) has size 0, so no index value is valid", d,
                  pt__shape_str(x->ndim, x->shape, sx, sizeof sx));
        return NULL;
    }
    if (n > 0 && pt__host_visible(pt__dev(x)) && pt__capture_device() != pt__dev(x)) {
        char what[64];
        snprintf(what, sizeof what, "dim %d of size %lld", d, (long long)x->shape[d]);
        if (pt__check_index_values(fn, "index", index, x->shape[d], what)) return NULL;
    }
    pt_tensor *out = pt__tensor_new(fn, pt__dev(x), x->dtype, index->ndim, index->shape);
    if (!out) return NULL;
    if (n > 0) {
        pt_op op;
        pt__op_init(&op, PT_OP_GATHER, x->dtype, 2);
        pt_tensor *copy_x = NULL, *copy_i = NULL;
        pt_status s = pt__layout3(fn, x, d, &op.in[0], &copy_x);
        if (s == PT_OK) s = pt__layout3(fn, index, d, &op.in[1], &copy_i);
        if (s == PT_OK) {
            pt__operand_packed(out, 3, op.in[1].shape, &op.out);
            s = pt__execute(fn, pt__dev(x), &op);
        }
        pt_release(copy_x);
        pt_release(copy_i);
        if (!pt__result_or_release(s, out)) return NULL;
    }
    if (pt__grad_wanted(2, in)) {
        pt__grad_args args = pt__no_grad_args;
        args.dim = d;
        pt__grad_record(out, PT__G_GATHER, 2, in, &args);
    }
    return pt__ret(out);
}

/* ---- one_hot ---- */

pt_tensor *pt_one_hot(pt_tensor *labels, int64_t num_classes, pt_dtype t) {
    static const char fn[] = "pt_one_hot";
    if (!labels) return pt__null_input("pt_one_hot", "labels");
    if (!is_index_dtype(labels->dtype)) {
        pt__error(PT_ERR_DTYPE, fn, "labels have dtype %s; they must be i32 or i64 (cast with pt_cast())",
                  pt_dtype_name(labels->dtype));
        return NULL;
    }
    if (pt__check_dtype(fn, t)) return NULL;
    if (num_classes < 1) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "num_classes is %lld; it must be >= 1",
                  (long long)num_classes);
        return NULL;
    }
    if (labels->ndim + 1 > PT_MAX_DIMS) {
        pt__error(PT_ERR_SHAPE, fn, "labels have %d dims; the result would have %d (at most %d)",
                  labels->ndim, labels->ndim + 1, PT_MAX_DIMS);
        return NULL;
    }
    const int64_t n = pt__tensor_numel(labels);
    if (n > 0 && pt__host_visible(pt__dev(labels)) && pt__capture_device() != pt__dev(labels)) {
        char what[64];
        snprintf(what, sizeof what, "%lld classes", (long long)num_classes);
        if (pt__check_index_values(fn, "label", labels, num_classes, what)) return NULL;
    }
    int64_t shape[PT_MAX_DIMS];
    memcpy(shape, labels->shape, (size_t)labels->ndim * sizeof(int64_t));
    shape[labels->ndim] = num_classes;
    pt_tensor *out = pt__tensor_new(fn, pt__dev(labels), t, labels->ndim + 1, shape);
    if (!out || n == 0) return pt__ret(out);

    pt_tensor *copy = NULL;
    pt_op op;
    pt__op_init(&op, PT_OP_ONE_HOT, t, 1);
    op.count = num_classes;
    if (pt__index_run(fn, labels, &op.in[0], &copy)) {
        pt_release(out);
        return NULL;
    }
    pt__operand(out, &op.out);
    op.out.ndim = 2;
    op.out.shape[0] = n;
    op.out.shape[1] = num_classes;
    op.out.strides[0] = num_classes;
    op.out.strides[1] = 1;
    pt_status s = pt__execute(fn, pt__dev(labels), &op);
    pt_release(copy);
    return pt__ret(pt__result_or_release(s, out));
}
