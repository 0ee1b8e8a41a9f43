/* The convolutional-net kinds against float64 references: IM2COL and COL2IM
 * directly and through conv2d and the pools, MAX_POOL2D, MAX_POOL2D_INDEX
 * and MAX_UNPOOL2D directly and through autograd (NaN windows too), GELU forward and GELU_GRAD
 * through its backward pass. Windows cover stride, padding, dilation,
 * groups and overlapping pools; inputs come contiguous and as views. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

typedef struct window_case {
    int64_t n, c, h, w;
    pt_window2d win;
    int64_t co, groups; /* conv2d only */
    layout lay;         /* of x */
} window_case;

static const window_case cases[] = {
    {2, 3, 5, 6, {{3, 3}, {1, 1}, {1, 1}, {1, 1}}, 4, 1, LAY_C},
    {1, 2, 7, 5, {{2, 3}, {2, 1}, {0, 2}, {1, 1}}, 3, 1, LAY_T},
    {2, 4, 6, 6, {{3, 2}, {1, 2}, {2, 1}, {2, 1}}, 6, 2, LAY_C},
    {1, 4, 9, 8, {{1, 1}, {2, 3}, {0, 0}, {1, 1}}, 8, 4, LAY_O},
    {3, 1, 8, 8, {{5, 5}, {3, 3}, {2, 2}, {1, 1}}, 2, 1, LAY_C},
    /* the commonest pool, 2x2 at stride 2 (the cpu backend reads its taps in place), and on a view */
    {2, 3, 8, 6, {{2, 2}, {2, 2}, {0, 0}, {1, 1}}, 3, 1, LAY_C},
    {1, 2, 7, 9, {{2, 2}, {2, 2}, {0, 0}, {1, 1}}, 2, 1, LAY_O},
    /* two windows a row (a 4x4 image, and an odd 6x5 one): the cpu backend
     * reads two rows of windows at once there */
    {2, 3, 4, 4, {{2, 2}, {2, 2}, {0, 0}, {1, 1}}, 3, 1, LAY_C},
    {1, 2, 6, 5, {{2, 2}, {2, 2}, {0, 0}, {1, 1}}, 2, 1, LAY_O},
    /* planes of more than 65536 column elements: the cpu backend's row loops
     * rather than its small-window offset table */
    {1, 2, 96, 90, {{3, 3}, {1, 1}, {1, 1}, {1, 1}}, 2, 2, LAY_T}, /* 9 * 96 * 90 per plane */
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static int64_t out_extent(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
    return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

/* The input position of window tap (i, r) on axis a, or -1 outside. */
static int64_t tap(const pt_window2d *w, int a, int64_t out, int64_t k, int64_t extent) {
    int64_t p = out * w->stride[a] - w->padding[a] + k * w->dilation[a];
    return p >= 0 && p < extent ? p : -1;
}

static ht *ref_im2col(const ht *x, const pt_window2d *w, double pad) {
    const int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], wd = x->shape[3];
    const int64_t kh = w->kernel[0], kw = w->kernel[1];
    const int64_t oh = out_extent(h, kh, w->stride[0], w->padding[0], w->dilation[0]);
    const int64_t ow = out_extent(wd, kw, w->stride[1], w->padding[1], w->dilation[1]);
    const int64_t shape[6] = {n, c, kh, kw, oh, ow};
    ht *o = ht_new(x->dtype, 6, shape);
    int64_t e = 0;
    for (int64_t b = 0; b < n * c; ++b)
        for (int64_t i = 0; i < kh; ++i)
            for (int64_t j = 0; j < kw; ++j)
                for (int64_t r = 0; r < oh; ++r)
                    for (int64_t q = 0; q < ow; ++q, ++e) {
                        int64_t y = tap(w, 0, r, i, h), z = tap(w, 1, q, j, wd);
                        o->v[e] = y < 0 || z < 0 ? pad : x->v[(b * h + y) * wd + z];
                    }
    return o;
}

/* The adjoint; acc receives the sum of |terms| per element. */
static ht *ref_col2im(const ht *col, const pt_window2d *w, int64_t h, int64_t wd, double **acc) {
    const int64_t *s = col->shape;
    const int64_t shape[4] = {s[0], s[1], h, wd};
    ht *o = ht_new(col->dtype, 4, shape);
    *acc = calloc((size_t)o->numel, sizeof **acc);
    int64_t e = 0;
    for (int64_t b = 0; b < s[0] * s[1]; ++b)
        for (int64_t i = 0; i < s[2]; ++i)
            for (int64_t j = 0; j < s[3]; ++j)
                for (int64_t r = 0; r < s[4]; ++r)
                    for (int64_t q = 0; q < s[5]; ++q, ++e) {
                        int64_t y = tap(w, 0, r, i, h), z = tap(w, 1, q, j, wd);
                        if (y < 0 || z < 0) continue;
                        o->v[(b * h + y) * wd + z] += col->v[e];
                        (*acc)[(b * h + y) * wd + z] += fabs(col->v[e]);
                    }
    return o;
}

/* y[b][o][r][q] = bias[o] + sum over the group's (ci, i, j) of x * weight. */
static void ref_conv(const ht *x, const ht *wt, const ht *bias, const pt_window2d *w, int64_t groups, expect *e) {
    const int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], wd = x->shape[3];
    const int64_t co = wt->shape[0], cg = wt->shape[1], kh = wt->shape[2], kw = wt->shape[3];
    const int64_t oh = out_extent(h, kh, w->stride[0], w->padding[0], w->dilation[0]);
    const int64_t ow = out_extent(wd, kw, w->stride[1], w->padding[1], w->dilation[1]);
    const int64_t shape[4] = {n, co, oh, ow};
    e->val = ht_new(x->dtype, 4, shape);
    e->acc = calloc((size_t)e->val->numel, sizeof *e->acc);
    e->K = (double)(cg * kh * kw + 1);
    int64_t k = 0;
    for (int64_t b = 0; b < n; ++b)
        for (int64_t o = 0; o < co; ++o)
            for (int64_t r = 0; r < oh; ++r)
                for (int64_t q = 0; q < ow; ++q, ++k) {
                    double sum = bias->v[o], acc = fabs(bias->v[o]);
                    const int64_t g = o / (co / groups);
                    for (int64_t ci = 0; ci < cg; ++ci)
                        for (int64_t i = 0; i < kh; ++i)
                            for (int64_t j = 0; j < kw; ++j) {
                                int64_t y = tap(w, 0, r, i, h), z = tap(w, 1, q, j, wd);
                                if (y < 0 || z < 0) continue;
                                double t = x->v[((b * c + g * cg + ci) * h + y) * wd + z] *
                                           wt->v[((o * cg + ci) * kh + i) * kw + j];
                                sum += t;
                                acc += fabs(t);
                            }
                    e->val->v[k] = sum;
                    e->acc[k] = acc;
                }
}

