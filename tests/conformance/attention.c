/* pt_scaled_dot_product_attention against a float64 reference: the output
 * and the gradients of sum(o * w) in q, k and v, for [T, D], [N, T, D] and
 * [B, H, T, D], Tq != Tk, Dv != D, odd lengths on both sides of the cpu
 * kernel's blocks (32 rows, 64 keys), causal, a u8 mask (with rows that
 * keep no key: 0 out, no gradient), an additive mask with -inf entries, a
 * transposed q (a view whose last stride is not 1), masks broadcast along
 * any dims, and every float dtype.
 * Devices with the ATTENTION kinds run them fused; elsewhere the composed
 * path must give the same numbers. The "attention long" cases (T up to
 * 1024, heads up to 300 wide) run only in the filtered `attention_*` tests,
 * not in the full suite. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

enum { MASK_NONE, MASK_KEEP, MASK_ADD };

typedef struct attn_case {
    int mask;    /* MASK_* */
    bool causal;
    double scale;
    int grad;    /* -1: the output; 0, 1, 2: the gradient of q, k, v */
} attn_case;

/* Element (bh, i, j) of the mask m broadcast to q's scores [..., Tq, Tk]
 * (bh: the leading dims of q flattened). */
static double mask_at(const ht *m, const ht *q, int64_t bh, int64_t i, int64_t j) {
    const int nd = q->ndim;
    int64_t idx[4] = {0, 0, 0, 0};
    for (int d = nd - 3; d >= 0; --d) { /* the leading dims, innermost first */
        idx[d] = bh % q->shape[d];
        bh /= q->shape[d];
    }
    idx[nd - 2] = i;
    idx[nd - 1] = j;
    int64_t at = 0;
    for (int k = 0; k < m->ndim; ++k) {
        const int64_t x = m->shape[k] == 1 ? 0 : idx[nd - m->ndim + k];
        at = at * m->shape[k] + x;
    }
    return m->v[at];
}

/* Probabilities of row i (p[Tk]) and its accumulated magnitude of scores
 * (sacc[Tk]); false when no key takes part (the row is 0). */
static bool row_probs(const ht *q, const ht *k, const ht *m, const attn_case *c, int64_t bh, int64_t i, double *p,
                      double *sacc) {
    const int nd = q->ndim;
    const int64_t tq = q->shape[nd - 2], d = q->shape[nd - 1], tk = k->shape[nd - 2];
    double mx = -INFINITY;
    for (int64_t j = 0; j < tk; ++j) {
        double s = 0, a = 0;
        for (int64_t x = 0; x < d; ++x) {
            const double t = q->v[(bh * tq + i) * d + x] * k->v[(bh * tk + j) * d + x];
            s += t;
            a += fabs(t);
        }
        s *= c->scale;
        a *= fabs(c->scale);
        if (c->mask == MASK_ADD) {
            const double x = mask_at(m, q, bh, i, j);
            s += x;
            a += isinf(x) ? 0 : fabs(x);
        }
        if ((c->mask == MASK_KEEP && mask_at(m, q, bh, i, j) == 0) || (c->causal && j > i)) s = -INFINITY;
        p[j] = s;
        sacc[j] = a;
        if (s > mx) mx = s;
    }
    if (mx == -INFINITY) {
        for (int64_t j = 0; j < tk; ++j) p[j] = 0;
        return false;
    }
    double sum = 0;
    for (int64_t j = 0; j < tk; ++j) sum += (p[j] = exp(p[j] - mx));
    for (int64_t j = 0; j < tk; ++j) p[j] /= sum;
    return true;
}

/* The output (grad -1) or the gradient of sum(o * w) in q, k or v, with
 * per-element magnitudes: each term's size times (1 + its score's). */
