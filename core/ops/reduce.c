/* Reductions (sum, mean, max, argmax, norms) and softmax.
 *
 * Every one of them sees its input as [outer, r, inner] around the reduced
 * dim: the dims before it merged into outer, those after into inner. When
 * x's strides allow the merges the backend reads x in place (a transposed or
 * narrowed tensor costs no copy); otherwise x is made contiguous first. */
#include <math.h>
#include <string.h>

#include "ops/ops_internal.h"

pt_status pt__layout3(const char *fn, pt_tensor *x, int d, pt_operand *o, pt_tensor **copy) {
    *copy = NULL;
    int64_t outer, r, inner, so = 1, sr = 1, si = 1;
    bool merged;
    if (d == PT_ALL || x->ndim == 0) {
        outer = 1;
        r = pt__tensor_numel(x);
        inner = 1;
        merged = pt__merge_dims(x->ndim, x->shape, x->strides, &sr);
    } else {
        outer = pt__numel(d, x->shape);
        r = x->shape[d];
        inner = pt__numel(x->ndim - d - 1, x->shape + d + 1);
        sr = x->strides[d];
        merged = pt__merge_dims(d, x->shape, x->strides, &so) &&
                 pt__merge_dims(x->ndim - d - 1, x->shape + d + 1, x->strides + d + 1, &si);
    }
    pt_tensor *src = x;
    if (!merged) {
        *copy = pt__copy_new(fn, x, x->dtype, x->ndim, x->shape);
        if (!*copy) return pt_last_status();
        src = *copy;
        so = r * inner;
        sr = inner;
        si = 1;
    }
    /* An extent-1 axis's stride never matters; give it the contiguous value
     * so backends recognise a contiguous input. */
    if (inner == 1) si = 1;
    if (r == 1) sr = inner * si;
    if (outer == 1) so = r * sr;
    pt__operand(src, o);
    o->ndim = 3;
    o->shape[0] = outer;
    o->shape[1] = r;
    o->shape[2] = inner;
    o->strides[0] = so;
    o->strides[1] = sr;
    o->strides[2] = si;
    return PT_OK;
}

/* dim as a reduction sees it: PT_ALL, or resolved; a 0-D tensor accepts
 * 0 and -1 (its one element), which reduce everything. */
static pt_status resolve_reduce_dim(const char *fn, int dim, int ndim, int *d) {
    if (dim == PT_ALL) {
        *d = PT_ALL;
        return PT_OK;
    }
    if (ndim == 0) {
        if (dim != 0 && dim != -1)
            return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                             "dim %d is out of range for a 0-D tensor (use 0, -1 or PT_ALL)", dim);
        *d = PT_ALL;
        return PT_OK;
    }
    return pt__resolve_dim(fn, dim, ndim, d);
}

/* The [outer, inner] output operand of a reduction into out (contiguous). */
static void reduce_out_operand(pt_tensor *out, const pt_operand *in3, pt_operand *o) {
    const int64_t shape[2] = {in3->shape[0], in3->shape[2]};
    pt__operand_packed(out, 2, shape, o);
}

static pt_tensor *reduce_raw(const char *fn, pt_op_kind kind, pt_tensor *x, int dim, bool keepdim,
                             int *resolved);

/* Elements of u8 input a sum widens to i64 at once (128 MiB of i64). */
#define PT__SUM_WIDEN_BLOCK ((int64_t)1 << 24)

/* A u8 sum counts in i64, like torch's, and the backends sum i64, so the
 * input is widened first. Widened whole, a 4.3 GB u8 tensor would need
 * 34 GB more; instead x is cut along one dim (the summed one, or for a sum
 * of everything the longest) into blocks of at most PT__SUM_WIDEN_BLOCK
 * elements where the shape allows, each widened and summed on its own, and
 * the partial sums added: integer addition, so the result is exact and the
 * same as in one piece. A block that is still too large (one slice of a
 * huge dim) is cut again along another dim by the same rule. *out stays
 * NULL (and PT_OK comes back) where x is small enough to widen whole. */
