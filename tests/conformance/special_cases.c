/* Cases with their own shape lists: creation ops, views and data movement
 * (reshape, transpose, permute, narrow, expand, contiguous, cast, cat, stack,
 * gather, one_hot), the in-place ops (copy_, axpy_, fill_) whose
 * destinations are poisoned first and checked around the written region,
 * and moving tensors to the cpu and back (pt_to, pt_to_async). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

static uint64_t seed_of(const char *name) {
    uint64_t h = 1469598103934665603ull;
    for (const char *p = name; *p; ++p) h = (h ^ (uint8_t)*p) * 1099511628211ull;
    return h;
}

static domain plain_domain(pt_dtype t) {
    if (pt_dtype_is_float(t)) return (domain){DOM_UNIFORM, -10, 10};
    if (t == PT_U8) return (domain){DOM_INT, 0, 255};
    return (domain){DOM_INT, -1000, 1000};
}

static ht *rand_ht(pt_dtype t, int ndim, const int64_t *shape, lcg *g) {
    ht *h = ht_new(t, ndim, shape);
    ht_fill(h, plain_domain(t), g);
    return h;
}

/* ================= creation ================= */

typedef enum { C_ZEROS, C_ONES, C_FULL, C_ARANGE, C_FROM_DATA, C_EMPTY, C_ITEM } creation_kind;
typedef struct creation_call {
    creation_kind kind;
    pt_dtype t;
    int ndim;
    const int64_t *shape;
    double value, start, stop, step;
} creation_call;

static pt_tensor *call_creation(pt_tensor **in, const void *p) {
    const creation_call *c = p;
    switch (c->kind) {
    case C_ZEROS: return pt_zeros(g_dev, c->t, c->ndim, c->shape);
    case C_ONES: return pt_ones(g_dev, c->t, c->ndim, c->shape);
    case C_FULL: return pt_full(g_dev, c->t, c->ndim, c->shape, c->value);
    case C_ARANGE: return pt_arange(g_dev, c->t, c->start, c->stop, c->step);
    case C_FROM_DATA: return pt_retain(in[0]); /* the upload is the op under test */
    default: return NULL;
    }
}

static void creation_fill_cases(pt_dtype t) {
    static const struct {
        int ndim;
        int64_t shape[3];
    } shapes[] = {{0, {0}}, {1, {0}}, {1, {1}}, {2, {7, 13}}, {3, {2, 3, 4}}, {1, {BIG_N}}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
        if (shapes[s].shape[0] == BIG_N && t != PT_F32) continue;
        for (int k = C_ZEROS; k <= C_FULL; ++k) {
            static const char *names[] = {"zeros", "ones", "full"};
            double value = k == C_ZEROS ? 0 : k == C_ONES ? 1
                           : pt_dtype_is_float(t) ? -2.75 : t == PT_U8 ? 200 : -123456;
            char name[256], sh[96];
            snprintf(name, sizeof name, "%s %s %s", names[k], pt_dtype_name(t),
                     shape_str(shapes[s].ndim, shapes[s].shape, sh, sizeof sh));
            if (k == C_FULL) snprintf(name + strlen(name), sizeof name - strlen(name), " value=%g", value);
            if (!case_selected(name)) continue;
            creation_call c = {.kind = (creation_kind)k, .t = t, .ndim = shapes[s].ndim,
                               .shape = shapes[s].shape, .value = value};
            expect e = {.val = ht_new(t, shapes[s].ndim, shapes[s].shape)};
            for (int64_t i = 0; i < e.val->numel; ++i) e.val->v[i] = value;
            run_case(name, 0, NULL, NULL, call_creation, &c, &e, TOL_EXACT, CF_CONTIGUOUS);
            expect_free(&e);
        }
    }
}

