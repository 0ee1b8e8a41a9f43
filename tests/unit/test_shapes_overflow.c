/* Shapes that do not fit: every path that makes a
 * shape — creation, pt_from_data, reshape, expand, cat, stack, matmul and
 * broadcast results — rejects one whose element count, span (the product
 * of the extents with 0 counted as 1, which the strides of an empty tensor
 * need) or byte size exceeds the limit, with PT_ERR_SHAPE and a message
 * naming the function and the shape, never a wrapped (negative) extent.
 * The limit (2^48 elements, docs/api-notes.md) is checked at its edge. */
#include <stdint.h>

#include "check.h"

static pt_device *cpu;

#define LIMIT ((int64_t)1 << 48)

/* The call returned NULL with PT_ERR_SHAPE, a message naming fn and the
 * text `names` (the shape), and no '-' sign anywhere in its numbers. */
static void expect_shape_error(pt_tensor *got, const char *fn, const char *names, int line) {
    char what[1400];
    snprintf(what, sizeof what, "%s returned NULL with PT_ERR_SHAPE (got %s, status %s: %s)", fn,
             got ? "a tensor" : "NULL", pt_status_name(pt_last_status()), pt_last_error());
    check_report(got == NULL && pt_last_status() == PT_ERR_SHAPE, __FILE__, line, what);
    const char *msg = pt_last_error();
    snprintf(what, sizeof what, "message names %s and %s (got \"%s\")", fn, names, msg);
    check_report(strstr(msg, fn) != NULL && strstr(msg, names) != NULL, __FILE__, line, what);
    bool negative = false; /* a -1 the caller wrote is not a wrapped value */
    for (const char *p = msg; !strchr(names, '-') && *p; ++p)
        if (*p == '-' && p[1] >= '0' && p[1] <= '9') negative = true;
    snprintf(what, sizeof what, "message prints no negative number (got \"%s\")", msg);
    check_report(!negative, __FILE__, line, what);
    if (got) pt_release(got);
    pt_clear_error();
}
#define EXPECT_SHAPE_ERROR(expr, fn, names) expect_shape_error((expr), fn, names, __LINE__)

/* Item 1: pt_reshape multiplied the known extents without a check, so
 * [(2^62 + 1), 4] had "4" elements and a narrow of it read far outside. */
static void test_reshape_wraps(void) {
    int64_t s4 = 4;
    pt_tensor *ones4 = pt_ones(cpu, PT_F32, 1, &s4);
    REQUIRE(ones4);
    int64_t wrap[2] = {((int64_t)1 << 62) + 1, 4};
    EXPECT_SHAPE_ERROR(pt_reshape(ones4, 2, wrap), "pt_reshape", "[4611686018427387905, 4]");
    /* With -1 the wrapped product 4 would infer an extent of 1. */
    int64_t wrap_infer[3] = {((int64_t)1 << 62) + 1, -1, 4};
    EXPECT_SHAPE_ERROR(pt_reshape(ones4, 3, wrap_infer), "pt_reshape", "[4611686018427387905, -1, 4]");
    int64_t huge[2] = {INT64_MAX, INT64_MAX};
    EXPECT_SHAPE_ERROR(pt_reshape(ones4, 2, huge), "pt_reshape", "[9223372036854775807, 9223372036854775807]");
    /* An empty tensor reshaped to extents whose strides would overflow. */
    int64_t s0 = 0;
    pt_tensor *empty = pt_empty(cpu, PT_F32, 1, &s0);
    REQUIRE(empty);
    int64_t empty_huge[3] = {0, (int64_t)1 << 40, (int64_t)1 << 40};
    EXPECT_SHAPE_ERROR(pt_reshape(empty, 3, empty_huge), "pt_reshape", "[0, 1099511627776, 1099511627776]");
    /* Right at the limit an empty reshape is fine, and the valid cases still work. */
    int64_t edge[3] = {0, (int64_t)1 << 24, (int64_t)1 << 24};
    pt_tensor *ok = pt_reshape(empty, 3, edge);
    CHECK_NOT_NULL(ok);
    if (ok) CHECK_INT(pt_tensor_strides(ok)[0], (int64_t)1 << 48);
    pt_release(ok);
    int64_t good[2] = {2, -1};
    ok = pt_reshape(ones4, 2, good);
    CHECK_NOT_NULL(ok);
    if (ok) CHECK_INT(pt_tensor_shape(ok)[1], 2);
    pt_release(ok);
    pt_release(empty);
    pt_release(ones4);
}

