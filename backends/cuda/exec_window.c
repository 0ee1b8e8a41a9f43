/* libportable CUDA backend — the WINDOW kinds (backend.h): IM2COL and
 * COL2IM (image [n, c, h, w], columns [n, c, kh, kw, oh, ow]) and the max
 * pools, as launch records for kernels_window.cu. The convolution (exec_conv.c)
 * runs its im2col and col2im through here too. */
#include <string.h>

#include "internal.h"

/* The launch fields both window families share: the image [n, c, h, w]
 * (its strides), the kernel, the window grid and the op's window numbers. */
static void window_launch_init(ptcu_window_launch *l, ptcu_device *d, const pt_op *op, const pt_operand *img,
                               const int64_t *kernel, const int64_t *grid) {
    memset(l, 0, sizeof *l);
    l->kind = op->kind;
    l->dtype = op->dtype;
    l->in = ptcu_operand_ptr(&op->in[0]);
    l->out = ptcu_operand_ptr(&op->out);
    l->n = img->shape[0];
    l->c = img->shape[1];
    l->h = img->shape[2];
    l->w = img->shape[3];
    l->kh = kernel[0];
    l->kw = kernel[1];
    l->oh = grid[0];
    l->ow = grid[1];
    for (int k = 0; k < 4; ++k) l->xs[k] = img->strides[k];
    for (int k = 0; k < 6; ++k) l->window[k] = op->window[k];
    l->sm_count = d->sm_count;
}

/* The max pools: image [n, c, h, w] and windows [n, c, oh, ow]; the kernel
 * from op->kernel. */
static pt_status run_max_pool(ptcu_device *d, const pt_op *op) {
    const bool unpool = op->kind == PT_OP_MAX_UNPOOL2D;
    const pt_operand *img = unpool ? &op->out : &op->in[0], *win = unpool ? &op->in[0] : &op->out;
    ptcu_window_launch l;
    window_launch_init(&l, d, op, img, op->kernel, win->shape + 2);
    l.index = unpool ? ptcu_operand_ptr(&op->in[1]) : NULL;
    return ptcu_launch_error(ptcu_launch_window(&l, ptcu_stream(d)), op);
}

/* IM2COL / COL2IM: image [n, c, h, w] and columns [n, c, kh, kw, oh, ow]. */
pt_status ptcu_window(ptcu_device *d, const pt_op *op) {
    if (op->kind != PT_OP_IM2COL && op->kind != PT_OP_COL2IM) return run_max_pool(d, op);
    const bool im2col = op->kind == PT_OP_IM2COL;
    const pt_operand *img = im2col ? &op->in[0] : &op->out, *col = im2col ? &op->out : &op->in[0];
    ptcu_window_launch l;
    window_launch_init(&l, d, op, img, col->shape + 2, col->shape + 4);
    l.pad = op->scalar;
    return ptcu_launch_error(ptcu_launch_window(&l, ptcu_stream(d)), op);
}

