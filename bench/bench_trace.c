/* What tracing costs on the tiny-op path: pt_add + pt_release of two
 * 10-element f32 tensors on the cpu, with no trace and with a trace being
 * written, in alternating rounds of one run (best round of each).
 *
 *   bench_trace [rounds] [off]
 *
 * "off" skips the traced rounds: for counting instructions per op with
 * `perf stat -e instructions:u`, which a loaded machine does not disturb
 * (bench/trace_overhead.sh).
 *
 * The trace functions are looked up at run time (dlsym), so the same binary
 * also runs against a libportable.so from before tracing existed
 * (LD_LIBRARY_PATH=<old build>/lib bench_trace): bench/trace_overhead.sh
 * alternates the two libraries that way to compare "off" with "before".
 * Prints a markdown table. No assertions: numbers are for people. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "portable/portable.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds per pt_add + pt_release, over iters calls. */
static double time_adds(pt_tensor *a, pt_tensor *b, long iters) {
    double t0 = now();
    for (long i = 0; i < iters; ++i) pt_release(pt_add(a, b));
    return (now() - t0) / (double)iters;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 7;
    if (rounds < 1) rounds = 1;
    const bool off_only = argc > 2 && !strcmp(argv[2], "off");
    pt_status (*begin)(const char *, size_t) =
        (pt_status(*)(const char *, size_t))dlsym(RTLD_DEFAULT, "pt_trace_begin_capped");
    pt_status (*end)(void) = (pt_status(*)(void))dlsym(RTLD_DEFAULT, "pt_trace_end");
    pt_device *cpu = pt_cpu();
    int64_t shape[1] = {10};
    pt_tensor *a = pt_rand(cpu, PT_F32, 1, shape), *b = pt_rand(cpu, PT_F32, 1, shape);
    if (!a || !b) {
        fprintf(stderr, "bench_trace: %s\n", pt_last_error());
        return 1;
    }
    char path[64];
    snprintf(path, sizeof path, "/tmp/bench_trace_%d.json", (int)getpid());
    const long iters_off = 200000, iters_on = 20000;
    time_adds(a, b, iters_off); /* warm: the result's block is cached */
    double best_off = 1e30, best_on = 1e30;
    for (int r = 0; r < rounds; ++r) {
        double t = time_adds(a, b, iters_off);
        if (t < best_off) best_off = t;
        if (!off_only && begin && end && begin(path, (size_t)1 << 30) == PT_OK) {
            t = time_adds(a, b, iters_on);
            end();
            if (t < best_on) best_on = t;
        }
    }
    unlink(path);
    printf("| tracing | ns per pt_add + pt_release (10 f32, cpu) |\n|---|---:|\n");
    printf("| off | %.1f |\n", best_off * 1e9);
    if (off_only)
        ;
    else if (begin && end)
        printf("| on (writing a trace) | %.1f |\n", best_on * 1e9);
    else
        printf("| on | (this libportable has no tracing) |\n");
    pt_release(a);
    pt_release(b);
    return 0;
}
