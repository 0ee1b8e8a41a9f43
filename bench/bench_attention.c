/* Causal self-attention forward + backward, libportable's side (cpu backend):
 *
 *   bench_attention time T [reps]   B 1, H 12, D 64, f32: one warm-up, then
 *                                   reps (default 5) timed forward + backward
 *                                   passes; prints "ms <median wall> min <min
 *                                   wall> cpu <median CPU ms>"
 *   bench_attention memory T        one forward + backward; prints "rss_before
 *                                   <MiB> rss_peak <MiB> device_peak <MiB>"
 *
 * pt_scaled_dot_product_attention runs the cpu's fused kind by default and
 * the core's composition (matmul, softmax, where) with
 * PORTABLE_CPU_ATTENTION=composed. The loss is sum(out * g) for a fixed
 * random g, so the backward pass starts from a dense gradient as
 * bench_attention_torch.py's does. bench_attention.sh runs both sides,
 * alternated and pinned, and prints the table. A benchmark prints numbers;
 * it asserts nothing. */
#include "bench_clock.h"
#include "portable/portable.h"

#define HEADS 12
#define DIM 64

static int fail(const char *what) {
    fprintf(stderr, "bench_attention: %s: %s\n", what, pt_last_error());
    return 1;
}

typedef struct inputs {
    pt_tensor *q, *k, *v, *g;
} inputs;

static int make_inputs(pt_device *dev, int64_t t, inputs *in) {
    const int64_t s[4] = {1, HEADS, t, DIM};
    pt_manual_seed(1);
    in->q = pt_randn(dev, PT_F32, 4, s);
    in->k = pt_randn(dev, PT_F32, 4, s);
    in->v = pt_randn(dev, PT_F32, 4, s);
    in->g = pt_randn(dev, PT_F32, 4, s);
    if (!in->q || !in->k || !in->v || !in->g) return fail("inputs");
    if (pt_set_requires_grad(in->q, true) || pt_set_requires_grad(in->k, true) || pt_set_requires_grad(in->v, true))
        return fail("requires_grad");
    return 0;
}

/* One forward + backward, finished (the gradients computed) on return. */
static int step(pt_device *dev, const inputs *in) {
    pt_scope scope = pt_scope_begin();
    pt_tensor *out = pt_scaled_dot_product_attention(in->q, in->k, in->v, NULL, true, 0);
    pt_tensor *loss = pt_sum(pt_mul(out, in->g), PT_ALL, false);
    int rc = loss && pt_backward(loss) == PT_OK && pt_device_synchronize(dev) == PT_OK ? 0 : fail("step");
    pt_zero_grad(in->q);
    pt_zero_grad(in->k);
    pt_zero_grad(in->v);
    pt_scope_end(scope);
    return rc;
}

static void release(inputs *in) {
    pt_release(in->q);
    pt_release(in->k);
    pt_release(in->v);
    pt_release(in->g);
}

static int bench_time(int64_t t, int reps) {
    pt_device *dev = pt_cpu();
    inputs in;
    if (make_inputs(dev, t, &in)) return 1;
    double *w = malloc(sizeof(double) * (size_t)reps), *c = malloc(sizeof(double) * (size_t)reps);
    if (!w || !c || step(dev, &in)) return free(w), free(c), 1; /* warm-up */
    for (int r = 0; r < reps; ++r) {
        const double w0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
        if (step(dev, &in)) return free(w), free(c), 1;
        w[r] = now_ms(CLOCK_MONOTONIC) - w0;
        c[r] = now_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
    }
    qsort(w, (size_t)reps, sizeof *w, cmp_double);
    qsort(c, (size_t)reps, sizeof *c, cmp_double);
    printf("ms %.3f min %.3f cpu %.3f\n", w[reps / 2], w[0], c[reps / 2]);
    free(w);
    free(c);
    release(&in);
    return 0;
}

static int bench_memory(int64_t t) {
    pt_device *dev = pt_cpu();
    inputs in;
    if (make_inputs(dev, t, &in)) return 1;
    const double before = rss_now_mib();
    pt_memory_usage u0, u1;
    if (pt_memory_stats(dev, &u0) || pt_reset_peak_memory(dev) || step(dev, &in) || pt_memory_stats(dev, &u1))
        return fail("memory");
    printf("rss_before %.1f rss_peak %.1f device_peak %.1f\n", before, rss_peak_mib(),
           (double)(u1.peak - u0.in_use) / (1024.0 * 1024.0));
    release(&in);
    return 0;
}

int main(int argc, char **argv) {
    const int64_t t = argc >= 3 ? atoll(argv[2]) : 0;
    if (argc >= 3 && t > 0 && strcmp(argv[1], "time") == 0) {
        const int reps = argc >= 4 ? atoi(argv[3]) : 5;
        return bench_time(t, reps > 0 ? reps : 5);
    }
    if (argc >= 3 && t > 0 && strcmp(argv[1], "memory") == 0) return bench_memory(t);
    fprintf(stderr, "usage: bench_attention time T [reps] | bench_attention memory T\n");
    return 2;
}
