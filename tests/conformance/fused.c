/* Fused chains: graphs whose element-wise runs the core offers the backend
 * as FUSED ops (core/runtime/graph_fuse.c; docs/graphs.md, "Fusion").
 *
 * Each case builds a chain through the public API three ways on the device
 * under test: eagerly, captured (pt_graph_capture_begin/end) and replayed,
 * and replayed again after its inputs changed (new values copied into the
 * same tensors, which the graph reads in place). Every replay must equal
 * the eager run on the same inputs bit for bit where each op rounds once
 * (element-wise chains: a fused step rounds as its eager kernel does), and
 * lie within the case's tolerance of a float64 reference that rounds every
 * step to its dtype as the device does. Chains with a reduction after
 * them are held to the reference and to the eager run within the
 * reduction's tolerance (the order a backend sums a fused chain in is its
 * own; the cpu plugin keeps the eager order, docs/graphs.md).
 *
 * Where the device runs FUSED in the case's dtype (pt_device_supports), the
 * graph must have fused: pt_graph_info's kernels below its ops. Where it
 * refuses (the null skeleton refuses every op; a backend without fusion
 * replays op by op), only the equalities are checked. The core counts a
 * chain's dtype as reached before it asks the backend (graph_fuse.c), so
 * the coverage check sees FUSED in every dtype these cases end a chain in:
 * f32 f64 i32 i64 u8 f16 bf16. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

/* An input's or output's dtype: the case's dtype t, or a fixed one. */
#define T_CASE ((pt_dtype)-1)
#define MAX_IN 3
#define MAX_OUT 2

/* The chain: writes its outputs (new references) and returns how many it
 * made, 0 on failure. In-place cases write into an input and return it. */
typedef int (*chain_build)(pt_tensor **in, pt_tensor **out, pt_dtype t);
/* The float64 reference of one element: x the inputs' values there, y the
 * outputs', each step rounded to its dtype (quantize). */
typedef void (*chain_ref)(const double *x, double *y, pt_dtype t);

typedef struct fused_case {
    const char *name;
    unsigned dtypes;        /* the dtypes t it runs in */
    int nin;
    operand_spec in[MAX_IN];
    pt_dtype in_t[MAX_IN];
    domain dom[MAX_IN];
    int nout;
    pt_dtype out_t[MAX_OUT];
    chain_build build;
    chain_ref ref;
    tol_id tol;
    red_kind red;           /* RED_ARGMAX: none; else the last output is reduced */
    int red_dim;
} fused_case;

static pt_dtype dt(pt_dtype want, pt_dtype t) { return want == T_CASE ? t : want; }
static double q(pt_dtype t, double v) { return quantize(t, v); }
static double sigmoid_ref(double x) { return 1.0 / (1.0 + exp(-x)); }

/* ---- The chains and their references ---- */

/* unary: exp(neg(x)) then tanh, relu (a run of four) */
static int b_unary(pt_tensor **in, pt_tensor **out, pt_dtype t) {
    (void)t;
    out[0] = pt_relu(pt_tanh(pt_exp(pt_neg(in[0]))));
    return out[0] ? 1 : 0;
}
static void r_unary(const double *x, double *y, pt_dtype t) {
    y[0] = q(t, fmax(0.0, q(t, tanh(q(t, exp(-x[0]))))));
}

/* binary with broadcasting: (a * sigmoid(a) + b) with b a row [1, n] or a scalar */
static int b_swish_bias(pt_tensor **in, pt_tensor **out, pt_dtype t) {
    (void)t;
    out[0] = pt_add(pt_mul(in[0], pt_sigmoid(in[0])), in[1]);
    return out[0] ? 1 : 0;
}
static void r_swish_bias(const double *x, double *y, pt_dtype t) {
    y[0] = q(t, q(t, x[0] * q(t, sigmoid_ref(x[0]))) + x[1]);
}

