/* Element-wise ops: binary arithmetic with NumPy broadcasting and dtype
 * promotion, scalar ops, unary math, comparisons and where.
 *
 * This is the hot path for small tensors (pt_add of 10 floats is benchmarked
 * against NumPy), so the common case — same dtype, same shape, one device —
 * costs a few compares, the result allocation and one execute: no extra heap
 * work, no formatting unless an error happens. */
#include <math.h>

#include "ops/ops_internal.h"

/* Inline: a libc memcmp call costs more than these few compares. */
static bool shape_equals(const pt_tensor *x, int ndim, const int64_t *shape) {
    if (x->ndim != ndim) return false;
    for (int i = 0; i < ndim; ++i)
        if (x->shape[i] != shape[i]) return false;
    return true;
}

/* The dtypes column of the op table decides; on failure sets the error. */
static bool dtype_allowed(const char *fn, pt_op_kind kind, pt_dtype t) {
    return pt__check_op_dtype(fn, kind, t) == PT_OK;
}

/* x as an input of an op whose out has (ndim, shape); cast (a contiguous
 * copy in dtype t, returned in *cast for the caller to release) when x's
 * dtype differs. */
static bool input_operand(const char *fn, pt_tensor *x, pt_dtype t, int ndim, const int64_t *shape,
                          pt_operand *o, pt_tensor **cast) {
    if (x->dtype != t) {
        *cast = pt__copy_new(fn, x, t, x->ndim, x->shape);
        if (!*cast) return false;
        x = *cast;
    }
    if (shape_equals(x, ndim, shape))
        pt__operand(x, o);
    else
        pt__operand_broadcast(x, ndim, shape, o);
    return true;
}

/* Runs op (inputs filled) into out; releases out on failure. */
static pt_tensor *run(const char *fn, pt_op *op, pt_tensor *out) {
    pt__operand(out, &op->out);
    if (pt__execute(fn, pt__dev(out), op) != PT_OK) {
        pt_release(out);
        return NULL;
    }
    return out;
}

/* Fills op's n inputs from xs (each cast to dts[i] and broadcast to out's
 * shape), runs op into out and releases the casts; releases out on failure. */
static pt_tensor *run_inputs(const char *fn, pt_op *op, pt_tensor *out, int n,
                             pt_tensor *const *xs, const pt_dtype *dts) {
    pt_tensor *casts[PT_OP_MAX_INPUTS] = {NULL};
    bool ok = true;
    for (int i = 0; ok && i < n; ++i)
        ok = input_operand(fn, xs[i], dts[i], out->ndim, out->shape, &op->in[i], &casts[i]);
    if (ok) {
        out = run(fn, op, out);
    } else {
        pt_release(out);
        out = NULL;
    }
    for (int i = 0; i < n; ++i) pt_release(casts[i]);
    return out;
}

/* ---- Binary ---- */

pt_tensor *pt__binary_raw(const char *fn, pt_op_kind kind, pt_tensor *a, pt_tensor *b) {
    pt_device *d = pt__dev(a);
    if (d != pt__dev(b)) {
        pt_tensor *xs[2] = {a, b};
        pt__check_same_device(fn, 2, xs);
        return NULL;
    }
    const pt_dtype t = a->dtype == b->dtype ? a->dtype : pt__promote(a->dtype, b->dtype);
    if (!dtype_allowed(fn, kind, t)) return NULL;

    int nd;
    int64_t shape_buf[PT_MAX_DIMS];
    const int64_t *shape;
    if (shape_equals(b, a->ndim, a->shape)) {
        nd = a->ndim;
        shape = a->shape;
    } else {
        pt_tensor *xs[2] = {a, b};
        if (pt__broadcast_tensors(fn, 2, xs, &nd, shape_buf)) return NULL;
        shape = shape_buf;
    }
    pt_tensor *out = pt__tensor_new(fn, d, pt_op_result_dtype(kind, t), nd, shape);
    if (!out || pt__tensor_numel(out) == 0) return out;

    pt_op op;
    pt__op_init(&op, kind, t, 2);
    pt_tensor *const xs[2] = {a, b};
    const pt_dtype dts[2] = {t, t};
    return run_inputs(fn, &op, out, 2, xs, dts);
}

static pt_tensor *binary(const char *fn, pt_op_kind kind, int grad_op, pt_tensor *a, pt_tensor *b) {
    if (!a) return pt__null_input(fn, "a");
    if (!b) return pt__null_input(fn, "b");
    pt_tensor *out = pt__binary_raw(fn, kind, a, b);
    if (out && grad_op >= 0) {
        pt_tensor *in[2] = {a, b};
        if (pt__grad_wanted(2, in))
            pt__grad_record(out, (pt__grad_op)grad_op, 2, in, &pt__no_grad_args);
    }
    return pt__ret(out);
}

