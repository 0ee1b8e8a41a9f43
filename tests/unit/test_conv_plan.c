/* include/portable/conv_plan.h on the host: the lowering the cuda and
 * opencl plugins run their CONV kinds by (im2col / col2im and strided
 * GEMMs over chunks of the batch), executed here with plain loops in f64
 * and compared with the convolution's definition (backend.h CONV), for
 * every kind, chunks of 1, 2, 3 and all the images (the GPU runs see only
 * whole batches at the conformance suite's sizes), groups, stride,
 * padding and dilation, and columns at an offset into their buffer. Also:
 * the descriptors pt_conv_plan_of refuses, and the chunk arithmetic. */
#include <portable/conv_plan.h>

#include "check.h"

typedef struct shape_case {
    int64_t n, c, h, w, co, kh, kw, groups;
    int64_t win[6]; /* stride h, w; pad h, w; dilation h, w */
} shape_case;

static const shape_case cases[] = {
    {3, 4, 6, 5, 6, 3, 3, 2, {1, 1, 1, 1, 1, 1}},
    {5, 3, 7, 7, 3, 2, 3, 1, {2, 1, 0, 2, 1, 2}},
    {4, 6, 9, 8, 6, 3, 2, 6, {2, 3, 2, 1, 2, 1}}, /* depthwise: more groups than images */
    {2, 2, 5, 4, 4, 1, 1, 1, {1, 1, 0, 0, 1, 1}},
};

static int64_t extent(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
    return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

static void operand(pt_operand *o, double *buf, int ndim, const int64_t *shape) {
    memset(o, 0, sizeof *o);
    o->buf = buf;
    o->dtype = PT_F64;
    o->ndim = ndim;
    int64_t step = 1;
    for (int k = ndim - 1; k >= 0; --k) {
        o->shape[k] = shape[k];
        o->strides[k] = step;
        step *= shape[k];
    }
}

static double *at(const pt_operand *o) { return (double *)((char *)o->buf + o->offset); }

/* IM2COL and COL2IM as backend.h defines them. */
static pt_status host_window(void *ctx, const pt_op *op) {
    (void)ctx;
    const bool im2col = op->kind == PT_OP_IM2COL;
    const pt_operand *img = im2col ? &op->in[0] : &op->out, *col = im2col ? &op->out : &op->in[0];
    const int64_t *s = col->shape, *win = op->window;
    double *x = at(img), *cv = at(col);
    if (!im2col)
        for (int64_t e = 0; e < img->shape[0] * img->shape[1] * img->shape[2] * img->shape[3]; ++e) x[e] = 0;
    int64_t e = 0;
    for (int64_t n = 0; n < s[0]; ++n)
        for (int64_t c = 0; c < s[1]; ++c)
            for (int64_t i = 0; i < s[2]; ++i)
                for (int64_t j = 0; j < s[3]; ++j)
                    for (int64_t oh = 0; oh < s[4]; ++oh)
                        for (int64_t ow = 0; ow < s[5]; ++ow, ++e) {
                            const int64_t h = oh * win[0] - win[2] + i * win[4], w = ow * win[1] - win[3] + j * win[5];
                            const bool in = h >= 0 && h < img->shape[2] && w >= 0 && w < img->shape[3];
                            const int64_t xe = ((n * img->shape[1] + c) * img->shape[2] + h) * img->shape[3] + w;
                            if (im2col) cv[e] = in ? x[xe] : op->scalar;
                            else if (in) x[xe] += cv[e];
                        }
    return PT_OK;
}

typedef struct host_run {
    const pt_op *op;
    double *cols;
    int calls;
} host_run;

static double *host_base(const host_run *r, pt_conv_buffer b) {
    switch (b) {
    case PT_CONV_IN0: return at(&r->op->in[0]);
    case PT_CONV_IN1: return at(&r->op->in[1]);
    case PT_CONV_OUT: return at(&r->op->out);
    case PT_CONV_COLUMNS: break;
    }
    return r->cols;
}

/* Each step as a BLAS would run it: batch products of strided matrices. */
static pt_status host_gemms(void *ctx, const pt_conv_gemm *g) {
    host_run *r = ctx;
    const double *a = host_base(r, g->a.buffer), *b = host_base(r, g->b.buffer);
    double *c = host_base(r, g->c.buffer);
    for (int64_t i = 0; i < pt_conv_plan_steps(g); ++i) {
        const pt_conv_step st = pt_conv_plan_step(g, i);
        ++r->calls;
        for (int64_t q = 0; q < st.batch; ++q)
            for (int64_t m = 0; m < g->m; ++m)
                for (int64_t n = 0; n < g->n; ++n) {
                    double sum = 0;
                    for (int64_t k = 0; k < g->k; ++k)
                        sum += a[st.a + q * st.sa + m * g->a.row + k * g->a.col] *
                               b[st.b + q * st.sb + k * g->b.row + n * g->b.col];
                    double *out = &c[st.c + q * st.sc + m * g->c.row + n * g->c.col];
                    *out = st.accumulate ? *out + sum : sum;
                }
    }
    return PT_OK;
}

/* y, dx and dw from the definition (one loop over every product term). */
static void reference(const shape_case *sc, int64_t oh, int64_t ow, const double *x, const double *w,
                      const double *g, double *y, double *dx, double *dw) {
    const int64_t cg = sc->c / sc->groups, opg = sc->co / sc->groups;
    for (int64_t n = 0; n < sc->n; ++n)
        for (int64_t o = 0; o < sc->co; ++o)
            for (int64_t r = 0; r < oh; ++r)
                for (int64_t q = 0; q < ow; ++q)
                    for (int64_t ci = 0; ci < cg; ++ci)
                        for (int64_t i = 0; i < sc->kh; ++i)
                            for (int64_t j = 0; j < sc->kw; ++j) {
                                const int64_t h = r * sc->win[0] - sc->win[2] + i * sc->win[4];
                                const int64_t v = q * sc->win[1] - sc->win[3] + j * sc->win[5];
                                if (h < 0 || h >= sc->h || v < 0 || v >= sc->w) continue;
                                const int64_t c = o / opg * cg + ci;
                                const int64_t xi = ((n * sc->c + c) * sc->h + h) * sc->w + v;
                                const int64_t wi = ((o * cg + ci) * sc->kh + i) * sc->kw + j;
                                const int64_t yi = ((n * sc->co + o) * oh + r) * ow + q;
                                y[yi] += x[xi] * w[wi];
                                dx[xi] += g[yi] * w[wi];
                                dw[wi] += x[xi] * g[yi];
                            }
}

static double *filled(int64_t n, unsigned seed, double poison) {
    double *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; ++i) {
        seed = seed * 1103515245u + 12345u;
        v[i] = poison != 0 ? poison : (double)((seed >> 8) % 2001) / 1000.0 - 1.0;
    }
    return v;
}

