/* OpenCL backend benchmark: what libportable adds on top of the libraries
 * underneath it, on one OpenCL device, measured in one run.
 *
 *   1. pt_matmul f32 at 256/1024/2048 vs CLBlastSgemm called directly on the
 *      same device (own context and queue, same library the plugin uses)
 *   2. pt_add on 16M floats vs a one-line add kernel and clEnqueueCopyBuffer,
 *      alternating, as bytes read + written per second (add reads 2 and writes
 *      1 array, a copy reads 1 and writes 1)
 *   3. the host's cost per op of a 10-element add: pt_add eager, a captured
 *      chain of pt_add replayed, and the one-line kernel queued by hand
 *      (clSetKernelArg + clEnqueueNDRangeKernel), alternating
 *
 * Usage: bench_opencl [--sizes N,N,...] [--json FILE] [opencl:N [bandwidth|tiny]]
 * (default opencl:0, sizes 256,1024,2048; "bandwidth": part 2 only, "tiny":
 * part 3 only). Prints
 * markdown tables with ratios; --json also writes the figures (GFLOP/s and
 * GB/s) for bench/cuda/combine_results.py, which sets CLBlast on an NVIDIA
 * GPU beside cuBLAS. Exits 77 when the device is unavailable. No
 * assertions: numbers are for people.
 *
 * Build: link libportable, the OpenCL ICD loader and CLBlast, e.g.
 *   cc -O2 bench_opencl.c -Iinclude -lportable -lOpenCL -lclblast */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <clblast_c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "portable/portable.h"

/* Figures for --json. */
typedef struct figure {
    char key[48];
    double value;
} figure;
static figure g_figures[32];
static int g_nfigures;

static void record(const char *key, double value) {
    if (g_nfigures < (int)(sizeof g_figures / sizeof g_figures[0])) {
        snprintf(g_figures[g_nfigures].key, sizeof g_figures[0].key, "%s", key);
        g_figures[g_nfigures++].value = value;
    }
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU seconds of the calling thread only: the host's own work, without the
 * time other threads (a CPU device's workers, other processes) held it. */
static double thread_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die_pt(const char *what) {
    fprintf(stderr, "bench_opencl: %s: %s\n", what, pt_last_error());
    exit(1);
}

static void die_cl(const char *what, cl_int err) {
    fprintf(stderr, "bench_opencl: %s failed: OpenCL error %d\n", what, (int)err);
    exit(1);
}

/* ---- The same device, opened directly ----
 *
 * The plugin numbers devices GPUs first, then accelerators, then CPUs, then
 * the rest, each group in platform/device order; this repeats that walk so
 * opencl:N here is the plugin's opencl:N (the name is checked too). */

typedef struct direct_cl {
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue queue;
    char name[256];
} direct_cl;

static int type_rank(cl_device_type t) {
    if (t & CL_DEVICE_TYPE_GPU) return 0;
    if (t & CL_DEVICE_TYPE_ACCELERATOR) return 1;
    if (t & CL_DEVICE_TYPE_CPU) return 2;
    return 3;
}

static bool open_direct(int index, direct_cl *out) {
    cl_uint np = 0;
    if (clGetPlatformIDs(0, NULL, &np) != CL_SUCCESS || np == 0) return false;
    cl_platform_id *plats = calloc(np, sizeof *plats);
    clGetPlatformIDs(np, plats, NULL);
    int seen = 0;
    bool found = false;
    for (int rank = 0; rank < 4 && !found; ++rank) {
        for (cl_uint p = 0; p < np && !found; ++p) {
            cl_uint nd = 0;
            if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || !nd)
                continue;
            cl_device_id *ids = calloc(nd, sizeof *ids);
            clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, ids, NULL);
            for (cl_uint i = 0; i < nd && !found; ++i) {
                cl_device_type t = 0;
                clGetDeviceInfo(ids[i], CL_DEVICE_TYPE, sizeof t, &t, NULL);
                if (type_rank(t) != rank) continue;
                if (seen++ == index) {
                    out->dev = ids[i];
                    found = true;
                    cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                                     (cl_context_properties)plats[p], 0};
                    cl_int err;
                    out->ctx = clCreateContext(props, 1, &out->dev, NULL, NULL, &err);
                    if (!out->ctx) die_cl("clCreateContext", err);
                    out->queue = clCreateCommandQueue(out->ctx, out->dev, 0, &err);
                    if (!out->queue) die_cl("clCreateCommandQueue", err);
                    clGetDeviceInfo(out->dev, CL_DEVICE_NAME, sizeof out->name - 1, out->name,
                                    NULL);
                }
            }
            free(ids);
        }
    }
    free(plats);
    return found;
}