static void ref_attention(const ht *q, const ht *k, const ht *v, const ht *m, const ht *w, const attn_case *c,
                          expect *e) {
    const int nd = q->ndim;
    const int64_t tq = q->shape[nd - 2], d = q->shape[nd - 1], tk = k->shape[nd - 2], dv = v->shape[nd - 1];
    const int64_t bh = q->numel / (tq * d);
    const ht *like = c->grad < 0 ? NULL : c->grad == 0 ? q : c->grad == 1 ? k : v;
    if (like) {
        e->val = ht_new(q->dtype, like->ndim, like->shape);
    } else {
        int64_t s[PT_MAX_DIMS];
        memcpy(s, q->shape, sizeof s);
        s[nd - 1] = dv;
        e->val = ht_new(q->dtype, nd, s);
    }
    e->acc = calloc((size_t)(e->val->numel > 0 ? e->val->numel : 1), sizeof(double));
    e->K = (double)(tk + d + dv);
    double *p = malloc(sizeof(double) * (size_t)tk), *sacc = malloc(sizeof(double) * (size_t)tk);
    double *dp = malloc(sizeof(double) * (size_t)tk);
    double *out = e->val->v, *acc = e->acc;
    for (int64_t b = 0; b < bh; ++b)
        for (int64_t i = 0; i < tq; ++i) {
            if (!row_probs(q, k, m, c, b, i, p, sacc)) continue;
            if (c->grad < 0) {
                for (int64_t x = 0; x < dv; ++x)
                    for (int64_t j = 0; j < tk; ++j) {
                        const double t = p[j] * v->v[(b * tk + j) * dv + x];
                        out[(b * tq + i) * dv + x] += t;
                        acc[(b * tq + i) * dv + x] += fabs(t) * (1 + sacc[j]);
                    }
                continue;
            }
            const double *wi = w->v + (b * tq + i) * dv;
            double delta = 0, dacc = 0;
            for (int64_t j = 0; j < tk; ++j) {
                dp[j] = 0;
                for (int64_t x = 0; x < dv; ++x) dp[j] += wi[x] * v->v[(b * tk + j) * dv + x];
                delta += p[j] * dp[j];
                dacc += p[j] * fabs(dp[j]);
            }
            for (int64_t j = 0; j < tk; ++j) {
                const double ds = p[j] * (dp[j] - delta) * c->scale;
                const double da = p[j] * (fabs(dp[j]) + dacc) * fabs(c->scale) * (1 + sacc[j]);
                if (c->grad == 0)
                    for (int64_t x = 0; x < d; ++x) {
                        out[(b * tq + i) * d + x] += ds * k->v[(b * tk + j) * d + x];
                        acc[(b * tq + i) * d + x] += da * fabs(k->v[(b * tk + j) * d + x]);
                    }
                else if (c->grad == 1)
                    for (int64_t x = 0; x < d; ++x) {
                        out[(b * tk + j) * d + x] += ds * q->v[(b * tq + i) * d + x];
                        acc[(b * tk + j) * d + x] += da * fabs(q->v[(b * tq + i) * d + x]);
                    }
                else
                    for (int64_t x = 0; x < dv; ++x) {
                        out[(b * tk + j) * dv + x] += p[j] * wi[x];
                        acc[(b * tk + j) * dv + x] += p[j] * fabs(wi[x]) * (1 + sacc[j]);
                    }
            }
        }
    for (int64_t i = 0; i < e->val->numel; ++i) out[i] = quantize(q->dtype, out[i]);
    free(p);
    free(sacc);
    free(dp);
}

/* in: q, k, v, then the mask when there is one, then w for a gradient. */
static pt_tensor *call_attention(pt_tensor **in, const void *params) {
    const attn_case *c = params;
    pt_tensor *mask = c->mask != MASK_NONE ? in[3] : NULL;
    if (c->grad < 0) return pt_scaled_dot_product_attention(in[0], in[1], in[2], mask, c->causal, c->scale);
    pt_tensor *w = in[c->mask != MASK_NONE ? 4 : 3], *got = NULL;
    pt_tensor *leaf[3] = {pt_contiguous(in[0]), pt_contiguous(in[1]), pt_contiguous(in[2])};
    if (!leaf[0] || !leaf[1] || !leaf[2]) { /* keeps the refusal's status: a skip where unsupported */
        for (int i = 0; i < 3; ++i) pt_release(leaf[i]);
        return NULL;
    }
    for (int i = 0; i < 3; ++i) pt_set_requires_grad(leaf[i], true);
    pt_tensor *o = pt_scaled_dot_product_attention(leaf[0], leaf[1], leaf[2], mask, c->causal, c->scale);
    pt_tensor *prod = pt_mul(o, w), *s = pt_sum(prod, PT_ALL, false);
    if (s && pt_backward(s) == PT_OK) got = pt_grad(leaf[c->grad]);
    pt_release(s);
    pt_release(prod);
    pt_release(o);
    for (int i = 0; i < 3; ++i) pt_release(leaf[i]);
    return got;
}