static bool close_all(const double *a, const double *b, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        if (fabs(a[i] - b[i]) > 1e-9 * (1 + fabs(b[i]))) return false;
    return true;
}

static void run_case(const shape_case *sc) {
    const int64_t oh = extent(sc->h, sc->kh, sc->win[0], sc->win[2], sc->win[4]);
    const int64_t ow = extent(sc->w, sc->kw, sc->win[1], sc->win[3], sc->win[5]);
    const int64_t xs[4] = {sc->n, sc->c, sc->h, sc->w}, ws[4] = {sc->co, sc->c / sc->groups, sc->kh, sc->kw};
    const int64_t ys[4] = {sc->n, sc->co, oh, ow};
    const int64_t nx = xs[0] * xs[1] * xs[2] * xs[3], nw = ws[0] * ws[1] * ws[2] * ws[3];
    const int64_t ny = ys[0] * ys[1] * ys[2] * ys[3];
    double *x = filled(nx, 1, 0), *w = filled(nw, 2, 0), *g = filled(ny, 3, 0);
    double *ry = calloc((size_t)ny, sizeof(double)), *rdx = calloc((size_t)nx, sizeof(double));
    double *rdw = calloc((size_t)nw, sizeof(double));
    reference(sc, oh, ow, x, w, g, ry, rdx, rdw);
    const pt_op_kind kinds[3] = {PT_OP_CONV2D, PT_OP_CONV2D_BWD_DATA, PT_OP_CONV2D_BWD_WEIGHT};
    for (int k = 0; k < 3; ++k)
        for (int64_t nb = 1; nb <= sc->n; nb = nb == 3 ? sc->n : nb + 1) {
            pt_op op;
            memset(&op, 0, sizeof op);
            op.kind = kinds[k];
            op.dtype = PT_F64;
            op.n_inputs = 2;
            op.count = sc->groups;
            memcpy(op.window, sc->win, sizeof op.window);
            const int64_t nout = k == 0 ? ny : k == 1 ? nx : nw;
            double *out = filled(nout, 4, 1e300); /* poisoned: every element must be written */
            if (k == 0) {
                operand(&op.in[0], x, 4, xs), operand(&op.in[1], w, 4, ws), operand(&op.out, out, 4, ys);
            } else if (k == 1) {
                operand(&op.in[0], g, 4, ys), operand(&op.in[1], w, 4, ws), operand(&op.out, out, 4, xs);
            } else {
                operand(&op.in[0], x, 4, xs), operand(&op.in[1], g, 4, ys), operand(&op.out, out, 4, ws);
            }
            pt_conv_plan p;
            char why[256] = "";
            CHECK(pt_conv_plan_of(&op, &p, why, sizeof why));
            if (why[0]) printf("refused: %s\n", why);
            CHECK_INT(p.col_image, sc->c * sc->kh * sc->kw * oh * ow);
            /* the columns 3 elements into their buffer */
            double *colbuf = filled(3 + nb * p.col_image, 5, 1e300);
            host_run r = {&op, colbuf + 3, 0};
            const pt_conv_plan_ops ops = {&r, host_window, host_gemms};
            CHECK(pt_conv_plan_run(&op, &p, nb, colbuf, 3 * sizeof(double), &ops) == PT_OK);
            const double *want = k == 0 ? ry : k == 1 ? rdx : rdw;
            const bool ok = close_all(out, want, nout);
            if (!ok)
                printf("kind %s, nb %lld, case n=%lld c=%lld groups=%lld: wrong values\n", pt_op_name(op.kind),
                       (long long)nb, (long long)sc->n, (long long)sc->c, (long long)sc->groups);
            CHECK(ok);
            /* one batched call per group or per image, whichever is fewer */
            const int64_t chunks = (sc->n + nb - 1) / nb;
            CHECK(r.calls >= chunks && r.calls <= chunks * (sc->groups > nb ? sc->groups : nb));
            free(colbuf);
            free(out);
            if (nb == sc->n) break;
        }
    free(x), free(w), free(g), free(ry), free(rdx), free(rdw);
}