pt_tensor *pt_add(pt_tensor *a, pt_tensor *b) { return binary("pt_add", PT_OP_ADD, PT__G_ADD, a, b); }
pt_tensor *pt_sub(pt_tensor *a, pt_tensor *b) { return binary("pt_sub", PT_OP_SUB, PT__G_SUB, a, b); }
pt_tensor *pt_mul(pt_tensor *a, pt_tensor *b) { return binary("pt_mul", PT_OP_MUL, PT__G_MUL, a, b); }
pt_tensor *pt_div(pt_tensor *a, pt_tensor *b) { return binary("pt_div", PT_OP_DIV, PT__G_DIV, a, b); }
pt_tensor *pt_pow(pt_tensor *a, pt_tensor *b) { return binary("pt_pow", PT_OP_POW, PT__G_POW, a, b); }
pt_tensor *pt_maximum(pt_tensor *a, pt_tensor *b) {
    return binary("pt_maximum", PT_OP_MAXIMUM, PT__G_MAXIMUM, a, b);
}
pt_tensor *pt_minimum(pt_tensor *a, pt_tensor *b) {
    return binary("pt_minimum", PT_OP_MINIMUM, PT__G_MINIMUM, a, b);
}
/* Comparisons have no gradient. */
pt_tensor *pt_eq(pt_tensor *a, pt_tensor *b) { return binary("pt_eq", PT_OP_EQ, -1, a, b); }
pt_tensor *pt_lt(pt_tensor *a, pt_tensor *b) { return binary("pt_lt", PT_OP_LT, -1, a, b); }
pt_tensor *pt_gt(pt_tensor *a, pt_tensor *b) { return binary("pt_gt", PT_OP_GT, -1, a, b); }
pt_tensor *pt_le(pt_tensor *a, pt_tensor *b) { return binary("pt_le", PT_OP_LE, -1, a, b); }
pt_tensor *pt_ge(pt_tensor *a, pt_tensor *b) { return binary("pt_ge", PT_OP_GE, -1, a, b); }
pt_tensor *pt_ne(pt_tensor *a, pt_tensor *b) { return binary("pt_ne", PT_OP_NE, -1, a, b); }

/* ---- Unary and scalar ---- */

/* out = kind(x) (with scalar for *_SCALAR), same dtype and shape as x. */
static pt_tensor *unary_scalars_raw(const char *fn, pt_op_kind kind, pt_tensor *x, double scalar,
                                    double scalar2) {
    if (!dtype_allowed(fn, kind, x->dtype)) return NULL;
    pt_tensor *out = pt__tensor_new(fn, pt__dev(x), x->dtype, x->ndim, x->shape);
    if (!out || pt__tensor_numel(out) == 0) return out;
    pt_op op;
    pt__op_init(&op, kind, x->dtype, 1);
    op.scalar = scalar;
    op.scalar2 = scalar2;
    pt__operand(x, &op.in[0]);
    return run(fn, &op, out);
}

static pt_tensor *unary_scalar_raw(const char *fn, pt_op_kind kind, pt_tensor *x, double scalar) {
    return unary_scalars_raw(fn, kind, x, scalar, 0.0);
}

pt_tensor *pt__unary_raw(const char *fn, pt_op_kind kind, pt_tensor *x) {
    return unary_scalar_raw(fn, kind, x, 0.0);
}

static pt_tensor *unary(const char *fn, pt_op_kind kind, pt__grad_op g, pt_tensor *x) {
    if (!x) return pt__null_input(fn, "x");
    return pt__ret(pt__record(unary_scalar_raw(fn, kind, x, 0.0), g, 1, &x, &pt__no_grad_args));
}

pt_tensor *pt_neg(pt_tensor *x) { return unary("pt_neg", PT_OP_NEG, PT__G_NEG, x); }
pt_tensor *pt_abs(pt_tensor *x) { return unary("pt_abs", PT_OP_ABS, PT__G_ABS, x); }
pt_tensor *pt_exp(pt_tensor *x) { return unary("pt_exp", PT_OP_EXP, PT__G_EXP, x); }
pt_tensor *pt_log(pt_tensor *x) { return unary("pt_log", PT_OP_LOG, PT__G_LOG, x); }
pt_tensor *pt_sqrt(pt_tensor *x) { return unary("pt_sqrt", PT_OP_SQRT, PT__G_SQRT, x); }
pt_tensor *pt_rsqrt(pt_tensor *x) { return unary("pt_rsqrt", PT_OP_RSQRT, PT__G_RSQRT, x); }
pt_tensor *pt_relu(pt_tensor *x) { return unary("pt_relu", PT_OP_RELU, PT__G_RELU, x); }
pt_tensor *pt_sigmoid(pt_tensor *x) { return unary("pt_sigmoid", PT_OP_SIGMOID, PT__G_SIGMOID, x); }
pt_tensor *pt_tanh(pt_tensor *x) { return unary("pt_tanh", PT_OP_TANH, PT__G_TANH, x); }
pt_tensor *pt_sin(pt_tensor *x) { return unary("pt_sin", PT_OP_SIN, PT__G_SIN, x); }
pt_tensor *pt_cos(pt_tensor *x) { return unary("pt_cos", PT_OP_COS, PT__G_COS, x); }
pt_tensor *pt_gelu(pt_tensor *x) { return unary("pt_gelu", PT_OP_GELU, PT__G_GELU, x); }
/* Not recorded: the op table says GELU_GRAD has no gradient of its own. */
pt_tensor *pt_gelu_grad(pt_tensor *x) {
    if (!x) return pt__null_input("pt_gelu_grad", "x");
    if (!dtype_allowed("pt_gelu_grad", PT_OP_GELU_GRAD, x->dtype)) return NULL;
    return pt__ret(pt__unary_raw("pt_gelu_grad", PT_OP_GELU_GRAD, x));
}