/* Pools over every tap, padding excluded from max and counted as 0 in avg. */
static void ref_pool(const ht *x, const pt_window2d *w, bool max, expect *e) {
    ht *col = ref_im2col(x, w, max ? -INFINITY : 0.0);
    const int64_t *s = col->shape, kk = s[2] * s[3], l = s[4] * s[5];
    const int64_t shape[4] = {s[0], s[1], s[4], s[5]};
    e->val = ht_new(x->dtype, 4, shape);
    e->acc = max ? NULL : calloc((size_t)e->val->numel, sizeof *e->acc);
    e->K = (double)kk;
    for (int64_t b = 0; b < s[0] * s[1]; ++b)
        for (int64_t p = 0; p < l; ++p) {
            double m = -INFINITY, sum = 0, acc = 0;
            for (int64_t t = 0; t < kk; ++t) {
                double v = col->v[(b * kk + t) * l + p];
                m = v > m ? v : m;
                sum += v;
                acc += fabs(v);
            }
            e->val->v[b * l + p] = max ? m : sum / (double)kk;
            if (!max) e->acc[b * l + p] = acc / (double)kk;
        }
    ht_free(col);
}

/* The max pool kinds: each window's first maximum over its taps inside the
 * image (a NaN over any number), its index h*W + w (-1 for padding only),
 * and the adjoint that sums g over the windows that chose each element. */
