/* Misuse of the CNN layers, the window ops and the small host helpers: each
 * case is a minimal repro of a crash, an overflow, a silently wrong answer
 * or a message naming an inner function, with the status, message and
 * values that must come back instead. Runs on cpu with two cpu devices
 * (PORTABLE_CPU_DEVICES=2), under ASan + UBSan in the sanitizer build. */
#include "check.h"

/* The last error starts with "fn: ". */
#define CHECK_NAMES(fn)                                                                            \
    do {                                                                                           \
        char w_[1400];                                                                             \
        snprintf(w_, sizeof w_, "the message starts with %s: (got \"%s\")", fn, pt_last_error());  \
        check_report(strncmp(pt_last_error(), fn ": ", strlen(fn) + 2) == 0, __FILE__, __LINE__, w_); \
    } while (0)

static pt_tensor *image(int64_t h, int64_t w) {
    float v[16];
    for (int i = 0; i < 16; ++i) v[i] = (float)((i * 7) % 16);
    int64_t shape[4] = {1, 1, h, w};
    return pt_from_data(pt_cpu(), PT_F32, 4, shape, v);
}

/* Running statistics come in pairs: one alone used to crash (mean without
 * var) or be ignored silently (var without mean). */
static void batch_norm_half_running_stats(void) {
    int64_t xs[2] = {4, 3}, cs[1] = {3};
    pt_tensor *x = pt_randn(pt_cpu(), PT_F32, 2, xs), *mean = pt_zeros(pt_cpu(), PT_F32, 1, cs),
              *var = pt_ones(pt_cpu(), PT_F32, 1, cs);
    REQUIRE(x);
    REQUIRE(mean);
    REQUIRE(var);
    for (int training = 0; training < 2; ++training)
        for (int which = 0; which < 2; ++which) {
            pt_clear_error();
            pt_tensor *y = pt_f_batch_norm(x, which ? mean : NULL, which ? NULL : var, NULL, NULL, training, 0.1, 1e-5);
            CHECK(y == NULL);
            CHECK_LAST(PT_ERR_INVALID_ARGUMENT);
            CHECK_NAMES("pt_f_batch_norm");
            CHECK_HAS(pt_last_error(), "pass both or neither");
        }
    double v[3];
    CHECK(check_read(var, v, 3));
    CHECK(v[0] == 1 && v[1] == 1 && v[2] == 1); /* untouched */
    pt_tensor *y = pt_f_batch_norm(x, mean, var, NULL, NULL, true, 0.5, 1e-5);
    CHECK_NOT_NULL(y);
    pt_release(y);
    pt_release(x);
    pt_release(mean);
    pt_release(var);
}

/* Only the library's own device handles, not addresses inside them. */
static void default_device_handles_only(void) {
    pt_device *inside = (pt_device *)((char *)pt_cpu() + 8);
    CHECK_INT(pt_set_default_device(inside), PT_ERR_INVALID_ARGUMENT);
    CHECK_NAMES("pt_set_default_device");
    CHECK(pt_default_device() == pt_device_get("cpu:0"));
    pt_device *second = pt_device_get("cpu:1");
    REQUIRE(second);
    CHECK_OK(pt_set_default_device(second));
    CHECK(pt_default_device() == second);
    CHECK_OK(pt_set_default_device(NULL));
}

/* Window extents whose span overflows int64, and kernels beyond what the
 * tape records: PT_ERR_SHAPE naming the numbers, never a wrapped size. */
