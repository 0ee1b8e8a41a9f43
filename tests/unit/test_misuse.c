/* The misuse table: a few hundred bad calls across the public
 * API — NULL handles, bad dims and dtypes, shapes that do not fit,
 * operands on two devices (PORTABLE_CPU_DEVICES=2), bad module and
 * optimizer arguments, bad device names — each asserting that the call
 * fails cleanly: the failure value (NULL, the status, -1 or NaN), the exact
 * status in pt_last_status(), and a non-empty pt_last_error() that names
 * the function. Run under ASan/UBSan, a crash or report is a failure too.
 *
 * One row per call, in MISUSE_TABLE below:
 *   P(status, "fn", expr)  expr returns a pointer that must be NULL
 *   S(status, "fn", expr)  expr returns a pt_status that must be `status`
 *   I(status, "fn", expr)  expr returns an int that must be -1
 *   D(status, "fn", expr)  expr returns a double that must be NaN
 *   K(expr)                a NULL tensor handle given to a tensor-valued
 *                          function: NULL back, and the first error (set
 *                          just before, by pt_device_get) kept untouched
 *   V(status, "fn", expr)  expr returns nothing (void) but sets the error */
#include <stdint.h>

#include "check.h"

#define INV PT_ERR_INVALID_ARGUMENT
#define SHP PT_ERR_SHAPE
#define DTY PT_ERR_DTYPE
#define DEV PT_ERR_DEVICE_MISMATCH
#define NOD PT_ERR_NO_DEVICE
#define IO PT_ERR_IO

/* ---- Fixtures (made in main) ---- */
static pt_device *c0, *c1;
static pt_tensor *a23, *b34, *d23, *i23, *u23, *l2, *v3, *s0, *e0, *far23, *lab2, *flab2, *idx21,
    *big_idx21, *req, *noreq, *opres, *x1, *lab_bad;
static pt_module *lin, *relu, *owned, *seq, *lazy;
static pt_optimizer *opt;
static char host[4096];
static const int64_t sh23[2] = {2, 3}, sh3[1] = {3}, sh0[1] = {0}, neg[2] = {2, -3},
                     huge2[2] = {(int64_t)1 << 32, (int64_t)1 << 32},
                     wrap2[2] = {((int64_t)1 << 62) + 1, 4},
                     emptyhuge[3] = {0, (int64_t)1 << 40, (int64_t)1 << 40},
                     nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, sh32[2] = {3, 2}, sh_m1m1[2] = {-1, -1},
                     sh_4m1[2] = {4, -1}, sh_7[1] = {7}, sh223[3] = {2, 2, 3}, sh_m2[1] = {-2},
                     sh_0m1[2] = {0, -1}, sh_lim1[1] = {((int64_t)1 << 48) + 1};
static const int perm_dup[2] = {0, 0}, perm_bad[2] = {0, 5}, perm_all[2] = {PT_ALL, 0};
static const int dims_bad[1] = {4}, dims_dup[2] = {0, 0};
static const char *tmp_missing = "/nonexistent-dir-for-libportable/x.safetensors";
static char tmp_garbage[256];

