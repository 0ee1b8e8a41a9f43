/* Gradient check: every differentiable op's backward against central finite
 * differences.
 *
 * For each case f and inputs x, L(x) = sum(f(x) * W) with a fixed random W,
 * so every output element matters with a different weight. The analytic
 * gradient comes from pt_backward; the numeric one from
 * (L(x + h e_j) - L(x - h e_j)) / 2h for every element j, with the forward
 * evaluated on the device in float64 and the differences taken on the host
 * in float64. Runs on pt_default_device(), so CTest runs it once per backend
 * (PORTABLE_BACKEND=cpu|opencl|cuda). On a device without fp64 it runs in
 * f32 with a larger step and looser tolerances, and says so
 * (GRADCHECK_DTYPE=f32 forces that on any device). */
#include <string.h>

#include "nn_test.h"

#define MAX_IN 4
#define MAX_ELEMS 96

typedef enum domain {
    ANY,      /* U(-2, 2) */
    POSITIVE, /* U(0.5, 2) */
    AWAY0,    /* |x| in [0.3, 2], random sign: away from kinks at 0 */
    SPREAD,   /* values on a grid with gaps >= 0.2 across all inputs of the case:
               * no ties or near-ties for max/maximum/minimum */
} domain;

typedef struct gcase {
    const char *name;
    int n_in;
    int ndim[MAX_IN];
    int64_t shape[MAX_IN][PT_MAX_DIMS];
    domain dom[MAX_IN];
    pt_tensor *(*f)(pt_tensor **x);
    double tol_scale; /* 0: 1 */
    double step;      /* 0: the dtype's default step */
} gcase;

static pt_dtype dt;        /* dtype under test */
static double h, abs_tol, rel_tol;

/* ---- The functions under test ---- */

static pt_device *dev_of(pt_tensor **x) { return pt_tensor_device(x[0]); }

static pt_tensor *f_add(pt_tensor **x) { return pt_add(x[0], x[1]); }
static pt_tensor *f_sub(pt_tensor **x) { return pt_sub(x[0], x[1]); }
static pt_tensor *f_mul(pt_tensor **x) { return pt_mul(x[0], x[1]); }
static pt_tensor *f_div(pt_tensor **x) { return pt_div(x[0], x[1]); }
static pt_tensor *f_pow(pt_tensor **x) { return pt_pow(x[0], x[1]); }
static pt_tensor *f_maximum(pt_tensor **x) { return pt_maximum(x[0], x[1]); }
static pt_tensor *f_minimum(pt_tensor **x) { return pt_minimum(x[0], x[1]); }
static pt_tensor *f_add_scalar(pt_tensor **x) { return pt_add_scalar(x[0], 1.5); }
static pt_tensor *f_mul_scalar(pt_tensor **x) { return pt_mul_scalar(x[0], -2.5); }
static pt_tensor *f_neg(pt_tensor **x) { return pt_neg(x[0]); }
static pt_tensor *f_abs(pt_tensor **x) { return pt_abs(x[0]); }
static pt_tensor *f_exp(pt_tensor **x) { return pt_exp(x[0]); }
static pt_tensor *f_log(pt_tensor **x) { return pt_log(x[0]); }
static pt_tensor *f_sqrt(pt_tensor **x) { return pt_sqrt(x[0]); }
static pt_tensor *f_rsqrt(pt_tensor **x) { return pt_rsqrt(x[0]); }
static pt_tensor *f_relu(pt_tensor **x) { return pt_relu(x[0]); }
static pt_tensor *f_sigmoid(pt_tensor **x) { return pt_sigmoid(x[0]); }
static pt_tensor *f_tanh(pt_tensor **x) { return pt_tanh(x[0]); }
static pt_tensor *f_sin(pt_tensor **x) { return pt_sin(x[0]); }
static pt_tensor *f_cos(pt_tensor **x) { return pt_cos(x[0]); }
/* Bounds in gaps of the SPREAD grid: elements below, inside and above. */
static pt_tensor *f_clamp(pt_tensor **x) { return pt_clamp(x[0], -0.9, 0.6); }

static pt_tensor *f_where(pt_tensor **x) {
    static const uint8_t c[6] = {1, 0, 0, 1, 1, 0};
    int64_t shape[2] = {2, 3};
    pt_tensor *cond = pt_from_data(dev_of(x), PT_U8, 2, shape, c);
    pt_tensor *y = pt_where(cond, x[0], x[1]);
    pt_release(cond);
    return y;
}

