/* PORTABLE_NO_MEMORY_CACHING=1 (set by ctest for this program): every tensor
 * is a driver allocation of exactly its bytes, given back when it dies, so
 * memory checkers see each tensor's bounds. Checks the counters say so
 * (in use = the bytes asked for, nothing cached after release) and that ops,
 * views and empty tensors work as with the cache. */
#include "check.h"

int main(void) {
    pt_device *d = pt_default_device();
    CHECK(d != NULL);
    pt_memory_usage m0, m1, m2;
    CHECK(pt_memory_stats(d, &m0) == PT_OK);
    const int64_t shape[1] = {5};
    const float a_data[5] = {1, 2, 3, 4, 5}, b_data[5] = {10, 20, 30, 40, 50};
    pt_tensor *a = pt_from_data(d, PT_F32, 1, shape, a_data);
    CHECK(pt_memory_stats(d, &m1) == PT_OK);
    /* 20 bytes, not a 512-byte class of a shared segment */
    CHECK_INT(m1.in_use - m0.in_use, 20);
    CHECK_INT(m1.reserved - m1.in_use, m0.reserved - m0.in_use);
    pt_tensor *b = pt_from_data(d, PT_F32, 1, shape, b_data);
    pt_tensor *a1 = pt_narrow(a, 0, 1, 4), *b0 = pt_narrow(b, 0, 0, 4); /* views keep a and b alive */
    pt_tensor *s = pt_add(a1, b0);
    float got[4] = {0};
    CHECK(s && pt_to_host(s, got, sizeof got) == PT_OK);
    CHECK(got[0] == 12 && got[1] == 23 && got[2] == 34 && got[3] == 45);
    const int64_t none[1] = {0};
    pt_tensor *empty = pt_zeros(d, PT_F64, 1, none);
    CHECK(empty && pt_tensor_numel(empty) == 0);
    for (int i = 0; i < 200; ++i) pt_release(pt_mul_scalar(a, 2.0)); /* allocate, free, repeat */
    pt_release(empty);
    pt_release(s);
    pt_release(a1);
    pt_release(b0);
    pt_release(a);
    pt_release(b);
    CHECK(pt_memory_stats(d, &m2) == PT_OK);
    CHECK_INT(m2.in_use, m0.in_use);
    CHECK_INT(m2.cached, 0);
    printf("%s: peak %lld bytes, nothing cached\n", pt_device_name(d), (long long)m2.peak);
    return check_summary();
}