#define MISUSE_TABLE(P, S, I, D, K, V)                                                             \
    /* ---- creation: devices, dtypes, shapes ---- */                                              \
    P(INV, "pt_empty", pt_empty(NULL, PT_F32, 2, sh23))                                            \
    P(INV, "pt_zeros", pt_zeros(NULL, PT_F32, 2, sh23))                                            \
    P(INV, "pt_ones", pt_ones(NULL, PT_F32, 2, sh23))                                              \
    P(INV, "pt_full", pt_full(NULL, PT_F32, 2, sh23, 1))                                           \
    P(INV, "pt_rand", pt_rand(NULL, PT_F32, 2, sh23))                                              \
    P(INV, "pt_randn", pt_randn(NULL, PT_F32, 2, sh23))                                            \
    P(INV, "pt_arange", pt_arange(NULL, PT_F32, 0, 3, 1))                                          \
    P(INV, "pt_from_data", pt_from_data(NULL, PT_F32, 1, sh3, host))                               \
    P(DTY, "pt_empty", pt_empty(c0, (pt_dtype)99, 2, sh23))                                        \
    P(DTY, "pt_empty", pt_empty(c0, (pt_dtype)-1, 2, sh23))                                        \
    P(DTY, "pt_zeros", pt_zeros(c0, PT_DTYPE_COUNT, 2, sh23))                                       \
    P(DTY, "pt_ones", pt_ones(c0, (pt_dtype)7, 2, sh23))                                           \
    P(DTY, "pt_full", pt_full(c0, (pt_dtype)42, 2, sh23, 0))                                       \
    P(DTY, "pt_rand", pt_rand(c0, PT_I32, 2, sh23))                                                \
    P(DTY, "pt_rand", pt_rand(c0, PT_U8, 2, sh23))                                                 \
    P(DTY, "pt_randn", pt_randn(c0, PT_I64, 2, sh23))                                              \
    P(DTY, "pt_randn", pt_randn(c0, (pt_dtype)9, 2, sh23))                                         \
    P(DTY, "pt_arange", pt_arange(c0, (pt_dtype)9, 0, 3, 1))                                       \
    P(DTY, "pt_from_data", pt_from_data(c0, (pt_dtype)9, 1, sh3, host))                            \
    P(SHP, "pt_empty", pt_empty(c0, PT_F32, 2, neg))                                               \
    P(SHP, "pt_zeros", pt_zeros(c0, PT_F32, 2, neg))                                               \
    P(SHP, "pt_ones", pt_ones(c0, PT_F64, 2, neg))                                                 \
    P(SHP, "pt_full", pt_full(c0, PT_I32, 2, neg, 1))                                              \
    P(SHP, "pt_rand", pt_rand(c0, PT_F32, 2, neg))                                                 \
    P(SHP, "pt_randn", pt_randn(c0, PT_F32, 2, neg))                                               \
    P(SHP, "pt_from_data", pt_from_data(c0, PT_F32, 2, neg, host))                                 \
    P(SHP, "pt_empty", pt_empty(c0, PT_F32, -1, sh23))                                             \
    P(SHP, "pt_empty", pt_empty(c0, PT_F32, 9, nine))                                              \
    P(SHP, "pt_zeros", pt_zeros(c0, PT_F32, 100, nine))                                            \
    P(INV, "pt_empty", pt_empty(c0, PT_F32, 2, NULL))                                              \
    P(INV, "pt_ones", pt_ones(c0, PT_F32, 1, NULL))                                                \
    P(INV, "pt_rand", pt_rand(c0, PT_F32, 3, NULL))                                                \
    P(SHP, "pt_empty", pt_empty(c0, PT_F32, 2, huge2))                                             \
    P(SHP, "pt_zeros", pt_zeros(c0, PT_F32, 2, wrap2))                                             \
    P(SHP, "pt_empty", pt_empty(c0, PT_F32, 3, emptyhuge))                                         \
    P(SHP, "pt_ones", pt_ones(c0, PT_U8, 3, emptyhuge))                                            \
    P(SHP, "pt_full", pt_full(c0, PT_F64, 2, huge2, 2))                                            \
    P(SHP, "pt_rand", pt_rand(c0, PT_F32, 3, emptyhuge))                                           \
    P(SHP, "pt_randn", pt_randn(c0, PT_F64, 2, wrap2))                                             \
    P(SHP, "pt_from_data", pt_from_data(c0, PT_F32, 3, emptyhuge, host))                           \
    P(SHP, "pt_empty", pt_empty(c0, PT_F32, 1, sh_lim1))                                           \
    P(INV, "pt_from_data", pt_from_data(c0, PT_F32, 1, sh3, NULL))                                 \
    P(INV, "pt_full", pt_full(c0, PT_I32, 2, sh23, NAN))                                           \
    P(INV, "pt_full", pt_full(c0, PT_I32, 2, sh23, INFINITY))                                      \
    P(INV, "pt_full", pt_full(c0, PT_U8, 2, sh23, 256))                                            \
    P(INV, "pt_full", pt_full(c0, PT_U8, 2, sh23, -1))                                             \
    P(INV, "pt_full", pt_full(c0, PT_I32, 2, sh23, 3e9))                                           \
    P(INV, "pt_full", pt_full(c0, PT_I64, 2, sh23, 1e19))                                          \
    P(INV, "pt_arange", pt_arange(c0, PT_F32, 0, 3, 0))                                            \
    P(INV, "pt_arange", pt_arange(c0, PT_F32, 0, INFINITY, 1))                                     \
    P(INV, "pt_arange", pt_arange(c0, PT_F32, NAN, 3, 1))                                          \
    P(INV, "pt_arange", pt_arange(c0, PT_F32, 0, 3, NAN))                                          \
    P(SHP, "pt_arange", pt_arange(c0, PT_F32, 0, 1e300, 1))                                        \
    P(SHP, "pt_arange", pt_arange(c0, PT_F64, 0, 1, 1e-300))                                       \
    P(INV, "pt_arange", pt_arange(c0, PT_U8, 0, 300, 1))                                           \
    P(INV, "pt_arange", pt_arange(c0, PT_I32, -1e10, 0, 1e9))                                      \
    /* ---- device names and PORTABLE_BACKEND-free lookups ---- */                                 \
    P(INV, "pt_device_get", pt_device_get(NULL))                                                   \
    P(INV, "pt_device_get", pt_device_get(""))                                                     \
    P(INV, "pt_device_get", pt_device_get("cpu: 1"))                                               \
    P(INV, "pt_device_get", pt_device_get("cpu:+0"))                                               \
    P(INV, "pt_device_get", pt_device_get("cpu:00"))                                               \
    P(INV, "pt_device_get", pt_device_get("cpu:01"))                                               \
    P(INV, "pt_device_get", pt_device_get("cpu:-1"))                                               \
    P(INV, "pt_device_get", pt_device_get("cpu:-0"))                                               \
    P(INV, "pt_device_get", pt_device_get("cpu:1x"))                                               \
    P(INV, "pt_device_get", pt_device_get("cpu:"))                                                 \
    P(INV, "pt_device_get", pt_device_get(":1"))                                                   \
    P(INV, "pt_device_get", pt_device_get(" cpu"))                                                 \
    P(INV, "pt_device_get", pt_device_get("cpu "))                                                 \
    P(INV, "pt_device_get", pt_device_get("cpu:1:1"))                                              \
    P(INV, "pt_device_get", pt_device_get("cpu:0x0"))                                              \
    P(INV, "pt_device_get", pt_device_get("cpu;0"))                                                \
    P(INV, "pt_device_get", pt_device_get("a-very-long-backend-name-over-31-chars"))               \
    P(NOD, "pt_device_get", pt_device_get("cpu:2"))                                                \
    P(NOD, "pt_device_get", pt_device_get("cpu:99999999999"))                                      \
    P(NOD, "pt_device_get", pt_device_get("cpu:4294967296"))                                       \
    P(NOD, "pt_device_get", pt_device_get("gpu"))                                                  \
    P(NOD, "pt_device_get", pt_device_get("nosuch:0"))                                             \
    /* ---- device functions ---- */                                                               \
    S(INV, "pt_device_info", (pt_device_info)(NULL, NULL))                                           \
    S(INV, "pt_device_info", (pt_device_info)(c0, NULL))                                            \
    S(INV, "pt_device_synchronize", pt_device_synchronize(NULL))                                   \
    S(INV, "pt_memory_stats", (pt_memory_stats)(NULL, NULL))                                         \
    S(INV, "pt_memory_stats", (pt_memory_stats)(c0, NULL))                                          \
    S(INV, "pt_empty_cache", pt_empty_cache(NULL))                                                 \
    S(INV, "pt_device_supports", pt_device_supports(NULL, PT_OP_ADD, PT_F32))                      \
    S(INV, "pt_device_supports", pt_device_supports(c0, (pt_op_kind)-1, PT_F32))                   \
    S(INV, "pt_device_supports", pt_device_supports(c0, (pt_op_kind)100000, PT_F32))               \
    S(INV, "pt_device_supports", pt_device_supports(c0, PT_OP_ADD, (pt_dtype)9))                   \
    S(DTY, "pt_device_supports", pt_device_supports(c0, PT_OP_EXP, PT_I32))                        \
    /* ---- reading back and moving ---- */                                                        \
    S(INV, "pt_to_host", pt_to_host(NULL, host, sizeof host))                                      \
    S(INV, "pt_to_host", pt_to_host(a23, NULL, 24))                                                \
    S(INV, "pt_to_host", pt_to_host(a23, host, 23))                                                \
    S(INV, "pt_to_host", pt_to_host(a23, host, 0))                                                 \
    S(INV, "pt_to_host", pt_to_host(d23, host, 24))                                                \
    D(INV, "pt_item", pt_item(NULL))                                                               \
    D(SHP, "pt_item", pt_item(a23))                                                                \
    D(SHP, "pt_item", pt_item(e0))                                                                 \
    D(SHP, "pt_item", pt_item(v3))                                                                 \
    P(INV, "pt_to", pt_to(a23, NULL))                                                              \
    P(INV, "pt_to_async", pt_to_async(a23, NULL))                                                  \
    /* ---- NULL tensors in tensor-valued functions: NULL, first error kept ---- */                \
    K(pt_to(NULL, c0))                                                                             \
    K(pt_to_async(NULL, c0))                                                                       \
    K(pt_add(NULL, a23))                                                                           \
    K(pt_add(a23, NULL))                                                                           \
    K(pt_sub(NULL, NULL))                                                                          \
    K(pt_mul(NULL, a23))                                                                           \
    K(pt_div(a23, NULL))                                                                           \
    K(pt_pow(NULL, a23))                                                                           \
    K(pt_maximum(NULL, a23))                                                                       \
    K(pt_minimum(a23, NULL))                                                                       \
    K(pt_add_scalar(NULL, 1))                                                                      \
    K(pt_mul_scalar(NULL, 2))                                                                      \
    K(pt_neg(NULL))                                                                                \
    K(pt_abs(NULL))                                                                                \
    K(pt_exp(NULL))                                                                                \
    K(pt_log(NULL))                                                                                \
    K(pt_sqrt(NULL))                                                                               \
    K(pt_relu(NULL))                                                                               \
    K(pt_sigmoid(NULL))                                                                            \
    K(pt_tanh(NULL))                                                                               \
    K(pt_sin(NULL))                                                                                \
    K(pt_cos(NULL))                                                                                \
    K(pt_clamp(NULL, 0, 1))                                                                        \
    K(pt_eq(NULL, a23))                                                                            \
    K(pt_lt(a23, NULL))                                                                            \
    K(pt_gt(NULL, a23))                                                                            \
    K(pt_le(NULL, a23))                                                                            \
    K(pt_ge(NULL, a23))                                                                            \
    K(pt_ne(NULL, a23))                                                                            \
    K(pt_where(NULL, a23, a23))                                                                    \
    K(pt_where(u23, NULL, a23))                                                                    \
    K(pt_where(u23, a23, NULL))                                                                    \
    K(pt_sum(NULL, PT_ALL, false))                                                                 \
    K(pt_mean(NULL, 0, false))                                                                     \
    K(pt_max(NULL, 0, true))                                                                       \
    K(pt_argmax(NULL, PT_ALL, false))                                                              \
    K(pt_norm(NULL))                                                                               \
    K(pt_norm_dims(NULL, 1, dims_bad))                                                             \
    K(pt_softmax(NULL, 0))                                                                         \
    K(pt_log_softmax(NULL, 0))                                                                     \
    K(pt_matmul(NULL, b34))                                                                        \
    K(pt_matmul(a23, NULL))                                                                        \
    K(pt_reshape(NULL, 2, sh32))                                                                   \
    K(pt_transpose(NULL, 0, 1))                                                                    \
    K(pt_permute(NULL, perm_dup))                                                                  \
    K(pt_narrow(NULL, 0, 0, 1))                                                                    \
    K(pt_expand(NULL, 2, sh23))                                                                    \
    K(pt_contiguous(NULL))                                                                         \
    K(pt_cast(NULL, PT_F64))                                                                       \
    K(pt_cat(2, (pt_tensor *[]){a23, NULL}, 0))                                                    \
    K(pt_stack(2, (pt_tensor *[]){NULL, a23}, 0))                                                  \
    K(pt_gather(NULL, 0, idx21))                                                                   \
    K(pt_gather(a23, 0, NULL))                                                                     \
    K(pt_one_hot(NULL, 3, PT_F32))                                                                 \
    K(pt_detach(NULL))                                                                             \
    K(pt_module_forward(lin, NULL))                                                                \
    K(pt_mse_loss(NULL, a23))                                                                      \
    K(pt_mse_loss(a23, NULL))                                                                      \
    K(pt_cross_entropy(NULL, lab2))                                                                \
    K(pt_cross_entropy(a23, NULL))                                                                 \
    /* ---- element-wise: dtypes ---- */                                                           \
    P(DTY, "pt_exp", pt_exp(i23))                                                                  \
    P(DTY, "pt_log", pt_log(i23))                                                                  \
    P(DTY, "pt_sqrt", pt_sqrt(u23))                                                                \
    P(DTY, "pt_sigmoid", pt_sigmoid(i23))                                                          \
    P(DTY, "pt_tanh", pt_tanh(l2))                                                                 \
    P(DTY, "pt_sin", pt_sin(i23))                                                                  \
    P(DTY, "pt_cos", pt_cos(u23))                                                                  \
    P(DTY, "pt_pow", pt_pow(i23, i23))                                                             \
    P(DTY, "pt_add", pt_add(u23, u23))                                                             \
    P(DTY, "pt_sub", pt_sub(u23, u23))                                                             \
    P(DTY, "pt_mul", pt_mul(u23, u23))                                                             \
    P(DTY, "pt_div", pt_div(u23, u23))                                                             \
    P(DTY, "pt_neg", pt_neg(u23))                                                                  \
    P(DTY, "pt_abs", pt_abs(u23))                                                                  \
    P(DTY, "pt_add_scalar", pt_add_scalar(u23, 1))                                                 \
    P(DTY, "pt_mul_scalar", pt_mul_scalar(u23, 2))                                                 \
    P(DTY, "pt_clamp", pt_clamp(u23, 0, 1))                                                        \
    P(DTY, "pt_where", pt_where(a23, a23, a23))                                                    \
    P(DTY, "pt_where", pt_where(i23, a23, a23))                                                    \
    P(DTY, "pt_mean", pt_mean(i23, PT_ALL, false))                                                 \
    P(DTY, "pt_norm", pt_norm(i23))                                                                \
    P(DTY, "pt_softmax", pt_softmax(i23, 0))                                                       \
    P(DTY, "pt_log_softmax", pt_log_softmax(u23, 0))                                               \
    P(DTY, "pt_cast", pt_cast(a23, (pt_dtype)9))                                                   \
    P(DTY, "pt_matmul", pt_matmul(a23, pt_cast(b34, PT_F64)))                                      \
    P(DTY, "pt_matmul", pt_matmul(i23, pt_cast(b34, PT_I32)))                                      \
    /* ---- element-wise: scalars ---- */                                                          \
    P(INV, "pt_add_scalar", pt_add_scalar(i23, NAN))                                               \
    P(INV, "pt_add_scalar", pt_add_scalar(i23, INFINITY))                                          \
    P(INV, "pt_mul_scalar", pt_mul_scalar(i23, 1e12))                                              \
    P(INV, "pt_clamp", pt_clamp(a23, NAN, 1))                                                      \
    P(INV, "pt_clamp", pt_clamp(a23, 0, NAN))                                                      \
    S(INV, "pt_fill_", pt_fill_(i23, NAN))                                                         \
    S(INV, "pt_fill_", pt_fill_(u23, 300))                                                         \
    S(DTY, "pt_axpy_", pt_axpy_(i23, NAN, i23))                                                    \
    /* ---- element-wise: shapes and devices ---- */                                               \
    P(SHP, "pt_add", pt_add(a23, b34))                                                             \
    P(SHP, "pt_sub", pt_sub(a23, pt_ones(c0, PT_F32, 1, (int64_t[]){2})))      \
    P(SHP, "pt_mul", pt_mul(b34, a23))                                                             \
    P(SHP, "pt_div", pt_div(a23, b34))                                                             \
    P(SHP, "pt_pow", pt_pow(a23, b34))                                                             \
    P(SHP, "pt_maximum", pt_maximum(a23, b34))                                                     \
    P(SHP, "pt_minimum", pt_minimum(a23, b34))                                                     \
    P(SHP, "pt_eq", pt_eq(a23, b34))                                                               \
    P(SHP, "pt_lt", pt_lt(a23, b34))                                                               \
    P(SHP, "pt_gt", pt_gt(a23, b34))                                                               \
    P(SHP, "pt_le", pt_le(a23, b34))                                                               \
    P(SHP, "pt_ge", pt_ge(a23, b34))                                                               \
    P(SHP, "pt_ne", pt_ne(a23, b34))                                                               \
    P(SHP, "pt_where", pt_where(u23, a23, b34))                                                    \
    P(DEV, "pt_add", pt_add(a23, far23))                                                           \
    P(DEV, "pt_sub", pt_sub(far23, a23))                                                           \
    P(DEV, "pt_mul", pt_mul(a23, far23))                                                           \
    P(DEV, "pt_div", pt_div(a23, far23))                                                           \
    P(DEV, "pt_pow", pt_pow(a23, far23))                                                           \
    P(DEV, "pt_maximum", pt_maximum(a23, far23))                                                   \
    P(DEV, "pt_minimum", pt_minimum(a23, far23))                                                   \
    P(DEV, "pt_eq", pt_eq(a23, far23))                                                             \
    P(DEV, "pt_ne", pt_ne(a23, far23))                                                             \
    P(DEV, "pt_where", pt_where(u23, a23, far23))                                                  \
    P(DEV, "pt_matmul", pt_matmul(far23, b34))                                                     \
    P(DEV, "pt_cat", pt_cat(2, (pt_tensor *[]){a23, far23}, 0))                                    \
    P(DEV, "pt_stack", pt_stack(2, (pt_tensor *[]){a23, far23}, 0))                                \
    P(DEV, "pt_gather", pt_gather(far23, 0, idx21))                                                \
    P(DEV, "pt_mse_loss", pt_mse_loss(a23, far23))                                                 \
    P(DEV, "pt_cross_entropy", pt_cross_entropy(far23, lab2))                                      \
    S(DEV, "pt_axpy_", pt_axpy_(a23, 1, far23))                                                    \
    /* ---- broadcast / matmul results that do not fit ---- */                                     \
    P(SHP, "pt_add", pt_add(pt_expand(x1, 2, (int64_t[]){(int64_t)1 << 30, 1}),                    \
                            pt_expand(x1, 2, (int64_t[]){1, (int64_t)1 << 30})))                   \
    P(SHP, "pt_matmul", pt_matmul(pt_expand(x1, 2, (int64_t[]){(int64_t)1 << 30, 1}),              \
                                  pt_expand(x1, 2, (int64_t[]){1, (int64_t)1 << 30})))             \
    /* ---- reductions: dims ---- */                                                               \
    P(INV, "pt_sum", pt_sum(a23, 2, false))                                                        \
    P(INV, "pt_sum", pt_sum(a23, -3, false))                                                       \
    P(INV, "pt_mean", pt_mean(a23, 5, true))                                                       \
    P(INV, "pt_max", pt_max(a23, -7, false))                                                       \
    P(INV, "pt_argmax", pt_argmax(a23, 2, false))                                                  \
    P(INV, "pt_softmax", pt_softmax(a23, 2))                                                       \
    P(INV, "pt_softmax", pt_softmax(a23, PT_ALL))                                                  \
    P(INV, "pt_log_softmax", pt_log_softmax(a23, -3))                                              \
    P(INV, "pt_norm_dims", pt_norm_dims(a23, 1, dims_bad))                                         \
    P(INV, "pt_norm_dims", pt_norm_dims(a23, 2, dims_dup))                                         \
    P(INV, "pt_norm_dims", pt_norm_dims(a23, 1, NULL))                                             \
    P(INV, "pt_norm_dims", pt_norm_dims(a23, -1, dims_dup))                                        \
    P(SHP, "pt_max", pt_max(e0, PT_ALL, false))                                                    \
    P(SHP, "pt_argmax", pt_argmax(e0, 0, false))                                                   \
    P(INV, "pt_sum", pt_sum(s0, 1, false))                                                         \
    P(INV, "pt_sum", pt_sum(s0, -2, false))                                                        \
    /* ---- matmul shapes ---- */                                                                  \
    P(SHP, "pt_matmul", pt_matmul(a23, a23))                                                       \
    P(SHP, "pt_matmul", pt_matmul(b34, a23))                                                       \
    P(SHP, "pt_matmul", pt_matmul(s0, a23))                                                        \
    P(SHP, "pt_matmul", pt_matmul(a23, s0))                                                        \
    P(SHP, "pt_matmul", pt_matmul(v3, a23))                                                        \
    /* ---- views ---- */                                                                          \
    P(SHP, "pt_reshape", pt_reshape(a23, 2, sh223))                                                \
    P(SHP, "pt_reshape", pt_reshape(a23, 1, sh_7))                                                 \
    P(SHP, "pt_reshape", pt_reshape(a23, 2, sh_m1m1))                                              \
    P(SHP, "pt_reshape", pt_reshape(a23, 2, sh_4m1))                                               \
    P(SHP, "pt_reshape", pt_reshape(a23, 1, sh_m2))                                                \
    P(SHP, "pt_reshape", pt_reshape(a23, -1, sh23))                                                \
    P(SHP, "pt_reshape", pt_reshape(a23, 9, nine))                                                 \
    P(INV, "pt_reshape", pt_reshape(a23, 2, NULL))                                                 \
    P(SHP, "pt_reshape", pt_reshape(a23, 2, wrap2))                                                \
    P(SHP, "pt_reshape", pt_reshape(e0, 3, emptyhuge))                                             \
    P(SHP, "pt_reshape", pt_reshape(e0, 2, sh_0m1))                                                \
    P(INV, "pt_transpose", pt_transpose(a23, 0, 2))                                                \
    P(INV, "pt_transpose", pt_transpose(a23, -3, 0))                                               \
    P(INV, "pt_transpose", pt_transpose(a23, PT_ALL, 0))                                           \
    P(INV, "pt_transpose", pt_transpose(s0, 0, 0))                                                 \
    P(INV, "pt_permute", pt_permute(a23, perm_dup))                                                \
    P(INV, "pt_permute", pt_permute(a23, perm_bad))                                                \
    P(INV, "pt_permute", pt_permute(a23, perm_all))                                                \
    P(INV, "pt_permute", pt_permute(a23, NULL))                                                    \
    P(INV, "pt_narrow", pt_narrow(a23, 2, 0, 1))                                                   \
    P(INV, "pt_narrow", pt_narrow(a23, 0, 1, 2))                                                   \
    P(INV, "pt_narrow", pt_narrow(a23, 0, 3, 0))                                                   \
    P(INV, "pt_narrow", pt_narrow(a23, 1, -4, 1))                                                  \
    P(INV, "pt_narrow", pt_narrow(a23, 1, 0, -1))                                                  \
    P(INV, "pt_narrow", pt_narrow(a23, 1, INT64_MAX, 1))                                           \
    P(INV, "pt_narrow", pt_narrow(a23, 1, 1, INT64_MAX))                                           \
    P(INV, "pt_narrow", pt_narrow(a23, 1, INT64_MIN, 1))                                           \
    P(INV, "pt_narrow", pt_narrow(a23, PT_ALL, 0, 1))                                              \
    P(SHP, "pt_expand", pt_expand(a23, 2, sh32))                                                   \
    P(SHP, "pt_expand", pt_expand(a23, 1, sh3))                                                    \
    P(SHP, "pt_expand", pt_expand(a23, 9, nine))                                                   \
    P(INV, "pt_expand", pt_expand(a23, 2, NULL))                                                   \
    P(SHP, "pt_expand", pt_expand(x1, 2, huge2))                                                   \
    P(SHP, "pt_expand", pt_expand(x1, 1, sh_lim1))                                                 \
    P(SHP, "pt_expand", pt_expand(x1, 3, emptyhuge))                                               \
    P(SHP, "pt_expand", pt_expand(x1, 2, neg))                                                     \
    /* ---- joining ---- */                                                                        \
    P(INV, "pt_cat", pt_cat(0, (pt_tensor *[]){a23}, 0))                                           \
    P(INV, "pt_cat", pt_cat(-1, (pt_tensor *[]){a23}, 0))                                          \
    P(INV, "pt_cat", pt_cat(2, NULL, 0))                                                           \
    P(SHP, "pt_cat", pt_cat(2, (pt_tensor *[]){a23, b34}, 0))                                      \
    P(SHP, "pt_cat", pt_cat(2, (pt_tensor *[]){a23, v3}, 0))                                       \
    P(SHP, "pt_cat", pt_cat(1, (pt_tensor *[]){s0}, 0))                                            \
    P(INV, "pt_cat", pt_cat(2, (pt_tensor *[]){a23, a23}, 2))                                      \
    P(INV, "pt_cat", pt_cat(2, (pt_tensor *[]){a23, a23}, PT_ALL))                                 \
    P(DTY, "pt_cat", pt_cat(2, (pt_tensor *[]){a23, d23}, 0))                                      \
    P(INV, "pt_stack", pt_stack(0, (pt_tensor *[]){a23}, 0))                                       \
    P(INV, "pt_stack", pt_stack(1, NULL, 0))                                                       \
    P(SHP, "pt_stack", pt_stack(2, (pt_tensor *[]){a23, b34}, 0))                                  \
    P(INV, "pt_stack", pt_stack(2, (pt_tensor *[]){a23, a23}, 3))                                  \
    P(INV, "pt_stack", pt_stack(2, (pt_tensor *[]){a23, a23}, -4))                                 \
    P(DTY, "pt_stack", pt_stack(2, (pt_tensor *[]){a23, i23}, 0))                                  \
    /* ---- indexing ---- */                                                                       \
    P(DTY, "pt_gather", pt_gather(a23, 0, a23))                                                    \
    P(INV, "pt_gather", pt_gather(a23, 2, idx21))                                                  \
    P(INV, "pt_gather", pt_gather(a23, 0, big_idx21))                                              \
    P(SHP, "pt_gather", pt_gather(a23, 0, l2))                                                     \
    P(DTY, "pt_one_hot", pt_one_hot(a23, 3, PT_F32))                                               \
    P(INV, "pt_one_hot", pt_one_hot(l2, 0, PT_F32))                                                \
    P(INV, "pt_one_hot", pt_one_hot(l2, -3, PT_F32))                                               \
    P(INV, "pt_one_hot", pt_one_hot(lab_bad, 3, PT_F32))                                           \
    P(DTY, "pt_one_hot", pt_one_hot(l2, 3, (pt_dtype)9))                                           \
    P(SHP, "pt_one_hot", pt_one_hot(l2, (int64_t)1 << 48, PT_F32))                                 \
    /* ---- in-place ---- */                                                                       \
    S(INV, "pt_copy_", pt_copy_(NULL, a23))                                                        \
    S(INV, "pt_copy_", pt_copy_(a23, NULL))                                                        \
    S(SHP, "pt_copy_", pt_copy_(a23, b34))                                                         \
    S(SHP, "pt_copy_", pt_copy_(v3, a23))                                                          \
    S(INV, "pt_copy_", pt_copy_(pt_expand(x1, 2, sh23), a23))                                      \
    S(INV, "pt_fill_", pt_fill_(NULL, 1))                                                          \
    S(INV, "pt_axpy_", pt_axpy_(NULL, 1, a23))                                                     \
    S(INV, "pt_axpy_", pt_axpy_(a23, 1, NULL))                                                     \
    S(SHP, "pt_axpy_", pt_axpy_(a23, 1, b34))                                                      \
    S(DTY, "pt_axpy_", pt_axpy_(u23, 1, u23))                                                      \
    /* ---- autograd ---- */                                                                       \
    S(INV, "pt_set_requires_grad", pt_set_requires_grad(NULL, true))                               \
    S(DTY, "pt_set_requires_grad", pt_set_requires_grad(i23, true))                                \
    S(INV, "pt_set_requires_grad", pt_set_requires_grad(opres, true))                              \
    S(INV, "pt_backward", pt_backward(NULL))                                                       \
    S(SHP, "pt_backward", pt_backward(req))                                                        \
    S(INV, "pt_backward", pt_backward(noreq))                                                      \
    S(INV, "pt_zero_grad", pt_zero_grad(NULL))                                                     \
    S(INV, "pt_no_grad_end", pt_no_grad_end())                                                     \
    /* ---- modules ---- */                                                                        \
    P(INV, "pt_linear", pt_linear(0))                                                              \
    P(INV, "pt_linear", pt_linear(-5))                                                             \
    P(INV, "pt_linear_sized", pt_linear_sized(0, 3))                                               \
    P(INV, "pt_linear_sized", pt_linear_sized(3, 0))                                               \
    P(INV, "pt_linear_sized", pt_linear_sized(-1, -1))                                             \
    P(INV, "pt_sequential", pt_sequential(-1, NULL))                                               \
    P(INV, "pt_sequential", pt_sequential(2, NULL))                                                \
    P(INV, "pt_sequential", pt_sequential(2, (pt_module *[]){relu, relu}))                         \
    P(INV, "pt_sequential", pt_sequential(3, (pt_module *[]){lin, relu, lin}))                     \
    P(INV, "pt_sequential", pt_sequential(1, (pt_module *[]){owned}))                              \
    P(INV, "pt_sequential", pt_sequential(2, (pt_module *[]){relu, owned}))                        \
    P(INV, "pt_module_forward", pt_module_forward(NULL, a23))                                      \
    P(SHP, "pt_module_forward", pt_module_forward(lin, b34))                                       \
    P(DEV, "pt_module_forward", pt_module_forward(lin, far23))                                     \
    P(DTY, "pt_module_forward", pt_module_forward(lin, i23))                                       \
    V(INV, "pt_module_free", pt_module_free(owned))                                                \
    S(INV, "pt_module_to", pt_module_to(NULL, c0))                                                 \
    S(INV, "pt_module_to", pt_module_to(lin, NULL))                                                \
    I(INV, "pt_module_parameters", pt_module_parameters(NULL, NULL, NULL, 0))                      \
    P(INV, "pt_module_parameter", pt_module_parameter(lin, "nope"))                                \
    P(INV, "pt_module_parameter", pt_module_parameter(lin, NULL))                                  \
    P(INV, "pt_module_parameter", pt_module_parameter(NULL, "weight"))                             \
    S(INV, "pt_module_zero_grad", pt_module_zero_grad(NULL))                                       \
    /* ---- losses ---- */                                                                         \
    P(DTY, "pt_mse_loss", pt_mse_loss(a23, d23))                                                   \
    P(DTY, "pt_mse_loss", pt_mse_loss(d23, a23))                                                   \
    P(DTY, "pt_mse_loss", pt_mse_loss(i23, i23))                                                   \
    P(SHP, "pt_mse_loss", pt_mse_loss(a23, b34))                                                   \
    P(DTY, "pt_cross_entropy", pt_cross_entropy(i23, lab2))                                        \
    P(DTY, "pt_cross_entropy", pt_cross_entropy(a23, flab2))                                       \
    P(SHP, "pt_cross_entropy", pt_cross_entropy(v3, lab2))                                         \
    P(SHP, "pt_cross_entropy", pt_cross_entropy(b34, lab2))                                        \
    P(INV, "pt_cross_entropy", pt_cross_entropy(a23, lab_bad))                                     \
    /* ---- optimizers ---- */                                                                     \
    P(INV, "pt_sgd", pt_sgd(NULL, 0.1, 0, 0))                                                      \
    P(INV, "pt_sgd", pt_sgd(lin, 0, 0, 0))                                                         \
    P(INV, "pt_sgd", pt_sgd(lin, -0.1, 0, 0))                                                      \
    P(INV, "pt_sgd", pt_sgd(lin, NAN, 0, 0))                                                       \
    P(INV, "pt_sgd", pt_sgd(lin, INFINITY, 0, 0))                                                  \
    P(INV, "pt_sgd", pt_sgd(lin, 0.1, INFINITY, 0))                                                \
    P(INV, "pt_sgd", pt_sgd(lin, 0.1, NAN, 0))                                                     \
    P(INV, "pt_sgd", pt_sgd(lin, 0.1, -0.9, 0))                                                    \
    P(INV, "pt_sgd", pt_sgd(lin, 0.1, 1, 0))                                                       \
    P(INV, "pt_sgd", pt_sgd(lin, 0.1, 0.9, INFINITY))                                              \
    P(INV, "pt_sgd", pt_sgd(lin, 0.1, 0.9, NAN))                                                   \
    P(INV, "pt_sgd", pt_sgd(lin, 0.1, 0.9, -1))                                                    \
    P(INV, "pt_adam", pt_adam(NULL, 1e-3, 0.9, 0.999, 1e-8, 0))                                    \
    P(INV, "pt_adam", pt_adam(lin, 0, 0.9, 0.999, 1e-8, 0))                                        \
    P(INV, "pt_adam", pt_adam(lin, INFINITY, 0.9, 0.999, 1e-8, 0))                                 \
    P(INV, "pt_adam", pt_adam(lin, NAN, 0.9, 0.999, 1e-8, 0))                                      \
    P(INV, "pt_adam", pt_adam(lin, 1e-3, 1, 0.999, 1e-8, 0))                                       \
    P(INV, "pt_adam", pt_adam(lin, 1e-3, -0.1, 0.999, 1e-8, 0))                                    \
    P(INV, "pt_adam", pt_adam(lin, 1e-3, NAN, 0.999, 1e-8, 0))                                     \
    P(INV, "pt_adam", pt_adam(lin, 1e-3, 0.9, 1, 1e-8, 0))                                         \
    P(INV, "pt_adam", pt_adam(lin, 1e-3, 0.9, INFINITY, 1e-8, 0))                                  \
    P(INV, "pt_adam", pt_adam(lin, 1e-3, 0.9, 0.999, -1e-8, 0))                                    \
    P(INV, "pt_adam", pt_adam(lin, 1e-3, 0.9, 0.999, INFINITY, 0))                                 \
    P(INV, "pt_adam", pt_adam(lin, 1e-3, 0.9, 0.999, NAN, 0))                                      \
    P(INV, "pt_adam", pt_adam(lin, 1e-3, 0.9, 0.999, 1e-8, -1))                                    \
    P(INV, "pt_adam", pt_adam(lin, 1e-3, 0.9, 0.999, 1e-8, INFINITY))                              \
    S(INV, "pt_optimizer_step", pt_optimizer_step(NULL))                                           \
    S(INV, "pt_optimizer_zero_grad", pt_optimizer_zero_grad(NULL))                                 \
    S(INV, "pt_optimizer_set_lr", pt_optimizer_set_lr(NULL, 0.1))                                  \
    S(INV, "pt_optimizer_set_lr", pt_optimizer_set_lr(opt, 0))                                     \
    S(INV, "pt_optimizer_set_lr", pt_optimizer_set_lr(opt, -1))                                    \
    S(INV, "pt_optimizer_set_lr", pt_optimizer_set_lr(opt, NAN))                                   \
    S(INV, "pt_optimizer_set_lr", pt_optimizer_set_lr(opt, INFINITY))                              \
    /* ---- safetensors ---- */                                                                    \
    S(INV, "pt_save", pt_save(NULL, "/tmp/x.safetensors"))                                         \
    S(INV, "pt_save", pt_save(lin, NULL))                                                          \
    S(INV, "pt_save", pt_save(lazy, "/tmp/never.safetensors"))                                     \
    S(IO, "pt_save", pt_save(lin, tmp_missing))                                                    \
    S(INV, "pt_load", pt_load(NULL, tmp_missing, NULL))                                            \
    S(INV, "pt_load", pt_load(lin, NULL, NULL))                                                    \
    S(IO, "pt_load", pt_load(lin, tmp_missing, NULL))                                              \
    S(IO, "pt_load", pt_load(lin, tmp_garbage, NULL))                                              \
    /* ---- scopes ---- */                                                                         \
    /* (misuse of scope handles is another helper's item: not listed here) */

