/* The GPU tour: the "GPUs" chapter of Dive into Deep Learning, in C, on
 * whatever device PORTABLE_BACKEND picks (cpu, cuda, opencl).
 *
 *   PORTABLE_BACKEND=cuda ./gpu_tour      (or opencl, cpu; default auto)
 *   ./gpu_tour --quick                    smaller sizes, for tests
 *
 * Each numbered section is one point of the chapter (points 1-12 of
 * SEEDS.md: hardware, names, tensors, copies, nets, parameters, large vs
 * small work, logging, two devices, asynchrony, overlap, freeing memory),
 * and a 13th on the cure for small work: a step captured once and replayed
 * (portable/graph.h). The timings end up in one table at the end. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "portable/portable.h"

/* Stops the tour with the library's own message: the point is that errors
 * are values you can print, not crashes. */
#define CHECK(expr)                                                                        \
    do {                                                                                   \
        if (!(expr)) {                                                                     \
            fprintf(stderr, "gpu_tour: %s failed: %s (%s)\n", #expr, pt_last_error(),       \
                    pt_status_name(pt_last_status()));                                     \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct timing {
    char what[96];
    char device[16];
    double seconds;
} timing;
static timing timings[32];
static int n_timings;

static void record(const char *what, pt_device *d, double seconds) {
    if (n_timings == 32) return;
    timing *t = &timings[n_timings++];
    snprintf(t->what, sizeof t->what, "%s", what);
    snprintf(t->device, sizeof t->device, "%s", pt_device_name(d));
    t->seconds = seconds;
    printf("    %-58s %-9s %10.3f ms\n", what, pt_device_name(d), seconds * 1e3);
}

/* Times `reps` products of n x n matrices on d, synchronising before reading
 * the clock (chapter point 7: time it correctly). Warm-up first. */
static double time_matmul(pt_device *d, int64_t n, int reps) {
    int64_t shape[2] = {n, n};
    pt_scope s = pt_scope_begin();
    pt_tensor *a = pt_rand(d, PT_F32, 2, shape), *b = pt_rand(d, PT_F32, 2, shape);
    CHECK(a && b);
    CHECK(pt_matmul(a, b)); /* warm-up: kernels compiled, caches filled */
    CHECK(pt_device_synchronize(d) == PT_OK);
    double t0 = now();
    for (int i = 0; i < reps; ++i) CHECK(pt_matmul(a, b));
    CHECK(pt_device_synchronize(d) == PT_OK);
    double dt = (now() - t0) / reps;
    pt_scope_end(s);
    return dt;
}

/* With --trace-dir, an experiment runs inside a trace of its own. */
static void trace_begin(const char *dir, const char *name) {
    if (!dir) return;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (pt_trace_begin(path) != PT_OK) fprintf(stderr, "gpu_tour: %s\n", pt_last_error());
    else printf("  (tracing to %s)\n", path);
}

static void trace_end(const char *dir) {
    if (dir && pt_trace_active() && pt_trace_end() != PT_OK)
        fprintf(stderr, "gpu_tour: %s\n", pt_last_error());
}

static void section(const char *title) { printf("\n== %s\n", title); }

/* Point 13's small work: layers of y = tanh(y @ w + b) on 16x16 matrices
 * (three ops each), the intermediates released by the caller's scope. */
static pt_tensor *small_layers(pt_tensor *y, pt_tensor *const *w, pt_tensor *const *b, int layers) {
    for (int l = 0; l < layers; ++l) y = pt_tanh(pt_add(pt_matmul(y, w[l]), b[l]));
    return y;
}

/* steps runs of the small layers, eager or (g not NULL) replayed: host
 * seconds until the last one was queued, and in *all until the device is done. */
static double time_small_steps(pt_device *d, pt_graph *g, pt_tensor *x, pt_tensor *const *w,
                               pt_tensor *const *b, int layers, int steps, double *all) {
    CHECK(pt_device_synchronize(d) == PT_OK);
    double t0 = now();
    for (int i = 0; i < steps; ++i) {
        if (g) {
            CHECK(pt_graph_replay(g) == PT_OK);
            continue;
        }
        pt_scope s = pt_scope_begin();
        CHECK(small_layers(x, w, b, layers));
        pt_scope_end(s);
    }
    double host = now() - t0;
    CHECK(pt_device_synchronize(d) == PT_OK);
    *all = now() - t0;
    return host;
}

static void usage(FILE *f, const char *prog) {
    fprintf(f,
            "usage: %s [--quick] [--trace-dir DIR]\n"
            "  --quick      smaller sizes, for tests\n"
            "  --trace-dir DIR  write traces of the two-device and copy-overlap experiments\n"
            "               to DIR/tour_two_devices.json and DIR/tour_overlap.json (open them\n"
            "               in ui.perfetto.dev, or render with scripts/render_trace.py)\n"
            "  -h, --help   this text\n"
            "The device is PORTABLE_BACKEND's (auto, cpu, cuda, opencl, optionally :N).\n",
            prog);
}

int main(int argc, char **argv) {
    bool quick = false;
    const char *trace_dir = NULL;
    static const struct option options[] = {{"quick", no_argument, NULL, 'q'},
                                            {"trace-dir", required_argument, NULL, 't'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        if (opt == 'q') quick = true;
        else if (opt == 't') trace_dir = optarg;
        else if (opt == 'h') {
            usage(stdout, argv[0]);
            return 0;
        } else {
            usage(stderr, argv[0]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
        usage(stderr, argv[0]);
        return 2;
    }
    int64_t big = quick ? 512 : 2048, small = 50;
    int n_log = quick ? 100 : 1000;

    /* 1. See the hardware (what `portable devices` prints in full). */
    section("1. The hardware");
    for (int i = 0; i < pt_backend_count(); ++i) {
        const char *why;
        if (pt_backend_available(i, &why))
            printf("  %-7s %d device(s)\n", pt_backend_name(i), pt_backend_device_count(i));
        else
            printf("  %-7s unavailable: %s\n", pt_backend_name(i), why);
    }
    pt_device *dev = pt_default_device();
    if (!dev) {
        fprintf(stderr, "gpu_tour: no device for PORTABLE_BACKEND=%s: %s\n",
                getenv("PORTABLE_BACKEND") ? getenv("PORTABLE_BACKEND") : "auto", pt_last_error());
        return 1;
    }
    pt_device_props props;
    CHECK(pt_device_info(dev, &props) == PT_OK);
    printf("  default device %s: %s (%s, %d compute units)\n", pt_device_name(dev), props.name,
           props.vendor, props.compute_units);

    /* 2. Name devices: cpu(), try_gpu(i), try_all_gpus(). */
    section("2. Naming devices");
    pt_device *cpu = pt_cpu();
    CHECK(cpu);
    pt_device *all[8];
    int n_all = pt_all_devices(all, 8);
    CHECK(n_all > 0);
    printf("  pt_cpu() = %s, pt_try_device(0) = %s, pt_try_device(10) = %s\n", pt_device_name(cpu),
           pt_device_name(pt_try_device(0)), pt_device_name(pt_try_device(10)));
    printf("  pt_all_devices() = [");
    for (int i = 0; i < n_all && i < 8; ++i) printf("%s%s", i ? ", " : "", pt_device_name(all[i]));
    printf("]; pt_device_count(\"cuda\") = %d\n", pt_device_count("cuda"));

    /* 3. Tensors have a device. */
    section("3. Tensors live on a device");
    pt_scope scope = pt_scope_begin();
    int64_t s23[2] = {2, 3};
    pt_tensor *x = pt_ones(cpu, PT_F32, 2, s23);
    pt_tensor *X = pt_ones(dev, PT_F32, 2, s23);
    pt_tensor *Y = pt_rand(dev, PT_F32, 2, s23);
    CHECK(x && X && Y);
    char desc[96];
    printf("  x = %s\n", pt_tensor_describe(x, desc, sizeof desc));
    printf("  X = %s, Y = %s\n", pt_tensor_describe(X, desc, sizeof desc),
           pt_device_name(pt_tensor_device(Y)));

    /* 4. Copying between devices; mixing devices is an error. */
    section("4. Copying between devices");
    pt_tensor *Z = pt_to(x, dev);
    CHECK(Z);
    pt_tensor *Z2 = pt_to(Z, dev);
    printf("  Z = pt_to(x, %s); pt_to(Z, %s) == Z: %s\n", pt_device_name(dev), pt_device_name(dev),
           Z2 == Z ? "true (no copy)" : "false");
    pt_tensor *sum = pt_add(Y, Z);
    CHECK(sum);
    float host[6];
    CHECK(pt_to_host(sum, host, sizeof host) == PT_OK);
    printf("  Y + Z = [%.3f %.3f %.3f; %.3f %.3f %.3f]\n", host[0], host[1], host[2], host[3],
           host[4], host[5]);
    if (n_all >= 2 && all[1] != dev) {
        /* The chapter's X.cuda(1): a copy onto the second device, and an op there. */
        pt_tensor *Y1 = pt_rand(all[1], PT_F32, 2, s23);
        pt_tensor *Z1 = pt_to(X, all[1]);
        pt_tensor *sum1 = Y1 && Z1 ? pt_add(Y1, Z1) : NULL;
        CHECK(sum1 && pt_tensor_device(sum1) == all[1]);
        CHECK(pt_to_host(sum1, host, sizeof host) == PT_OK);
        printf("  Z1 = pt_to(X, %s); Y1 on %s; Y1 + Z1 = [%.3f %.3f %.3f; ...] on %s\n",
               pt_device_name(all[1]), pt_device_name(all[1]), host[0], host[1], host[2],
               pt_device_name(pt_tensor_device(sum1)));
    }
    pt_device *other = dev == cpu ? pt_device_get("cpu:1") : cpu;
    pt_clear_error();
    if (other) {
        pt_tensor *elsewhere = pt_ones(other, PT_F32, 2, s23);
        pt_tensor *bad = pt_add(X, elsewhere);
        printf("  pt_add(X on %s, tensor on %s) -> %s\n    %s: %s\n", pt_device_name(dev),
               pt_device_name(other), bad ? "a tensor?!" : "NULL", pt_status_name(pt_last_status()),
               pt_last_error());
        CHECK(!bad && pt_last_status() == PT_ERR_DEVICE_MISMATCH);
        pt_clear_error();
    } else {
        printf("  (run with PORTABLE_CPU_DEVICES=2 to see the device-mismatch error on cpu)\n");
    }
    if (dev == cpu) printf("  (the default device is the cpu: pt_to(x, cpu) is free, as the timings show)\n");
    {   /* many small copies vs one large one */
        int64_t n = quick ? 100000 : 1000000, piece = 1000;
        pt_tensor *src = pt_rand(dev, PT_F32, 1, &n);
        CHECK(src);
        CHECK(pt_device_synchronize(dev) == PT_OK);
        double t0 = now();
        pt_tensor *whole = pt_to(src, cpu);
        CHECK(whole);
        double one = now() - t0;
        t0 = now();
        for (int64_t off = 0; off < n; off += piece) {
            pt_tensor *part = pt_narrow(src, 0, off, piece);
            pt_tensor *moved = pt_to(part, cpu);
            CHECK(moved);
            pt_release(moved);
            pt_release(part);
        }
        double many = now() - t0;
        char what[96];
        snprintf(what, sizeof what, "copy %lld floats to cpu in one piece", (long long)n);
        record(what, dev, one);
        snprintf(what, sizeof what, "copy them in %lld pieces of %lld", (long long)(n / piece),
                 (long long)piece);
        record(what, dev, many);
    }
    pt_scope_end(scope);

    /* 5 + 6. Nets on a device; reading and writing their parameters. */
    section("5. A net on the device; 6. saving and loading its parameters");
    {
        pt_scope s = pt_scope_begin();
        pt_module *layers[3] = {pt_linear(256), pt_relu_module(), pt_linear(10)};
        pt_module *net = pt_sequential(3, layers);
        CHECK(net);
        CHECK(pt_module_to(net, dev) == PT_OK); /* like net.to(device) */
        int64_t xs[2] = {2, 20};
        pt_tensor *input = pt_rand(dev, PT_F32, 2, xs);
        pt_tensor *out = pt_module_forward(net, input); /* lazy sizes fixed here, on dev */
        CHECK(out);
        pt_tensor *w = pt_module_parameter(net, "0.weight");
        CHECK(w);
        printf("  net(X) = %s; net[0].weight lives on %s\n", pt_tensor_describe(out, desc, sizeof desc),
               pt_device_name(pt_tensor_device(w)));
        /* A folder of its own, removed before any check can exit, so the tour
         * leaves nothing behind and two tours at once never share a file. */
        const char *tmp = getenv("TMPDIR");
        char dir[512], path[600];
        snprintf(dir, sizeof dir, "%s/portable_gpu_tour_XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            fprintf(stderr, "gpu_tour: cannot make a temporary folder from %s: %s\n", dir,
                    strerror(errno));
            exit(1);
        }
        snprintf(path, sizeof path, "%s/net.safetensors", dir);
        pt_module *clone_layers[3] = {pt_linear(256), pt_relu_module(), pt_linear(10)};
        pt_module *clone = pt_sequential(3, clone_layers);
        pt_status saved = pt_save(net, path);
        pt_status loaded = saved == PT_OK && clone ? pt_load(clone, path, cpu) : PT_ERR_IO;
        remove(path);
        rmdir(dir);
        CHECK(saved == PT_OK);
        CHECK(clone && loaded == PT_OK); /* map_location = cpu */
        pt_tensor *x_cpu = pt_to(input, cpu);
        pt_tensor *diff = pt_norm(pt_sub(pt_to(out, cpu), pt_module_forward(clone, x_cpu)));
        CHECK(diff);
        printf("  saved as safetensors, loaded onto %s: |net(X) - clone(X)| = %.3g\n",
               pt_device_name(pt_tensor_device(pt_module_parameter(clone, "0.weight"))),
               pt_item(diff));
        CHECK(pt_item(diff) < 1e-4);
        pt_module_free(clone);
        pt_module_free(net);
        pt_scope_end(s);
    }

    /* 7 + 10. Large vs small work; asynchronous execution means we must
     * synchronise before reading the clock. */
    section("7. Large vs small matrix products (synchronised timing)");
    char what[96];
    snprintf(what, sizeof what, "matmul %lldx%lld f32", (long long)big, (long long)big);
    record(what, cpu, time_matmul(cpu, big, 2));
    if (dev != cpu) record(what, dev, time_matmul(dev, big, 5));
    snprintf(what, sizeof what, "matmul %lldx%lld f32", (long long)small, (long long)small);
    record(what, cpu, time_matmul(cpu, small, 200));
    if (dev != cpu) record(what, dev, time_matmul(dev, small, 200));

    /* 8. Logging: a host read per step vs keeping the norms on the device. */
    section("8. Logging norms: read per step vs once at the end");
    {
        int64_t shape[2] = {100, 100};
        pt_scope s = pt_scope_begin();
        pt_tensor *a = pt_rand(dev, PT_F32, 2, shape), *b = pt_rand(dev, PT_F32, 2, shape);
        CHECK(a && b);
        CHECK(pt_device_synchronize(dev) == PT_OK);
        double t0 = now(), checksum1 = 0;
        for (int i = 0; i < n_log; ++i) {
            pt_tensor *c = pt_matmul(a, b), *nrm = pt_norm(c);
            checksum1 += pt_item(nrm); /* waits for the device every step */
            pt_release(nrm);
            pt_release(c);
        }
        double per_step = now() - t0;
        t0 = now();
        pt_tensor **norms = malloc(sizeof *norms * (size_t)n_log);
        CHECK(norms);
        for (int i = 0; i < n_log; ++i) {
            pt_tensor *c = pt_matmul(a, b);
            norms[i] = pt_norm(c);
            pt_release(c);
        }
        pt_tensor *all_norms = pt_stack(n_log, norms, 0);
        CHECK(all_norms);
        float *vals = malloc(sizeof *vals * (size_t)n_log);
        CHECK(vals);
        CHECK(pt_to_host(all_norms, vals, sizeof *vals * (size_t)n_log) == PT_OK); /* one wait */
        double once = now() - t0, checksum2 = 0;
        for (int i = 0; i < n_log; ++i) {
            checksum2 += vals[i];
            pt_release(norms[i]);
        }
        free(vals);
        free(norms);
        snprintf(what, sizeof what, "%d matmuls 100x100, norm read every step", n_log);
        record(what, dev, per_step);
        snprintf(what, sizeof what, "%d matmuls 100x100, norms read once", n_log);
        record(what, dev, once);
        printf("    (sum of norms %.6g vs %.6g: the same work)\n", checksum1, checksum2);
        CHECK(fabs(checksum1 - checksum2) <= 1e-4 * fabs(checksum1));
        pt_scope_end(s);
    }

    /* 9 + 10. Two devices at once vs one after the other. */
    section("9. Two devices: in parallel vs in sequence");
    if (n_all >= 2) {
        int64_t n = quick ? 256 : 1024, shape[2] = {n, n};
        pt_scope s = pt_scope_begin();
        pt_tensor *a0 = pt_rand(all[0], PT_F32, 2, shape), *a1 = pt_rand(all[1], PT_F32, 2, shape);
        CHECK(a0 && a1 && pt_matmul(a0, a0) && pt_matmul(a1, a1));
        CHECK(pt_device_synchronize(all[0]) == PT_OK && pt_device_synchronize(all[1]) == PT_OK);
        trace_begin(trace_dir, "tour_two_devices.json");
        double t0 = now();
        for (int i = 0; i < 10; ++i) CHECK(pt_matmul(a0, a0));
        CHECK(pt_device_synchronize(all[0]) == PT_OK);
        for (int i = 0; i < 10; ++i) CHECK(pt_matmul(a1, a1));
        CHECK(pt_device_synchronize(all[1]) == PT_OK);
        double seq = now() - t0;
        t0 = now();
        for (int i = 0; i < 10; ++i) CHECK(pt_matmul(a0, a0) && pt_matmul(a1, a1));
        CHECK(pt_device_synchronize(all[0]) == PT_OK && pt_device_synchronize(all[1]) == PT_OK);
        double par = now() - t0;
        trace_end(trace_dir);
        record("2x10 matmuls, one device after the other", all[0], seq);
        record("2x10 matmuls, both devices queued, then sync", all[0], par);
        pt_scope_end(s);
    } else {
        printf("  only one device of this backend; on cpu try PORTABLE_CPU_DEVICES=2\n");
    }

    /* 11. Overlapping compute with copies to pinned memory. */
    section("11. Compute then copy vs copies overlapped (pt_to_async, pinned)");
    {
        int64_t n = quick ? 256 : 1024, shape[2] = {n, n};
        int reps = quick ? 10 : 50;
        pt_scope s = pt_scope_begin();
        pt_tensor *a = pt_rand(dev, PT_F32, 2, shape);
        CHECK(a && pt_matmul(a, a));
        pt_tensor **ys = malloc(sizeof *ys * (size_t)reps);
        pt_tensor **hs = malloc(sizeof *hs * (size_t)reps);
        CHECK(ys && hs);
        /* The overlapped loop below runs once untimed first. Pinned host
         * memory is slow to allocate (cudaHostAlloc of 4 MiB takes longer
         * than the copy into it), so a first pass times allocation, not
         * overlap. Releasing its cpu tensors hands their pinned blocks to
         * the device's pinned cache (no cap; pt_empty_cache frees it), and
         * the timed pass takes them from there, as a training loop does
         * from its second step on. PyTorch caches pinned memory too. */
        pt_memory_usage m0, m1, m2;
        CHECK(pt_memory_stats(dev, &m0) == PT_OK);
        for (int i = 0; i < reps; ++i) {
            pt_tensor *y = pt_matmul(a, a);
            CHECK(y);
            CHECK(hs[i] = pt_to_async(y, cpu));
            pt_release(y);
        }
        CHECK(pt_device_synchronize(dev) == PT_OK);
        for (int i = 0; i < reps; ++i) pt_release(hs[i]);
        /* A block is handed out again once the queue is past its release. */
        CHECK(pt_device_synchronize(dev) == PT_OK);
        CHECK(pt_memory_stats(dev, &m1) == PT_OK);
        trace_begin(trace_dir, "tour_overlap.json");
        double t0 = now();
        for (int i = 0; i < reps; ++i) CHECK(ys[i] = pt_matmul(a, a));
        for (int i = 0; i < reps; ++i) {
            pt_tensor *h = pt_to(ys[i], cpu);
            CHECK(h);
            pt_release(h);
            pt_release(ys[i]);
        }
        double serial = now() - t0;
        t0 = now();
        for (int i = 0; i < reps; ++i) {
            pt_tensor *y = pt_matmul(a, a);
            CHECK(y);
            CHECK(hs[i] = pt_to_async(y, cpu)); /* queued behind y's product */
            pt_release(y);
        }
        CHECK(pt_device_synchronize(dev) == PT_OK);
        double overlapped = now() - t0;
        trace_end(trace_dir);
        CHECK(pt_memory_stats(dev, &m2) == PT_OK);
        for (int i = 0; i < reps; ++i) pt_release(hs[i]);
        printf("  pinned blocks: the untimed first pass allocated %lld; the timed pass took %lld from the "
               "cache and allocated %lld\n",
               (long long)(m1.pinned_allocs - m0.pinned_allocs), (long long)(m2.pinned_reuses - m1.pinned_reuses),
               (long long)(m2.pinned_allocs - m1.pinned_allocs));
        free(hs);
        free(ys);
        snprintf(what, sizeof what, "%d matmuls, then copy each to cpu", reps);
        record(what, dev, serial);
        snprintf(what, sizeof what, "%d matmuls with async copies to pinned memory", reps);
        record(what, dev, overlapped);
        pt_scope_end(s);
    }

    /* 12. Freeing memory: the cache and handing it back. */
    section("12. Freeing device memory");
    {
        /* 16 MiB: requests of 10 MiB and up get a driver allocation (segment)
         * of their own, so once the tensor dies that whole segment is free
         * and pt_empty_cache must hand all of it back. Free space inside
         * segments that still hold live tensors (earlier sections' results,
         * a backend's scratch buffers) stays cached, as in PyTorch. */
        const int64_t bytes = 16LL << 20;
        pt_memory_usage held, freed, emptied;
        int64_t shape[2] = {2048, 2048};
        pt_tensor *t = pt_zeros(dev, PT_F32, 2, shape);
        CHECK(t);
        CHECK(pt_memory_stats(dev, &held) == PT_OK);
        printf("  with a 16 MiB tensor:  in use %10lld B, cached %10lld B\n", (long long)held.in_use,
               (long long)held.cached);
        pt_release(t);
        CHECK(pt_memory_stats(dev, &freed) == PT_OK);
        printf("  after pt_release:      in use %10lld B, cached %10lld B (kept for reuse)\n",
               (long long)freed.in_use, (long long)freed.cached);
        CHECK(freed.in_use <= held.in_use - bytes && freed.cached >= held.cached + bytes);
        CHECK(pt_empty_cache(dev) == PT_OK);
        CHECK(pt_memory_stats(dev, &emptied) == PT_OK);
        printf("  after pt_empty_cache:  in use %10lld B, cached %10lld B (back to the driver;\n"
               "                         what stays is free space in segments live tensors share)\n",
               (long long)emptied.in_use, (long long)emptied.cached);
        CHECK(emptied.in_use == freed.in_use && emptied.cached <= freed.cached - bytes);
    }

    /* 13. Small work pays the host per op (point 7): capture the step once
     * and replay it, and the host's share per op shrinks (a CUDA graph: one
     * launch per replay; an OpenCL command buffer; on the cpu the planned
     * op list without validation or allocation per op). */
    section("13. Small products captured once, replayed (graphs)");
    {
        enum { LAYERS = 8 };
        const int steps = quick ? 50 : 500;
        int64_t sx[2] = {16, 16}, sb[1] = {16};
        pt_scope s = pt_scope_begin();
        pt_tensor *x = pt_rand(dev, PT_F32, 2, sx), *w[LAYERS], *b[LAYERS];
        CHECK(x);
        for (int l = 0; l < LAYERS; ++l) {
            w[l] = pt_mul_scalar(pt_randn(dev, PT_F32, 2, sx), 0.25);
            b[l] = pt_rand(dev, PT_F32, 1, sb);
            CHECK(w[l] && b[l]);
        }
        pt_tensor *eager = small_layers(x, w, b, LAYERS);
        CHECK(eager);
        /* Inputs and weights exist before the capture: the replays read them in place. */
        CHECK(pt_graph_capture_begin(dev) == PT_OK);
        pt_scope inner = pt_scope_begin();
        pt_tensor *out = pt_keep(small_layers(x, w, b, LAYERS));
        pt_scope_end(inner);
        pt_graph *g = pt_graph_capture_end(dev);
        CHECK(g && out);
        pt_graph_stats st;
        CHECK(pt_graph_info(g, &st) == PT_OK);
        CHECK(pt_graph_replay(g) == PT_OK); /* the first replay makes the backend's form */
        float ve[256], vr[256];
        CHECK(pt_to_host(eager, ve, sizeof ve) == PT_OK && pt_to_host(out, vr, sizeof vr) == PT_OK);
        printf("  %d layers of tanh(y @ w + b) on 16x16: %lld ops per step, replayed == eager bit for bit: %s\n",
               LAYERS, (long long)st.ops, memcmp(ve, vr, sizeof ve) ? "no" : "yes");
        CHECK(memcmp(ve, vr, sizeof ve) == 0);
        double eager_all, replay_all, e_host, r_host;
        time_small_steps(dev, NULL, x, w, b, LAYERS, steps / 10 + 1, &eager_all); /* warm */
        e_host = time_small_steps(dev, NULL, x, w, b, LAYERS, steps, &eager_all);
        r_host = time_small_steps(dev, g, x, w, b, LAYERS, steps, &replay_all);
        const double per = 1e6 / ((double)steps * (double)st.ops);
        /* On the cpu the host runs the ops too: its figures include their work. */
        printf("  host cost per op: eager %.3f us, replayed %.3f us (eager / replayed %.2fx)\n", e_host * per,
               r_host * per, e_host / r_host);
        if (strstr(props.name, "simulator"))
            printf("  (the CUDA simulator runs the kernels on the CPU: its times say nothing about a GPU)\n");
        snprintf(what, sizeof what, "%d steps of %lld small ops, eager", steps, (long long)st.ops);
        record(what, dev, eager_all);
        snprintf(what, sizeof what, "%d steps of %lld small ops, replayed graph", steps, (long long)st.ops);
        record(what, dev, replay_all);
        pt_graph_free(g);
        pt_release(out);
        pt_scope_end(s);
    }

    printf("\n== Timings (%s, default device %s)\n\n", props.name, pt_device_name(dev));
    printf("| %-58s | %-9s | %12s |\n|%s|%s|%s|\n", "experiment", "device", "time (ms)",
           "------------------------------------------------------------", "-----------",
           "--------------");
    for (int i = 0; i < n_timings; ++i)
        printf("| %-58s | %-9s | %12.3f |\n", timings[i].what, timings[i].device,
               timings[i].seconds * 1e3);
    return 0;
}
