/** @file
 * libportable — a CONV kind (backend.h) lowered to IM2COL / COL2IM and GEMMs,
 * for a plugin that has window kernels and a BLAS but no convolution
 * library: the shape arithmetic, the batch chunking and the GEMM operands,
 * written once for every such plugin (the cuda and opencl plugins).
 *
 * A call runs over chunks of the batch, so its column workspace stays
 * bounded: a chunk of nb images has columns [nb, C, KH, KW, OH, OW], the
 * layout IM2COL writes and COL2IM reads. Per chunk:
 *   CONV2D             im2col(x), then y[n][g] = W[g] cols[n][g]
 *   CONV2D_BWD_DATA    cols[n][g] = W[g]^T g[n][g], then col2im into dx
 *   CONV2D_BWD_WEIGHT  im2col(x), then dW[g] += g[n][g] cols[n][g]^T
 * where W[g] is [CO/G, C/G*KH*KW], cols[n][g] [C/G*KH*KW, OH*OW] and
 * y[n][g], g[n][g] [CO/G, OH*OW]. Every GEMM is row-major C = A B with
 * strided A and B (a transposed operand is a strided view, never a copy),
 * batched over the images of a chunk or over the groups, whichever is more,
 * and looped over the other; dW sums over the images, so its GEMMs batch
 * the groups and each image adds into dW after the first (beta 1), in
 * increasing image order: the same sum on every run.
 *
 * Header only, plain C; plugins include it beside backend.h. Nothing here
 * allocates or calls a device. */
#ifndef PORTABLE_CONV_PLAN_H
#define PORTABLE_CONV_PLAN_H

#include <stdio.h>
#include <string.h>

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Column workspace a plugin should keep a call within: a chunk holds as
 * many images as fit (at least one). */
#define PT_CONV_PLAN_BUDGET ((size_t)256 << 20)

/** The sizes of one CONV call. */
typedef struct pt_conv_plan {
    int64_t n;               /**< images in the batch (x, or dx for BWD_DATA: [n, c, h, w]) */
    int64_t c;               /**< the image's channels */
    int64_t h;               /**< the image's height */
    int64_t w;               /**< the image's width */
    int64_t co;              /**< output channels (the weight is [co, c / groups, kh, kw]) */
    int64_t kh;              /**< the kernel's height */
    int64_t kw;              /**< the kernel's width */
    int64_t oh;              /**< the map's height (y, or g for the adjoints: [n, co, oh, ow]) */
    int64_t ow;              /**< the map's width */
    int64_t groups;          /**< groups (>= 1, dividing c and co) */
    int64_t cg;              /**< input channels per group: c / groups */
    int64_t opg;             /**< output channels per group: co / groups */
    int64_t kdim;            /**< cg * kh * kw: rows of one group's columns */
    int64_t p;               /**< oh * ow: columns of one group's columns */
    int64_t col_image;       /**< c * kh * kw * oh * ow: one image's columns */
} pt_conv_plan;

static inline bool pt_conv_plan_contiguous_4d(const pt_operand *o) {
    if (o->ndim != 4) return false;
    int64_t step = 1;
    for (int k = 3; k >= 0; --k) {
        if (o->shape[k] < 1 || (o->shape[k] > 1 && o->strides[k] != step)) return false;
        step *= o->shape[k];
    }
    return true;
}

/** Fills p from a CONV descriptor; false, with the reason in why, where op
 * is not one backend.h allows (a kind of another family, an operand that is
 * not contiguous 4-D, groups that do not divide, an output that is not the
 * window's): the core never sends such a call, so a plugin refuses it. */
