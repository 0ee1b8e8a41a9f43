/* Max pooling as kinds of its own (backend.h WINDOW: MAX_POOL2D,
 * MAX_POOL2D_INDEX, MAX_UNPOOL2D), the way the field computes it: one pass
 * over each window for the values, one for the index of each window's
 * maximum, and a backward pass that routes the gradient through those
 * indices. Training reads the values through the indices (one gather)
 * instead of a second pass over the windows. Composed from im2col and a max over the window axis, the same
 * pooling wrote every window out and took its gradient through argmax,
 * one_hot, a permuted multiply and col2im, on rows of 2 to 4 elements.
 *
 * Recording saves the indices, not the input (as torch does): the backward
 * pass is one MAX_UNPOOL2D. */
#include "ops/ops_internal.h"

static pt_status check_image(const char *fn, const char *what, pt_tensor *x, pt_op_kind kind) {
    if (x->ndim != 4) {
        char s[PT__SHAPE_STR_CAP];
        return pt__error(PT_ERR_SHAPE, fn, "%s has shape %s; it must be 4-D [N, C, H, W]", what,
                         pt__shape_str(x->ndim, x->shape, s, sizeof s));
    }
    return pt__check_op_dtype(fn, kind, x->dtype);
}

/* MAX_POOL2D or MAX_POOL2D_INDEX of x under w: a fresh tensor, not recorded. */
static pt_tensor *pool_raw(const char *fn, pt_op_kind kind, pt_tensor *x, const pt_window2d *w) {
    if (check_image(fn, "x", x, kind)) return NULL;
    int64_t oh, ow;
    if (pt__window_out_size(fn, w, x->shape[2], x->shape[3], &oh, &ow)) return NULL;
    const int64_t shape[4] = {x->shape[0], x->shape[1], oh, ow};
    pt_tensor *out = pt__tensor_new(fn, pt__dev(x), pt_op_result_dtype(kind, x->dtype), 4, shape);
    if (!out || pt__tensor_numel(out) == 0) return out;
    pt_op op;
    pt__window_op(&op, kind, x->dtype, w);
    pt__operand(x, &op.in[0]);
    pt__operand(out, &op.out);
    return pt__result_or_release(pt__execute(fn, pt__dev(x), &op), out);
}

/* Whether every window of w over an h x wd image has a tap inside it (no
 * window of padding only, whose index is -1): true for every pool
 * pt_f_max_pool2d makes (padding at most half the kernel). */
static bool no_padding_only_window(const pt_window2d *w, const int64_t *in, const int64_t *out) {
    for (int a = 0; a < 2; ++a)
        for (int64_t o = 0; o < out[a]; ++o) {
            bool any = false;
            for (int64_t k = 0; k < w->kernel[a] && !any; ++k) {
                const int64_t p = o * w->stride[a] - w->padding[a] + k * w->dilation[a];
                any = p >= 0 && p < in[a];
            }
            if (!any) return false;
        }
    return true;
}

/* Training needs both the maxima and where they are: rather than a second
 * pass over every window, the values are read through the indices, one
 * GATHER of x seen as [N*C, H*W, 1] (the indices are the pool's own, so
 * pt_gather's checks have nothing to find). *skipped (and NULL) when x's
 * layout does not merge that way or some window is padding only: the
 * caller then runs MAX_POOL2D. */
static pt_tensor *values_at(const char *fn, pt_tensor *x, pt_tensor *index, const pt_window2d *w, bool *skipped) {
    const int64_t *xs = x->strides, *sh = x->shape;
    *skipped = pt__tensor_numel(index) == 0 || xs[0] != sh[1] * xs[1] || xs[2] != sh[3] * xs[3] ||
               !no_padding_only_window(w, sh + 2, index->shape + 2);
    if (*skipped) return NULL;
    pt_tensor *out = pt__tensor_new(fn, pt__dev(x), x->dtype, 4, index->shape);
    if (!out) return NULL;
    const int64_t planes = sh[0] * sh[1], windows = index->shape[2] * index->shape[3];
    pt_op op;
    pt__op_init(&op, PT_OP_GATHER, x->dtype, 2);
    pt__operand(x, &op.in[0]);
    pt__operand(index, &op.in[1]);
    pt__operand(out, &op.out);
    const int64_t xshape[3] = {planes, sh[2] * sh[3], 1}, xstrides[3] = {xs[1], xs[3], 1};
    const int64_t wshape[3] = {planes, windows, 1}, wstrides[3] = {windows, 1, 1};
    op.in[0].ndim = op.in[1].ndim = op.out.ndim = 3;
    for (int k = 0; k < 3; ++k) {
        op.in[0].shape[k] = xshape[k];
        op.in[0].strides[k] = xstrides[k];
        op.in[1].shape[k] = op.out.shape[k] = wshape[k];
        op.in[1].strides[k] = op.out.strides[k] = wstrides[k];
    }
    return pt__result_or_release(pt__execute(fn, pt__dev(x), &op), out);
}

