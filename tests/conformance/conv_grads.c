/* The convolution kinds against float64 references: CONV2D,
 * CONV2D_BWD_DATA and CONV2D_BWD_WEIGHT directly (a skip on a device
 * without them), and the gradients of pt_f_conv2d in x and in the weight
 * through autograd, whichever path the device takes for that call (its conv
 * kinds or im2col + matmul: CTest runs the cpu backend with
 * PORTABLE_CPU_CONV=im2col and =onednn). The windows are cnn_ops.c's:
 * stride, padding, dilation and groups, x contiguous and as views. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "conformance.h"

typedef struct conv_params {
    pt_conv2d_opts opts;
    int64_t h, w, kh, kw;
} conv_params;

typedef struct terms {
    const ht *a, *b; /* the two factors of every term, by role below */
    expect *e;
} terms;

/* Every product term x[xi] * weight[wi] of y[yi] = conv(x, weight). */
static void for_each_term(const int64_t *xs, const int64_t *ws, const int64_t *ys, const pt_window2d *w,
                          int64_t groups, void (*visit)(terms *, int64_t, int64_t, int64_t), terms *t) {
    const int64_t co = ws[0], cg = ws[1], opg = co / groups;
    for (int64_t b = 0; b < xs[0]; ++b)
        for (int64_t o = 0; o < co; ++o)
            for (int64_t r = 0; r < ys[2]; ++r)
                for (int64_t q = 0; q < ys[3]; ++q)
                    for (int64_t ci = 0; ci < cg; ++ci)
                        for (int64_t i = 0; i < ws[2]; ++i)
                            for (int64_t j = 0; j < ws[3]; ++j) {
                                const int64_t y = r * w->stride[0] - w->padding[0] + i * w->dilation[0];
                                const int64_t z = q * w->stride[1] - w->padding[1] + j * w->dilation[1];
                                if (y < 0 || y >= xs[2] || z < 0 || z >= xs[3]) continue;
                                const int64_t c = o / opg * cg + ci;
                                visit(t, ((b * xs[1] + c) * xs[2] + y) * xs[3] + z,
                                      ((o * cg + ci) * ws[2] + i) * ws[3] + j, ((b * co + o) * ys[2] + r) * ys[3] + q);
                            }
}

static void add_term(expect *e, int64_t at, double v) {
    e->val->v[at] += v;
    e->acc[at] += fabs(v);
}
/* a = x, b = weight: y */
static void visit_forward(terms *t, int64_t xi, int64_t wi, int64_t yi) {
    add_term(t->e, yi, t->a->v[xi] * t->b->v[wi]);
}
/* a = g, b = weight: dx */
static void visit_data(terms *t, int64_t xi, int64_t wi, int64_t yi) {
    add_term(t->e, xi, t->a->v[yi] * t->b->v[wi]);
}
/* a = x, b = g: dweight */
static void visit_weight(terms *t, int64_t xi, int64_t wi, int64_t yi) {
    add_term(t->e, wi, t->a->v[xi] * t->b->v[yi]);
}

static void expect_new(expect *e, pt_dtype t, const int64_t *shape, double k) {
    e->val = ht_new(t, 4, shape);
    e->acc = calloc((size_t)e->val->numel, sizeof *e->acc);
    e->K = k;
}

/* ---- Calls ---- */

static pt_tensor *call_direct(pt_tensor **in, const void *p) {
    return pt_conv2d_direct(in[0], in[1], &((const conv_params *)p)->opts);
}
static pt_tensor *call_bwd_data(pt_tensor **in, const void *p) {
    const conv_params *cp = p;
    return pt_conv2d_backward_data(in[0], in[1], &cp->opts, cp->h, cp->w);
}
static pt_tensor *call_bwd_weight(pt_tensor **in, const void *p) {
    const conv_params *cp = p;
    return pt_conv2d_backward_weight(in[0], in[1], &cp->opts, cp->kh, cp->kw);
}