typedef struct attn_shape {
    int ndim;
    int64_t lead[2]; /* the leading dims (ndim - 2 of them) */
    int64_t tq, tk, d, dv;
    int mask_ndim;      /* 0: the mask is [Tq, Tk] */
    int64_t mask[4];    /* else its shape, broadcast to the scores' */
} attn_shape;

static void shape_of(const attn_shape *s, int64_t t, int64_t last, int64_t out[4]) {
    for (int i = 0; i < s->ndim - 2; ++i) out[i] = s->lead[i];
    out[s->ndim - 2] = t;
    out[s->ndim - 1] = last;
}

static void one_shape(pt_dtype t, const attn_shape *sh, int mask, bool causal, layout qlay, bool long_case, lcg *g) {
    int64_t qs[4], ks[4], vs[4], os[4];
    shape_of(sh, sh->tq, sh->d, qs);
    shape_of(sh, sh->tk, sh->d, ks);
    shape_of(sh, sh->tk, sh->dv, vs);
    shape_of(sh, sh->tq, sh->dv, os);
    ht *q = ht_new(t, sh->ndim, qs), *k = ht_new(t, sh->ndim, ks), *v = ht_new(t, sh->ndim, vs);
    ht *w = ht_new(t, sh->ndim, os);
    const domain u = {DOM_UNIFORM, -1, 1};
    ht_fill(q, (domain){DOM_UNIFORM, -2, 2}, g);
    ht_fill(k, (domain){DOM_UNIFORM, -2, 2}, g);
    ht_fill(v, u, g);
    ht_fill(w, u, g);
    ht *m = NULL;
    if (mask != MASK_NONE) {
        const int64_t ms[2] = {sh->tq, sh->tk};
        m = sh->mask_ndim ? ht_new(mask == MASK_KEEP ? PT_U8 : t, sh->mask_ndim, sh->mask)
                          : ht_new(mask == MASK_KEEP ? PT_U8 : t, 2, ms);
        for (int64_t i = 0; i < m->numel; ++i) {
            const double r = lcg_unit(g);
            m->v[i] = mask == MASK_KEEP ? (r < 0.7 ? 1 : 0) : (r < 0.2 ? -INFINITY : quantize(t, 4 * r - 2));
        }
        if (mask == MASK_KEEP && sh->tq > 2 && !sh->mask_ndim) /* a row that keeps no key: 0, no gradient */
            for (int64_t j = 0; j < sh->tk; ++j) m->v[1 * sh->tk + j] = 0;
    }
    char qn[64], mn[64] = "", name[260];
    operand_str(q, qlay, qn, sizeof qn);
    if (m && sh->mask_ndim) shape_str(m->ndim, m->shape, mn, sizeof mn);
    static const char *const mask_names[] = {"", " keep-mask", " add-mask"};
    static const char *const what[] = {"", " dq", " dk", " dv"};
    for (int grad = -1; grad < 3; ++grad) {
        const attn_case c = {mask, causal, 1.0 / sqrt((double)sh->d), grad};
        expect e = {0};
        ref_attention(q, k, v, m, w, &c, &e);
        ht *in[5] = {q, k, v, m ? m : w, w};
        const layout lays[5] = {qlay, LAY_C, LAY_C, LAY_C, LAY_C};
        snprintf(name, sizeof name, "attention%s %s q=%s k=[..%lld, %lld] v=[..%lld]%s%s%s%s", long_case ? " long" : "",
                 pt_dtype_name(t), qn, (long long)sh->tk, (long long)sh->d, (long long)sh->dv, causal ? " causal" : "",
                 mask_names[mask], mn, what[grad + 1]);
        const int nin = (m ? 4 : 3) + (grad >= 0 ? 1 : 0);
        if (!long_case || g_filter) run_case(name, nin, in, lays, call_attention, &c, &e, TOL_ATTENTION, 0);
        expect_free(&e);
    }
    ht_free(q);
    ht_free(k);
    ht_free(v);
    ht_free(w);
    ht_free(m);
}

/* PT_TEST_ATTENTION_PATH=fused: the cases above must have run on the
 * device's ATTENTION kinds in f32 and f64, not on the composed path. The
 * core sends ATTENTION_BACKWARD only for the gradient of an ATTENTION the
 * device ran (the composed path differentiates products and softmax), so
 * its having been sent in a dtype proves both kinds ran there. */
