/* Shape ops: views that share storage (reshape of a contiguous tensor,
 * transpose, permute, narrow, expand) and the ops that copy into a new
 * layout (contiguous, cast, cat, stack). */
#include <string.h>

#include "ops/ops_internal.h"

const pt__grad_args pt__no_grad_args;

/* PT_ALL (ops.h) is the reductions' own: every other dim argument is
 * checked here. */
pt_status pt__resolve_dim_only(const char *fn, int dim, int ndim, int *out) {
    if (dim == PT_ALL)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "dim PT_ALL is only for reductions; pass a dim in %d..%d", -ndim,
                         ndim ? ndim - 1 : 0);
    return pt__resolve_dim(fn, dim, ndim, out);
}

/* ---- Copies ---- */

static pt_tensor *contiguous(const char *fn, pt_tensor *x) {
    if (pt__is_contiguous(x)) return pt__ret(pt_retain(x));
    pt_tensor *out = pt__copy_new(fn, x, x->dtype, x->ndim, x->shape);
    return pt__ret(pt__record(out, PT__G_CONTIGUOUS, 1, &x, &pt__no_grad_args));
}

pt_tensor *pt_contiguous(pt_tensor *x) {
    if (!x) return pt__null_input("pt_contiguous", "x");
    return contiguous("pt_contiguous", x);
}

pt_tensor *pt_cast(pt_tensor *x, pt_dtype t) {
    static const char fn[] = "pt_cast";
    if (!x) return pt__null_input("pt_cast", "x");
    if (pt__check_dtype(fn, t)) return NULL;
    if (x->dtype == t) return contiguous(fn, x);
    pt_tensor *out = pt__copy_new(fn, x, t, x->ndim, x->shape);
    return pt__ret(pt__record(out, PT__G_CAST, 1, &x, &pt__no_grad_args));
}

/* ---- Views ---- */

/* The strides that let shape ns view x's elements in x's row-major order
 * without a copy, as torch's view finds them: x's dims, size-1 ones aside,
 * fall into runs whose elements are evenly spaced (an outer dim's stride is
 * the inner one's stride times its extent); a new shape views x when its
 * dims, from the last, tile each run exactly. A transposed or permuted
 * tensor keeps its layout under a reshape that only splits or merges dims
 * within runs (a reshape to its own shape, above all), where a copy would
 * cost a pass over it. false: no such strides; numel must be > 0. */
static bool view_strides(const pt_tensor *x, int nn, const int64_t *ns, int64_t *out) {
    int64_t size[PT_MAX_DIMS], stride[PT_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < x->ndim; ++i)
        if (x->shape[i] != 1) {
            size[n] = x->shape[i];
            stride[n++] = x->strides[i];
        }
    int d = nn - 1;
    for (int run_end = n - 1; run_end >= 0;) {
        int run_begin = run_end;
        int64_t run = size[run_end];
        while (run_begin > 0 && stride[run_begin - 1] == stride[run_begin] * size[run_begin]) run *= size[--run_begin];
        int64_t next = stride[run_end], tiled = 1;
        for (; d >= 0 && tiled < run; --d) {
            out[d] = next;
            next *= ns[d];
            tiled *= ns[d];
        }
        if (tiled != run) return false;
        run_end = run_begin - 1;
    }
    for (; d >= 0; --d) {
        if (ns[d] != 1) return false;
        out[d] = d + 1 < nn ? out[d + 1] * ns[d + 1] : 1;
    }
    return true;
}

