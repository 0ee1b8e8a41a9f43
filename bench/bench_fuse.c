/* Graph fusion: a four-op element-wise chain y = cast(x * sigmoid(x) + b)
 * (to f16 and to i32) on 16M f32 elements, replayed from a graph with its
 * chain fused into one kernel (the default), replayed with fusion off
 * (PORTABLE_GRAPH_FUSION=off at capture: one kernel per op) and run
 * eagerly, against a copy of as many bytes as the fused chain must move
 * (x and b read, y written): the fused replay's bandwidth over the copy's
 * is how close to the memory bound fusion gets. On the cpu the copy is
 * memcpy split over as many threads as the plugin's team has (its
 * compute_units: the cores of this process's affinity mask, capped by
 * OMP_NUM_THREADS), so both sides use the same cores; counting the cores
 * online instead gave the copy two threads on one core under taskset. On
 * the first OpenCL device it is pt_copy_ of an f32 tensor: the plugin's
 * copy kernel, launched as the fused chain's kernel is (on PoCL both run
 * on the same host threads). A device that refuses FUSED replays the chain op
 * by op: the table says so.
 *
 * Every contender runs once untimed before the first round (the replays'
 * first touch of their planned outputs, the eager allocator's first
 * blocks, the copy's destination pages), then the contenders alternate
 * round by round; each round times `reps` runs, and the median round
 * counts (the best round is shown beside it). Prints a markdown table per
 * device and dtype, with the vector ISA the cpu plugin's vecmath runs. No
 * assertions: numbers are for people.
 *
 *   bench_fuse [rounds] [elements] */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "portable/portable.h"

enum { FUSED, UNFUSED, EAGER, COPY, N_CONTENDERS };
static const char *const names[N_CONTENDERS] = {"graph, fused", "graph, fusion off", "eager",
                                                "copy of the same bytes"};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static pt_tensor *chain(pt_tensor *x, pt_tensor *b, pt_dtype to) {
    pt_scope s = pt_scope_begin();
    pt_tensor *y = pt_keep(pt_cast(pt_add(pt_mul(x, pt_sigmoid(x)), b), to));
    pt_scope_end(s);
    return y;
}

static pt_graph *capture(pt_device *d, pt_tensor *x, pt_tensor *b, pt_dtype to, bool fuse, pt_tensor **y) {
    if (fuse) unsetenv("PORTABLE_GRAPH_FUSION");
    else setenv("PORTABLE_GRAPH_FUSION", "off", 1);
    pt_graph_capture_begin(d);
    *y = chain(x, b, to);
    pt_graph *g = pt_graph_capture_end(d);
    unsetenv("PORTABLE_GRAPH_FUSION");
    return g;
}

/* memcpy over one thread per core. */
typedef struct copy_part {
    char *dst;
    const char *src;
    size_t bytes;
} copy_part;

static void *copy_thread(void *arg) {
    copy_part *p = arg;
    memcpy(p->dst, p->src, p->bytes);
    return NULL;
}

static void threaded_memcpy(char *dst, const char *src, size_t bytes, int threads) {
    pthread_t t[64];
    copy_part part[64];
    const size_t chunk = (bytes / (size_t)threads + 63) & ~(size_t)63;
    int made = 0;
    for (int i = 0; i < threads; ++i) {
        size_t b = (size_t)i * chunk, e = b + chunk < bytes ? b + chunk : bytes;
        if (b >= e) break;
        part[i] = (copy_part){dst + b, src + b, e - b};
        if (i == threads - 1 || pthread_create(&t[made], NULL, copy_thread, &part[i]) != 0) {
            copy_thread(&part[i]); /* the last part (or a failed start) on this thread */
            continue;
        }
        ++made;
    }
    for (int i = 0; i < made; ++i) pthread_join(t[i], NULL);
}