static pt_tensor *f_sum_all(pt_tensor **x) { return pt_sum(x[0], PT_ALL, false); }
static pt_tensor *f_sum_0(pt_tensor **x) { return pt_sum(x[0], 0, false); }
static pt_tensor *f_sum_last_keep(pt_tensor **x) { return pt_sum(x[0], -1, true); }
static pt_tensor *f_mean_all(pt_tensor **x) { return pt_mean(x[0], PT_ALL, false); }
static pt_tensor *f_mean_1(pt_tensor **x) { return pt_mean(x[0], 1, false); }
static pt_tensor *f_max_all(pt_tensor **x) { return pt_max(x[0], PT_ALL, false); }
static pt_tensor *f_max_1(pt_tensor **x) { return pt_max(x[0], 1, false); }
static pt_tensor *f_max_0_keep(pt_tensor **x) { return pt_max(x[0], 0, true); }
static pt_tensor *f_norm(pt_tensor **x) { return pt_norm(x[0]); }
static pt_tensor *f_norm_1(pt_tensor **x) {
    int dims[1] = {1};
    return pt_norm_dims(x[0], 1, dims);
}
static pt_tensor *f_norm_02(pt_tensor **x) {
    int dims[2] = {0, -1};
    return pt_norm_dims(x[0], 2, dims);
}
static pt_tensor *f_softmax_1(pt_tensor **x) { return pt_softmax(x[0], 1); }
static pt_tensor *f_softmax_0(pt_tensor **x) { return pt_softmax(x[0], 0); }
static pt_tensor *f_log_softmax_1(pt_tensor **x) { return pt_log_softmax(x[0], 1); }
static pt_tensor *f_log_softmax_m1(pt_tensor **x) { return pt_log_softmax(x[0], -1); }
static pt_tensor *f_matmul(pt_tensor **x) { return pt_matmul(x[0], x[1]); }

static pt_tensor *f_reshape(pt_tensor **x) {
    int64_t s[3] = {3, 1, 4};
    return pt_reshape(x[0], 3, s);
}
static pt_tensor *f_transpose(pt_tensor **x) { return pt_transpose(x[0], 0, 1); }
static pt_tensor *f_permute(pt_tensor **x) {
    int perm[3] = {2, 0, 1};
    return pt_permute(x[0], perm);
}
static pt_tensor *f_narrow(pt_tensor **x) { return pt_narrow(x[0], 1, 1, 2); }
static pt_tensor *f_expand(pt_tensor **x) {
    int64_t s[3] = {2, 3, 4};
    return pt_expand(x[0], 3, s);
}
static pt_tensor *f_contiguous(pt_tensor **x) {
    pt_tensor *t = pt_transpose(x[0], 0, 1);
    pt_tensor *y = pt_contiguous(t);
    pt_release(t);
    return y;
}
/* To the other float dtype and back: derivative 1 through a rounding. */
static pt_tensor *f_cast(pt_tensor **x) {
    pt_tensor *t = pt_cast(x[0], dt == PT_F64 ? PT_F32 : PT_F64);
    pt_tensor *y = pt_cast(t, dt);
    pt_release(t);
    return y;
}
static pt_tensor *f_cat_0(pt_tensor **x) { return pt_cat(3, x, 0); }
static pt_tensor *f_cat_1(pt_tensor **x) { return pt_cat(2, x, 1); }
static pt_tensor *f_stack_1(pt_tensor **x) { return pt_stack(2, x, 1); }

static pt_tensor *gather_with(pt_tensor **x, int dim, int ndim, const int64_t *shape, const int64_t *idx) {
    pt_tensor *index = pt_from_data(dev_of(x), PT_I64, ndim, shape, idx);
    pt_tensor *y = pt_gather(x[0], dim, index);
    pt_release(index);
    return y;
}
static pt_tensor *f_gather_1(pt_tensor **x) {
    static const int64_t idx[6] = {3, 0, 3, 1, 1, 2}; /* repeats: gradients add up */
    int64_t shape[2] = {2, 3};
    return gather_with(x, 1, 2, shape, idx);
}
static pt_tensor *f_gather_0(pt_tensor **x) {
    static const int64_t idx[4] = {2, 0, 1, 2};
    int64_t shape[2] = {1, 4};
    return gather_with(x, 0, 2, shape, idx);
}

/* ---- Composites: losses, modules, shared subexpressions ---- */

