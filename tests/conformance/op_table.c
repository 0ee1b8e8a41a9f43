/* The op table and the tolerance table, and the drivers that run
 * op x dtype x shape family for the computing ops (element-wise, where,
 * reductions, norms, softmax, matmul).
 *
 * Each op states the dtypes it accepts (ops.h plus the core's documented
 * choices: u8 only for comparisons, where, max, argmax and sum, which
 * counts u8 into i64), the input value domains that keep it in its
 * mathematical domain, and its tolerance. Result dtypes follow ops.h:
 * promotion u8 < i32 < i64 < f32 < f64, comparisons give u8, argmax i64. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

/* ---- Tolerances, all in one table ----
 * rtol: relative to |expected|. racc: relative to the accumulated magnitude
 * (sum of |terms|, 0 when every partial sum is exact), times sqrt(K) where
 * sqrtk. f32 element-wise ops are correctly rounded or within a few ulp
 * (OpenCL allows up to 16 ulp for pow); reductions and matmul accumulate
 * rounding errors that grow with the number of terms K. Integer results are
 * always exact. */
const tolerance tolerances[TOL__COUNT] = {
    /*               name            rtol32  racc32  rtol64  racc64  atol32  atol64 sqrtk */
    [TOL_EXACT] = {"exact", 0, 0, 0, 0, 0, 0, false},
    [TOL_ARITH] = {"arith", 1e-6, 0, 1e-15, 0, 0, 0, false},
    [TOL_TRANSC] = {"transcendental", 1e-5, 0, 1e-12, 0, 1e-30, 1e-300, false},
    [TOL_POW] = {"pow", 2e-5, 0, 1e-12, 0, 0, 0, false},
    [TOL_SUM] = {"sum", 1e-6, 1e-6, 1e-14, 1e-15, 0, 0, true},
    [TOL_MEAN] = {"mean", 1e-6, 1e-6, 1e-14, 1e-15, 0, 0, true},
    [TOL_NORM] = {"norm", 1e-6, 1e-6, 1e-14, 1e-15, 0, 0, true},
    [TOL_SOFTMAX] = {"softmax", 1e-5, 1e-6, 1e-12, 1e-14, 1e-7, 1e-15, true},
    [TOL_LOG_SOFTMAX] = {"log_softmax", 1e-5, 1e-6, 1e-12, 1e-14, 1e-6, 1e-14, false},
    [TOL_MATMUL] = {"matmul", 1e-6, 1e-6, 1e-14, 1e-15, 0, 0, true},
    [TOL_AXPY] = {"axpy", 0, 5e-7, 0, 1e-15, 0, 0, false},
    [TOL_RANDN] = {"randn", 0, 1e-6, 0, 1e-12, 0, 0, false},
    [TOL_CONV] = {"conv", 1e-6, 1e-6, 1e-14, 1e-15, 0, 0, true},
    /* f32 transcendental functions with their ULP bound: a result within
     * B ULP of the exact value is within B * 2^-23 of it relatively, so
     * rtol32 = B * 2^-23 passes every result the bound allows. B is the
     * loosest any backend promises: the OpenCL 1.2 full profile (exp, log
     * 3, sin, cos 4, tanh 5 ULP), CUDA (expf, tanhf, sinf, cosf 2, logf 1)
     * and the cpu plugin's (SLEEF: exp 1, log, sin, cos 3.5; tanh a
     * rational function within 5; sigmoid 1/(1+exp(-x)), about 2.5). */
    [TOL_EXP] = {"exp (3 ulp)", 3 * 0x1p-23, 0, 1e-12, 0, 1e-30, 1e-300, false},
    [TOL_LOG] = {"log (3.5 ulp)", 3.5 * 0x1p-23, 0, 1e-12, 0, 1e-30, 1e-300, false},
    [TOL_TANH] = {"tanh (5 ulp)", 5 * 0x1p-23, 0, 1e-12, 0, 1e-30, 1e-300, false},
    [TOL_SIGMOID] = {"sigmoid (5 ulp)", 5 * 0x1p-23, 0, 1e-12, 0, 1e-30, 1e-300, false},
    [TOL_SINCOS] = {"sin/cos (4 ulp)", 4 * 0x1p-23, 0, 1e-12, 0, 1e-30, 1e-300, false},
    /* A chain of element-wise steps, each rounded and within its own bound
     * (transcendental ones up to 5 ULP), ending in an addition that can
     * cancel terms of magnitude up to about 4: relative to the result, plus
     * a few ULP of those terms absolute. */
    [TOL_CHAIN] = {"chain (steps rounded)", 8 * 0x1p-23, 0, 1e-12, 0, 4e-6, 1e-14, false},
};

/* The float64 references of the element-wise rows below (ref1_fn,
 * ref2_fn): one expression each, in x (unary) or a and b (binary), and t,
 * the dtype of the case. */
#define REF1(name, EXPR)                                                                        \
    static double f_##name(double x, pt_dtype t) {                                              \
        (void)t;                                                                                \
        return (EXPR);                                                                          \
    }
#define REF2(name, EXPR)                                                                        \
    static double f_##name(double a, double b, pt_dtype t) {                                    \
        (void)t;                                                                                \
        return (EXPR);                                                                          \
    }
