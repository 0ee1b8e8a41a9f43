/* libportable CUDA backend — what the cuda backend promises beyond the
 * op-by-op conformance suite, checked through the public API:
 *   - pt_to_async to the cpu lands in pinned memory and is right after a
 *     synchronize, also when the device lags far behind the host; pinned
 *     blocks are cached and reused (pt_memory_stats counts), freed by
 *     pt_empty_cache;
 *   - tensors move cuda:0 <-> cuda:1 (peer copies) and cpu <-> cuda with
 *     their values, and ops on the destination see the copied data;
 *   - pt_device_info reports the device's free memory (cudaMemGetInfo) and
 *     it drops by what the caching allocator takes from the driver;
 *   - asking for more memory than the device has fails with
 *     PT_ERR_OUT_OF_MEMORY and a message with the sizes, and the device
 *     keeps working;
 *   - f32 matmul is full FP32 by default (cpu agreement to 1e-6) and TF32
 *     only when PORTABLE_CUDA_TF32=1 asks for it (visible rounding);
 *   - the convolution kinds agree with a host f64 reference; with
 *     --conv-chunks (and little device memory) a convolution whose whole
 *     batch's columns do not fit runs in chunks of the batch and still
 *     does.
 * Runs on a GPU (tests/gpu/run_on_device.sh) and on the CUDA simulator in
 * CI; exits 77 (skip) when there is no cuda device. */
#include <stdint.h>

#include "../../../tests/unit/check.h"

#define N_MAX 4096

static double max_rel_diff(const double *a, const double *b, int64_t n) {
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
        double d = fabs(a[i] - b[i]) / (fabs(b[i]) > 1 ? fabs(b[i]) : 1);
        if (d > worst) worst = d;
    }
    return worst;
}

static void check_async_to_pinned(pt_device *gpu) {
    static double got[N_MAX], want[N_MAX];
    pt_scope sc = pt_scope_begin();
    const int64_t shape[1] = {1000};
    pt_tensor *x = pt_arange(gpu, PT_F32, 0, 1000, 1);
    REQUIRE(x);
    /* A chain of queued work before the copy, so the copy has to wait for it. */
    pt_tensor *y = x;
    for (int i = 0; i < 20; ++i) y = pt_add_scalar(y, 1.0);
    pt_tensor *host = pt_to_async(y, pt_cpu());
    REQUIRE(host);
    CHECK(pt_tensor_device(host) == pt_cpu());
    CHECK_OK(pt_device_synchronize(gpu));
    CHECK(check_read(host, got, N_MAX));
    for (int64_t i = 0; i < shape[0]; ++i) want[i] = (double)i + 20;
    CHECK_DBL(max_rel_diff(got, want, 1000), 0, 0);
    /* Without the synchronize, reading still waits (pt_to_host syncs the copying device). */
    pt_tensor *host2 = pt_to_async(pt_mul_scalar(y, 2.0), pt_cpu());
    CHECK(check_read(host2, got, N_MAX));
    for (int64_t i = 0; i < shape[0]; ++i) want[i] = 2.0 * ((double)i + 20);
    CHECK_DBL(max_rel_diff(got, want, 1000), 0, 0);
    pt_scope_end(sc);
}

/* The pinned host-block cache: a pt_to_async buffer released once its copy
 * is done serves the next one of its size class without a new pinned
 * allocation; one released while its copy is still queued (the device lags
 * behind under PTCU_SIM_DELAY_US) is never handed out under that copy, so
 * every value still lands right; pt_empty_cache gives the cached blocks back. */