static pt_tensor *f_cross_entropy(pt_tensor **x) {
    static const int64_t labels[4] = {2, 0, 4, 2};
    int64_t n = 4;
    pt_tensor *l = pt_from_data(dev_of(x), PT_I64, 1, &n, labels);
    pt_tensor *y = pt_cross_entropy(x[0], l);
    pt_release(l);
    return y;
}
static pt_tensor *f_cross_entropy_i32(pt_tensor **x) {
    static const int32_t labels[3] = {1, 0, 1};
    int64_t n = 3;
    pt_tensor *l = pt_from_data(dev_of(x), PT_I32, 1, &n, labels);
    pt_tensor *y = pt_cross_entropy(x[0], l);
    pt_release(l);
    return y;
}
static pt_tensor *f_mse(pt_tensor **x) { return pt_mse_loss(x[0], x[1]); }
/* A linear layer written out: x W^T + b, with W and b inputs. */
static pt_tensor *f_linear(pt_tensor **x) {
    pt_tensor *wt = pt_transpose(x[1], 0, 1);
    pt_tensor *xw = pt_matmul(x[0], wt);
    pt_tensor *y = pt_add(xw, x[2]);
    pt_release(wt);
    pt_release(xw);
    return y;
}
/* x used three times: x*x + exp(x) - x. */
static pt_tensor *f_shared(pt_tensor **x) {
    pt_tensor *sq = pt_mul(x[0], x[0]);
    pt_tensor *e = pt_exp(x[0]);
    pt_tensor *s = pt_add(sq, e);
    pt_tensor *y = pt_sub(s, x[0]);
    pt_release(sq);
    pt_release(e);
    pt_release(s);
    return y;
}
/* A diamond: t = tanh(a b); y = sum(t, 1) * softmax(t, 1)[:, 0:1] + sigmoid(t). */
static pt_tensor *f_diamond(pt_tensor **x) {
    pt_tensor *ab = pt_mul(x[0], x[1]);
    pt_tensor *t = pt_tanh(ab);
    pt_tensor *s = pt_sum(t, 1, true);
    pt_tensor *sm = pt_softmax(t, 1);
    pt_tensor *col = pt_narrow(sm, 1, 0, 1);
    pt_tensor *p = pt_mul(s, col);
    pt_tensor *sg = pt_sigmoid(t);
    pt_tensor *y = pt_add(p, sg);
    pt_tensor *all[] = {ab, t, s, sm, col, p, sg};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) pt_release(all[i]);
    return y;
}

