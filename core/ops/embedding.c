/* The embedding lookup (pt_f_embedding's op) and its weight gradient.
 *
 * A device with the EMBEDDING kinds (backend.h INDEX) copies the indexed
 * rows in one op, and sums the gradient rows of each index with a
 * deterministic scatter-add (EMBEDDING_BACKWARD): [V, D] of output and
 * O(N D) of arithmetic, where the gather composition's gradient takes an
 * indices x width x rows one-hot product, too big for a GPT's vocabulary.
 * A device that refuses the forward kind gets that composition (a row
 * gather, differentiated by gather's rule); one that refuses only the
 * backward kind gets the one-hot product as a matrix product.
 *
 * Out-of-range indices are reported as pt_gather reports them: checked on
 * host-visible devices before anything runs, written as zero rows by the
 * accelerators' kernels (never a read out of bounds). */
#include <stdio.h>
#include <string.h>

#include "ops/ops_internal.h"

static pt_status check(const char *fn, pt_tensor *indices, pt_tensor *weight) {
    if (indices->dtype != PT_I32 && indices->dtype != PT_I64)
        return pt__error(PT_ERR_DTYPE, fn, "indices are %s; they must be i32 or i64 (use pt_cast)",
                         pt_dtype_name(indices->dtype));
    char s[PT__SHAPE_STR_CAP];
    if (weight->ndim != 2)
        return pt__error(PT_ERR_SHAPE, fn, "weight is %s; it must be [num_embeddings, embedding_dim]",
                         pt__shape_str(weight->ndim, weight->shape, s, sizeof s));
    if (indices->ndim + 1 > PT_MAX_DIMS)
        return pt__error(PT_ERR_SHAPE, fn, "indices have %d dims; the result needs one more (max %d)",
                         indices->ndim, PT_MAX_DIMS);
    pt_tensor *both[2] = {indices, weight};
    if (pt__check_same_device(fn, 2, both)) return pt_last_status();
    if (pt__tensor_numel(indices) > 0 && weight->shape[0] == 0)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "weight %s has no rows, so no index value is valid; give it num_embeddings >= 1",
                         pt__shape_str(weight->ndim, weight->shape, s, sizeof s));
    return PT_OK;
}

/* The row gather the kind replaces, recorded by its own ops; in a scope. */
static pt_tensor *composed(pt_tensor *indices, pt_tensor *weight, int nd, const int64_t *out_shape) {
    const int64_t n = pt__tensor_numel(indices), width = weight->shape[1];
    const int64_t col[2] = {n, 1}, rows[2] = {n, width};
    pt_tensor *index = pt_expand(pt_reshape(pt_contiguous(indices), 2, col), 2, rows);
    return pt_reshape(pt_gather(weight, 0, index), nd, out_shape);
}

/* The forward kind into a fresh tensor of out_shape; PT_ERR_UNSUPPORTED with
 * no error set when the device refuses it. n, D >= 1. */
static pt_status kind_forward(const char *fn, pt_tensor *indices, pt_tensor *weight, int nd,
                              const int64_t *out_shape, pt_tensor **out) {
    const int64_t n = pt__tensor_numel(indices), flat[2] = {n, weight->shape[1]};
    pt_tensor *copy = NULL;
    pt_op op;
    pt__op_init(&op, PT_OP_EMBEDDING, weight->dtype, 2);
    pt_status s = pt__index_run(fn, indices, &op.in[1], &copy);
    if (s) return s;
    *out = pt__tensor_new(fn, pt__dev(weight), weight->dtype, nd, out_shape);
    if (!*out) s = pt_last_status();
    if (!s) {
        pt__operand(weight, &op.in[0]);
        pt__operand_packed(*out, 2, flat, &op.out);
        s = pt__run_kind(fn, pt__dev(weight), &op);
    }
    pt_release(copy);
    if (s) {
        pt_release(*out);
        *out = NULL;
    }
    return s;
}

