/* Convolution and pooling, composed from pt_im2col (window.c) and ops that
 * already run on every backend: a convolution is one batched GEMM of the
 * weights with the image's columns, a pooling one max/mean over the window
 * axis. Their gradients follow from those ops' rules (im2col's is col2im),
 * so nothing here records autograd itself. A device with a convolution
 * library runs conv2d as kinds of its own instead (conv_kinds.c). */
#include <math.h>

#include "ops/ops_internal.h"

static pt_status check_nchw(const char *fn, const char *what, pt_tensor *x) {
    if (x->ndim != 4) {
        char s[PT__SHAPE_STR_CAP];
        return pt__error(PT_ERR_SHAPE, fn, "%s has shape %s; it must be 4-D [N, C, H, W]", what,
                         pt__shape_str(x->ndim, x->shape, s, sizeof s));
    }
    return pt__check_op_dtype(fn, PT_OP_IM2COL, x->dtype);
}

static int64_t or_one(int64_t v) { return v == 0 ? 1 : v; }

/* ---- conv2d ---- */

/* The checks every convolution entry shares, on shapes: xs an image
 * [N, C, H, W], ws a weight [CO, C/groups, KH, KW] of dtypes tx and tw, and
 * the window and groups opts gives (0 in stride, dilation, groups: 1). */
pt_status pt__conv_check_shapes(const char *fn, const int64_t xs[4], const int64_t ws[4], pt_dtype tx, pt_dtype tw,
                                const pt_conv2d_opts *opts, pt_window2d *w, int64_t *groups_out) {
    const pt_conv2d_opts none = {{1, 1}, {0, 0}, {1, 1}, 1};
    if (!opts) opts = &none;
    if (opts->groups < 0)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "groups is %lld; it must be >= 1 (0 means 1)",
                         (long long)opts->groups);
    if (pt__check_op_dtype(fn, PT_OP_IM2COL, tx)) return pt_last_status();
    if (tw != tx)
        return pt__error(PT_ERR_DTYPE, fn, "x is %s but weight is %s; cast them to one dtype with pt_cast()",
                         pt_dtype_name(tx), pt_dtype_name(tw));
    const int64_t groups = or_one(opts->groups), c = xs[1], co = ws[0];
    char a[PT__SHAPE_STR_CAP], b[PT__SHAPE_STR_CAP];
    if (c % groups || co % groups || ws[1] * groups != c)
        return pt__error(PT_ERR_SHAPE, fn,
                         "x %s has %lld channels and weight %s is [out %lld, in/groups %lld, ..] with "
                         "groups %lld: channels and out must be multiples of groups and in/groups * "
                         "groups must equal the channels",
                         pt__shape_str(4, xs, a, sizeof a), (long long)c, pt__shape_str(4, ws, b, sizeof b),
                         (long long)co, (long long)ws[1], (long long)groups);
    *w = (pt_window2d){{ws[2], ws[3]},
                       {or_one(opts->stride[0]), or_one(opts->stride[1])},
                       {opts->padding[0], opts->padding[1]},
                       {or_one(opts->dilation[0]), or_one(opts->dilation[1])}};
    *groups_out = groups;
    return PT_OK;
}

pt_status pt__conv_check(const char *fn, pt_tensor *x, pt_tensor *weight, pt_tensor *bias, const pt_conv2d_opts *opts,
                         pt_window2d *w, int64_t *groups) {
    pt_tensor *all[3] = {x, weight, bias};
    if (pt__check_same_device(fn, bias ? 3 : 2, all)) return pt_last_status();
    if (check_nchw(fn, "x", x) || check_nchw(fn, "weight", weight)) return pt_last_status();
    if (pt__conv_check_shapes(fn, x->shape, weight->shape, x->dtype, weight->dtype, opts, w, groups))
        return pt_last_status();
    char a[PT__SHAPE_STR_CAP];
    if (bias && bias->dtype != x->dtype)
        return pt__error(PT_ERR_DTYPE, fn, "x is %s but bias is %s; cast them to one dtype with pt_cast()",
                         pt_dtype_name(x->dtype), pt_dtype_name(bias->dtype));
    if (bias && (bias->ndim != 1 || bias->shape[0] != weight->shape[0]))
        return pt__error(PT_ERR_SHAPE, fn, "bias has shape %s; it must be [%lld] (one per output channel)",
                         pt__shape_str(bias->ndim, bias->shape, a, sizeof a), (long long)weight->shape[0]);
    return PT_OK;
}

/* im2col and one batched GEMM: what every device runs. */
static pt_tensor *composed(pt_tensor *x, pt_tensor *weight, const pt_window2d *w, int64_t groups) {
    const int64_t n = x->shape[0], co = weight->shape[0];
    const int64_t k = weight->shape[1] * w->kernel[0] * w->kernel[1];
    pt_tensor *col = pt_im2col(x, w, 0.0); /* [N, C, KH, KW, OH, OW] */
    if (!col) return NULL;
    const int64_t oh = col->shape[4], ow = col->shape[5];
    /* [G, CO/G, K] x [N, G, K, OH*OW] -> [N, G, CO/G, OH*OW]: one GEMM per
     * image and group, the weights broadcast over the images. */
    pt_tensor *cols = pt_reshape(col, 4, (int64_t[]){n, groups, k, oh * ow});
    pt_tensor *wm = pt_reshape(weight, 3, (int64_t[]){groups, co / groups, k});
    return pt_reshape(pt_matmul(wm, cols), 4, (int64_t[]){n, co, oh, ow});
}

