/* Attention's speed on PORTABLE_BACKEND's default device: the forward
 * pass of pt_scaled_dot_product_attention and the forward + backward of
 * sum(o), f32 [B, H, T, D], not causal, best of a few rounds after a
 * warm-up. The path is the device's answer for the ATTENTION kind:
 * "fused" (its kernels; nothing of size [T, T] stored) or "composed"
 * (products, softmax and reductions in the core), which the backends'
 * switches choose (PORTABLE_CUDA_ATTENTION=composed,
 * PORTABLE_CPU_ATTENTION=composed), so running it twice compares the two.
 * Prints one markdown row (`--header` first prints the table's head):
 *   | device | path | B | H | T | D | forward ms | forward + backward ms | peak MiB |
 * The peak is pt_memory_stats' over one forward + backward, above the
 * inputs. No assertions: numbers are for people.
 *
 *   bench_attention_device [--header] [T [B [H [D [rounds]]]]]   (1024 1 12 64 5) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "portable/portable.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One forward (and backward when grad) in a scope; false on an error. */
static bool step(pt_tensor *q, pt_tensor *k, pt_tensor *v, bool grad) {
    pt_scope s = pt_scope_begin();
    pt_tensor *o = pt_scaled_dot_product_attention(q, k, v, NULL, false, 0);
    bool ok = o != NULL;
    if (ok && grad) ok = pt_backward(pt_sum(o, PT_ALL, false)) == PT_OK;
    pt_scope_end(s);
    if (grad) {
        pt_zero_grad(q);
        pt_zero_grad(k);
        pt_zero_grad(v);
    }
    return ok;
}

/* Best milliseconds per step over rounds rounds of reps steps. */
static double best_ms(pt_device *d, pt_tensor *q, pt_tensor *k, pt_tensor *v, bool grad, int rounds, int reps) {
    double best = -1;
    for (int r = 0; r < rounds; ++r) {
        pt_device_synchronize(d);
        const double t0 = now_ms();
        for (int i = 0; i < reps; ++i)
            if (!step(q, k, v, grad)) return -1;
        if (pt_device_synchronize(d) != PT_OK) return -1;
        const double ms = (now_ms() - t0) / reps;
        if (best < 0 || ms < best) best = ms;
    }
    return best;
}

int main(int argc, char **argv) {
    int a = 1;
    if (a < argc && strcmp(argv[a], "--header") == 0) {
        printf("| device | path | B | H | T | D | forward ms | forward + backward ms | peak MiB |\n");
        printf("|---|---|---|---|---|---|---|---|---|\n");
        ++a;
    }
    const int64_t t = a < argc ? atoll(argv[a++]) : 1024, b = a < argc ? atoll(argv[a++]) : 1,
                  h = a < argc ? atoll(argv[a++]) : 12, dh = a < argc ? atoll(argv[a++]) : 64;
    const int rounds = a < argc ? atoi(argv[a++]) : 5;
    if (t < 1 || b < 1 || h < 1 || dh < 1 || rounds < 1) {
        fprintf(stderr, "usage: bench_attention_device [--header] [T [B [H [D [rounds]]]]] (each >= 1)\n");
        return 2;
    }
    pt_device *d = pt_default_device();
    if (!d) {
        fprintf(stderr, "bench_attention_device: %s\n", pt_last_error());
        return 1;
    }
    const char *path = pt_device_supports(d, PT_OP_ATTENTION, PT_F32) == PT_OK ? "fused" : "composed";
    pt_clear_error();
    const int64_t shape[4] = {b, h, t, dh};
    pt_manual_seed(7);
    pt_tensor *q = pt_randn(d, PT_F32, 4, shape), *k = pt_randn(d, PT_F32, 4, shape), *v = pt_randn(d, PT_F32, 4, shape);
    for (int i = 0; i < 3; ++i) pt_set_requires_grad(i == 0 ? q : i == 1 ? k : v, true);
    /* warm-up: kernels loaded, the caching allocator filled */
    bool ok = q && k && v && step(q, k, v, true) && step(q, k, v, true);
    pt_memory_usage before = {0}, after = {0};
    ok = ok && pt_device_synchronize(d) == PT_OK && pt_memory_stats(d, &before) == PT_OK &&
         pt_reset_peak_memory(d) == PT_OK && step(q, k, v, true) && pt_device_synchronize(d) == PT_OK &&
         pt_memory_stats(d, &after) == PT_OK;
    const int reps = t >= 2048 ? 2 : 5;
    const double fwd = ok ? best_ms(d, q, k, v, false, rounds, reps) : -1;
    const double both = ok ? best_ms(d, q, k, v, true, rounds, reps) : -1;
    pt_release(q);
    pt_release(k);
    pt_release(v);
    if (!ok || fwd < 0 || both < 0) {
        fprintf(stderr, "bench_attention_device: %s\n", pt_last_error());
        return 1;
    }
    printf("| %s | %s | %lld | %lld | %lld | %lld | %.3f | %.3f | %.1f |\n", pt_device_name(d), path, (long long)b,
           (long long)h, (long long)t, (long long)dh, fwd, both, (double)(after.peak - before.in_use) / 1048576.0);
    return 0;
}
