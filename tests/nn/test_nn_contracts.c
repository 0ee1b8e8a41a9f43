/* Contracts of the nets API:
 * - pt_sequential refuses a module listed twice, or one another container
 *   owns, naming the index and leaving every module usable (listing one
 *   twice used to free it and then read it: a use-after-free);
 * - pt_mse_loss refuses mixed or integer dtypes and other devices as nn.h
 *   promises, pt_cross_entropy says PT_ERR_DTYPE for a dtype problem;
 * - every optimizer hyper-parameter is finite and in its range, else
 *   PT_ERR_INVALID_ARGUMENT naming the parameter, the value and the range.
 * Run with PORTABLE_CPU_DEVICES=2 (the device-mismatch cases). */
#include <string.h>

#include "nn_test.h"

static pt_device *dev;

/* NULL result, status s, and a message containing each of the texts. */
static void expect_error(const void *got, pt_status s, const char *const *texts, int line) {
    const char *msg = pt_last_error();
    bool has = true;
    for (const char *const *t = texts; *t; ++t) has = has && strstr(msg, *t) != NULL;
    NN_CHECK(got == NULL && pt_last_status() == s && has,
             "line %d: want NULL + %s with a message naming every expected text, got %s + %s",
             line, pt_status_name(s), got ? "non-NULL" : "NULL", pt_status_name(pt_last_status()));
    pt_clear_error();
}
#define EXPECT_ERROR(got, s, ...) expect_error((got), (s), (const char *const[]){__VA_ARGS__, NULL}, __LINE__)

/* m still runs: a forward of ones [2, 3] gives a [2, out] result. */
static bool runs(pt_module *m, int64_t out) {
    int64_t s[2] = {2, 3};
    pt_tensor *x = pt_ones(dev, PT_F32, 2, s);
    pt_tensor *y = pt_module_forward(m, x);
    bool ok = y && pt_tensor_ndim(y) == 2 && pt_tensor_shape(y)[1] == out;
    pt_release(y);
    pt_release(x);
    return ok;
}

/* ---- Item 3: pt_sequential ---- */

static void test_sequential_duplicates(void) {
    pt_module *r = pt_relu_module();
    /* The repro: one module listed twice. */
    EXPECT_ERROR(pt_sequential(2, (pt_module *[]){r, r}), PT_ERR_INVALID_ARGUMENT, "pt_sequential",
                 "modules[1]", "modules[0]");
    NN_CHECK(runs(r, 3), "the module listed twice is still usable");

    /* Listed twice among others: nothing is taken, every module still works. */
    pt_module *a = pt_linear(4), *b = pt_linear(5);
    EXPECT_ERROR(pt_sequential(4, (pt_module *[]){a, r, b, r}), PT_ERR_INVALID_ARGUMENT,
                 "pt_sequential", "modules[3]");
    NN_CHECK(runs(a, 4) && runs(b, 5) && runs(r, 3), "all four entries still usable");

    /* A module another sequential owns: refused, the others left to the caller. */
    pt_module *owner = pt_sequential(1, (pt_module *[]){a});
    NN_CHECK(owner != NULL, "a sequential owning a");
    EXPECT_ERROR(pt_sequential(2, (pt_module *[]){b, a}), PT_ERR_INVALID_ARGUMENT, "pt_sequential",
                 "modules[1]", "another");
    NN_CHECK(runs(b, 5), "b was not freed by the failed call");
    NN_CHECK(runs(owner, 4), "the owner still runs its child");
    /* The owner itself listed with its own child. */
    EXPECT_ERROR(pt_sequential(2, (pt_module *[]){owner, a}), PT_ERR_INVALID_ARGUMENT,
                 "pt_sequential", "modules[1]");
    NN_CHECK(runs(owner, 4), "the owner still usable");

    /* A duplicate next to a failed constructor: still refused as a
     * duplicate, and nothing is freed (the caller keeps its modules). */
    pt_clear_error();
    EXPECT_ERROR(pt_sequential(3, (pt_module *[]){r, NULL, r}), PT_ERR_INVALID_ARGUMENT,
                 "pt_sequential", "modules[2]");
    NN_CHECK(runs(r, 3), "r still usable");

    /* Good lists still work and own their modules. */
    pt_module *seq = pt_sequential(2, (pt_module *[]){b, r});
    NN_CHECK(seq != NULL && runs(seq, 5), "b then r");
    pt_module_free(seq); /* frees b and r */
    pt_module_free(owner); /* frees a */
    pt_clear_error();
}

/* ---- Item 13: losses ---- */

