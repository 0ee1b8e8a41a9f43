/* Host tensors, deterministic data, and uploading them in layouts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <portable/half.h>

#include "conformance.h"

ht *ht_new(pt_dtype t, int ndim, const int64_t *shape) {
    ht *h = calloc(1, sizeof *h);
    h->dtype = t;
    h->ndim = ndim;
    h->numel = 1;
    for (int i = 0; i < ndim; ++i) {
        h->shape[i] = shape[i];
        h->numel *= shape[i];
    }
    h->v = calloc((size_t)(h->numel > 0 ? h->numel : 1), sizeof(double));
    return h;
}

ht *ht_clone(const ht *h) {
    ht *c = ht_new(h->dtype, h->ndim, h->shape);
    memcpy(c->v, h->v, (size_t)h->numel * sizeof(double));
    return c;
}

void ht_free(ht *h) {
    if (h) {
        free(h->v);
        free(h);
    }
}

void expect_free(expect *e) {
    ht_free(e->val);
    free(e->acc);
    e->val = NULL;
    e->acc = NULL;
}

char *shape_str(int ndim, const int64_t *shape, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && n < cap; ++i)
        n += (size_t)snprintf(buf + n, cap - n, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}

char *operand_str(const ht *h, layout lay, char *buf, size_t cap) {
    char s[96];
    static const char *suffix[] = {"", "T", "n", "o", "x"};
    const char *suf = suffix[lay];
    if ((lay == LAY_T && h->ndim < 2) || (lay != LAY_C && h->ndim < 1)) suf = "";
    snprintf(buf, cap, "%s%s", shape_str(h->ndim, h->shape, s, sizeof s), suf);
    return buf;
}

void contiguous_strides(int ndim, const int64_t *shape, int64_t *strides) {
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; --i) {
        strides[i] = s;
        s *= shape[i] > 0 ? shape[i] : 1;
    }
}

double quantize(pt_dtype t, double v) {
    switch (t) {
    case PT_F32: return (double)(float)v;
    case PT_F64: return v;
    case PT_I32: return (double)(int32_t)trunc(v);
    case PT_I64: return (double)(int64_t)trunc(v);
    case PT_U8: return (double)(uint8_t)(int)trunc(v);
    case PT_F16: return (double)pt_f16_bits_to_f32(pt_f64_to_f16_bits(v));
    case PT_BF16: return (double)pt_bf16_bits_to_f32(pt_f64_to_bf16_bits(v));
    default: return v;
    }
}

void to_raw(pt_dtype t, double v, void *dst, int64_t i) {
    switch (t) {
    case PT_F32: ((float *)dst)[i] = (float)v; break;
    case PT_F64: ((double *)dst)[i] = v; break;
    case PT_I32: ((int32_t *)dst)[i] = (int32_t)v; break;
    case PT_I64: ((int64_t *)dst)[i] = (int64_t)v; break;
    case PT_U8: ((uint8_t *)dst)[i] = (uint8_t)v; break;
    case PT_F16: ((uint16_t *)dst)[i] = pt_f64_to_f16_bits(v); break;
    case PT_BF16: ((uint16_t *)dst)[i] = pt_f64_to_bf16_bits(v); break;
    default: break;
    }
}

double from_raw(pt_dtype t, const void *src, int64_t i) {
    switch (t) {
    case PT_F32: return ((const float *)src)[i];
    case PT_F64: return ((const double *)src)[i];
    case PT_I32: return ((const int32_t *)src)[i];
    case PT_I64: return (double)((const int64_t *)src)[i];
    case PT_U8: return ((const uint8_t *)src)[i];
    case PT_F16: return pt_f16_bits_to_f32(((const uint16_t *)src)[i]);
    case PT_BF16: return pt_bf16_bits_to_f32(((const uint16_t *)src)[i]);
    default: return NAN;
    }
}

/* ---- LCG (Knuth's MMIX constants); the top 53 bits make a double ---- */

void lcg_seed(lcg *g, uint64_t seed) {
    g->s = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
}

double lcg_unit(lcg *g) {
    g->s = g->s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(g->s >> 11) * (1.0 / 9007199254740992.0);
}