static cl_mem direct_buffer(direct_cl *cl, size_t n_floats, float fill) {
    cl_int err;
    cl_mem m = clCreateBuffer(cl->ctx, CL_MEM_READ_WRITE, n_floats * sizeof(float), NULL, &err);
    if (!m) die_cl("clCreateBuffer", err);
    err = clEnqueueFillBuffer(cl->queue, m, &fill, sizeof fill, 0, n_floats * sizeof(float), 0,
                              NULL, NULL);
    if (err != CL_SUCCESS) die_cl("clEnqueueFillBuffer", err);
    return m;
}

/* How many repetitions fill about `budget` seconds, given one took `once`. */
static int reps_for(double once, double budget, int cap) {
    int r = once > 0 ? (int)(budget / once) : cap;
    return r < 1 ? 1 : r > cap ? cap : r;
}

/* ---- 1. Matrix product ---- */

static double time_pt_matmul(pt_device *dev, int64_t n) {
    int64_t shape[2] = {n, n};
    pt_tensor *a = pt_randn(dev, PT_F32, 2, shape), *b = pt_randn(dev, PT_F32, 2, shape);
    if (!a || !b) die_pt("pt_randn");
    /* Warm-up: kernel compilation, allocator cache. */
    pt_release(pt_matmul(a, b));
    if (pt_device_synchronize(dev) != PT_OK) die_pt("pt_device_synchronize");
    double t0 = now();
    pt_tensor *c = pt_matmul(a, b);
    if (!c) die_pt("pt_matmul");
    pt_release(c);
    pt_device_synchronize(dev);
    int reps = reps_for(now() - t0, 1.0, 50);
    double best = 1e30;
    for (int round = 0; round < 3; ++round) {
        t0 = now();
        for (int i = 0; i < reps; ++i) pt_release(pt_matmul(a, b));
        if (pt_device_synchronize(dev) != PT_OK) die_pt("pt_device_synchronize");
        double dt = (now() - t0) / reps;
        if (dt < best) best = dt;
    }
    pt_release(a);
    pt_release(b);
    return best;
}

static double time_clblast(direct_cl *cl, size_t n) {
    cl_mem a = direct_buffer(cl, n * n, 0.5f), b = direct_buffer(cl, n * n, 0.25f),
           c = direct_buffer(cl, n * n, 0.0f);
#define SGEMM()                                                                                \
    CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n, n, 1.0f, \
                 a, 0, n, b, 0, n, 0.0f, c, 0, n, &cl->queue, NULL)
    CLBlastStatusCode st = SGEMM();
    if (st != CLBlastSuccess) die_cl("CLBlastSgemm", (cl_int)st);
    clFinish(cl->queue);
    double t0 = now();
    SGEMM();
    clFinish(cl->queue);
    int reps = reps_for(now() - t0, 1.0, 50);
    double best = 1e30;
    for (int round = 0; round < 3; ++round) {
        t0 = now();
        for (int i = 0; i < reps; ++i) SGEMM();
        clFinish(cl->queue);
        double dt = (now() - t0) / reps;
        if (dt < best) best = dt;
    }
#undef SGEMM
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseMemObject(c);
    return best;
}

static void bench_matmul(pt_device *dev, direct_cl *cl, const int64_t *sizes, int nsizes) {
    printf("## f32 matrix product: pt_matmul vs CLBlastSgemm direct\n\n");
    printf("| n | pt_matmul GFLOP/s | CLBlastSgemm GFLOP/s | pt / CLBlast |\n");
    printf("|---:|---:|---:|---:|\n");
    for (int i = 0; i < nsizes; ++i) {
        int64_t n = sizes[i];
        double flop = 2.0 * (double)n * (double)n * (double)n;
        double ours = time_pt_matmul(dev, n);
        double theirs = time_clblast(cl, (size_t)n);
        printf("| %lld | %.2f | %.2f | %.2f |\n", (long long)n, flop / ours * 1e-9,
               flop / theirs * 1e-9, theirs / ours);
        fflush(stdout);
        char key[48];
        snprintf(key, sizeof key, "pt_matmul_%lld_gflops", (long long)n);
        record(key, flop / ours * 1e-9);
        snprintf(key, sizeof key, "clblast_sgemm_%lld_gflops", (long long)n);
        record(key, flop / theirs * 1e-9);
    }
    printf("\n");
}