pt_tensor *pt_reshape(pt_tensor *x, int ndim, const int64_t *shape) {
    static const char fn[] = "pt_reshape";
    if (!x) return pt__null_input("pt_reshape", "x");
    if (ndim < 0 || ndim > PT_MAX_DIMS) {
        pt__error(PT_ERR_SHAPE, fn, "ndim %d is outside 0..%d", ndim, PT_MAX_DIMS);
        return NULL;
    }
    if (ndim > 0 && !shape) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "shape is NULL but ndim is %d", ndim);
        return NULL;
    }
    int64_t numel = pt__tensor_numel(x), span = 1, dims[PT_MAX_DIMS];
    int infer = -1;
    bool zero = false;
    for (int i = 0; i < ndim; ++i) {
        dims[i] = shape[i];
        if (shape[i] == -1 && infer < 0) {
            infer = i;
        } else if (shape[i] < 0) {
            char s[PT__SHAPE_STR_CAP];
            pt__error(PT_ERR_SHAPE, fn, "shape %s: extent %lld at dim %d is invalid (>= 0, or one -1)",
                      pt__shape_str(ndim, shape, s, sizeof s), (long long)shape[i], i);
            return NULL;
        } else if (shape[i] == 0) {
            zero = true;
        } else if (__builtin_mul_overflow(span, shape[i], &span) || span > PT__MAX_ELEMENTS) {
            /* checked as it multiplies: a wrapped product could match numel */
            pt__shape_too_large(fn, ndim, shape);
            return NULL;
        }
    }
    /* The element count of the extents given (the -1 aside). With no -1 and
     * every extent checked, dims' span is at most PT__MAX_ELEMENTS; an
     * inferred extent makes the count numel, which already fits. */
    int64_t known = zero ? 0 : span;
    char a[PT__SHAPE_STR_CAP], b[PT__SHAPE_STR_CAP];
    if (infer >= 0) {
        if (known == 0 || numel % known != 0) {
            pt__error(PT_ERR_SHAPE, fn,
                      "cannot reshape shape %s (%lld elements) to %s: the -1 extent has no "
                      "whole-number value",
                      pt__shape_str(x->ndim, x->shape, a, sizeof a), (long long)numel,
                      pt__shape_str(ndim, shape, b, sizeof b));
            return NULL;
        }
        dims[infer] = numel / known;
        known = numel;
    }
    if (known != numel) {
        pt__error(PT_ERR_SHAPE, fn,
                  "cannot reshape shape %s (%lld elements) to %s (%lld elements); the element "
                  "counts must match",
                  pt__shape_str(x->ndim, x->shape, a, sizeof a), (long long)numel,
                  pt__shape_str(ndim, dims, b, sizeof b), (long long)known);
        return NULL;
    }
    int64_t strides[PT_MAX_DIMS], kept[PT_MAX_DIMS]; /* kept: a view's strides in x's own layout */
    pt__contiguous_strides(ndim, dims, strides);
    pt_tensor *out;
    if (numel == 0 || pt__is_contiguous(x)) { /* no elements: any layout views */
        out = pt__tensor_view(x, ndim, dims, strides, x->offset);
    } else if (view_strides(x, ndim, dims, kept)) {
        out = pt__tensor_view(x, ndim, dims, kept, x->offset);
    } else {
        pt_tensor *c = pt__copy_new(fn, x, x->dtype, x->ndim, x->shape);
        if (!c) return NULL;
        out = pt__tensor_view(c, ndim, dims, strides, c->offset);
        pt_release(c); /* the view keeps the storage */
    }
    return pt__ret(pt__record(out, PT__G_RESHAPE, 1, &x, &pt__no_grad_args));
}

pt_tensor *pt_transpose(pt_tensor *x, int d0, int d1) {
    static const char fn[] = "pt_transpose";
    if (!x) return pt__null_input("pt_transpose", "x");
    int a, b;
    if (pt__resolve_dim_only(fn, d0, x->ndim, &a) || pt__resolve_dim_only(fn, d1, x->ndim, &b))
        return NULL;
    int64_t shape[PT_MAX_DIMS], strides[PT_MAX_DIMS];
    memcpy(shape, x->shape, (size_t)x->ndim * sizeof(int64_t));
    memcpy(strides, x->strides, (size_t)x->ndim * sizeof(int64_t));
    shape[a] = x->shape[b];
    shape[b] = x->shape[a];
    strides[a] = x->strides[b];
    strides[b] = x->strides[a];
    pt_tensor *out = pt__tensor_view(x, x->ndim, shape, strides, x->offset);
    pt__grad_args args = pt__no_grad_args;
    args.dim = a;
    args.dim2 = b;
    return pt__ret(pt__record(out, PT__G_TRANSPOSE, 1, &x, &args));
}

