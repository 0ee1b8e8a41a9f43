/* Float64 reference implementations, written from the op semantics in
 * include/portable/ops.h (NumPy broadcasting, torch-like reductions). They
 * compute on the exact input values (already quantized to the input dtype)
 * in double precision; integer semantics (truncating division, /0 -> 0) are
 * reproduced exactly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

/* ---- dtype promotion: u8 < i32 < i64 < f16 < bf16 < f32 < f64, and f16
 * with bf16 gives f32 (neither holds the other) ---- */

static int rank(pt_dtype t) {
    switch (t) {
    case PT_U8: return 0;
    case PT_I32: return 1;
    case PT_I64: return 2;
    case PT_F16: return 3;
    case PT_BF16: return 4;
    case PT_F32: return 5;
    default: return 6;
    }
}

pt_dtype promote(pt_dtype a, pt_dtype b) {
    if ((a == PT_F16 && b == PT_BF16) || (a == PT_BF16 && b == PT_F16)) return PT_F32;
    return rank(a) >= rank(b) ? a : b;
}

bool broadcast_shape(int na, const int64_t *sa, int nb, const int64_t *sb, int *nout,
                     int64_t *out) {
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; ++i) {
        int ia = i - (n - na), ib = i - (n - nb);
        int64_t a = ia >= 0 ? sa[ia] : 1, b = ib >= 0 ? sb[ib] : 1;
        if (a != b && a != 1 && b != 1) return false;
        out[i] = (a == 1) ? b : a;
    }
    *nout = n;
    return true;
}

/* Flat index into x of the element at multi-index idx of a broadcast shape
 * with n dims. */
static int64_t bcast_index(const ht *x, int n, const int64_t *idx) {
    int64_t str[PT_MAX_DIMS], off = 0;
    contiguous_strides(x->ndim, x->shape, str);
    for (int i = 0; i < x->ndim; ++i) {
        int oi = i + (n - x->ndim);
        if (x->shape[i] != 1) off += idx[oi] * str[i];
    }
    return off;
}

static void unravel(int64_t flat, int n, const int64_t *shape, int64_t *idx) {
    for (int i = n - 1; i >= 0; --i) {
        int64_t s = shape[i] > 0 ? shape[i] : 1;
        idx[i] = flat % s;
        flat /= s;
    }
}

/* Integer results wrap like the C types do (the tests keep values in range,
 * this only makes the reference well defined). */
static double store(pt_dtype t, double v) {
    if (pt_dtype_is_float(t) || isnan(v)) return v;
    return quantize(t, v);
}

/* ---- element-wise ---- */

ht *ref_map1(const ht *x, ref1_fn f, pt_dtype t, pt_dtype out_t) {
    ht *o = ht_new(out_t, x->ndim, x->shape);
    for (int64_t i = 0; i < x->numel; ++i) o->v[i] = store(out_t, f(quantize(t, x->v[i]), t));
    return o;
}

ht *ref_clamp(const ht *x, double lo, double hi, pt_dtype t) {
    ht *o = ht_new(t, x->ndim, x->shape);
    /* an infinite bound is no bound, in any dtype */
    const double ql = isinf(lo) ? lo : quantize(t, lo), qh = isinf(hi) ? hi : quantize(t, hi);
    for (int64_t i = 0; i < x->numel; ++i) {
        double v = quantize(t, x->v[i]);
        o->v[i] = isnan(v) ? v : v < ql ? ql : v > qh ? qh : v;
    }
    return o;
}

ht *ref_map2(const ht *a, const ht *b, ref2_fn f, pt_dtype t, pt_dtype out_t) {
    int n;
    int64_t shape[PT_MAX_DIMS], idx[PT_MAX_DIMS];
    if (!broadcast_shape(a->ndim, a->shape, b->ndim, b->shape, &n, shape)) return NULL;
    ht *o = ht_new(out_t, n, shape);
    for (int64_t i = 0; i < o->numel; ++i) {
        unravel(i, n, shape, idx);
        double va = quantize(t, a->v[bcast_index(a, n, idx)]);
        double vb = quantize(t, b->v[bcast_index(b, n, idx)]);
        o->v[i] = store(out_t, f(va, vb, t));
    }
    return o;
}