/* ---- 2. Bandwidth ----
 *
 * Three contenders on the same device, alternating round by round (so load
 * from other processes hits them alike), each round 5 back-to-back calls
 * ended by one synchronisation; the best round counts:
 *   pt_add          the library's element-wise add (a fresh output each call,
 *                   from the caching allocator)
 *   one-line kernel c[i] = a[i] + b[i] in the benchmark's own context: what
 *                   the device's compiler makes of the simplest add
 *   copy            clEnqueueCopyBuffer, the implementation's own copy */

static const char *add_source =
    "__kernel void add(__global const float *a, __global const float *b, __global float *c) {\n"
    "    size_t i = get_global_id(0);\n"
    "    c[i] = a[i] + b[i];\n"
    "}\n";

static cl_kernel direct_add_kernel(direct_cl *cl) {
    cl_int err;
    cl_program p = clCreateProgramWithSource(cl->ctx, 1, &add_source, NULL, &err);
    if (!p) die_cl("clCreateProgramWithSource", err);
    if ((err = clBuildProgram(p, 1, &cl->dev, "", NULL, NULL)) != CL_SUCCESS)
        die_cl("clBuildProgram", err);
    cl_kernel k = clCreateKernel(p, "add", &err);
    if (!k) die_cl("clCreateKernel", err);
    clReleaseProgram(p);
    return k;
}

enum { BW_PT_ADD, BW_KERNEL, BW_COPY, BW_N };

static void bench_bandwidth(pt_device *dev, direct_cl *cl, int rounds) {
    const int64_t n = 16 << 20;
    const size_t bytes = (size_t)n * sizeof(float), global = (size_t)n;
    int64_t shape[1] = {n};
    pt_tensor *a = pt_rand(dev, PT_F32, 1, shape), *b = pt_rand(dev, PT_F32, 1, shape);
    if (!a || !b) die_pt("pt_rand");
    cl_mem src = direct_buffer(cl, (size_t)n, 1.0f), src2 = direct_buffer(cl, (size_t)n, 2.0f);
    cl_mem dst = direct_buffer(cl, (size_t)n, 0.0f);
    cl_kernel k = direct_add_kernel(cl);
    clSetKernelArg(k, 0, sizeof src, &src);
    clSetKernelArg(k, 1, sizeof src2, &src2);
    clSetKernelArg(k, 2, sizeof dst, &dst);
    double best[BW_N] = {1e30, 1e30, 1e30};
    for (int round = -1; round < rounds; ++round) { /* round -1: warm-up */
        for (int c = 0; c < BW_N; ++c) {
            double t0 = now();
            for (int i = 0; i < 5; ++i) {
                if (c == BW_PT_ADD) {
                    pt_tensor *s = pt_add(a, b);
                    if (!s) die_pt("pt_add");
                    pt_release(s);
                } else if (c == BW_KERNEL) {
                    cl_int err = clEnqueueNDRangeKernel(cl->queue, k, 1, NULL, &global, NULL, 0,
                                                        NULL, NULL);
                    if (err != CL_SUCCESS) die_cl("clEnqueueNDRangeKernel", err);
                } else {
                    cl_int err = clEnqueueCopyBuffer(cl->queue, src, dst, 0, 0, bytes, 0, NULL,
                                                     NULL);
                    if (err != CL_SUCCESS) die_cl("clEnqueueCopyBuffer", err);
                }
            }
            if (c == BW_PT_ADD) {
                if (pt_device_synchronize(dev) != PT_OK) die_pt("pt_device_synchronize");
            } else {
                clFinish(cl->queue);
            }
            double dt = (now() - t0) / 5;
            if (round >= 0 && dt < best[c]) best[c] = dt;
        }
    }
    clReleaseKernel(k);
    clReleaseMemObject(src);
    clReleaseMemObject(src2);
    clReleaseMemObject(dst);
    pt_release(a);
    pt_release(b);

    const double moved[BW_N] = {3.0 * (double)bytes, 3.0 * (double)bytes, 2.0 * (double)bytes};
    const char *names[BW_N] = {"pt_add (2 reads, 1 write)", "one-line add kernel (2 reads, 1 write)",
                               "clEnqueueCopyBuffer (1 read, 1 write)"};
    double copy_gbs = moved[BW_COPY] / best[BW_COPY] * 1e-9;
    printf("## Bandwidth, 16M f32 (bytes read + written per second; %d alternating rounds, "
           "best)\n\n",
           rounds);
    printf("| operation | ms | GB/s | vs clEnqueueCopyBuffer |\n|---|---:|---:|---:|\n");
    for (int c = 0; c < BW_N; ++c) {
        double gbs = moved[c] / best[c] * 1e-9;
        printf("| %s | %.3f | %.2f | %.2f |\n", names[c], best[c] * 1e3, gbs, gbs / copy_gbs);
    }
    record("pt_add_16M_gbps", moved[BW_PT_ADD] / best[BW_PT_ADD] * 1e-9);
    record("kernel_add_16M_gbps", moved[BW_KERNEL] / best[BW_KERNEL] * 1e-9);
    record("copy_16M_gbps", copy_gbs);
    printf("\n");
}