static void ref_max_window(const ht *x, const pt_window2d *w, ht **val, ht **idx) {
    const int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], wd = x->shape[3];
    const int64_t oh = out_extent(h, w->kernel[0], w->stride[0], w->padding[0], w->dilation[0]);
    const int64_t ow = out_extent(wd, w->kernel[1], w->stride[1], w->padding[1], w->dilation[1]);
    const int64_t shape[4] = {n, c, oh, ow};
    *val = ht_new(x->dtype, 4, shape);
    *idx = ht_new(PT_I64, 4, shape);
    int64_t e = 0;
    for (int64_t b = 0; b < n * c; ++b)
        for (int64_t r = 0; r < oh; ++r)
            for (int64_t q = 0; q < ow; ++q, ++e) {
                double best = -INFINITY;
                int64_t at = -1;
                for (int64_t i = 0; i < w->kernel[0]; ++i)
                    for (int64_t j = 0; j < w->kernel[1]; ++j) {
                        int64_t y = tap(w, 0, r, i, h), z = tap(w, 1, q, j, wd);
                        if (y < 0 || z < 0) continue;
                        double v = x->v[(b * h + y) * wd + z];
                        if (at < 0 || v > best || (isnan(v) && !isnan(best))) {
                            best = v;
                            at = y * wd + z;
                        }
                    }
                (*val)->v[e] = best;
                (*idx)->v[e] = (double)at;
            }
}

static ht *ref_max_unpool(const ht *g, const ht *idx, int64_t h, int64_t wd, double **acc) {
    const int64_t shape[4] = {g->shape[0], g->shape[1], h, wd}, l = g->shape[2] * g->shape[3];
    ht *o = ht_new(g->dtype, 4, shape);
    *acc = calloc((size_t)o->numel, sizeof **acc);
    for (int64_t b = 0; b < g->shape[0] * g->shape[1]; ++b)
        for (int64_t p = 0; p < l; ++p) {
            const int64_t at = (int64_t)idx->v[b * l + p];
            if (at < 0) continue;
            o->v[b * h * wd + at] += g->v[b * l + p];
            (*acc)[b * h * wd + at] += fabs(g->v[b * l + p]);
        }
    return o;
}

/* ---- Calls ---- */

typedef struct call_params {
    const window_case *wc;
    double pad;
} call_params;

static pt_tensor *call_im2col(pt_tensor **in, const void *p) {
    const call_params *cp = p;
    return pt_im2col(in[0], &cp->wc->win, cp->pad);
}

static pt_tensor *call_col2im(pt_tensor **in, const void *p) {
    const window_case *wc = p;
    return pt_col2im(in[0], &wc->win, wc->h, wc->w);
}

static pt_tensor *call_conv(pt_tensor **in, const void *p) {
    const window_case *wc = p;
    const pt_conv2d_opts o = {{wc->win.stride[0], wc->win.stride[1]},
                              {wc->win.padding[0], wc->win.padding[1]},
                              {wc->win.dilation[0], wc->win.dilation[1]},
                              wc->groups};
    return pt_f_conv2d(in[0], in[1], in[2], &o);
}

static pt_tensor *call_pool(pt_tensor **in, const void *p, bool max) {
    const window_case *wc = p;
    const pt_pool2d_opts o = {{wc->win.kernel[0], wc->win.kernel[1]},
                              {wc->win.stride[0], wc->win.stride[1]},
                              {wc->win.padding[0], wc->win.padding[1]}};
    return max ? pt_f_max_pool2d(in[0], &o) : pt_f_avg_pool2d(in[0], &o);
}
static pt_tensor *call_max_pool(pt_tensor **in, const void *p) { return call_pool(in, p, true); }
static pt_tensor *call_avg_pool(pt_tensor **in, const void *p) { return call_pool(in, p, false); }