REF1(neg, -x)
REF1(abs, fabs(x))
REF1(exp, exp(x))
REF1(log, log(x))
REF1(sqrt, sqrt(x))
REF1(rsqrt, 1 / sqrt(x))
REF1(relu, x > 0 ? x : 0)
REF1(sigmoid, 1 / (1 + exp(-x)))
REF1(sin, sin(x))
REF1(cos, cos(x))
REF1(tanh, tanh(x))
REF2(add, a + b)
REF2(sub, a - b)
REF2(mul, a * b)
REF2(div, pt_dtype_is_float(t) ? a / b : b == 0 ? 0 : trunc(a / b)) /* integers truncate, x/0 = 0 */
REF2(pow, pow(a, b))
REF2(maximum, a > b ? a : b)
REF2(minimum, a < b ? a : b)
REF2(eq, a == b)
REF2(lt, a < b)
REF2(gt, a > b)
REF2(le, a <= b)
REF2(ge, a >= b)
REF2(ne, a != b)

typedef enum op_kind { K_UNARY, K_BINARY, K_SCALAR, K_CLAMP, K_WHERE, K_REDUCE, K_NORM, K_SOFTMAX, K_MATMUL } op_kind;

typedef struct op_def {
    const char *name;
    op_kind kind;
    unsigned dtypes;
    tol_id tol;
    domain fdom[2], idom[2], udom[2]; /* per input: float, signed, u8 dtypes (u8 unset: idom) */
    domain bigdom;                    /* float data for big cases (unset: fdom[0]) */
    bool big;                         /* runs the big families (f32 only) */
    pt_tensor *(*f1)(pt_tensor *);
    ref1_fn r1;
    pt_tensor *(*f2)(pt_tensor *, pt_tensor *);
    ref2_fn r2;
    bool cmp;                         /* result is u8 */
    pt_tensor *(*fs)(pt_tensor *, double);
    double sf, si, su;                /* scalar for float / signed / u8 dtypes */
    double sf2, si2;                  /* K_CLAMP: upper bound (sf, si the lower) */
    pt_tensor *(*fr)(pt_tensor *, int, bool);
    red_kind red;
    pt_tensor *(*fsm)(pt_tensor *, int);
    bool log;
} op_def;

#define U(lo, hi) {DOM_UNIFORM, lo, hi}
#define LU(lo, hi) {DOM_LOGU, lo, hi}
#define AW(lo, hi) {DOM_AWAY, lo, hi}
#define IN(lo, hi) {DOM_INT, lo, hi}
#define GR(lo, hi) {DOM_GRID, lo, hi}