static pt_status sum_u8_in_blocks(const char *fn, pt_tensor *x, int d, bool keepdim, pt_tensor **out) {
    *out = NULL;
    const int64_t numel = pt__tensor_numel(x);
    if (numel <= PT__SUM_WIDEN_BLOCK || x->ndim == 0) return PT_OK;
    int c = d;
    if (d == PT_ALL) {
        c = 0;
        for (int i = 1; i < x->ndim; ++i)
            if (x->shape[i] > x->shape[c]) c = i;
    }
    const int64_t slice = numel / x->shape[c];
    const int64_t len = slice >= PT__SUM_WIDEN_BLOCK ? 1 : PT__SUM_WIDEN_BLOCK / slice;
    if (len >= x->shape[c]) return PT_OK;
    pt_tensor *acc = NULL;
    for (int64_t start = 0; start < x->shape[c]; start += len) {
        int64_t shape[PT_MAX_DIMS];
        memcpy(shape, x->shape, sizeof shape);
        shape[c] = x->shape[c] - start < len ? x->shape[c] - start : len;
        pt_tensor *block = pt__tensor_view(x, x->ndim, shape, x->strides,
                                           x->offset + (size_t)(start * x->strides[c]));
        int unused;
        pt_tensor *part = block ? reduce_raw(fn, PT_OP_SUM, block, d, keepdim, &unused) : NULL;
        pt_release(block);
        pt_tensor *next = !part ? NULL : !acc ? part : pt__binary_raw(fn, PT_OP_ADD, acc, part);
        if (acc && next != part) pt_release(part);
        pt_release(acc);
        if (!(acc = next)) return pt_last_status();
    }
    *out = acc;
    return PT_OK;
}

static pt_tensor *reduce_raw(const char *fn, pt_op_kind kind, pt_tensor *x, int dim, bool keepdim,
                             int *resolved) {
    int d;
    if (resolve_reduce_dim(fn, dim, x->ndim, &d)) return NULL;
    *resolved = d;
    pt_dtype t = x->dtype, in_t = x->dtype;
    switch (kind) {
    case PT_OP_SUM: /* like torch: u8 sums count, so they go to i64 */
        if (t == PT_U8) {
            pt_tensor *blocks;
            if (sum_u8_in_blocks(fn, x, d, keepdim, &blocks) != PT_OK || blocks) return blocks;
            t = in_t = PT_I64;
        }
        break;
    case PT_OP_MEAN:
        if (pt__check_op_dtype(fn, kind, t)) return NULL;
        break;
    case PT_OP_ARGMAX: /* the index is all that comes back: compare u8 as i32 */
        if (in_t == PT_U8) in_t = PT_I32;
        t = PT_I64;
        break;
    default:
        break;
    }

    const int64_t r = d == PT_ALL ? pt__tensor_numel(x) : x->shape[d];
    if (r == 0 && (kind == PT_OP_MAX || kind == PT_OP_ARGMAX)) {
        char s[PT__SHAPE_STR_CAP];
        pt__shape_str(x->ndim, x->shape, s, sizeof s);
        if (d == PT_ALL)
            pt__error(PT_ERR_SHAPE, fn, "x (shape %s) is empty; the maximum of no elements is undefined", s);
        else
            pt__error(PT_ERR_SHAPE, fn,
                      "dim %d of shape %s has size 0; the maximum of no elements is undefined", d, s);
        return NULL;
    }
    int ond = 0;
    int64_t oshape[PT_MAX_DIMS];
    for (int i = 0; i < x->ndim; ++i) {
        if (d == PT_ALL || i == d) {
            if (keepdim) oshape[ond++] = 1;
        } else {
            oshape[ond++] = x->shape[i];
        }
    }
    pt_tensor *out = pt__tensor_new(fn, pt__dev(x), t, ond, oshape);
    if (!out || pt__tensor_numel(out) == 0) return out;
    if (r == 0) { /* an empty sum is 0, an empty mean NaN */
        if (pt__fill(fn, out, kind == PT_OP_MEAN ? NAN : 0.0) != PT_OK) {
            pt_release(out);
            return NULL;
        }
        return out;
    }

    pt_tensor *cast = NULL, *copy = NULL;
    pt_tensor *src = x;
    if (in_t != x->dtype) {
        cast = pt__copy_new(fn, x, in_t, x->ndim, x->shape);
        if (!cast) {
            pt_release(out);
            return NULL;
        }
        src = cast;
    }
    pt_op op;
    pt__op_init(&op, kind, in_t, 1);
    pt_status s = pt__layout3(fn, src, d, &op.in[0], &copy);
    if (s == PT_OK) {
        reduce_out_operand(out, &op.in[0], &op.out);
        s = pt__execute(fn, pt__dev(x), &op);
    }
    pt_release(copy);
    pt_release(cast);
    return pt__result_or_release(s, out);
}