pt_tensor *pt_permute(pt_tensor *x, const int *perm) {
    static const char fn[] = "pt_permute";
    if (!x) return pt__null_input("pt_permute", "x");
    const int nd = x->ndim;
    if (nd > 0 && !perm) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "perm is NULL; pass %d dims", nd);
        return NULL;
    }
    pt__grad_args args = pt__no_grad_args;
    args.n_ints = nd;
    bool seen[PT_MAX_DIMS] = {false};
    int64_t shape[PT_MAX_DIMS], strides[PT_MAX_DIMS];
    for (int i = 0; i < nd; ++i) {
        int d;
        if (pt__resolve_dim_only(fn, perm[i], nd, &d)) return NULL;
        if (seen[d]) {
            pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                      "perm[%d] = %d repeats dim %d; perm must list each of the %d dims once", i,
                      perm[i], d, nd);
            return NULL;
        }
        seen[d] = true;
        args.ints[i] = d;
        shape[i] = x->shape[d];
        strides[i] = x->strides[d];
    }
    pt_tensor *out = pt__tensor_view(x, nd, shape, strides, x->offset);
    return pt__ret(pt__record(out, PT__G_PERMUTE, 1, &x, &args));
}

pt_tensor *pt_narrow(pt_tensor *x, int dim, int64_t start, int64_t length) {
    static const char fn[] = "pt_narrow";
    if (!x) return pt__null_input("pt_narrow", "x");
    int d;
    if (pt__resolve_dim_only(fn, dim, x->ndim, &d)) return NULL;
    const int64_t size = x->shape[d];
    int64_t s = start < 0 ? start + size : start; /* negative start counts from the end */
    if (s < 0 || s > size || length < 0 || length > size - s) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                  "start %lld with length %lld is outside dim %d of size %lld (need 0 <= start "
                  "and start + length <= %lld)",
                  (long long)start, (long long)length, d, (long long)size, (long long)size);
        return NULL;
    }
    int64_t shape[PT_MAX_DIMS];
    memcpy(shape, x->shape, (size_t)x->ndim * sizeof(int64_t));
    shape[d] = length;
    size_t offset = x->offset + (size_t)(s * x->strides[d]) * pt_dtype_size(x->dtype);
    pt_tensor *out = pt__tensor_view(x, x->ndim, shape, x->strides, offset);
    pt__grad_args args = pt__no_grad_args;
    args.dim = d;
    args.start = s;
    args.length = length;
    return pt__ret(pt__record(out, PT__G_NARROW, 1, &x, &args));
}

pt_tensor *pt_expand(pt_tensor *x, int ndim, const int64_t *shape) {
    static const char fn[] = "pt_expand";
    if (!x) return pt__null_input("pt_expand", "x");
    if (ndim < x->ndim || ndim > PT_MAX_DIMS) {
        pt__error(PT_ERR_SHAPE, fn, "ndim %d is outside %d..%d (x has %d dims)", ndim, x->ndim,
                  PT_MAX_DIMS, x->ndim);
        return NULL;
    }
    if (ndim > 0 && !shape) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "shape is NULL but ndim is %d", ndim);
        return NULL;
    }
    const int lead = ndim - x->ndim;
    int64_t dims[PT_MAX_DIMS], strides[PT_MAX_DIMS];
    for (int i = 0; i < ndim; ++i) {
        int xi = i - lead;
        int64_t want = shape[i];
        if (xi < 0) { /* a new leading dim */
            if (want < 0) {
                char s[PT__SHAPE_STR_CAP];
                pt__error(PT_ERR_SHAPE, fn, "shape %s: new leading dim %d needs an extent >= 0, not %lld",
                          pt__shape_str(ndim, shape, s, sizeof s), i, (long long)want);
                return NULL;
            }
            dims[i] = want;
            strides[i] = 0;
        } else if (want == -1 || want == x->shape[xi]) {
            dims[i] = x->shape[xi];
            strides[i] = x->strides[xi];
        } else if (x->shape[xi] == 1 && want >= 0) {
            dims[i] = want;
            strides[i] = 0;
        } else {
            char a[PT__SHAPE_STR_CAP], b[PT__SHAPE_STR_CAP];
            pt__error(PT_ERR_SHAPE, fn,
                      "cannot expand shape %s to %s (dim %d: %lld vs %lld); only size-1 dims expand",
                      pt__shape_str(x->ndim, x->shape, a, sizeof a),
                      pt__shape_str(ndim, shape, b, sizeof b), i, (long long)x->shape[xi],
                      (long long)want);
            return NULL;
        }
    }
    /* A view allocates nothing, but its shape obeys the limit every shape
     * does: its numel must fit, and ops and reductions over it (which read
     * every element) must be able to make their results. */
    if (!pt__span_fits(ndim, dims)) {
        pt__shape_too_large(fn, ndim, dims);
        return NULL;
    }
    pt_tensor *out = pt__tensor_view(x, ndim, dims, strides, x->offset);
    return pt__ret(pt__record(out, PT__G_EXPAND, 1, &x, &pt__no_grad_args));
}