static const op_def ops[] = {
    /* unary */
    {.name = "neg", .kind = K_UNARY, .dtypes = PT_DTYPES_NUMERIC, .tol = TOL_EXACT, .fdom = {U(-10, 10)},
     .idom = {IN(-100, 100)}, .big = true, .f1 = pt_neg, .r1 = f_neg},
    {.name = "abs", .kind = K_UNARY, .dtypes = PT_DTYPES_NUMERIC, .tol = TOL_EXACT, .fdom = {U(-10, 10)},
     .idom = {IN(-100, 100)}, .f1 = pt_abs, .r1 = f_abs},
    {.name = "relu", .kind = K_UNARY, .dtypes = PT_DTYPES_NUMERIC, .tol = TOL_EXACT, .fdom = {U(-2, 2)},
     .idom = {IN(-20, 20)}, .f1 = pt_relu, .r1 = f_relu},
    {.name = "exp", .kind = K_UNARY, .dtypes = PT_DTYPES_FLOAT, .tol = TOL_EXP, .fdom = {U(-10, 10)},
     .big = true, .f1 = pt_exp, .r1 = f_exp},
    {.name = "log", .kind = K_UNARY, .dtypes = PT_DTYPES_FLOAT, .tol = TOL_LOG, .fdom = {LU(1e-3, 1e3)},
     .f1 = pt_log, .r1 = f_log},
    {.name = "sqrt", .kind = K_UNARY, .dtypes = PT_DTYPES_FLOAT, .tol = TOL_TRANSC, .fdom = {U(0, 100)},
     .f1 = pt_sqrt, .r1 = f_sqrt},
    /* 2 ULP in f32 (OpenCL's and CUDA's rsqrt): within the transcendental bound */
    {.name = "rsqrt", .kind = K_UNARY, .dtypes = PT_DTYPES_FLOAT, .tol = TOL_TRANSC, .fdom = {LU(1e-3, 1e3)},
     .f1 = pt_rsqrt, .r1 = f_rsqrt},
    {.name = "sigmoid", .kind = K_UNARY, .dtypes = PT_DTYPES_FLOAT, .tol = TOL_SIGMOID,
     .fdom = {U(-12, 12)}, .big = true, .f1 = pt_sigmoid, .r1 = f_sigmoid},
    {.name = "tanh", .kind = K_UNARY, .dtypes = PT_DTYPES_FLOAT, .tol = TOL_TANH, .fdom = {U(-5, 5)},
     .f1 = pt_tanh, .r1 = f_tanh},
    {.name = "sin", .kind = K_UNARY, .dtypes = PT_DTYPES_FLOAT, .tol = TOL_SINCOS, .fdom = {U(-10, 10)},
     .f1 = pt_sin, .r1 = f_sin},
    {.name = "cos", .kind = K_UNARY, .dtypes = PT_DTYPES_FLOAT, .tol = TOL_SINCOS, .fdom = {U(-10, 10)},
     .f1 = pt_cos, .r1 = f_cos},
    /* clamp to [sf, sf2] (floats) or [si, si2] (integers): data on both sides of each bound */
    {.name = "clamp", .kind = K_CLAMP, .dtypes = PT_DTYPES_NUMERIC, .tol = TOL_EXACT, .fdom = {U(-10, 10)},
     .idom = {IN(-100, 100)}, .sf = -2.5, .sf2 = 4, .si = -7, .si2 = 30},
    /* binary, broadcasting */
    {.name = "add", .kind = K_BINARY, .dtypes = PT_DTYPES_NUMERIC, .tol = TOL_ARITH,
     .fdom = {U(-10, 10), U(-10, 10)}, .idom = {IN(-100, 100), IN(-100, 100)}, .big = true,
     .f2 = pt_add, .r2 = f_add},
    {.name = "sub", .kind = K_BINARY, .dtypes = PT_DTYPES_NUMERIC, .tol = TOL_ARITH,
     .fdom = {U(-10, 10), U(-10, 10)}, .idom = {IN(-100, 100), IN(-100, 100)}, .f2 = pt_sub,
     .r2 = f_sub},
    {.name = "mul", .kind = K_BINARY, .dtypes = PT_DTYPES_NUMERIC, .tol = TOL_ARITH,
     .fdom = {U(-10, 10), U(-10, 10)}, .idom = {IN(-1000, 1000), IN(-1000, 1000)}, .big = true,
     .f2 = pt_mul, .r2 = f_mul},
    {.name = "div", .kind = K_BINARY, .dtypes = PT_DTYPES_NUMERIC, .tol = TOL_ARITH,
     .fdom = {U(-10, 10), AW(0.5, 4)}, .idom = {IN(-100, 100), IN(-6, 6)}, .big = true,
     .f2 = pt_div, .r2 = f_div},
    {.name = "pow", .kind = K_BINARY, .dtypes = PT_DTYPES_FLOAT, .tol = TOL_POW,
     .fdom = {LU(0.25, 4), U(-3, 3)}, .f2 = pt_pow, .r2 = f_pow},
    {.name = "maximum", .kind = K_BINARY, .dtypes = PT_DTYPES_NUMERIC, .tol = TOL_EXACT,
     .fdom = {GR(-3, 3), GR(-3, 3)}, .idom = {IN(-5, 5), IN(-5, 5)}, .f2 = pt_maximum,
     .r2 = f_maximum},
    {.name = "minimum", .kind = K_BINARY, .dtypes = PT_DTYPES_NUMERIC, .tol = TOL_EXACT,
     .fdom = {GR(-3, 3), GR(-3, 3)}, .idom = {IN(-5, 5), IN(-5, 5)}, .f2 = pt_minimum,
     .r2 = f_minimum},
    {.name = "eq", .kind = K_BINARY, .dtypes = PT_DTYPES_ANY, .tol = TOL_EXACT,
     .fdom = {GR(-2, 2), GR(-2, 2)}, .idom = {IN(-3, 3), IN(-3, 3)}, .udom = {IN(0, 4), IN(0, 4)},
     .cmp = true, .f2 = pt_eq, .r2 = f_eq},
    {.name = "lt", .kind = K_BINARY, .dtypes = PT_DTYPES_ANY, .tol = TOL_EXACT,
     .fdom = {GR(-2, 2), GR(-2, 2)}, .idom = {IN(-3, 3), IN(-3, 3)}, .udom = {IN(124, 131), IN(124, 131)},
     .big = true, .cmp = true, .f2 = pt_lt, .r2 = f_lt},
    {.name = "gt", .kind = K_BINARY, .dtypes = PT_DTYPES_ANY, .tol = TOL_EXACT,
     .fdom = {GR(-2, 2), GR(-2, 2)}, .idom = {IN(-3, 3), IN(-3, 3)}, .udom = {IN(124, 131), IN(124, 131)},
     .cmp = true, .f2 = pt_gt, .r2 = f_gt},
    {.name = "le", .kind = K_BINARY, .dtypes = PT_DTYPES_ANY, .tol = TOL_EXACT,
     .fdom = {GR(-2, 2), GR(-2, 2)}, .idom = {IN(-3, 3), IN(-3, 3)}, .udom = {IN(124, 131), IN(124, 131)},
     .cmp = true, .f2 = pt_le, .r2 = f_le},
    {.name = "ge", .kind = K_BINARY, .dtypes = PT_DTYPES_ANY, .tol = TOL_EXACT,
     .fdom = {GR(-2, 2), GR(-2, 2)}, .idom = {IN(-3, 3), IN(-3, 3)}, .udom = {IN(124, 131), IN(124, 131)},
     .cmp = true, .f2 = pt_ge, .r2 = f_ge},
    {.name = "ne", .kind = K_BINARY, .dtypes = PT_DTYPES_ANY, .tol = TOL_EXACT,
     .fdom = {GR(-2, 2), GR(-2, 2)}, .idom = {IN(-3, 3), IN(-3, 3)}, .udom = {IN(0, 4), IN(0, 4)},
     .cmp = true, .f2 = pt_ne, .r2 = f_ne},
    /* tensor-scalar (scalars exactly representable in f32; integral for integers) */
    {.name = "add_scalar", .kind = K_SCALAR, .dtypes = PT_DTYPES_NUMERIC, .tol = TOL_ARITH, .fdom = {U(-10, 10)},
     .idom = {IN(-100, 100)}, .fs = pt_add_scalar, .sf = 2.5, .si = -7},
    {.name = "mul_scalar", .kind = K_SCALAR, .dtypes = PT_DTYPES_NUMERIC, .tol = TOL_ARITH, .fdom = {U(-10, 10)},
     .idom = {IN(-100, 100)}, .big = true, .fs = pt_mul_scalar, .sf = -1.5, .si = 3},
    /* where: cond u8 with 0, 1, 2 (non-zero is true) */
    {.name = "where", .kind = K_WHERE, .dtypes = PT_DTYPES_ANY, .tol = TOL_EXACT, .fdom = {U(-10, 10), U(-10, 10)},
     .idom = {IN(-100, 100), IN(-100, 100)}, .udom = {IN(0, 255), IN(0, 255)}, .big = true},
    /* reductions: real data for the small cases, integer-valued data (exact
     * whatever the summation order) for the big ones */
    {.name = "sum", .kind = K_REDUCE, .dtypes = PT_DTYPES_ANY, .tol = TOL_SUM, .fdom = {U(-1, 1)},
     .idom = {IN(-100, 100)}, .udom = {IN(0, 255)}, .bigdom = IN(-8, 8), .big = true, .fr = pt_sum,
     .red = RED_SUM},
    {.name = "mean", .kind = K_REDUCE, .dtypes = PT_DTYPES_FLOAT, .tol = TOL_MEAN, .fdom = {U(-1, 1)},
     .bigdom = IN(-8, 8), .big = true, .fr = pt_mean, .red = RED_MEAN},
    {.name = "max", .kind = K_REDUCE, .dtypes = PT_DTYPES_ANY, .tol = TOL_EXACT, .fdom = {U(-10, 10)},
     .idom = {IN(-1000, 1000)}, .udom = {IN(0, 255)}, .bigdom = GR(-4, 4), .big = true, .fr = pt_max,
     .red = RED_MAX},
    {.name = "argmax", .kind = K_REDUCE, .dtypes = PT_DTYPES_ANY, .tol = TOL_EXACT, .fdom = {GR(-4, 4)},
     .idom = {IN(-5, 5)}, .udom = {IN(122, 133)}, .big = true, .fr = pt_argmax, .red = RED_ARGMAX},
    /* norm over all dims (pt_norm) */
    {.name = "norm", .kind = K_NORM, .dtypes = PT_DTYPES_FLOAT, .tol = TOL_NORM, .fdom = {U(-1, 1)},
     .bigdom = IN(-3, 3), .big = true},
    {.name = "softmax", .kind = K_SOFTMAX, .dtypes = PT_DTYPES_FLOAT, .tol = TOL_SOFTMAX, .fdom = {U(-5, 5)},
     .big = true, .fsm = pt_softmax},
    {.name = "log_softmax", .kind = K_SOFTMAX, .dtypes = PT_DTYPES_FLOAT, .tol = TOL_LOG_SOFTMAX,
     .fdom = {U(-5, 5)}, .big = true, .fsm = pt_log_softmax, .log = true},
    {.name = "matmul", .kind = K_MATMUL, .dtypes = PT_DTYPES_FLOAT, .tol = TOL_MATMUL,
     .fdom = {U(-1, 1), U(-1, 1)}, .big = true},
};
static const int n_ops = sizeof ops / sizeof ops[0];

