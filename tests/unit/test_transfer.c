/* Moving tensors: pt_to on the same device returns the same tensor (retained),
 * between cpu:0 and cpu:1 (PORTABLE_CPU_DEVICES=2) copies values and storage,
 * pt_to_async + pt_device_synchronize, pt_to_host buffer checks, pt_item. */
#include "check.h"

static pt_device *c0, *c1;

static void test_to_same_device(void) {
    pt_tensor *x = pt_arange(c0, PT_F32, 0, 6, 1);
    REQUIRE(x);
    pt_tensor *y = pt_to(x, c0);
    CHECK(y == x);
    pt_release(y); /* the extra reference */
    double v[6];
    CHECK(check_read(x, v, 6)); /* x is still alive */
    CHECK_DBL(v[5], 5, 0);
    pt_tensor *z = pt_to_async(x, c0);
    CHECK(z == x);
    pt_release(z);
    pt_release(x);
}

static void test_to_other_device(void) {
    int64_t s[2] = {3, 4};
    pt_tensor *a = pt_arange(c0, PT_I64, 0, 12, 1);
    pt_tensor *x = pt_reshape(a, 2, s);
    REQUIRE(x);
    pt_tensor *y = pt_to(x, c1);
    REQUIRE(y);
    CHECK(y != x);
    CHECK(pt_tensor_device(y) == c1);
    CHECK(!pt_tensor_shares_storage(x, y));
    CHECK_INT(pt_tensor_dtype(y), PT_I64);
    CHECK_INT(pt_tensor_ndim(y), 2);
    CHECK_INT(pt_tensor_shape(y)[1], 4);
    double v[12];
    CHECK(check_read(y, v, 12));
    for (int i = 0; i < 12; ++i) CHECK_DBL(v[i], i, 0);
    /* a copy: changing the source later does not change it */
    CHECK_OK(pt_fill_(x, -1));
    CHECK(check_read(y, v, 12));
    CHECK_DBL(v[7], 7, 0);
    /* a non-contiguous view arrives in logical order */
    pt_tensor *t = pt_transpose(y, 0, 1);
    pt_tensor *back = pt_to(t, c0);
    REQUIRE(back);
    CHECK(pt_tensor_device(back) == c0);
    CHECK_INT(pt_tensor_shape(back)[0], 4);
    CHECK(check_read(back, v, 12));
    double e[12] = {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11};
    for (int i = 0; i < 12; ++i) CHECK_DBL(v[i], e[i], 0);
    /* ops on the moved tensor run on its device */
    pt_tensor *sum = pt_sum(y, PT_ALL, false);
    CHECK(pt_tensor_device(sum) == c1);
    CHECK_DBL(pt_item(sum), 66, 0);
    /* copy_ takes a source from another device */
    CHECK_OK(pt_copy_(x, y));
    CHECK(check_read(x, v, 12));
    CHECK_DBL(v[11], 11, 0);
    pt_release(sum);
    pt_release(back);
    pt_release(t);
    pt_release(y);
    pt_release(x);
    pt_release(a);
}

static void test_to_async(void) {
    int64_t n = 100000;
    pt_tensor *x = pt_full(c0, PT_F32, 1, &n, 2.5);
    REQUIRE(x);
    pt_tensor *y = pt_to_async(x, c1);
    REQUIRE(y);
    CHECK_OK(pt_device_synchronize(c0));
    CHECK(pt_tensor_device(y) == c1);
    pt_tensor *s = pt_sum(y, PT_ALL, false);
    CHECK_DBL(pt_item(s), 250000, 0);
    pt_release(s);
    pt_release(y);
    pt_release(x);
}

static void test_to_host(void) {
    pt_tensor *x = pt_arange(c0, PT_F64, 0, 4, 1);
    REQUIRE(x);
    double buf[8] = {-9, -9, -9, -9, -9, -9, -9, -9};
    pt_clear_error();
    CHECK(pt_to_host(x, buf, 3 * sizeof(double)) == PT_ERR_INVALID_ARGUMENT);
    CHECK_LAST(PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "pt_to_host");
    CHECK_HAS(pt_last_error(), "24");
    CHECK_HAS(pt_last_error(), "32");
    CHECK_DBL(buf[0], -9, 0); /* nothing written */
    pt_clear_error();
    CHECK_OK(pt_to_host(x, buf, sizeof buf)); /* larger is fine */
    CHECK_DBL(buf[3], 3, 0);
    CHECK_DBL(buf[4], -9, 0);
    CHECK(pt_to_host(x, NULL, 32) != PT_OK);
    pt_clear_error();
    CHECK(pt_to_host(NULL, buf, sizeof buf) != PT_OK);
    pt_clear_error();
    /* an empty tensor copies nothing and succeeds */
    int64_t z = 0;
    pt_tensor *e = pt_zeros(c0, PT_F32, 1, &z);
    CHECK_OK(pt_to_host(e, NULL, 0));
    pt_release(e);
    pt_release(x);
}

static void test_item(void) {
    int64_t s22[2] = {2, 2}, s11[2] = {1, 1};
    pt_tensor *m = pt_full(c0, PT_F32, 2, s22, 1.5);
    pt_tensor *one = pt_full(c1, PT_F32, 2, s11, -0.25);
    pt_tensor *i0 = pt_full(c0, PT_I64, 0, NULL, 123456789);
    pt_tensor *u0 = pt_full(c0, PT_U8, 0, NULL, 250);
    pt_clear_error();
    double v = pt_item(m);
    CHECK(isnan(v));
    CHECK(pt_last_status() == PT_ERR_SHAPE || pt_last_status() == PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "pt_item");
    CHECK_HAS(pt_last_error(), "[2, 2]");
    pt_clear_error();
    CHECK_DBL(pt_item(one), -0.25, 0);
    CHECK_DBL(pt_item(i0), 123456789, 0);
    CHECK_DBL(pt_item(u0), 250, 0);
    CHECK_LAST(PT_OK);
    pt_release(m);
    pt_release(one);
    pt_release(i0);
    pt_release(u0);
}

static void test_bad_targets(void) {
    pt_tensor *x = pt_zeros(c0, PT_F32, 0, NULL);
    pt_clear_error();
    CHECK(pt_to(x, NULL) == NULL);
    CHECK(pt_last_status() != PT_OK);
    CHECK_HAS(pt_last_error(), "pt_to");
    pt_clear_error();
    CHECK(pt_to(NULL, c1) == NULL);
    CHECK_LAST(PT_ERR_INVALID_ARGUMENT); /* NULL input, nothing pending: it is the error */
    CHECK_HAS(pt_last_error(), "pt_to: x is NULL");
    pt_release(x);
}

int main(void) {
    c0 = pt_device_get("cpu:0");
    c1 = pt_device_get("cpu:1");
    if (!c0 || !c1) {
        printf("need cpu:0 and cpu:1 (PORTABLE_CPU_DEVICES=2): %s\n", pt_last_error());
        return 1;
    }
    test_to_same_device();
    test_to_other_device();
    test_to_async();
    test_to_host();
    test_item();
    test_bad_targets();
    return check_summary();
}
