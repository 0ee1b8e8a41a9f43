/* Sliding-window ops: pt_im2col and its adjoint pt_col2im, the two backend
 * kinds (WINDOW family) that convolutions and poolings are built from.
 *
 * im2col lays every window of an NCHW image out as [N, C, KH, KW, OH, OW],
 * so a convolution is one batched GEMM on the backend's BLAS (conv.c) and a
 * pooling one reduction over the KH*KW axis. col2im sums the columns back
 * into the image: it is im2col's gradient, and im2col is col2im's. */
#include <math.h>
#include <string.h>

#include "ops/ops_internal.h"

/* The output extent of one spatial dim, or < 1 when the window does not fit
 * (a window spanning more than int64 holds fits no image). in is a tensor
 * extent (< 2^62) and p, d <= 2^30 (check_int_range), so only the span's
 * product can overflow. */
static int64_t out_extent(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
    int64_t span;
    if (__builtin_mul_overflow(d, k - 1, &span) || span > in + 2 * p - 1) return 0;
    span += 1;
    return (in + 2 * p - span) / s + 1;
}

/* Validates w (kernel >= 1 unless kernel_from_shape, stride >= 1, padding
 * >= 0, dilation >= 1) and names fn and the values in the error. */
static pt_status check_window(const char *fn, const pt_window2d *w) {
    if (!w) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "window is NULL");
    for (int i = 0; i < 2; ++i) {
        if (w->kernel[i] < 1 || w->stride[i] < 1 || w->padding[i] < 0 || w->dilation[i] < 1)
            return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                             "window kernel [%lld, %lld], stride [%lld, %lld], padding [%lld, %lld], "
                             "dilation [%lld, %lld]: kernel, stride and dilation must be >= 1 and "
                             "padding >= 0",
                             (long long)w->kernel[0], (long long)w->kernel[1], (long long)w->stride[0],
                             (long long)w->stride[1], (long long)w->padding[0], (long long)w->padding[1],
                             (long long)w->dilation[0], (long long)w->dilation[1]);
    }
    return PT_OK;
}

/* (OH, OW) of an H x W image under w, or an error naming fn and the sizes. */
static pt_status out_size(const char *fn, int64_t h, int64_t wd, const pt_window2d *w, int64_t *oh,
                          int64_t *ow) {
    *oh = out_extent(h, w->kernel[0], w->stride[0], w->padding[0], w->dilation[0]);
    *ow = out_extent(wd, w->kernel[1], w->stride[1], w->padding[1], w->dilation[1]);
    if (h < 1 || wd < 1 || *oh < 1 || *ow < 1)
        return pt__error(PT_ERR_SHAPE, fn,
                         "a %lldx%lld image with padding [%lld, %lld] is smaller than the window "
                         "(kernel [%lld, %lld], dilation [%lld, %lld]); pad more or use a smaller kernel",
                         (long long)h, (long long)wd, (long long)w->padding[0], (long long)w->padding[1],
                         (long long)w->kernel[0], (long long)w->kernel[1], (long long)w->dilation[0],
                         (long long)w->dilation[1]);
    return PT_OK;
}

/* The six numbers after the kernel, in the order backend.h gives
 * pt_op.window and the tape keeps them: stride h, w; pad h, w; dilation h, w. */
static void window_six(const pt_window2d *w, int64_t six[6]) {
    const int64_t v[6] = {w->stride[0], w->stride[1], w->padding[0], w->padding[1], w->dilation[0], w->dilation[1]};
    memcpy(six, v, sizeof v);
}

static void window_args(const pt_window2d *w, pt__grad_args *a) {
    int64_t six[6];
    window_six(w, six);
    *a = pt__no_grad_args;
    a->n_ints = 6;
    for (int i = 0; i < 6; ++i) a->ints[i] = (int)six[i]; /* in int range: check_int_range */
}

static void window_op(pt_op *op, pt_op_kind kind, pt_dtype t, const pt_window2d *w) {
    pt__op_init(op, kind, t, 1);
    window_six(w, op->window);
}

/* Window parameters go through the tape as ints (max pooling's kernel
 * too): refuse what does not fit. */
static pt_status check_int_range(const char *fn, const pt_window2d *w) {
    for (int i = 0; i < 2; ++i) {
        if (w->stride[i] > (1 << 30) || w->padding[i] > (1 << 30) || w->dilation[i] > (1 << 30))
            return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                             "stride, padding and dilation must be at most 2^30 (got stride %lld, "
                             "padding %lld, dilation %lld)",
                             (long long)w->stride[i], (long long)w->padding[i], (long long)w->dilation[i]);
        if (w->kernel[i] > (1 << 30))
            return pt__error(PT_ERR_SHAPE, fn, "kernel [%lld, %lld] is larger than 2^30 in dim %d",
                             (long long)w->kernel[0], (long long)w->kernel[1], i);
    }
    return PT_OK;
}

