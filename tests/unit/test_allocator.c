/* The caching allocator as pt_memory_stats shows it: in_use / cached / peak /
 * reserved move as tensors are created and released, a first block takes a
 * whole segment (2 MiB up to 1 MiB requests) whose rest is cached, a freed
 * block is reused without growing reserved, a segment's rest serves another
 * size, pt_empty_cache drops cached to 0, views allocate
 * nothing, devices are accounted separately (PORTABLE_CPU_DEVICES=2), and an
 * impossible request fails with PT_ERR_OUT_OF_MEMORY after emptying the
 * cache. */
#include "check.h"

static pt_device *cpu;

static pt_memory_usage stats(pt_device *d) {
    pt_memory_usage u;
    memset(&u, 0xff, sizeof u);
    CHECK_OK(pt_memory_stats(d, &u));
    CHECK_INT(u.reserved, u.in_use + u.cached);
    CHECK(u.in_use >= 0 && u.cached >= 0 && u.peak >= u.in_use);
    return u;
}

static void test_create_release_reuse(void) {
    CHECK_OK(pt_empty_cache(cpu));
    pt_memory_usage u0 = stats(cpu);
    CHECK_INT(u0.cached, 0);
    int64_t n = 10000;
    pt_tensor *a = pt_zeros(cpu, PT_F32, 1, &n);
    REQUIRE(a);
    pt_memory_usage u1 = stats(cpu);
    int64_t block = u1.in_use - u0.in_use;
    CHECK(block >= n * 4);
    CHECK(block < 2 * n * 4); /* size classes round up, not double */
    int64_t segment = 2 << 20; /* carved from a 2 MiB segment; the rest is cached */
    CHECK_INT(u1.reserved - u0.reserved, segment);
    CHECK_INT(u1.cached, segment - block);
    CHECK(u1.peak >= u1.in_use);
    pt_release(a);
    pt_memory_usage u2 = stats(cpu);
    CHECK_INT(u2.in_use, u0.in_use);
    CHECK_INT(u2.cached, segment);
    CHECK_INT(u2.reserved, u1.reserved); /* kept for reuse */
    CHECK_INT(u2.peak, u1.peak);
    /* the same size again comes from the cache: reserved does not grow */
    pt_tensor *b = pt_ones(cpu, PT_F32, 1, &n);
    pt_memory_usage u3 = stats(cpu);
    CHECK_INT(u3.in_use, u1.in_use);
    CHECK_INT(u3.cached, segment - block);
    CHECK_INT(u3.reserved, u1.reserved);

    /* reused memory holds the new contents */
    double v[1] = {0};
    pt_tensor *one = pt_narrow(b, 0, n - 1, 1);
    CHECK(check_read(one, v, 1));
    CHECK_DBL(v[0], 1, 0);
    pt_release(one);
    /* a view allocates nothing */
    pt_tensor *view = pt_narrow(b, 0, 10, 100);
    pt_memory_usage u4 = stats(cpu);
    CHECK_INT(u4.in_use, u3.in_use);
    /* the storage lives while the view does */
    pt_release(b);
    CHECK_INT(stats(cpu).in_use, u3.in_use);
    pt_release(view);
    pt_memory_usage u5 = stats(cpu);
    CHECK_INT(u5.in_use, u0.in_use);
    CHECK_INT(u5.cached, segment);
    /* another size comes out of the same segment */
    int64_t m = 3000;
    pt_tensor *other = pt_zeros(cpu, PT_F32, 1, &m);
    CHECK_INT(stats(cpu).reserved, u5.reserved);
    pt_release(other);
    CHECK_OK(pt_empty_cache(cpu));
    pt_memory_usage u6 = stats(cpu);
    CHECK_INT(u6.cached, 0);
    CHECK_INT(u6.reserved, u6.in_use);
    CHECK_INT(u6.peak, u1.peak); /* peak remembers */
}