static void test_loss_dtypes(void) {
    int64_t s[2] = {2, 3};
    pt_tensor *p32 = pt_ones(dev, PT_F32, 2, s), *t64 = pt_zeros(dev, PT_F64, 2, s);
    pt_tensor *t32 = pt_zeros(dev, PT_F32, 2, s), *i32 = pt_zeros(dev, PT_I32, 2, s);
    /* The repro: f32 pred with an f64 target gave an f64 loss. */
    EXPECT_ERROR(pt_mse_loss(p32, t64), PT_ERR_DTYPE, "pt_mse_loss", "f32", "f64", "pt_cast");
    EXPECT_ERROR(pt_mse_loss(t64, p32), PT_ERR_DTYPE, "pt_mse_loss", "f64", "f32");
    EXPECT_ERROR(pt_mse_loss(i32, i32), PT_ERR_DTYPE, "pt_mse_loss", "i32");
    EXPECT_ERROR(pt_mse_loss(p32, i32), PT_ERR_DTYPE, "pt_mse_loss", "i32");
    pt_tensor *ok = pt_mse_loss(p32, t32);
    double v = ok ? pt_item(ok) : -1;
    NN_CHECK(ok && pt_tensor_dtype(ok) == PT_F32 && v == 1.0, "same dtypes still work (loss %g)", v);
    pt_release(ok);
    pt_device *cpu1 = pt_device_get("cpu:1");
    if (cpu1) {
        pt_tensor *far = pt_zeros(cpu1, PT_F32, 2, s);
        EXPECT_ERROR(pt_mse_loss(p32, far), PT_ERR_DEVICE_MISMATCH, "pt_mse_loss", "cpu:1");
        pt_release(far);
    }

    /* Cross-entropy: a dtype problem is PT_ERR_DTYPE, a shape problem PT_ERR_SHAPE. */
    int64_t n = 2;
    pt_tensor *labels = pt_zeros(dev, PT_I64, 1, &n), *flabels = pt_zeros(dev, PT_F32, 1, &n);
    EXPECT_ERROR(pt_cross_entropy(i32, labels), PT_ERR_DTYPE, "pt_cross_entropy", "i32");
    EXPECT_ERROR(pt_cross_entropy(p32, flabels), PT_ERR_DTYPE, "pt_cross_entropy", "f32");
    EXPECT_ERROR(pt_cross_entropy(labels, labels), PT_ERR_DTYPE, "pt_cross_entropy", "i64");
    pt_tensor *flat = pt_ones(dev, PT_F32, 1, &n);
    EXPECT_ERROR(pt_cross_entropy(flat, labels), PT_ERR_SHAPE, "pt_cross_entropy", "[2]");
    pt_tensor *ce = pt_cross_entropy(p32, labels);
    NN_CHECK(ce != NULL, "valid cross-entropy");
    pt_release(ce);
    pt_release(flat);
    pt_release(labels);
    pt_release(flabels);
    pt_release(p32);
    pt_release(t64);
    pt_release(t32);
    pt_release(i32);
}

/* ---- Item 13: optimizer hyper-parameters ---- */