static void check_pinned_cache(pt_device *gpu) {
    static double got[N_MAX];
    pt_scope sc = pt_scope_begin();
    CHECK_OK(pt_empty_cache(gpu));
    pt_memory_usage u0, u1, u2, u3;
    CHECK_OK(pt_memory_stats(gpu, &u0));
    CHECK(u0.pinned_cached == 0);
    pt_tensor *x = pt_arange(gpu, PT_F32, 0, 1000, 1);
    REQUIRE(x);
    for (int i = 0; i < 5; ++i) {
        pt_tensor *h = pt_to_async(x, pt_cpu());
        REQUIRE(h);
        CHECK_OK(pt_device_synchronize(gpu));
        CHECK(check_read(h, got, N_MAX) && got[0] == 0 && got[999] == 999);
        pt_release(h);
    }
    CHECK_OK(pt_memory_stats(gpu, &u1));
    printf("-- pinned cache: %lld allocations, %lld reuses, %lld bytes cached\n",
           (long long)(u1.pinned_allocs - u0.pinned_allocs), (long long)(u1.pinned_reuses - u0.pinned_reuses),
           (long long)u1.pinned_cached);
    CHECK(u1.pinned_allocs - u0.pinned_allocs == 1);
    CHECK(u1.pinned_reuses - u0.pinned_reuses == 4);
    CHECK(u1.pinned_cached >= 4000);
    /* Released with its copy still queued behind slow work, then a new copy
     * at once: whether that one got the block or a fresh one, both copies
     * deliver their own values. */
    pt_tensor *y = x;
    for (int i = 0; i < 30; ++i) y = pt_add_scalar(y, 1.0);
    pt_tensor *early = pt_to_async(y, pt_cpu());
    REQUIRE(early);
    pt_release(early);
    pt_tensor *late = pt_to_async(pt_mul_scalar(x, 3.0), pt_cpu());
    REQUIRE(late);
    CHECK_OK(pt_device_synchronize(gpu));
    CHECK(check_read(late, got, N_MAX) && got[1] == 3 && got[999] == 2997);
    pt_release(late);
    CHECK_OK(pt_memory_stats(gpu, &u2));
    CHECK(u2.pinned_allocs + u2.pinned_reuses - u1.pinned_allocs - u1.pinned_reuses == 2);
    CHECK_OK(pt_empty_cache(gpu));
    CHECK_OK(pt_memory_stats(gpu, &u3));
    CHECK(u3.pinned_cached == 0);
    pt_scope_end(sc);
}

static void check_two_devices(pt_device *g0) {
    if (pt_device_count("cuda") < 2) {
        printf("-- one cuda device: peer copies not checked here\n");
        return;
    }
    static double got[N_MAX], want[N_MAX];
    pt_scope sc = pt_scope_begin();
    pt_manual_seed(7);
    const int64_t shape[2] = {64, 64};
    pt_tensor *a = pt_randn(g0, PT_F32, 2, shape);
    REQUIRE(a);
    CHECK(check_read(a, want, N_MAX));
    pt_tensor *b = pt_to(a, pt_device_get("cuda:1"));
    REQUIRE(b);
    CHECK_STR(pt_device_name(pt_tensor_device(b)), "cuda:1");
    CHECK(check_read(b, got, N_MAX));
    CHECK_DBL(max_rel_diff(got, want, 4096), 0, 0);
    /* Back again, queued behind work on cuda:1, then an op on cuda:0. */
    pt_tensor *b2 = pt_add(b, b);
    pt_tensor *c = pt_to_async(b2, g0);
    REQUIRE(c);
    pt_tensor *d = pt_sub(c, a);
    CHECK(check_read(d, got, N_MAX));
    CHECK_DBL(max_rel_diff(got, want, 4096), 0, 1e-6);
    pt_scope_end(sc);
}

static void check_memory_info(pt_device *gpu) {
    pt_device_props before, after;
    CHECK_OK(pt_empty_cache(gpu));
    CHECK_OK(pt_device_info(gpu, &before));
    CHECK(before.memory_total > 0 && before.memory_free > 0 && before.memory_free <= before.memory_total);
    const int64_t n = 64 << 20; /* 256 MiB of f32 */
    pt_tensor *big = pt_empty(gpu, PT_F32, 1, &n);
    REQUIRE(big);
    CHECK_OK(pt_device_info(gpu, &after));
    printf("-- free memory %lld -> %lld bytes after a 256 MiB tensor\n", (long long)before.memory_free,
           (long long)after.memory_free);
    CHECK(after.memory_free <= before.memory_free - n * 4);
    pt_memory_usage use;
    CHECK_OK(pt_memory_stats(gpu, &use));
    CHECK(use.in_use >= n * 4);
    pt_release(big);
    CHECK_OK(pt_empty_cache(gpu));
}

static void check_out_of_memory(pt_device *gpu) {
    pt_device_props p;
    CHECK_OK(pt_device_info(gpu, &p));
    const int64_t n = p.memory_total / 4 * 2; /* twice the device, in f32 elements */
    pt_clear_error();
    pt_tensor *huge = pt_empty(gpu, PT_F32, 1, &n);
    CHECK(huge == NULL);
    CHECK_LAST(PT_ERR_OUT_OF_MEMORY);
    CHECK_HAS(pt_last_error(), "out of memory allocating");
    CHECK_HAS(pt_last_error(), "GiB free of");
    printf("-- out of memory message: %s\n", pt_last_error());
    pt_release(huge);
    /* The device still works. */
    pt_tensor *ok = pt_full(gpu, PT_F32, 1, (const int64_t[]){3}, 2.5);
    double v[3] = {0};
    CHECK(check_read(ok, v, 3));
    CHECK_DBL(v[2], 2.5, 0);
    pt_release(ok);
}