/* ---- The runner ---- */

static int rows;

/* Status `want`, a non-empty message naming fn. */
static void check_error(int line, const char *expr, bool failed, pt_status want, const char *fn) {
    ++rows;
    char what[1600];
    pt_status got = pt_last_status();
    const char *msg = pt_last_error();
    bool ok = failed && got == want && msg && msg[0] && strstr(msg, fn);
    snprintf(what, sizeof what, "%s: %s; want %s naming %s, last status %s (\"%s\")", expr,
             failed ? "failed as expected" : "did not return the failure value",
             pt_status_name(want), fn, pt_status_name(got), msg ? msg : "(null)");
    check_report(ok, __FILE__, line, what);
    pt_clear_error();
}

static void run_p(int line, const char *expr, void *got, pt_status want, const char *fn) {
    check_error(line, expr, got == NULL, want, fn);
}
static void run_s(int line, const char *expr, pt_status got, pt_status want, const char *fn) {
    /* the returned status and the thread's last status agree */
    check_error(line, expr, got == want && got == pt_last_status(), want, fn);
}
static void run_i(int line, const char *expr, int got, pt_status want, const char *fn) {
    check_error(line, expr, got == -1, want, fn);
}
static void run_d(int line, const char *expr, double got, pt_status want, const char *fn) {
    check_error(line, expr, isnan(got), want, fn);
}

