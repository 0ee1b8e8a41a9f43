/* RNG cases (pt_rand / pt_randn against include/portable/philox.h computed
 * here) and error-path cases (statuses and messages, never a crash). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <portable/philox.h>

#include "conformance.h"

/* ================= RNG ================= */

typedef struct rng_call {
    uint64_t seed;
    bool normal;
    pt_dtype t;
    int ndim;
    int64_t shape[3];
    int n_before;          /* calls drawn after the seed, before the checked one */
    int64_t before[3];     /* their element counts (f32 uniform draws) */
} rng_call;

static pt_tensor *call_rng(pt_tensor **in, const void *p) {
    (void)in;
    const rng_call *c = p;
    pt_manual_seed(c->seed);
    for (int i = 0; i < c->n_before; ++i) {
        pt_tensor *x = pt_rand(g_dev, PT_F32, 1, &c->before[i]);
        if (!x) return NULL;
        pt_release(x);
    }
    return c->normal ? pt_randn(g_dev, c->t, c->ndim, c->shape) : pt_rand(g_dev, c->t, c->ndim, c->shape);
}

/* The Box-Muller radius of element i: the scale of randn's rounding error
 * (cos/sin of an argument rounded to the dtype). */
static double normal_radius(const rng_call *c, uint64_t counter, uint64_t i) {
    if (c->t == PT_F32 || c->t == PT_F16 || c->t == PT_BF16) {
        pt_philox_block b = pt_philox4x32_10(c->seed, counter + i / 4);
        unsigned p = (unsigned)((i % 4) / 2) * 2;
        double u1 = (double)((b.w[p] >> 8) + 1) / 16777216.0;
        return sqrt(-2 * log(u1));
    }
    pt_philox_block b = pt_philox4x32_10(c->seed, counter + i / 2);
    uint64_t a = ((uint64_t)b.w[0] << 32) | b.w[1];
    double u1 = (double)((a >> 11) + 1) / 9007199254740992.0;
    return sqrt(-2 * log(u1));
}

static void rng_case(const char *label, const rng_call *c) {
    char name[256], sh[96];
    snprintf(name, sizeof name, "%s %s %s seed=%llu%s", c->normal ? "randn" : "rand", pt_dtype_name(c->t),
             shape_str(c->ndim, c->shape, sh, sizeof sh), (unsigned long long)c->seed, label);
    if (!case_selected(name)) return;
    uint64_t counter = 0;
    for (int i = 0; i < c->n_before; ++i) counter += (uint64_t)c->before[i];
    expect e = {.val = ht_new(c->t, c->ndim, c->shape), .K = 1};
    e.acc = calloc((size_t)e.val->numel + 1, sizeof(double));
    /* f16/bf16 draw the f32 values and round them once; uniform values at
     * the top that would round up to 1 take the largest value below 1, so
     * [0, 1) holds in every dtype. */
    const bool half = c->t == PT_F16 || c->t == PT_BF16;
    const double below1 = 1.0 - ldexp(1.0, c->t == PT_F16 ? -11 : -8);
    for (int64_t i = 0; i < e.val->numel; ++i) {
        uint64_t u = (uint64_t)i;
        if (half) {
            double v = c->normal ? (double)pt_philox_normal_f32(c->seed, counter, u)
                                 : fmin((double)pt_philox_uniform_f32(c->seed, counter, u), below1);
            e.val->v[i] = quantize(c->t, v);
            if (c->normal) e.acc[i] = fmax(1.0, normal_radius(c, counter, u));
            continue;
        }
        if (!c->normal) {
            e.val->v[i] = c->t == PT_F32 ? (double)pt_philox_uniform_f32(c->seed, counter, u)
                                         : pt_philox_uniform_f64(c->seed, counter, u);
        } else {
            e.val->v[i] = c->t == PT_F32 ? (double)pt_philox_normal_f32(c->seed, counter, u)
                                         : pt_philox_normal_f64(c->seed, counter, u);
            e.acc[i] = fmax(1.0, normal_radius(c, counter, u));
        }
    }
    run_case(name, 0, NULL, NULL, call_rng, c, &e, c->normal ? TOL_RANDN : TOL_EXACT, CF_CONTIGUOUS);
    expect_free(&e);
}

