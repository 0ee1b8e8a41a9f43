/* The caching allocator under sizes that change every step (a training loop
 * whose batch size and sequence length vary: tests/unit/alloc_workload.h):
 * reserved memory (in_use + cached) stays within 1.5x of the peak of live
 * tensor bytes after every allocation and release from the first step on,
 * and at the end, with the default garbage collection. The allocator before
 * splitting, merging and collection held 5.2x here. With collection off,
 * splitting and merging alone still reuse memory (under 3x); pt_empty_cache
 * then returns every segment; pt_set_memory_gc checks its argument. */
#include "alloc_workload.h"
#include "check.h"

static void run(pt_device *d) {
    printf("-- %s\n", pt_device_name(d));
    CHECK_OK(pt_empty_cache(d));
    pt_memory_usage u0;
    CHECK_OK(pt_memory_stats(d, &u0));
    CHECK_INT(u0.reserved, 0); /* nothing else lives on d in this program */
    wl_result r = wl_run(d, 200, 0);
    CHECK(!r.failed);
    if (r.failed) {
        printf("   %s\n", pt_last_error());
        return;
    }
    printf("   peak live %.1f MiB, max reserved %.1f MiB, worst reserved/peak %.2fx (step %d), end %.2fx\n",
           (double)r.peak_live / (1 << 20), (double)r.max_reserved / (1 << 20), r.worst_ratio, r.worst_step,
           r.end_ratio);
    CHECK(r.peak_live > (int64_t)256 << 20); /* the workload is big enough for segments not to dominate */
    CHECK(r.worst_ratio <= 1.5);
    CHECK(r.end_ratio <= 1.5);
    CHECK_INT(r.live, 0);
    pt_memory_usage u1;
    CHECK_OK(pt_memory_stats(d, &u1));
    CHECK_INT(u1.in_use, 0);
    CHECK_OK(pt_empty_cache(d));
    CHECK_OK(pt_memory_stats(d, &u1));
    CHECK_INT(u1.reserved, 0); /* every segment was wholly free: all went back */

    /* collection off: merging and splitting still bound the growth */
    CHECK_OK(pt_set_memory_gc(d, 0));
    r = wl_run(d, 200, r.peak_live);
    CHECK(!r.failed);
    if (r.failed) {
        printf("   %s\n", pt_last_error());
        return;
    }
    printf("   without collection: worst reserved/peak %.2fx\n", r.worst_ratio);
    CHECK(r.worst_ratio < 3.0);
    CHECK_OK(pt_empty_cache(d));
    CHECK_OK(pt_memory_stats(d, &u1));
    CHECK_INT(u1.reserved, 0);
    /* a tighter ratio holds too */
    CHECK_OK(pt_set_memory_gc(d, 1.25));
    r = wl_run(d, 200, r.peak_live);
    CHECK(!r.failed);
    if (r.failed) {
        printf("   %s\n", pt_last_error());
        return;
    }
    printf("   ratio 1.25: worst reserved/peak %.2fx\n", r.worst_ratio);
    CHECK(r.worst_ratio <= 1.25);
    CHECK_OK(pt_empty_cache(d));
    CHECK_OK(pt_set_memory_gc(d, 1.5));
}

static void test_set_gc_errors(void) {
    pt_clear_error();
    CHECK(pt_set_memory_gc(NULL, 1.5) == PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "pt_set_memory_gc");
    pt_clear_error();
    CHECK(pt_set_memory_gc(pt_cpu(), 0.5) == PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "0.5");
    pt_clear_error();
    CHECK(pt_set_memory_gc(pt_cpu(), -1) == PT_ERR_INVALID_ARGUMENT);
    pt_clear_error();
}

int main(void) {
    pt_device *cpu = pt_cpu();
    if (!cpu) {
        printf("no cpu device: %s\n", pt_last_error());
        return 1;
    }
    run(cpu);
    test_set_gc_errors();
    return check_summary();
}