static bool dom_set(domain d) { return d.lo != 0 || d.hi != 0; }

/* Set while running the wide-integer cases: values near the top of the
 * dtype's range, where computing in a narrower or floating type shows. */
static const domain *dom_override;

static domain input_domain(const op_def *op, int i, pt_dtype t, bool big) {
    if (dom_override) return *dom_override;
    if (pt_dtype_is_float(t)) return (big && dom_set(op->bigdom)) ? op->bigdom : op->fdom[i];
    if (t == PT_U8 && dom_set(op->udom[i])) return op->udom[i];
    return op->idom[i];
}

static uint64_t case_seed(const char *name) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *p = name; *p; ++p) h = (h ^ (uint8_t)*p) * 1099511628211ull;
    return h;
}

static ht *make_input(const op_def *op, int i, pt_dtype t, const operand_spec *s, bool big,
                      lcg *g) {
    ht *h = ht_new(t, s->ndim, s->shape);
    ht_fill(h, input_domain(op, i, t, big), g);
    ht_for_layout(h, s->lay);
    return h;
}

/* ---- case functions (device side) ---- */

typedef struct call {
    const op_def *op;
    int dim;
    bool keepdim;
    double scalar, scalar2;
} call;

static pt_tensor *call_unary(pt_tensor **in, const void *p) { return ((const call *)p)->op->f1(in[0]); }
static pt_tensor *call_binary(pt_tensor **in, const void *p) {
    return ((const call *)p)->op->f2(in[0], in[1]);
}
static pt_tensor *call_scalar(pt_tensor **in, const void *p) {
    const call *c = p;
    return c->op->fs(in[0], c->scalar);
}
static pt_tensor *call_clamp(pt_tensor **in, const void *p) {
    const call *c = p;
    return pt_clamp(in[0], c->scalar, c->scalar2);
}
static pt_tensor *call_where(pt_tensor **in, const void *p) {
    (void)p;
    return pt_where(in[0], in[1], in[2]);
}
static pt_tensor *call_reduce(pt_tensor **in, const void *p) {
    const call *c = p;
    return c->op->fr(in[0], c->dim, c->keepdim);
}
static pt_tensor *call_norm(pt_tensor **in, const void *p) {
    (void)p;
    return pt_norm(in[0]);
}
static pt_tensor *call_softmax(pt_tensor **in, const void *p) {
    const call *c = p;
    return c->op->fsm(in[0], c->dim);
}
static pt_tensor *call_matmul(pt_tensor **in, const void *p) {
    (void)p;
    return pt_matmul(in[0], in[1]);
}

/* ---- drivers ---- */

static void case_name(char *buf, size_t cap, const char *op, const char *dt, const char *rest) {
    snprintf(buf, cap, "%s %s %s", op, dt, rest);
}

/* Bounds the core rewrites before a backend sees them: an infinite side
 * (integers: the dtype's end, which backends reach by saturation), lo > hi
 * (all hi), fractional integer bounds (rounded inwards). */