/* ---- Convolutional nets ---- */
static pt_tensor *f_conv(pt_tensor **x) { return pt_f_conv2d(x[0], x[1], x[2], NULL); }
static pt_tensor *f_conv_stride_pad(pt_tensor **x) {
    return pt_f_conv2d(x[0], x[1], x[2], &(pt_conv2d_opts){.stride = {2, 1}, .padding = {1, 2}});
}
static pt_tensor *f_conv_dilated(pt_tensor **x) {
    return pt_f_conv2d(x[0], x[1], NULL, &(pt_conv2d_opts){.padding = {1, 1}, .dilation = {2, 2}});
}
static pt_tensor *f_conv_grouped(pt_tensor **x) {
    return pt_f_conv2d(x[0], x[1], x[2], &(pt_conv2d_opts){.stride = {1, 2}, .groups = 2});
}
static pt_tensor *f_im2col(pt_tensor **x) {
    const pt_window2d w = {{2, 3}, {2, 1}, {1, 1}, {1, 2}};
    return pt_im2col(x[0], &w, 0.0);
}
static pt_tensor *f_col2im(pt_tensor **x) { /* col [1, 2, 2, 2, 3, 3] of a 4x4 image */
    const pt_window2d w = {{2, 2}, {1, 1}, {0, 0}, {1, 1}};
    pt_tensor *col = pt_reshape(x[0], 6, (int64_t[]){1, 2, 2, 2, 3, 3});
    pt_tensor *y = pt_col2im(col, &w, 4, 4);
    pt_release(col);
    return y;
}
/* Overlapping windows (stride < kernel) with padding. */
static pt_tensor *f_max_pool(pt_tensor **x) {
    return pt_f_max_pool2d(x[0], &(pt_pool2d_opts){.kernel = {3, 3}, .stride = {2, 1}, .padding = {1, 1}});
}
/* The max pool kind with dilation, overlapping in both directions, padded. */
static pt_tensor *f_max_pool_window(pt_tensor **x) {
    const pt_window2d w = {{3, 2}, {1, 1}, {1, 1}, {2, 1}};
    return pt_max_pool2d_window(x[0], &w);
}
/* The same, on a transposed view of the input (strided MAX_POOL2D reads). */
static pt_tensor *f_max_pool_window_t(pt_tensor **x) {
    const pt_window2d w = {{2, 2}, {1, 2}, {0, 1}, {1, 1}};
    pt_tensor *t = pt_transpose(x[0], 2, 3);
    pt_tensor *y = pt_max_pool2d_window(t, &w);
    pt_release(t);
    return y;
}
static pt_tensor *f_avg_pool(pt_tensor **x) {
    return pt_f_avg_pool2d(x[0], &(pt_pool2d_opts){.kernel = {3, 2}, .stride = {1, 1}, .padding = {1, 1}});
}
static pt_tensor *f_adaptive_avg(pt_tensor **x) { return pt_adaptive_avg_pool2d(x[0], 1, 1); }
static pt_tensor *f_adaptive_avg_2x2(pt_tensor **x) { return pt_adaptive_avg_pool2d(x[0], 2, 2); }
static pt_tensor *f_batch_norm_train(pt_tensor **x) {
    pt_device *d = dev_of(x);
    int64_t c = x[0] ? pt_tensor_shape(x[0])[1] : 1;
    pt_tensor *rm = pt_zeros(d, pt_tensor_dtype(x[0]), 1, &c), *rv = pt_ones(d, pt_tensor_dtype(x[0]), 1, &c);
    pt_tensor *y = pt_f_batch_norm(x[0], rm, rv, x[1], x[2], true, 0.1, 1e-5);
    pt_release(rm);
    pt_release(rv);
    return y;
}
static pt_tensor *f_batch_norm_eval(pt_tensor **x) {
    pt_device *d = dev_of(x);
    static const double mean[3] = {0.5, -0.25, 1.0}, var[3] = {1.5, 0.75, 2.0};
    int64_t c = 3;
    pt_tensor *m64 = pt_from_data(d, PT_F64, 1, &c, mean), *v64 = pt_from_data(d, PT_F64, 1, &c, var);
    pt_tensor *rm = pt_cast(m64, pt_tensor_dtype(x[0])), *rv = pt_cast(v64, pt_tensor_dtype(x[0]));
    pt_tensor *y = pt_f_batch_norm(x[0], rm, rv, x[1], x[2], false, 0.1, 1e-5);
    pt_tensor *all[] = {m64, v64, rm, rv};
    for (size_t i = 0; i < 4; ++i) pt_release(all[i]);
    return y;
}
static pt_tensor *f_layer_norm(pt_tensor **x) { return pt_f_layer_norm(x[0], 2, x[1], x[2], 1e-5); }
static pt_tensor *f_gelu(pt_tensor **x) { return pt_gelu(x[0]); }
/* The same seed every evaluation: the same mask. */
static pt_tensor *f_dropout(pt_tensor **x) {
    pt_manual_seed(7);
    return pt_f_dropout(x[0], 0.4, true);
}
static pt_tensor *f_flatten(pt_tensor **x) { return pt_f_flatten(x[0], 1, -1); }

#define S(...) {__VA_ARGS__}