static pt_tensor *call_max_window(pt_tensor **in, const void *p) {
    const window_case *wc = p;
    return pt_max_pool2d_window(in[0], &wc->win);
}

static pt_tensor *call_max_indices(pt_tensor **in, const void *p) {
    const window_case *wc = p;
    return pt_max_pool2d_indices(in[0], &wc->win);
}

static pt_tensor *call_max_unpool(pt_tensor **in, const void *p) {
    const window_case *wc = p;
    return pt_max_unpool2d(in[0], in[1], &wc->win, wc->h, wc->w);
}

/* d sum(max_pool(x) * g) / dx through the autograd rule (MAX_POOL2D_INDEX
 * at record time, MAX_UNPOOL2D backward). in: x, g. */
static pt_tensor *call_max_backward(pt_tensor **in, const void *p) {
    const window_case *wc = p;
    pt_tensor *x = pt_contiguous(in[0]);
    if (!x || pt_set_requires_grad(x, true)) {
        pt_release(x);
        return NULL;
    }
    pt_tensor *y = pt_max_pool2d_window(x, &wc->win), *yg = pt_mul(y, in[1]);
    pt_tensor *s = pt_sum(yg, PT_ALL, false);
    pt_tensor *g = s && pt_backward(s) == PT_OK ? pt_grad(x) : NULL;
    pt_release(s);
    pt_release(yg);
    pt_release(y);
    pt_release(x);
    return g;
}

static pt_tensor *call_gelu(pt_tensor **in, const void *p) {
    (void)p;
    return pt_gelu(in[0]);
}

static pt_tensor *call_gelu_derivative(pt_tensor **in, const void *p) {
    (void)p;
    return pt_gelu_grad(in[0]);
}

/* d sum(gelu(x)) / dx: GELU_GRAD through the autograd rule. */
static pt_tensor *call_gelu_grad(pt_tensor **in, const void *p) {
    (void)p;
    pt_tensor *x = pt_contiguous(in[0]);
    if (!x || pt_set_requires_grad(x, true)) {
        pt_release(x);
        return NULL;
    }
    pt_tensor *y = pt_gelu(x), *s = pt_sum(y, PT_ALL, false);
    pt_tensor *g = s && pt_backward(s) == PT_OK ? pt_grad(x) : NULL;
    pt_release(s);
    pt_release(y);
    pt_release(x);
    return g;
}

static double gelu_ref(double x, pt_dtype t) {
    (void)t;
    return x * 0.5 * erfc(-x / sqrt(2.0));
}
static double gelu_grad_ref(double x, pt_dtype t) {
    (void)t;
    return 0.5 * erfc(-x / sqrt(2.0)) + x * exp(-0.5 * x * x) / sqrt(2.0 * M_PI);
}

/* A window whose pad fits a pool (at most half the kernel, no dilation). */
static bool poolable(const window_case *wc) {
    for (int a = 0; a < 2; ++a)
        if (wc->win.dilation[a] != 1 || 2 * wc->win.padding[a] > wc->win.kernel[a]) return false;
    return true;
}

/* The max pool kinds directly, on x and on x with NaNs in some windows:
 * values and indices exactly, the unpool of random g (with indices from
 * the reference) and the backward pass through autograd. */