ht *ref_where(const ht *c, const ht *a, const ht *b, pt_dtype out_t) {
    int n1, n;
    int64_t s1[PT_MAX_DIMS], shape[PT_MAX_DIMS], idx[PT_MAX_DIMS];
    if (!broadcast_shape(c->ndim, c->shape, a->ndim, a->shape, &n1, s1)) return NULL;
    if (!broadcast_shape(n1, s1, b->ndim, b->shape, &n, shape)) return NULL;
    ht *o = ht_new(out_t, n, shape);
    for (int64_t i = 0; i < o->numel; ++i) {
        unravel(i, n, shape, idx);
        double vc = c->v[bcast_index(c, n, idx)];
        double v = vc != 0 ? a->v[bcast_index(a, n, idx)] : b->v[bcast_index(b, n, idx)];
        o->v[i] = store(out_t, quantize(out_t, v));
    }
    return o;
}

/* ---- reductions ---- */

/* Splits x into [outer, r, inner] around dim (PT_ALL: [1, numel, 1]) and
 * computes the result shape. */
static void reduce_geometry(const ht *x, int dim, bool keepdim, int64_t *outer, int64_t *r,
                            int64_t *inner, int *ond, int64_t *oshape) {
    if (dim == PT_ALL || x->ndim == 0) { /* a 0-D tensor's dim 0 / -1 is its one element */
        *outer = 1;
        *r = x->numel;
        *inner = 1;
        *ond = keepdim ? x->ndim : 0;
        for (int i = 0; i < *ond; ++i) oshape[i] = 1;
        return;
    }
    if (dim < 0) dim += x->ndim;
    *outer = 1;
    *inner = 1;
    for (int i = 0; i < dim; ++i) *outer *= x->shape[i];
    for (int i = dim + 1; i < x->ndim; ++i) *inner *= x->shape[i];
    *r = x->shape[dim];
    int n = 0;
    for (int i = 0; i < x->ndim; ++i) {
        if (i == dim) {
            if (keepdim) oshape[n++] = 1;
        } else {
            oshape[n++] = x->shape[i];
        }
    }
    *ond = n;
}

/* Whether every partial sum of the values is exactly representable in t
 * (integer-valued data with a small total): then summation order does not
 * matter and the result must be exact. */
static bool sums_exact(pt_dtype t, double abs_total, bool integral) {
    /* 16-bit dtypes accumulate in f32 and round the result once: the
     * rounding is the tolerance's unit-roundoff term (runner.c). */
    double limit = (t == PT_F32 || t == PT_F16 || t == PT_BF16) ? 16777216.0 : 9007199254740992.0;
    return !pt_dtype_is_float(t) || (integral && abs_total < limit);
}

void ref_reduce(const ht *x, red_kind k, int dim, bool keepdim, pt_dtype out_t, expect *e) {
    int64_t outer, r, inner, oshape[PT_MAX_DIMS];
    int ond;
    reduce_geometry(x, dim, keepdim, &outer, &r, &inner, &ond, oshape);
    e->val = ht_new(out_t, ond, oshape);
    e->acc = calloc((size_t)(e->val->numel > 0 ? e->val->numel : 1), sizeof(double));
    e->K = (double)r;
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t in = 0; in < inner; ++in) {
            double s = 0, a = 0, best = 0;
            int64_t arg = 0;
            bool integral = true;
            for (int64_t j = 0; j < r; ++j) {
                double v = x->v[(o * r + j) * inner + in];
                s += v;
                a += fabs(v);
                integral = integral && v == trunc(v);
                /* first maximum; a NaN counts as the maximum (first NaN wins) */
                if (j == 0 || (!isnan(best) && (isnan(v) || v > best))) {
                    best = v;
                    arg = j;
                }
            }
            int64_t oi = o * inner + in;
            bool exact = sums_exact(x->dtype, a, integral);
            switch (k) {
            case RED_SUM:
                e->val->v[oi] = store(out_t, s);
                e->acc[oi] = exact ? 0 : a;
                break;
            case RED_MEAN:
                e->val->v[oi] = r ? s / (double)r : NAN;
                e->acc[oi] = exact ? 0 : a / (double)(r ? r : 1);
                break;
            case RED_MAX: e->val->v[oi] = best; break;
            case RED_ARGMAX: e->val->v[oi] = (double)arg; break;
            }
        }
    }
}