static const gcase cases[] = {
    {"add [2,3]+[3]", 2, {2, 1}, {S(2, 3), S(3)}, {ANY, ANY}, f_add, 0, 0},
    {"add [2,1]+[1,3]", 2, {2, 2}, {S(2, 1), S(1, 3)}, {ANY, ANY}, f_add, 0, 0},
    {"sub [2,3]-[2,1]", 2, {2, 2}, {S(2, 3), S(2, 1)}, {ANY, ANY}, f_sub, 0, 0},
    {"mul [2,3]*[1,3]", 2, {2, 2}, {S(2, 3), S(1, 3)}, {ANY, ANY}, f_mul, 0, 0},
    {"mul [4]*[] (0-D)", 2, {1, 0}, {S(4), S(0)}, {ANY, ANY}, f_mul, 0, 0},
    {"div [2,3]/[3]", 2, {2, 1}, {S(2, 3), S(3)}, {ANY, POSITIVE}, f_div, 0, 0},
    {"pow [2,3]^[2,3]", 2, {2, 2}, {S(2, 3), S(2, 3)}, {POSITIVE, ANY}, f_pow, 0, 0},
    {"pow [4]^[] (0-D)", 2, {1, 0}, {S(4), S(0)}, {POSITIVE, POSITIVE}, f_pow, 0, 0},
    {"maximum [2,3],[2,3]", 2, {2, 2}, {S(2, 3), S(2, 3)}, {SPREAD, SPREAD}, f_maximum, 0, 0},
    {"minimum [3],[2,3]", 2, {1, 2}, {S(3), S(2, 3)}, {SPREAD, SPREAD}, f_minimum, 0, 0},
    {"add_scalar", 1, {2}, {S(2, 3)}, {ANY}, f_add_scalar, 0, 0},
    {"mul_scalar", 1, {2}, {S(2, 3)}, {ANY}, f_mul_scalar, 0, 0},
    {"neg", 1, {2}, {S(2, 3)}, {ANY}, f_neg, 0, 0},
    {"abs", 1, {2}, {S(2, 3)}, {AWAY0}, f_abs, 0, 0},
    {"exp", 1, {2}, {S(2, 3)}, {ANY}, f_exp, 0, 0},
    {"log", 1, {2}, {S(2, 3)}, {POSITIVE}, f_log, 0, 0},
    {"sqrt", 1, {2}, {S(2, 3)}, {POSITIVE}, f_sqrt, 0, 0},
    {"rsqrt", 1, {2}, {S(2, 3)}, {POSITIVE}, f_rsqrt, 0, 0},
    {"relu", 1, {2}, {S(3, 4)}, {AWAY0}, f_relu, 0, 0},
    {"sigmoid", 1, {2}, {S(2, 3)}, {ANY}, f_sigmoid, 0, 0},
    {"tanh", 1, {2}, {S(2, 3)}, {ANY}, f_tanh, 0, 0},
    {"sin", 1, {2}, {S(2, 3)}, {ANY}, f_sin, 0, 0},
    {"cos", 1, {2}, {S(2, 3)}, {ANY}, f_cos, 0, 0},
    {"clamp(-0.9, 0.6)", 1, {2}, {S(3, 4)}, {SPREAD}, f_clamp, 0, 0},
    {"where(cond, [2,3], [3])", 2, {2, 1}, {S(2, 3), S(3)}, {ANY, ANY}, f_where, 0, 0},
    {"sum all", 1, {2}, {S(2, 3)}, {ANY}, f_sum_all, 0, 0},
    {"sum dim 0", 1, {3}, {S(2, 3, 2)}, {ANY}, f_sum_0, 0, 0},
    {"sum dim -1 keepdim", 1, {2}, {S(2, 3)}, {ANY}, f_sum_last_keep, 0, 0},
    {"mean all", 1, {2}, {S(2, 3)}, {ANY}, f_mean_all, 0, 0},
    {"mean dim 1", 1, {3}, {S(2, 3, 2)}, {ANY}, f_mean_1, 0, 0},
    {"max all", 1, {2}, {S(2, 3)}, {SPREAD}, f_max_all, 0, 0},
    {"max dim 1", 1, {3}, {S(2, 3, 2)}, {SPREAD}, f_max_1, 0, 0},
    {"max dim 0 keepdim", 1, {2}, {S(3, 2)}, {SPREAD}, f_max_0_keep, 0, 0},
    {"norm", 1, {2}, {S(2, 3)}, {ANY}, f_norm, 0, 0},
    {"norm_dims {1}", 1, {2}, {S(2, 3)}, {ANY}, f_norm_1, 0, 0},
    {"norm_dims {0,-1}", 1, {3}, {S(2, 3, 2)}, {ANY}, f_norm_02, 0, 0},
    {"softmax dim 1", 1, {2}, {S(2, 4)}, {ANY}, f_softmax_1, 0, 0},
    {"softmax dim 0", 1, {2}, {S(3, 2)}, {ANY}, f_softmax_0, 0, 0},
    {"log_softmax dim 1", 1, {2}, {S(2, 4)}, {ANY}, f_log_softmax_1, 0, 0},
    {"log_softmax dim -1 (3-D)", 1, {3}, {S(2, 2, 3)}, {ANY}, f_log_softmax_m1, 0, 0},
    {"matmul [2,3]x[3,4]", 2, {2, 2}, {S(2, 3), S(3, 4)}, {ANY, ANY}, f_matmul, 0, 0},
    {"matmul [3]x[3,2]", 2, {1, 2}, {S(3), S(3, 2)}, {ANY, ANY}, f_matmul, 0, 0},
    {"matmul [2,3]x[3]", 2, {2, 1}, {S(2, 3), S(3)}, {ANY, ANY}, f_matmul, 0, 0},
    {"matmul [3]x[3]", 2, {1, 1}, {S(3), S(3)}, {ANY, ANY}, f_matmul, 0, 0},
    {"matmul [2,2,3]x[3,2]", 2, {3, 2}, {S(2, 2, 3), S(3, 2)}, {ANY, ANY}, f_matmul, 0, 0},
    {"matmul [1,2,3]x[2,3,2]", 2, {3, 3}, {S(1, 2, 3), S(2, 3, 2)}, {ANY, ANY}, f_matmul, 0, 0},
    {"reshape", 1, {2}, {S(3, 4)}, {ANY}, f_reshape, 0, 0},
    {"transpose", 1, {2}, {S(2, 3)}, {ANY}, f_transpose, 0, 0},
    {"permute", 1, {3}, {S(2, 3, 2)}, {ANY}, f_permute, 0, 0},
    {"narrow", 1, {2}, {S(2, 4)}, {ANY}, f_narrow, 0, 0},
    {"expand [3,1]->[2,3,4]", 1, {2}, {S(3, 1)}, {ANY}, f_expand, 0, 0},
    {"contiguous", 1, {2}, {S(2, 3)}, {ANY}, f_contiguous, 0, 0},
    /* Through f32: a larger step keeps the rounding out of the difference. */
    {"cast round trip", 1, {2}, {S(2, 3)}, {ANY}, f_cast, 100, 1e-2},
    {"cat dim 0", 3, {2, 2, 2}, {S(1, 3), S(2, 3), S(1, 3)}, {ANY, ANY, ANY}, f_cat_0, 0, 0},
    {"cat dim 1", 2, {2, 2}, {S(2, 1), S(2, 3)}, {ANY, ANY}, f_cat_1, 0, 0},
    {"stack dim 1", 2, {2, 2}, {S(2, 3), S(2, 3)}, {ANY, ANY}, f_stack_1, 0, 0},
    {"gather dim 1 (repeated index)", 1, {2}, {S(2, 4)}, {ANY}, f_gather_1, 0, 0},
    {"gather dim 0", 1, {2}, {S(3, 4)}, {ANY}, f_gather_0, 0, 0},
    {"cross_entropy i64", 1, {2}, {S(4, 5)}, {ANY}, f_cross_entropy, 0, 0},
    {"cross_entropy i32", 1, {2}, {S(3, 2)}, {ANY}, f_cross_entropy_i32, 0, 0},
    {"mse_loss", 2, {2, 2}, {S(2, 3), S(2, 3)}, {ANY, ANY}, f_mse, 0, 0},
    {"linear x W^T + b", 3, {2, 2, 1}, {S(3, 4), S(2, 4), S(2)}, {ANY, ANY, ANY}, f_linear, 0, 0},
    {"shared input x*x+exp(x)-x", 1, {2}, {S(2, 3)}, {ANY}, f_shared, 0, 0},
    {"diamond", 2, {2, 2}, {S(2, 3), S(2, 3)}, {ANY, ANY}, f_diamond, 0, 0},
    {"conv2d 2x2 + bias", 3, {4, 4, 1}, {S(2, 2, 4, 4), S(3, 2, 2, 2), S(3)}, {ANY, ANY, ANY}, f_conv, 0, 0},
    {"conv2d 3x3 stride (2,1) pad (1,2)", 3, {4, 4, 1}, {S(1, 2, 5, 5), S(2, 2, 3, 3), S(2)}, {ANY, ANY, ANY},
     f_conv_stride_pad, 0, 0},
    {"conv2d 2x2 dilation 2 pad 1, no bias", 2, {4, 4}, {S(2, 1, 6, 6), S(2, 1, 2, 2)}, {ANY, ANY}, f_conv_dilated,
     0, 0},
    {"conv2d groups 2 stride (1,2)", 3, {4, 4, 1}, {S(1, 4, 4, 4), S(6, 2, 2, 2), S(6)}, {ANY, ANY, ANY},
     f_conv_grouped, 0, 0},
    {"im2col 2x3 stride (2,1) pad 1 dil (1,2)", 1, {4}, {S(2, 2, 4, 5)}, {ANY}, f_im2col, 0, 0},
    {"col2im 2x2 of 4x4", 1, {1}, {S(72)}, {ANY}, f_col2im, 0, 0},
    {"max_pool2d 3x3 stride (2,1) pad 1 (overlapping)", 1, {4}, {S(1, 2, 5, 6)}, {SPREAD}, f_max_pool, 0, 0},
    {"max_pool2d_window 3x2 dil (2,1) pad 1 (overlapping)", 1, {4}, {S(1, 2, 6, 5)}, {SPREAD}, f_max_pool_window,
     0, 0},
    {"max_pool2d_window 2x2 stride (1,2) of a transposed view", 1, {4}, {S(1, 3, 5, 4)}, {SPREAD},
     f_max_pool_window_t, 0, 0},
    {"avg_pool2d 3x2 stride 1 pad 1 (overlapping)", 1, {4}, {S(2, 2, 3, 4)}, {ANY}, f_avg_pool, 0, 0},
    {"adaptive_avg_pool2d 1x1", 1, {4}, {S(2, 3, 3, 2)}, {ANY}, f_adaptive_avg, 0, 0},
    {"adaptive_avg_pool2d 2x2", 1, {4}, {S(1, 2, 4, 6)}, {ANY}, f_adaptive_avg_2x2, 0, 0},
    {"batch_norm training", 3, {4, 1, 1}, {S(3, 2, 2, 3), S(2), S(2)}, {ANY, ANY, ANY}, f_batch_norm_train, 0, 0},
    {"batch_norm eval", 3, {3, 1, 1}, {S(4, 3, 2), S(3), S(3)}, {ANY, ANY, ANY}, f_batch_norm_eval, 0, 0},
    {"layer_norm last 2 dims", 3, {3, 2, 2}, {S(2, 3, 4), S(3, 4), S(3, 4)}, {ANY, ANY, ANY}, f_layer_norm, 0, 0},
    {"gelu", 1, {2}, {S(3, 4)}, {ANY}, f_gelu, 0, 0},
    {"dropout p 0.4 (fixed seed)", 1, {2}, {S(4, 5)}, {ANY}, f_dropout, 0, 0},
    {"flatten 1..-1", 1, {4}, {S(2, 2, 2, 3)}, {ANY}, f_flatten, 0, 0},
};