static void run_clamp_edges(const op_def *op, pt_dtype t, ht *x, const layout *lay,
                            const char *base) {
    const double edges[][3] = {{-INFINITY, 3, 0}, {-3, INFINITY, 1}, {5, -5, 2}, {-2.5, 2.5, 3}};
    for (size_t k = 0; k < sizeof edges / sizeof edges[0]; ++k) {
        char name[300];
        snprintf(name, sizeof name, "%s bounds(%g, %g)", base, edges[k][0], edges[k][1]);
        if (!case_selected(name)) continue;
        call c = {.op = op, .scalar = edges[k][0], .scalar2 = edges[k][1]};
        double lo = c.scalar, hi = c.scalar2;
        if (!pt_dtype_is_float(t)) {
            lo = ceil(lo);
            hi = floor(hi);
        }
        if (lo > hi) lo = hi;
        expect e = {0};
        e.val = ref_clamp(x, lo, hi, t);
        run_case(name, 1, &x, lay, call_clamp, &c, &e, op->tol, 0);
        expect_free(&e);
    }
}

static void run_unary(const op_def *op, pt_dtype t) {
    bool edges_done = false;
    for (int f = 0; f < n_unary_families; ++f) {
        const unary_family *fam = &unary_families[f];
        if (fam->big && (!op->big || t != PT_F32)) continue;
        char name[256], s[96];
        ht tmp = {.ndim = fam->x.ndim};
        memcpy(tmp.shape, fam->x.shape, sizeof fam->x.shape);
        case_name(name, sizeof name, op->name, pt_dtype_name(t), operand_str(&tmp, fam->x.lay, s, sizeof s));
        if (!case_selected(name)) continue;
        lcg g;
        lcg_seed(&g, case_seed(name));
        ht *x = make_input(op, 0, t, &fam->x, fam->big, &g);
        call c = {.op = op};
        expect e = {0};
        if (op->kind == K_UNARY) {
            e.val = ref_map1(x, op->r1, t, t);
            run_case(name, 1, &x, &fam->x.lay, call_unary, &c, &e, op->tol, 0);
        } else if (op->kind == K_SCALAR) {
            c.scalar = pt_dtype_is_float(t) ? op->sf : op->si;
            ht *sc = ht_new(t, 0, NULL);
            sc->v[0] = c.scalar;
            e.val = ref_map2(x, sc, op->fs == pt_add_scalar ? f_add : f_mul, t, t);
            ht_free(sc);
            run_case(name, 1, &x, &fam->x.lay, call_scalar, &c, &e, op->tol, 0);
        } else if (op->kind == K_CLAMP) {
            const bool f = pt_dtype_is_float(t);
            c.scalar = f ? op->sf : op->si;
            c.scalar2 = f ? op->sf2 : op->si2;
            e.val = ref_clamp(x, c.scalar, c.scalar2, t);
            run_case(name, 1, &x, &fam->x.lay, call_clamp, &c, &e, op->tol, 0);
            if (!edges_done && x->numel >= 16) { /* one family with data on both sides */
                run_clamp_edges(op, t, x, &fam->x.lay, name);
                edges_done = true;
            }
        } else { /* K_NORM */
            ref_norm_dims(x, 0, NULL, &e);
            run_case(name, 1, &x, &fam->x.lay, call_norm, &c, &e, op->tol, 0);
        }
        expect_free(&e);
        ht_free(x);
    }
}

static void binary_case(const op_def *op, pt_dtype ta, pt_dtype tb, const binary_family *fam) {
    char name[256], sa[96], sb[96], rest[200];
    ht tmpa = {.ndim = fam->a.ndim}, tmpb = {.ndim = fam->b.ndim};
    memcpy(tmpa.shape, fam->a.shape, sizeof fam->a.shape);
    memcpy(tmpb.shape, fam->b.shape, sizeof fam->b.shape);
    snprintf(rest, sizeof rest, "%s, %s", operand_str(&tmpa, fam->a.lay, sa, sizeof sa),
             operand_str(&tmpb, fam->b.lay, sb, sizeof sb));
    char dts[32];
    if (ta == tb) snprintf(dts, sizeof dts, "%s", pt_dtype_name(ta));
    else snprintf(dts, sizeof dts, "%s,%s", pt_dtype_name(ta), pt_dtype_name(tb));
    if (dom_override) snprintf(rest + strlen(rest), sizeof rest - strlen(rest), " values in [%.17g, %.17g]",
                               dom_override->lo, dom_override->hi);
    case_name(name, sizeof name, op->name, dts, rest);
    if (!case_selected(name)) return;
    lcg g;
    lcg_seed(&g, case_seed(name));
    ht *in[2] = {make_input(op, 0, ta, &fam->a, fam->big, &g), make_input(op, 1, tb, &fam->b, fam->big, &g)};
    layout lays[2] = {fam->a.lay, fam->b.lay};
    pt_dtype t = promote(ta, tb);
    call c = {.op = op};
    expect e = {0};
    e.val = ref_map2(in[0], in[1], op->r2, t, op->cmp ? PT_U8 : t);
    run_case(name, 2, in, lays, call_binary, &c, &e, op->tol, 0);
    expect_free(&e);
    ht_free(in[0]);
    ht_free(in[1]);
}

/* Integers near the top of i32 / i64 (exact in a double up to 2^53): ops
 * computed through float or 32-bit intermediates get them wrong. The sums of
 * add/sub stay in range. */