pt_tensor *pt_f_conv2d(pt_tensor *x, pt_tensor *weight, pt_tensor *bias, const pt_conv2d_opts *opts) {
    static const char fn[] = "pt_f_conv2d";
    if (!x) return pt__null_input(fn, "x");
    if (!weight) return pt__null_input(fn, "weight");
    pt_window2d w;
    int64_t groups;
    if (pt__conv_check(fn, x, weight, bias, opts, &w, &groups)) return NULL;
    pt_tensor *xw[2] = {x, weight};
    /* The device's own convolution where it takes this shape (both passes
     * when training), else the composition every device runs. */
    const bool direct = pt__conv_kinds_run(x, weight, &w, groups, pt__grad_wanted(2, xw));
    pt_scope scope = pt_scope_begin();
    pt_tensor *y = direct ? pt_conv2d_direct(x, weight, opts) : composed(x, weight, &w, groups);
    if (y && bias) y = pt_add(y, pt_reshape(bias, 4, (int64_t[]){1, weight->shape[0], 1, 1}));
    y = pt_keep(y);
    pt_scope_end(scope);
    if (!y) pt__error_as(fn);
    return y;
}

/* ---- Pools ---- */

static pt_status pool_window(const char *fn, const pt_pool2d_opts *o, pt_window2d *w) {
    if (!o) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "opts is NULL; pass at least a kernel size");
    for (int i = 0; i < 2; ++i) {
        const int64_t stride = o->stride[i] == 0 ? o->kernel[i] : o->stride[i];
        if (o->kernel[i] < 1 || stride < 1 || o->padding[i] < 0 || 2 * o->padding[i] > o->kernel[i])
            return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                             "kernel [%lld, %lld], stride [%lld, %lld], padding [%lld, %lld]: the kernel "
                             "must be >= 1, the stride >= 1 (0 means the kernel) and the padding "
                             "between 0 and half the kernel",
                             (long long)o->kernel[0], (long long)o->kernel[1], (long long)o->stride[0],
                             (long long)o->stride[1], (long long)o->padding[0], (long long)o->padding[1]);
        w->kernel[i] = o->kernel[i];
        w->stride[i] = stride;
        w->padding[i] = o->padding[i];
        w->dilation[i] = 1;
    }
    return PT_OK;
}

/* Every window as [N, C, KH*KW, OH, OW], reduced over dim 2; max pooling
 * runs as its own kinds where the device has them. */
static pt_tensor *pool(const char *fn, pt_tensor *x, const pt_pool2d_opts *opts, bool max) {
    if (!x) return pt__null_input(fn, "x");
    pt_window2d w;
    if (pool_window(fn, opts, &w) || check_nchw(fn, "x", x)) return NULL;
    if (max && pt__max_pool2d_kinds_run_on(x)) {
        pt_tensor *y = pt_max_pool2d_window(x, &w); /* max_pool.c */
        if (!y) pt__error_as(fn);
        return y;
    }
    pt_scope scope = pt_scope_begin();
    pt_tensor *col = pt_im2col(x, &w, max ? -INFINITY : 0.0), *y = NULL;
    if (col) {
        const int64_t *s = col->shape;
        pt_tensor *windows = pt_reshape(col, 5, (int64_t[]){s[0], s[1], s[2] * s[3], s[4], s[5]});
        y = max ? pt_max(windows, 2, false) : pt_mean(windows, 2, false);
    }
    y = pt_keep(y);
    pt_scope_end(scope);
    if (!y) pt__error_as(fn);
    return y;
}

pt_tensor *pt_f_max_pool2d(pt_tensor *x, const pt_pool2d_opts *opts) { return pool("pt_f_max_pool2d", x, opts, true); }
pt_tensor *pt_f_avg_pool2d(pt_tensor *x, const pt_pool2d_opts *opts) { return pool("pt_f_avg_pool2d", x, opts, false); }

pt_tensor *pt_adaptive_avg_pool2d(pt_tensor *x, int64_t out_h, int64_t out_w) {
    static const char fn[] = "pt_adaptive_avg_pool2d";
    if (!x) return pt__null_input(fn, "x");
    if (check_nchw(fn, "x", x)) return NULL;
    const int64_t h = x->shape[2], wd = x->shape[3];
    if (h < 1 || wd < 1) { /* no value to average: torch refuses it too */
        pt__error(PT_ERR_SHAPE, fn, "the image is %lldx%lld; adaptive pooling needs at least 1x1",
                  (long long)h, (long long)wd);
        return NULL;
    }
    if (out_h < 1 || out_w < 1 || h % out_h || wd % out_w) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                  "output %lldx%lld from a %lldx%lld image: the output must be >= 1 and divide the "
                  "image (equal blocks); 1x1 always does",
                  (long long)out_h, (long long)out_w, (long long)h, (long long)wd);
        return NULL;
    }
    if (out_h == 1 && out_w == 1) { /* the global average: one mean over H*W */
        pt_scope scope = pt_scope_begin();
        pt_tensor *flat = pt_reshape(x, 3, (int64_t[]){x->shape[0], x->shape[1], h * wd});
        pt_tensor *y = pt_keep(pt_reshape(pt_mean(flat, 2, false), 4, (int64_t[]){x->shape[0], x->shape[1], 1, 1}));
        pt_scope_end(scope);
        return y;
    }
    const pt_pool2d_opts o = {{h / out_h, wd / out_w}, {h / out_h, wd / out_w}, {0, 0}};
    return pool(fn, x, &o, false);
}