static void arange_cases(void) {
    static const struct {
        pt_dtype t;
        double start, stop, step;
    } cases[] = {
        {PT_F32, 0, 10, 0.5},   {PT_F32, 5, -3, -1.5}, {PT_F32, 0, 0, 1},   {PT_F32, 3, 4, 5},
        {PT_F64, -2, 3, 0.25},  {PT_F64, 1, 0, -0.125}, {PT_I32, 0, 10, 3}, {PT_I32, 7, -8, -2},
        {PT_I64, -5, 5, 2},     {PT_I64, 0, 1000, 1},  {PT_U8, 0, 20, 1},  {PT_U8, 250, 200, -7},
        {PT_F32, 0, (double)BIG_N, 1},
        {PT_F16, 0, 10, 0.5},   {PT_F16, 1, -3, -0.375}, {PT_BF16, -2, 3, 0.25}, {PT_BF16, 5, 0, -1.5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        char name[256];
        snprintf(name, sizeof name, "arange %s start=%g stop=%g step=%g", pt_dtype_name(cases[i].t),
                 cases[i].start, cases[i].stop, cases[i].step);
        if (!case_selected(name)) continue;
        double n = ceil((cases[i].stop - cases[i].start) / cases[i].step);
        int64_t len = n > 0 ? (int64_t)n : 0;
        expect e = {.val = ht_new(cases[i].t, 1, &len)};
        for (int64_t k = 0; k < len; ++k) e.val->v[k] = cases[i].start + (double)k * cases[i].step;
        creation_call c = {.kind = C_ARANGE, .t = cases[i].t, .start = cases[i].start,
                           .stop = cases[i].stop, .step = cases[i].step};
        run_case(name, 0, NULL, NULL, call_creation, &c, &e, TOL_EXACT, CF_CONTIGUOUS);
        expect_free(&e);
    }
}

static void from_data_cases(pt_dtype t) {
    static const struct {
        int ndim;
        int64_t shape[3];
    } shapes[] = {{0, {0}}, {1, {0}}, {1, {1}}, {2, {7, 13}}, {3, {3, 1, 5}}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
        char name[256], sh[96];
        snprintf(name, sizeof name, "from_data %s %s", pt_dtype_name(t),
                 shape_str(shapes[s].ndim, shapes[s].shape, sh, sizeof sh));
        if (!case_selected(name)) continue;
        lcg g;
        lcg_seed(&g, seed_of(name));
        ht *x = rand_ht(t, shapes[s].ndim, shapes[s].shape, &g);
        expect e = {.val = ht_clone(x)};
        creation_call c = {.kind = C_FROM_DATA};
        run_case(name, 1, &x, NULL, call_creation, &c, &e, TOL_EXACT, CF_CONTIGUOUS | CF_NO_POISON);
        expect_free(&e);
        ht_free(x);
    }
}

/* pt_empty: only dtype and shape are defined. pt_item: the one element. */
static void empty_and_item_cases(pt_dtype t) {
    char name[256];
    snprintf(name, sizeof name, "empty %s [3, 0, 5] and [4, 6]", pt_dtype_name(t));
    if (case_selected(name)) {
        pt_clear_error();
        int64_t s1[3] = {3, 0, 5}, s2[2] = {4, 6};
        pt_tensor *a = pt_empty(g_dev, t, 3, s1), *b = pt_empty(g_dev, t, 2, s2);
        if (!a || !b) {
            if (!skip_if_unsupported(name))
                report_fail(name, "returned NULL: %s", pt_last_error());
        } else if (pt_tensor_dtype(a) != t || pt_tensor_ndim(a) != 3 || pt_tensor_shape(a)[1] != 0 ||
                   pt_tensor_numel(a) != 0 || pt_tensor_dtype(b) != t || pt_tensor_numel(b) != 24 ||
                   pt_tensor_shape(b)[1] != 6 || !pt_tensor_is_contiguous(b)) {
            report_fail(name, "wrong dtype/shape/contiguity");
        } else {
            report_pass(name);
        }
        pt_release(a);
        pt_release(b);
    }
    static const struct {
        int ndim;
        int64_t shape[3];
    } shapes[] = {{0, {0}}, {1, {1}}, {3, {1, 1, 1}}};
    for (size_t s = 0; s < 3; ++s) {
        char sh[96];
        snprintf(name, sizeof name, "item %s %s", pt_dtype_name(t),
                 shape_str(shapes[s].ndim, shapes[s].shape, sh, sizeof sh));
        if (!case_selected(name)) continue;
        pt_clear_error();
        double v = pt_dtype_is_float(t) ? quantize(t, -3.3) : t == PT_U8 ? 201 : -77;
        ht *h = ht_new(t, shapes[s].ndim, shapes[s].shape);
        h->v[0] = v;
        pt_tensor *x = ht_upload(g_dev, h, LAY_C);
        /* item of an op's result, not just of an upload (u8 has no arithmetic) */
        pt_tensor *y = !x ? NULL : t == PT_U8 ? pt_retain(x) : pt_mul_scalar(x, 1);
        double got = y ? pt_item(y) : NAN;
        if (!y) {
            if (!skip_if_unsupported(name)) report_fail(name, "setup failed: %s", pt_last_error());
        } else if (got != v) {
            report_fail(name, "got %.17g, expected %.17g (%s)", got, v, pt_last_error());
        } else if (pt_last_status() != PT_OK) {
            report_fail(name, "succeeded but left an error: %s", pt_last_error());
        } else {
            report_pass(name);
        }
        pt_release(x);
        pt_release(y);
        ht_free(h);
    }
}

void run_creation_cases(void) {
    FOR_EACH_DTYPE_IN(t, PT_DTYPES_ANY) {
        creation_fill_cases(t);
        from_data_cases(t);
        empty_and_item_cases(t);
    }
    arange_cases();
}

/* ================= views and data movement ================= */

typedef enum { V_RESHAPE, V_TRANSPOSE, V_PERMUTE, V_NARROW, V_EXPAND, V_CONTIGUOUS } view_kind;
typedef struct view_call {
    view_kind kind;
    int ndim;              /* reshape/expand target */
    int64_t shape[4];
    int d0, d1;            /* transpose; narrow dim */
    int perm[4];
    int64_t start, len;    /* narrow */
    bool then_contiguous;  /* run pt_contiguous on the view (the backend's strided copy) */
} view_call;

static pt_tensor *apply_view(pt_tensor *x, const view_call *c) {
    switch (c->kind) {
    case V_RESHAPE: return pt_reshape(x, c->ndim, c->shape);
    case V_TRANSPOSE: return pt_transpose(x, c->d0, c->d1);
    case V_PERMUTE: return pt_permute(x, c->perm);
    case V_NARROW: return pt_narrow(x, c->d0, c->start, c->len);
    case V_EXPAND: return pt_expand(x, c->ndim, c->shape);
    default: return pt_contiguous(x);
    }
}

static pt_tensor *call_view(pt_tensor **in, const void *p) {
    const view_call *c = p;
    pt_tensor *v = apply_view(in[0], c);
    if (!c->then_contiguous || !v) return v;
    pt_tensor *out = pt_contiguous(v);
    pt_release(v);
    return out;
}

static ht *view_reference(const ht *x, const view_call *c) {
    switch (c->kind) {
    case V_RESHAPE: {
        ht *o = ht_clone(x);
        int64_t known = 1;
        int infer = -1;
        o->ndim = c->ndim;
        for (int i = 0; i < c->ndim; ++i) {
            o->shape[i] = c->shape[i];
            if (c->shape[i] < 0) infer = i;
            else known *= c->shape[i];
        }
        if (infer >= 0) o->shape[infer] = x->numel / known;
        return o;
    }
    case V_TRANSPOSE: {
        int perm[PT_MAX_DIMS];
        for (int i = 0; i < x->ndim; ++i) perm[i] = i;
        int a = c->d0 < 0 ? c->d0 + x->ndim : c->d0, b = c->d1 < 0 ? c->d1 + x->ndim : c->d1;
        perm[a] = b;
        perm[b] = a;
        return ref_permute(x, perm);
    }
    case V_PERMUTE: return ref_permute(x, c->perm);
    case V_NARROW: return ref_narrow(x, c->d0, c->start, c->len);
    case V_EXPAND: return ref_expand(x, c->ndim, c->shape);
    default: return ht_clone(x);
    }
}

static void view_cases(pt_dtype t) {
    static const struct {
        const char *label;
        operand_spec x;
        view_call c;
        unsigned flags;
    } cases[] = {
        {"reshape [91]", {2, {7, 13}, LAY_C}, {.kind = V_RESHAPE, .ndim = 1, .shape = {91}}, CF_VIEW_OF_IN0},
        {"reshape [13, 7]", {2, {7, 13}, LAY_C}, {.kind = V_RESHAPE, .ndim = 2, .shape = {13, 7}}, CF_VIEW_OF_IN0},
        {"reshape [6, -1]", {3, {2, 3, 4}, LAY_C}, {.kind = V_RESHAPE, .ndim = 2, .shape = {6, -1}}, CF_VIEW_OF_IN0},
        {"reshape [1, 1]", {0, {0}, LAY_C}, {.kind = V_RESHAPE, .ndim = 2, .shape = {1, 1}}, CF_VIEW_OF_IN0},
        {"reshape []", {1, {1}, LAY_C}, {.kind = V_RESHAPE, .ndim = 0, .shape = {0}}, CF_VIEW_OF_IN0},
        {"reshape [0, 5]", {2, {5, 0}, LAY_C}, {.kind = V_RESHAPE, .ndim = 2, .shape = {0, 5}}, CF_VIEW_OF_IN0},
        {"reshape [30, 7] of an offset view", {3, {5, 6, 7}, LAY_O}, {.kind = V_RESHAPE, .ndim = 2, .shape = {30, 7}}, CF_VIEW_OF_IN0},
        {"reshape [91] of a transposed view (copies)", {2, {7, 13}, LAY_T}, {.kind = V_RESHAPE, .ndim = 1, .shape = {91}},
         CF_COPY_OF_IN0 | CF_CONTIGUOUS},
        {"reshape [5, 42] of a narrowed view (copies)", {3, {5, 6, 7}, LAY_N}, {.kind = V_RESHAPE, .ndim = 2, .shape = {5, 42}},
         CF_COPY_OF_IN0 | CF_CONTIGUOUS},
        {"transpose 0,1", {2, {7, 13}, LAY_C}, {.kind = V_TRANSPOSE, .d0 = 0, .d1 = 1}, CF_VIEW_OF_IN0},
        {"transpose 0,2", {3, {5, 6, 7}, LAY_C}, {.kind = V_TRANSPOSE, .d0 = 0, .d1 = 2}, CF_VIEW_OF_IN0},
        {"transpose -1,-2 of a transposed view", {3, {5, 6, 7}, LAY_T}, {.kind = V_TRANSPOSE, .d0 = -1, .d1 = -2},
         CF_VIEW_OF_IN0},
        {"transpose 1,1", {2, {7, 13}, LAY_C}, {.kind = V_TRANSPOSE, .d0 = 1, .d1 = 1}, CF_VIEW_OF_IN0},
        {"permute 3,1,0,2", {4, {2, 3, 4, 5}, LAY_C}, {.kind = V_PERMUTE, .perm = {3, 1, 0, 2}}, CF_VIEW_OF_IN0},
        {"permute 1,2,0 of a transposed view", {3, {5, 6, 7}, LAY_T}, {.kind = V_PERMUTE, .perm = {1, 2, 0}},
         CF_VIEW_OF_IN0},
        {"narrow dim=1 2+5", {2, {7, 13}, LAY_C}, {.kind = V_NARROW, .d0 = 1, .start = 2, .len = 5}, CF_VIEW_OF_IN0},
        {"narrow dim=0 6+1", {2, {7, 13}, LAY_C}, {.kind = V_NARROW, .d0 = 0, .start = 6, .len = 1}, CF_VIEW_OF_IN0},
        {"narrow dim=1 4+0", {2, {7, 13}, LAY_C}, {.kind = V_NARROW, .d0 = 1, .start = 4, .len = 0}, CF_VIEW_OF_IN0},
        {"narrow dim=2 1+5 of a narrowed view", {3, {5, 6, 7}, LAY_N}, {.kind = V_NARROW, .d0 = 2, .start = 1, .len = 5},
         CF_VIEW_OF_IN0},
        {"narrow dim=0 1+5 of a transposed view", {2, {7, 13}, LAY_T}, {.kind = V_NARROW, .d0 = 0, .start = 1, .len = 5},
         CF_VIEW_OF_IN0},
        {"expand [7, 13]", {2, {7, 1}, LAY_C}, {.kind = V_EXPAND, .ndim = 2, .shape = {7, 13}}, CF_VIEW_OF_IN0},
        {"expand [4, 7, 13]", {1, {13}, LAY_C}, {.kind = V_EXPAND, .ndim = 3, .shape = {4, 7, 13}}, CF_VIEW_OF_IN0},
        {"expand [3, 4]", {0, {0}, LAY_C}, {.kind = V_EXPAND, .ndim = 2, .shape = {3, 4}}, CF_VIEW_OF_IN0},
        {"expand [6, 7, 13] of a narrowed view", {2, {7, 13}, LAY_N}, {.kind = V_EXPAND, .ndim = 3, .shape = {6, 7, 13}}, CF_VIEW_OF_IN0},
        {"contiguous of a transposed view", {2, {7, 13}, LAY_T}, {.kind = V_CONTIGUOUS}, CF_COPY_OF_IN0 | CF_CONTIGUOUS},
        {"contiguous of a narrowed view", {3, {5, 6, 7}, LAY_N}, {.kind = V_CONTIGUOUS}, CF_COPY_OF_IN0 | CF_CONTIGUOUS},
        {"contiguous of a contiguous tensor", {2, {7, 13}, LAY_C}, {.kind = V_CONTIGUOUS}, CF_SAME_AS_IN0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        for (int then = 0; then < 2; ++then) {
            view_call c = cases[i].c;
            if (then && (c.kind == V_CONTIGUOUS || (cases[i].flags & CF_COPY_OF_IN0))) continue;
            c.then_contiguous = then;
            char name[256], s[96];
            ht tmp = {.ndim = cases[i].x.ndim};
            memcpy(tmp.shape, cases[i].x.shape, sizeof tmp.shape[0] * 4);
            snprintf(name, sizeof name, "%s %s %s%s", cases[i].label, pt_dtype_name(t),
                     operand_str(&tmp, cases[i].x.lay, s, sizeof s), then ? " then contiguous" : "");
            if (!case_selected(name)) continue;
            lcg g;
            lcg_seed(&g, seed_of(name));
            ht *x = rand_ht(t, tmp.ndim, tmp.shape, &g);
            expect e = {.val = view_reference(x, &c)};
            /* pt_contiguous of a view that is already contiguous may return it */
            unsigned flags = then ? CF_CONTIGUOUS : cases[i].flags;
            if ((flags & CF_VIEW_OF_IN0) || (flags & CF_SAME_AS_IN0)) flags |= CF_NO_POISON;
            run_case(name, 1, &x, &cases[i].x.lay, call_view, &c, &e, TOL_EXACT, flags);
            expect_free(&e);
            ht_free(x);
        }
    }
}

/* ---- cast ---- */

static pt_tensor *call_cast(pt_tensor **in, const void *p) { return pt_cast(in[0], *(const pt_dtype *)p); }

/* One cast case: src -> dst on shape sp, values from d; `what` names the
 * values in the case's name ("" or "edges "). */
static void cast_case(pt_dtype src, pt_dtype dst, const operand_spec *sp, const char *what, domain d) {
    char name[256], sh[96];
    ht tmp = {.ndim = sp->ndim};
    memcpy(tmp.shape, sp->shape, sizeof tmp.shape[0] * 4);
    snprintf(name, sizeof name, "cast %s->%s %s%s", pt_dtype_name(src), pt_dtype_name(dst), what,
             operand_str(&tmp, sp->lay, sh, sizeof sh));
    if (!case_selected(name)) return;
    lcg g;
    lcg_seed(&g, seed_of(name));
    ht *x = ht_new(src, tmp.ndim, tmp.shape);
    ht_fill(x, d, &g);
    expect e = {.val = ref_cast(x, dst)};
    run_case(name, 1, &x, &sp->lay, call_cast, &dst, &e, TOL_EXACT, CF_CONTIGUOUS);
    expect_free(&e);
    ht_free(x);
}

static void cast_cases(void) {
    static const operand_spec shapes[] = {{2, {7, 13}, LAY_C}, {2, {7, 13}, LAY_T}, {0, {0}, LAY_C},
                                          {1, {0}, LAY_C}};
    FOR_EACH_DTYPE_IN(src, PT_DTYPES_ANY)
        FOR_EACH_DTYPE_IN(dst, PT_DTYPES_ANY)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
                /* values every target holds after truncation toward zero:
                 * u8's range where u8 is one side, a range wider than
                 * 16 bits where an integer type is, kept finite in f16
                 * where f16 is (65504 is its largest), and +-1000 between
                 * floats */
                const dom_kind kind = pt_dtype_is_float(src) ? DOM_UNIFORM : DOM_INT;
                domain d = {DOM_UNIFORM, -1000, 1000};
                if (dst == PT_U8 || src == PT_U8) d = (domain){kind, 0, 255};
                else if (!pt_dtype_is_float(dst) || !pt_dtype_is_float(src)) d = (domain){kind, -100000, 100000};
                if ((src == PT_F16 || dst == PT_F16) && d.lo < -60000) d = (domain){kind, -60000, 60000};
                cast_case(src, dst, &shapes[s], "", d);
            }
    /* Rounding to and from 16 bits where it is delicate (DOM_HALF_EDGES:
     * f16 subnormals and ties, overflow to inf, bf16 ties, +-0, inf, NaN),
     * between every pair of float dtypes one of which is 16-bit. */
    static const pt_dtype floats[] = {PT_F32, PT_F64, PT_F16, PT_BF16};
    static const operand_spec edge_shapes[] = {{2, {64, 33}, LAY_C}, {2, {64, 33}, LAY_T}};
    for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b)
            for (int s = 0; s < 2; ++s)
                if (a != b && (pt_dtype_is_half(floats[a]) || pt_dtype_is_half(floats[b])))
                    cast_case(floats[a], floats[b], &edge_shapes[s], "edges ", (domain){DOM_HALF_EDGES, 0, 0});
    /* big: f32 -> i32 over a million elements */
    char name[] = "cast f32->i32 [1048613]";
    if (case_selected(name)) {
        lcg g;
        lcg_seed(&g, seed_of(name));
        int64_t n = BIG_N;
        ht *x = ht_new(PT_F32, 1, &n);
        ht_fill(x, (domain){DOM_UNIFORM, -1e6, 1e6}, &g);
        expect e = {.val = ref_cast(x, PT_I32)};
        static const pt_dtype i32 = PT_I32;
        run_case(name, 1, &x, NULL, call_cast, &i32, &e, TOL_EXACT, CF_CONTIGUOUS);
        expect_free(&e);
        ht_free(x);
    }
}