static bool wide_domain(const op_def *op, pt_dtype t, domain *d) {
    bool reduce = op->kind == K_REDUCE;
    bool sum = reduce && op->red == RED_SUM;
    bool sums = (op->kind == K_BINARY && (op->r2 == f_add || op->r2 == f_sub)) || sum;
    bool order = (op->kind == K_BINARY && (op->r2 == f_maximum || op->r2 == f_minimum || op->cmp)) ||
                 op->kind == K_WHERE || (reduce && (op->red == RED_MAX || op->red == RED_ARGMAX));
    if (t == PT_I32 && sum) *d = (domain){DOM_INT, -20000000, 20000000}; /* 91 terms fit */
    else if (t == PT_I32 && sums) *d = (domain){DOM_INT, -1000000000, 1000000000};
    else if (t == PT_I32 && order) *d = (domain){DOM_INT, 2147483000, 2147483647};
    else if (t == PT_I64 && sums) *d = (domain){DOM_INT, -4e13, 4e13};
    else if (t == PT_I64 && order) *d = (domain){DOM_INT, 9007199254740000.0, 9007199254740991.0};
    else return false;
    return true;
}

static const binary_family wide_families[] = {{{2, {7, 13}, LAY_C}, {1, {13}, LAY_C}, false},
                                              {{2, {7, 13}, LAY_T}, {2, {7, 13}, LAY_N}, false}};

static void run_binary(const op_def *op, pt_dtype t) {
    for (int f = 0; f < n_binary_families; ++f) {
        const binary_family *fam = &binary_families[f];
        if (fam->big && (!op->big || t != PT_F32)) continue;
        binary_case(op, t, t, fam);
    }
    domain wide;
    if (wide_domain(op, t, &wide)) {
        dom_override = &wide;
        for (int f = 0; f < 2; ++f) binary_case(op, t, t, &wide_families[f]);
        dom_override = NULL;
    }
}

/* Mixed dtypes promote: u8 < i32 < i64 < f32 < f64. */
static void run_promotion(const op_def *op) {
    static const pt_dtype pairs[][2] = {{PT_F32, PT_F64}, {PT_I32, PT_F32}, {PT_U8, PT_I32},
                                        {PT_I64, PT_F64}, {PT_I32, PT_I64}, {PT_U8, PT_F32},
                                        {PT_F64, PT_I64}};
    static const binary_family fams[] = {{{2, {7, 13}, LAY_C}, {1, {13}, LAY_C}, false},
                                         {{2, {7, 1}, LAY_C}, {2, {1, 13}, LAY_T}, false}};
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; ++p) {
        pt_dtype t = promote(pairs[p][0], pairs[p][1]);
        if (!(op->dtypes & PT_DTYPE_BIT(t))) continue;
        for (size_t f = 0; f < sizeof fams / sizeof fams[0]; ++f) binary_case(op, pairs[p][0], pairs[p][1], &fams[f]);
    }
}

static void where_case(const op_def *op, pt_dtype ta, pt_dtype tb, const where_family *fam) {
    char name[256], s1[96], s2[96], s3[96], rest[300], dts[32];
    ht tc = {.ndim = fam->c.ndim}, ta_ = {.ndim = fam->a.ndim}, tb_ = {.ndim = fam->b.ndim};
    memcpy(tc.shape, fam->c.shape, sizeof fam->c.shape);
    memcpy(ta_.shape, fam->a.shape, sizeof fam->a.shape);
    memcpy(tb_.shape, fam->b.shape, sizeof fam->b.shape);
    snprintf(rest, sizeof rest, "%s ? %s : %s", operand_str(&tc, fam->c.lay, s1, sizeof s1),
             operand_str(&ta_, fam->a.lay, s2, sizeof s2), operand_str(&tb_, fam->b.lay, s3, sizeof s3));
    if (ta == tb) snprintf(dts, sizeof dts, "%s", pt_dtype_name(ta));
    else snprintf(dts, sizeof dts, "%s,%s", pt_dtype_name(ta), pt_dtype_name(tb));
    if (dom_override) snprintf(rest + strlen(rest), sizeof rest - strlen(rest), " values in [%.17g, %.17g]",
                               dom_override->lo, dom_override->hi);
    case_name(name, sizeof name, op->name, dts, rest);
    if (!case_selected(name)) return;
    lcg g;
    lcg_seed(&g, case_seed(name));
    ht *in[3];
    in[0] = ht_new(PT_U8, fam->c.ndim, fam->c.shape);
    ht_fill(in[0], (domain)IN(0, 2), &g);
    ht_for_layout(in[0], fam->c.lay);
    in[1] = make_input(op, 0, ta, &fam->a, fam->big, &g);
    in[2] = make_input(op, 1, tb, &fam->b, fam->big, &g);
    layout lays[3] = {fam->c.lay, fam->a.lay, fam->b.lay};
    pt_dtype t = promote(ta, tb);
    expect e = {0};
    e.val = ref_where(in[0], in[1], in[2], t);
    run_case(name, 3, in, lays, call_where, NULL, &e, op->tol, 0);
    expect_free(&e);
    for (int i = 0; i < 3; ++i) ht_free(in[i]);
}

static void run_where(const op_def *op, pt_dtype t) {
    for (int f = 0; f < n_where_families; ++f) {
        const where_family *fam = &where_families[f];
        if (fam->big && (!op->big || t != PT_F32)) continue;
        where_case(op, t, t, fam);
    }
    domain wide;
    if (wide_domain(op, t, &wide)) {
        dom_override = &wide;
        where_case(op, t, t, &where_families[3]);
        dom_override = NULL;
    }
    if (t == PT_F32) {
        where_case(op, PT_I32, PT_F32, &where_families[3]);
        where_case(op, PT_U8, PT_F64, &where_families[3]);
    }
}

static pt_dtype reduce_out_dtype(red_kind k, pt_dtype t) {
    if (k == RED_ARGMAX) return PT_I64;
    if (k == RED_SUM && t == PT_U8) return PT_I64; /* core: u8 sums count, like torch */
    return t;
}