static void window_extents_overflow(void) {
    pt_tensor *x = image(4, 4);
    REQUIRE(x);
    const int64_t big = ((int64_t)1 << 34) + 1;
    pt_window2d w = {{big, 1}, {1, 1}, {0, 0}, {(int64_t)1 << 30, 1}};
    pt_clear_error();
    CHECK(pt_im2col(x, &w, 0.0) == NULL);
    CHECK_LAST(PT_ERR_SHAPE);
    CHECK_NAMES("pt_im2col");
    CHECK_HAS(pt_last_error(), "17179869185");
    CHECK(pt_max_pool2d_window(x, &w) == NULL);
    CHECK_LAST(PT_ERR_SHAPE);
    CHECK_NAMES("pt_max_pool2d_window");

    /* a kernel of 2^32 + 3 used to pass forward and fail in backward */
    pt_window2d wide = {{1, ((int64_t)1 << 32) + 3}, {1, 1}, {0, 0}, {1, 1}};
    CHECK(pt_max_pool2d_window(x, &wide) == NULL);
    CHECK_LAST(PT_ERR_SHAPE);
    CHECK_HAS(pt_last_error(), "4294967299");

    /* through conv2d: an expanded (stride 0) weight of that height */
    int64_t one[4] = {1, 1, 1, 1}, tall[4] = {1, 1, big, 1};
    pt_tensor *w1 = pt_ones(pt_cpu(), PT_F32, 4, one);
    pt_tensor *weight = pt_expand(w1, 4, tall);
    REQUIRE(weight);
    pt_conv2d_opts o = {{1, 1}, {0, 0}, {(int64_t)1 << 30, 1}, 1};
    CHECK(pt_f_conv2d(x, weight, NULL, &o) == NULL);
    CHECK_LAST(PT_ERR_SHAPE);
    CHECK_NAMES("pt_f_conv2d");

    /* a layer whose fan-in product would overflow is refused when made */
    const int64_t huge = (int64_t)1 << 40;
    CHECK(pt_conv2d(4, huge, huge, NULL, true) == NULL);
    CHECK_LAST(PT_ERR_INVALID_ARGUMENT);
    CHECK_NAMES("pt_conv2d");
    pt_release(weight);
    pt_release(w1);
    pt_release(x);
}

/* Pools report errors under the function the caller called. */
static void pool_messages_name_the_caller(void) {
    pt_tensor *x = image(4, 4);
    REQUIRE(x);
    pt_pool2d_opts o = {{1, ((int64_t)1 << 32) + 3}, {1, 1}, {0, 0}};
    CHECK(pt_f_max_pool2d(x, &o) == NULL);
    CHECK_LAST(PT_ERR_SHAPE);
    CHECK_NAMES("pt_f_max_pool2d");
    CHECK(pt_f_avg_pool2d(x, &o) == NULL);
    CHECK_LAST(PT_ERR_SHAPE);
    CHECK_NAMES("pt_f_avg_pool2d");
    pt_release(x);
}

/* Unpool indices must each be a tap of their own window, as pt_gather's
 * are checked: out of the image, negative, or in another window. */
static void unpool_bad_indices(void) {
    pt_tensor *x = image(4, 4);
    pt_window2d w = {{2, 2}, {2, 2}, {0, 0}, {1, 1}};
    pt_tensor *idx = pt_max_pool2d_indices(x, &w);
    REQUIRE(x);
    REQUIRE(idx);
    int64_t got[4];
    CHECK_OK(pt_to_host(idx, got, sizeof got));
    float gv[4] = {1, 2, 3, 4};
    int64_t gs[4] = {1, 1, 2, 2};
    pt_tensor *g = pt_from_data(pt_cpu(), PT_F32, 4, gs, gv);
    pt_tensor *good = pt_max_unpool2d(g, idx, &w, 4, 4);
    REQUIRE(good);
    double back[16];
    CHECK(check_read(good, back, 16));
    double sum = 0;
    for (int i = 0; i < 16; ++i) sum += back[i];
    CHECK_DBL(sum, 10.0, 0);
    CHECK_DBL(back[got[3]], 4.0, 0);
    pt_release(good);
    const int64_t bad[3] = {1000000000000LL, -3, 10}; /* 10 = (2, 2): window (1, 1)'s, not (0, 0)'s */
    for (int k = 0; k < 3; ++k) {
        int64_t v[4] = {bad[k], got[1], got[2], got[3]};
        pt_tensor *b = pt_from_data(pt_cpu(), PT_I64, 4, gs, v);
        pt_clear_error();
        CHECK(pt_max_unpool2d(g, b, &w, 4, 4) == NULL);
        CHECK_LAST(PT_ERR_INVALID_ARGUMENT);
        CHECK_NAMES("pt_max_unpool2d");
        char want[64];
        snprintf(want, sizeof want, "indices value %lld at position [0, 0, 0, 0]", (long long)bad[k]);
        CHECK_HAS(pt_last_error(), want);
        pt_release(b);
    }
    pt_release(g);
    pt_release(idx);
    pt_release(x);
}