/* ---- 3. Per-op host cost of a tiny op ----
 *
 * A 10-element f32 add, where the device's work is nothing and what an op
 * costs is the host's: three contenders alternating round by round, each
 * round TINY_OPS ops ended by one wait for the device, the best round
 * counting (both its time up to the wait, "queued", and with the wait),
 * and the calling thread's own CPU time up to the wait, "host CPU": what
 * the host pays per op, without the device's work (on a CPU device such as
 * PoCL its worker threads share the cores, so wall time mixes both):
 *   pt_add eager     pt_add(a, b) and pt_release of the result: validation,
 *                    a block from the caching allocator, the plugin's execute
 *   replayed chain   a chain of TINY_CHAIN pt_add captured once (portable/graph.h)
 *                    with fusion off (PORTABLE_GRAPH_FUSION=off at capture), so
 *                    each op stays one kernel, and replayed: one
 *                    clEnqueueCommandBufferKHR per chain where the device has
 *                    command buffers, else op by op (the per-kernel cost)
 *   replayed, fused  the same chain captured with fusion on: a few generated
 *                    kernels for the 64 ops (what a user's replay gets)
 *   by hand          the one-line add kernel on 10 elements in the benchmark's own
 *                    context: clSetKernelArg for its three buffers and one
 *                    clEnqueueNDRangeKernel, the least an OpenCL program pays per op */

enum { TINY_N = 10, TINY_CHAIN = 64, TINY_OPS = 2048 };
enum { TINY_EAGER, TINY_REPLAY, TINY_FUSED, TINY_HAND, TINY_COUNT };

/* A chain of TINY_CHAIN adds of b to a, captured on dev with fusion as
 * fusion says ("on" or "off"); *y holds its result. */
static pt_graph *tiny_chain(pt_device *dev, pt_tensor *a, pt_tensor *b, const char *fusion, pt_tensor **y) {
    const char *before = getenv("PORTABLE_GRAPH_FUSION");
    char *saved = before ? strdup(before) : NULL;
    setenv("PORTABLE_GRAPH_FUSION", fusion, 1);
    if (pt_graph_capture_begin(dev) != PT_OK) die_pt("pt_graph_capture_begin");
    pt_scope scope = pt_scope_begin();
    pt_tensor *t = a;
    for (int i = 0; i < TINY_CHAIN; ++i) t = pt_add(t, b);
    *y = pt_keep(t);
    pt_scope_end(scope);
    pt_graph *g = pt_graph_capture_end(dev);
    if (saved) setenv("PORTABLE_GRAPH_FUSION", saved, 1);
    else unsetenv("PORTABLE_GRAPH_FUSION");
    free(saved);
    if (!g) die_pt("pt_graph_capture_end");
    return g;
}