static void reduce_case(const op_def *op, pt_dtype t, const reduce_family *fam) {
    ht tmp = {.ndim = fam->x.ndim};
    memcpy(tmp.shape, fam->x.shape, sizeof fam->x.shape);
    int64_t r = 1;
    if (fam->dim == PT_ALL || tmp.ndim == 0) {
        for (int i = 0; i < tmp.ndim; ++i) r *= tmp.shape[i];
    } else {
        r = tmp.shape[fam->dim < 0 ? fam->dim + tmp.ndim : fam->dim];
    }
    /* max/argmax of nothing is an error (checked by the error cases) */
    if (r == 0 && (op->red == RED_MAX || op->red == RED_ARGMAX) && op->kind == K_REDUCE) return;
    char name[256], s[96], rest[200], dims[32];
    if (fam->dim == PT_ALL) snprintf(dims, sizeof dims, "all");
    else snprintf(dims, sizeof dims, "%d", fam->dim);
    snprintf(rest, sizeof rest, "%s dim=%s%s", operand_str(&tmp, fam->x.lay, s, sizeof s), dims,
             fam->keepdim ? " keepdim" : "");
    if (dom_override)
        snprintf(rest + strlen(rest), sizeof rest - strlen(rest), " values in [%.17g, %.17g]", dom_override->lo,
                 dom_override->hi);
    case_name(name, sizeof name, op->name, pt_dtype_name(t), rest);
    if (!case_selected(name)) return;
    lcg g;
    lcg_seed(&g, case_seed(name));
    ht *x = make_input(op, 0, t, &fam->x, fam->big, &g);
    call c = {.op = op, .dim = fam->dim, .keepdim = fam->keepdim};
    expect e = {0};
    if (op->kind == K_SOFTMAX) {
        ref_softmax(x, fam->dim, op->log, &e);
        run_case(name, 1, &x, &fam->x.lay, call_softmax, &c, &e, op->tol, 0);
    } else {
        ref_reduce(x, op->red, fam->dim, fam->keepdim, reduce_out_dtype(op->red, t), &e);
        run_case(name, 1, &x, &fam->x.lay, call_reduce, &c, &e, op->tol, 0);
    }
    expect_free(&e);
    ht_free(x);
}

static void run_reduce(const op_def *op, pt_dtype t) {
    const reduce_family *fams = op->kind == K_SOFTMAX ? softmax_families : reduce_families;
    int nf = op->kind == K_SOFTMAX ? n_softmax_families : n_reduce_families;
    for (int f = 0; f < nf; ++f) {
        if (fams[f].big && (!op->big || t != PT_F32)) continue;
        reduce_case(op, t, &fams[f]);
    }
    static const reduce_family wide_fams[] = {{{2, {7, 13}, LAY_C}, 1, false, false},
                                              {{2, {7, 13}, LAY_T}, PT_ALL, false, false}};
    /* real-valued data over a million elements: summation order matters, the
     * tolerance grows with sqrt(K) */
    static const reduce_family big_real = {{1, {BIG_N}, LAY_C}, PT_ALL, false, true};
    static const domain real = {DOM_UNIFORM, 0, 1};
    if (op->kind == K_REDUCE && (op->red == RED_SUM || op->red == RED_MEAN) && t == PT_F32) {
        dom_override = &real;
        reduce_case(op, t, &big_real);
        dom_override = NULL;
    }
    domain wide;
    if (op->kind == K_REDUCE && wide_domain(op, t, &wide)) {
        dom_override = &wide;
        for (int f = 0; f < 2; ++f) reduce_case(op, t, &wide_fams[f]);
        dom_override = NULL;
    }
}

/* Softmax of large inputs: exp overflows f32 unless the max is subtracted. */
static void run_softmax_stability(const op_def *op, pt_dtype t) {
    char name[256];
    snprintf(name, sizeof name, "%s %s [7, 13] dim=1 values in [80, 100]", op->name, pt_dtype_name(t));
    if (!case_selected(name)) return;
    lcg g;
    lcg_seed(&g, case_seed(name));
    int64_t shape[2] = {7, 13};
    ht *x = ht_new(t, 2, shape);
    ht_fill(x, (domain)U(80, 100), &g);
    call c = {.op = op, .dim = 1};
    expect e = {0};
    ref_softmax(x, 1, op->log, &e);
    layout lay = LAY_C;
    run_case(name, 1, &x, &lay, call_softmax, &c, &e, op->tol, 0);
    expect_free(&e);
    ht_free(x);
}

/* argmax: a NaN counts as the maximum (first NaN wins), as backend.h says. */
static void run_argmax_nan(pt_dtype t) {
    char name[256];
    snprintf(name, sizeof name, "argmax %s [7, 13] dim=1 with NaNs", pt_dtype_name(t));
    if (!case_selected(name)) return;
    lcg g;
    lcg_seed(&g, case_seed(name));
    int64_t shape[2] = {7, 13};
    ht *x = ht_new(t, 2, shape);
    ht_fill(x, (domain)U(-10, 10), &g);
    x->v[3] = NAN;
    x->v[8] = NAN;
    x->v[13 * 4 + 12] = NAN;
    const op_def *op = NULL;
    for (int i = 0; i < n_ops; ++i)
        if (ops[i].kind == K_REDUCE && ops[i].red == RED_ARGMAX) op = &ops[i];
    call c = {.op = op, .dim = 1};
    expect e = {0};
    ref_reduce(x, RED_ARGMAX, 1, false, PT_I64, &e);
    layout lay = LAY_C;
    run_case(name, 1, &x, &lay, call_reduce, &c, &e, TOL_EXACT, 0);
    expect_free(&e);
    ht_free(x);
}