/* ||gpu - cpu|| / ||cpu|| (Frobenius) of a 128 x 256 x 128 f32 product. */
static double matmul_vs_cpu(pt_device *gpu) {
    static double got[128 * 128], want[128 * 128];
    pt_scope sc = pt_scope_begin();
    pt_manual_seed(11);
    pt_tensor *a = pt_randn(pt_cpu(), PT_F32, 2, (const int64_t[]){128, 256});
    pt_tensor *b = pt_randn(pt_cpu(), PT_F32, 2, (const int64_t[]){256, 128});
    double worst = -1;
    if (a && b && check_read(pt_matmul(a, b), want, 128 * 128) &&
        check_read(pt_matmul(pt_to(a, gpu), pt_to(b, gpu)), got, 128 * 128))
    {
        double diff = 0, norm = 0;
        for (int i = 0; i < 128 * 128; ++i) {
            diff += (got[i] - want[i]) * (got[i] - want[i]);
            norm += want[i] * want[i];
        }
        worst = sqrt(diff / norm);
    }
    pt_scope_end(sc);
    return worst;
}

static void check_tf32_opt_in(pt_device *gpu) {
    unsetenv("PORTABLE_CUDA_TF32");
    const double fp32 = matmul_vs_cpu(gpu);
    setenv("PORTABLE_CUDA_TF32", "1", 1);
    const double tf32 = matmul_vs_cpu(gpu);
    unsetenv("PORTABLE_CUDA_TF32");
    printf("-- matmul vs cpu: FP32 %.3g, TF32 %.3g (relative)\n", fp32, tf32);
    CHECK(fp32 >= 0 && fp32 < 1e-6);
    CHECK(tf32 > 1e-5 && tf32 < 1e-2); /* 10-bit mantissas: visibly rounded, still close */
}

/* --cublas-fails (the simulator with PTCU_SIM_FAIL_CUBLAS=1): a product
 * whose cuBLAS handle cannot be created fails with a status naming
 * cublasCreate, twice (nothing half-made is kept), so does a convolution,
 * and the device goes on working. */
static void check_cublas_failure(pt_device *gpu) {
    pt_scope sc = pt_scope_begin();
    pt_tensor *a = pt_ones(gpu, PT_F32, 2, (const int64_t[]){4, 4});
    REQUIRE(a);
    for (int attempt = 0; attempt < 2; ++attempt) {
        pt_clear_error();
        pt_tensor *c = pt_matmul(a, a);
        double v[16];
        /* Ops queue: the failure may surface at the product or at the read. */
        CHECK(c == NULL || !check_read(c, v, 16));
        CHECK_LAST(PT_ERR_OUT_OF_MEMORY);
        CHECK_HAS(pt_last_error(), "cublasCreate");
        CHECK_HAS(pt_last_error(), "CUBLAS_STATUS_ALLOC_FAILED");
        CHECK_HAS(pt_last_error(), "[4 x 4] @ [4 x 4]");
        CHECK_HAS(pt_last_error(), "pt_empty_cache");
        printf("-- matmul without cuBLAS: %s\n", pt_last_error());
    }
    /* A convolution's GEMMs need the handle too: the same failure, naming the pass. */
    pt_clear_error();
    pt_tensor *x = pt_ones(gpu, PT_F32, 4, (const int64_t[]){1, 1, 4, 4});
    pt_tensor *y = pt_conv2d_direct(x, pt_reshape(a, 4, (const int64_t[]){1, 1, 4, 4}), NULL);
    double v[16];
    CHECK(y == NULL || !check_read(y, v, 1));
    CHECK_LAST(PT_ERR_OUT_OF_MEMORY);
    CHECK_HAS(pt_last_error(), "cublasCreate");
    CHECK_HAS(pt_last_error(), "conv2d into [1, 1, 1, 1]");
    printf("-- conv2d without cuBLAS: %s\n", pt_last_error());
    CHECK(check_read(pt_add(a, a), v, 16));
    CHECK_DBL(v[15], 2.0, 0);
    pt_scope_end(sc);
}

/* The three passes of a convolution as backend.h defines them, in double
 * on the host: x [n, 4, 16, 16], weight [4, 2, 3, 3] in 2 groups, stride 1,
 * padding 2, dilation 2 (so the map is 16 x 16 too). */