pt_tensor *pt__embedding(const char *fn, pt_tensor *indices, pt_tensor *weight) {
    if (!indices) return pt__null_input(fn, "indices"); /* keeps the error that made it NULL */
    if (!weight) return pt__null_input(fn, "weight");
    if (check(fn, indices, weight)) return NULL;
    const int64_t n = pt__tensor_numel(indices), width = weight->shape[1];
    if (n > 0 && pt__host_visible(pt__dev(weight)) && pt__capture_device() != pt__dev(weight)) {
        char what[96];
        snprintf(what, sizeof what, "weight's %lld rows", (long long)weight->shape[0]);
        if (pt__check_index_values(fn, "index", indices, weight->shape[0], what)) return NULL;
    }
    const int nd = indices->ndim + 1;
    int64_t out_shape[PT_MAX_DIMS];
    memcpy(out_shape, indices->shape, sizeof(int64_t) * (size_t)indices->ndim);
    out_shape[nd - 1] = width;
    pt_tensor *out = NULL;
    if (n > 0 && width > 0 && pt__is_float(weight->dtype)) {
        pt_status s = kind_forward(fn, indices, weight, nd, out_shape, &out);
        if (s && s != PT_ERR_UNSUPPORTED) return NULL;
    } else if (n == 0 || width == 0) {
        out = pt__tensor_new(fn, pt__dev(weight), weight->dtype, nd, out_shape); /* nothing to look up */
        if (!out) return NULL;
    }
    if (!out) { /* refused, or an integer table: the gather records itself */
        pt_scope scope = pt_scope_begin();
        pt_tensor *y = pt_keep(composed(indices, weight, nd, out_shape));
        pt_scope_end(scope);
        if (!y) pt__error_as(fn);
        return y;
    }
    pt_tensor *in[2] = {weight, indices};
    return pt__ret(pt__record(out, PT__G_EMBEDDING, 2, in, &pt__no_grad_args));
}

/* The backward kind on g2 [n, D] into a fresh [rows, D]; PT_ERR_UNSUPPORTED
 * with no error set when the device refuses it. */
static pt_status kind_backward(const char *fn, pt_tensor *g2, pt_tensor *indices, int64_t rows, pt_tensor **out) {
    const int64_t n = g2->shape[0], shape[2] = {rows, g2->shape[1]}, scratch_shape[2] = {2, n};
    pt_tensor *copy = NULL, *scratch = NULL;
    pt_op op;
    pt__op_init(&op, PT_OP_EMBEDDING_BACKWARD, g2->dtype, 2);
    pt_status s = pt__index_run(fn, indices, &op.in[1], &copy);
    if (s) return s;
    *out = pt__tensor_new(fn, pt__dev(g2), g2->dtype, 2, shape);
    scratch = *out ? pt__tensor_new(fn, pt__dev(g2), PT_I64, 2, scratch_shape) : NULL;
    if (!scratch) s = pt_last_status();
    if (!s) {
        pt__operand(g2, &op.in[0]);
        pt__operand(*out, &op.out);
        op.n_extra = 1;
        memset(op.extra, 0, sizeof op.extra);
        pt__operand(scratch, &op.extra[PT_EMB_X_SCRATCH]);
        s = pt__run_kind(fn, pt__dev(g2), &op);
    }
    pt_release(scratch);
    pt_release(copy);
    if (s) {
        pt_release(*out);
        *out = NULL;
    }
    return s;
}

pt_tensor *pt__embedding_backward(const char *fn, pt_tensor *g, pt_tensor *indices, int64_t rows) {
    const int64_t n = pt__tensor_numel(indices), width = g->shape[g->ndim - 1];
    const int64_t shape[2] = {rows, width}, flat[2] = {n, width};
    if (n == 0 || width == 0 || rows == 0) return pt_zeros(pt__dev(g), g->dtype, 2, shape);
    pt_scope scope = pt_scope_begin();
    pt_tensor *g2 = pt_reshape(pt_contiguous(g), 2, flat), *out = NULL;
    pt_status s = g2 ? kind_backward(fn, g2, indices, rows, &out) : pt_last_status();
    if (s == PT_ERR_UNSUPPORTED) { /* the one-hot product; in a scope, so its temporaries go */
        const int64_t col[1] = {n};
        pt_tensor *hot = pt_one_hot(pt_reshape(pt_contiguous(indices), 1, col), rows, g->dtype);
        out = pt_keep(pt_matmul(pt_transpose(hot, 0, 1), g2));
    } else if (out) {
        out = pt_keep(pt__ret(out));
    }
    pt_scope_end(scope);
    if (!out) pt__error_as(fn);
    return out;
}