static pt_tensor *reduce(const char *fn, pt_op_kind kind, int grad_op, pt_tensor *x, int dim,
                         bool keepdim) {
    if (!x) return pt__null_input(fn, "x");
    int d = 0;
    pt_tensor *out = reduce_raw(fn, kind, x, dim, keepdim, &d);
    if (out && grad_op >= 0 && pt__grad_wanted(1, &x)) {
        pt__grad_args args = pt__no_grad_args;
        args.dim = d;
        args.keepdim = keepdim;
        pt__grad_record(out, (pt__grad_op)grad_op, 1, &x, &args);
    }
    return pt__ret(out);
}

pt_tensor *pt_sum(pt_tensor *x, int dim, bool keepdim) {
    return reduce("pt_sum", PT_OP_SUM, PT__G_SUM, x, dim, keepdim);
}
pt_tensor *pt_mean(pt_tensor *x, int dim, bool keepdim) {
    return reduce("pt_mean", PT_OP_MEAN, PT__G_MEAN, x, dim, keepdim);
}
pt_tensor *pt_max(pt_tensor *x, int dim, bool keepdim) {
    return reduce("pt_max", PT_OP_MAX, PT__G_MAX, x, dim, keepdim);
}
pt_tensor *pt_argmax(pt_tensor *x, int dim, bool keepdim) {
    return reduce("pt_argmax", PT_OP_ARGMAX, -1, x, dim, keepdim);
}

/* ---- Norms ---- */

/* sqrt(sum(x * x)) over the n dims in descending order (n == 0: over all).
 * Reducing the highest dim first keeps the lower dims' numbers valid. */
static pt_tensor *norm_raw(const char *fn, pt_tensor *x, int n, const int *dims_desc) {
    pt_tensor *cur = pt__binary_raw(fn, PT_OP_MUL, x, x);
    int d;
    if (cur && n == 0) {
        pt_tensor *next = reduce_raw(fn, PT_OP_SUM, cur, PT_ALL, false, &d);
        pt_release(cur);
        cur = next;
    }
    for (int i = 0; cur && i < n; ++i) {
        pt_tensor *next = reduce_raw(fn, PT_OP_SUM, cur, dims_desc[i], false, &d);
        pt_release(cur);
        cur = next;
    }
    if (!cur) return NULL;
    pt_tensor *out = pt__unary_raw(fn, PT_OP_SQRT, cur);
    pt_release(cur);
    return out;
}

static pt_tensor *record_norm(pt_tensor *out, pt_tensor *x, int n, const int *dims_asc) {
    if (out && pt__grad_wanted(1, &x)) {
        pt__grad_args args = pt__no_grad_args;
        args.n_ints = n;
        for (int i = 0; i < n; ++i) args.ints[i] = dims_asc[i];
        pt__grad_record(out, PT__G_NORM, 1, &x, &args);
    }
    return out;
}