/* scalar ops and clamp: clamp(x * 3 + 2, -20, 20) * b, integers too */
static int b_scalar(pt_tensor **in, pt_tensor **out, pt_dtype t) {
    (void)t;
    out[0] = pt_mul(pt_clamp(pt_add_scalar(pt_mul_scalar(in[0], 3), 2), -20, 20), in[1]);
    return out[0] ? 1 : 0;
}
static void r_scalar(const double *x, double *y, pt_dtype t) {
    double v = q(t, q(t, x[0] * 3) + 2);
    v = v < -20 ? -20 : v > 20 ? 20 : v;
    y[0] = q(t, v * x[1]);
}

/* integer arithmetic: maximum(a - b, a * b) / 3 with wrapping kept small */
static int b_int(pt_tensor **in, pt_tensor **out, pt_dtype t) {
    pt_tensor *three = pt_full(pt_tensor_device(in[0]), t, 0, NULL, 3);
    out[0] = pt_add_scalar(pt_div(pt_maximum(pt_sub(in[0], in[1]), pt_mul(in[0], in[1])), three), 1);
    pt_release(three);
    return out[0] ? 1 : 0;
}
static void r_int(const double *x, double *y, pt_dtype t) {
    y[0] = q(t, trunc(fmax(x[0] - x[1], x[0] * x[1]) / 3) + 1);
}

/* casts mid-chain and at the end: cast(cast(x, f64) * y64 + 1, t) */
static int b_cast_mid(pt_tensor **in, pt_tensor **out, pt_dtype t) {
    out[0] = pt_cast(pt_add_scalar(pt_mul(pt_cast(in[0], PT_F64), in[1]), 1), t);
    return out[0] ? 1 : 0;
}
static void r_cast_mid(const double *x, double *y, pt_dtype t) { y[0] = q(t, x[0] * x[1] + 1); }

/* a 16-bit chain ending in a cast to f32: cast(sigmoid(x) * x + b, f32) */
static int b_half(pt_tensor **in, pt_tensor **out, pt_dtype t) {
    (void)t;
    out[0] = pt_cast(pt_add(pt_mul(pt_sigmoid(in[0]), in[0]), in[1]), PT_F32);
    return out[0] ? 1 : 0;
}
static void r_half(const double *x, double *y, pt_dtype t) {
    y[0] = q(t, q(t, q(t, sigmoid_ref(x[0])) * x[0]) + x[1]);
}

/* 16-bit rounding at its edges (DOM_HALF_EDGES) inside a chain: x * y,
 * y in {0.5, 1, 1.5, 2}, rounded to t, then cast to the case's output dtype
 * (a 16-bit t cast to f32: both conversions of the fused kernel; f32 or f64
 * cast to f16 or bf16). */
static const fused_case *g_case; /* the case b_reduce and b_edges build */
static int b_edges(pt_tensor **in, pt_tensor **out, pt_dtype t) {
    (void)t;
    out[0] = pt_cast(pt_mul(in[0], in[1]), g_case->out_t[0]);
    return out[0] ? 1 : 0;
}
static void r_edges(const double *x, double *y, pt_dtype t) { y[0] = q(g_case->out_t[0], q(t, x[0] * x[1])); }

/* comparisons feeding where: where(a > b, a * 2, b + 1), and the mask cast */
static int b_where(pt_tensor **in, pt_tensor **out, pt_dtype t) {
    (void)t;
    pt_tensor *m = pt_gt(in[0], in[1]);
    out[0] = pt_where(m, pt_mul_scalar(in[0], 2), pt_add_scalar(in[1], 1));
    pt_release(m);
    return out[0] ? 1 : 0;
}
static void r_where(const double *x, double *y, pt_dtype t) {
    y[0] = x[0] > x[1] ? q(t, x[0] * 2) : q(t, x[1] + 1);
}

/* u8 chains: where(eq(a, b), a, c) compared once more, cast to f32 at the end */
static int b_u8(pt_tensor **in, pt_tensor **out, pt_dtype t) {
    (void)t;
    pt_tensor *m = pt_eq(in[0], in[1]);
    pt_tensor *w = pt_where(m, in[0], in[2]);
    out[0] = pt_cast(pt_lt(w, in[1]), PT_F32);
    pt_release(m);
    pt_release(w);
    return out[0] ? 1 : 0;
}
static void r_u8(const double *x, double *y, pt_dtype t) {
    (void)t;
    const double w = x[0] == x[1] ? x[0] : x[2];
    y[0] = w < x[1] ? 1 : 0;
}

