/* Convolution as backend kinds of its own (backend.h CONV: CONV2D,
 * CONV2D_BWD_DATA, CONV2D_BWD_WEIGHT), for devices with a convolution
 * library (the cpu backend's oneDNN). One call per pass, where the composed
 * path (conv.c) writes every window out with im2col and multiplies it with
 * a GEMM. A device without the kinds, or one that refuses a shape, leaves
 * pt_f_conv2d on the composed path: pt__conv_kinds_run asks first, per call,
 * with the real shapes.
 *
 * Recording saves x and the weight: the backward pass is the two adjoint
 * kinds, each a single call. */
#include <string.h>

#include "ops/ops_internal.h"

/* A contiguous 4-D operand with no buffer: what supports() is asked with
 * before anything is allocated. */
static void shape_operand(pt_dtype t, const int64_t s[4], pt_operand *o) {
    memset(o, 0, sizeof *o);
    o->dtype = t;
    o->ndim = 4;
    for (int k = 3, step = 1; k >= 0; step *= (int)(s[k] ? s[k] : 1), --k) {
        o->shape[k] = s[k];
        o->strides[k] = step;
    }
}

static void conv_op(pt_op *op, pt_op_kind kind, pt_dtype t, const pt_window2d *w, int64_t groups,
                    const int64_t a[4], const int64_t b[4], const int64_t out[4]) {
    pt__window_op(op, kind, t, w);
    op->n_inputs = 2;
    op->count = groups;
    shape_operand(t, a, &op->in[0]);
    shape_operand(t, b, &op->in[1]);
    shape_operand(t, out, &op->out);
}

/* The shapes of x, y = conv(x), g and the weight under w. */
typedef struct conv_shapes {
    int64_t x[4], weight[4], y[4];
} conv_shapes;

static pt_status shapes_of(const char *fn, const int64_t x[4], const int64_t weight[4], const pt_window2d *w,
                           conv_shapes *s) {
    memcpy(s->x, x, sizeof s->x);
    memcpy(s->weight, weight, sizeof s->weight);
    s->y[0] = x[0];
    s->y[1] = weight[0];
    return pt__window_out_size(fn, w, x[2], x[3], &s->y[2], &s->y[3]);
}

bool pt__conv_kinds_run(pt_tensor *x, pt_tensor *weight, const pt_window2d *w, int64_t groups, bool grad) {
    static const char fn[] = "pt_f_conv2d";
    conv_shapes s;
    if (pt__tensor_numel(x) == 0 || pt__tensor_numel(weight) == 0 || shapes_of(fn, x->shape, weight->shape, w, &s)) {
        pt_clear_error();
        return false;
    }
    pt_op ops[3];
    conv_op(&ops[0], PT_OP_CONV2D, x->dtype, w, groups, s.x, s.weight, s.y);
    conv_op(&ops[1], PT_OP_CONV2D_BWD_DATA, x->dtype, w, groups, s.y, s.weight, s.x);
    conv_op(&ops[2], PT_OP_CONV2D_BWD_WEIGHT, x->dtype, w, groups, s.x, s.y, s.weight);
    for (int k = 0; k < (grad ? 3 : 1); ++k)
        if (pt__supports_call(fn, pt__dev(x), &ops[k]) != PT_OK) {
            pt_clear_error();
            return false;
        }
    return true;
}

/* kind on a and b (contiguous copies where they are views) into a fresh
 * tensor of shape out_shape; zeros when a or b is empty (a sum of nothing). */
static pt_tensor *conv_raw(const char *fn, pt_op_kind kind, pt_tensor *a, pt_tensor *b, const int64_t out_shape[4],
                           const pt_window2d *w, int64_t groups) {
    pt_tensor *out = pt__tensor_new(fn, pt__dev(a), a->dtype, 4, out_shape);
    if (!out || pt__tensor_numel(out) == 0) return out;
    if (pt__tensor_numel(a) == 0 || pt__tensor_numel(b) == 0)
        return pt__result_or_release(pt__fill(fn, out, 0.0), out);
    pt_tensor *in[2] = {a, b}, *copy[2] = {NULL, NULL};
    pt_status s = PT_OK;
    for (int k = 0; k < 2 && !s; ++k)
        if (!pt__is_contiguous(in[k]) && !(in[k] = copy[k] = pt__copy_new(fn, in[k], in[k]->dtype, 4, in[k]->shape)))
            s = pt_last_status();
    if (!s) {
        pt_op op;
        conv_op(&op, kind, a->dtype, w, groups, a->shape, b->shape, out_shape);
        pt__operand(in[0], &op.in[0]);
        pt__operand(in[1], &op.in[1]);
        pt__operand(out, &op.out);
        s = pt__execute(fn, pt__dev(a), &op);
    }
    pt_release(copy[0]);
    pt_release(copy[1]);
    return pt__result_or_release(s, out);
}

/* The tape keeps the window as im2col's (ints[0..5]) and groups (ints[6]). */
static void conv_args(const pt_window2d *w, int64_t groups, pt__grad_args *a) {
    pt__window_args(w, a);
    a->n_ints = 7;
    a->ints[6] = (int)groups;
}