static void bench_tiny(pt_device *dev, direct_cl *cl, int rounds) {
    int64_t shape[1] = {TINY_N};
    pt_tensor *a = pt_rand(dev, PT_F32, 1, shape), *b = pt_rand(dev, PT_F32, 1, shape);
    if (!a || !b) die_pt("pt_rand");
    pt_tensor *y = NULL, *yf = NULL;
    pt_graph *g = tiny_chain(dev, a, b, "off", &y), *gf = tiny_chain(dev, a, b, "on", &yf);
    pt_graph_stats fs = {0};
    if (pt_graph_info(gf, &fs) != PT_OK) die_pt("pt_graph_info");
    cl_mem src = direct_buffer(cl, TINY_N, 1.0f), src2 = direct_buffer(cl, TINY_N, 2.0f);
    cl_mem dst = direct_buffer(cl, TINY_N, 0.0f);
    cl_kernel k = direct_add_kernel(cl);
    const size_t global = TINY_N;
    double best[TINY_COUNT], best_queued[TINY_COUNT], best_host[TINY_COUNT];
    for (int c = 0; c < TINY_COUNT; ++c) best[c] = best_queued[c] = best_host[c] = 1e30;
    for (int round = -1; round < rounds; ++round) { /* round -1: warm-up */
        for (int c = 0; c < TINY_COUNT; ++c) {
            double t0 = now(), h0 = thread_cpu();
            if (c == TINY_EAGER) {
                for (int i = 0; i < TINY_OPS; ++i) {
                    pt_tensor *s = pt_add(a, b);
                    if (!s) die_pt("pt_add");
                    pt_release(s);
                }
            } else if (c == TINY_REPLAY || c == TINY_FUSED) {
                for (int i = 0; i < TINY_OPS / TINY_CHAIN; ++i)
                    if (pt_graph_replay(c == TINY_REPLAY ? g : gf) != PT_OK) die_pt("pt_graph_replay");
            } else {
                for (int i = 0; i < TINY_OPS; ++i) {
                    cl_int err = clSetKernelArg(k, 0, sizeof src, &src);
                    if (err == CL_SUCCESS) err = clSetKernelArg(k, 1, sizeof src2, &src2);
                    if (err == CL_SUCCESS) err = clSetKernelArg(k, 2, sizeof dst, &dst);
                    if (err == CL_SUCCESS)
                        err = clEnqueueNDRangeKernel(cl->queue, k, 1, NULL, &global, NULL, 0, NULL, NULL);
                    if (err != CL_SUCCESS) die_cl("clSetKernelArg / clEnqueueNDRangeKernel", err);
                }
            }
            const double queued = (now() - t0) / TINY_OPS, host = (thread_cpu() - h0) / TINY_OPS;
            if (c == TINY_HAND) {
                clFinish(cl->queue);
            } else if (pt_device_synchronize(dev) != PT_OK) {
                die_pt("pt_device_synchronize");
            }
            const double dt = (now() - t0) / TINY_OPS;
            if (round >= 0 && dt < best[c]) best[c] = dt;
            if (round >= 0 && queued < best_queued[c]) best_queued[c] = queued;
            if (round >= 0 && host < best_host[c]) best_host[c] = host;
        }
    }
    clReleaseKernel(k);
    clReleaseMemObject(src);
    clReleaseMemObject(src2);
    clReleaseMemObject(dst);
    pt_graph_free(g);
    pt_graph_free(gf);
    pt_release(y);
    pt_release(yf);
    pt_release(a);
    pt_release(b);

    char fused_name[96];
    snprintf(fused_name, sizeof fused_name, "pt_add chain of 64, replayed, fused (%lld kernels)",
             (long long)fs.kernels);
    const char *names[TINY_COUNT] = {"pt_add eager", "pt_add chain of 64, replayed, fusion off (64 kernels)",
                                     fused_name,
                                     "one-line kernel by hand (clSetKernelArg x3 + clEnqueueNDRangeKernel)"};
    const char *keys[TINY_COUNT] = {"tiny_add_eager_us", "tiny_add_replay_us", "tiny_add_fused_us",
                                    "tiny_add_hand_us"};
    printf("## Host cost per op, 10-element f32 add (%d ops per round, %d alternating rounds, best)\n\n",
           TINY_OPS, rounds);
    printf("| operation | µs/op | queued µs/op | vs by hand | host CPU µs/op | host CPU vs by hand |\n"
           "|---|---:|---:|---:|---:|---:|\n");
    for (int c = 0; c < TINY_COUNT; ++c) {
        printf("| %s | %.3f | %.3f | %.2fx | %.3f | %.2fx |\n", names[c], best[c] * 1e6, best_queued[c] * 1e6,
               best[c] / best[TINY_HAND], best_host[c] * 1e6, best_host[c] / best_host[TINY_HAND]);
        record(keys[c], best[c] * 1e6);
    }
    printf("\n");
}