pt_tensor *pt_norm(pt_tensor *x) {
    static const char fn[] = "pt_norm";
    if (!x) return pt__null_input("pt_norm", "x");
    if (!pt__is_float(x->dtype)) {
        pt__dtype_unsupported(fn, x->dtype, PT_F32);
        return NULL;
    }
    pt_tensor *out = norm_raw(fn, x, 0, NULL);
    return pt__ret(record_norm(out, x, 0, NULL));
}

pt_tensor *pt_norm_dims(pt_tensor *x, int n, const int *dims) {
    static const char fn[] = "pt_norm_dims";
    if (!x) return pt__null_input("pt_norm_dims", "x");
    if (!pt__is_float(x->dtype)) {
        pt__dtype_unsupported(fn, x->dtype, PT_F32);
        return NULL;
    }
    if (n < 0 || n > x->ndim || (n > 0 && !dims)) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "n is %d and dims %s; pass 0..%d dims of x", n,
                  dims ? "given" : "NULL", x->ndim);
        return NULL;
    }
    bool seen[PT_MAX_DIMS] = {false};
    for (int i = 0; i < n; ++i) {
        int d;
        if (pt__resolve_dim_only(fn, dims[i], x->ndim, &d)) return NULL;
        if (seen[d]) {
            pt__error(PT_ERR_INVALID_ARGUMENT, fn, "dims[%d] = %d repeats dim %d; list each dim once",
                      i, dims[i], d);
            return NULL;
        }
        seen[d] = true;
    }
    int asc[PT_MAX_DIMS], desc[PT_MAX_DIMS], k = 0;
    for (int d = 0; d < x->ndim; ++d)
        if (seen[d]) asc[k++] = d;
    for (int i = 0; i < k; ++i) desc[i] = asc[k - 1 - i];
    pt_tensor *out = norm_raw(fn, x, k, desc);
    return pt__ret(record_norm(out, x, k, asc));
}

/* ---- Softmax ---- */

static pt_tensor *softmax(const char *fn, pt_op_kind kind, pt__grad_op g, pt_tensor *x, int dim) {
    if (!x) return pt__null_input(fn, "x");
    if (pt__check_op_dtype(fn, kind, x->dtype)) return NULL;
    if (dim == PT_ALL) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "dim PT_ALL is not accepted; pass the dim to normalise over");
        return NULL;
    }
    int d;
    if (resolve_reduce_dim(fn, dim, x->ndim, &d)) return NULL;
    pt_tensor *out = pt__tensor_new(fn, pt__dev(x), x->dtype, x->ndim, x->shape);
    if (!out) return NULL;
    if (pt__tensor_numel(out) > 0) {
        pt_op op;
        pt__op_init(&op, kind, x->dtype, 1);
        pt_tensor *copy = NULL;
        pt_status s = pt__layout3(fn, x, d, &op.in[0], &copy);
        if (s == PT_OK) {
            pt__operand_packed(out, 3, op.in[0].shape, &op.out);
            s = pt__execute(fn, pt__dev(x), &op);
        }
        pt_release(copy);
        if (!pt__result_or_release(s, out)) return NULL;
    }
    pt__grad_args args = pt__no_grad_args;
    args.dim = d == PT_ALL ? 0 : d;
    return pt__ret(pt__record(out, g, 1, &x, &args));
}

pt_tensor *pt_softmax(pt_tensor *x, int dim) {
    return softmax("pt_softmax", PT_OP_SOFTMAX, PT__G_SOFTMAX, x, dim);
}
pt_tensor *pt_log_softmax(pt_tensor *x, int dim) {
    return softmax("pt_log_softmax", PT_OP_LOG_SOFTMAX, PT__G_LOG_SOFTMAX, x, dim);
}