/* Item 2: creation of shapes that do not fit, by every constructor. */
static void test_creation(void) {
    int64_t empty_huge[3] = {0, (int64_t)1 << 40, (int64_t)1 << 40};
    const char *name = "[0, 1099511627776, 1099511627776]";
    EXPECT_SHAPE_ERROR(pt_empty(cpu, PT_F32, 3, empty_huge), "pt_empty", name);
    EXPECT_SHAPE_ERROR(pt_zeros(cpu, PT_F32, 3, empty_huge), "pt_zeros", name);
    EXPECT_SHAPE_ERROR(pt_ones(cpu, PT_F64, 3, empty_huge), "pt_ones", name);
    EXPECT_SHAPE_ERROR(pt_full(cpu, PT_I32, 3, empty_huge, 7), "pt_full", name);
    EXPECT_SHAPE_ERROR(pt_rand(cpu, PT_F32, 3, empty_huge), "pt_rand", name);
    EXPECT_SHAPE_ERROR(pt_randn(cpu, PT_F32, 3, empty_huge), "pt_randn", name);
    float one = 1.0f;
    EXPECT_SHAPE_ERROR(pt_from_data(cpu, PT_F32, 3, empty_huge, &one), "pt_from_data", name);
    int64_t big[2] = {(int64_t)1 << 32, (int64_t)1 << 32};
    EXPECT_SHAPE_ERROR(pt_empty(cpu, PT_U8, 2, big), "pt_empty", "[4294967296, 4294967296]");
    int64_t wraps[2] = {((int64_t)1 << 62) + 1, 4};
    EXPECT_SHAPE_ERROR(pt_zeros(cpu, PT_F32, 2, wraps), "pt_zeros", "[4611686018427387905, 4]");
    int64_t maxes[3] = {INT64_MAX, INT64_MAX, 0};
    EXPECT_SHAPE_ERROR(pt_empty(cpu, PT_F32, 3, maxes), "pt_empty", "[9223372036854775807, 9223372036854775807, 0]");
    int64_t zero_max[2] = {0, INT64_MAX};
    EXPECT_SHAPE_ERROR(pt_empty(cpu, PT_F32, 2, zero_max), "pt_empty", "[0, 9223372036854775807]");
    /* Just over and right at the limit, empty: the span counts. */
    int64_t over[2] = {0, LIMIT + 1};
    EXPECT_SHAPE_ERROR(pt_empty(cpu, PT_F32, 2, over), "pt_empty", "[0, 281474976710657]");
    int64_t at[3] = {LIMIT, 0, 1};
    pt_tensor *x = pt_empty(cpu, PT_F32, 3, at);
    CHECK_NOT_NULL(x);
    if (x) {
        CHECK_INT(pt_tensor_numel(x), 0);
        CHECK_INT(pt_tensor_strides(x)[0], 1);
    }
    pt_release(x);
}

/* Item 2: pt_expand to [2^32, 2^32] gave numel 0 and sums of 0; to [2^62]
 * pt_sum ran for ever. */
static void test_expand(void) {
    int64_t s1 = 1;
    pt_tensor *one = pt_ones(cpu, PT_F32, 1, &s1);
    REQUIRE(one);
    int64_t big[2] = {(int64_t)1 << 32, (int64_t)1 << 32};
    EXPECT_SHAPE_ERROR(pt_expand(one, 2, big), "pt_expand", "[4294967296, 4294967296]");
    int64_t s62 = (int64_t)1 << 62;
    EXPECT_SHAPE_ERROR(pt_expand(one, 1, &s62), "pt_expand", "[4611686018427387904]");
    int64_t over = LIMIT + 1;
    EXPECT_SHAPE_ERROR(pt_expand(one, 1, &over), "pt_expand", "[281474976710657]");
    int64_t empty_huge[3] = {0, (int64_t)1 << 40, (int64_t)1 << 40};
    EXPECT_SHAPE_ERROR(pt_expand(one, 3, empty_huge), "pt_expand", "[0, 1099511627776, 1099511627776]");
    /* At the limit the view exists and allocates nothing. */
    pt_tensor *v = pt_expand(one, 1, (int64_t[]){LIMIT});
    CHECK_NOT_NULL(v);
    if (v) CHECK_INT(pt_tensor_numel(v), LIMIT);
    pt_release(v);
    /* A small expand still sums correctly. */
    int64_t s3[2] = {3, 5};
    pt_tensor *e = pt_expand(one, 2, s3);
    pt_tensor *sum = pt_sum(e, PT_ALL, false);
    double got = 0;
    CHECK(check_read(sum, &got, 1));
    CHECK_DBL(got, 15.0, 0.0);
    pt_release(sum);
    pt_release(e);
    pt_release(one);
}