/* ---- Joining ---- */

/* The checks pt_cat and pt_stack share: n, xs, dtype and device. */
static bool check_join(const char *fn, int n, pt_tensor *const *xs) {
    if (n < 1 || !xs) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "needs at least one tensor (n is %d, xs %s)", n,
                  xs ? "given" : "NULL");
        return false;
    }
    for (int i = 0; i < n; ++i)
        if (!xs[i]) return false; /* an earlier failure: keep its error */
    if (pt__check_same_device(fn, n, xs)) return false;
    for (int i = 1; i < n; ++i) {
        if (xs[i]->dtype != xs[0]->dtype) {
            pt__error(PT_ERR_DTYPE, fn,
                      "tensor %d has dtype %s but tensor 0 has %s; cast it with pt_cast()", i,
                      pt_dtype_name(xs[i]->dtype), pt_dtype_name(xs[0]->dtype));
            return false;
        }
    }
    return true;
}

/* Copies x into out's region described by region (out's buffer and layout). */
static pt_status copy_into(const char *fn, pt_operand *region, pt_tensor *x) {
    pt_op op;
    pt__op_init(&op, PT_OP_COPY, x->dtype, 1);
    op.out = *region;
    pt__operand(x, &op.in[0]);
    return pt__execute(fn, pt__dev(x), &op);
}

static pt_tensor *record_join(pt_tensor *out, pt__grad_op g, int n, pt_tensor *const *xs, int d) {
    if (out && pt__grad_wanted(n, xs)) {
        pt__grad_args args = pt__no_grad_args;
        args.dim = d;
        pt__grad_record(out, g, n, xs, &args);
    }
    return out;
}

pt_tensor *pt_cat(int n, pt_tensor *const *xs, int dim) {
    static const char fn[] = "pt_cat";
    if (!check_join(fn, n, xs)) return NULL;
    const pt_tensor *x0 = xs[0];
    if (x0->ndim == 0) {
        pt__error(PT_ERR_SHAPE, fn, "tensor 0 is 0-D and has no dim to join along; use pt_stack");
        return NULL;
    }
    int d;
    if (pt__resolve_dim_only(fn, dim, x0->ndim, &d)) return NULL;
    int64_t shape[PT_MAX_DIMS];
    memcpy(shape, x0->shape, (size_t)x0->ndim * sizeof(int64_t));
    shape[d] = 0;
    for (int i = 0; i < n; ++i) {
        const pt_tensor *x = xs[i];
        bool ok = x->ndim == x0->ndim;
        for (int k = 0; ok && k < x->ndim; ++k)
            if (k != d && x->shape[k] != x0->shape[k]) ok = false;
        if (!ok) {
            char a[PT__SHAPE_STR_CAP], b[PT__SHAPE_STR_CAP];
            pt__error(PT_ERR_SHAPE, fn,
                      "tensor %d has shape %s but tensor 0 has %s; they must match except in dim %d",
                      i, pt__shape_str(x->ndim, x->shape, a, sizeof a),
                      pt__shape_str(x0->ndim, x0->shape, b, sizeof b), d);
            return NULL;
        }
        if (x->shape[d] > PT__MAX_ELEMENTS - shape[d]) { /* checked before adding: no wrap */
            char a[PT__SHAPE_STR_CAP], b[PT__SHAPE_STR_CAP];
            pt__error(PT_ERR_SHAPE, fn,
                      "joining %d tensors along dim %d: their extents there add up to more than "
                      "2^48 at tensor %d (shape %s; tensor 0 has %s), past the limit on a "
                      "shape's elements",
                      n, d, i, pt__shape_str(x->ndim, x->shape, a, sizeof a),
                      pt__shape_str(x0->ndim, x0->shape, b, sizeof b));
            return NULL;
        }
        shape[d] += x->shape[d];
    }
    pt_tensor *out = pt__tensor_new(fn, pt__dev(x0), x0->dtype, x0->ndim, shape);
    if (!out) return NULL;
    if (pt__tensor_numel(out) > 0) {
        const size_t step = (size_t)out->strides[d] * pt_dtype_size(out->dtype);
        int64_t at = 0;
        for (int i = 0; i < n; ++i) {
            pt_tensor *x = xs[i];
            int64_t len = x->shape[d];
            if (len == 0) continue;
            pt_operand region;
            pt__operand(out, &region);
            region.shape[d] = len;
            region.offset += (size_t)at * step;
            at += len;
            if (copy_into(fn, &region, x) != PT_OK) {
                pt_release(out);
                return NULL;
            }
        }
    }
    return pt__ret(record_join(out, PT__G_CAT, n, xs, d));
}