pt_tensor *pt_conv2d_direct(pt_tensor *x, pt_tensor *weight, const pt_conv2d_opts *opts) {
    static const char fn[] = "pt_conv2d_direct";
    if (!x) return pt__null_input(fn, "x");
    if (!weight) return pt__null_input(fn, "weight");
    pt_window2d w;
    int64_t groups;
    conv_shapes s;
    if (pt__conv_check(fn, x, weight, NULL, opts, &w, &groups) || shapes_of(fn, x->shape, weight->shape, &w, &s))
        return NULL;
    pt_tensor *y = conv_raw(fn, PT_OP_CONV2D, x, weight, s.y, &w, groups);
    pt__grad_args args;
    conv_args(&w, groups, &args);
    pt_tensor *in[2] = {x, weight};
    return pt__ret(pt__record(y, PT__G_CONV2D, 2, in, &args));
}

/* g must be [N, CO, OH, OW] of an image of shape x under the weight. */
static pt_status check_g(const char *fn, pt_tensor *g, const conv_shapes *s) {
    bool same = g->ndim == 4;
    for (int k = 0; k < 4 && same; ++k) same = g->shape[k] == s->y[k];
    if (same) return PT_OK;
    char a[PT__SHAPE_STR_CAP], b[PT__SHAPE_STR_CAP];
    return pt__error(PT_ERR_SHAPE, fn, "g has shape %s; the convolution's output is %s: pass the gradient of that output",
                     pt__shape_str(g->ndim, g->shape, a, sizeof a), pt__shape_str(4, s->y, b, sizeof b));
}

static pt_status check_4d(const char *fn, const char *what, const char *layout, pt_tensor *t) {
    if (t->ndim == 4) return PT_OK;
    char a[PT__SHAPE_STR_CAP];
    return pt__error(PT_ERR_SHAPE, fn, "%s has shape %s; it must be 4-D %s", what,
                     pt__shape_str(t->ndim, t->shape, a, sizeof a), layout);
}

static int64_t groups_of(const pt_conv2d_opts *opts) { return opts && opts->groups > 0 ? opts->groups : 1; }

/* a and b 4-D (named an, bn, laid out as al, bl) and on one device. */
static pt_status check_pair(const char *fn, pt_tensor *a, const char *an, const char *al, pt_tensor *b,
                            const char *bn, const char *bl) {
    if (!a || !b) { /* named, or the pending error kept */
        pt__null_input(fn, a ? bn : an);
        return PT_ERR_INVALID_ARGUMENT;
    }
    pt_tensor *both[2] = {a, b};
    if (pt__check_same_device(fn, 2, both) || check_4d(fn, an, al, a) || check_4d(fn, bn, bl, b))
        return pt_last_status();
    return PT_OK;
}

/* An adjoint of the convolution of an image of shape xs with a weight of
 * shape ws: g must be its output's gradient; kind runs on a and b into a
 * tensor of x's shape (BWD_DATA) or the weight's (BWD_WEIGHT). */
static pt_tensor *adjoint(const char *fn, pt_op_kind kind, pt_tensor *a, pt_tensor *b, pt_tensor *g,
                          const int64_t xs[4], const int64_t ws[4], const pt_conv2d_opts *opts) {
    pt_window2d w;
    int64_t groups;
    conv_shapes s;
    if (pt__conv_check_shapes(fn, xs, ws, a->dtype, b->dtype, opts, &w, &groups) || shapes_of(fn, xs, ws, &w, &s) ||
        check_g(fn, g, &s))
        return NULL;
    return pt__ret(conv_raw(fn, kind, a, b, kind == PT_OP_CONV2D_BWD_DATA ? s.x : s.weight, &w, groups));
}

pt_tensor *pt_conv2d_backward_data(pt_tensor *g, pt_tensor *weight, const pt_conv2d_opts *opts, int64_t height,
                                   int64_t width) {
    static const char fn[] = "pt_conv2d_backward_data";
    if (check_pair(fn, g, "g", "[N, CO, OH, OW]", weight, "weight", "[CO, C/groups, KH, KW]")) return NULL;
    /* The image whose convolution g is the gradient of. */
    const int64_t xshape[4] = {g->shape[0], weight->shape[1] * groups_of(opts), height, width};
    return adjoint(fn, PT_OP_CONV2D_BWD_DATA, g, weight, g, xshape, weight->shape, opts);
}

pt_tensor *pt_conv2d_backward_weight(pt_tensor *x, pt_tensor *g, const pt_conv2d_opts *opts, int64_t kernel_h,
                                     int64_t kernel_w) {
    static const char fn[] = "pt_conv2d_backward_weight";
    if (check_pair(fn, x, "x", "[N, C, H, W]", g, "g", "[N, CO, OH, OW]")) return NULL;
    /* The weight g's convolution had (C/groups rounded down: a C that groups
     * does not divide fails the channel check, naming both). */
    const int64_t wshape[4] = {g->shape[1], x->shape[1] / groups_of(opts), kernel_h, kernel_w};
    return adjoint(fn, PT_OP_CONV2D_BWD_WEIGHT, x, g, g, x->shape, wshape, opts);
}