typedef struct norm_dims_call {
    int n;
    int dims[4];
} norm_dims_call;
static pt_tensor *call_norm_dims(pt_tensor **in, const void *p) {
    const norm_dims_call *c = p;
    return pt_norm_dims(in[0], c->n, c->dims);
}

static void run_norm_dims(pt_dtype t) {
    static const struct {
        operand_spec x;
        norm_dims_call c;
    } cases[] = {
        {{3, {5, 6, 7}, LAY_C}, {1, {1}}},   {{3, {5, 6, 7}, LAY_C}, {2, {0, 2}}},
        {{3, {5, 6, 7}, LAY_O}, {1, {-1}}},  {{2, {7, 13}, LAY_T}, {1, {0}}},
        {{2, {7, 13}, LAY_N}, {2, {0, 1}}},  {{2, {3, 0}, LAY_C}, {1, {1}}},
        {{2, {0, 4}, LAY_C}, {1, {1}}},      {{3, {5, 6, 7}, LAY_T}, {2, {2, 0}}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        ht tmp = {.ndim = cases[i].x.ndim};
        memcpy(tmp.shape, cases[i].x.shape, sizeof cases[i].x.shape);
        char name[256], s[96], dims[64] = "";
        for (int k = 0; k < cases[i].c.n; ++k)
            snprintf(dims + strlen(dims), sizeof dims - strlen(dims), k ? ",%d" : "%d", cases[i].c.dims[k]);
        snprintf(name, sizeof name, "norm_dims %s %s dims={%s}", pt_dtype_name(t),
                 operand_str(&tmp, cases[i].x.lay, s, sizeof s), dims);
        if (!case_selected(name)) continue;
        lcg g;
        lcg_seed(&g, case_seed(name));
        ht *x = ht_new(t, tmp.ndim, tmp.shape);
        ht_fill(x, (domain)U(-1, 1), &g);
        expect e = {0};
        ref_norm_dims(x, cases[i].c.n, cases[i].c.dims, &e);
        run_case(name, 1, &x, &cases[i].x.lay, call_norm_dims, &cases[i].c, &e, TOL_NORM, 0);
        expect_free(&e);
        ht_free(x);
    }
}

static void run_matmul(const op_def *op, pt_dtype t) {
    for (int f = 0; f < n_matmul_families; ++f) {
        const matmul_family *fam = &matmul_families[f];
        if (fam->big && t != PT_F32) continue;
        char name[256], sa[96], sb[96], rest[200];
        ht ta = {.ndim = fam->a.ndim}, tb = {.ndim = fam->b.ndim};
        memcpy(ta.shape, fam->a.shape, sizeof fam->a.shape);
        memcpy(tb.shape, fam->b.shape, sizeof fam->b.shape);
        snprintf(rest, sizeof rest, "%s @ %s", operand_str(&ta, fam->a.lay, sa, sizeof sa),
                 operand_str(&tb, fam->b.lay, sb, sizeof sb));
        case_name(name, sizeof name, op->name, pt_dtype_name(t), rest);
        if (!case_selected(name)) continue;
        lcg g;
        lcg_seed(&g, case_seed(name));
        ht *in[2] = {make_input(op, 0, t, &fam->a, fam->big, &g), make_input(op, 1, t, &fam->b, fam->big, &g)};
        layout lays[2] = {fam->a.lay, fam->b.lay};
        expect e = {0};
        ref_matmul(in[0], in[1], &e);
        run_case(name, 2, in, lays, call_matmul, NULL, &e, op->tol, 0);
        expect_free(&e);
        ht_free(in[0]);
        ht_free(in[1]);
    }
    /* integer-valued operands: every partial sum is exact, so the product must be */
    char name[256];
    snprintf(name, sizeof name, "matmul %s [33, 70] @ [70, 17] integer-valued (exact)", pt_dtype_name(t));
    if (case_selected(name)) {
        lcg g;
        lcg_seed(&g, case_seed(name));
        int64_t sa[2] = {33, 70}, sb[2] = {70, 17};
        ht *in[2] = {ht_new(t, 2, sa), ht_new(t, 2, sb)};
        ht_fill(in[0], (domain)IN(-9, 9), &g);
        ht_fill(in[1], (domain)IN(-9, 9), &g);
        expect e = {0};
        ref_matmul(in[0], in[1], &e);
        run_case(name, 2, in, NULL, call_matmul, NULL, &e, TOL_MATMUL, 0);
        expect_free(&e);
        ht_free(in[0]);
        ht_free(in[1]);
    }
}

void run_op_table(void) {
    for (int i = 0; i < n_ops; ++i) {
        const op_def *op = &ops[i];
        FOR_EACH_DTYPE_IN(t, op->dtypes) {
            switch (op->kind) {
            case K_UNARY:
            case K_SCALAR:
            case K_CLAMP:
            case K_NORM: run_unary(op, t); break;
            case K_BINARY: run_binary(op, t); break;
            case K_WHERE: run_where(op, t); break;
            case K_REDUCE:
            case K_SOFTMAX: run_reduce(op, t); break;
            case K_MATMUL: run_matmul(op, t); break;
            }
            if (op->kind == K_SOFTMAX) run_softmax_stability(op, t);
            if (op->kind == K_NORM) run_norm_dims(t);
            if (op->kind == K_REDUCE && op->red == RED_ARGMAX && pt_dtype_is_float(t)) run_argmax_nan(t);
        }
        if (op->kind == K_BINARY) run_promotion(op);
    }
}
