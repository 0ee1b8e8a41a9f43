/* Per-channel statistics: pt_channel_stats, the mean and biased variance
 * batch normalisation trains with. A device with the CHANNEL_STATS kind
 * (backend.h NORM) computes both in one call; elsewhere they are composed
 * from reductions and element-wise ops (four full-size passes, in f32 for
 * 16-bit x), decided per call by the device's answer.
 *
 * Recording saves x and the result: the backward pass is one multiply and
 * one add over x's size (see the rule in core/autograd/rules.c). */
#include "ops/ops_internal.h"

/* x viewed as [N, C, L]: L is the product of the dims after C (1 if none). */
static void nCL(const pt_tensor *x, int64_t s[3]) {
    s[0] = x->shape[0];
    s[1] = x->shape[1];
    s[2] = pt__numel(x->ndim - 2, x->shape + 2);
}

/* The fused kind on x3 ([N, C, L], any strides) into *out, a fresh [2, C];
 * PT_ERR_UNSUPPORTED with no error set when the device refuses it. Sent
 * without asking first, so the conformance suite's coverage sees the kind
 * reach every backend, and a 16-bit x reaches pt__execute, which computes
 * it in f32 where the device has no 16-bit kernel. */
static pt_status stats_kind(const char *fn, pt_tensor *x3, pt_tensor **out) {
    /* While this thread captures a graph on the device, ask first: a kind
     * the device refuses inside a capture refuses the whole capture, and
     * this one has another way (the caller composes it). */
    if (pt__capture_device() == pt__dev(x3) &&
        pt_device_supports(pt__dev(x3), PT_OP_CHANNEL_STATS, x3->dtype) != PT_OK) {
        pt_clear_error();
        *out = NULL;
        return PT_ERR_UNSUPPORTED;
    }
    const int64_t out_shape[2] = {2, x3->shape[1]};
    *out = pt__tensor_new(fn, pt__dev(x3), x3->dtype, 2, out_shape);
    if (!*out) return pt_last_status();
    pt_op op;
    pt__probe_op(PT_OP_CHANNEL_STATS, x3->dtype, &op);
    pt__operand(x3, &op.in[0]);
    pt__operand(*out, &op.out);
    pt_status st = pt__execute(fn, pt__dev(x3), &op);
    if (st != PT_OK) {
        pt_release(*out);
        *out = NULL;
    }
    if (st == PT_ERR_UNSUPPORTED) pt_clear_error();
    return st;
}

/* The same two rows from public ops (each records itself); called in a
 * scope. NULL x3 (a failed reshape or cast) passes its error through. */
static pt_tensor *stats_composed(pt_tensor *x3) {
    if (!x3) return NULL;
    const int64_t c = x3->shape[1];
    pt_tensor *mean = pt_mean(pt_mean(x3, 2, true), 0, true); /* equal groups: the mean of means */
    pt_tensor *d = pt_sub(x3, mean);
    pt_tensor *var = pt_mean(pt_mean(pt_mul(d, d), 2, true), 0, true);
    pt_tensor *rows[2] = {pt_reshape(mean, 2, (int64_t[]){1, c}), pt_reshape(var, 2, (int64_t[]){1, c})};
    return rows[0] && rows[1] ? pt_cat(2, rows, 0) : NULL;
}

/* x must be [N, C, ...] with N * L >= 1 values per channel. */
static bool shape_ok(const char *fn, const pt_tensor *x, int64_t shape3[3]) {
    char s[PT__SHAPE_STR_CAP];
    if (x->ndim < 2 || x->shape[1] < 1) {
        pt__error(PT_ERR_SHAPE, fn, "x has shape %s; it needs [N, C, ...] with at least one channel",
                  pt__shape_str(x->ndim, x->shape, s, sizeof s));
        return false;
    }
    nCL(x, shape3);
    if (shape3[0] * shape3[2] >= 1) return true;
    pt__error(PT_ERR_SHAPE, fn, "x has shape %s: no values per channel; pass at least one",
              pt__shape_str(x->ndim, x->shape, s, sizeof s));
    return false;
}

pt_status pt__channel_stats_fused(const char *fn, pt_tensor *x, pt_tensor **out) {
    int64_t shape3[3];
    *out = NULL;
    if (!shape_ok(fn, x, shape3)) return pt_last_status();
    pt_tensor *x3 = pt_reshape(x, 3, shape3);
    if (!x3) return pt__error_as(fn);
    pt_status st = stats_kind(fn, x3, out);
    pt_release(x3);
    if (st == PT_OK) pt__record(*out, PT__G_CHANNEL_STATS, 1, &x, &pt__no_grad_args);
    return st;
}

pt_tensor *pt_channel_stats(pt_tensor *x) {
    static const char fn[] = "pt_channel_stats";
    if (!x) return pt__null_input(fn, "x");
    if (!pt__is_float(x->dtype)) {
        pt__dtype_unsupported(fn, x->dtype, PT_F32);
        return NULL;
    }
    pt_tensor *out;
    pt_status st = pt__channel_stats_fused(fn, x, &out);
    if (st == PT_OK) return pt__ret(out);
    if (st != PT_ERR_UNSUPPORTED) return NULL;
    int64_t shape3[3];
    nCL(x, shape3);
    pt_scope scope = pt_scope_begin();
    pt_tensor *x3 = pt_reshape(x, 3, shape3);
    if (pt_dtype_is_half(x->dtype)) /* in f32, rounded once, as a 16-bit kernel would */
        out = pt_keep(pt_cast(stats_composed(pt_cast(x3, PT_F32)), x->dtype));
    else
        out = pt_keep(stats_composed(x3));
    pt_scope_end(scope);
    if (!out) pt__error_as(fn);
    return out;
}