/* One value of DOM_HALF_EDGES from u in [0, 1) and more draws of g. */
static double half_edge(double u, lcg *g) {
    static const double special[] = {0.0, INFINITY, NAN, 0x1p-25, 0x1p-24, 0x1p-14, 0x1.ffcp-15,
                                     65504.0, 65519.0, 65520.0, 65536.0, 0x1.fffffep127};
    const double r = lcg_unit(g), sign = lcg_unit(g) < 0.5 ? -1.0 : 1.0;
    double v;
    switch ((int)(u * 8)) {
    case 0: v = ldexp(floor(r * 2049), -25); break;        /* f16 subnormals and the ties between them */
    case 1: v = r * 0x1p-13; break;                        /* anywhere in f16's subnormal range */
    case 2: v = 65504.0 + r * 40.0; break;                 /* f16's largest finite, its tie with inf */
    case 3: v = ldexp(1.0 + floor(r * 256) / 128 + 1.0 / 256, (int)(lcg_unit(g) * 60) - 30); break; /* bf16 ties */
    case 4: v = special[(int)(r * (sizeof special / sizeof special[0]))]; break;
    case 5: v = ldexp(1.0, -30) * exp(r * 50 * log(2.0)); break; /* magnitudes 2^-30 .. 2^20 */
    case 6: v = ldexp(1.0 + floor(r * 2048) / 1024 + 1.0 / 2048, (int)(lcg_unit(g) * 30) - 14); break; /* f16 ties */
    default: v = ldexp(r, -14) + 0x1p-14 * floor(lcg_unit(g) * 2); break; /* around the smallest normal */
    }
    return sign * v;
}

void ht_fill(ht *h, domain d, lcg *g) {
    double lo = d.lo, hi = d.hi;
    if (h->dtype == PT_U8) {
        if (lo < 0) lo = 0;
        if (hi > 255) hi = 255;
    }
    bool integral = !pt_dtype_is_float(h->dtype);
    for (int64_t i = 0; i < h->numel; ++i) {
        double u = lcg_unit(g), v;
        switch (d.kind) {
        case DOM_LOGU: v = exp(log(lo) + u * (log(hi) - log(lo))); break;
        case DOM_AWAY: {
            double m = lo + u * (hi - lo);
            v = lcg_unit(g) < 0.5 ? -m : m;
            break;
        }
        case DOM_INT: v = floor(lo + u * (hi - lo + 1)); if (v > hi) v = hi; break;
        case DOM_GRID: v = floor(2 * lo + u * (2 * (hi - lo) + 1)) / 2; if (v > hi) v = hi; break;
        case DOM_HALF_EDGES: v = half_edge(u, g); break;
        default: v = lo + u * (hi - lo); break;
        }
        if (integral) {
            if (!isfinite(v)) v = 0; /* DOM_HALF_EDGES' inf and NaN have no integer */
            v = (d.kind == DOM_AWAY && fabs(v) < 1) ? (v < 0 ? -1 : 1) : trunc(v);
            if (v < lo) v = ceil(lo);
        }
        h->v[i] = quantize(h->dtype, v);
    }
}

/* ---- Upload in a layout ---- */

/* A value no correct kernel ever reads: NaN for floats, 0x7B.. for integers. */
static double gap_value(pt_dtype t) {
    switch (t) {
    case PT_F32:
    case PT_F64:
    case PT_F16:
    case PT_BF16: return NAN;
    case PT_I32: return 0x7B7B7B7B;
    case PT_I64: return 0x7B7B7B7B7B7Bll;
    default: return 0x7B;
    }
}

/* Uploads a physical array of shape pshape whose element at physical index
 * p is given by the map: map[p] = logical flat index, or -1 for a gap. */
static pt_tensor *upload_mapped(pt_device *d, const ht *h, int pnd, const int64_t *pshape,
                                const int64_t *map, int64_t pn) {
    size_t es = pt_dtype_size(h->dtype);
    void *raw = malloc((size_t)(pn > 0 ? pn : 1) * es);
    for (int64_t p = 0; p < pn; ++p)
        to_raw(h->dtype, map[p] >= 0 ? h->v[map[p]] : gap_value(h->dtype), raw, p);
    pt_tensor *t = pt_from_data(d, h->dtype, pnd, pshape, raw);
    free(raw);
    return t;
}

void ht_for_layout(ht *h, layout lay) {
    if (lay != LAY_X || h->ndim < 1 || h->numel == 0) return;
    int64_t slice = h->numel / h->shape[0];
    for (int64_t i = slice; i < h->numel; ++i) h->v[i] = h->v[i % slice];
}