static void refusals(void) {
    double buf[64] = {0};
    const int64_t xs[4] = {1, 2, 4, 4}, ws[4] = {2, 2, 3, 3}, ys[4] = {1, 2, 2, 2};
    pt_op op;
    memset(&op, 0, sizeof op);
    op.kind = PT_OP_CONV2D;
    op.dtype = PT_F64;
    op.n_inputs = 2;
    op.count = 1;
    const int64_t win[6] = {1, 1, 0, 0, 1, 1};
    memcpy(op.window, win, sizeof win);
    operand(&op.in[0], buf, 4, xs), operand(&op.in[1], buf, 4, ws), operand(&op.out, buf, 4, ys);
    pt_conv_plan p;
    char why[256];
    CHECK(pt_conv_plan_of(&op, &p, why, sizeof why));
    pt_op bad = op;
    const int64_t wrong[4] = {1, 2, 2, 3}; /* the window gives 2x2 */
    operand(&bad.out, buf, 4, wrong);
    CHECK(!pt_conv_plan_of(&bad, &p, why, sizeof why) && strstr(why, "window gives 2x2"));
    bad = op;
    bad.count = 2; /* weight [2, 2, ..] with 2 groups wants 4 channels */
    CHECK(!pt_conv_plan_of(&bad, &p, why, sizeof why) && strstr(why, "groups 2"));
    bad = op;
    bad.in[0].strides[3] = 2; /* not contiguous */
    CHECK(!pt_conv_plan_of(&bad, &p, why, sizeof why) && strstr(why, "contiguous"));
    bad = op;
    bad.window[4] = 0;
    CHECK(!pt_conv_plan_of(&bad, &p, why, sizeof why) && strstr(why, "dilation"));
    bad = op;
    bad.kind = PT_OP_MATMUL;
    CHECK(!pt_conv_plan_of(&bad, &p, why, sizeof why) && strstr(why, "not a CONV kind"));
    bad = op;
    bad.in[1].dtype = PT_F32;
    CHECK(!pt_conv_plan_of(&bad, &p, why, sizeof why) && strstr(why, "dtype"));

    /* chunks: col_image 2*3*3*2*2 = 72 elements, 576 bytes in f64 */
    CHECK(pt_conv_plan_of(&op, &p, why, sizeof why));
    p.n = 10;
    CHECK_INT(pt_conv_plan_chunk(&p, 8, 100), 1);        /* less than one image: still one */
    CHECK_INT(pt_conv_plan_chunk(&p, 8, 576 * 3 + 5), 3);
    CHECK_INT(pt_conv_plan_chunk(&p, 8, PT_CONV_PLAN_BUDGET), 10);
}

int main(void) {
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) run_case(&cases[k]);
    refusals();
    return check_summary();
}