#define CV_C 4
#define CV_HW 16
#define CV_K 3
static void conv_reference(int64_t n, const float *x, const float *w, const float *g, double *y, double *dx,
                           double *dw) {
    const int cg = CV_C / 2, opg = CV_C / 2;
    for (int64_t b = 0; b < n; ++b)
        for (int o = 0; o < CV_C; ++o)
            for (int r = 0; r < CV_HW; ++r)
                for (int q = 0; q < CV_HW; ++q)
                    for (int ci = 0; ci < cg; ++ci)
                        for (int i = 0; i < CV_K; ++i)
                            for (int j = 0; j < CV_K; ++j) {
                                const int h = r - 2 + 2 * i, v = q - 2 + 2 * j, c = o / opg * cg + ci;
                                if (h < 0 || h >= CV_HW || v < 0 || v >= CV_HW) continue;
                                const int64_t xi = ((b * CV_C + c) * CV_HW + h) * CV_HW + v;
                                const int64_t wi = ((o * cg + ci) * CV_K + i) * CV_K + j;
                                const int64_t yi = ((b * CV_C + o) * CV_HW + r) * CV_HW + q;
                                y[yi] += (double)x[xi] * w[wi];
                                dx[xi] += (double)g[yi] * w[wi];
                                dw[wi] += (double)x[xi] * g[yi];
                            }
}

/* CONV2D and its adjoints on n images against conv_reference. */
static void check_conv_chunks(pt_device *gpu, int64_t n) {
    pt_scope sc = pt_scope_begin();
    const int64_t xs[4] = {n, CV_C, CV_HW, CV_HW}, ws[4] = {CV_C, CV_C / 2, CV_K, CV_K};
    const int64_t nx = n * CV_C * CV_HW * CV_HW, nw = CV_C * CV_C / 2 * CV_K * CV_K;
    const pt_conv2d_opts o = {{1, 1}, {2, 2}, {2, 2}, 2};
    float *x = malloc((size_t)nx * sizeof *x), *g = malloc((size_t)nx * sizeof *g), w[CV_C * CV_C / 2 * CV_K * CV_K];
    double *want[3] = {calloc((size_t)nx, sizeof(double)), calloc((size_t)nx, sizeof(double)),
                       calloc((size_t)nw, sizeof(double))};
    double *got = malloc((size_t)nx * sizeof *got);
    REQUIRE(x);
    REQUIRE(g);
    REQUIRE(got);
    uint32_t seed = 7;
    for (int64_t i = 0; i < nx; ++i) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
        g[i] = (float)((seed >> 4) & 1023) / 512.0f - 1.0f;
    }
    for (int64_t i = 0; i < nw; ++i) w[i] = (float)(i % 7) / 3.0f - 1.0f;
    conv_reference(n, x, w, g, want[0], want[1], want[2]);
    pt_tensor *xg = pt_from_data(gpu, PT_F32, 4, xs, x), *wg = pt_from_data(gpu, PT_F32, 4, ws, w);
    pt_tensor *gg = pt_from_data(gpu, PT_F32, 4, xs, g);
    pt_tensor *out[3] = {pt_conv2d_direct(xg, wg, &o), pt_conv2d_backward_data(gg, wg, &o, CV_HW, CV_HW),
                         pt_conv2d_backward_weight(xg, gg, &o, CV_K, CV_K)};
    const char *names[3] = {"conv2d", "backward data", "backward weight"};
    for (int k = 0; k < 3; ++k) {
        const int64_t m = k == 2 ? nw : nx;
        CHECK_NOT_NULL(out[k]);
        if (!out[k] || !check_read(out[k], got, m)) continue;
        const double diff = max_rel_diff(got, want[k], m);
        printf("-- %s, %lld images: %.3g from the f64 reference\n", names[k], (long long)n, diff);
        CHECK(diff < (k == 2 ? 1e-3 : 1e-5)); /* dW sums n * 256 products in f32 */
    }
    for (int k = 0; k < 3; ++k) free(want[k]);
    free(x);
    free(g);
    free(got);
    pt_scope_end(sc);
}

int main(int argc, char **argv) {
    pt_device *gpu = pt_device_get("cuda:0");
    if (!gpu) {
        printf("SKIP: no cuda device: %s\n", pt_last_error());
        return 77;
    }
    if (argc > 1 && strcmp(argv[1], "--conv-chunks") == 0) {
        /* 1024 images: 36 MiB of columns, more than the simulated device's
         * 40 MiB (PTCU_SIM_MEMORY_MB) less the 4 MiB tensors and what the
         * caching allocator keeps: the plugin halves its chunks until one
         * fits, where the composed path would have needed all 36 MiB. */
        check_conv_chunks(gpu, 1024);
        return check_summary();
    }
    if (argc > 1 && strcmp(argv[1], "--cublas-fails") == 0) {
        check_cublas_failure(gpu);
        return check_summary();
    }
    pt_device_props p;
    if (pt_device_info(gpu, &p) == PT_OK) printf("-- cuda:0 is %s (%s)\n", p.name, p.platform);
    check_async_to_pinned(gpu);
    check_pinned_cache(gpu);
    check_two_devices(gpu);
    check_memory_info(gpu);
    check_out_of_memory(gpu);
    check_tf32_opt_in(gpu);
    check_conv_chunks(gpu, 3);
    return check_summary();
}