void run_rng_cases(void) {
    FOR_EACH_DTYPE_IN(t, PT_DTYPES_FLOAT)
        for (int normal = 0; normal < 2; ++normal) {
            rng_call c = {.seed = 42, .normal = normal, .t = t, .ndim = 1, .shape = {1000}};
            rng_case("", &c);
            c.ndim = 2;
            c.shape[0] = 7;
            c.shape[1] = 13;
            rng_case("", &c);
            c.ndim = 0;
            rng_case("", &c);
            c.ndim = 1;
            c.shape[0] = 0;
            rng_case("", &c);
            c.shape[0] = 3;
            c.seed = 0x123456789abcdef0ull; /* both key words */
            rng_case("", &c);
            c.shape[0] = 1001;
            c.seed = 7;
            c.n_before = 2;
            c.before[0] = 5;
            c.before[1] = 1000;
            rng_case(" after draws of 5 and 1000 (counter 1005)", &c);
        }
    rng_call big = {.seed = 2024, .t = PT_F32, .ndim = 1, .shape = {BIG_N}};
    rng_case("", &big);
    big.normal = true;
    rng_case("", &big);

    /* Dtype errors: integers have no uniform distribution here. */
    const char *name = "rand i32 is a dtype error";
    if (case_selected(name)) {
        pt_clear_error();
        int64_t n = 4;
        pt_tensor *x = pt_rand(g_dev, PT_I32, 1, &n);
        if (x || pt_last_status() != PT_ERR_DTYPE)
            report_fail(name, "got %s (%s), expected NULL + PT_ERR_DTYPE", x ? "a tensor" : "NULL",
                        pt_status_name(pt_last_status()));
        else report_pass(name);
        pt_release(x);
    }
}

/* ================= error paths ================= */

#define ST(s) (1u << (s))

static bool contains(const char *hay, const char *needle) { return !needle || strstr(hay, needle) != NULL; }

/* Checks that the call just made failed with a status in allowed and a
 * message containing every needle. */
static void check_error(const char *name, bool failed, unsigned allowed, const char *n1, const char *n2,
                        const char *n3) {
    pt_status s = pt_last_status();
    const char *m = pt_last_error();
    if (!failed) report_fail(name, "succeeded; expected an error");
    else if (!(allowed & ST(s))) report_fail(name, "status %s (%s)", pt_status_name(s), m);
    else if (!contains(m, n1) || !contains(m, n2) || !contains(m, n3))
        report_fail(name, "message \"%s\" should mention \"%s\"%s%s%s%s", m, n1, n2 ? ", \"" : "", n2 ? n2 : "",
                    n3 ? "\", \"" : "", n3 ? n3 : "");
    else report_pass(name);
    pt_clear_error();
}

static pt_tensor *mk(pt_dtype t, int ndim, int64_t a, int64_t b) {
    int64_t s[2] = {a, b};
    return pt_ones(g_dev, t, ndim, s);
}

/* `expr` returning a tensor: fails when NULL. Releases the result. */
#define EXPECT_NULL(name, expr, allowed, n1, n2, n3)                                                      \
    do {                                                                                                  \
        if (case_selected(name)) {                                                                        \
            pt_clear_error();                                                                             \
            pt_tensor *r_ = (expr);                                                                       \
            check_error(name, r_ == NULL, allowed, n1, n2, n3);                                           \
            pt_release(r_);                                                                               \
        }                                                                                                 \
    } while (0)
#define EXPECT_STATUS(name, expr, allowed, n1, n2, n3)                                                    \
    do {                                                                                                  \
        if (case_selected(name)) {                                                                        \
            pt_clear_error();                                                                             \
            pt_status st_ = (expr);                                                                       \
            check_error(name, st_ != PT_OK && st_ == pt_last_status(), allowed, n1, n2, n3);              \
        }                                                                                                 \
    } while (0)