static inline bool pt_conv_plan_of(const pt_op *op, pt_conv_plan *p, char *why, size_t cap) {
    memset(p, 0, sizeof *p);
    const bool data = op->kind == PT_OP_CONV2D_BWD_DATA, weight = op->kind == PT_OP_CONV2D_BWD_WEIGHT;
    if (op->kind != PT_OP_CONV2D && !data && !weight) {
        snprintf(why, cap, "kind %d is not a CONV kind", (int)op->kind);
        return false;
    }
    const pt_operand *x = data ? &op->out : &op->in[0];
    const pt_operand *wt = weight ? &op->out : &op->in[1];
    const pt_operand *map = op->kind == PT_OP_CONV2D ? &op->out : data ? &op->in[0] : &op->in[1];
    if (op->n_inputs != 2 || !pt_conv_plan_contiguous_4d(x) || !pt_conv_plan_contiguous_4d(wt) ||
        !pt_conv_plan_contiguous_4d(map)) {
        snprintf(why, cap, "it needs two inputs and three contiguous 4-D operands with extents >= 1");
        return false;
    }
    if (x->dtype != op->dtype || wt->dtype != op->dtype || map->dtype != op->dtype) {
        snprintf(why, cap, "its operands are not all of the op's dtype %d", (int)op->dtype);
        return false;
    }
    p->n = x->shape[0];
    p->c = x->shape[1];
    p->h = x->shape[2];
    p->w = x->shape[3];
    p->co = wt->shape[0];
    p->kh = wt->shape[2];
    p->kw = wt->shape[3];
    p->oh = map->shape[2];
    p->ow = map->shape[3];
    p->groups = op->count;
    const int64_t *win = op->window;
    for (int k = 0; k < 2; ++k)
        if (win[k] < 1 || win[2 + k] < 0 || win[4 + k] < 1) {
            snprintf(why, cap, "window stride %lld,%lld pad %lld,%lld dilation %lld,%lld: strides and "
                     "dilations must be >= 1, pads >= 0", (long long)win[0], (long long)win[1],
                     (long long)win[2], (long long)win[3], (long long)win[4], (long long)win[5]);
            return false;
        }
    if (p->groups < 1 || p->c % p->groups || p->co % p->groups || wt->shape[1] * p->groups != p->c ||
        map->shape[0] != p->n || map->shape[1] != p->co) {
        snprintf(why, cap, "x [%lld, %lld, ..], weight [%lld, %lld, ..], map [%lld, %lld, ..] and groups %lld "
                 "do not fit together", (long long)p->n, (long long)p->c, (long long)p->co,
                 (long long)wt->shape[1], (long long)map->shape[0], (long long)map->shape[1],
                 (long long)p->groups);
        return false;
    }
    /* The window's reach past its first position, per axis (backend.h WINDOW). */
    const int64_t reach_h = p->h + 2 * win[2] - win[4] * (p->kh - 1) - 1;
    const int64_t reach_w = p->w + 2 * win[3] - win[5] * (p->kw - 1) - 1;
    const int64_t want_h = reach_h < 0 ? 0 : reach_h / win[0] + 1, want_w = reach_w < 0 ? 0 : reach_w / win[1] + 1;
    if (want_h != p->oh || want_w != p->ow) {
        snprintf(why, cap, "the map is %lldx%lld but the window gives %lldx%lld", (long long)p->oh,
                 (long long)p->ow, (long long)want_h, (long long)want_w);
        return false;
    }
    p->cg = p->c / p->groups;
    p->opg = p->co / p->groups;
    p->kdim = p->cg * p->kh * p->kw;
    p->p = p->oh * p->ow;
    p->col_image = p->c * p->kh * p->kw * p->p;
    return true;
}

/** Images per chunk: as many as keep the chunk's columns (elem_size bytes
 * each) within budget bytes, at least 1, at most the batch. */
static inline int64_t pt_conv_plan_chunk(const pt_conv_plan *p, size_t elem_size, size_t budget) {
    const double per_image = (double)p->col_image * (double)elem_size;
    int64_t nb = per_image > 0 ? (int64_t)((double)budget / per_image) : p->n;
    if (nb < 1) nb = 1;
    return nb < p->n ? nb : p->n;
}

/** The IM2COL (CONV2D, BWD_WEIGHT) or COL2IM (BWD_DATA) descriptor of the
 * chunk of cnt images from image n0: between the image operand of conv and
 * the columns at byte offset col_offset of the buffer col_buf (the
 * plugin's own buffer handle, as in a pt_operand). */