static void max_window_cases(const window_case *wc, const ht *x0, const char *name, lcg *g) {
    const pt_window2d *w = &wc->win;
    char full[360];
    for (int nan = 0; nan < 2; ++nan) {
        ht *x = ht_clone(x0);
        if (nan)
            for (int64_t e = 0; e < x->numel; e += 7) x->v[e] = NAN; /* and x keeps its layout */
        ht *val, *idx;
        ref_max_window(x, w, &val, &idx);
        const layout lays[2] = {wc->lay, LAY_C};
        const char *tag = nan ? " with NaN" : "";
        {
            expect e = {.val = val};
            snprintf(full, sizeof full, "max_pool2d_window %s%s", name, tag);
            run_case(full, 1, &x, lays, call_max_window, wc, &e, TOL_EXACT, CF_CONTIGUOUS);
        }
        {
            expect e = {.val = idx};
            snprintf(full, sizeof full, "max_pool2d_indices %s%s", name, tag);
            run_case(full, 1, &x, lays, call_max_indices, wc, &e, TOL_EXACT, CF_CONTIGUOUS);
        }
        if (!nan) {
            ht *gr = ht_new(x->dtype, 4, val->shape);
            ht_fill(gr, (domain){DOM_UNIFORM, -2, 2}, g);
            expect e = {0};
            e.val = ref_max_unpool(gr, idx, wc->h, wc->w, &e.acc);
            e.K = (double)(w->kernel[0] * w->kernel[1]);
            ht *in[2] = {gr, idx};
            for (int view = 0; view < 2; ++view) { /* g contiguous, then a transposed view the core copies */
                const layout glays[2] = {view ? LAY_T : LAY_C, LAY_C};
                snprintf(full, sizeof full, "max_unpool2d %s g %s", name, view ? "transposed" : "contiguous");
                run_case(full, 2, in, glays, call_max_unpool, wc, &e, TOL_SUM, CF_CONTIGUOUS);
            }
            expect_free(&e);
            expect eb = {0};
            eb.val = ref_max_unpool(gr, idx, wc->h, wc->w, &eb.acc);
            eb.K = e.K;
            ht *xin[2] = {x, gr};
            snprintf(full, sizeof full, "max_pool2d_window backward %s", name);
            run_case(full, 2, xin, lays, call_max_backward, wc, &eb, TOL_SUM, CF_CONTIGUOUS);
            expect_free(&eb);
            ht_free(gr);
        }
        ht_free(val);
        ht_free(idx);
        ht_free(x);
    }
}

static void window_cases(pt_dtype t) {
    lcg g;
    lcg_seed(&g, 1234 + (uint64_t)t);
    for (int k = 0; k < N_CASES; ++k) {
        const window_case *wc = &cases[k];
        const pt_window2d *w = &wc->win;
        char name[256], xs[64];
        const int64_t xshape[4] = {wc->n, wc->c, wc->h, wc->w};
        ht *x = ht_new(t, 4, xshape);
        ht_fill(x, (domain){DOM_UNIFORM, -2, 2}, &g);
        ht_for_layout(x, wc->lay);
        operand_str(x, wc->lay, xs, sizeof xs);
        snprintf(name, sizeof name, "%s x=%s k=%lldx%lld s=%lld,%lld p=%lld,%lld d=%lld,%lld", pt_dtype_name(t), xs,
                 (long long)w->kernel[0], (long long)w->kernel[1], (long long)w->stride[0], (long long)w->stride[1],
                 (long long)w->padding[0], (long long)w->padding[1], (long long)w->dilation[0],
                 (long long)w->dilation[1]);
        char full[320];
        const layout lays[3] = {wc->lay, LAY_C, LAY_C};

        /* im2col, exact, with 0 and -inf padding */
        for (int pad_kind = 0; pad_kind < 2; ++pad_kind) {
            const call_params cp = {wc, pad_kind ? -INFINITY : 0.0};
            expect e = {.val = ref_im2col(x, w, cp.pad)};
            snprintf(full, sizeof full, "im2col %s pad %s", name, pad_kind ? "-inf" : "0");
            run_case(full, 1, &x, lays, call_im2col, &cp, &e, TOL_EXACT, CF_CONTIGUOUS);
            expect_free(&e);
        }
        /* col2im of random columns */
        {
            ht *shape_only = ref_im2col(x, w, 0.0);
            ht *col = ht_new(t, 6, shape_only->shape);
            ht_fill(col, (domain){DOM_UNIFORM, -2, 2}, &g);
            expect e = {0};
            e.val = ref_col2im(col, w, wc->h, wc->w, &e.acc);
            e.K = (double)(w->kernel[0] * w->kernel[1]);
            snprintf(full, sizeof full, "col2im %s", name);
            run_case(full, 1, &col, NULL, call_col2im, wc, &e, TOL_SUM, CF_CONTIGUOUS);
            expect_free(&e);
            ht_free(col);
            ht_free(shape_only);
        }
        /* conv2d with bias and groups */
        {
            const int64_t wshape[4] = {wc->co, wc->c / wc->groups, w->kernel[0], w->kernel[1]};
            ht *wt = ht_new(t, 4, wshape), *bias = ht_new(t, 1, &wc->co);
            ht_fill(wt, (domain){DOM_UNIFORM, -1, 1}, &g);
            ht_fill(bias, (domain){DOM_UNIFORM, -1, 1}, &g);
            ht *in[3] = {x, wt, bias};
            expect e = {0};
            ref_conv(x, wt, bias, w, wc->groups, &e);
            snprintf(full, sizeof full, "conv2d %s co=%lld groups=%lld", name, (long long)wc->co,
                     (long long)wc->groups);
            run_case(full, 3, in, lays, call_conv, wc, &e, TOL_CONV, CF_CONTIGUOUS);
            expect_free(&e);
            snprintf(full, sizeof full, "%s co=%lld groups=%lld", name, (long long)wc->co, (long long)wc->groups);
            conv_grad_cases(x, wt, w, wc->groups, wc->lay, full, &g); /* conv_grads.c */
            ht_free(wt);
            ht_free(bias);
        }
        max_window_cases(wc, x, name, &g);
        if (poolable(wc)) {
            for (int max = 0; max < 2; ++max) {
                expect e = {0};
                ref_pool(x, w, max, &e);
                snprintf(full, sizeof full, "%s %s", max ? "max_pool2d" : "avg_pool2d", name);
                run_case(full, 1, &x, lays, max ? call_max_pool : call_avg_pool, wc, &e, max ? TOL_EXACT : TOL_MEAN,
                         0);
                expect_free(&e);
            }
        }
        ht_free(x);
    }
}

