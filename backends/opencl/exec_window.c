/* libportable OpenCL backend — the WINDOW kinds (backend.h): IM2COL,
 * COL2IM, MAX_POOL2D, MAX_POOL2D_INDEX and MAX_UNPOOL2D of window.cl, one
 * work item per output element (on CPU devices all but col2im run one per
 * row of outputs). The convolution (exec_conv.c) runs its im2col and
 * col2im through here too. */
#include "internal.h"

/* What every window kernel takes, held where the argument list can point
 * at it: out and its offset, the input and its offset, the image's strides
 * and channels (for the kernels that read the image: im2col and the max
 * pools), then H, W, KH, KW, OH, OW and the six window numbers. A kernel's
 * own arguments (im2col's pad, the unpool's index) come after those, then
 * the item count n. */
typedef struct ocl_window {
    cl_mem out, in;
    cl_long oo, io, xs[4], c, h, w, k[2], o[2], win[6], n;
} ocl_window;

/* img: the [N, C, H, W] side; kernel and grid: KH, KW and OH, OW. */
static pt_status ocl_window_init(const pt_op *op, const pt_operand *img, const int64_t *kernel,
                                 const int64_t *grid, ocl_window *g) {
    pt_status s;
    if ((s = ocl_elem_offset(&op->out, &g->oo)) != PT_OK || (s = ocl_elem_offset(&op->in[0], &g->io)) != PT_OK)
        return s;
    g->out = (cl_mem)op->out.buf;
    g->in = (cl_mem)op->in[0].buf;
    for (int i = 0; i < 4; ++i) g->xs[i] = img->strides[i];
    g->c = img->shape[1];
    g->h = img->shape[2];
    g->w = img->shape[3];
    for (int i = 0; i < 2; ++i) {
        g->k[i] = kernel[i];
        g->o[i] = grid[i];
    }
    for (int i = 0; i < 6; ++i) g->win[i] = op->window[i];
    g->n = ocl_numel(&op->out);
    return PT_OK;
}

/* Writes the shared arguments into args (room for 22) and returns how many. */
static int ocl_window_args(const ocl_window *g, bool reads_image, ocl_arg *args) {
    int na = 0;
    args[na++] = (ocl_arg)OCL_ARG(g->out);
    args[na++] = (ocl_arg)OCL_ARG(g->oo);
    args[na++] = (ocl_arg)OCL_ARG(g->in);
    args[na++] = (ocl_arg)OCL_ARG(g->io);
    if (reads_image) {
        for (int i = 0; i < 4; ++i) args[na++] = (ocl_arg)OCL_ARG(g->xs[i]);
        args[na++] = (ocl_arg)OCL_ARG(g->c);
    }
    args[na++] = (ocl_arg)OCL_ARG(g->h);
    args[na++] = (ocl_arg)OCL_ARG(g->w);
    for (int i = 0; i < 2; ++i) args[na++] = (ocl_arg)OCL_ARG(g->k[i]);
    for (int i = 0; i < 2; ++i) args[na++] = (ocl_arg)OCL_ARG(g->o[i]);
    for (int i = 0; i < 6; ++i) args[na++] = (ocl_arg)OCL_ARG(g->win[i]);
    return na;
}

/* The largest OH * OW that im2col_rows takes a plane at a time: past it a
 * plane's work is enough for an item row by row, and large planes are few
 * (a first layer's 3 channels x 9 taps), too few items for a CPU's cores. */
#define OCL_IM2COL_PLANE_MAX 256

/* IM2COL, COL2IM (columns [N, C, KH, KW, OH, OW]), MAX_POOL2D and
 * MAX_POOL2D_INDEX (one item per window), MAX_UNPOOL2D (one per image
 * element: a gather through the indices, no atomics). */
pt_status ocl_window_run(ocl_device *d, const pt_op *op) {
    const bool im2col = op->kind == PT_OP_IM2COL, col2im = op->kind == PT_OP_COL2IM;
    const bool unpool = op->kind == PT_OP_MAX_UNPOOL2D;
    const bool image_out = col2im || unpool; /* the image is the output, else the input */
    const pt_operand *img = image_out ? &op->out : &op->in[0], *other = image_out ? &op->in[0] : &op->out;
    const ocl_kernel_id id = im2col                         ? OCL_K_IM2COL
                             : col2im                       ? OCL_K_COL2IM
                             : op->kind == PT_OP_MAX_POOL2D ? OCL_K_MAX_POOL2D
                             : unpool                       ? OCL_K_MAX_UNPOOL2D
                                                            : OCL_K_MAX_POOL2D_INDEX;
    const char *name = pt_op_name(op->kind);
    ocl_window g;
    const bool columns = im2col || col2im;
    pt_status s = ocl_window_init(op, img, columns ? other->shape + 2 : op->kernel, other->shape + (columns ? 4 : 2),
                                  &g);
    if (s != PT_OK) return s;
    /* On CPU devices im2col, the pools and the unpool run a work item per
     * row of outputs (window.cl): of OW columns, or W for the unpool. */
    const int64_t row = unpool ? g.w : g.o[1];
    const bool rows = !col2im && d->cpu_forms && row > 0;
    cl_kernel k;
    size_t wg;
    if ((s = ocl_kernel_variant(d, op->dtype, id, rows ? OCL_ROWS : OCL_GENERAL, &k, &wg)) != PT_OK) return s;
    ocl_arg args[24];
    int na = ocl_window_args(&g, !image_out, args);
    ocl_scalar pad;
    cl_mem index;
    cl_long jo = 0;
    if (im2col) {
        pad = ocl_make_scalar(op->dtype, op->scalar);
        args[na++] = (ocl_arg){pad.size, &pad.v};
    } else if (unpool) {
        if ((s = ocl_elem_offset(&op->in[1], &jo)) != PT_OK) return s;
        index = (cl_mem)op->in[1].buf;
        args[na++] = (ocl_arg)OCL_ARG(index);
        args[na++] = (ocl_arg)OCL_ARG(jo);
    }
    args[na++] = (ocl_arg)OCL_ARG(g.n);
    /* im2col_rows: a plane (OH rows) an item where planes are small, else a row */
    const cl_long plane_rows = im2col && rows && g.o[0] * g.o[1] <= OCL_IM2COL_PLANE_MAX ? g.o[0] : 1;
    if (im2col && rows) args[na++] = (ocl_arg)OCL_ARG(plane_rows);
    if ((s = ocl_set_args(d, k, name, na, args)) != PT_OK) return s;
    return ocl_launch_items(d, k, name, wg, rows ? g.n / row / plane_rows : g.n);
}