pt_tensor *pt_stack(int n, pt_tensor *const *xs, int dim) {
    static const char fn[] = "pt_stack";
    if (!check_join(fn, n, xs)) return NULL;
    const pt_tensor *x0 = xs[0];
    if (x0->ndim + 1 > PT_MAX_DIMS) {
        pt__error(PT_ERR_SHAPE, fn, "stacking %d-D tensors would make %d dims (at most %d)",
                  x0->ndim, x0->ndim + 1, PT_MAX_DIMS);
        return NULL;
    }
    int d;
    if (pt__resolve_dim_only(fn, dim, x0->ndim + 1, &d)) return NULL;
    for (int i = 1; i < n; ++i) {
        const pt_tensor *x = xs[i];
        if (x->ndim != x0->ndim ||
            memcmp(x->shape, x0->shape, (size_t)x->ndim * sizeof(int64_t)) != 0) {
            char a[PT__SHAPE_STR_CAP], b[PT__SHAPE_STR_CAP];
            pt__error(PT_ERR_SHAPE, fn, "tensor %d has shape %s but tensor 0 has %s; they must be equal",
                      i, pt__shape_str(x->ndim, x->shape, a, sizeof a),
                      pt__shape_str(x0->ndim, x0->shape, b, sizeof b));
            return NULL;
        }
    }
    int64_t shape[PT_MAX_DIMS];
    for (int k = 0, j = 0; k <= x0->ndim; ++k) shape[k] = k == d ? n : x0->shape[j++];
    pt_tensor *out = pt__tensor_new(fn, pt__dev(x0), x0->dtype, x0->ndim + 1, shape);
    if (!out) return NULL;
    if (pt__tensor_numel(out) > 0) {
        const size_t step = (size_t)out->strides[d] * pt_dtype_size(out->dtype);
        for (int i = 0; i < n; ++i) {
            /* out with dim d removed, at slice i: x's shape. */
            pt_operand region;
            pt__operand(out, &region);
            for (int k = d; k < x0->ndim; ++k) {
                region.shape[k] = region.shape[k + 1];
                region.strides[k] = region.strides[k + 1];
            }
            region.ndim = x0->ndim;
            region.offset += (size_t)i * step;
            if (copy_into(fn, &region, xs[i]) != PT_OK) {
                pt_release(out);
                return NULL;
            }
        }
    }
    return pt__ret(record_join(out, PT__G_STACK, n, xs, d));
}

/* ---- flatten: a reshape that merges a run of dims ---- */

pt_tensor *pt_f_flatten(pt_tensor *x, int start_dim, int end_dim) {
    static const char fn[] = "pt_f_flatten";
    if (!x) return pt__null_input("pt_f_flatten", "x");
    if (x->ndim == 0) return pt_reshape(x, 1, (int64_t[]){1}); /* torch: a 0-D tensor becomes [1] */
    int a, b;
    if (pt__resolve_dim_only(fn, start_dim, x->ndim, &a) || pt__resolve_dim_only(fn, end_dim, x->ndim, &b))
        return NULL;
    if (a > b) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                  "start_dim %d (dim %d) comes after end_dim %d (dim %d) of a %d-D tensor; swap them",
                  start_dim, a, end_dim, b, x->ndim);
        return NULL;
    }
    int64_t shape[PT_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < a; ++i) shape[n++] = x->shape[i];
    shape[n] = 1;
    for (int i = a; i <= b; ++i) shape[n] *= x->shape[i];
    ++n;
    for (int i = b + 1; i < x->ndim; ++i) shape[n++] = x->shape[i];
    return pt_reshape(x, n, shape);
}