void ref_norm_dims(const ht *x, int n, const int *dims, expect *e) {
    bool red[PT_MAX_DIMS] = {false};
    if (n == 0)
        for (int i = 0; i < x->ndim; ++i) red[i] = true;
    for (int i = 0; i < n; ++i) red[dims[i] < 0 ? dims[i] + x->ndim : dims[i]] = true;
    int ond = 0;
    int64_t oshape[PT_MAX_DIMS], idx[PT_MAX_DIMS], ostr[PT_MAX_DIMS];
    for (int i = 0; i < x->ndim; ++i)
        if (!red[i]) oshape[ond++] = x->shape[i];
    e->val = ht_new(x->dtype, ond, oshape);
    e->acc = calloc((size_t)(e->val->numel > 0 ? e->val->numel : 1), sizeof(double));
    contiguous_strides(ond, oshape, ostr);
    double *ssq = calloc((size_t)(e->val->numel > 0 ? e->val->numel : 1), sizeof(double));
    bool integral = true;
    for (int64_t i = 0; i < x->numel; ++i) {
        unravel(i, x->ndim, x->shape, idx);
        int64_t oi = 0;
        for (int d = 0, k = 0; d < x->ndim; ++d)
            if (!red[d]) oi += idx[d] * ostr[k++];
        ssq[oi] += x->v[i] * x->v[i];
        integral = integral && x->v[i] == trunc(x->v[i]);
    }
    e->K = e->val->numel ? (double)(x->numel / e->val->numel) : 0;
    for (int64_t o = 0; o < e->val->numel; ++o) {
        e->val->v[o] = sqrt(ssq[o]);
        /* The sum of squares is a sum of positive terms: its relative error
         * bounds the norm's. */
        e->acc[o] = sums_exact(x->dtype, ssq[o], integral) ? 0 : e->val->v[o];
    }
    free(ssq);
}

void ref_softmax(const ht *x, int dim, bool log_, expect *e) {
    int64_t outer, r, inner, oshape[PT_MAX_DIMS];
    int ond;
    if (dim < 0) dim += x->ndim;
    reduce_geometry(x, dim, true, &outer, &r, &inner, &ond, oshape);
    e->val = ht_new(x->dtype, x->ndim, x->shape);
    e->acc = calloc((size_t)(x->numel > 0 ? x->numel : 1), sizeof(double));
    e->K = (double)r;
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t in = 0; in < inner; ++in) {
            double m = -INFINITY, s = 0;
            for (int64_t j = 0; j < r; ++j) m = fmax(m, x->v[(o * r + j) * inner + in]);
            for (int64_t j = 0; j < r; ++j) s += exp(x->v[(o * r + j) * inner + in] - m);
            double ls = log(s);
            for (int64_t j = 0; j < r; ++j) {
                int64_t i = (o * r + j) * inner + in;
                double z = x->v[i] - m;
                e->val->v[i] = log_ ? z - ls : exp(z - ls);
                /* log_softmax: absolute error follows |x - max| + log(sum) */
                e->acc[i] = log_ ? fabs(z) + fabs(ls) : fabs(e->val->v[i]);
            }
        }
    }
}

/* ---- matmul (NumPy semantics incl. 1-D operands and batch broadcast) ---- */