void run_error_cases(void) {
    const unsigned DIMERR = ST(PT_ERR_INVALID_ARGUMENT) | ST(PT_ERR_SHAPE);
    pt_tensor *a = mk(PT_F32, 2, 7, 13), *b = mk(PT_F32, 2, 7, 12), *ai = mk(PT_I32, 2, 7, 13);
    pt_tensor *bt = mk(PT_F32, 2, 12, 5), *cu8 = mk(PT_U8, 2, 7, 13), *e0 = mk(PT_F32, 2, 3, 0);
    if (!a || !b || !ai || !bt || !cu8 || !e0) {
        if (!skip_if_unsupported("error cases setup")) /* the set-up fills with FILL */
            report_fail("error cases setup", "%s", pt_last_error());
        goto done;
    }
    EXPECT_NULL("error add [7, 13] + [7, 12] names both shapes", pt_add(a, b), ST(PT_ERR_SHAPE), "pt_add", "[7, 13]",
                "[7, 12]");
    EXPECT_NULL("error mul [7, 12] * [7, 13] names both shapes", pt_mul(b, a), ST(PT_ERR_SHAPE), "pt_mul", "[7, 12]",
                "[7, 13]");
    EXPECT_NULL("error matmul [7, 13] @ [12, 5] names both shapes", pt_matmul(a, bt), ST(PT_ERR_SHAPE), "pt_matmul",
                "[7, 13]", "[12, 5]");
    EXPECT_NULL("error where [7, 13] ? [7, 13] : [7, 12]", pt_where(cu8, a, b), ST(PT_ERR_SHAPE), "pt_where",
                "[7, 13]", "[7, 12]");
    EXPECT_NULL("error exp i32 is a dtype error", pt_exp(ai), ST(PT_ERR_DTYPE), "pt_exp", "i32", NULL);
    EXPECT_NULL("error gelu i32 is a dtype error", pt_gelu(ai), ST(PT_ERR_DTYPE), "pt_gelu", "i32", NULL);
    EXPECT_NULL("error gelu_grad i32 is a dtype error", pt_gelu_grad(ai), ST(PT_ERR_DTYPE), "pt_gelu_grad", "i32",
                NULL);
    {
        int64_t xs[4] = {1, 4, 5, 5}, ws[4] = {3, 3, 3, 3}, x3[3] = {4, 5, 5};
        pt_tensor *x = pt_ones(g_dev, PT_F32, 4, xs), *w = pt_ones(g_dev, PT_F32, 4, ws);
        pt_tensor *x3d = pt_ones(g_dev, PT_F32, 3, x3);
        const pt_conv2d_opts g2 = {.groups = 2};
        EXPECT_NULL("error conv2d 4 channels, weight in 3, groups 2", pt_f_conv2d(x, w, NULL, &g2), DIMERR,
                    "pt_f_conv2d", "groups 2", "[3, 3, 3, 3]");
        EXPECT_NULL("error conv2d of a 3-D input", pt_f_conv2d(x3d, w, NULL, NULL), DIMERR, "pt_f_conv2d", "[4, 5, 5]",
                    "4-D");
        /* The conv kinds' entry points check before any device sees them
         * (the same on a device without the kinds). */
        const int64_t w4s[4] = {3, 4, 3, 3}, gs[4] = {1, 3, 3, 3}, bad_gs[4] = {1, 3, 4, 3};
        pt_tensor *w4 = pt_ones(g_dev, PT_F32, 4, w4s), *gy = pt_ones(g_dev, PT_F32, 4, gs);
        pt_tensor *gbad = pt_ones(g_dev, PT_F32, 4, bad_gs);
        EXPECT_NULL("error conv2d_direct 4 channels, weight in 3, groups 2", pt_conv2d_direct(x, w, &g2), DIMERR,
                    "pt_conv2d_direct", "groups 2", "[3, 3, 3, 3]");
        EXPECT_NULL("error conv2d_backward_data g of the wrong shape", pt_conv2d_backward_data(gbad, w4, NULL, 5, 5),
                    DIMERR, "pt_conv2d_backward_data", "[1, 3, 4, 3]", "[1, 3, 3, 3]");
        EXPECT_NULL("error conv2d_backward_data image smaller than the kernel",
                    pt_conv2d_backward_data(gy, w4, NULL, 2, 2), DIMERR, "pt_conv2d_backward_data", "2x2",
                    "kernel [3, 3]");
        EXPECT_NULL("error conv2d_backward_weight of a 3-D input", pt_conv2d_backward_weight(x3d, gy, NULL, 3, 3),
                    DIMERR, "pt_conv2d_backward_weight", "[4, 5, 5]", "4-D");
        EXPECT_NULL("error conv2d_backward_weight kernel 0", pt_conv2d_backward_weight(x, gy, NULL, 0, 3), DIMERR,
                    "pt_conv2d_backward_weight", "kernel [0, 3]", NULL);
        pt_release(w4);
        pt_release(gy);
        pt_release(gbad);
        const pt_pool2d_opts wide_pad = {.kernel = {2, 2}, .padding = {2, 0}};
        EXPECT_NULL("error max_pool2d padding over half the kernel", pt_f_max_pool2d(x, &wide_pad),
                    ST(PT_ERR_INVALID_ARGUMENT), "pt_f_max_pool2d", "padding [2, 0]", "half the kernel");
        const pt_window2d big = {{7, 7}, {1, 1}, {0, 0}, {1, 1}};
        EXPECT_NULL("error im2col window larger than the image", pt_im2col(x, &big, 0.0), DIMERR, "pt_im2col",
                    "5x5", "kernel [7, 7]");
        const pt_window2d zero_stride = {{2, 2}, {0, 1}, {0, 0}, {1, 1}};
        EXPECT_NULL("error im2col stride 0", pt_im2col(x, &zero_stride, 0.0), ST(PT_ERR_INVALID_ARGUMENT),
                    "pt_im2col", "stride [0, 1]", NULL);
        const pt_window2d w2 = {{2, 2}, {2, 2}, {0, 0}, {1, 1}};
        EXPECT_NULL("error max_pool2d_window of a 3-D input", pt_max_pool2d_window(x3d, &w2), DIMERR,
                    "pt_max_pool2d_window", "[4, 5, 5]", "4-D");
        EXPECT_NULL("error max_pool2d_indices window larger than the image", pt_max_pool2d_indices(x, &big), DIMERR,
                    "pt_max_pool2d_indices", "5x5", "kernel [7, 7]");
        {
            int64_t ps[4] = {1, 4, 2, 2}, qs[4] = {1, 4, 3, 2};
            pt_tensor *gp = pt_ones(g_dev, PT_F32, 4, ps), *ix = pt_zeros(g_dev, PT_I64, 4, ps);
            pt_tensor *i32 = pt_zeros(g_dev, PT_I32, 4, ps), *wrong = pt_zeros(g_dev, PT_I64, 4, qs);
            EXPECT_NULL("error max_unpool2d with i32 indices", pt_max_unpool2d(gp, i32, &w2, 5, 5), ST(PT_ERR_DTYPE),
                        "pt_max_unpool2d", "i32", "i64");
            EXPECT_NULL("error max_unpool2d indices of another shape", pt_max_unpool2d(gp, wrong, &w2, 5, 5),
                        ST(PT_ERR_SHAPE), "pt_max_unpool2d", "[1, 4, 3, 2]", "5x5");
            EXPECT_NULL("error max_unpool2d g for another image", pt_max_unpool2d(gp, ix, &w2, 7, 7),
                        ST(PT_ERR_SHAPE), "pt_max_unpool2d", "[1, 4, 2, 2]", "7x7");
            pt_release(gp);
            pt_release(ix);
            pt_release(i32);
            pt_release(wrong);
        }
        EXPECT_NULL("error adaptive_avg_pool2d 5x5 to 2x2", pt_adaptive_avg_pool2d(x, 2, 2),
                    ST(PT_ERR_INVALID_ARGUMENT), "pt_adaptive_avg_pool2d", "2x2", "5x5");
        pt_release(x);
        pt_release(w);
        pt_release(x3d);
    }
    EXPECT_NULL("error matmul i32 is a dtype error", pt_matmul(ai, ai), ST(PT_ERR_DTYPE), "pt_matmul", "i32", NULL);
    EXPECT_NULL("error mean i32 is a dtype error", pt_mean(ai, PT_ALL, false), ST(PT_ERR_DTYPE), "pt_mean", "i32",
                NULL);
    EXPECT_NULL("error pow i32 is a dtype error", pt_pow(ai, ai), ST(PT_ERR_DTYPE), "pt_pow", "i32", NULL);
    EXPECT_NULL("error sin i32 is a dtype error", pt_sin(ai), ST(PT_ERR_DTYPE), "pt_sin", "i32", "f32");
    EXPECT_NULL("error clamp with a NaN bound", pt_clamp(a, NAN, 1.0), ST(PT_ERR_INVALID_ARGUMENT), "pt_clamp",
                "NaN", "INFINITY");
    EXPECT_NULL("error clamp u8 is a dtype error", pt_clamp(cu8, 0, 1), ST(PT_ERR_DTYPE), "pt_clamp", "u8", "i32");
    EXPECT_NULL("error where with an f32 condition", pt_where(a, a, a), ST(PT_ERR_DTYPE), "pt_where", "f32", NULL);
    EXPECT_NULL("error gather with an f32 index", pt_gather(a, 1, a), ST(PT_ERR_DTYPE), "pt_gather", "f32", NULL);
    EXPECT_NULL("error one_hot with f32 labels", pt_one_hot(a, 4, PT_F32), ST(PT_ERR_DTYPE), "pt_one_hot", NULL, NULL);
    EXPECT_NULL("error cast to dtype 99", pt_cast(a, (pt_dtype)99), ST(PT_ERR_DTYPE) | ST(PT_ERR_INVALID_ARGUMENT),
                "pt_cast", "99", NULL);
    {
        pt_tensor *xs[2] = {a, ai};
        EXPECT_NULL("error cat f32 with i32", pt_cat(2, xs, 0), ST(PT_ERR_DTYPE), "pt_cat", "f32", "i32");
        pt_tensor *ys[2] = {a, b};
        EXPECT_NULL("error cat [7, 13] with [7, 12] along 0", pt_cat(2, ys, 0), ST(PT_ERR_SHAPE), "pt_cat", "[7, 13]",
                    "[7, 12]");
        EXPECT_NULL("error stack [7, 13] with [7, 12]", pt_stack(2, ys, 0), ST(PT_ERR_SHAPE), "pt_stack", "[7, 13]",
                    "[7, 12]");
        EXPECT_NULL("error cat of 0 tensors", pt_cat(0, ys, 0), ST(PT_ERR_INVALID_ARGUMENT), "pt_cat", NULL, NULL);
    }
    EXPECT_NULL("error sum dim=2 of a 2-D tensor", pt_sum(a, 2, false), DIMERR, "pt_sum", "2", NULL);
    EXPECT_NULL("error max dim=-3 of a 2-D tensor", pt_max(a, -3, false), DIMERR, "pt_max", "-3", NULL);
    EXPECT_NULL("error softmax dim=5", pt_softmax(a, 5), DIMERR, "pt_softmax", "5", NULL);
    EXPECT_NULL("error transpose 0,2 of a 2-D tensor", pt_transpose(a, 0, 2), DIMERR, "pt_transpose", "2", NULL);
    EXPECT_NULL("error narrow dim=1 10+5 of [7, 13]", pt_narrow(a, 1, 10, 5), DIMERR, "pt_narrow", "10", NULL);
    EXPECT_NULL("error narrow dim=4", pt_narrow(a, 4, 0, 1), DIMERR, "pt_narrow", "4", NULL);
    {
        int rep[2] = {0, 0};
        EXPECT_NULL("error permute with a repeated dim", pt_permute(a, rep), DIMERR, "pt_permute", NULL, NULL);
        int nd[2] = {0, 3};
        EXPECT_NULL("error norm_dims dim=3", pt_norm_dims(a, 2, nd), DIMERR, "pt_norm_dims", "3", NULL);
    }
    {
        int64_t s[2] = {10, 10}, s2[2] = {-1, -1}, s3[2] = {7, 12};
        EXPECT_NULL("error reshape [7, 13] to [10, 10]", pt_reshape(a, 2, s), ST(PT_ERR_SHAPE), "pt_reshape",
                    "[7, 13]", "[10, 10]");
        EXPECT_NULL("error reshape with two -1", pt_reshape(a, 2, s2), DIMERR, "pt_reshape", NULL, NULL);
        EXPECT_NULL("error expand [7, 13] to [7, 12]", pt_expand(a, 2, s3), ST(PT_ERR_SHAPE), "pt_expand", "[7, 13]",
                    "[7, 12]");
    }
    EXPECT_NULL("error max over an empty dim", pt_max(e0, 1, false), DIMERR, "pt_max", NULL, NULL);
    EXPECT_NULL("error argmax of an empty tensor", pt_argmax(e0, PT_ALL, false), DIMERR, "pt_argmax", NULL, NULL);
    EXPECT_NULL("error one_hot with 0 classes", pt_one_hot(ai, 0, PT_F32), ST(PT_ERR_DTYPE) | DIMERR, "pt_one_hot", NULL,
                NULL);
    {
        int64_t neg[2] = {3, -2}, many[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
        float data[4] = {0};
        EXPECT_NULL("error from_data with extent -2", pt_from_data(g_dev, PT_F32, 2, neg, data), DIMERR,
                    "pt_from_data", "-2", NULL);
        EXPECT_NULL("error from_data with 9 dims", pt_from_data(g_dev, PT_F32, 9, many, data), DIMERR, "pt_from_data",
                    "9", NULL);
        EXPECT_NULL("error from_data with NULL data", pt_from_data(g_dev, PT_F32, 2, many, NULL),
                    ST(PT_ERR_INVALID_ARGUMENT), "pt_from_data", NULL, NULL);
        EXPECT_NULL("error zeros on a NULL device", pt_zeros(NULL, PT_F32, 2, many), ST(PT_ERR_INVALID_ARGUMENT) |
                    ST(PT_ERR_NO_DEVICE), "pt_zeros", NULL, NULL);
        EXPECT_NULL("error arange with step 0", pt_arange(g_dev, PT_F32, 0, 1, 0), ST(PT_ERR_INVALID_ARGUMENT),
                    "pt_arange", NULL, NULL);
    }
    EXPECT_STATUS("error axpy_ f32 with i32", pt_axpy_(a, 1, ai), ST(PT_ERR_DTYPE), "pt_axpy_", "f32", "i32");
    EXPECT_STATUS("error axpy_ [7, 13] with [7, 12]", pt_axpy_(a, 1, b), ST(PT_ERR_SHAPE), "pt_axpy_", "[7, 13]",
                  "[7, 12]");
    EXPECT_STATUS("error copy_ [7, 12] into [7, 13]", pt_copy_(a, b), ST(PT_ERR_SHAPE), "pt_copy_", "[7, 13]",
                  "[7, 12]");
    EXPECT_STATUS("error fill_ NULL", pt_fill_(NULL, 1), ST(PT_ERR_INVALID_ARGUMENT), "pt_fill_", NULL, NULL);
    {
        float small[4];
        EXPECT_STATUS("error to_host into a too small buffer", pt_to_host(a, small, sizeof small),
                      ST(PT_ERR_INVALID_ARGUMENT), "pt_to_host", "16", "364");
        const char *name = "error item of [7, 13] is NAN";
        if (case_selected(name)) {
            pt_clear_error();
            double v = pt_item(a);
            if (!isnan(v)) report_fail(name, "got %g", v);
            else check_error(name, true, DIMERR, "pt_item", "[7, 13]", NULL);
        }
    }
    /* A NULL input returns NULL and keeps the first error untouched. */
    {
        const char *name = "error NULL inputs keep the first error";
        if (case_selected(name)) {
            pt_clear_error();
            pt_tensor *r1 = pt_add(a, b); /* the first error */
            char first[512];
            snprintf(first, sizeof first, "%s", pt_last_error());
            pt_status s1 = pt_last_status();
            pt_tensor *r2 = pt_exp(r1), *r3 = pt_mul(a, r1), *r4 = pt_sum(r1, 0, false), *r5 = pt_matmul(r1, a);
            pt_tensor *r6 = pt_transpose(r1, 0, 1), *r7 = pt_cast(r1, PT_F64), *r8 = pt_where(NULL, a, a);
            pt_tensor *r9 = pt_softmax(r1, 0), *r10 = pt_reshape(r1, 1, (int64_t[]){91});
            bool all_null = !r1 && !r2 && !r3 && !r4 && !r5 && !r6 && !r7 && !r8 && !r9 && !r10;
            if (!all_null) report_fail(name, "an op given NULL returned a tensor");
            else if (s1 != PT_ERR_SHAPE || pt_last_status() != s1 || strcmp(first, pt_last_error()) != 0)
                report_fail(name, "first error \"%s\" (%s) became \"%s\" (%s)", first, pt_status_name(s1),
                            pt_last_error(), pt_status_name(pt_last_status()));
            else report_pass(name);
            pt_clear_error();
        }
    }
    /* After errors, the library still works and a success leaves no error. */
    {
        const char *name = "error state does not stick: a valid op after failures";
        if (case_selected(name)) {
            pt_clear_error();
            pt_tensor *r = pt_add(a, a), *s = pt_sum(r, PT_ALL, false);
            double v = s ? pt_item(s) : NAN;
            if (!s || v != 182.0 || pt_last_status() != PT_OK)
                report_fail(name, "got %g (status %s: %s), expected 182", v, pt_status_name(pt_last_status()),
                            pt_last_error());
            else report_pass(name);
            pt_release(s);
            pt_release(r);
        }
    }
done:
    pt_release(a);
    pt_release(b);
    pt_release(ai);
    pt_release(bt);
    pt_release(cu8);
    pt_release(e0);
    pt_clear_error();
}
