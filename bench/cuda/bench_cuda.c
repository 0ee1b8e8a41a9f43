/* bench_cuda — libportable on cuda:0 against the libraries underneath.
 *
 *   GEMM            pt_matmul vs cuBLAS called directly, square n x n, random
 *                   data: FP32 (cublasSgemm), TF32 (PORTABLE_CUDA_TF32=1 vs
 *                   cublasSgemm with CUBLAS_TF32_TENSOR_OP_MATH) and bf16
 *                   (PT_BF16 tensors vs cublasGemmEx, CUDA_R_16BF in and out,
 *                   CUBLAS_COMPUTE_32F)
 *   bandwidth       pt_add on 64M floats vs a device-to-device cudaMemcpyAsync
 *   sum             pt_sum(x, PT_ALL) of 64M and 256M floats vs the read
 *                   bandwidth: cublasSasum (a read-only reduction of the same
 *                   floats) and a device-to-device copy (bytes read + written)
 *   per-op overhead pt_add on 10 elements, 500 and 20000 ops: enqueue cost,
 *                   enqueue + one synchronize, and a synchronize after each;
 *                   beside it the floor under any launch, an empty kernel
 *                   through the driver's cuLaunchKernel, alternated
 *   transfers       host<->device, pageable and pinned, through the API
 *                   (pt_from_data, pt_to_host, pt_to_async) and the runtime
 *                   directly (cudaMemcpy; pinned: cudaMemcpyAsync with one
 *                   pinned buffer allocated once and reused)
 *   GPU tour        the d2l "GPUs" chapter experiments: large vs small
 *                   products on cpu and cuda, logging a norm per step vs once,
 *                   copies after compute, synchronous vs asynchronous
 *
 * Prints markdown tables; --json FILE also writes the figures for
 * bench/cuda/combine_results.py, which sets them beside bench_torch.py's.
 * Timing: wall clock around a loop, with each side synchronised before the
 * clock starts and before it is read; a warm-up first. Where libportable has
 * a contender, the two alternate round by round (so clock and load changes
 * hit both alike) and each keeps its best round.
 *
 * The contenders call cudart and cuBLAS directly, on the device cudart
 * numbers as libportable does. Where cudart sees no device (the GPU script's
 * rehearsal, with the CUDA simulator standing in for the plugin) their
 * columns say so and only libportable's side runs.
 *
 * Usage: bench_cuda [--quick] [--json FILE] [--no-tour] [--only SECTIONS] [--device cuda:N]
 * SECTIONS is a comma-separated subset of gemm,bandwidth,sum,overhead,transfers,tour. */
#define _POSIX_C_SOURCE 200809L
#include <cublas_v2.h>
#include <dlfcn.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
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
/* Whether cudart called directly sees the device (the contenders run), and
 * if not, why. */
static bool g_direct;
static char g_direct_why[200];

static int clamp_iters(double seconds_per_iter, double budget, int lo, int hi) {
    int n = seconds_per_iter > 0 ? (int)(budget / seconds_per_iter) : hi;
    return n < lo ? lo : n > hi ? hi : n;
}

/* The note under a table whose contender columns are empty. */
static void note_no_direct(void) {
    if (!g_direct) printf("\n(contender columns empty: %s)\n", g_direct_why);
}

/* ---- Alternating contenders ----
 *
 * A contender enqueues one unit of work (run) on its queue. alternate() runs a warm-up round, then `rounds` rounds in which
 * every contender in turn runs `iters` units back to back between two
 * synchronisations; best[i] is contender i's best round, per unit. */

typedef struct contender {
    void (*run)(void *ctx);
    void *ctx;
    cudaStream_t stream; /* the contender's queue; NULL: libportable's device */
} contender;

static void contender_sync(const contender *c) {
    if (c->stream) CU(cudaStreamSynchronize(c->stream));
    else PT_OK_(pt_device_synchronize(g_dev));
}

static void alternate(const contender *c, int nc, int rounds, int iters, double *best) {
    for (int i = 0; i < nc; ++i) best[i] = 1e30;
    for (int r = -1; r < rounds; ++r) {
        for (int i = 0; i < nc; ++i) {
            const int k = r < 0 ? (iters < 2 ? iters : 2) : iters;
            contender_sync(&c[i]);
            const double t0 = now();
            for (int j = 0; j < k; ++j) c[i].run(c[i].ctx);
            contender_sync(&c[i]);
            const double t = (now() - t0) / k;
            if (r >= 0 && t < best[i]) best[i] = t;
        }
    }
}