static inline void pt_conv_plan_window_op(const pt_op *conv, const pt_conv_plan *p, int64_t n0, int64_t cnt,
                                          void *col_buf, size_t col_offset, pt_op *out) {
    const bool data = conv->kind == PT_OP_CONV2D_BWD_DATA;
    memset(out, 0, sizeof *out);
    out->kind = data ? PT_OP_COL2IM : PT_OP_IM2COL;
    out->dtype = conv->dtype;
    out->n_inputs = 1;
    memcpy(out->window, conv->window, sizeof out->window);
    pt_operand img = data ? conv->out : conv->in[0], col;
    img.shape[0] = cnt;
    img.offset += (size_t)(n0 * p->c * p->h * p->w) * pt_dtype_table_size(conv->dtype);
    memset(&col, 0, sizeof col);
    col.buf = col_buf;
    col.offset = col_offset;
    col.dtype = conv->dtype;
    col.ndim = 6;
    const int64_t shape[6] = {cnt, p->c, p->kh, p->kw, p->oh, p->ow};
    int64_t step = 1;
    for (int k = 5; k >= 0; --k) {
        col.shape[k] = shape[k];
        col.strides[k] = step;
        step *= shape[k];
    }
    out->in[0] = data ? col : img;
    out->out = data ? img : col;
}

/** The buffer a GEMM operand lies in. */
typedef enum pt_conv_buffer {
    PT_CONV_IN0,     /**< the op's in[0] */
    PT_CONV_IN1,     /**< the op's in[1] */
    PT_CONV_OUT,     /**< the op's out */
    PT_CONV_COLUMNS  /**< the chunk's columns [cnt, C, KH, KW, OH, OW] */
} pt_conv_buffer;

/** One GEMM operand: a strided matrix, in elements from the start of its
 * buffer (the operand's element [0, 0, 0, 0], or the chunk's columns'). */
typedef struct pt_conv_matrix {
    pt_conv_buffer buffer; /**< the buffer the matrix lies in */
    int64_t offset;        /**< element [0][0] of image 0, group 0 */
    int64_t row;           /**< elements from one row to the next */
    int64_t col;           /**< elements from one column to the next */
    int64_t image;         /**< elements to the same matrix of the next image */
    int64_t group;         /**< elements to the same matrix of the next group */
} pt_conv_matrix;

/** Row-major c[m, n] = a[m, k] b[k, n] for every image and group of a chunk. */
typedef struct pt_conv_gemm {
    int64_t m;           /**< rows of a and c */
    int64_t n;           /**< columns of b and c */
    int64_t k;           /**< columns of a, rows of b */
    pt_conv_matrix a;    /**< the left operand */
    pt_conv_matrix b;    /**< the right operand */
    pt_conv_matrix c;    /**< the result */
    bool over_images;    /**< batched over the images (looped over the groups), else the reverse */
    bool sums_images;    /**< BWD_WEIGHT: every image adds into c */
    int64_t n0;          /**< the chunk's first image */
    int64_t images;      /**< the chunk's images */
    int64_t groups;      /**< the convolution's groups */
} pt_conv_gemm;

/** The GEMMs of the chunk of cnt images from image n0: CONV2D a = weight
 * (in[1]), b = columns, c = out; BWD_DATA a = weight (in[1], transposed),
 * b = g (in[0]), c = columns; BWD_WEIGHT a = g (in[1]), b = columns
 * (transposed), c = out. c's rows are always n elements apart. */
static inline pt_conv_gemm pt_conv_plan_gemm(const pt_op *conv, const pt_conv_plan *p, int64_t n0, int64_t cnt) {
    const int64_t P = p->p, K = p->kdim, map_image = p->co * P;
    /* W[g] [opg, K]; cols[n][g] [K, P]; map[n][g] [opg, P] (y or g) */
    const bool fwd = conv->kind == PT_OP_CONV2D, data = conv->kind == PT_OP_CONV2D_BWD_DATA;
    const pt_conv_matrix w = {fwd || data ? PT_CONV_IN1 : PT_CONV_OUT, 0, K, 1, 0, p->opg * K};
    const pt_conv_matrix wt = {PT_CONV_IN1, 0, 1, K, 0, p->opg * K};
    const pt_conv_matrix cols = {PT_CONV_COLUMNS, 0, P, 1, p->col_image, K * P};
    const pt_conv_matrix cols_t = {PT_CONV_COLUMNS, 0, 1, P, p->col_image, K * P};
    const pt_conv_matrix map = {fwd ? PT_CONV_OUT : data ? PT_CONV_IN0 : PT_CONV_IN1, n0 * map_image, P, 1,
                                map_image, p->opg * P};
    pt_conv_gemm g;
    memset(&g, 0, sizeof g);
    g.n0 = n0;
    g.images = cnt;
    g.groups = p->groups;
    if (fwd) {
        g.m = p->opg, g.n = P, g.k = K, g.a = w, g.b = cols, g.c = map;
    } else if (data) {
        g.m = K, g.n = P, g.k = p->opg, g.a = wt, g.b = map, g.c = cols;
    } else {
        g.m = p->opg, g.n = K, g.k = P, g.a = map, g.b = cols_t, g.c = w;
        g.c.image = 0;
        g.sums_images = true;
    }
    g.over_images = !g.sums_images && cnt >= p->groups;
    return g;
}