static void gelu_cases(pt_dtype t) {
    lcg g;
    lcg_seed(&g, 99 + (uint64_t)t);
    static const struct {
        int ndim;
        int64_t shape[3];
        layout lay;
        domain d;
    } fams[] = {
        {2, {7, 13}, LAY_C, {DOM_UNIFORM, -6, 6}},
        {2, {7, 13}, LAY_T, {DOM_UNIFORM, -3, 3}},
        {3, {5, 6, 7}, LAY_O, {DOM_UNIFORM, -12, 4}}, /* deep in the tail: erfc, not 1 + erf */
        {1, {0}, LAY_C, {DOM_UNIFORM, -1, 1}},
    };
    for (size_t k = 0; k < sizeof fams / sizeof fams[0]; ++k) {
        ht *x = ht_new(t, fams[k].ndim, fams[k].shape);
        ht_fill(x, fams[k].d, &g);
        ht_for_layout(x, fams[k].lay);
        char xs[64], name[160];
        operand_str(x, fams[k].lay, xs, sizeof xs);
        expect e = {.val = ref_map1(x, gelu_ref, t, t)};
        snprintf(name, sizeof name, "gelu %s x=%s", pt_dtype_name(t), xs);
        run_case(name, 1, &x, &fams[k].lay, call_gelu, NULL, &e, TOL_TRANSC, 0);
        expect_free(&e);
        {
            expect ed = {.val = ref_map1(x, gelu_grad_ref, t, t)};
            snprintf(name, sizeof name, "gelu_grad %s x=%s", pt_dtype_name(t), xs);
            run_case(name, 1, &x, &fams[k].lay, call_gelu_derivative, NULL, &ed, TOL_TRANSC, 0);
            expect_free(&ed);
        }
        if (x->numel > 0) { /* backward: the seed is all ones, so the gradient is gelu' */
            expect eg = {.val = ref_map1(x, gelu_grad_ref, t, t)};
            snprintf(name, sizeof name, "gelu backward (gelu_grad) %s x=%s", pt_dtype_name(t), xs);
            run_case(name, 1, &x, &fams[k].lay, call_gelu_grad, NULL, &eg, TOL_TRANSC, 0);
            expect_free(&eg);
        }
        ht_free(x);
    }
}