static void check_attention_path(void) {
    const char *want = getenv("PT_TEST_ATTENTION_PATH");
    if (!want || strcmp(want, "fused") != 0) return;
    const pt_dtype dts[2] = {PT_F32, PT_F64};
    for (int i = 0; i < 2; ++i) {
        char name[96];
        snprintf(name, sizeof name, "attention ran fused in %s", pt_dtype_name(dts[i]));
        if (pt_device_supports(g_dev, PT_OP_ATTENTION, dts[i]) != PT_OK)
            report_fail(name, "the device refuses ATTENTION: %s", pt_last_error());
        else if (!(pt_op_dtypes_reached(PT_OP_ATTENTION_BACKWARD) & PT_DTYPE_BIT(dts[i])))
            report_fail(name, "no ATTENTION_BACKWARD reached the device: the gradients were composed");
        else
            report_pass(name);
        pt_clear_error();
    }
}

void run_attention_cases(void) {
    static const attn_shape shapes[] = {
        {2, {0, 0}, 1, 1, 1, 1, 0, {0}},        /* T = 1 */
        {4, {2, 3}, 5, 5, 4, 4, 0, {0}},        /* [B, H, T, D] */
        {4, {1, 2}, 7, 13, 8, 3, 0, {0}},       /* Tq != Tk, Dv != D */
        {3, {2, 0}, 33, 33, 6, 5, 0, {0}},      /* past one block of 32 rows */
        {3, {1, 0}, 65, 70, 5, 7, 0, {0}},      /* past one block of 64 keys */
        {2, {0, 0}, 17, 9, 3, 2, 0, {0}},       /* Tq > Tk, causal rows past the keys */
    };
    lcg g;
    lcg_seed(&g, 2024);
    FOR_EACH_DTYPE_IN(t, PT_DTYPES_FLOAT) {
        const bool half = pt_dtype_is_half(t);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
            for (int mask = MASK_NONE; mask <= MASK_ADD; ++mask)
                for (int causal = 0; causal < 2; ++causal) {
                    if (half && (mask != MASK_NONE || s > 2)) continue; /* the f32 path, rounded: a few */
                    one_shape(t, &shapes[s], mask, causal, s == 1 && mask == MASK_NONE ? LAY_T : LAY_C, false, &g);
                }
    }
    /* Long sequences (the filtered runs only): T from 129 to 1024. */
    static const attn_shape longs[] = {
        {4, {1, 2}, 129, 129, 16, 16, 0, {0}},
        {3, {1, 0}, 257, 300, 8, 8, 0, {0}},
        {2, {0, 0}, 1024, 1024, 16, 16, 0, {0}},
    };
    for (size_t s = 0; s < sizeof longs / sizeof longs[0]; ++s) {
        one_shape(PT_F32, &longs[s], MASK_NONE, true, LAY_C, true, &g);
        one_shape(PT_F32, &longs[s], s == 2 ? MASK_NONE : MASK_KEEP, false, LAY_C, true, &g);
        if (s < 2) one_shape(PT_F64, &longs[s], MASK_ADD, true, LAY_C, true, &g);
    }
    /* Masks broadcast along other dims than B and H: one per batch row of
     * keys (padding), per head, per query row (rows of zeros in a keep mask
     * and of -inf in an additive one keep no key). */
    static const attn_shape masked[] = {
        {4, {2, 3}, 5, 6, 4, 4, 4, {2, 1, 1, 6}},
        {4, {2, 3}, 5, 6, 4, 4, 3, {3, 5, 6}},
        {4, {2, 3}, 5, 6, 4, 4, 2, {5, 1}},
        {3, {2, 0}, 9, 7, 3, 3, 1, {7}},
    };
    for (size_t s = 0; s < sizeof masked / sizeof masked[0]; ++s)
        for (int mask = MASK_KEEP; mask <= MASK_ADD; ++mask) {
            one_shape(PT_F32, &masked[s], mask, s % 2 == 0, LAY_C, false, &g);
            one_shape(PT_F64, &masked[s], mask, s % 2 == 1, LAY_C, false, &g);
        }
    /* Wide heads (the filtered runs only): D and Dv up to 256, and past it
     * (devices that refuse such heads compose them). */
    static const attn_shape wide[] = {
        {3, {2, 0}, 70, 45, 256, 200, 0, {0}},
        {2, {0, 0}, 20, 33, 300, 16, 0, {0}},
    };
    for (size_t s = 0; s < sizeof wide / sizeof wide[0]; ++s) {
        one_shape(PT_F32, &wide[s], MASK_KEEP, true, LAY_C, true, &g);
        one_shape(PT_F64, &wide[s], MASK_ADD, false, LAY_C, true, &g);
    }
    check_attention_path();
}