/* Iterations that fill about `budget` seconds per round, from one timed unit
 * of contender c after one untimed. */
static int calibrate(const contender *c, double budget, int lo, int hi) {
    c->run(c->ctx);
    contender_sync(c);
    const double t0 = now();
    c->run(c->ctx);
    contender_sync(c);
    return clamp_iters(now() - t0, budget, lo, hi);
}

/* ---- GEMM ---- */

enum { MATH_FP32, MATH_TF32, MATH_BF16, MATH_N };
static const char *const math_name[MATH_N] = {"FP32", "TF32", "BF16"};
static const char *const math_key[MATH_N] = {"f32", "tf32", "bf16"};

typedef struct gemm_ctx {
    pt_tensor *a, *b; /* libportable's operands, f32 or bf16 */
    cublasHandle_t h;
    int n, math;
    const void *A, *B; /* the contender's copies of the same values */
    void *C;
} gemm_ctx;

static void run_pt_matmul(void *p) {
    gemm_ctx *g = p;
    pt_release(PT(pt_matmul(g->a, g->b)));
}

static void run_cublas_gemm(void *p) {
    gemm_ctx *g = p;
    const float one = 1.0f, zero = 0.0f;
    const int n = g->n;
    /* Row-major C = A B is column-major C^T = B^T A^T: the call the plugin makes. */
    if (g->math == MATH_BF16)
        BL(cublasGemmEx(g->h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, g->B, CUDA_R_16BF, n, g->A, CUDA_R_16BF,
                        n, &zero, g->C, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    else
        BL(cublasSgemm(g->h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, (const float *)g->B, n,
                       (const float *)g->A, n, &zero, (float *)g->C, n));
}

/* A cudaMalloc'd copy of x's values, for a contender. */
static void *direct_copy_of(pt_tensor *x, size_t bytes) {
    void *host = malloc(bytes), *dev = NULL;
    if (!host) die("malloc");
    PT_OK_(pt_to_host(x, host, bytes));
    CU(cudaMalloc(&dev, bytes));
    CU(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));
    free(host);
    return dev;
}

static void bench_gemm(void) {
    const int sizes_full[] = {1024, 4096, 8192}, sizes_quick[] = {512, 1024};
    const int *sizes = g_quick ? sizes_quick : sizes_full;
    const int nsizes = g_quick ? 2 : 3;
    cublasHandle_t h = NULL;
    cudaStream_t s = NULL;
    if (g_direct) {
        CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        BL(cublasCreate(&h));
        BL(cublasSetStream(h, s));
    }
    printf("\n## GEMM, C = A B with square n x n matrices of N(0,1) values (TFLOP/s, higher is better)\n\n");
    printf("FP32 and TF32: f32 tensors against cublasSgemm (TF32: PORTABLE_CUDA_TF32=1 against "
           "CUBLAS_TF32_TENSOR_OP_MATH). BF16: PT_BF16 tensors against cublasGemmEx with CUDA_R_16BF "
           "inputs and output and CUBLAS_COMPUTE_32F. Each pair alternates round by round, best round.\n\n");
    printf("| n | math | pt_matmul | cuBLAS direct | pt / cuBLAS |\n|---|---|---|---|---|\n");
    for (int si = 0; si < nsizes; ++si) {
        const int n = sizes[si];
        const int64_t shape[2] = {n, n};
        pt_manual_seed(42);
        pt_tensor *a32 = PT(pt_randn(g_dev, PT_F32, 2, shape));
        pt_tensor *b32 = PT(pt_randn(g_dev, PT_F32, 2, shape));
        pt_tensor *a16 = PT(pt_cast(a32, PT_BF16)), *b16 = PT(pt_cast(b32, PT_BF16));
        const size_t elems = (size_t)n * (size_t)n;
        /* cuBLAS gets the same random values (zeros would run faster). */
        void *dA = NULL, *dB = NULL, *dC = NULL, *dA16 = NULL, *dB16 = NULL, *dC16 = NULL;
        if (g_direct) {
            dA = direct_copy_of(a32, elems * 4);
            dB = direct_copy_of(b32, elems * 4);
            dA16 = direct_copy_of(a16, elems * 2);
            dB16 = direct_copy_of(b16, elems * 2);
            CU(cudaMalloc(&dC, elems * 4));
            CU(cudaMalloc(&dC16, elems * 2));
        }
        const double flop = 2.0 * n * (double)n * n;
        for (int math = 0; math < MATH_N; ++math) {
            if (math == MATH_TF32) setenv("PORTABLE_CUDA_TF32", "1", 1);
            else unsetenv("PORTABLE_CUDA_TF32");
            if (g_direct) BL(cublasSetMathMode(h, math == MATH_TF32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
            const bool bf16 = math == MATH_BF16;
            gemm_ctx g = {bf16 ? a16 : a32, bf16 ? b16 : b32, h, n, math, bf16 ? dA16 : dA, bf16 ? dB16 : dB,
                          bf16 ? dC16 : dC};
            const contender c[2] = {{run_pt_matmul, &g, NULL}, {run_cublas_gemm, &g, s}};
            const int iters = calibrate(&c[0], g_quick ? 0.05 : 0.3, 3, 200);
            double best[2];
            alternate(c, g_direct ? 2 : 1, 2, iters, best);
            const double pt_tf = flop / best[0] / 1e12;
            char key[64];
            snprintf(key, sizeof key, "gemm_%s_%d_tflops", math_key[math], n);
            record(key, pt_tf);
            if (g_direct) {
                const double bl_tf = flop / best[1] / 1e12;
                printf("| %d | %s | %.1f | %.1f | %.1f%% |\n", n, math_name[math], pt_tf, bl_tf, 100.0 * pt_tf / bl_tf);
                snprintf(key, sizeof key, "cublas_gemm_%s_%d_tflops", math_key[math], n);
                record(key, bl_tf);
            } else {
                printf("| %d | %s | %.1f | - | - |\n", n, math_name[math], pt_tf);
            }
            fflush(stdout);
        }
        unsetenv("PORTABLE_CUDA_TF32");
        if (g_direct) {
            void *bufs[6] = {dA, dB, dC, dA16, dB16, dC16};
            for (int i = 0; i < 6; ++i) CU(cudaFree(bufs[i]));
        }
        pt_release(a32);
        pt_release(b32);
        pt_release(a16);
        pt_release(b16);
    }
    if (g_direct) {
        BL(cublasDestroy(h));
        CU(cudaStreamDestroy(s));
    }
    note_no_direct();
}

/* ---- Element-wise bandwidth ---- */

typedef struct add_ctx {
    pt_tensor *a, *b;
    void *dst;
    const void *src;
    size_t bytes;
    cudaStream_t s;
} add_ctx;

static void run_pt_add(void *p) {
    add_ctx *c = p;
    pt_release(PT(pt_add(c->a, c->b)));
}

static void run_d2d_copy(void *p) {
    add_ctx *c = p;
    CU(cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, c->s));
}

static void bench_bandwidth(void) {
    const int64_t n = g_quick ? (int64_t)16 << 20 : (int64_t)64 << 20;
    const int iters = g_quick ? 5 : 20, rounds = 3;
    const size_t bytes = (size_t)n * sizeof(float);
    add_ctx ctx = {PT(pt_rand(g_dev, PT_F32, 1, &n)), PT(pt_rand(g_dev, PT_F32, 1, &n)), NULL, NULL, bytes, NULL};
    void *src = NULL;
    if (g_direct) {
        CU(cudaStreamCreateWithFlags(&ctx.s, cudaStreamNonBlocking));
        CU(cudaMalloc(&src, bytes));
        CU(cudaMalloc(&ctx.dst, bytes));
        CU(cudaMemsetAsync(src, 1, bytes, ctx.s));
        ctx.src = src;
    }
    const contender c[2] = {{run_pt_add, &ctx, NULL}, {run_d2d_copy, &ctx, ctx.s}};
    double best[2];
    alternate(c, g_direct ? 2 : 1, rounds, iters, best);
    if (g_direct) {
        CU(cudaFree(src));
        CU(cudaFree(ctx.dst));
        CU(cudaStreamDestroy(ctx.s));
    }
    pt_release(ctx.a);
    pt_release(ctx.b);

    const double add_gbs = 3.0 * (double)bytes / best[0] / 1e9;
    const double copy_gbs = g_direct ? 2.0 * (double)bytes / best[1] / 1e9 : 0;
    printf("\n## Element-wise bandwidth, %lldM f32 (GB/s counting bytes read + written; alternating, best of %d "
           "rounds of %d)\n\n", (long long)(n >> 20), rounds, iters);
    printf("| operation | time (ms) | GB/s |\n|---|---|---|\n");
    printf("| pt_add(a, b) | %.3f | %.0f |\n", best[0] * 1e3, add_gbs);
    if (g_direct) {
        printf("| cudaMemcpyAsync device to device | %.3f | %.0f |\n", best[1] * 1e3, copy_gbs);
        printf("| pt_add / copy bandwidth | | %.1f%% |\n", 100.0 * add_gbs / copy_gbs);
    } else {
        printf("| cudaMemcpyAsync device to device | - | - |\n");
    }
    note_no_direct();
    record("add_64M_gbps", add_gbs);
    if (g_direct) record("d2d_copy_64M_gbps", copy_gbs);
}

/* ---- Full reduction against the read bandwidth ---- */

typedef struct sum_ctx {
    pt_tensor *x;
    cublasHandle_t h;
    int n;
    const float *X; /* the contenders' copy of x */
    float *result;  /* cublasSasum's, on the device (no wait for the host) */
    void *dst;
    cudaStream_t s;
} sum_ctx;

static void run_pt_sum(void *p) {
    sum_ctx *c = p;
    pt_release(PT(pt_sum(c->x, PT_ALL, false)));
}

static void run_sasum(void *p) {
    sum_ctx *c = p;
    BL(cublasSasum(c->h, c->n, c->X, 1, c->result));
}

static void run_sum_copy(void *p) {
    sum_ctx *c = p;
    CU(cudaMemcpyAsync(c->dst, c->X, (size_t)c->n * sizeof(float), cudaMemcpyDeviceToDevice, c->s));
}

static void bench_sum(void) {
    const int64_t full[2] = {(int64_t)64 << 20, (int64_t)256 << 20}, quick[2] = {(int64_t)4 << 20, (int64_t)16 << 20};
    const int rounds = 5;
    printf("\n## Full reduction, pt_sum(x, PT_ALL) of n f32 (GB/s of bytes read, higher is better)\n\n");
    printf("The read bandwidth pt_sum is held to: the faster of cublasSasum (a read-only reduction of the same n "
           "floats, result left on the device) and a device-to-device cudaMemcpyAsync of them counted as bytes "
           "read + written. The three alternate round by round, best of %d rounds.\n\n", rounds);
    printf("| n | pt_sum | cublasSasum | copy (read + written) | pt_sum / read bandwidth |\n|---|---|---|---|---|\n");
    for (int k = 0; k < 2; ++k) {
        const int64_t n = g_quick ? quick[k] : full[k];
        const size_t bytes = (size_t)n * sizeof(float);
        sum_ctx ctx = {PT(pt_randn(g_dev, PT_F32, 1, &n)), NULL, (int)n, NULL, NULL, NULL, NULL};
        if (g_direct) {
            CU(cudaStreamCreateWithFlags(&ctx.s, cudaStreamNonBlocking));
            BL(cublasCreate(&ctx.h));
            BL(cublasSetStream(ctx.h, ctx.s));
            BL(cublasSetPointerMode(ctx.h, CUBLAS_POINTER_MODE_DEVICE));
            ctx.X = direct_copy_of(ctx.x, bytes);
            CU(cudaMalloc((void **)&ctx.result, sizeof(float)));
            CU(cudaMalloc(&ctx.dst, bytes));
        }
        const contender c[3] = {{run_pt_sum, &ctx, NULL}, {run_sasum, &ctx, ctx.s}, {run_sum_copy, &ctx, ctx.s}};
        const int iters = calibrate(&c[0], g_quick ? 0.02 : 0.05, 3, 100);
        double best[3];
        alternate(c, g_direct ? 3 : 1, rounds, iters, best);
        const double pt_gbs = (double)bytes / best[0] / 1e9;
        char key[64];
        snprintf(key, sizeof key, "sum_%lldM_gbps", (long long)(n >> 20));
        record(key, pt_gbs);
        if (g_direct) {
            const double sasum_gbs = (double)bytes / best[1] / 1e9, copy_gbs = 2.0 * (double)bytes / best[2] / 1e9;
            const double read_gbs = sasum_gbs > copy_gbs ? sasum_gbs : copy_gbs;
            printf("| %lldM | %.0f | %.0f | %.0f | %.1f%% |\n", (long long)(n >> 20), pt_gbs, sasum_gbs, copy_gbs,
                   100.0 * pt_gbs / read_gbs);
            snprintf(key, sizeof key, "cublas_sasum_%lldM_gbps", (long long)(n >> 20));
            record(key, sasum_gbs);
            snprintf(key, sizeof key, "sum_copy_%lldM_gbps", (long long)(n >> 20));
            record(key, copy_gbs);
            snprintf(key, sizeof key, "read_bw_%lldM_gbps", (long long)(n >> 20));
            record(key, read_gbs);
            CU(cudaFree((void *)ctx.X));
            CU(cudaFree(ctx.result));
            CU(cudaFree(ctx.dst));
            BL(cublasDestroy(ctx.h));
            CU(cudaStreamDestroy(ctx.s));
        } else {
            printf("| %lldM | %.0f | - | - | - |\n", (long long)(n >> 20), pt_gbs);
        }
        fflush(stdout);
        pt_release(ctx.x);
    }
    note_no_direct();
}

/* ---- Per-op overhead ----
 *
 * CUDA's launch queue holds about a thousand kernels: 500 ops fit, so their
 * enqueue time is host time only; past it a launch waits for the device to
 * retire one, and 20000 ops measure the device's rate for tiny kernels as
 * much as the host's. Both are reported. */

/* The floor under any kernel launch on this machine: an empty kernel
 * through the driver API's cuLaunchKernel, loaded from PTX text (this file
 * is plain C, built without nvcc). libcuda is dlopen'ed, so a driver without
 * these entry points (the simulator's stand-in) leaves the column empty with
 * the reason instead of failing the benchmark. */
typedef int (*cu_module_load_data_fn)(void **module, const void *image);
typedef int (*cu_module_get_function_fn)(void **fn, void *module, const char *name);
typedef int (*cu_launch_kernel_fn)(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                   unsigned bz, unsigned shared, void *stream, void **params, void **extra);
static struct {
    cu_launch_kernel_fn launch;
    void *fn;
    cudaStream_t stream;
    char why[200];
} g_empty;

static bool empty_kernel_ready(void) {
    if (g_empty.fn) return true;
    if (!g_direct) {
        snprintf(g_empty.why, sizeof g_empty.why, "%s", g_direct_why);
        return false;
    }
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    cu_module_load_data_fn load = lib ? (cu_module_load_data_fn)dlsym(lib, "cuModuleLoadData") : NULL;
    cu_module_get_function_fn get = lib ? (cu_module_get_function_fn)dlsym(lib, "cuModuleGetFunction") : NULL;
    g_empty.launch = lib ? (cu_launch_kernel_fn)dlsym(lib, "cuLaunchKernel") : NULL;
    if (!load || !get || !g_empty.launch) {
        snprintf(g_empty.why, sizeof g_empty.why, "libcuda.so.1 %s", lib ? "lacks the module entry points" : "not found");
        return false;
    }
    static const char ptx[] = ".version 7.0\n.target sm_70\n.address_size 64\n"
                              ".visible .entry pt_bench_empty()\n{\n\tret;\n}\n";
    void *module = NULL;
    int rc;
    CU(cudaFree(NULL)); /* the runtime's primary context, current on this thread */
    if ((rc = load(&module, ptx)) != 0 || (rc = get(&g_empty.fn, module, "pt_bench_empty")) != 0) {
        snprintf(g_empty.why, sizeof g_empty.why, "loading an empty PTX kernel failed (CUresult %d)", rc);
        g_empty.fn = NULL;
        return false;
    }
    CU(cudaStreamCreateWithFlags(&g_empty.stream, cudaStreamNonBlocking));
    return true;
}

static void launch_empty(void) {
    if (g_empty.launch(g_empty.fn, 1, 1, 1, 32, 1, 1, 0, g_empty.stream, NULL, NULL) != 0) die("cuLaunchKernel");
}

static void bench_overhead(void) {
    const int64_t n = 10;
    const int counts[2] = {500, 20000}, rounds = 3, sync_iters = g_quick ? 1000 : 5000;
    pt_tensor *a = PT(pt_rand(g_dev, PT_F32, 1, &n)), *b = PT(pt_rand(g_dev, PT_F32, 1, &n));
    for (int i = 0; i < 1000; ++i) pt_release(PT(pt_add(a, b)));
    PT_OK_(pt_device_synchronize(g_dev));
    const bool floor_ok = empty_kernel_ready();
    if (floor_ok) {
        for (int i = 0; i < 1000; ++i) launch_empty();
        CU(cudaStreamSynchronize(g_empty.stream));
    }
    double enq[2] = {1e30, 1e30}, with_sync[2] = {1e30, 1e30}, floor_enq[2] = {1e30, 1e30};
    for (int r = 0; r < rounds; ++r) {
        for (int k = 0; k < 2; ++k) {
            PT_OK_(pt_device_synchronize(g_dev));
            const double t0 = now();
            for (int i = 0; i < counts[k]; ++i) pt_release(PT(pt_add(a, b)));
            const double t1 = now();
            PT_OK_(pt_device_synchronize(g_dev));
            const double t2 = now();
            if ((t1 - t0) / counts[k] < enq[k]) enq[k] = (t1 - t0) / counts[k];
            if ((t2 - t0) / counts[k] < with_sync[k]) with_sync[k] = (t2 - t0) / counts[k];
            if (floor_ok) { /* the same count of empty launches, right after */
                const double f0 = now();
                for (int i = 0; i < counts[k]; ++i) launch_empty();
                const double f1 = now();
                CU(cudaStreamSynchronize(g_empty.stream));
                if ((f1 - f0) / counts[k] < floor_enq[k]) floor_enq[k] = (f1 - f0) / counts[k];
            }
        }
    }
    double t0 = now();
    for (int i = 0; i < sync_iters; ++i) {
        pt_tensor *y = PT(pt_add(a, b));
        PT_OK_(pt_device_synchronize(g_dev));
        pt_release(y);
    }
    const double t_each = (now() - t0) / sync_iters;
    pt_release(a);
    pt_release(b);
    printf("\n## Per-op overhead, pt_add(a, b) on 10-element f32 tensors (microseconds per op, lower is better; "
           "best of %d rounds)\n\n", rounds);
    printf("| measurement | us/op |\n|---|---|\n");
    for (int k = 0; k < 2; ++k) {
        printf("| %d ops, enqueue only (clock read before the synchronize) | %.2f |\n", counts[k], enq[k] * 1e6);
        printf("| %d ops, enqueue + one pt_device_synchronize | %.2f |\n", counts[k], with_sync[k] * 1e6);
        char key[64];
        snprintf(key, sizeof key, "add10_enqueue_%d_us", counts[k]);
        record(key, enq[k] * 1e6);
        snprintf(key, sizeof key, "add10_enqueue_sync_%d_us", counts[k]);
        record(key, with_sync[k] * 1e6);
    }
    printf("| pt_add + pt_device_synchronize after each op (%d ops) | %.2f |\n", sync_iters, t_each * 1e6);
    record("add10_sync_us", t_each * 1e6);
    printf("\n### The floor: an empty kernel through cuLaunchKernel, alternated with the rows above "
           "(microseconds per launch, enqueue only)\n\n");
    printf("| launches | empty kernel us | pt_add us | pt_add - floor (libportable's own host work) |\n"
           "|---|---|---|---|\n");
    for (int k = 0; k < 2; ++k) {
        if (!floor_ok) {
            printf("| %d | - | %.2f | - |\n", counts[k], enq[k] * 1e6);
            continue;
        }
        printf("| %d | %.2f | %.2f | %.2f |\n", counts[k], floor_enq[k] * 1e6, enq[k] * 1e6,
               (enq[k] - floor_enq[k]) * 1e6);
        char key[64];
        snprintf(key, sizeof key, "empty_launch_%d_us", counts[k]);
        record(key, floor_enq[k] * 1e6);
    }
    if (!floor_ok) printf("\n(no floor measured: %s)\n", g_empty.why);
}

/* ---- Host <-> device transfers ---- */

/* Keeps the time since t0 in *best if it is shorter; best NULL: a warm-up. */
static void keep_best(double *best, double t0) {
    const double t = now() - t0;
    if (best && t < *best) *best = t;
}

static void bench_transfers(void) {
    const int64_t n = g_quick ? (int64_t)16 << 20 : (int64_t)64 << 20; /* floats: 64 or 256 MB */
    const size_t bytes = (size_t)n * sizeof(float);
    const int reps = 5;
    float *pageable = malloc(bytes);
    if (!pageable) die("malloc");
    for (int64_t i = 0; i < n; ++i) pageable[i] = (float)(i & 1023);
    pt_device *cpu = pt_cpu();
    if (!cpu) die("pt_cpu (pinned copies to the cpu need the cpu backend)");

    /* Contenders: cudaMemcpy for pageable memory; for pinned memory,
     * cudaMemcpyAsync on a stream with one pinned buffer, allocated here
     * once and reused by every round (what pt_to_async's pinned cache gives
     * libportable after its first round). */
    void *dbuf = NULL, *pinned_raw = NULL;
    cudaStream_t s = NULL;
    if (g_direct) {
        CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        CU(cudaMalloc(&dbuf, bytes));
        CU(cudaHostAlloc(&pinned_raw, bytes, cudaHostAllocDefault));
        memcpy(pinned_raw, pageable, bytes);
    }
    /* libportable: h2d pageable, d2h pageable, h2d pinned, d2h pinned; the
     * same for the runtime directly. Each copy of one against the same copy
     * of the other, round by round; round -1 warms up (allocations, the
     * pinned cache's first block). */
    double lib[4] = {1e9, 1e9, 1e9, 1e9}, raw[4] = {1e9, 1e9, 1e9, 1e9}, t0;
    pt_tensor *dev_t = NULL;
    for (int r = -1; r < reps; ++r) {
#define SLOT(a, k) (r < 0 ? NULL : &(a)[k])
        pt_release(dev_t);
        t0 = now();
        dev_t = PT(pt_from_data(g_dev, PT_F32, 1, &n, pageable));
        PT_OK_(pt_device_synchronize(g_dev));
        keep_best(SLOT(lib, 0), t0);
        if (g_direct) {
            t0 = now();
            CU(cudaMemcpy(dbuf, pageable, bytes, cudaMemcpyHostToDevice));
            keep_best(SLOT(raw, 0), t0);
        }
        t0 = now();
        PT_OK_(pt_to_host(dev_t, pageable, bytes));
        keep_best(SLOT(lib, 1), t0);
        if (g_direct) {
            t0 = now();
            CU(cudaMemcpy(pageable, dbuf, bytes, cudaMemcpyDeviceToHost));
            keep_best(SLOT(raw, 1), t0);
        }
        t0 = now();
        pt_tensor *pinned = PT(pt_to_async(dev_t, cpu)); /* lands in pinned memory */
        PT_OK_(pt_device_synchronize(g_dev));
        keep_best(SLOT(lib, 3), t0);
        if (g_direct) {
            t0 = now();
            CU(cudaMemcpyAsync(pinned_raw, dbuf, bytes, cudaMemcpyDeviceToHost, s));
            CU(cudaStreamSynchronize(s));
            keep_best(SLOT(raw, 3), t0);
        }
        t0 = now();
        pt_tensor *back = PT(pt_to_async(pinned, g_dev));
        PT_OK_(pt_device_synchronize(g_dev));
        keep_best(SLOT(lib, 2), t0);
        if (g_direct) {
            t0 = now();
            CU(cudaMemcpyAsync(dbuf, pinned_raw, bytes, cudaMemcpyHostToDevice, s));
            CU(cudaStreamSynchronize(s));
            keep_best(SLOT(raw, 2), t0);
        }
        pt_release(back);
        pt_release(pinned);
#undef SLOT
    }
    pt_release(dev_t);
    if (g_direct) {
        CU(cudaFree(dbuf));
        CU(cudaFreeHost(pinned_raw));
        CU(cudaStreamDestroy(s));
    }
    free(pageable);

    const double gb = (double)bytes / 1e9;
    static const char *const rows[4] = {
        "host to device | pageable: pt_from_data vs cudaMemcpy",
        "device to host | pageable: pt_to_host vs cudaMemcpy",
        "host to device | pinned: pt_to_async from a pinned cpu tensor vs cudaMemcpyAsync from one reused pinned buffer",
        "device to host | pinned: pt_to_async to the cpu vs cudaMemcpyAsync into one reused pinned buffer",
    };
    static const char *const keys[4] = {"h2d_pageable_gbps", "d2h_pageable_gbps", "h2d_pinned_gbps", "d2h_pinned_gbps"};
    printf("\n## Host <-> device copies, %zu MB (GB/s, alternating, best of %d)\n\n", bytes >> 20, reps);
    printf("| direction | memory: libportable vs the runtime directly | libportable | CUDA runtime | "
           "libportable / runtime |\n|---|---|---|---|---|\n");
    for (int k = 0; k < 4; ++k) {
        char key[64];
        record(keys[k], gb / lib[k]);
        if (g_direct) {
            printf("| %s | %.1f | %.1f | %.0f%% |\n", rows[k], gb / lib[k], gb / raw[k], 100.0 * raw[k] / lib[k]);
            snprintf(key, sizeof key, "cuda_%s", keys[k]);
            record(key, gb / raw[k]);
        } else {
            printf("| %s | %.1f | - | - |\n", rows[k], gb / lib[k]);
        }
    }
    note_no_direct();
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
    /* 11: 50 products, then copies to the cpu: waiting copies vs pinned
     * async copies. Each loop runs once untimed first and its results are
     * released and the device synchronised: the timed async loop then finds
     * its 50 pinned blocks of 4 MiB in the pinned cache (which has no cap;
     * pt_empty_cache empties it) and measures the overlap the chapter
     * teaches, not 50 cudaHostAlloc calls. */
    if (cpu) {
        const int nprod = 50;
        const int64_t s2[2] = {1000, 1000};
        pt_tensor *x = PT(pt_randn(g_dev, PT_F32, 2, s2));
        pt_tensor *outs[50], *copies[50];
        int64_t new_pinned = 0, reused_pinned = 0;
        for (int mode = 0; mode < 2; ++mode) {
            for (int pass = 0; pass < 2; ++pass) { /* pass 0 warms up */
                pt_memory_usage m0, m1;
                PT_OK_(pt_memory_stats(g_dev, &m0));
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
                PT_OK_(pt_memory_stats(g_dev, &m1));
                for (int i = 0; i < nprod; ++i) {
                    pt_release(outs[i]);
                    pt_release(copies[i]);
                }
                /* The released pinned blocks are reusable once the queue
                 * has passed their release. */
                PT_OK_(pt_device_synchronize(g_dev));
                if (pass == 0) continue;
                if (mode == 1) {
                    new_pinned = m1.pinned_allocs - m0.pinned_allocs;
                    reused_pinned = m1.pinned_reuses - m0.pinned_reuses;
                }
                printf("| 50 x 1000x1000 matmul, then %s | %.2f |\n",
                       mode ? "pt_to_async to cpu after each (pinned)" : "pt_to(cpu) of each (waits)", t * 1e3);
                record(mode ? "tour_copy_async_ms" : "tour_copy_sync_ms", t * 1e3);
            }
        }
        pt_release(x);
        printf("\n(each loop ran once untimed first; the timed async loop took %lld pinned blocks from the "
               "cache and allocated %lld)\n", (long long)reused_pinned, (long long)new_pinned);
    }
}

/* Whether the contenders can run: cudart, called directly, must see the
 * device libportable calls devname (both number devices the same way). */
static void probe_direct(const char *devname) {
    int ordinal = 0, count = 0;
    if (sscanf(devname, "cuda:%d", &ordinal) != 1) ordinal = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(g_direct_why, sizeof g_direct_why, "cudart called directly sees no device: cudaGetDeviceCount: %s",
                 cudaGetErrorString(e));
        (void)cudaGetLastError();
    } else if (ordinal >= count) {
        snprintf(g_direct_why, sizeof g_direct_why, "cudart called directly sees %d device(s), not %s", count,
                 devname);
    } else {
        CU(cudaSetDevice(ordinal));
        g_direct = true;
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
    const char *json = NULL, *devname = "cuda:0", *only = "gemm,bandwidth,sum,overhead,transfers,tour";
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
                    "  SECTIONS: comma-separated, of gemm,bandwidth,sum,overhead,transfers,tour\n",
                    argv[0]);
            return 2;
        }
    }
    const char *known[] = {"gemm", "bandwidth", "sum", "overhead", "transfers", "tour"};
    enum { W_GEMM, W_BANDWIDTH, W_SUM, W_OVERHEAD, W_TRANSFERS, W_TOUR, W_N };
    bool want[W_N] = {false};
    for (const char *p = only; *p;) {
        size_t n = strcspn(p, ",");
        int k = -1;
        for (int j = 0; j < W_N; ++j)
            if (strlen(known[j]) == n && strncmp(p, known[j], n) == 0) k = j;
        if (k < 0) {
            fprintf(stderr, "bench_cuda: --only: unknown section '%.*s' (known: gemm, bandwidth, "
                            "sum, overhead, transfers, tour)\n", (int)n, p);
            return 2;
        }
        want[k] = true;
        p += n + (p[n] == ',');
    }
    tour = tour && want[W_TOUR];
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
    probe_direct(devname);
    if (want[W_GEMM]) bench_gemm();
    if (want[W_BANDWIDTH]) bench_bandwidth();
    if (want[W_SUM]) bench_sum();
    if (want[W_OVERHEAD]) bench_overhead();
    if (want[W_TRANSFERS]) bench_transfers();
    if (tour) bench_tour();
    if (json) write_json(json, &p);
    return 0;
}