/* ---- Machinery ---- */

typedef struct inputs {
    int n;
    int64_t numel[MAX_IN];
    double val[MAX_IN][MAX_ELEMS];
} inputs;

/* Input `which` of `count`; SPREAD interleaves the inputs on one grid. */
static void fill(nn_rng *r, domain dom, double *v, int64_t n, int which, int count) {
    for (int64_t i = 0; i < n; ++i) {
        double u = nn_uniform(r);
        switch (dom) {
        case ANY: v[i] = -2.0 + 4.0 * u; break;
        case POSITIVE: v[i] = 0.5 + 1.5 * u; break;
        case AWAY0: v[i] = (nn_uniform(r) < 0.5 ? -1.0 : 1.0) * (0.3 + 1.7 * u); break;
        case SPREAD: v[i] = -2.0 + 0.3 * (double)(i * count + which) + 0.1 * u; break;
        }
    }
    if (dom == SPREAD) /* shuffle so the maxima are not always last */
        for (int64_t i = n - 1; i > 0; --i) {
            int64_t j = (int64_t)(nn_uniform(r) * (double)(i + 1));
            double t = v[i];
            v[i] = v[j];
            v[j] = t;
        }
}

static pt_tensor *upload(pt_device *d, const gcase *c, int i, const double *v, int64_t n) {
    if (dt == PT_F64) return pt_from_data(d, PT_F64, c->ndim[i], c->shape[i], v);
    float f[MAX_ELEMS];
    for (int64_t k = 0; k < n; ++k) f[k] = (float)v[k];
    return pt_from_data(d, PT_F32, c->ndim[i], c->shape[i], f);
}