/* an intermediate that is also an output: h = a * b + 1 kept, y = relu(h) * h */
static int b_store(pt_tensor **in, pt_tensor **out, pt_dtype t) {
    (void)t;
    out[0] = pt_add_scalar(pt_mul(in[0], in[1]), 1);
    out[1] = pt_mul(pt_relu(out[0]), out[0]);
    return out[0] && out[1] ? 2 : 0;
}
static void r_store(const double *x, double *y, pt_dtype t) {
    y[0] = q(t, q(t, x[0] * x[1]) + 1);
    y[1] = q(t, fmax(0.0, y[0]) * y[0]);
}

/* in place: x = sigmoid(x) * 2 - b written back into x (pt_copy_) */
static int b_inplace(pt_tensor **in, pt_tensor **out, pt_dtype t) {
    (void)t;
    pt_tensor *v = pt_sub(pt_mul_scalar(pt_sigmoid(in[0]), 2), in[1]);
    pt_status s = v ? pt_copy_(in[0], v) : pt_last_status();
    pt_release(v);
    if (s != PT_OK) return 0;
    out[0] = pt_retain(in[0]);
    return 1;
}
static void r_inplace(const double *x, double *y, pt_dtype t) {
    y[0] = q(t, q(t, q(t, sigmoid_ref(x[0])) * 2) - x[1]);
}

/* an optimizer's momentum step, both tensors in place: m = 0.9 m + g
 * (pt_copy_ back into m), then p += -0.125 m (pt_axpy_) */
static int b_momentum(pt_tensor **in, pt_tensor **out, pt_dtype t) {
    (void)t;
    pt_tensor *m = pt_add(pt_mul_scalar(in[1], 0.9), in[2]);
    pt_status s = m ? pt_copy_(in[1], m) : pt_last_status();
    pt_release(m);
    if (s == PT_OK) s = pt_axpy_(in[0], -0.125, in[1]);
    if (s != PT_OK) return 0;
    out[0] = pt_retain(in[0]);
    out[1] = pt_retain(in[1]);
    return 2;
}
static void r_momentum(const double *x, double *y, pt_dtype t) {
    y[1] = q(t, q(t, x[1] * q(t, 0.9)) + x[2]);
    y[0] = q(t, x[0] + q(t, -0.125 * y[1]));
}

/* a chain with a reduction after it: reduce(exp(x) * y - 1) */
static int b_reduce(pt_tensor **in, pt_tensor **out, pt_dtype t);
static void r_reduce(const double *x, double *y, pt_dtype t) {
    y[0] = q(t, q(t, q(t, exp(x[0])) * x[1]) - 1);
}

/* one step and the reduction after it: reduce(-x), one kernel fused */
static int b_neg_reduce(pt_tensor **in, pt_tensor **out, pt_dtype t);
static void r_neg(const double *x, double *y, pt_dtype t) { y[0] = q(t, -x[0]); }

/* ---- The cases ---- */

#define S1(a) 1, {a}
#define S2(a, b) 2, {a, b}
#define S3(a, b, c) 3, {a, b, c}
#define S0 0, {0}
#define UNI(lo, hi) {DOM_UNIFORM, lo, hi}
#define INT(lo, hi) {DOM_INT, lo, hi}
#define FLOATS (PT_DTYPE_BIT(PT_F32) | PT_DTYPE_BIT(PT_F64))
#define INTS (PT_DTYPE_BIT(PT_I32) | PT_DTYPE_BIT(PT_I64))
#define NONE RED_ARGMAX