/* No value to average: refused, not NaN (torch refuses too). */
static void adaptive_pool_empty_image(void) {
    int64_t s[4] = {1, 2, 0, 0};
    pt_tensor *x = pt_zeros(pt_cpu(), PT_F32, 4, s);
    REQUIRE(x);
    pt_clear_error();
    CHECK(pt_adaptive_avg_pool2d(x, 1, 1) == NULL);
    CHECK_LAST(PT_ERR_SHAPE);
    CHECK_NAMES("pt_adaptive_avg_pool2d");
    CHECK_HAS(pt_last_error(), "0x0");
    pt_release(x);
}

/* The host converters refuse NULL buffers instead of dereferencing them. */
static void converters_null(void) {
    float f[2] = {1.5f, -2.0f};
    uint16_t h[2] = {0, 0};
    CHECK_INT(pt_f32_to_f16(NULL, h, 2), PT_ERR_INVALID_ARGUMENT);
    CHECK_NAMES("pt_f32_to_f16");
    CHECK_HAS(pt_last_error(), "src is NULL for 2 elements");
    CHECK_INT(pt_f16_to_f32(h, NULL, 2), PT_ERR_INVALID_ARGUMENT);
    CHECK_NAMES("pt_f16_to_f32");
    CHECK_INT(pt_f32_to_bf16(NULL, NULL, 1), PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "src and dst are NULL");
    CHECK_INT(pt_bf16_to_f32(NULL, f, 1), PT_ERR_INVALID_ARGUMENT);
    CHECK_NAMES("pt_bf16_to_f32");
    CHECK_OK(pt_f32_to_f16(NULL, NULL, 0)); /* nothing to convert */
    CHECK_OK(pt_f32_to_f16(f, h, 2));
    CHECK_INT(h[0], 0x3e00);
    CHECK_INT(h[1], 0xc000);
}

/* A layer norm on another device than its input: a device mismatch, not a
 * dtype error; its message starts with the function called. */
static void layer_norm_device_mismatch(void) {
    int64_t s[1] = {3}, xs[2] = {2, 3};
    pt_module *ln = pt_layer_norm(1, s, 1e-5);
    pt_device *second = pt_device_get("cpu:1");
    pt_tensor *x = second ? pt_ones(second, PT_F32, 2, xs) : NULL;
    REQUIRE(ln);
    REQUIRE(x);
    pt_clear_error();
    CHECK(pt_module_forward(ln, x) == NULL);
    CHECK_LAST(PT_ERR_DEVICE_MISMATCH);
    CHECK_NAMES("pt_module_forward");
    CHECK_HAS(pt_last_error(), "cpu:1");
    pt_release(x);
    pt_module_free(ln);
}

/* What the headers say about 16-bit types holds. */
static void half_types_as_documented(void) {
    int64_t s[2] = {2, 2};
    pt_tensor *r = pt_rand(pt_cpu(), PT_F16, 2, s);
    REQUIRE(r);
    double v[4];
    CHECK(check_read(pt_cast(r, PT_F32), v, 4));
    for (int i = 0; i < 4; ++i) CHECK(v[i] >= 0 && v[i] < 1);
    pt_tensor *b = pt_ones(pt_cpu(), PT_BF16, 2, s);
    pt_clear_error();
    CHECK(pt_matmul(r, b) == NULL);
    CHECK_LAST(PT_ERR_DTYPE);
    CHECK_NAMES("pt_matmul");
    pt_release(b);
    pt_release(r);
}

int main(void) {
    pt_scope scope = pt_scope_begin();
    batch_norm_half_running_stats();
    default_device_handles_only();
    window_extents_overflow();
    pool_messages_name_the_caller();
    unpool_bad_indices();
    adaptive_pool_empty_image();
    converters_null();
    layer_norm_device_mismatch();
    half_types_as_documented();
    pt_scope_end(scope);
    return check_summary();
}