/* A layer wide enough that the cpu backend asks oneDNN for Winograd
 * (exec_conv_onednn.c: 32 channels in and out on 16x16 images, a batch of
 * 16, 3x3 at stride 1; its transforms round differently from the direct
 * sum): the forward pass with a bias, each adjoint and both gradients. f32
 * only, the one dtype oneDNN convolves; every backend runs it. */
static void wide_conv_case(const window_case *wc, const char *name, uint64_t seed) {
    lcg g;
    lcg_seed(&g, seed);
    const int64_t xshape[4] = {wc->n, wc->c, wc->h, wc->w}, wshape[4] = {wc->co, wc->c, 3, 3};
    ht *x = ht_new(PT_F32, 4, xshape), *wt = ht_new(PT_F32, 4, wshape), *bias = ht_new(PT_F32, 1, &wc->co);
    ht_fill(x, (domain){DOM_UNIFORM, -2, 2}, &g);
    ht_fill(wt, (domain){DOM_UNIFORM, -1, 1}, &g);
    ht_fill(bias, (domain){DOM_UNIFORM, -1, 1}, &g);
    char full[320];
    ht *in[3] = {x, wt, bias};
    const layout lays[3] = {LAY_C, LAY_C, LAY_C};
    expect e = {0};
    ref_conv(x, wt, bias, &wc->win, 1, &e);
    snprintf(full, sizeof full, "conv2d %s", name);
    run_case(full, 3, in, lays, call_conv, wc, &e, TOL_CONV, CF_CONTIGUOUS);
    expect_free(&e);
    conv_grad_cases(x, wt, &wc->win, 1, LAY_C, name, &g); /* conv_grads.c */
    ht_free(x);
    ht_free(wt);
    ht_free(bias);
}

static void wide_conv_cases(void) {
    static const window_case wide = {16, 32, 16, 16, {{3, 3}, {1, 1}, {1, 1}, {1, 1}}, 32, 1, LAY_C};
    wide_conv_case(&wide, "f32 x=[16,32,16,16] k=3x3 s=1,1 p=1,1 d=1,1 co=32 groups=1 (wide)", 4321);
    /* Channels in whole blocks of 16 (and 8) on an image whose 35 pixels
     * are not a multiple of the 16 the cpu backend's blocked copies move at
     * a time: their last pixels take the element-by-element path. */
    static const window_case ragged = {4, 16, 7, 5, {{3, 3}, {1, 1}, {1, 1}, {1, 1}}, 16, 1, LAY_C};
    wide_conv_case(&ragged, "f32 x=[4,16,7,5] k=3x3 s=1,1 p=1,1 d=1,1 co=16 groups=1 (blocked, ragged)", 4322);
    /* Wide enough for Winograd (32 channels, 256 pixels or more), where
     * oneDNN has none (AVX2) the plugin's own F(4x4, 3x3): outputs of 17x13
     * and 19x16 end in partial tiles, padding 0 and 2 (1 on the other
     * axis) reach the adjoint's 2 - p, and unequal channel counts catch a
     * swap of in and out in the backward-data pass. */
    static const window_case pad0 = {16, 32, 19, 15, {{3, 3}, {1, 1}, {0, 0}, {1, 1}}, 48, 1, LAY_C};
    wide_conv_case(&pad0, "f32 x=[16,32,19,15] k=3x3 s=1,1 p=0,0 d=1,1 co=48 groups=1 (wide, partial tiles)", 4323);
    static const window_case pad2 = {16, 40, 17, 16, {{3, 3}, {1, 1}, {2, 1}, {1, 1}}, 32, 1, LAY_C};
    wide_conv_case(&pad2, "f32 x=[16,40,17,16] k=3x3 s=1,1 p=2,1 d=1,1 co=32 groups=1 (wide, partial tiles)", 4324);
}

void run_cnn_cases(void) {
    FOR_EACH_DTYPE_IN(t, PT_DTYPES_FLOAT) {
        window_cases(t);
        gelu_cases(t);
    }
    wide_conv_cases();
}