static const fused_case cases[] = {
    {"unary", FLOATS, 1, {{S2(7, 13), LAY_C}}, {T_CASE}, {UNI(-3, 3)}, 1, {T_CASE},
     b_unary, r_unary, TOL_TRANSC, NONE, 0},
    {"unary transposed", FLOATS, 1, {{S2(7, 13), LAY_T}}, {T_CASE}, {UNI(-3, 3)}, 1, {T_CASE},
     b_unary, r_unary, TOL_TRANSC, NONE, 0},
    {"unary big", PT_DTYPE_BIT(PT_F32), 1, {{S1(BIG_N), LAY_C}}, {T_CASE}, {UNI(-3, 3)}, 1, {T_CASE},
     b_unary, r_unary, TOL_TRANSC, NONE, 0},
    {"swish bias row", FLOATS, 2, {{S2(7, 13), LAY_C}, {S2(1, 13), LAY_C}}, {T_CASE, T_CASE},
     {UNI(-4, 4), UNI(-1, 1)}, 1, {T_CASE}, b_swish_bias, r_swish_bias, TOL_CHAIN, NONE, 0},
    {"swish bias column narrowed", FLOATS, 2, {{S3(3, 5, 6), LAY_N}, {S3(1, 5, 1), LAY_C}},
     {T_CASE, T_CASE}, {UNI(-4, 4), UNI(-1, 1)}, 1, {T_CASE}, b_swish_bias, r_swish_bias, TOL_CHAIN,
     NONE, 0},
    /* rows of several work-groups, a row no group divides, rows in 3-d */
    {"swish bias wide rows", FLOATS, 2, {{S2(9, 768), LAY_C}, {S2(1, 768), LAY_C}}, {T_CASE, T_CASE},
     {UNI(-4, 4), UNI(-1, 1)}, 1, {T_CASE}, b_swish_bias, r_swish_bias, TOL_CHAIN, NONE, 0},
    {"swish bias prime rows", FLOATS, 2, {{S2(5, 257), LAY_C}, {S2(5, 1), LAY_C}}, {T_CASE, T_CASE},
     {UNI(-4, 4), UNI(-1, 1)}, 1, {T_CASE}, b_swish_bias, r_swish_bias, TOL_CHAIN, NONE, 0},
    {"swish bias 3-d rows", FLOATS, 2, {{S3(4, 6, 96), LAY_T}, {S3(4, 1, 96), LAY_C}},
     {T_CASE, T_CASE}, {UNI(-4, 4), UNI(-1, 1)}, 1, {T_CASE}, b_swish_bias, r_swish_bias, TOL_CHAIN,
     NONE, 0},
    {"swish bias scalar big", PT_DTYPE_BIT(PT_F32), 2, {{S2(1024, 1031), LAY_C}, {S0, LAY_C}},
     {T_CASE, T_CASE}, {UNI(-4, 4), UNI(-1, 1)}, 1, {T_CASE}, b_swish_bias, r_swish_bias, TOL_CHAIN,
     NONE, 0},
    {"scalar clamp", FLOATS | INTS, 2, {{S2(7, 13), LAY_C}, {S1(13), LAY_C}}, {T_CASE, T_CASE},
     {INT(-9, 9), INT(-5, 5)}, 1, {T_CASE}, b_scalar, r_scalar, TOL_ARITH, NONE, 0},
    {"integer", INTS, 2, {{S2(7, 13), LAY_T}, {S2(7, 13), LAY_C}}, {T_CASE, T_CASE},
     {INT(-50, 50), INT(-50, 50)}, 1, {T_CASE}, b_int, r_int, TOL_EXACT, NONE, 0},
    {"cast mid-chain", PT_DTYPE_BIT(PT_F32) | PT_DTYPE_BIT(PT_I32), 2,
     {{S2(7, 13), LAY_C}, {S2(7, 13), LAY_C}}, {T_CASE, PT_F64}, {INT(-20, 20), UNI(-3, 3)}, 1, {T_CASE},
     b_cast_mid, r_cast_mid, TOL_ARITH, NONE, 0},
    {"half cast at the end", PT_DTYPES_HALF, 2, {{S2(7, 13), LAY_C}, {S2(7, 13), LAY_O}},
     {T_CASE, T_CASE}, {UNI(-4, 4), UNI(-1, 1)}, 1, {PT_F32}, b_half, r_half, TOL_CHAIN, NONE, 0},
    {"half edges", PT_DTYPES_HALF, 2, {{S2(64, 33), LAY_C}, {S2(64, 33), LAY_T}}, {T_CASE, T_CASE},
     {{DOM_HALF_EDGES, 0, 0}, {DOM_GRID, 0.5, 2}}, 1, {PT_F32}, b_edges, r_edges, TOL_EXACT, NONE, 0},
    {"cast to f16 edges", FLOATS, 2, {{S2(64, 33), LAY_C}, {S2(64, 33), LAY_C}}, {T_CASE, T_CASE},
     {{DOM_HALF_EDGES, 0, 0}, {DOM_GRID, 0.5, 2}}, 1, {PT_F16}, b_edges, r_edges, TOL_EXACT, NONE, 0},
    {"cast to bf16 edges", FLOATS, 2, {{S2(64, 33), LAY_C}, {S2(64, 33), LAY_C}}, {T_CASE, T_CASE},
     {{DOM_HALF_EDGES, 0, 0}, {DOM_GRID, 0.5, 2}}, 1, {PT_BF16}, b_edges, r_edges, TOL_EXACT, NONE, 0},
    {"compare where", FLOATS | INTS, 2, {{S2(7, 13), LAY_C}, {S2(7, 13), LAY_T}}, {T_CASE, T_CASE},
     {INT(-5, 5), INT(-5, 5)}, 1, {T_CASE}, b_where, r_where, TOL_ARITH, NONE, 0},
    {"u8 eq where lt cast", PT_DTYPE_BIT(PT_U8), 3, {{S2(7, 13), LAY_C}, {S2(7, 13), LAY_C}, {S1(13), LAY_C}},
     {T_CASE, T_CASE, T_CASE}, {INT(0, 3), INT(0, 3), INT(0, 5)}, 1, {PT_F32}, b_u8, r_u8, TOL_EXACT,
     NONE, 0},
    {"stored intermediate", FLOATS | INTS, 2, {{S2(7, 13), LAY_C}, {S2(7, 13), LAY_N}}, {T_CASE, T_CASE},
     {INT(-6, 6), INT(-6, 6)}, 2, {T_CASE, T_CASE}, b_store, r_store, TOL_ARITH, NONE, 0},
    {"in place", FLOATS, 2, {{S2(7, 13), LAY_C}, {S2(7, 13), LAY_C}}, {T_CASE, T_CASE},
     {UNI(-4, 4), UNI(-1, 1)}, 1, {T_CASE}, b_inplace, r_inplace, TOL_CHAIN, NONE, 0},
    {"momentum step in place", FLOATS, 3, {{S2(7, 13), LAY_C}, {S2(7, 13), LAY_C}, {S2(7, 13), LAY_C}},
     {T_CASE, T_CASE, T_CASE}, {UNI(-2, 2), UNI(-1, 1), UNI(-1, 1)}, 2, {T_CASE, T_CASE}, b_momentum, r_momentum,
     TOL_CHAIN, NONE, 0},
    {"sum all", FLOATS, 2, {{S2(7, 13), LAY_C}, {S2(7, 13), LAY_C}}, {T_CASE, T_CASE},
     {UNI(-2, 2), UNI(-1, 1)}, 1, {T_CASE}, b_reduce, r_reduce, TOL_SUM, RED_SUM, PT_ALL},
    {"sum rows", FLOATS, 2, {{S2(7, 13), LAY_T}, {S1(13), LAY_C}}, {T_CASE, T_CASE},
     {UNI(-2, 2), UNI(-1, 1)}, 1, {T_CASE}, b_reduce, r_reduce, TOL_SUM, RED_SUM, 1},
    {"sum columns", FLOATS, 2, {{S2(300, 301), LAY_C}, {S1(301), LAY_C}}, {T_CASE, T_CASE},
     {UNI(-2, 2), UNI(-1, 1)}, 1, {T_CASE}, b_reduce, r_reduce, TOL_SUM, RED_SUM, 0},
    {"mean big", PT_DTYPE_BIT(PT_F32), 2, {{S1(BIG_N), LAY_C}, {S0, LAY_C}}, {T_CASE, T_CASE},
     {UNI(-2, 2), UNI(-1, 1)}, 1, {T_CASE}, b_reduce, r_reduce, TOL_MEAN, RED_MEAN, PT_ALL},
    {"mean rows", FLOATS, 2, {{S3(5, 6, 7), LAY_C}, {S3(5, 6, 7), LAY_C}}, {T_CASE, T_CASE},
     {UNI(-2, 2), UNI(-1, 1)}, 1, {T_CASE}, b_reduce, r_reduce, TOL_MEAN, RED_MEAN, 2},
    {"max middle", FLOATS, 2, {{S3(5, 6, 7), LAY_C}, {S2(6, 1), LAY_C}}, {T_CASE, T_CASE},
     {UNI(-2, 2), UNI(-1, 1)}, 1, {T_CASE}, b_reduce, r_reduce, TOL_TRANSC, RED_MAX, 1},
    {"one step, mean rows", FLOATS, 1, {{S2(9, 31), LAY_C}}, {T_CASE}, {UNI(-2, 2)}, 1, {T_CASE},
     b_neg_reduce, r_neg, TOL_MEAN, RED_MEAN, 1},
    {"one step, sum all", FLOATS, 1, {{S2(9, 31), LAY_T}}, {T_CASE}, {UNI(-2, 2)}, 1, {T_CASE},
     b_neg_reduce, r_neg, TOL_SUM, RED_SUM, PT_ALL},
};