void ref_matmul(const ht *a, const ht *b, expect *e) {
    int an = a->ndim, bn = b->ndim;
    int64_t M = an >= 2 ? a->shape[an - 2] : 1, K = a->shape[an - 1];
    int64_t N = bn >= 2 ? b->shape[bn - 1] : 1;
    int nba = an > 2 ? an - 2 : 0, nbb = bn > 2 ? bn - 2 : 0;
    int nb = 0;
    int64_t bshape[PT_MAX_DIMS], bidx[PT_MAX_DIMS];
    broadcast_shape(nba, a->shape, nbb, b->shape, &nb, bshape);
    int ond = 0;
    int64_t oshape[PT_MAX_DIMS];
    for (int i = 0; i < nb; ++i) oshape[ond++] = bshape[i];
    if (an >= 2) oshape[ond++] = M;
    if (bn >= 2) oshape[ond++] = N;
    e->val = ht_new(a->dtype, ond, oshape);
    e->acc = calloc((size_t)(e->val->numel > 0 ? e->val->numel : 1), sizeof(double));
    e->K = (double)K;
    int64_t nbatch = 1;
    for (int i = 0; i < nb; ++i) nbatch *= bshape[i];
    /* strides of a's / b's batch dims (broadcast: 0) */
    int64_t astr[PT_MAX_DIMS] = {0}, bstr[PT_MAX_DIMS] = {0};
    {
        int64_t s = M * K;
        for (int i = nba - 1; i >= 0; --i) {
            astr[i + nb - nba] = a->shape[i] == 1 ? 0 : s;
            s *= a->shape[i];
        }
        s = K * N;
        for (int i = nbb - 1; i >= 0; --i) {
            bstr[i + nb - nbb] = b->shape[i] == 1 ? 0 : s;
            s *= b->shape[i];
        }
    }
    bool integral = true;
    for (int64_t i = 0; i < a->numel; ++i) integral = integral && a->v[i] == trunc(a->v[i]);
    for (int64_t i = 0; i < b->numel; ++i) integral = integral && b->v[i] == trunc(b->v[i]);
    for (int64_t bt = 0; bt < nbatch; ++bt) {
        unravel(bt, nb, bshape, bidx);
        int64_t ao = 0, bo = 0;
        for (int i = 0; i < nb; ++i) {
            ao += bidx[i] * astr[i];
            bo += bidx[i] * bstr[i];
        }
        for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
                double s = 0, acc = 0;
                for (int64_t k = 0; k < K; ++k) {
                    double t = a->v[ao + i * K + k] * b->v[bo + k * N + j];
                    s += t;
                    acc += fabs(t);
                }
                int64_t oi = (bt * M + i) * N + j;
                e->val->v[oi] = s;
                e->acc[oi] = sums_exact(a->dtype, acc, integral) ? 0 : acc;
            }
    }
}

/* ---- data movement ---- */

ht *ref_permute(const ht *x, const int *perm) {
    int64_t oshape[PT_MAX_DIMS], xstr[PT_MAX_DIMS], idx[PT_MAX_DIMS];
    for (int i = 0; i < x->ndim; ++i) oshape[i] = x->shape[perm[i]];
    contiguous_strides(x->ndim, x->shape, xstr);
    ht *o = ht_new(x->dtype, x->ndim, oshape);
    for (int64_t i = 0; i < o->numel; ++i) {
        unravel(i, x->ndim, oshape, idx);
        int64_t off = 0;
        for (int d = 0; d < x->ndim; ++d) off += idx[d] * xstr[perm[d]];
        o->v[i] = x->v[off];
    }
    return o;
}

ht *ref_narrow(const ht *x, int dim, int64_t start, int64_t len) {
    int64_t oshape[PT_MAX_DIMS], xstr[PT_MAX_DIMS], idx[PT_MAX_DIMS];
    memcpy(oshape, x->shape, sizeof oshape);
    oshape[dim] = len;
    contiguous_strides(x->ndim, x->shape, xstr);
    ht *o = ht_new(x->dtype, x->ndim, oshape);
    for (int64_t i = 0; i < o->numel; ++i) {
        unravel(i, x->ndim, oshape, idx);
        idx[dim] += start;
        int64_t off = 0;
        for (int d = 0; d < x->ndim; ++d) off += idx[d] * xstr[d];
        o->v[i] = x->v[off];
    }
    return o;
}

