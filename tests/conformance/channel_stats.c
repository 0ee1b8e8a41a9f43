/* CHANNEL_STATS against float64 references: pt_channel_stats's rows (each
 * channel's mean and biased variance over N and the dims after C) and its
 * gradient through autograd, for x contiguous and as views, with and
 * without dims after C, one value per channel (variance 0) and a large
 * offset (where E[x^2] - E[x]^2 would cancel). A device without the kind
 * takes the composed path, which must give the same numbers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "conformance.h"

/* Channel c's values of x [N, C, ...] (row-major host values), in order. */
static void channel_values(const ht *x, int64_t c, void (*visit)(double v, void *ctx), void *ctx) {
    const int64_t n = x->shape[0], ch = x->shape[1], l = x->numel / (n * ch);
    for (int64_t b = 0; b < n; ++b)
        for (int64_t j = 0; j < l; ++j) visit(x->v[(b * ch + c) * l + j], ctx);
}

typedef struct moments {
    double count, sum, abs_sum, mean, sq, abs_dev;
} moments;

static void add_value(double v, void *ctx) {
    moments *m = ctx;
    m->count += 1;
    m->sum += v;
    m->abs_sum += fabs(v);
}

static void add_deviation(double v, void *ctx) {
    moments *m = ctx;
    const double d = v - m->mean;
    m->sq += d * d;
    m->abs_dev += fabs(d);
}

/* [2, C]: means, then biased variances. acc: the terms' magnitudes (the
 * mean's rounding error of each value, scaled by 2 |x - mean| / M for the
 * variance). */
static void ref_stats(const ht *x, expect *e) {
    const int64_t ch = x->shape[1], shape[2] = {2, ch};
    e->val = ht_new(x->dtype, 2, shape);
    e->acc = calloc((size_t)(2 * ch), sizeof(double));
    e->K = (double)(x->numel / ch);
    for (int64_t c = 0; c < ch; ++c) {
        moments m = {0};
        channel_values(x, c, add_value, &m);
        m.mean = m.sum / m.count;
        channel_values(x, c, add_deviation, &m);
        e->val->v[c] = m.mean;
        e->val->v[ch + c] = m.sq / m.count;
        e->acc[c] = m.abs_sum / m.count;
        e->acc[ch + c] = m.sq / m.count + 2 * (m.abs_dev / m.count) * (m.abs_sum / m.count);
    }
}

/* d sum(stats * w) / dx = w[0][c] / M + w[1][c] * 2 (x - mean_c) / M. */
static void ref_stats_grad(const ht *x, const ht *w, expect *e) {
    const int64_t n = x->shape[0], ch = x->shape[1], l = x->numel / (n * ch);
    e->val = ht_new(x->dtype, x->ndim, x->shape);
    e->acc = calloc((size_t)(x->numel > 0 ? x->numel : 1), sizeof(double));
    e->K = (double)(n * l);
    const double count = (double)(n * l);
    for (int64_t c = 0; c < ch; ++c) {
        moments m = {0};
        channel_values(x, c, add_value, &m);
        m.mean = m.sum / m.count;
        for (int64_t b = 0; b < n; ++b)
            for (int64_t j = 0; j < l; ++j) {
                const int64_t i = (b * ch + c) * l + j;
                const double d = x->v[i] - m.mean;
                e->val->v[i] = w->v[c] / count + w->v[ch + c] * 2 * d / count;
                e->acc[i] = fabs(w->v[c]) / count + fabs(w->v[ch + c]) * 2 * (fabs(x->v[i]) + m.abs_sum / count) / count;
            }
    }
}

static pt_tensor *call_stats(pt_tensor **in, const void *p) {
    (void)p;
    return pt_channel_stats(in[0]);
}

static pt_tensor *call_stats_grad(pt_tensor **in, const void *p) {
    (void)p;
    pt_tensor *x = pt_contiguous(in[0]), *got = NULL;
    if (x && pt_set_requires_grad(x, true) == PT_OK) {
        pt_tensor *stats = pt_channel_stats(x), *weighted = pt_mul(stats, in[1]);
        pt_tensor *s = pt_sum(weighted, PT_ALL, false);
        got = s && pt_backward(s) == PT_OK ? pt_grad(x) : NULL;
        pt_release(s);
        pt_release(weighted);
        pt_release(stats);
    }
    pt_release(x);
    return got;
}

static void stats_cases(pt_dtype t) {
    lcg g;
    lcg_seed(&g, 123 + (uint64_t)t);
    static const struct {
        int ndim;
        int64_t shape[4];
        layout lay;
        domain d;
    } fams[] = {
        {4, {4, 3, 5, 6}, LAY_C, {DOM_UNIFORM, -2, 2}},
        {4, {3, 2, 7, 5}, LAY_T, {DOM_UNIFORM, -1, 3}},
        {3, {5, 4, 9}, LAY_O, {DOM_UNIFORM, -4, 1}},
        {2, {6, 5}, LAY_C, {DOM_UNIFORM, -1, 1}},       /* [N, C]: batch norm 1-D */
        {3, {1, 3, 1}, LAY_C, {DOM_UNIFORM, -1, 1}},    /* one value per channel: variance 0 */
        {4, {2, 3, 4, 4}, LAY_C, {DOM_UNIFORM, 99, 101}}, /* far from 0: no cancellation allowed */
    };
    for (size_t k = 0; k < sizeof fams / sizeof fams[0]; ++k) {
        ht *x = ht_new(t, fams[k].ndim, fams[k].shape);
        ht_fill(x, fams[k].d, &g);
        ht_for_layout(x, fams[k].lay);
        char xs[64], name[160];
        operand_str(x, fams[k].lay, xs, sizeof xs);
        expect e = {0};
        ref_stats(x, &e);
        snprintf(name, sizeof name, "channel_stats %s x=%s", pt_dtype_name(t), xs);
        run_case(name, 1, &x, &fams[k].lay, call_stats, NULL, &e, TOL_MEAN, 0);
        expect_free(&e);

        const int64_t wshape[2] = {2, fams[k].shape[1]};
        ht *w = ht_new(t, 2, wshape);
        ht_fill(w, (domain){DOM_UNIFORM, -1, 1}, &g);
        expect eg = {0};
        ref_stats_grad(x, w, &eg);
        ht *in[2] = {x, w};
        const layout lays[2] = {fams[k].lay, LAY_C};
        snprintf(name, sizeof name, "channel_stats backward %s x=%s", pt_dtype_name(t), xs);
        run_case(name, 2, in, lays, call_stats_grad, NULL, &eg, TOL_MEAN, 0);
        expect_free(&eg);
        ht_free(w);
        ht_free(x);
    }
}

void run_channel_stats_cases(void) {
    FOR_EACH_DTYPE_IN(t, PT_DTYPES_FLOAT) stats_cases(t);
}