/* v reduced as the case says; v released */
static pt_tensor *reduced_as_case(pt_tensor *v) {
    const int dim = g_case->red_dim;
    pt_tensor *r = g_case->red == RED_SUM    ? pt_sum(v, dim, false)
                   : g_case->red == RED_MEAN ? pt_mean(v, dim, false)
                                             : pt_max(v, dim, false);
    pt_release(v);
    return r;
}

static int b_reduce(pt_tensor **in, pt_tensor **out, pt_dtype t) {
    (void)t;
    out[0] = reduced_as_case(pt_add_scalar(pt_mul(pt_exp(in[0]), in[1]), -1));
    return out[0] ? 1 : 0;
}

static int b_neg_reduce(pt_tensor **in, pt_tensor **out, pt_dtype t) {
    (void)t;
    out[0] = reduced_as_case(pt_neg(in[0]));
    return out[0] ? 1 : 0;
}

/* ---- Running one case in one dtype ---- */

/* The references of every output over the inputs' broadcast shape. */
static void reference(const fused_case *fc, pt_dtype t, ht *const *hin, expect *e) {
    int nd = 0;
    int64_t shape[PT_MAX_DIMS] = {0};
    for (int i = 0; i < fc->nin; ++i) {
        int64_t next[PT_MAX_DIMS];
        int nn;
        broadcast_shape(nd, shape, hin[i]->ndim, hin[i]->shape, &nn, next);
        nd = nn;
        memcpy(shape, next, sizeof shape);
    }
    ht *val[MAX_OUT] = {NULL};
    for (int k = 0; k < fc->nout; ++k) val[k] = ht_new(dt(fc->out_t[k], t), nd, shape);
    const int64_t n = val[0]->numel;
    for (int64_t f = 0; f < n; ++f) {
        double x[MAX_IN], y[MAX_OUT];
        for (int i = 0; i < fc->nin; ++i) { /* the broadcast element of input i */
            const ht *h = hin[i];
            int64_t rest = f, at = 0, stride = 1;
            for (int d = nd - 1, di = h->ndim - 1; d >= 0; --d, --di) {
                const int64_t id = rest % shape[d];
                rest /= shape[d];
                if (di < 0) continue;
                if (h->shape[di] != 1) at += id * stride;
                stride *= h->shape[di];
            }
            x[i] = h->v[at];
        }
        fc->ref(x, y, t);
        for (int k = 0; k < fc->nout; ++k) val[k]->v[f] = quantize(val[k]->dtype, y[k]);
    }
    for (int k = 0; k < fc->nout; ++k) e[k] = (expect){.val = val[k]};
    if (fc->red != RED_ARGMAX) {
        ht *last = val[fc->nout - 1];
        ref_reduce(last, fc->red, fc->red_dim, false, last->dtype, &e[fc->nout - 1]);
        ht_free(last);
    }
}