static void test_peak(void) {
    pt_memory_usage u0 = stats(cpu);
    int64_t n = 1 << 20; /* 4 MiB each */
    pt_tensor *a = pt_empty(cpu, PT_F32, 1, &n), *b = pt_empty(cpu, PT_F32, 1, &n);
    REQUIRE(a);
    REQUIRE(b);
    pt_memory_usage u1 = stats(cpu);
    CHECK(u1.in_use - u0.in_use >= 2 * n * 4);
    CHECK(u1.peak >= u1.in_use);
    pt_release(a);
    pt_release(b);
    pt_memory_usage u2 = stats(cpu);
    CHECK_INT(u2.in_use, u0.in_use);
    CHECK(u2.peak >= u1.in_use);
    /* a repeat of the same request is served from the cache */
    pt_tensor *c = pt_empty(cpu, PT_F32, 1, &n);
    CHECK_INT(stats(cpu).reserved, u2.reserved);
    pt_release(c);
    CHECK_OK(pt_empty_cache(cpu));
}

static void test_devices_separate(void) {
    pt_device *c1 = pt_device_get("cpu:1");
    REQUIRE(c1);
    CHECK_OK(pt_empty_cache(c1));
    pt_memory_usage a0 = stats(cpu), b0 = stats(c1);
    int64_t n = 5000;
    pt_tensor *x = pt_zeros(c1, PT_F64, 1, &n);
    REQUIRE(x);
    pt_memory_usage a1 = stats(cpu), b1 = stats(c1);
    CHECK_INT(a1.in_use, a0.in_use);
    CHECK(b1.in_use >= b0.in_use + n * 8);
    pt_release(x);
    CHECK_INT(stats(c1).in_use, b0.in_use);
    CHECK_OK(pt_empty_cache(c1));
    CHECK_INT(stats(c1).cached, 0);
}

static void test_errors(void) {
    pt_memory_usage u;
    pt_clear_error();
    CHECK(pt_memory_stats(NULL, &u) != PT_OK);
    CHECK_HAS(pt_last_error(), "pt_memory_stats");
    pt_clear_error();
    CHECK((pt_memory_stats)(cpu, NULL) != PT_OK);
    pt_clear_error();
    CHECK(pt_empty_cache(NULL) != PT_OK);
    pt_clear_error();
    /* leave something in the cache, then ask for far more than the machine has */
    int64_t n = 4096;
    pt_release(pt_zeros(cpu, PT_F32, 1, &n));
    CHECK(stats(cpu).cached > 0);
    int64_t huge = (int64_t)1 << 40; /* 4 TiB of f32 */
    pt_tensor *h = pt_empty(cpu, PT_F32, 1, &huge);
    CHECK(h == NULL);
    CHECK_LAST(PT_ERR_OUT_OF_MEMORY);
    CHECK_HAS(pt_last_error(), "pt_empty");
    CHECK_HAS(pt_last_error(), "cpu:0");
    CHECK_INT(stats(cpu).cached, 0); /* emptied before the retry */
    pt_clear_error();
    /* still usable afterwards */
    pt_tensor *ok = pt_ones(cpu, PT_F32, 1, &n);
    CHECK_NOT_NULL(ok);
    pt_release(ok);
    /* an element count that overflows is an error, not a wrapped small block */
    int64_t over[3] = {(int64_t)1 << 31, (int64_t)1 << 31, (int64_t)1 << 31};
    pt_clear_error();
    CHECK(pt_empty(cpu, PT_F32, 3, over) == NULL);
    CHECK(pt_last_status() == PT_ERR_SHAPE || pt_last_status() == PT_ERR_OUT_OF_MEMORY ||
          pt_last_status() == PT_ERR_INVALID_ARGUMENT);
    pt_clear_error();
}

int main(void) {
    cpu = pt_cpu();
    if (!cpu) {
        printf("no cpu device: %s\n", pt_last_error());
        return 1;
    }
    test_create_release_reuse();
    test_peak();
    test_devices_separate();
    test_errors();
    return check_summary();
}
