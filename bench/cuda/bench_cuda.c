/* bench_cuda — libportable on cuda:0 against the libraries underneath.
 *
 *   GEMM            pt_matmul vs cublasSgemm called directly (FP32, and TF32
 *                   through PORTABLE_CUDA_TF32=1 vs CUBLAS_TF32_TENSOR_OP_MATH)
 *   bandwidth       pt_add on 64M floats vs a device-to-device cudaMemcpyAsync
 *   per-op overhead pt_add on 10 elements: enqueue cost, and with a synchronize
 *   transfers       host<->device, pageable and pinned, through the API
 *                   (pt_from_data, pt_to_host, pt_to_async) and raw cudaMemcpy
 *   GPU tour        the d2l "GPUs" chapter experiments: large vs small
 *                   products on cpu and cuda, logging a norm per step vs once,
 *                   copies after compute, synchronous vs asynchronous
 *
 * Prints markdown tables; --json FILE also writes the figures for
 * bench/cuda/combine_results.py, which sets them beside bench_torch.py's.
 * Timing: wall clock around a loop, with the device synchronised before the
 * clock starts and before it is read; warm-up runs first.
 *
 * Usage: bench_cuda [--quick] [--json FILE] [--no-tour] [--only SECTIONS] [--device cuda:N]
 * SECTIONS is a comma-separated subset of gemm,bandwidth,overhead,transfers,tour;
 * overhead and tour call only libportable, so they also run on the CUDA
 * simulator (the GPU script's rehearsal), where cudart and cuBLAS called
 * directly have no device. */
#define _POSIX_C_SOURCE 200809L
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "portable/portable.h"

/* ---- Plumbing ---- */

static void die(const char *what) {
    fprintf(stderr, "bench_cuda: %s failed: %s (%s)\n", what, pt_last_error(),
            pt_status_name(pt_last_status()));
    exit(1);
}
static pt_tensor *checked(pt_tensor *t, const char *what) {
    if (!t) die(what);
    return t;
}
#define PT(x) checked((x), #x)
#define PT_OK_(x) do { if ((x) != PT_OK) die(#x); } while (0)
#define CU(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "bench_cuda: %s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define BL(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { \
    fprintf(stderr, "bench_cuda: %s: %s\n", #x, cublasGetStatusString(s_)); exit(1); } } while (0)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct result {
    char key[64];
    double value;
} result;
static result g_results[256];
static int g_nresults;

static void record(const char *key, double value) {
    if (g_nresults < (int)(sizeof g_results / sizeof g_results[0])) {
        snprintf(g_results[g_nresults].key, sizeof g_results[0].key, "%s", key);
        g_results[g_nresults++].value = value;
    }
}

static bool g_quick;
static pt_device *g_dev;

static int clamp_iters(double seconds_per_iter, double budget, int lo, int hi) {
    int n = seconds_per_iter > 0 ? (int)(budget / seconds_per_iter) : hi;
    return n < lo ? lo : n > hi ? hi : n;
}

/* ---- GEMM ---- */

static double time_pt_matmul(pt_tensor *a, pt_tensor *b, int iters) {
    for (int i = 0; i < 2; ++i) pt_release(PT(pt_matmul(a, b)));
    PT_OK_(pt_device_synchronize(g_dev));
    double t0 = now();
    for (int i = 0; i < iters; ++i) pt_release(PT(pt_matmul(a, b)));
    PT_OK_(pt_device_synchronize(g_dev));
    return (now() - t0) / iters;
}

static double time_cublas(cublasHandle_t h, cudaStream_t s, int n, const float *A, const float *B,
                          float *C, int iters) {
    const float one = 1.0f, zero = 0.0f;
    /* Row-major C = A B is column-major C^T = B^T A^T: the same call the plugin makes. */
    for (int i = 0; i < 2; ++i)
        BL(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, B, n, A, n, &zero, C, n));
    CU(cudaStreamSynchronize(s));
    double t0 = now();
    for (int i = 0; i < iters; ++i)
        BL(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, B, n, A, n, &zero, C, n));
    CU(cudaStreamSynchronize(s));
    return (now() - t0) / iters;
}