/* The tape keeps the window and its kernel: ints[0..5] as im2col's, ints[6..7]
 * the kernel (window.c checked every value fits an int). */
static void pool_args(const pt_window2d *w, pt__grad_args *a) {
    pt__window_args(w, a);
    a->n_ints = 8;
    a->ints[6] = (int)w->kernel[0];
    a->ints[7] = (int)w->kernel[1];
}

pt_tensor *pt_max_pool2d_window(pt_tensor *x, const pt_window2d *w) {
    static const char fn[] = "pt_max_pool2d_window";
    if (!x) return pt__null_input("pt_max_pool2d_window", "x");
    if (!w) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "w is NULL; pass the window (kernel, stride, padding, dilation)");
        return NULL;
    }
    if (!pt__grad_wanted(1, &x)) return pt__ret(pool_raw(fn, PT_OP_MAX_POOL2D, x, w));
    pt_tensor *index = pool_raw(fn, PT_OP_MAX_POOL2D_INDEX, x, w), *out = NULL;
    bool skipped = false;
    if (index) out = values_at(fn, x, index, w, &skipped);
    if (skipped) out = pool_raw(fn, PT_OP_MAX_POOL2D, x, w);
    if (out) {
        pt__grad_args args;
        pool_args(w, &args);
        pt_tensor *in[2] = {x, index};
        pt__grad_record(out, PT__G_MAX_POOL2D, 2, in, &args);
    }
    pt_release(index); /* the tape holds it */
    return pt__ret(out);
}

pt_tensor *pt_max_pool2d_indices(pt_tensor *x, const pt_window2d *w) {
    static const char fn[] = "pt_max_pool2d_indices";
    if (!x) return pt__null_input(fn, "x");
    if (!w) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "w is NULL; pass the window (kernel, stride, padding, dilation)");
        return NULL;
    }
    return pt__ret(pool_raw("pt_max_pool2d_indices", PT_OP_MAX_POOL2D_INDEX, x, w));
}

/* Whether v (h * W + w) is a tap of window (r, q) inside the image. */
static bool tap_of_window(int64_t v, int64_t r, int64_t q, const pt_window2d *w, int64_t height, int64_t width) {
    if (v < 0 || v >= height * width) return false;
    const int64_t dy = v / width - (r * w->stride[0] - w->padding[0]);
    const int64_t dx = v % width - (q * w->stride[1] - w->padding[1]);
    return dy >= 0 && dx >= 0 && dy % w->dilation[0] == 0 && dx % w->dilation[1] == 0 &&
           dy / w->dilation[0] < w->kernel[0] && dx / w->dilation[1] < w->kernel[1];
}

/* Every index names a tap of its own window, as pt_gather checks its
 * indices: where they are host-visible (waiting for their device first).
 * An accelerator's kernel skips a bad index instead (backend.h). */
static pt_status check_unpool_indices(const char *fn, const pt_tensor *idx, const pt_window2d *w, int64_t height,
                                      int64_t width) {
    /* no host check where the device would have to wait, or during a graph
     * capture (no values yet): the kernel skips a bad index instead */
    if (!pt__host_visible(pt__dev(idx)) || pt__capture_device() == pt__dev(idx)) return PT_OK;
    pt_status s = pt__synchronize(fn, pt__dev(idx));
    if (s) return s;
    const int64_t *base = pt__host_ptr(idx), *sh = idx->shape, *st = idx->strides;
    for (int64_t n = 0; n < sh[0]; ++n)
        for (int64_t c = 0; c < sh[1]; ++c)
            for (int64_t r = 0; r < sh[2]; ++r)
                for (int64_t q = 0; q < sh[3]; ++q) {
                    const int64_t v = base[n * st[0] + c * st[1] + r * st[2] + q * st[3]];
                    if (!tap_of_window(v, r, q, w, height, width))
                        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                                         "indices value %lld at position [%lld, %lld, %lld, %lld] is not a "
                                         "position (h * %lld + w) inside window [%lld, %lld] of the %lldx%lld "
                                         "image; pass the indices pt_max_pool2d_indices gave for this window",
                                         (long long)v, (long long)n, (long long)c, (long long)r, (long long)q,
                                         (long long)width, (long long)r, (long long)q, (long long)height,
                                         (long long)width);
                }
    return PT_OK;
}