/* The first error every K row must keep. */
static void set_first_error(void) {
    pt_clear_error();
    (void)pt_device_get("cpu:7");
}

#define ROW_P(st, fn, expr) run_p(__LINE__, #expr, (void *)(expr), st, fn);
#define ROW_S(st, fn, expr) run_s(__LINE__, #expr, (expr), st, fn);
#define ROW_I(st, fn, expr) run_i(__LINE__, #expr, (expr), st, fn);
#define ROW_D(st, fn, expr) run_d(__LINE__, #expr, (expr), st, fn);
#define ROW_K(expr)                                                                                \
    set_first_error();                                                                             \
    run_p(__LINE__, #expr " (NULL operand keeps the first error)", (void *)(expr), NOD,             \
          "pt_device_get");
#define ROW_V(st, fn, expr)                                                                        \
    pt_clear_error();                                                                              \
    expr;                                                                                          \
    check_error(__LINE__, #expr, true, st, fn);

static bool make_fixtures(void) {
    c0 = pt_device_get("cpu:0");
    c1 = pt_device_get("cpu:1");
    if (!c0 || !c1) {
        printf("needs PORTABLE_CPU_DEVICES=2: %s\n", pt_last_error());
        return false;
    }
    const int64_t s34[2] = {3, 4}, s2 = 2, s21[2] = {2, 1}, s1 = 1;
    a23 = pt_ones(c0, PT_F32, 2, sh23);
    b34 = pt_ones(c0, PT_F32, 2, s34);
    d23 = pt_ones(c0, PT_F64, 2, sh23);
    i23 = pt_ones(c0, PT_I32, 2, sh23);
    u23 = pt_ones(c0, PT_U8, 2, sh23);
    l2 = pt_zeros(c0, PT_I64, 1, &s2);
    v3 = pt_ones(c0, PT_F32, 1, sh3);
    s0 = pt_full(c0, PT_F32, 0, NULL, 2);
    e0 = pt_empty(c0, PT_F32, 1, sh0);
    far23 = pt_ones(c1, PT_F32, 2, sh23);
    lab2 = pt_zeros(c0, PT_I64, 1, &s2);
    flab2 = pt_zeros(c0, PT_F32, 1, &s2);
    idx21 = pt_zeros(c0, PT_I64, 2, s21);
    big_idx21 = pt_full(c0, PT_I64, 2, sh23, 5); /* [2, 3] of 5: out of range for dim 0 */
    x1 = pt_ones(c0, PT_F32, 1, &s1);
    req = pt_ones(c0, PT_F32, 2, sh23);
    pt_set_requires_grad(req, true);
    noreq = pt_ones(c0, PT_F32, 0, NULL);
    opres = pt_mul_scalar(req, 2); /* has history */
    lab_bad = pt_full(c0, PT_I64, 1, &s2, 3); /* class 3 of 3 */
    lin = pt_linear_sized(3, 2);
    relu = pt_relu_module();
    owned = pt_relu_module();
    seq = pt_sequential(1, (pt_module *[]){owned});
    lazy = pt_linear(4);
    opt = pt_sgd(lin, 0.1, 0.9, 0);
    snprintf(tmp_garbage, sizeof tmp_garbage, "/tmp/libportable-misuse-%d.safetensors", (int)getpid());
    FILE *f = fopen(tmp_garbage, "wb");
    if (f) {
        fputs("this is not a safetensors file", f);
        fclose(f);
    }
    return a23 && b34 && d23 && i23 && u23 && l2 && v3 && s0 && e0 && far23 && lab2 && flab2 &&
           idx21 && big_idx21 && x1 && req && noreq && opres && lab_bad && lin && relu && owned && seq &&
           lazy && opt && f;
}

static void free_fixtures(void) {
    pt_tensor *ts[] = {a23, b34, d23, i23, u23, l2, v3, s0, e0, far23, lab2, flab2, idx21,
                       big_idx21, x1, req, noreq, opres, lab_bad};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; ++i) pt_release(ts[i]);
    pt_optimizer_free(opt);
    pt_module_free(lin);
    pt_module_free(relu);
    pt_module_free(seq);
    pt_module_free(lazy);
    remove(tmp_garbage);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!make_fixtures()) {
        printf("fixtures failed: %s\n", pt_last_error());
        return 1;
    }
    /* Everything a row makes by the way (casts, expands, results of calls
     * that wrongly succeed) is released by this scope. */
    pt_scope scope = pt_scope_begin();
    MISUSE_TABLE(ROW_P, ROW_S, ROW_I, ROW_D, ROW_K, ROW_V)
    pt_scope_end(scope);
    /* The fixtures are still intact after all of it. */
    scope = pt_scope_begin();
    CHECK(pt_module_forward(lin, a23) != NULL);
    CHECK(pt_module_forward(relu, a23) != NULL);
    CHECK(pt_module_forward(seq, a23) != NULL);
    CHECK_OK(pt_optimizer_step(opt));
    pt_scope_end(scope);
    printf("%d misuse rows\n", rows);
    CHECK(rows >= 300);
    free_fixtures();
    return check_summary();
}