/* Item 2: pt_cat summed extents without a check; pt_stack too. */
static void test_cat_stack(void) {
    /* [0, 2^47] three times along dim 1 is 3 * 2^47 > 2^48. */
    int64_t s[2] = {0, (int64_t)1 << 47};
    pt_tensor *x = pt_empty(cpu, PT_F32, 2, s);
    REQUIRE(x);
    pt_tensor *three[3] = {x, x, x};
    EXPECT_SHAPE_ERROR(pt_cat(3, three, 1), "pt_cat", "[0, 140737488355328]");
    /* Along dim 0 they join fine: [0, 2^47]. */
    pt_tensor *ok = pt_cat(3, three, 0);
    CHECK_NOT_NULL(ok);
    pt_release(ok);
    /* 2^17 of [0, 2^47] add up to 2^64, which wraps to 0 in int64: the sum
     * itself must be checked, not only the result. */
    int n = 1 << 17;
    pt_tensor **many = malloc((size_t)n * sizeof *many);
    for (int i = 0; i < n; ++i) many[i] = x;
    EXPECT_SHAPE_ERROR(pt_cat(n, (pt_tensor *const *)many, 1), "pt_cat", "[0, 140737488355328]");
    EXPECT_SHAPE_ERROR(pt_cat(n, (pt_tensor *const *)many, -1), "pt_cat", "[0, 140737488355328]");
    /* pt_stack: 2^17 of [2^32] make 2^49 elements. */
    int64_t s32 = (int64_t)1 << 32;
    pt_tensor *u1 = pt_ones(cpu, PT_U8, 1, (int64_t[]){1});
    pt_tensor *e = pt_expand(u1, 1, &s32);
    pt_release(u1);
    REQUIRE(e);
    for (int i = 0; i < n; ++i) many[i] = e;
    EXPECT_SHAPE_ERROR(pt_stack(n, (pt_tensor *const *)many, 0), "pt_stack", "[131072, 4294967296]");
    /* and 2^17 [0, 2^47] stacked: [131072, 0, 2^47] has span 2^64. */
    for (int i = 0; i < n; ++i) many[i] = x;
    EXPECT_SHAPE_ERROR(pt_stack(n, (pt_tensor *const *)many, 0), "pt_stack", "[131072, 0, 140737488355328]");
    free(many);
    pt_release(e);
    pt_release(x);
}

/* Item 2: results of broadcasting and matmul. */
static void test_results(void) {
    int64_t col[2] = {(int64_t)1 << 30, 1}, row[2] = {1, (int64_t)1 << 30};
    pt_tensor *one = pt_ones(cpu, PT_F32, 1, (int64_t[]){1});
    REQUIRE(one);
    pt_tensor *a = pt_expand(one, 2, col), *b = pt_expand(one, 2, row);
    REQUIRE(a);
    REQUIRE(b);
    EXPECT_SHAPE_ERROR(pt_add(a, b), "pt_add", "[1073741824, 1073741824]");
    EXPECT_SHAPE_ERROR(pt_mul(a, b), "pt_mul", "[1073741824, 1073741824]");
    pt_tensor *cond = pt_gt(a, one);
    CHECK_NOT_NULL(cond);
    EXPECT_SHAPE_ERROR(pt_where(cond, a, b), "pt_where", "[1073741824, 1073741824]");
    pt_release(cond);
    /* matmul [2^30, 1] x [1, 2^30] -> [2^30, 2^30] */
    EXPECT_SHAPE_ERROR(pt_matmul(a, b), "pt_matmul", "[1073741824, 1073741824]");
    /* matmul [2^30, 0] x [0, 2^30]: no products, but the result's shape
     * still does not fit. */
    int64_t s0a[2] = {(int64_t)1 << 30, 0}, s0b[2] = {0, (int64_t)1 << 30};
    pt_tensor *za = pt_empty(cpu, PT_F32, 2, s0a), *zb = pt_empty(cpu, PT_F32, 2, s0b);
    REQUIRE(za);
    REQUIRE(zb);
    EXPECT_SHAPE_ERROR(pt_matmul(za, zb), "pt_matmul", "[1073741824, 1073741824]");
    pt_release(za);
    pt_release(zb);
    pt_release(a);
    pt_release(b);
    pt_release(one);
}

/* Ops on the largest empty shapes stay quiet (no overflow under UBSan). */
static void test_ops_on_big_empty(void) {
    int64_t s[3] = {0, (int64_t)1 << 24, (int64_t)1 << 24};
    pt_tensor *x = pt_zeros(cpu, PT_F32, 3, s);
    REQUIRE(x);
    pt_tensor *t = pt_transpose(x, 0, 2);
    CHECK_NOT_NULL(t);
    pt_tensor *c = pt_contiguous(t);
    CHECK_NOT_NULL(c);
    pt_tensor *y = pt_add(x, x);
    CHECK_NOT_NULL(y);
    pt_tensor *r = pt_sum(x, 2, true); /* [0, 2^24, 1] */
    CHECK_NOT_NULL(r);
    pt_tensor *r1 = pt_sum(x, 1, false); /* [0, 2^24] */
    CHECK_NOT_NULL(r1);
    pt_tensor *n = pt_narrow(x, 1, ((int64_t)1 << 24) - 1, 1);
    CHECK_NOT_NULL(n);
    pt_release(n);
    pt_release(r1);
    pt_release(r);
    pt_release(y);
    pt_release(c);
    pt_release(t);
    pt_release(x);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    cpu = pt_cpu();
    if (!cpu) {
        printf("no cpu device: %s\n", pt_last_error());
        return 1;
    }
    test_reshape_wraps();
    test_creation();
    test_expand();
    test_cat_stack();
    test_results();
    test_ops_on_big_empty();
    return check_summary();
}