ht *ref_expand(const ht *x, int ndim, const int64_t *shape) {
    ht *o = ht_new(x->dtype, ndim, shape);
    int64_t idx[PT_MAX_DIMS];
    for (int64_t i = 0; i < o->numel; ++i) {
        unravel(i, ndim, shape, idx);
        o->v[i] = x->v[bcast_index(x, ndim, idx)];
    }
    return o;
}

ht *ref_cast(const ht *x, pt_dtype t) {
    ht *o = ht_new(t, x->ndim, x->shape);
    for (int64_t i = 0; i < x->numel; ++i) o->v[i] = quantize(t, x->v[i]);
    return o;
}

ht *ref_cat(int n, ht *const *xs, int dim) {
    int nd = xs[0]->ndim;
    if (dim < 0) dim += nd;
    int64_t oshape[PT_MAX_DIMS];
    memcpy(oshape, xs[0]->shape, sizeof oshape);
    oshape[dim] = 0;
    for (int k = 0; k < n; ++k) oshape[dim] += xs[k]->shape[dim];
    ht *o = ht_new(xs[0]->dtype, nd, oshape);
    int64_t idx[PT_MAX_DIMS], str[PT_MAX_DIMS];
    for (int64_t i = 0; i < o->numel; ++i) {
        unravel(i, nd, oshape, idx);
        int k = 0;
        while (idx[dim] >= xs[k]->shape[dim]) idx[dim] -= xs[k++]->shape[dim];
        contiguous_strides(nd, xs[k]->shape, str);
        int64_t off = 0;
        for (int d = 0; d < nd; ++d) off += idx[d] * str[d];
        o->v[i] = xs[k]->v[off];
    }
    return o;
}

ht *ref_stack(int n, ht *const *xs, int dim) {
    int nd = xs[0]->ndim;
    if (dim < 0) dim += nd + 1;
    int64_t oshape[PT_MAX_DIMS], idx[PT_MAX_DIMS], str[PT_MAX_DIMS];
    for (int d = 0, k = 0; d < nd + 1; ++d) oshape[d] = (d == dim) ? n : xs[0]->shape[k++];
    ht *o = ht_new(xs[0]->dtype, nd + 1, oshape);
    contiguous_strides(nd, xs[0]->shape, str);
    for (int64_t i = 0; i < o->numel; ++i) {
        unravel(i, nd + 1, oshape, idx);
        int64_t off = 0;
        for (int d = 0, k = 0; d < nd + 1; ++d)
            if (d != dim) off += idx[d] * str[k++];
        o->v[i] = xs[idx[dim]]->v[off];
    }
    return o;
}

ht *ref_gather(const ht *x, int dim, const ht *idx_t) {
    int nd = x->ndim;
    if (dim < 0) dim += nd;
    ht *o = ht_new(x->dtype, nd, idx_t->shape);
    int64_t idx[PT_MAX_DIMS], xstr[PT_MAX_DIMS];
    contiguous_strides(nd, x->shape, xstr);
    for (int64_t i = 0; i < o->numel; ++i) {
        unravel(i, nd, idx_t->shape, idx);
        idx[dim] = (int64_t)idx_t->v[i];
        int64_t off = 0;
        for (int d = 0; d < nd; ++d) off += idx[d] * xstr[d];
        o->v[i] = x->v[off];
    }
    return o;
}

ht *ref_one_hot(const ht *labels, int64_t classes, pt_dtype t) {
    int64_t oshape[PT_MAX_DIMS];
    memcpy(oshape, labels->shape, sizeof(int64_t) * (size_t)labels->ndim);
    oshape[labels->ndim] = classes;
    ht *o = ht_new(t, labels->ndim + 1, oshape);
    for (int64_t i = 0; i < labels->numel; ++i) {
        int64_t l = (int64_t)labels->v[i];
        if (l >= 0 && l < classes) o->v[i * classes + l] = 1;
    }
    return o;
}