static pt_tensor *max_unpool2d(pt_tensor *g, pt_tensor *indices, const pt_window2d *w, int64_t height,
                               int64_t width, bool check_values) {
    static const char fn[] = "pt_max_unpool2d";
    if (!g) return pt__null_input(fn, "g");
    if (!indices) return pt__null_input(fn, "indices");
    if (!w) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "w is NULL; pass the window (kernel, stride, padding, dilation)");
        return NULL;
    }
    pt_tensor *both[2] = {g, indices};
    if (pt__check_same_device(fn, 2, both) || check_image(fn, "g", g, PT_OP_MAX_UNPOOL2D)) return NULL;
    char sg[PT__SHAPE_STR_CAP], si[PT__SHAPE_STR_CAP];
    if (indices->dtype != PT_I64) {
        pt__error(PT_ERR_DTYPE, fn, "indices has dtype %s; it must be i64 (from pt_max_pool2d_indices)",
                  pt_dtype_name(indices->dtype));
        return NULL;
    }
    int64_t oh, ow;
    if (pt__window_out_size(fn, w, height, width, &oh, &ow)) return NULL;
    const int64_t *gs = g->shape;
    bool same = indices->ndim == 4;
    for (int k = 0; k < 4 && same; ++k) same = indices->shape[k] == gs[k];
    if (!same || gs[2] != oh || gs[3] != ow) {
        pt__error(PT_ERR_SHAPE, fn,
                  "g %s and indices %s must both be [N, C, %lld, %lld], the windows of a %lldx%lld "
                  "image under kernel [%lld, %lld]",
                  pt__shape_str(4, gs, sg, sizeof sg), pt__shape_str(indices->ndim, indices->shape, si, sizeof si),
                  (long long)oh, (long long)ow, (long long)height, (long long)width,
                  (long long)w->kernel[0], (long long)w->kernel[1]);
        return NULL;
    }
    if (check_values && check_unpool_indices(fn, indices, w, height, width)) return NULL;
    const int64_t shape[4] = {gs[0], gs[1], height, width};
    pt_tensor *out = pt__tensor_new(fn, pt__dev(g), g->dtype, 4, shape);
    if (!out || pt__tensor_numel(out) == 0) return pt__ret(out);
    pt_tensor *gc = NULL, *ic = NULL; /* contiguous copies where the views are not */
    if (!pt__is_contiguous(g)) gc = pt__copy_new(fn, g, g->dtype, 4, gs);
    if (!pt__is_contiguous(indices)) ic = pt__copy_new(fn, indices, PT_I64, 4, gs);
    pt_status s = (pt__is_contiguous(g) || gc) && (pt__is_contiguous(indices) || ic) ? PT_OK : pt_last_status();
    if (!s) {
        pt_op op;
        pt__window_op(&op, PT_OP_MAX_UNPOOL2D, g->dtype, w);
        op.n_inputs = 2;
        pt__operand(gc ? gc : g, &op.in[0]);
        pt__operand(ic ? ic : indices, &op.in[1]);
        pt__operand(out, &op.out);
        s = pt__execute(fn, pt__dev(g), &op);
    }
    pt_release(gc);
    pt_release(ic);
    return pt__ret(pt__result_or_release(s, out));
}

pt_tensor *pt_max_unpool2d(pt_tensor *g, pt_tensor *indices, const pt_window2d *w, int64_t height,
                           int64_t width) {
    return max_unpool2d(g, indices, w, height, width, true);
}

pt_tensor *pt__max_unpool2d_own_indices(pt_tensor *g, pt_tensor *indices, const pt_window2d *w, int64_t height,
                                        int64_t width) {
    return max_unpool2d(g, indices, w, height, width, false);
}

bool pt__max_pool2d_kinds_run_on(pt_tensor *x) {
    static const pt_op_kind kinds[3] = {PT_OP_MAX_POOL2D, PT_OP_MAX_POOL2D_INDEX, PT_OP_MAX_UNPOOL2D};
    for (int k = 0; k < 3; ++k)
        if (pt_device_supports(pt__dev(x), kinds[k], x->dtype) != PT_OK) {
            pt_clear_error();
            return false;
        }
    return true;
}