pt_tensor *ht_upload(pt_device *d, const ht *h, layout lay) {
    int nd = h->ndim;
    if (lay == LAY_X && nd >= 1) { /* one slice, expanded along dim 0 */
        ht one = *h;
        one.shape[0] = 1;
        one.numel = h->shape[0] ? h->numel / h->shape[0] : 0;
        pt_tensor *base = ht_upload(d, &one, LAY_C);
        if (!base) return NULL;
        pt_tensor *view = pt_expand(base, nd, h->shape);
        pt_release(base);
        return view;
    }
    if (lay == LAY_C || (lay == LAY_T && nd < 2) || nd < 1) {
        size_t es = pt_dtype_size(h->dtype);
        void *raw = malloc((size_t)(h->numel > 0 ? h->numel : 1) * es);
        for (int64_t i = 0; i < h->numel; ++i) to_raw(h->dtype, h->v[i], raw, i);
        pt_tensor *t = pt_from_data(d, h->dtype, nd, nd ? h->shape : NULL, raw);
        free(raw);
        return t;
    }
    int64_t pshape[PT_MAX_DIMS], lstr[PT_MAX_DIMS];
    memcpy(pshape, h->shape, sizeof(int64_t) * (size_t)nd);
    contiguous_strides(nd, h->shape, lstr);
    const int pad_before = 2, pad_after = 3;
    int ld = (lay == LAY_N) ? nd - 1 : 0; /* the narrowed dim */
    if (lay == LAY_T) {
        pshape[nd - 2] = h->shape[nd - 1];
        pshape[nd - 1] = h->shape[nd - 2];
    } else {
        pshape[ld] = h->shape[ld] + pad_before + pad_after;
    }
    int64_t pn = 1;
    for (int i = 0; i < nd; ++i) pn *= pshape[i];
    int64_t *map = malloc((size_t)(pn > 0 ? pn : 1) * sizeof(int64_t));
    int64_t idx[PT_MAX_DIMS] = {0};
    for (int64_t p = 0; p < pn; ++p) {
        /* idx is the physical multi-index of p */
        int64_t lin = 0;
        bool gap = false;
        for (int i = 0; i < nd; ++i) {
            int64_t li = idx[i];
            if (lay == LAY_T && i == nd - 2) li = idx[nd - 1];
            else if (lay == LAY_T && i == nd - 1) li = idx[nd - 2];
            else if (lay != LAY_T && i == ld) {
                li = idx[i] - pad_before;
                if (li < 0 || li >= h->shape[i]) gap = true;
            }
            lin += li * lstr[i];
        }
        map[p] = gap ? -1 : lin;
        for (int i = nd - 1; i >= 0; --i) {
            if (++idx[i] < pshape[i]) break;
            idx[i] = 0;
        }
    }
    pt_tensor *base = upload_mapped(d, h, nd, pshape, map, pn);
    free(map);
    if (!base) return NULL;
    pt_tensor *view = (lay == LAY_T) ? pt_transpose(base, nd - 2, nd - 1)
                                     : pt_narrow(base, ld, pad_before, h->shape[ld]);
    pt_release(base);
    return view;
}

ht *ht_download(pt_tensor *t, char *err, size_t cap) {
    int nd = pt_tensor_ndim(t);
    const int64_t *shape = pt_tensor_shape(t);
    pt_dtype dt = pt_tensor_dtype(t);
    if (nd < 0 || nd > PT_MAX_DIMS || (nd > 0 && !shape) || (int)dt < 0 || dt >= PT_DTYPE_COUNT) {
        snprintf(err, cap, "result has a bad ndim %d or dtype %d", nd, (int)dt);
        return NULL;
    }
    ht *h = ht_new(dt, nd, shape);
    size_t es = pt_dtype_size(dt), bytes = (size_t)h->numel * es;
    void *raw = malloc(bytes + es);
    pt_status s = pt_to_host(t, raw, bytes);
    if (s != PT_OK) {
        snprintf(err, cap, "pt_to_host failed: %s: %s", pt_status_name(s), pt_last_error());
        free(raw);
        ht_free(h);
        return NULL;
    }
    for (int64_t i = 0; i < h->numel; ++i) h->v[i] = from_raw(dt, raw, i);
    free(raw);
    return h;
}