/* A JSON string's body: quotes and backslashes escaped, control characters dropped. */
static void json_string(FILE *f, const char *s) {
    for (; *s; ++s) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if ((unsigned char)*s >= 0x20) fputc(*s, f);
    }
}

static void write_json(const char *path, const pt_device_props *p) {
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fputs("{\n  \"source\": \"bench_opencl\",\n  \"device\": \"", f);
    json_string(f, p->name);
    fputs("\",\n  \"platform\": \"", f);
    json_string(f, p->platform);
    fputs("\",\n  \"results\": {\n", f);
    for (int i = 0; i < g_nfigures; ++i)
        fprintf(f, "    \"%s\": %.6g%s\n", g_figures[i].key, g_figures[i].value,
                i + 1 < g_nfigures ? "," : "");
    fputs("  }\n}\n", f);
    fclose(f);
}

static int usage(void) {
    fprintf(stderr, "usage: bench_opencl [--sizes N,N,...] [--json FILE] [opencl:N [bandwidth|tiny]]\n");
    return 2;
}

int main(int argc, char **argv) {
    const char *name = "opencl:0", *json = NULL;
    bool bandwidth_only = false, tiny_only = false;
    int64_t sizes[8] = {256, 1024, 2048};
    int nsizes = 3, npos = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
            json = argv[++i];
        } else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            nsizes = 0;
            for (char *p = argv[++i], *end; *p; p = end + (*end == ',')) {
                long long v = strtoll(p, &end, 10);
                if (end == p || v < 1 || v > 65536 || (*end && *end != ',') || nsizes == 8) return usage();
                sizes[nsizes++] = v;
            }
            if (nsizes == 0) return usage();
        } else if (argv[i][0] == '-') {
            return usage();
        } else if (npos == 0) {
            name = argv[i];
            ++npos;
        } else if (npos == 1 && strcmp(argv[i], "bandwidth") == 0) {
            bandwidth_only = true;
            ++npos;
        } else if (npos == 1 && strcmp(argv[i], "tiny") == 0) {
            tiny_only = true;
            ++npos;
        } else {
            return usage();
        }
    }
    int index = 0;
    if (sscanf(name, "opencl:%d", &index) != 1) return usage();
    pt_device *dev = pt_device_get(name);
    if (!dev) {
        fprintf(stderr, "bench_opencl: %s unavailable: %s\n", name, pt_last_error());
        return 77;
    }
    pt_device_props props;
    if (pt_device_info(dev, &props) != PT_OK) die_pt("pt_device_info");
    direct_cl cl;
    memset(&cl, 0, sizeof cl);
    if (!open_direct(index, &cl)) {
        fprintf(stderr, "bench_opencl: cannot open OpenCL device %d directly\n", index);
        return 1;
    }
    if (strncmp(cl.name, props.name, sizeof props.name - 1) != 0)
        fprintf(stderr, "bench_opencl: warning: direct device \"%s\" is not %s (\"%s\")\n",
                cl.name, name, props.name);
    printf("# libportable OpenCL benchmark on %s: %s (%s, %d compute units)\n\n", name,
           props.name, props.platform, props.compute_units);
    if (!bandwidth_only && !tiny_only) bench_matmul(dev, &cl, sizes, nsizes);
    if (!tiny_only) bench_bandwidth(dev, &cl, 7);
    if (!bandwidth_only) bench_tiny(dev, &cl, 7);
    clReleaseCommandQueue(cl.queue);
    clReleaseContext(cl.ctx);
    if (json) write_json(json, &props);
    return 0;
}
