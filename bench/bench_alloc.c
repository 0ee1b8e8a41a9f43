/* Caching allocator under a varying-size workload (tests/unit/alloc_workload.h:
 * a training-like loop whose batch size and sequence length change every
 * step): reserved bytes against the peak of live tensor bytes, on the cpu
 * device (or PORTABLE_BACKEND's default device with --default). Memory, not
 * time: the tensors are never touched. PORTABLE_ALLOC_GC=0 turns the garbage
 * collection off to show what splitting and merging alone give.
 *
 *   bench_alloc [steps] [--default]
 *
 * Prints a markdown table. No assertions: tests/unit/test_allocator_varying.c
 * asserts the bound. */
#include <stdlib.h>
#include <string.h>

#include "alloc_workload.h"

int main(int argc, char **argv) {
    int steps = 200;
    pt_device *d = pt_cpu();
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--default")) d = pt_default_device();
        else steps = atoi(argv[i]);
    }
    if (!d) {
        fprintf(stderr, "bench_alloc: %s\n", pt_last_error());
        return 1;
    }
    pt_empty_cache(d);
    wl_result r = wl_run(d, steps, 0);
    if (r.failed) {
        fprintf(stderr, "bench_alloc: %s\n", pt_last_error());
        return 1;
    }
    const char *gc = getenv("PORTABLE_ALLOC_GC");
    const double mib = 1 << 20;
    printf("## Caching allocator, varying sizes: %d steps on %s (PORTABLE_ALLOC_GC=%s)\n\n", steps,
           pt_device_name(d), gc && *gc ? gc : "unset");
    printf("| peak live MiB | max reserved MiB | worst reserved / peak live (step) | at the end |\n");
    printf("|---:|---:|---:|---:|\n");
    printf("| %.1f | %.1f | %.2fx (%d) | %.2fx |\n\n", (double)r.peak_live / mib, (double)r.max_reserved / mib,
           r.worst_ratio, r.worst_step, r.end_ratio);
    pt_empty_cache(d);
    return 0;
}