static pt_status check_image(const char *fn, const char *what, pt_tensor *x, int ndim) {
    if (x->ndim != ndim) {
        char s[PT__SHAPE_STR_CAP];
        return pt__error(PT_ERR_SHAPE, fn, "%s has shape %s; it must be %d-D (%s)", what,
                         pt__shape_str(x->ndim, x->shape, s, sizeof s), ndim,
                         ndim == 4 ? "N, C, H, W" : "N, C, KH, KW, OH, OW");
    }
    return pt__check_op_dtype(fn, ndim == 4 ? PT_OP_IM2COL : PT_OP_COL2IM, x->dtype);
}

pt_tensor *pt__im2col_raw(const char *fn, pt_tensor *x, const pt_window2d *w, double pad_value) {
    if (check_window(fn, w) || check_int_range(fn, w) || check_image(fn, "x", x, 4)) return NULL;
    int64_t oh, ow;
    if (out_size(fn, x->shape[2], x->shape[3], w, &oh, &ow)) return NULL;
    int64_t shape[6] = {x->shape[0], x->shape[1], w->kernel[0], w->kernel[1], oh, ow};
    pt_tensor *out = pt__tensor_new(fn, pt__dev(x), x->dtype, 6, shape);
    if (!out || pt__tensor_numel(out) == 0) return out;
    pt_op op;
    window_op(&op, PT_OP_IM2COL, x->dtype, w);
    op.scalar = pad_value;
    pt__operand(x, &op.in[0]);
    pt__operand(out, &op.out);
    return pt__result_or_release(pt__execute(fn, pt__dev(x), &op), out);
}

pt_tensor *pt_im2col(pt_tensor *x, const pt_window2d *w, double pad_value) {
    static const char fn[] = "pt_im2col";
    if (!x) return pt__null_input("pt_im2col", "x");
    if (isnan(pad_value)) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "pad_value is NaN; pass 0 or -INFINITY");
        return NULL;
    }
    pt_tensor *out = pt__im2col_raw(fn, x, w, pad_value);
    pt__grad_args args;
    if (out) window_args(w, &args);
    return pt__ret(out ? pt__record(out, PT__G_IM2COL, 1, &x, &args) : NULL);
}

pt_tensor *pt_col2im(pt_tensor *col, const pt_window2d *w, int64_t height, int64_t width) {
    static const char fn[] = "pt_col2im";
    if (!col) return pt__null_input("pt_col2im", "col");
    if (check_window(fn, w) || check_int_range(fn, w) || check_image(fn, "col", col, 6)) return NULL;
    int64_t oh, ow;
    if (out_size(fn, height, width, w, &oh, &ow)) return NULL;
    const int64_t *cs = col->shape;
    if (cs[2] != w->kernel[0] || cs[3] != w->kernel[1] || cs[4] != oh || cs[5] != ow) {
        char s[PT__SHAPE_STR_CAP];
        pt__error(PT_ERR_SHAPE, fn,
                  "col has shape %s but a %lldx%lld image under kernel [%lld, %lld] has windows "
                  "[.., .., %lld, %lld, %lld, %lld]",
                  pt__shape_str(6, cs, s, sizeof s), (long long)height, (long long)width,
                  (long long)w->kernel[0], (long long)w->kernel[1], (long long)w->kernel[0],
                  (long long)w->kernel[1], (long long)oh, (long long)ow);
        return NULL;
    }
    int64_t shape[4] = {cs[0], cs[1], height, width};
    pt_tensor *out = pt__tensor_new(fn, pt__dev(col), col->dtype, 4, shape);
    if (out && pt__tensor_numel(out) > 0) {
        pt_tensor *src = col, *copy = NULL;
        if (!pt__is_contiguous(col)) {
            copy = pt__copy_new(fn, col, col->dtype, 6, cs);
            src = copy;
        }
        pt_status s = src ? PT_OK : pt_last_status();
        if (!s) {
            pt_op op;
            window_op(&op, PT_OP_COL2IM, col->dtype, w);
            pt__operand(src, &op.in[0]);
            pt__operand(out, &op.out);
            s = pt__execute(fn, pt__dev(col), &op);
        }
        pt_release(copy);
        out = pt__result_or_release(s, out);
    }
    pt__grad_args args;
    if (out) window_args(w, &args);
    return pt__ret(out ? pt__record(out, PT__G_COL2IM, 1, &col, &args) : NULL);
}

pt_status pt__window_out_size(const char *fn, const pt_window2d *w, int64_t h, int64_t wd, int64_t *oh,
                              int64_t *ow) {
    if (check_window(fn, w) || check_int_range(fn, w)) return pt_last_status();
    return out_size(fn, h, wd, w, oh, ow);
}

void pt__window_op(pt_op *op, pt_op_kind kind, pt_dtype t, const pt_window2d *w) {
    window_op(op, kind, t, w);
    op->kernel[0] = w->kernel[0];
    op->kernel[1] = w->kernel[1];
}

void pt__window_args(const pt_window2d *w, pt__grad_args *a) { window_args(w, a); }

void pt__window_from_args(const pt__grad_args *a, int64_t kh, int64_t kw, pt_window2d *w) {
    *w = (pt_window2d){.kernel = {kh, kw},
                       .stride = {a->ints[0], a->ints[1]},
                       .padding = {a->ints[2], a->ints[3]},
                       .dilation = {a->ints[4], a->ints[5]}};
}