/* Copies the host values into the device inputs (which may be views). */
static bool set_inputs(pt_tensor **in, ht *const *hin, int nin) {
    for (int i = 0; i < nin; ++i) {
        pt_tensor *c = ht_upload(g_dev, hin[i], LAY_C);
        pt_status s = c ? pt_copy_(in[i], c) : pt_last_status();
        pt_release(c);
        if (s != PT_OK) return false;
    }
    return true;
}

/* Bit-for-bit equality of two results (NaN equal to NaN). */
static bool same_values(const ht *a, const ht *b) {
    if (a->numel != b->numel || a->dtype != b->dtype) return false;
    for (int64_t i = 0; i < a->numel; ++i)
        if (!(a->v[i] == b->v[i] || (isnan(a->v[i]) && isnan(b->v[i]))) ||
            signbit(a->v[i]) != signbit(b->v[i]))
            return false;
    return true;
}

static void release_all(pt_tensor **t, int n) {
    for (int i = 0; i < n; ++i) {
        pt_release(t[i]);
        t[i] = NULL;
    }
}

/* Downloads the outputs; false (and a FAIL) when one cannot be read. */
static bool download(const char *name, pt_tensor **out, int n, ht **got) {
    char msg[256];
    for (int k = 0; k < n; ++k) {
        got[k] = ht_download(out[k], msg, sizeof msg);
        if (!got[k]) {
            report_fail(name, "output %d: %s", k, msg);
            for (int j = 0; j < k; ++j) ht_free(got[j]);
            return false;
        }
    }
    return true;
}

