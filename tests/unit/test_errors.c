/* Errors: the status table, the thread-local last error, messages that name
 * the function and the values, NULL short-circuiting, and device mismatch
 * between cpu:0 and cpu:1 (run with PORTABLE_CPU_DEVICES=2). */
#include <pthread.h>

#include "check.h"

static void test_status_table(void) {
#define X(name, message)                                                                           \
    CHECK_STR(pt_status_name(name), #name);                                                        \
    CHECK_STR(pt_status_message(name), message);
    PT_STATUS_TABLE(X)
#undef X
    CHECK_INT(PT_OK, 0);
    CHECK_INT(PT_ERR_INTERNAL, PT_STATUS_COUNT - 1);
    CHECK_STR(pt_status_name(PT_STATUS_COUNT), "PT_UNKNOWN_STATUS");
    CHECK_STR(pt_status_name((pt_status)-1), "PT_UNKNOWN_STATUS");
    CHECK_STR(pt_status_name((pt_status)1000), "PT_UNKNOWN_STATUS");
    CHECK(pt_status_message((pt_status)1000) != NULL);
    /* numeric values are ABI: spot-check the order */
    CHECK_INT(PT_ERR_SHAPE, 2);
    CHECK_INT(PT_ERR_UNSUPPORTED, 8);
}

static void test_last_error(void) {
    pt_clear_error();
    CHECK_LAST(PT_OK);
    CHECK_STR(pt_last_error(), "");
    int64_t s[2] = {2, 3};
    pt_tensor *a = pt_zeros(pt_cpu(), PT_F32, 2, s);
    CHECK_NOT_NULL(a);
    CHECK_LAST(PT_OK); /* success sets nothing */
    CHECK(pt_narrow(a, 1, 2, 5) == NULL);
    CHECK(pt_last_status() == PT_ERR_SHAPE || pt_last_status() == PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "pt_narrow");
    CHECK_HAS(pt_last_error(), "5");
    /* a later success does not clear it */
    pt_tensor *b = pt_add(a, a);
    CHECK_NOT_NULL(b);
    CHECK_HAS(pt_last_error(), "pt_narrow");
    pt_clear_error();
    CHECK_LAST(PT_OK);
    CHECK_STR(pt_last_error(), "");
    /* a second failure replaces the first */
    CHECK(pt_narrow(a, 7, 0, 1) == NULL);
    CHECK_HAS(pt_last_error(), "7");
    CHECK(pt_exp(pt_cast(a, PT_I32)) == NULL); /* main's scope releases the cast */
    CHECK_LAST(PT_ERR_DTYPE);
    CHECK_HAS(pt_last_error(), "pt_exp");
    CHECK_HAS(pt_last_error(), "i32");
    pt_clear_error();
    pt_release(a);
    pt_release(b);
}

static void test_messages_name_values(void) {
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, s45[2] = {4, 5};
    pt_tensor *a = pt_ones(pt_cpu(), PT_F32, 2, s23), *b = pt_ones(pt_cpu(), PT_F32, 2, s32);
    pt_tensor *c = pt_ones(pt_cpu(), PT_F32, 2, s45);
    pt_clear_error();
    CHECK(pt_add(a, b) == NULL);
    CHECK_LAST(PT_ERR_SHAPE);
    CHECK_HAS(pt_last_error(), "pt_add");
    CHECK_HAS(pt_last_error(), "[2, 3]");
    CHECK_HAS(pt_last_error(), "[3, 2]");
    pt_clear_error();
    CHECK(pt_matmul(a, c) == NULL);
    CHECK_LAST(PT_ERR_SHAPE);
    CHECK_HAS(pt_last_error(), "pt_matmul");
    CHECK_HAS(pt_last_error(), "[2, 3]");
    CHECK_HAS(pt_last_error(), "[4, 5]");
    pt_clear_error();
    CHECK(pt_sum(a, 5, false) == NULL);
    CHECK_HAS(pt_last_error(), "pt_sum");
    CHECK_HAS(pt_last_error(), "5");
    pt_clear_error();
    CHECK(pt_device_get("cpu:99") == NULL);
    CHECK_LAST(PT_ERR_NO_DEVICE);
    CHECK_HAS(pt_last_error(), "cpu:99");
    pt_clear_error();
    CHECK(pt_device_get("cuda:99") == NULL);
    CHECK(pt_last_status() == PT_ERR_NO_DEVICE || pt_last_status() == PT_ERR_BACKEND_LOAD);
    CHECK_HAS(pt_last_error(), "cuda:99");
    pt_clear_error();
    int64_t big[2] = {2, 3};
    CHECK(pt_reshape(a, 1, big) == NULL);
    CHECK_LAST(PT_ERR_SHAPE);
    CHECK_HAS(pt_last_error(), "pt_reshape");
    CHECK_HAS(pt_last_error(), "[2]");
    pt_clear_error();
    pt_release(a);
    pt_release(b);
    pt_release(c);
}

static void test_null_short_circuit(void) {
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
    pt_tensor *a = pt_ones(pt_cpu(), PT_F32, 2, s23), *b = pt_ones(pt_cpu(), PT_F32, 2, s32);
    pt_clear_error();
    /* a chain of calls fails once and is checked at its end */
    pt_tensor *bad = pt_add(a, b);
    pt_tensor *r = pt_sum(pt_relu(pt_mul_scalar(pt_exp(bad), 2.0)), PT_ALL, false);
    CHECK(bad == NULL);
    CHECK(r == NULL);
    CHECK_LAST(PT_ERR_SHAPE);
    CHECK_HAS(pt_last_error(), "pt_add");
    /* ops given NULL with no error pending: the NULL is the error, named */
    pt_clear_error();
    CHECK(pt_exp(NULL) == NULL);
    CHECK_LAST(PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "pt_exp: x is NULL");
    pt_clear_error();
    CHECK(pt_matmul(a, NULL) == NULL);
    CHECK_HAS(pt_last_error(), "pt_matmul: b is NULL");
    /* ... and with one pending, the first error stays */
    CHECK(pt_add(a, NULL) == NULL);
    CHECK(pt_transpose(NULL, 0, 1) == NULL);
    CHECK_HAS(pt_last_error(), "pt_matmul: b is NULL");
    pt_clear_error();
    /* the properties of NULL */
    CHECK(pt_tensor_device(NULL) == NULL);
    CHECK_INT(pt_tensor_ndim(NULL), -1);
    CHECK(pt_tensor_shape(NULL) == NULL);
    CHECK_STR(pt_device_name(NULL), "(null)");
    pt_release(NULL);
    CHECK(pt_keep(NULL) == NULL);
    double v = pt_item(NULL);
    CHECK(isnan(v));
    pt_clear_error();
    pt_release(a);
    pt_release(b);
}

static void test_device_mismatch(void) {
    pt_device *d0 = pt_device_get("cpu:0"), *d1 = pt_device_get("cpu:1");
    CHECK_NOT_NULL(d0);
    CHECK_NOT_NULL(d1);
    if (!d0 || !d1) return;
    CHECK(d0 != d1);
    int64_t s[1] = {4};
    pt_tensor *a = pt_ones(d0, PT_F32, 1, s), *b = pt_ones(d1, PT_F32, 1, s);
    pt_tensor *c = pt_ones(d0, PT_U8, 1, s);
    CHECK(pt_tensor_device(a) == d0);
    CHECK(pt_tensor_device(b) == d1);
    pt_clear_error();
    CHECK(pt_add(a, b) == NULL);
    CHECK_LAST(PT_ERR_DEVICE_MISMATCH);
    CHECK_HAS(pt_last_error(), "pt_add");
    CHECK_HAS(pt_last_error(), "cpu:0");
    CHECK_HAS(pt_last_error(), "cpu:1");
    CHECK_HAS(pt_last_error(), "pt_to");
    pt_clear_error();
    CHECK(pt_matmul(a, b) == NULL);
    CHECK_LAST(PT_ERR_DEVICE_MISMATCH);
    CHECK_HAS(pt_last_error(), "pt_matmul");
    pt_clear_error();
    CHECK(pt_where(c, a, b) == NULL);
    CHECK_LAST(PT_ERR_DEVICE_MISMATCH);
    CHECK_HAS(pt_last_error(), "cpu:1");
    pt_clear_error();
    pt_tensor *xs[2] = {a, b};
    CHECK(pt_cat(2, xs, 0) == NULL);
    CHECK_LAST(PT_ERR_DEVICE_MISMATCH);
    pt_clear_error();
    CHECK(pt_axpy_(a, 1.0, b) == PT_ERR_DEVICE_MISMATCH);
    CHECK_HAS(pt_last_error(), "pt_axpy_");
    pt_clear_error();
    /* the fix the message names works */
    pt_tensor *b0 = pt_to(b, d0);
    pt_tensor *sum = pt_add(a, b0);
    double out[4] = {0};
    CHECK(check_read(sum, out, 4));
    CHECK_DBL(out[3], 2.0, 0);
    CHECK_LAST(PT_OK);
    pt_release(sum);
    pt_release(b0);
    pt_release(a);
    pt_release(b);
    pt_release(c);
}

/* The last error is per thread. */
static void *other_thread(void *arg) {
    (void)arg;
    pt_clear_error();
    int ok = pt_last_status() == PT_OK;
    CHECK(pt_device_get("nonsense:3") == NULL);
    ok = ok && pt_last_status() == PT_ERR_NO_DEVICE;
    return (void *)(intptr_t)ok;
}

static void test_thread_local(void) {
    pt_clear_error();
    CHECK(pt_narrow(NULL, 0, 0, 0) == NULL); /* NULL: no error */
    int64_t s[1] = {2};
    pt_tensor *a = pt_ones(pt_cpu(), PT_F32, 1, s);
    CHECK(pt_narrow(a, 0, 5, 1) == NULL);
    pt_status mine = pt_last_status();
    char msg[512];
    snprintf(msg, sizeof msg, "%s", pt_last_error());
    pthread_t t;
    void *ret = NULL;
    CHECK(pthread_create(&t, NULL, other_thread, NULL) == 0);
    pthread_join(t, &ret);
    CHECK(ret == (void *)(intptr_t)1);
    CHECK_INT(pt_last_status(), mine);
    CHECK_STR(pt_last_error(), msg);
    pt_clear_error();
    pt_release(a);
}

int main(void) {
    pt_scope sc = pt_scope_begin(); /* catches what the chains above leave behind */
    test_status_table();
    test_last_error();
    test_messages_name_values();
    test_null_short_circuit();
    test_device_mismatch();
    test_thread_local();
    pt_scope_end(sc);
    return check_summary();
}