/* L = sum(f(x) * W), W fixed per case (created on first use). */
static pt_tensor *loss_of(const gcase *c, pt_tensor **x, pt_tensor **w, nn_rng *wrng) {
    pt_tensor *y = c->f(x);
    if (!y) return NULL;
    if (!*w) {
        int64_t n = pt_tensor_numel(y);
        double *wv = malloc((size_t)(n ? n : 1) * sizeof *wv);
        for (int64_t i = 0; i < n; ++i) wv[i] = 0.5 + nn_uniform(wrng);
        pt_tensor *w64 = pt_from_data(pt_tensor_device(y), PT_F64, pt_tensor_ndim(y), pt_tensor_shape(y), wv);
        *w = pt_cast(w64, pt_tensor_dtype(y));
        pt_release(w64);
        free(wv);
    }
    pt_tensor *yw = pt_mul(y, *w);
    pt_tensor *l = pt_sum(yw, PT_ALL, false);
    pt_release(y);
    pt_release(yw);
    return l;
}

static double eval_loss(pt_device *d, const gcase *c, const inputs *in, pt_tensor **w, nn_rng *wrng) {
    pt_tensor *x[MAX_IN] = {0};
    for (int i = 0; i < c->n_in; ++i) x[i] = upload(d, c, i, in->val[i], in->numel[i]);
    pt_tensor *l = loss_of(c, x, w, wrng);
    double v = l ? pt_item(l) : NAN;
    pt_release(l);
    for (int i = 0; i < c->n_in; ++i) pt_release(x[i]);
    return v;
}