static bool check(const char *name, const char *what, const fused_case *fc, ht *const *got,
                  ht *const *eager, const expect *e) {
    char msg[512];
    const bool reduced = fc->red != RED_ARGMAX;
    for (int k = 0; k < fc->nout; ++k) {
        const bool reduced_out = reduced && k == fc->nout - 1;
        if (!compare_result(got[k], &e[k], fc->tol, msg, sizeof msg)) {
            report_fail(name, "%s, output %d against the reference: %s", what, k, msg);
            return false;
        }
        if (reduced_out) {
            expect as_eager = {.val = eager[k], .acc = e[k].acc, .K = e[k].K};
            if (!compare_result(got[k], &as_eager, fc->tol, msg, sizeof msg)) {
                report_fail(name, "%s, output %d against the eager run: %s", what, k, msg);
                return false;
            }
        } else if (!same_values(got[k], eager[k])) {
            report_fail(name, "%s, output %d differs from the eager run's bits", what, k);
            return false;
        }
    }
    return true;
}

/* fc's chain on in, inside a scope: its intermediates are released there
 * (in a capture, that makes them the graph's planned intermediates), its
 * outputs kept for the caller. */
static int build_scoped(const fused_case *fc, pt_tensor **in, pt_tensor **out, pt_dtype t) {
    pt_scope scope = pt_scope_begin();
    const int made = fc->build(in, out, t);
    for (int k = 0; k < MAX_OUT; ++k) out[k] = pt_keep(out[k]);
    pt_scope_end(scope);
    return made;
}

/* Eager on the current inputs: the outputs' values in ev. */
static bool run_eager(const char *name, const fused_case *fc, pt_tensor **in, ht *const *hin, pt_dtype t,
                      ht **ev) {
    pt_tensor *out[MAX_OUT] = {NULL};
    if (!set_inputs(in, hin, fc->nin) || build_scoped(fc, in, out, t) != fc->nout) {
        if (!skip_if_unsupported(name))
            report_fail(name, "eager run failed: %s: %s", pt_status_name(pt_last_status()), pt_last_error());
        release_all(out, MAX_OUT);
        return false;
    }
    bool ok = download(name, out, fc->nout, ev);
    release_all(out, MAX_OUT);
    return ok;
}