/* Integer tensors keep their dtype: the scalar is converted to it (truncated),
 * and one that does not fit is an error rather than a silent wrap. */
static pt_tensor *scalar_op(const char *fn, pt_op_kind kind, pt__grad_op g, pt_tensor *x, double s) {
    if (!x) return pt__null_input(fn, "x");
    double v;
    if (!dtype_allowed(fn, kind, x->dtype) || pt__scalar_for_dtype(fn, "scalar", s, x->dtype, &v))
        return NULL;
    pt__grad_args args = pt__no_grad_args;
    args.scalar = v;
    return pt__ret(pt__record(unary_scalar_raw(fn, kind, x, v), g, 1, &x, &args));
}

pt_tensor *pt_add_scalar(pt_tensor *x, double s) {
    return scalar_op("pt_add_scalar", PT_OP_ADD_SCALAR, PT__G_ADD_SCALAR, x, s);
}
pt_tensor *pt_mul_scalar(pt_tensor *x, double s) {
    return scalar_op("pt_mul_scalar", PT_OP_MUL_SCALAR, PT__G_MUL_SCALAR, x, s);
}

/* ---- clamp ---- */

/* The bounds as the backend compares them: integer dtypes take integral
 * bounds inside [lo, hi] (ceil, floor) limited to the dtype's ends (2^31,
 * 2^63: backends saturate them, numeric_rules.h), and lo > hi becomes hi. */
static pt_status clamp_bounds(const char *fn, pt_dtype t, double *lo, double *hi) {
    if (isnan(*lo) || isnan(*hi))
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "bounds lo %g, hi %g: NaN is not a bound; pass -INFINITY or INFINITY "
                         "for a side without one",
                         *lo, *hi);
    if (!pt_dtype_is_float(t)) {
        const double end = t == PT_I32 ? 2147483648.0 : 9223372036854775808.0;
        *lo = fmin(fmax(ceil(*lo), -end), end);
        *hi = fmin(fmax(floor(*hi), -end), end);
    }
    if (*lo > *hi) *lo = *hi;
    return PT_OK;
}

pt_tensor *pt_clamp(pt_tensor *x, double lo, double hi) {
    static const char fn[] = "pt_clamp";
    if (!x) return pt__null_input("pt_clamp", "x");
    if (!dtype_allowed(fn, PT_OP_CLAMP, x->dtype) || clamp_bounds(fn, x->dtype, &lo, &hi))
        return NULL;
    pt__grad_args args = pt__no_grad_args;
    args.scalar = lo;
    args.scalar2 = hi;
    pt_tensor *out = unary_scalars_raw(fn, PT_OP_CLAMP, x, lo, hi);
    return pt__ret(pt__record(out, PT__G_CLAMP, 1, &x, &args));
}

/* ---- where ---- */

pt_tensor *pt_where(pt_tensor *cond, pt_tensor *a, pt_tensor *b) {
    static const char fn[] = "pt_where";
    if (!cond) return pt__null_input("pt_where", "cond");
    if (!a) return pt__null_input("pt_where", "a");
    if (!b) return pt__null_input("pt_where", "b");
    pt_tensor *in[3] = {cond, a, b};
    if (pt__check_same_device(fn, 3, in)) return NULL;
    if (cond->dtype != PT_U8) {
        pt__error(PT_ERR_DTYPE, fn,
                  "cond has dtype %s; it must be u8 (make it with pt_eq/pt_lt/pt_gt, or "
                  "pt_cast(cond, PT_U8))",
                  pt_dtype_name(cond->dtype));
        return NULL;
    }
    const pt_dtype t = pt__promote(a->dtype, b->dtype);
    int nd;
    int64_t shape[PT_MAX_DIMS];
    if (pt__broadcast_tensors(fn, 3, in, &nd, shape)) return NULL;
    pt_tensor *out = pt__tensor_new(fn, pt__dev(a), t, nd, shape);
    if (!out) return NULL;
    if (pt__tensor_numel(out) > 0) {
        pt_op op;
        pt__op_init(&op, PT_OP_WHERE, t, 3);
        const pt_dtype dts[3] = {PT_U8, t, t};
        out = run_inputs(fn, &op, out, 3, in, dts);
    }
    return pt__ret(pt__record(out, PT__G_WHERE, 3, in, &pt__no_grad_args));
}

pt_status pt__check_op_dtype(const char *fn, pt_op_kind kind, pt_dtype t) {
    if (pt_op_takes_dtype(kind, t)) return PT_OK;
    const pt_op_info *info = pt_op_info_of(kind);
    const bool float_only = info && (info->dtypes & ~(unsigned)PT_DTYPES_FLOAT) == 0;
    return pt__dtype_unsupported(fn, t, float_only ? PT_F32 : PT_I32);
}