/* d sum(conv2d(x, weight) * g) / d in[which]: in = x, weight, g. */
static pt_tensor *conv_grad(pt_tensor **in, const conv_params *cp, int which) {
    pt_tensor *x = pt_contiguous(in[0]), *wt = pt_contiguous(in[1]);
    pt_tensor *leaf = which == 0 ? x : wt, *got = NULL;
    if (leaf && pt_set_requires_grad(leaf, true) == PT_OK) {
        pt_tensor *y = pt_f_conv2d(x, wt, NULL, &cp->opts), *yg = pt_mul(y, in[2]);
        pt_tensor *s = pt_sum(yg, PT_ALL, false);
        got = s && pt_backward(s) == PT_OK ? pt_grad(leaf) : NULL;
        pt_release(s);
        pt_release(yg);
        pt_release(y);
    }
    pt_release(x);
    pt_release(wt);
    return got;
}
static pt_tensor *call_grad_x(pt_tensor **in, const void *p) { return conv_grad(in, p, 0); }
static pt_tensor *call_grad_weight(pt_tensor **in, const void *p) { return conv_grad(in, p, 1); }

/* One conv kind called directly on a (in layout la) and b. */
static void run_kind(const char *kind, const char *name, ht *a, layout la, ht *b, case_fn fn, const conv_params *cp,
                     const expect *e) {
    char full[400];
    ht *in[2] = {a, b};
    const layout lays[2] = {la, LAY_C};
    snprintf(full, sizeof full, "%s %s", kind, name);
    run_case(full, 2, in, lays, fn, cp, e, TOL_CONV, CF_CONTIGUOUS);
}

void conv_grad_cases(ht *x, ht *wt, const pt_window2d *w, int64_t groups, layout lay, const char *name,
                     lcg *rng) {
    const int64_t *xs = x->shape, *ws = wt->shape;
    const int64_t oh = (xs[2] + 2 * w->padding[0] - w->dilation[0] * (ws[2] - 1) - 1) / w->stride[0] + 1;
    const int64_t ow = (xs[3] + 2 * w->padding[1] - w->dilation[1] * (ws[3] - 1) - 1) / w->stride[1] + 1;
    const int64_t ys[4] = {xs[0], ws[0], oh, ow};
    const conv_params cp = {{{w->stride[0], w->stride[1]}, {w->padding[0], w->padding[1]},
                             {w->dilation[0], w->dilation[1]}, groups},
                            xs[2], xs[3], ws[2], ws[3]};
    ht *g = ht_new(x->dtype, 4, ys);
    ht_fill(g, (domain){DOM_UNIFORM, -1, 1}, rng);
    const double k_fwd = (double)(ws[1] * ws[2] * ws[3]), k_data = (double)(ws[0] / groups * ws[2] * ws[3]);
    const double k_weight = (double)(xs[0] * oh * ow);
    expect e = {0}, ed = {0}, ew = {0};
    expect_new(&e, x->dtype, ys, k_fwd);
    for_each_term(xs, ws, ys, w, groups, visit_forward, &(terms){x, wt, &e});
    expect_new(&ed, x->dtype, xs, k_data);
    for_each_term(xs, ws, ys, w, groups, visit_data, &(terms){g, wt, &ed});
    expect_new(&ew, x->dtype, ws, k_weight);
    for_each_term(xs, ws, ys, w, groups, visit_weight, &(terms){x, g, &ew});
    run_kind("conv2d_direct", name, x, lay, wt, call_direct, &cp, &e);
    run_kind("conv2d_backward_data", name, g, LAY_C, wt, call_bwd_data, &cp, &ed);
    run_kind("conv2d_backward_weight", name, x, lay, g, call_bwd_weight, &cp, &ew);
    expect_free(&e);
    char full[400];
    {
        ht *in[3] = {x, wt, g};
        const layout lays[3] = {lay, LAY_C, LAY_C};
        snprintf(full, sizeof full, "conv2d backward dx %s", name);
        run_case(full, 3, in, lays, call_grad_x, &cp, &ed, TOL_CONV, CF_CONTIGUOUS);
        snprintf(full, sizeof full, "conv2d backward dweight %s", name);
        run_case(full, 3, in, lays, call_grad_weight, &cp, &ew, TOL_CONV, CF_CONTIGUOUS);
    }
    expect_free(&ed);
    expect_free(&ew);
    ht_free(g);
}