static void run_case(pt_device *d, const gcase *c, nn_rng *r) {
    inputs in = {.n = c->n_in};
    for (int i = 0; i < c->n_in; ++i) {
        in.numel[i] = 1;
        for (int k = 0; k < c->ndim[i]; ++k) in.numel[i] *= c->shape[i][k];
        fill(r, c->dom[i], in.val[i], in.numel[i], i, c->n_in);
    }
    nn_rng wrng = {0x5eedULL + (uint64_t)(c - cases)};
    pt_tensor *w = NULL;
    double scale = c->tol_scale > 0 ? c->tol_scale : 1.0;

    /* Analytic. */
    pt_tensor *x[MAX_IN] = {0};
    for (int i = 0; i < c->n_in; ++i) {
        x[i] = upload(d, c, i, in.val[i], in.numel[i]);
        pt_set_requires_grad(x[i], true);
    }
    pt_tensor *l = loss_of(c, x, &w, &wrng);
    pt_status s = l ? pt_backward(l) : pt_last_status();
    pt_release(l);
    if (s != PT_OK) {
        ++nn_failed;
        printf("FAIL %-32s forward/backward failed: %s: %s\n", c->name, pt_status_name(s), pt_last_error());
        for (int i = 0; i < c->n_in; ++i) pt_release(x[i]);
        pt_release(w);
        pt_clear_error();
        return;
    }
    double analytic[MAX_IN][MAX_ELEMS];
    bool ok = true;
    for (int i = 0; i < c->n_in; ++i) {
        pt_tensor *g = pt_grad(x[i]);
        bool shaped = g && pt_tensor_ndim(g) == c->ndim[i] && pt_tensor_device(g) == d &&
                      pt_tensor_dtype(g) == dt;
        for (int k = 0; shaped && k < c->ndim[i]; ++k) shaped = pt_tensor_shape(g)[k] == c->shape[i][k];
        if (!shaped || nn_to_doubles(g, analytic[i], in.numel[i]) != 0) {
            char desc[160];
            printf("FAIL %-32s input %d: gradient missing or misshapen (%s)\n", c->name, i,
                   g ? pt_tensor_describe(g, desc, sizeof desc) : "none");
            ok = false;
        }
        pt_release(g);
    }

    /* Numeric, only for the inputs that got a gradient of the right shape. */
    pt_no_grad_begin();
    double worst = 0;
    for (int i = 0; ok && i < c->n_in; ++i) {
        for (int64_t j = 0; j < in.numel[i]; ++j) {
            double keep = in.val[i][j];
            double step = (c->step > h ? c->step : h) * (fabs(keep) > 1 ? fabs(keep) : 1.0);
            in.val[i][j] = keep + step;
            double lp = eval_loss(d, c, &in, &w, &wrng);
            in.val[i][j] = keep - step;
            double lm = eval_loss(d, c, &in, &w, &wrng);
            in.val[i][j] = keep;
            double numeric = (lp - lm) / (2 * step);
            double err = fabs(analytic[i][j] - numeric);
            double allowed = scale * (abs_tol + rel_tol * fabs(numeric));
            if (err / allowed > worst) worst = err / allowed;
            if (!(err <= allowed)) {
                if (ok)
                    printf("FAIL %-32s input %d element %lld: analytic %.10g, numeric %.10g\n", c->name, i,
                           (long long)j, analytic[i][j], numeric);
                ok = false;
            }
        }
    }
    pt_no_grad_end();
    if (ok) {
        ++nn_passed;
        printf("ok   %-32s (worst error %.2g of tolerance)\n", c->name, worst);
    } else {
        ++nn_failed;
    }
    for (int i = 0; i < c->n_in; ++i) pt_release(x[i]);
    pt_release(w);
    pt_clear_error();
}

int main(void) {
    nn_begin();
    pt_device *d = nn_device_or_skip();
    pt_device_props props;
    bool fp64 = pt_device_info(d, &props) == PT_OK && props.supports_f64;
    /* GRADCHECK_DTYPE=f32 runs the f32 path on any device (to test it). */
    const char *forced = getenv("GRADCHECK_DTYPE");
    if (forced && strcmp(forced, "f32") == 0) fp64 = false;
    if (fp64) {
        dt = PT_F64;
        h = 1e-6;
        abs_tol = 1e-7;
        rel_tol = 1e-6;
    } else {
        dt = PT_F32;
        h = 1e-2;
        abs_tol = 2e-3;
        rel_tol = 2e-3;
        printf("note: %s; checking in f32 with step %g and tolerance %g + %g|x|\n",
               forced ? "GRADCHECK_DTYPE=f32" : "the device has no fp64", h, abs_tol, rel_tol);
    }
    printf("gradcheck on %s in %s (%zu cases)\n", pt_device_name(d), pt_dtype_name(dt),
           sizeof cases / sizeof cases[0]);
    nn_rng r = {20240611ULL};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) run_case(d, &cases[i], &r);
    return nn_finish();
}