static void bench_gemm(void) {
    const int sizes_full[] = {1024, 4096, 8192}, sizes_quick[] = {1024, 2048};
    const int *sizes = g_quick ? sizes_quick : sizes_full;
    const int nsizes = g_quick ? 2 : 3;
    cublasHandle_t h;
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    BL(cublasCreate(&h));
    BL(cublasSetStream(h, s));
    printf("\n## GEMM, f32, C = A B with square n x n matrices (TFLOP/s, higher is better)\n\n");
    printf("| n | math | pt_matmul | cublasSgemm direct | pt / cuBLAS |\n|---|---|---|---|---|\n");
    for (int si = 0; si < nsizes; ++si) {
        const int n = sizes[si];
        const int64_t shape[2] = {n, n};
        pt_manual_seed(42);
        pt_tensor *a = PT(pt_randn(g_dev, PT_F32, 2, shape));
        pt_tensor *b = PT(pt_randn(g_dev, PT_F32, 2, shape));
        /* cuBLAS gets the same random values (zeros would run faster). */
        const size_t bytes = (size_t)n * n * sizeof(float);
        float *host = malloc(bytes);
        float *dA, *dB, *dC;
        if (!host) die("malloc");
        CU(cudaMalloc((void **)&dA, bytes));
        CU(cudaMalloc((void **)&dB, bytes));
        CU(cudaMalloc((void **)&dC, bytes));
        PT_OK_(pt_to_host(a, host, bytes));
        CU(cudaMemcpy(dA, host, bytes, cudaMemcpyHostToDevice));
        PT_OK_(pt_to_host(b, host, bytes));
        CU(cudaMemcpy(dB, host, bytes, cudaMemcpyHostToDevice));
        free(host);
        const double flop = 2.0 * n * (double)n * n;
        for (int tf32 = 0; tf32 <= 1; ++tf32) {
            if (tf32) setenv("PORTABLE_CUDA_TF32", "1", 1);
            else unsetenv("PORTABLE_CUDA_TF32");
            BL(cublasSetMathMode(h, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
            const double probe = time_pt_matmul(a, b, 1);
            const int iters = clamp_iters(probe, g_quick ? 0.1 : 0.4, 3, 200);
            /* Interleave the two so clock drift hits both alike. */
            double t_pt = time_pt_matmul(a, b, iters);
            double t_bl = time_cublas(h, s, n, dA, dB, dC, iters);
            const double t_pt2 = time_pt_matmul(a, b, iters), t_bl2 = time_cublas(h, s, n, dA, dB, dC, iters);
            if (t_pt2 < t_pt) t_pt = t_pt2;
            if (t_bl2 < t_bl) t_bl = t_bl2;
            const double pt_tf = flop / t_pt / 1e12, bl_tf = flop / t_bl / 1e12;
            printf("| %d | %s | %.1f | %.1f | %.1f%% |\n", n, tf32 ? "TF32" : "FP32", pt_tf, bl_tf,
                   100.0 * pt_tf / bl_tf);
            char key[64];
            snprintf(key, sizeof key, "gemm_%s_%d_tflops", tf32 ? "tf32" : "f32", n);
            record(key, pt_tf);
            snprintf(key, sizeof key, "cublas_gemm_%s_%d_tflops", tf32 ? "tf32" : "f32", n);
            record(key, bl_tf);
        }
        unsetenv("PORTABLE_CUDA_TF32");
        CU(cudaFree(dA));
        CU(cudaFree(dB));
        CU(cudaFree(dC));
        pt_release(a);
        pt_release(b);
    }
    BL(cublasDestroy(h));
    CU(cudaStreamDestroy(s));
}

/* ---- Element-wise bandwidth ---- */

static void bench_bandwidth(void) {
    const int64_t n = g_quick ? (int64_t)16 << 20 : (int64_t)64 << 20;
    const int iters = g_quick ? 10 : 30;
    const size_t bytes = (size_t)n * sizeof(float);
    pt_tensor *a = PT(pt_rand(g_dev, PT_F32, 1, &n));
    pt_tensor *b = PT(pt_rand(g_dev, PT_F32, 1, &n));
    for (int i = 0; i < 3; ++i) pt_release(PT(pt_add(a, b)));
    PT_OK_(pt_device_synchronize(g_dev));
    double t0 = now();
    for (int i = 0; i < iters; ++i) pt_release(PT(pt_add(a, b)));
    PT_OK_(pt_device_synchronize(g_dev));
    const double t_add = (now() - t0) / iters;

    void *src, *dst;
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CU(cudaMalloc(&src, bytes));
    CU(cudaMalloc(&dst, bytes));
    CU(cudaMemsetAsync(src, 1, bytes, s));
    for (int i = 0; i < 3; ++i) CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
    CU(cudaStreamSynchronize(s));
    t0 = now();
    for (int i = 0; i < iters; ++i) CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
    CU(cudaStreamSynchronize(s));
    const double t_copy = (now() - t0) / iters;
    CU(cudaFree(src));
    CU(cudaFree(dst));
    CU(cudaStreamDestroy(s));
    pt_release(a);
    pt_release(b);

    const double add_gbs = 3.0 * (double)bytes / t_add / 1e9, copy_gbs = 2.0 * (double)bytes / t_copy / 1e9;
    printf("\n## Element-wise bandwidth, %lldM f32 (GB/s counting bytes read + written)\n\n",
           (long long)(n >> 20));
    printf("| operation | time (ms) | GB/s |\n|---|---|---|\n");
    printf("| pt_add(a, b) | %.3f | %.0f |\n", t_add * 1e3, add_gbs);
    printf("| cudaMemcpyAsync device to device | %.3f | %.0f |\n", t_copy * 1e3, copy_gbs);
    printf("| pt_add / copy bandwidth | | %.1f%% |\n", 100.0 * add_gbs / copy_gbs);
    record("add_64M_gbps", add_gbs);
    record("d2d_copy_64M_gbps", copy_gbs);
}

/* ---- Per-op overhead ---- */

static void bench_overhead(void) {
    const int64_t n = 10;
    const int iters = g_quick ? 2000 : 20000, sync_iters = g_quick ? 1000 : 5000;
    pt_tensor *x = PT(pt_ones(g_dev, PT_F32, 1, &n));
    for (int i = 0; i < 1000; ++i) pt_release(PT(pt_add(x, x)));
    PT_OK_(pt_device_synchronize(g_dev));
    double t0 = now();
    for (int i = 0; i < iters; ++i) pt_release(PT(pt_add(x, x)));
    const double t_enqueue = (now() - t0) / iters;
    PT_OK_(pt_device_synchronize(g_dev));
    t0 = now();
    for (int i = 0; i < sync_iters; ++i) {
        pt_tensor *y = PT(pt_add(x, x));
        PT_OK_(pt_device_synchronize(g_dev));
        pt_release(y);
    }
    const double t_sync = (now() - t0) / sync_iters;
    pt_release(x);
    printf("\n## Per-op overhead, pt_add on a 10-element f32 tensor (microseconds per op, lower is better)\n\n");
    printf("| measurement | us/op |\n|---|---|\n");
    printf("| enqueue only (%d ops, then one synchronize) | %.2f |\n", iters, t_enqueue * 1e6);
    printf("| pt_add + pt_device_synchronize | %.2f |\n", t_sync * 1e6);
    record("add10_enqueue_us", t_enqueue * 1e6);
    record("add10_sync_us", t_sync * 1e6);
}

/* ---- Host <-> device transfers ---- */

static double best_of(double a, double b) { return a < b ? a : b; }

static void bench_transfers(void) {
    const int64_t n = g_quick ? (int64_t)16 << 20 : (int64_t)64 << 20; /* floats: 64 or 256 MB */
    const size_t bytes = (size_t)n * sizeof(float);
    const int reps = 5;
    float *pageable = malloc(bytes);
    if (!pageable) die("malloc");
    for (int64_t i = 0; i < n; ++i) pageable[i] = (float)(i & 1023);
    pt_device *cpu = pt_cpu();
    if (!cpu) die("pt_cpu (pinned copies to the cpu need the cpu backend)");

    /* Through the API. */
    double h2d_pg = 1e9, d2h_pg = 1e9, d2h_pin = 1e9, h2d_pin = 1e9;
    pt_tensor *dev_t = NULL;
    for (int r = 0; r < reps; ++r) {
        pt_release(dev_t);
        double t0 = now();
        dev_t = PT(pt_from_data(g_dev, PT_F32, 1, &n, pageable));
        PT_OK_(pt_device_synchronize(g_dev));
        h2d_pg = best_of(h2d_pg, now() - t0);
        t0 = now();
        PT_OK_(pt_to_host(dev_t, pageable, bytes));
        d2h_pg = best_of(d2h_pg, now() - t0);
    }
    for (int r = 0; r < reps; ++r) {
        double t0 = now();
        pt_tensor *pinned = PT(pt_to_async(dev_t, cpu)); /* lands in pinned memory */
        PT_OK_(pt_device_synchronize(g_dev));
        d2h_pin = best_of(d2h_pin, now() - t0);
        t0 = now();
        pt_tensor *back = PT(pt_to_async(pinned, g_dev));
        PT_OK_(pt_device_synchronize(g_dev));
        h2d_pin = best_of(h2d_pin, now() - t0);
        pt_release(back);
        pt_release(pinned);
    }
    pt_release(dev_t);

    /* Raw CUDA runtime, for reference. */
    void *dbuf, *pinned_raw;
    CU(cudaMalloc(&dbuf, bytes));
    CU(cudaHostAlloc(&pinned_raw, bytes, cudaHostAllocDefault));
    memcpy(pinned_raw, pageable, bytes);
    double raw[4] = {1e9, 1e9, 1e9, 1e9}; /* h2d pageable, d2h pageable, h2d pinned, d2h pinned */
    for (int r = 0; r < reps; ++r) {
        double t0 = now();
        CU(cudaMemcpy(dbuf, pageable, bytes, cudaMemcpyHostToDevice));
        raw[0] = best_of(raw[0], now() - t0);
        t0 = now();
        CU(cudaMemcpy(pageable, dbuf, bytes, cudaMemcpyDeviceToHost));
        raw[1] = best_of(raw[1], now() - t0);
        t0 = now();
        CU(cudaMemcpy(dbuf, pinned_raw, bytes, cudaMemcpyHostToDevice));
        raw[2] = best_of(raw[2], now() - t0);
        t0 = now();
        CU(cudaMemcpy(pinned_raw, dbuf, bytes, cudaMemcpyDeviceToHost));
        raw[3] = best_of(raw[3], now() - t0);
    }
    CU(cudaFree(dbuf));
    CU(cudaFreeHost(pinned_raw));
    free(pageable);

    const double gb = (double)bytes / 1e9;
    printf("\n## Host <-> device copies, %zu MB (GB/s, best of %d)\n\n", bytes >> 20, reps);
    printf("| direction | memory | libportable | cudaMemcpy | libportable / raw |\n|---|---|---|---|---|\n");
    printf("| host to device | pageable (pt_from_data) | %.1f | %.1f | %.0f%% |\n", gb / h2d_pg, gb / raw[0],
           100.0 * raw[0] / h2d_pg);
    printf("| device to host | pageable (pt_to_host) | %.1f | %.1f | %.0f%% |\n", gb / d2h_pg, gb / raw[1],
           100.0 * raw[1] / d2h_pg);
    printf("| host to device | pinned (pt_to_async) | %.1f | %.1f | %.0f%% |\n", gb / h2d_pin, gb / raw[2],
           100.0 * raw[2] / h2d_pin);
    printf("| device to host | pinned (pt_to_async) | %.1f | %.1f | %.0f%% |\n", gb / d2h_pin, gb / raw[3],
           100.0 * raw[3] / d2h_pin);
    record("h2d_pageable_gbps", gb / h2d_pg);
    record("d2h_pageable_gbps", gb / d2h_pg);
    record("h2d_pinned_gbps", gb / h2d_pin);
    record("d2h_pinned_gbps", gb / d2h_pin);
    record("cuda_h2d_pageable_gbps", gb / raw[0]);
    record("cuda_d2h_pageable_gbps", gb / raw[1]);
    record("cuda_h2d_pinned_gbps", gb / raw[2]);
    record("cuda_d2h_pinned_gbps", gb / raw[3]);
}

/* ---- The GPU tour's experiments (d2l "GPUs" chapter) ---- */

static double time_matmul_on(pt_device *d, int n, int iters) {
    const int64_t shape[2] = {n, n};
    pt_tensor *a = PT(pt_randn(d, PT_F32, 2, shape)), *b = PT(pt_randn(d, PT_F32, 2, shape));
    pt_release(PT(pt_matmul(a, b)));
    PT_OK_(pt_device_synchronize(d));
    double t0 = now();
    for (int i = 0; i < iters; ++i) pt_release(PT(pt_matmul(a, b)));
    PT_OK_(pt_device_synchronize(d));
    const double t = (now() - t0) / iters;
    pt_release(a);
    pt_release(b);
    return t;
}

static void bench_tour(void) {
    pt_device *cpu = pt_cpu();
    printf("\n## GPU tour experiments (milliseconds, lower is better)\n\n");
    printf("| experiment | time (ms) |\n|---|---|\n");
    /* 7: large vs small work on cpu and cuda. */
    const int big = g_quick ? 2000 : 5000;
    struct { pt_device *d; const char *name; } devs[2] = {{cpu, "cpu"}, {g_dev, "cuda"}};
    for (int k = 0; k < 2; ++k) {
        if (!devs[k].d) continue;
        const double tb = time_matmul_on(devs[k].d, big, k == 0 ? 2 : 10);
        const double ts = time_matmul_on(devs[k].d, 100, 200);
        printf("| matmul %dx%d on %s | %.3f |\n", big, big, devs[k].name, tb * 1e3);
        printf("| matmul 100x100 on %s | %.4f |\n", devs[k].name, ts * 1e3);
        char key[64];
        snprintf(key, sizeof key, "tour_matmul_big_%s_ms", devs[k].name);
        record(key, tb * 1e3);
        snprintf(key, sizeof key, "tour_matmul_100_%s_ms", devs[k].name);
        record(key, ts * 1e3);
    }
    /* 8: 1000 products of 100x100, a norm read back each step vs once. */
    const int steps = 1000;
    const int64_t shape[2] = {100, 100};
    pt_tensor *a = PT(pt_randn(g_dev, PT_F32, 2, shape)), *b = PT(pt_randn(g_dev, PT_F32, 2, shape));
    PT_OK_(pt_device_synchronize(g_dev));
    double t0 = now(), sink = 0;
    for (int i = 0; i < steps; ++i) {
        pt_scope sc = pt_scope_begin();
        sink += pt_item(PT(pt_norm(PT(pt_matmul(a, b)))));
        pt_scope_end(sc);
    }
    const double t_each = now() - t0;
    t0 = now();
    pt_tensor **norms = malloc(sizeof(pt_tensor *) * steps);
    if (!norms) die("malloc");
    for (int i = 0; i < steps; ++i) {
        pt_tensor *c = PT(pt_matmul(a, b));
        norms[i] = PT(pt_norm(c));
        pt_release(c);
    }
    pt_tensor *all = PT(pt_stack(steps, norms, 0));
    float *host = malloc(sizeof(float) * steps);
    if (!host) die("malloc");
    PT_OK_(pt_to_host(all, host, sizeof(float) * steps));
    const double t_once = now() - t0;
    for (int i = 0; i < steps; ++i) pt_release(norms[i]);
    pt_release(all);
    free(norms);
    if (fabs(host[steps - 1] - sink / steps) > 1e-3 * fabs(sink / steps))
        fprintf(stderr, "bench_cuda: note: the two norm loops disagree (%g vs %g)\n", host[steps - 1], sink / steps);
    free(host);
    printf("| 1000 x (100x100 matmul + norm), pt_item each step | %.2f |\n", t_each * 1e3);
    printf("| 1000 x (100x100 matmul + norm), one transfer at the end | %.2f |\n", t_once * 1e3);
    record("tour_norm_each_ms", t_each * 1e3);
    record("tour_norm_once_ms", t_once * 1e3);
    pt_release(a);
    pt_release(b);
    /* 11: 50 products, then copies to the cpu: waiting copies vs pinned async copies. */
    if (cpu) {
        const int nprod = 50;
        const int64_t s2[2] = {1000, 1000};
        pt_tensor *x = PT(pt_randn(g_dev, PT_F32, 2, s2));
        pt_tensor *outs[50], *copies[50];
        for (int mode = 0; mode < 2; ++mode) {
            PT_OK_(pt_device_synchronize(g_dev));
            t0 = now();
            for (int i = 0; i < nprod; ++i) {
                outs[i] = PT(pt_matmul(x, x));
                if (mode == 1) copies[i] = PT(pt_to_async(outs[i], cpu));
            }
            if (mode == 0)
                for (int i = 0; i < nprod; ++i) copies[i] = PT(pt_to(outs[i], cpu));
            PT_OK_(pt_device_synchronize(g_dev));
            const double t = now() - t0;
            for (int i = 0; i < nprod; ++i) {
                pt_release(outs[i]);
                pt_release(copies[i]);
            }
            printf("| 50 x 1000x1000 matmul, then %s | %.2f |\n",
                   mode ? "pt_to_async to cpu after each (pinned)" : "pt_to(cpu) of each (waits)", t * 1e3);
            record(mode ? "tour_copy_async_ms" : "tour_copy_sync_ms", t * 1e3);
        }
        pt_release(x);
    }
}

static void write_json(const char *path, const pt_device_props *p) {
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fprintf(f, "{\n  \"source\": \"libportable\",\n  \"device\": \"%s\",\n  \"driver\": \"%s\",\n  \"results\": {\n",
            p->name, p->driver_version);
    for (int i = 0; i < g_nresults; ++i)
        fprintf(f, "    \"%s\": %.6g%s\n", g_results[i].key, g_results[i].value, i + 1 < g_nresults ? "," : "");
    fprintf(f, "  }\n}\n");
    fclose(f);
}

int main(int argc, char **argv) {
    const char *json = NULL, *devname = "cuda:0", *only = "gemm,bandwidth,overhead,transfers,tour";
    bool tour = true;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--quick") == 0) g_quick = true;
        else if (strcmp(argv[i], "--no-tour") == 0) tour = false;
        else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) json = argv[++i];
        else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) devname = argv[++i];
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [--quick] [--json FILE] [--no-tour] [--only SECTIONS] [--device cuda:N]\n"
                    "  SECTIONS: comma-separated, of gemm,bandwidth,overhead,transfers,tour\n",
                    argv[0]);
            return 2;
        }
    }
    const char *known[] = {"gemm", "bandwidth", "overhead", "transfers", "tour"};
    bool want[5] = {false};
    for (const char *p = only; *p;) {
        size_t n = strcspn(p, ",");
        int k = -1;
        for (int j = 0; j < 5; ++j)
            if (strlen(known[j]) == n && strncmp(p, known[j], n) == 0) k = j;
        if (k < 0) {
            fprintf(stderr, "bench_cuda: --only: unknown section '%.*s' (known: gemm, bandwidth, "
                            "overhead, transfers, tour)\n", (int)n, p);
            return 2;
        }
        want[k] = true;
        p += n + (p[n] == ',');
    }
    tour = tour && want[4];
    g_dev = pt_device_get(devname);
    if (!g_dev) {
        fprintf(stderr, "bench_cuda: no %s: %s\n", devname, pt_last_error());
        return 77;
    }
    pt_device_props p;
    PT_OK_(pt_device_info(g_dev, &p));
    printf("# bench_cuda: libportable on %s\n\n", devname);
    printf("| device | driver | platform | SMs | memory |\n|---|---|---|---|---|\n");
    printf("| %s | %s | %s | %d | %.1f GiB |\n", p.name, p.driver_version, p.platform, p.compute_units,
           (double)p.memory_total / (1 << 30));
    if (want[0]) bench_gemm();
    if (want[1]) bench_bandwidth();
    if (want[2]) bench_overhead();
    if (want[3]) bench_transfers();
    if (tour) bench_tour();
    if (json) write_json(json, &p);
    return 0;
}