/** Loop step i of a chunk's GEMMs: one batched call. */
typedef struct pt_conv_step {
    int64_t a;             /**< offset of the call's first a matrix, elements */
    int64_t b;             /**< offset of the call's first b matrix, elements */
    int64_t c;             /**< offset of the call's first c matrix, elements */
    int64_t sa;            /**< a's batch stride, elements */
    int64_t sb;            /**< b's batch stride, elements */
    int64_t sc;            /**< c's batch stride, elements */
    int64_t batch;         /**< matrices in the call */
    bool accumulate;       /**< c += a b (beta 1), else c = a b */
} pt_conv_step;

/** How many batched calls a chunk takes. */
static inline int64_t pt_conv_plan_steps(const pt_conv_gemm *g) { return g->over_images ? g->groups : g->images; }

static inline pt_conv_step pt_conv_plan_step(const pt_conv_gemm *g, int64_t i) {
    pt_conv_step s;
    const bool im = g->over_images;
    s.a = g->a.offset + i * (im ? g->a.group : g->a.image);
    s.b = g->b.offset + i * (im ? g->b.group : g->b.image);
    s.c = g->c.offset + i * (im ? g->c.group : g->c.image);
    s.sa = im ? g->a.image : g->a.group;
    s.sb = im ? g->b.image : g->b.group;
    s.sc = im ? g->c.image : g->c.group;
    s.batch = im ? g->images : g->groups;
    s.accumulate = g->sums_images && g->n0 + i > 0;
    return s;
}

/** What a plugin gives pt_conv_plan_run: its window kinds and its GEMMs. */
typedef struct pt_conv_plan_ops {
    void *ctx; /**< the plugin's own state, passed back to window and gemms */
    /** Queues an IM2COL or COL2IM descriptor. */
    pt_status (*window)(void *ctx, const pt_op *op);
    /** Queues the GEMMs of one chunk. */
    pt_status (*gemms)(void *ctx, const pt_conv_gemm *g);
} pt_conv_plan_ops;

/** Queues the whole call, chunk after chunk of nb images, with the columns
 * at byte col_offset of col_buf: im2col then the GEMMs, or for BWD_DATA the
 * GEMMs then col2im. Stops at the first failure and returns it. */
static inline pt_status pt_conv_plan_run(const pt_op *conv, const pt_conv_plan *p, int64_t nb, void *col_buf,
                                         size_t col_offset, const pt_conv_plan_ops *ops) {
    const bool data = conv->kind == PT_OP_CONV2D_BWD_DATA;
    pt_status s = PT_OK;
    for (int64_t n0 = 0; n0 < p->n && s == PT_OK; n0 += nb) {
        const int64_t cnt = p->n - n0 < nb ? p->n - n0 : nb;
        const pt_conv_gemm g = pt_conv_plan_gemm(conv, p, n0, cnt);
        pt_op w;
        pt_conv_plan_window_op(conv, p, n0, cnt, col_buf, col_offset, &w);
        s = data ? ops->gemms(ops->ctx, &g) : ops->window(ops->ctx, &w);
        if (s == PT_OK) s = data ? ops->window(ops->ctx, &w) : ops->gemms(ops->ctx, &g);
    }
    return s;
}

#ifdef __cplusplus
}
#endif
#endif