static void run_fused_case(const fused_case *fc, pt_dtype t) {
    char name[160];
    snprintf(name, sizeof name, "fused %s %s", fc->name, pt_dtype_name(t));
    if (!case_selected(name)) return;
    pt_clear_error();
    g_case = fc;
    lcg rng;
    lcg_seed(&rng, 0xF05EDull + (uint64_t)t * 131 + (uint64_t)(fc - cases) * 7919);
    ht *hin[2][MAX_IN] = {{NULL}};
    pt_tensor *in[MAX_IN] = {NULL};
    pt_tensor *out[MAX_OUT] = {NULL};
    ht *ev[2][MAX_OUT] = {{NULL}}, *gv[MAX_OUT] = {NULL};
    expect e[2][MAX_OUT];
    memset(e, 0, sizeof e);
    pt_graph *g = NULL;
    for (int v = 0; v < 2; ++v) /* two sets of input values: the replay after they change */
        for (int i = 0; i < fc->nin; ++i) {
            hin[v][i] = ht_new(dt(fc->in_t[i], t), fc->in[i].ndim, fc->in[i].shape);
            ht_fill(hin[v][i], fc->dom[i], &rng);
        }
    for (int i = 0; i < fc->nin; ++i) {
        in[i] = ht_upload(g_dev, hin[0][i], fc->in[i].lay);
        if (!in[i]) {
            if (!skip_if_unsupported(name))
                report_fail(name, "uploading input %d failed: %s", i, pt_last_error());
            goto done;
        }
    }
    for (int v = 0; v < 2; ++v) {
        reference(fc, t, hin[v], e[v]);
        if (!run_eager(name, fc, in, hin[v], t, ev[v])) goto done;
    }
    if (pt_graph_capture_begin(g_dev) != PT_OK) {
        report_fail(name, "pt_graph_capture_begin: %s", pt_last_error());
        goto done;
    }
    const int made = build_scoped(fc, in, out, t);
    g = pt_graph_capture_end(g_dev);
    if (!g || made != fc->nout) {
        if (!skip_if_unsupported(name))
            report_fail(name, "capture failed: %s: %s", pt_status_name(pt_last_status()), pt_last_error());
        goto done;
    }
    pt_graph_stats st;
    if (pt_graph_info(g, &st) != PT_OK) {
        report_fail(name, "pt_graph_info: %s", pt_last_error());
        goto done;
    }
    const bool fuses = pt_device_supports(g_dev, PT_OP_FUSED, t) == PT_OK;
    pt_clear_error();
    if (fuses && st.kernels >= st.ops) {
        report_fail(name, "the device runs fused chains in %s, but the graph of %lld ops launches %lld kernels",
                    pt_dtype_name(t), (long long)st.ops, (long long)st.kernels);
        goto done;
    }
    for (int v = 0; v < 2; ++v) {
        const char *what = v == 0 ? "first replay" : "replay after the inputs changed";
        if (!set_inputs(in, hin[v], fc->nin) || pt_graph_replay(g) != PT_OK) {
            report_fail(name, "%s: %s: %s", what, pt_status_name(pt_last_status()), pt_last_error());
            goto done;
        }
        if (!download(name, out, fc->nout, gv)) goto done;
        const bool ok = check(name, what, fc, gv, ev[v], e[v]);
        for (int k = 0; k < fc->nout; ++k) {
            ht_free(gv[k]);
            gv[k] = NULL;
        }
        if (!ok) goto done;
    }
    report_pass(name);
done:
    pt_graph_free(g);
    release_all(out, MAX_OUT);
    release_all(in, MAX_IN);
    for (int v = 0; v < 2; ++v) {
        for (int i = 0; i < fc->nin; ++i) ht_free(hin[v][i]);
        for (int k = 0; k < fc->nout; ++k) {
            ht_free(ev[v][k]);
            expect_free(&e[v][k]);
        }
    }
    pt_clear_error();
}

void run_fused_cases(void) {
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c)
        FOR_EACH_DTYPE_IN(t, cases[c].dtypes) run_fused_case(&cases[c], t);
}