static void bench(pt_device *d, pt_dtype to, int64_t n, int rounds, int reps) {
    const int64_t shape[1] = {n};
    pt_manual_seed(7);
    pt_tensor *x = pt_randn(d, PT_F32, 1, shape), *b = pt_randn(d, PT_F32, 1, shape);
    pt_tensor *yf = NULL, *yu = NULL;
    pt_graph *gf = capture(d, x, b, to, true, &yf), *gu = capture(d, x, b, to, false, &yu);
    if (!x || !b || !gf || !gu) {
        printf("%s: setup failed: %s\n", pt_device_name(d), pt_last_error());
        goto done;
    }
    pt_graph_stats sf, su;
    pt_graph_info(gf, &sf);
    pt_graph_info(gu, &su);
    const size_t out_bytes = (size_t)n * pt_dtype_size(to), moved = (size_t)n * 8 + out_bytes;
    /* a copy of M bytes moves 2M: M = half of what the chain moves */
    const size_t copy_bytes = moved / 2;
    const bool cpu = strncmp(pt_device_name(d), "cpu", 3) == 0;
    char *hsrc = NULL, *hdst = NULL;
    pt_tensor *csrc = NULL, *cdst = NULL;
    const int64_t cshape[1] = {(int64_t)(copy_bytes / 4)};
    if (cpu) {
        hsrc = malloc(copy_bytes);
        hdst = malloc(copy_bytes);
        if (hsrc && hdst) {
            memset(hsrc, 1, copy_bytes);
            memset(hdst, 0, copy_bytes);
        }
    } else {
        csrc = pt_ones(d, PT_F32, 1, cshape);
        cdst = pt_zeros(d, PT_F32, 1, cshape);
    }
    pt_device_props props;
    memset(&props, 0, sizeof props);
    pt_device_info(d, &props);
    const int threads = props.compute_units > 0 ? props.compute_units : 1;
    double *t = calloc((size_t)N_CONTENDERS * (size_t)rounds, sizeof *t);
    for (int r = -1; r < rounds && t; ++r) { /* round -1: the untimed warm-up */
        for (int c = 0; c < N_CONTENDERS; ++c) {
            pt_device_synchronize(d);
            double t0 = now();
            for (int i = 0; i < (r < 0 ? 1 : reps); ++i) {
                if (c == FUSED) pt_graph_replay(gf);
                else if (c == UNFUSED) pt_graph_replay(gu);
                else if (c == EAGER) pt_release(chain(x, b, to));
                else if (cpu && hsrc && hdst) threaded_memcpy(hdst, hsrc, copy_bytes, threads);
                else if (!cpu) pt_copy_(cdst, csrc);
            }
            pt_device_synchronize(d);
            if (r >= 0) t[c * rounds + r] = (now() - t0) / reps;
        }
    }
    double med[N_CONTENDERS], best[N_CONTENDERS];
    for (int c = 0; c < N_CONTENDERS && t; ++c) {
        qsort(t + c * rounds, (size_t)rounds, sizeof *t, cmp_double);
        med[c] = t[c * rounds + rounds / 2];
        best[c] = t[c * rounds];
    }
    const char *vm = strstr(props.platform, "vecmath ");
    char where[192];
    if (cpu) snprintf(where, sizeof where, "%d threads, the copy's too; %.*s", threads,
                      vm ? (int)strcspn(vm, ";") : 7, vm ? vm : "vecmath unknown");
    else snprintf(where, sizeof where, "%s, %d compute units", props.name, props.compute_units);
    printf("\n%s, y = cast(x * sigmoid(x) + b, %s), %lld f32 elements: %.0f MB moved by the chain; "
           "fused graph %lld kernels for %lld ops%s; %s\n\n",
           pt_device_name(d), pt_dtype_name(to), (long long)n, moved / 1e6, (long long)sf.kernels,
           (long long)sf.ops, sf.kernels < sf.ops ? "" : " (the device refused the FUSED chain: not fused)",
           where);
    /* The best round beside the median: on a loaded machine the median
     * measures the contention (a compute-heavier contender loses more of
     * its time slices than a copy does), the best round what a core
     * nearly to itself gives. */
    printf("| %s | ms (median of %d) | best round ms | GB/s of the chain's bytes | vs fused | vs copy "
           "bandwidth | vs copy, best rounds |\n"
           "|---|---:|---:|---:|---:|---:|---:|\n", pt_device_name(d), rounds);
    for (int c = 0; c < N_CONTENDERS && t; ++c) {
        const double gbs = (double)moved / med[c] / 1e9;
        printf("| %s%s | %.2f | %.2f | %.1f | %.2fx | %.2f | %.2f |\n", names[c],
               c == COPY ? (cpu ? " (memcpy, threads as the team)" : " (pt_copy_ kernel)") : "", med[c] * 1e3,
               best[c] * 1e3, gbs, med[c] / med[FUSED], med[COPY] / med[c], best[COPY] / best[c]);
    }
    printf("\nfused vs fusion off: %.2fx faster (best rounds %.2fx); fused bandwidth / copy bandwidth: %.2f "
           "(best rounds %.2f)\n",
           med[UNFUSED] / med[FUSED], best[UNFUSED] / best[FUSED], med[COPY] / med[FUSED], best[COPY] / best[FUSED]);
    free(t);
    free(hsrc);
    free(hdst);
    pt_release(csrc);
    pt_release(cdst);
done:
    pt_graph_free(gf);
    pt_graph_free(gu);
    pt_release(yf);
    pt_release(yu);
    pt_release(x);
    pt_release(b);
    pt_clear_error();
}

int main(int argc, char **argv) {
    const int rounds = argc > 1 ? atoi(argv[1]) : 7;
    const int64_t n = argc > 2 ? atoll(argv[2]) : (int64_t)16 << 20;
    if (rounds < 1 || n < 1) {
        fprintf(stderr, "usage: bench_fuse [rounds >= 1] [elements >= 1]\n");
        return 2;
    }
    pt_device *devs[2] = {pt_cpu(), NULL};
    if (pt_device_count("opencl") > 0) devs[1] = pt_device_get("opencl:0");
    pt_clear_error();
    printf("## Fusion: y = cast(x * sigmoid(x) + b) on %lld elements\n", (long long)n);
    for (int i = 0; i < 2; ++i) {
        if (!devs[i]) continue;
        bench(devs[i], PT_F16, n, rounds, 3);
        bench(devs[i], PT_I32, n, rounds, 3);
    }
    return 0;
}