/* ---- cat / stack ---- */

typedef struct join_call {
    bool stack;
    int n, dim;
} join_call;
static pt_tensor *call_join(pt_tensor **in, const void *p) {
    const join_call *c = p;
    return c->stack ? pt_stack(c->n, in, c->dim) : pt_cat(c->n, in, c->dim);
}

static void join_cases(pt_dtype t) {
    static const struct {
        bool stack;
        int n, dim;
        operand_spec xs[3];
    } cases[] = {
        {false, 3, 0, {{2, {2, 5}, LAY_C}, {2, {3, 5}, LAY_T}, {2, {1, 5}, LAY_N}}},
        {false, 3, 1, {{2, {4, 2}, LAY_C}, {2, {4, 3}, LAY_T}, {2, {4, 0}, LAY_C}}},
        {false, 2, -1, {{3, {2, 3, 4}, LAY_O}, {3, {2, 3, 1}, LAY_C}}},
        {false, 3, 0, {{1, {5}, LAY_C}, {1, {0}, LAY_C}, {1, {2}, LAY_N}}},
        {false, 1, 0, {{2, {3, 4}, LAY_T}}},
        {false, 2, 1, {{3, {5, 6, 7}, LAY_N}, {3, {5, 2, 7}, LAY_C}}},
        {true, 3, 0, {{2, {4, 5}, LAY_C}, {2, {4, 5}, LAY_T}, {2, {4, 5}, LAY_N}}},
        {true, 3, 1, {{2, {4, 5}, LAY_C}, {2, {4, 5}, LAY_C}, {2, {4, 5}, LAY_O}}},
        {true, 2, 2, {{2, {4, 5}, LAY_T}, {2, {4, 5}, LAY_C}}},
        {true, 2, -1, {{2, {4, 5}, LAY_C}, {2, {4, 5}, LAY_N}}},
        {true, 3, 0, {{0, {0}, LAY_C}, {0, {0}, LAY_C}, {0, {0}, LAY_C}}},
        {true, 2, 1, {{2, {0, 3}, LAY_C}, {2, {0, 3}, LAY_C}}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        char name[300], parts[200] = "", s[96];
        ht *xs[3];
        layout lays[3];
        for (int k = 0; k < cases[i].n; ++k) {
            ht tmp = {.ndim = cases[i].xs[k].ndim};
            memcpy(tmp.shape, cases[i].xs[k].shape, sizeof tmp.shape[0] * 4);
            snprintf(parts + strlen(parts), sizeof parts - strlen(parts), "%s%s", k ? ", " : "",
                     operand_str(&tmp, cases[i].xs[k].lay, s, sizeof s));
        }
        snprintf(name, sizeof name, "%s %s (%s) dim=%d", cases[i].stack ? "stack" : "cat", pt_dtype_name(t),
                 parts, cases[i].dim);
        if (!case_selected(name)) continue;
        lcg g;
        lcg_seed(&g, seed_of(name));
        for (int k = 0; k < cases[i].n; ++k) {
            xs[k] = rand_ht(t, cases[i].xs[k].ndim, cases[i].xs[k].shape, &g);
            lays[k] = cases[i].xs[k].lay;
        }
        expect e = {.val = cases[i].stack ? ref_stack(cases[i].n, xs, cases[i].dim)
                                          : ref_cat(cases[i].n, xs, cases[i].dim)};
        join_call c = {cases[i].stack, cases[i].n, cases[i].dim};
        run_case(name, cases[i].n, xs, lays, call_join, &c, &e, TOL_EXACT, CF_CONTIGUOUS);
        expect_free(&e);
        for (int k = 0; k < cases[i].n; ++k) ht_free(xs[k]);
    }
}

/* ---- gather / one_hot ---- */

static pt_tensor *call_gather(pt_tensor **in, const void *p) { return pt_gather(in[0], *(const int *)p, in[1]); }

static void gather_cases(pt_dtype t, pt_dtype it) {
    static const struct {
        operand_spec x, idx;
        int dim;
    } cases[] = {
        {{2, {5, 6}, LAY_C}, {2, {5, 4}, LAY_C}, 1},
        {{2, {5, 6}, LAY_C}, {2, {3, 6}, LAY_C}, 0},
        {{2, {5, 6}, LAY_T}, {2, {5, 9}, LAY_C}, 1},
        {{3, {4, 5, 6}, LAY_C}, {3, {4, 3, 6}, LAY_T}, 1},
        {{3, {4, 5, 6}, LAY_N}, {3, {4, 5, 2}, LAY_C}, -1},
        {{2, {5, 6}, LAY_C}, {2, {5, 0}, LAY_C}, 1},
        {{1, {9}, LAY_C}, {1, {20}, LAY_N}, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        char name[256], s1[96], s2[96];
        ht tx = {.ndim = cases[i].x.ndim}, ti = {.ndim = cases[i].idx.ndim};
        memcpy(tx.shape, cases[i].x.shape, sizeof tx.shape[0] * 4);
        memcpy(ti.shape, cases[i].idx.shape, sizeof ti.shape[0] * 4);
        snprintf(name, sizeof name, "gather %s x=%s index=%s %s dim=%d", pt_dtype_name(t),
                 operand_str(&tx, cases[i].x.lay, s1, sizeof s1), pt_dtype_name(it),
                 operand_str(&ti, cases[i].idx.lay, s2, sizeof s2), cases[i].dim);
        if (!case_selected(name)) continue;
        lcg g;
        lcg_seed(&g, seed_of(name));
        ht *in[2] = {rand_ht(t, tx.ndim, tx.shape, &g), ht_new(it, ti.ndim, ti.shape)};
        int d = cases[i].dim < 0 ? cases[i].dim + tx.ndim : cases[i].dim;
        ht_fill(in[1], (domain){DOM_INT, 0, (double)(tx.shape[d] - 1)}, &g);
        layout lays[2] = {cases[i].x.lay, cases[i].idx.lay};
        expect e = {.val = ref_gather(in[0], cases[i].dim, in[1])};
        run_case(name, 2, in, lays, call_gather, &cases[i].dim, &e, TOL_EXACT, 0);
        expect_free(&e);
        ht_free(in[0]);
        ht_free(in[1]);
    }
}

typedef struct one_hot_call {
    int64_t classes;
    pt_dtype t;
} one_hot_call;
static pt_tensor *call_one_hot(pt_tensor **in, const void *p) {
    const one_hot_call *c = p;
    return pt_one_hot(in[0], c->classes, c->t);
}

static void one_hot_cases(pt_dtype t) {
    static const struct {
        pt_dtype lt;
        operand_spec l;
        int64_t classes;
    } cases[] = {
        {PT_I64, {1, {7}, LAY_C}, 5},     {PT_I32, {2, {3, 4}, LAY_C}, 10}, {PT_I64, {0, {0}, LAY_C}, 4},
        {PT_I32, {1, {0}, LAY_C}, 3},     {PT_I64, {1, {9}, LAY_N}, 6},     {PT_I32, {2, {3, 4}, LAY_T}, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        char name[256], s[96];
        ht tl = {.ndim = cases[i].l.ndim};
        memcpy(tl.shape, cases[i].l.shape, sizeof tl.shape[0] * 4);
        snprintf(name, sizeof name, "one_hot %s labels=%s %s classes=%lld", pt_dtype_name(t),
                 pt_dtype_name(cases[i].lt), operand_str(&tl, cases[i].l.lay, s, sizeof s),
                 (long long)cases[i].classes);
        if (!case_selected(name)) continue;
        lcg g;
        lcg_seed(&g, seed_of(name));
        ht *l = ht_new(cases[i].lt, tl.ndim, tl.shape);
        ht_fill(l, (domain){DOM_INT, 0, (double)(cases[i].classes - 1)}, &g);
        expect e = {.val = ref_one_hot(l, cases[i].classes, t)};
        one_hot_call c = {cases[i].classes, t};
        run_case(name, 1, &l, &cases[i].l.lay, call_one_hot, &c, &e, TOL_EXACT, CF_CONTIGUOUS);
        expect_free(&e);
        ht_free(l);
    }
}

void run_shape_cases(void) {
    FOR_EACH_DTYPE_IN(t, PT_DTYPES_ANY) {
        view_cases(t);
        join_cases(t);
        gather_cases(t, PT_I64);
        if (t == PT_F32) gather_cases(PT_F32, PT_I32);
        one_hot_cases(t);
    }
    cast_cases();
}

/* ================= in place: copy_, axpy_, fill_ ================= */

/* The destination: a whole tensor, or a view of a larger poisoned base. */
typedef enum { DST_WHOLE, DST_NARROW, DST_TRANSPOSED, DST_OFFSET } dst_kind;

static double poison_value(pt_dtype t) {
    switch (t) {
    case PT_F32:
    case PT_F64: return NAN;
    case PT_I32:
    case PT_I64: return (double)(int32_t)0xABABABABu;
    default: return 0xAB;
    }
}

/* Base shape for a destination view of logical shape (2-D) vs. */
static void dst_base_shape(dst_kind k, const int64_t *vs, int64_t *bs) {
    bs[0] = vs[0];
    bs[1] = vs[1];
    if (k == DST_NARROW) bs[1] = vs[1] + 5;
    if (k == DST_OFFSET) bs[0] = vs[0] + 3;
    if (k == DST_TRANSPOSED) {
        bs[0] = vs[1];
        bs[1] = vs[0];
    }
}

static pt_tensor *dst_view(pt_tensor *base, dst_kind k, const int64_t *vs) {
    switch (k) {
    case DST_NARROW: return pt_narrow(base, 1, 2, vs[1]);
    case DST_OFFSET: return pt_narrow(base, 0, 1, vs[0]);
    case DST_TRANSPOSED: return pt_transpose(base, 0, 1);
    default: return pt_retain(base);
    }
}

/* Flat index in the base of element (i, j) of the view. */
static int64_t dst_base_index(dst_kind k, const int64_t *bs, int64_t i, int64_t j) {
    switch (k) {
    case DST_NARROW: return i * bs[1] + j + 2;
    case DST_OFFSET: return (i + 1) * bs[1] + j;
    case DST_TRANSPOSED: return j * bs[1] + i;
    default: return i * bs[1] + j;
    }
}

static const char *dst_label(dst_kind k) {
    static const char *l[] = {"", " (narrowed view)", " (transposed view)", " (offset view)"};
    return l[k];
}

typedef enum { IP_COPY, IP_AXPY, IP_FILL } inplace_kind;

/* Runs one in-place case on a [vs0, vs1] destination and checks the whole
 * base: the view region holds the result, everything else its old value. */
static void inplace_case(const char *name, inplace_kind kind, pt_dtype dt, dst_kind dk, const int64_t *vs,
                         const ht *src, layout src_lay, pt_device *src_dev, double scalar, tol_id tol) {
    if (!case_selected(name)) return;
    pt_clear_error();
    int64_t bs[2];
    dst_base_shape(dk, vs, bs);
    lcg g;
    lcg_seed(&g, seed_of(name));
    ht *base = ht_new(dt, 2, bs);
    if (kind == IP_AXPY) ht_fill(base, (domain){DOM_UNIFORM, -10, 10}, &g);
    else
        for (int64_t i = 0; i < base->numel; ++i) base->v[i] = poison_value(dt);
    expect e = {.val = ht_clone(base), .acc = calloc((size_t)base->numel + 1, sizeof(double)), .K = 1};
    int64_t str[PT_MAX_DIMS];
    if (src) contiguous_strides(src->ndim, src->shape, str);
    for (int64_t i = 0; i < vs[0]; ++i)
        for (int64_t j = 0; j < vs[1]; ++j) {
            int64_t bi = dst_base_index(dk, bs, i, j);
            double s = scalar;
            if (src) { /* src broadcast to [vs0, vs1] */
                int64_t idx[2] = {i, j}, off = 0;
                for (int d = 0; d < src->ndim; ++d)
                    if (src->shape[d] != 1) off += idx[d + (2 - src->ndim)] * str[d];
                s = src->v[off];
            }
            if (kind == IP_AXPY) {
                e.val->v[bi] = base->v[bi] + scalar * s;
                e.acc[bi] = fabs(base->v[bi]) + fabs(scalar * s);
            } else {
                e.val->v[bi] = quantize(dt, s);
            }
        }
    pt_tensor *db = ht_upload(g_dev, base, LAY_C);
    pt_tensor *dv = db ? dst_view(db, dk, vs) : NULL;
    pt_tensor *ds = (src && dv) ? ht_upload(src_dev, src, src_lay) : NULL;
    if (!dv || (src && !ds)) {
        if (!skip_if_unsupported(name)) report_fail(name, "setup failed: %s", pt_last_error());
        goto done;
    }
    pt_status s = kind == IP_COPY ? pt_copy_(dv, ds) : kind == IP_AXPY ? pt_axpy_(dv, scalar, ds)
                                                                       : pt_fill_(dv, scalar);
    if (s != PT_OK) {
        if (!skip_if_unsupported(name))
            report_fail(name, "returned %s: %s", pt_status_name(s), pt_last_error());
        goto done;
    }
    char msg[512];
    ht *got = ht_download(db, msg, sizeof msg);
    if (!got) report_fail(name, "%s", msg);
    else if (!compare_result(got, &e, tol, msg, sizeof msg)) report_fail(name, "%s (compared over the whole base)", msg);
    else report_pass(name);
    ht_free(got);
done:
    pt_release(ds);
    pt_release(dv);
    pt_release(db);
    ht_free(base);
    expect_free(&e);
    pt_clear_error();
}

void run_inplace_cases(void) {
    static const int64_t vs[2] = {7, 13};
    FOR_EACH_DTYPE_IN(t, PT_DTYPES_ANY) {
        for (int k = DST_WHOLE; k <= DST_OFFSET; ++k) {
            char name[256];
            lcg g;
            /* copy_: same shape, broadcast row, scalar, transposed source */
            static const struct {
                const char *label;
                operand_spec s;
            } srcs[] = {{"[7, 13]", {2, {7, 13}, LAY_C}}, {"[13]", {1, {13}, LAY_C}}, {"[]", {0, {0}, LAY_C}},
                        {"[7, 13]T", {2, {7, 13}, LAY_T}}, {"[7, 1]", {2, {7, 1}, LAY_C}}};
            for (size_t s = 0; s < sizeof srcs / sizeof srcs[0]; ++s) {
                snprintf(name, sizeof name, "copy_ %s dst=[7, 13]%s src=%s", pt_dtype_name(t), dst_label((dst_kind)k),
                         srcs[s].label);
                lcg_seed(&g, seed_of(name));
                ht *src = rand_ht(t, srcs[s].s.ndim, srcs[s].s.shape, &g);
                inplace_case(name, IP_COPY, t, (dst_kind)k, vs, src, srcs[s].s.lay, g_dev, 0, TOL_EXACT);
                ht_free(src);
            }
            double fv = pt_dtype_is_float(t) ? -6.5 : t == PT_U8 ? 77 : -4242;
            snprintf(name, sizeof name, "fill_ %s [7, 13]%s value=%g", pt_dtype_name(t), dst_label((dst_kind)k), fv);
            inplace_case(name, IP_FILL, t, (dst_kind)k, vs, NULL, LAY_C, g_dev, fv, TOL_EXACT);
        }
        /* copy_ casting from every other dtype (values every dtype holds) */
        FOR_EACH_DTYPE_IN(st, PT_DTYPES_ANY & ~PT_DTYPE_BIT(t)) {
            char name[256];
            snprintf(name, sizeof name, "copy_ %s dst=[7, 13] src=%s [7, 13] (cast)", pt_dtype_name(t),
                     pt_dtype_name(st));
            lcg g;
            lcg_seed(&g, seed_of(name));
            ht *src = ht_new(st, 2, vs);
            ht_fill(src, (domain){pt_dtype_is_float(st) ? DOM_UNIFORM : DOM_INT, 0, 120}, &g);
            inplace_case(name, IP_COPY, t, DST_WHOLE, vs, src, LAY_C, g_dev, 0, TOL_EXACT);
            ht_free(src);
        }
        /* copy_ from the cpu (another device unless the device under test is cpu:0) */
        char name[256];
        snprintf(name, sizeof name, "copy_ %s dst=[7, 13] (narrowed view) src=[7, 13] on cpu", pt_dtype_name(t));
        lcg g;
        lcg_seed(&g, seed_of(name));
        ht *src = rand_ht(t, 2, vs, &g);
        inplace_case(name, IP_COPY, t, DST_NARROW, vs, src, LAY_C, pt_cpu(), 0, TOL_EXACT);
        ht_free(src);
        /* empty and 0-D destinations */
        snprintf(name, sizeof name, "fill_ %s [0, 13]", pt_dtype_name(t));
        int64_t es[2] = {0, 13};
        inplace_case(name, IP_FILL, t, DST_WHOLE, es, NULL, LAY_C, g_dev, 1, TOL_EXACT);
    }
    /* axpy_: float dtypes (optimizers) */
    FOR_EACH_DTYPE_IN(t, PT_DTYPES_FLOAT) {
        for (int k = DST_WHOLE; k <= DST_OFFSET; ++k)
            for (int lay = 0; lay < 2; ++lay) {
                char name[256];
                double alpha = lay ? -2.0 : 0.375;
                snprintf(name, sizeof name, "axpy_ %s y=[7, 13]%s x=[7, 13]%s alpha=%g", pt_dtype_name(t),
                         dst_label((dst_kind)k), lay ? "T" : "", alpha);
                lcg g;
                lcg_seed(&g, seed_of(name));
                ht *x = rand_ht(t, 2, vs, &g);
                inplace_case(name, IP_AXPY, t, (dst_kind)k, vs, x, lay ? LAY_T : LAY_C, g_dev, alpha, TOL_AXPY);
                ht_free(x);
            }
    }
    {
        char name[] = "axpy_ f32 y=[1048613] x=[1048613] alpha=0.5";
        lcg g;
        lcg_seed(&g, seed_of(name));
        int64_t big[2] = {1, BIG_N};
        ht *x = rand_ht(PT_F32, 2, big, &g);
        inplace_case(name, IP_AXPY, PT_F32, DST_WHOLE, big, x, LAY_C, g_dev, 0.5, TOL_AXPY);
        ht_free(x);
    }
    {
        char name[] = "copy_ f32 dst=[1, 1048613] src=[1048613]";
        lcg g;
        lcg_seed(&g, seed_of(name));
        int64_t big[2] = {1, BIG_N}, n = BIG_N;
        ht *x = rand_ht(PT_F32, 1, &n, &g);
        inplace_case(name, IP_COPY, PT_F32, DST_WHOLE, big, x, LAY_C, g_dev, 0, TOL_EXACT);
        ht_free(x);
    }
}

/* ================= moving between devices ================= */

/* x (a transposed view on the device under test) -> cpu -> back; and an
 * asynchronous copy to the cpu, valid after synchronizing the source. */
typedef struct round_trip {
    bool async;
    const char *name;
} round_trip;
static pt_tensor *call_round_trip(pt_tensor **in, const void *p) {
    bool async = ((const round_trip *)p)->async;
    const char *name = ((const round_trip *)p)->name;
    pt_tensor *host = async ? pt_to_async(in[0], pt_cpu()) : pt_to(in[0], pt_cpu());
    if (!host) return NULL;
    if (async && pt_device_synchronize(g_dev) != PT_OK) {
        pt_release(host);
        return NULL;
    }
    pt_tensor *back = NULL;
    if (pt_tensor_device(host) != pt_cpu())
        report_fail(name, "pt_to%s returned a tensor on %s", async ? "_async" : "",
                    pt_device_name(pt_tensor_device(host)));
    else if (host == in[0] && g_dev != pt_cpu())
        report_fail(name, "pt_to returned its input for another device");
    else if (!async)
        back = pt_to(host, g_dev);
    else {
        /* the host's own view of the landed bytes, read at once (a round
         * trip by pt_to alone would let a driver finish a late copy first) */
        const size_t bytes = (size_t)pt_tensor_numel(host) * pt_dtype_size(pt_tensor_dtype(host));
        void *seen = malloc(bytes ? bytes : 1);
        if (seen && pt_to_host(host, seen, bytes) == PT_OK)
            back = pt_from_data(g_dev, pt_tensor_dtype(host), pt_tensor_ndim(host), pt_tensor_shape(host), seen);
        free(seen);
    }
    pt_release(host);
    return back;
}

void run_transfer_cases(void) {
    FOR_EACH_DTYPE_IN(t, PT_DTYPES_ANY) {
        for (int async = 0; async < 2; ++async) {
            static const operand_spec shapes[] = {{2, {7, 13}, LAY_T}, {3, {5, 6, 7}, LAY_N}, {0, {0}, LAY_C},
                                                  {1, {0}, LAY_C}};
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
                char name[256], sh[96];
                ht tmp = {.ndim = shapes[s].ndim};
                memcpy(tmp.shape, shapes[s].shape, sizeof tmp.shape[0] * 4);
                snprintf(name, sizeof name, "%s %s %s to cpu and back", async ? "to_async" : "to",
                         pt_dtype_name(t), operand_str(&tmp, shapes[s].lay, sh, sizeof sh));
                if (!case_selected(name)) continue;
                lcg g;
                lcg_seed(&g, seed_of(name));
                ht *x = rand_ht(t, tmp.ndim, tmp.shape, &g);
                expect e = {.val = ht_clone(x)};
                round_trip rt = {async, name};
                run_case(name, 1, &x, &shapes[s].lay, call_round_trip, &rt, &e, TOL_EXACT, 0);
                expect_free(&e);
                ht_free(x);
            }
        }
        /* the same device: pt_to returns the tensor itself */
        char name[256];
        snprintf(name, sizeof name, "to %s [7, 13] onto its own device is the same tensor", pt_dtype_name(t));
        if (case_selected(name)) {
            int64_t s[2] = {7, 13};
            pt_clear_error();
            pt_tensor *x = pt_zeros(g_dev, t, 2, s);
            pt_tensor *y = x ? pt_to(x, g_dev) : NULL;
            if (!x) {
                if (!skip_if_unsupported(name)) report_fail(name, "%s", pt_last_error());
            } else if (y != x) {
                report_fail(name, "pt_to returned %p for %p", (void *)y, (void *)x);
            } else {
                report_pass(name);
            }
            pt_release(y);
            pt_release(x);
        }
    }
}
