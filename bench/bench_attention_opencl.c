/* Attention on the first OpenCL device: one training step's attention
 * (forward, then backward of sum(o * w)) at B 1, H 12, D 64, f32, for T =
 * 256 and 1024, with the plugin's fused kernels (the default) and with the
 * core's composed path (products, softmax and where, storing the [T, T]
 * scores), chosen per step by PORTABLE_OPENCL_ATTENTION, which the plugin
 * reads at every forward op. The two alternate round by round in one
 * process; each round times `reps` steps, the median round counts, and the
 * peak of device memory above the inputs is reported for each. Prints a
 * markdown table. No assertions: numbers are for people.
 *
 *   bench_attention_opencl [rounds]      (default 5) */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "portable/portable.h"

enum { FUSED, COMPOSED, N_PATHS };
static const char *const paths[N_PATHS] = {"fused", "composed"};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One forward + backward on d's queue, waited for; false on an error. */
static bool step(pt_device *d, pt_tensor *q, pt_tensor *k, pt_tensor *v, pt_tensor *w) {
    pt_scope s = pt_scope_begin();
    pt_tensor *o = pt_scaled_dot_product_attention(q, k, v, NULL, false, 0);
    bool ok = pt_backward(pt_sum(pt_mul(o, w), PT_ALL, false)) == PT_OK;
    pt_scope_end(s);
    pt_zero_grad(q);
    pt_zero_grad(k);
    pt_zero_grad(v);
    return ok && pt_device_synchronize(d) == PT_OK;
}

/* Seconds per step (median of rounds) and peak MiB above the inputs of each
 * path at sequence length t. */
static bool measure(pt_device *d, int64_t t, int rounds, double sec[N_PATHS], double peak[N_PATHS]) {
    const int64_t shape[4] = {1, 12, t, 64};
    pt_manual_seed(7);
    pt_tensor *x[4];
    for (int i = 0; i < 4; ++i) x[i] = pt_randn(d, PT_F32, 4, shape);
    for (int i = 0; i < 3; ++i) pt_set_requires_grad(x[i], true);
    const int reps = t <= 256 ? 8 : 1;
    double *times = malloc(sizeof(double) * (size_t)rounds * N_PATHS);
    bool ok = times != NULL;
    for (int p = 0; ok && p < N_PATHS; ++p) { /* a step each to build the kernels, then the peak */
        setenv("PORTABLE_OPENCL_ATTENTION", paths[p], 1);
        ok = step(d, x[0], x[1], x[2], x[3]);
        pt_memory_usage before, after;
        pt_memory_stats(d, &before);
        pt_reset_peak_memory(d);
        ok = ok && step(d, x[0], x[1], x[2], x[3]);
        pt_memory_stats(d, &after);
        peak[p] = (double)(after.peak - before.in_use) / 1048576.0;
    }
    for (int r = 0; ok && r < rounds; ++r)
        for (int p = 0; ok && p < N_PATHS; ++p) {
            setenv("PORTABLE_OPENCL_ATTENTION", paths[p], 1);
            const double t0 = now();
            for (int i = 0; ok && i < reps; ++i) ok = step(d, x[0], x[1], x[2], x[3]);
            times[p * rounds + r] = (now() - t0) / reps;
        }
    for (int p = 0; ok && p < N_PATHS; ++p) {
        qsort(times + p * rounds, (size_t)rounds, sizeof(double), cmp_double);
        sec[p] = times[p * rounds + rounds / 2];
    }
    unsetenv("PORTABLE_OPENCL_ATTENTION");
    free(times);
    for (int i = 0; i < 4; ++i) pt_release(x[i]);
    if (!ok) fprintf(stderr, "bench_attention_opencl: T = %lld: %s\n", (long long)t, pt_last_error());
    return ok;
}

int main(int argc, char **argv) {
    const int rounds = argc > 1 ? atoi(argv[1]) : 5;
    pt_device *d = pt_device_get("opencl:0");
    if (!d || rounds < 1) {
        printf("bench_attention_opencl: %s\n", d ? "rounds must be at least 1" : pt_last_error());
        return d ? 2 : 77;
    }
    pt_device_props props;
    pt_device_info(d, &props);
    printf("attention forward + backward, B 1, H 12, D 64, f32, not causal, on %s (%s): median of %d rounds, "
           "paths alternated\n\n",
           pt_device_name(d), props.name, rounds);
    printf("| T | fused ms | composed ms | composed / fused | fused peak MiB | composed peak MiB |\n");
    printf("|---:|---:|---:|---:|---:|---:|\n");
    const int64_t lengths[] = {256, 1024};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; ++i) {
        double sec[N_PATHS], peak[N_PATHS];
        if (!measure(d, lengths[i], rounds, sec, peak)) return 1;
        printf("| %lld | %.1f | %.1f | %.2fx | %.1f | %.1f |\n", (long long)lengths[i], 1e3 * sec[FUSED],
               1e3 * sec[COMPOSED], sec[COMPOSED] / sec[FUSED], peak[FUSED], peak[COMPOSED]);
        fflush(stdout);
    }
    return 0;
}