static void test_optimizer_ranges(void) {
    pt_module *lin = pt_linear_sized(3, 2);
    const double inf = INFINITY, nan = NAN;
    /* The repro: momentum inf was accepted and the weights became -inf. */
    EXPECT_ERROR(pt_sgd(lin, 0.1, inf, 0), PT_ERR_INVALID_ARGUMENT, "pt_sgd", "momentum", "inf", "[0, 1)");
    EXPECT_ERROR(pt_sgd(lin, 0.1, nan, 0), PT_ERR_INVALID_ARGUMENT, "pt_sgd", "momentum", "nan");
    EXPECT_ERROR(pt_sgd(lin, 0.1, -0.5, 0), PT_ERR_INVALID_ARGUMENT, "pt_sgd", "momentum", "-0.5");
    EXPECT_ERROR(pt_sgd(lin, 0.1, 1.0, 0), PT_ERR_INVALID_ARGUMENT, "pt_sgd", "momentum", "1");
    EXPECT_ERROR(pt_sgd(lin, inf, 0, 0), PT_ERR_INVALID_ARGUMENT, "pt_sgd", "lr", "inf", "finite");
    EXPECT_ERROR(pt_sgd(lin, nan, 0, 0), PT_ERR_INVALID_ARGUMENT, "pt_sgd", "lr", "nan");
    EXPECT_ERROR(pt_sgd(lin, 0, 0, 0), PT_ERR_INVALID_ARGUMENT, "pt_sgd", "lr", "0");
    EXPECT_ERROR(pt_sgd(lin, -1, 0, 0), PT_ERR_INVALID_ARGUMENT, "pt_sgd", "lr", "-1");
    EXPECT_ERROR(pt_sgd(lin, 0.1, 0, inf), PT_ERR_INVALID_ARGUMENT, "pt_sgd", "weight_decay", "inf");
    EXPECT_ERROR(pt_sgd(lin, 0.1, 0, nan), PT_ERR_INVALID_ARGUMENT, "pt_sgd", "weight_decay", "nan");
    EXPECT_ERROR(pt_sgd(lin, 0.1, 0, -1e-4), PT_ERR_INVALID_ARGUMENT, "pt_sgd", "weight_decay", "-0.0001");
    EXPECT_ERROR(pt_sgd(NULL, 0.1, 0, 0), PT_ERR_INVALID_ARGUMENT, "pt_sgd", "module");

    EXPECT_ERROR(pt_adam(lin, inf, 0.9, 0.999, 1e-8, 0), PT_ERR_INVALID_ARGUMENT, "pt_adam", "lr", "inf");
    EXPECT_ERROR(pt_adam(lin, 0, 0.9, 0.999, 1e-8, 0), PT_ERR_INVALID_ARGUMENT, "pt_adam", "lr", "0");
    EXPECT_ERROR(pt_adam(lin, 1e-3, 1.0, 0.999, 1e-8, 0), PT_ERR_INVALID_ARGUMENT, "pt_adam", "beta1", "1", "[0, 1)");
    EXPECT_ERROR(pt_adam(lin, 1e-3, nan, 0.999, 1e-8, 0), PT_ERR_INVALID_ARGUMENT, "pt_adam", "beta1", "nan");
    EXPECT_ERROR(pt_adam(lin, 1e-3, -0.1, 0.999, 1e-8, 0), PT_ERR_INVALID_ARGUMENT, "pt_adam", "beta1", "-0.1");
    EXPECT_ERROR(pt_adam(lin, 1e-3, 0.9, inf, 1e-8, 0), PT_ERR_INVALID_ARGUMENT, "pt_adam", "beta2", "inf");
    EXPECT_ERROR(pt_adam(lin, 1e-3, 0.9, 1.5, 1e-8, 0), PT_ERR_INVALID_ARGUMENT, "pt_adam", "beta2", "1.5");
    EXPECT_ERROR(pt_adam(lin, 1e-3, 0.9, 0.999, inf, 0), PT_ERR_INVALID_ARGUMENT, "pt_adam", "eps", "inf");
    EXPECT_ERROR(pt_adam(lin, 1e-3, 0.9, 0.999, nan, 0), PT_ERR_INVALID_ARGUMENT, "pt_adam", "eps", "nan");
    EXPECT_ERROR(pt_adam(lin, 1e-3, 0.9, 0.999, -1e-8, 0), PT_ERR_INVALID_ARGUMENT, "pt_adam", "eps", "-1e-08");
    EXPECT_ERROR(pt_adam(lin, 1e-3, 0.9, 0.999, 1e-8, inf), PT_ERR_INVALID_ARGUMENT, "pt_adam", "weight_decay", "inf");
    EXPECT_ERROR(pt_adam(lin, 1e-3, 0.9, 0.999, 1e-8, -1), PT_ERR_INVALID_ARGUMENT, "pt_adam", "weight_decay", "-1");

    /* In range: made, and set_lr checks the same way. */
    pt_optimizer *sgd = pt_sgd(lin, 0.1, 0.9, 1e-4);
    NN_CHECK(sgd != NULL, "pt_sgd with usual values");
    pt_optimizer *sgd0 = pt_sgd(lin, 0.1, 0, 0);
    NN_CHECK(sgd0 != NULL, "pt_sgd without momentum");
    pt_optimizer *adam = pt_adam(lin, 1e-3, 0.9, 0.999, 1e-8, 0);
    NN_CHECK(adam != NULL, "pt_adam with usual values");
    pt_optimizer *adam0 = pt_adam(lin, 1e-3, 0, 0, 0, 0);
    NN_CHECK(adam0 != NULL, "pt_adam at the low ends of its ranges");
    NN_CHECK(pt_optimizer_set_lr(sgd, inf) == PT_ERR_INVALID_ARGUMENT &&
                 strstr(pt_last_error(), "pt_optimizer_set_lr") && strstr(pt_last_error(), "inf"),
             "set_lr inf refused");
    NN_CHECK(pt_optimizer_set_lr(sgd, nan) == PT_ERR_INVALID_ARGUMENT, "set_lr nan refused");
    NN_CHECK(pt_optimizer_set_lr(sgd, 0) == PT_ERR_INVALID_ARGUMENT, "set_lr 0 refused");
    NN_CHECK(pt_optimizer_set_lr(sgd, 0.05) == PT_OK, "set_lr 0.05");
    pt_optimizer_free(sgd);
    pt_optimizer_free(sgd0);
    pt_optimizer_free(adam);
    pt_optimizer_free(adam0);
    pt_module_free(lin);
    pt_clear_error();
}

/* With an argument, runs only that part: sequential, losses or optimizers. */
int main(int argc, char **argv) {
    nn_begin();
    const char *only = argc > 1 ? argv[1] : NULL;
    dev = pt_cpu();
    if (!dev) {
        printf("no cpu: %s\n", pt_last_error());
        return 1;
    }
    if (!only || strcmp(only, "sequential") == 0) test_sequential_duplicates();
    if (!only || strcmp(only, "losses") == 0) test_loss_dtypes();
    if (!only || strcmp(only, "optimizers") == 0) test_optimizer_ranges();
    return nn_finish();
}
