/* Cross-backend test: the same program gives the same answer on every
 * backend. Runs one computation — the GPU tour's steps and a chain of ops —
 * on cpu:0 and on the device named by argv[1] (e.g. "opencl:0"), and
 * compares every result. Exit 77 (skip) when that device is unavailable. */
#define _POSIX_C_SOURCE 200809L /* nanosleep, setenv */

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "portable/portable.h"

static int passed, failed;

#define MUST(expr)                                                                        \
    do {                                                                                  \
        if (!(expr)) {                                                                    \
            fprintf(stderr, "cross_backend: %s failed: %s\n", #expr, pt_last_error());    \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

/* One experiment: returns a tensor computed on d (the caller releases it). */
typedef pt_tensor *(*experiment)(pt_device *d);

static pt_tensor *tour_matmul_norms(pt_device *d) {
    /* chapter point 8: matmuls whose norms stay on the device, read once */
    int64_t shape[2] = {100, 100};
    pt_manual_seed(7);
    pt_tensor *a = pt_rand(d, PT_F32, 2, shape), *b = pt_rand(d, PT_F32, 2, shape);
    pt_tensor *norms[20];
    for (int i = 0; i < 20; ++i) {
        pt_tensor *c = pt_matmul(a, b), *scaled = pt_mul_scalar(c, 1.0 / (i + 1));
        norms[i] = pt_norm(scaled);
        pt_release(scaled);
        pt_release(c);
    }
    pt_tensor *out = pt_stack(20, norms, 0);
    for (int i = 0; i < 20; ++i) pt_release(norms[i]);
    pt_release(a);
    pt_release(b);
    return out;
}

static pt_tensor *rng_bits(pt_device *d) {
    int64_t n = 4099; /* odd: exercises partial Philox blocks */
    pt_manual_seed(1234);
    return pt_rand(d, PT_F32, 1, &n);
}

static pt_tensor *op_chain(pt_device *d) {
    /* broadcasting, views, reductions, softmax, gather: one pipeline */
    int64_t s[2] = {33, 17}, sb[1] = {17};
    pt_manual_seed(99);
    pt_scope scope = pt_scope_begin();
    pt_tensor *x = pt_randn(d, PT_F32, 2, s), *bias = pt_rand(d, PT_F32, 1, sb);
    pt_tensor *h = pt_relu(pt_add(x, bias));
    pt_tensor *t = pt_transpose(h, 0, 1);                  /* [17, 33] strided view */
    pt_tensor *p = pt_softmax(pt_matmul(t, h), -1);        /* [17, 17] */
    pt_tensor *m = pt_mean(pt_tanh(pt_mul_scalar(p, 3.0)), 0, true);
    pt_tensor *e = pt_exp(pt_neg(pt_abs(pt_narrow(x, 0, 5, 17))));
    pt_tensor *idx = pt_argmax(e, 1, true);                /* [17, 1] */
    pt_tensor *g = pt_cast(pt_gather(e, 1, idx), PT_F32);
    pt_tensor *out = pt_cat(3, (pt_tensor *[]){pt_reshape(m, 1, (int64_t[]){17}),
                                               pt_reshape(g, 1, (int64_t[]){17}),
                                               pt_sum(pt_sqrt(pt_add_scalar(e, 1.0)), 0, false)},
                            0);
    pt_keep(out);
    pt_scope_end(scope);
    return out;
}

static pt_tensor *integer_chain(pt_device *d) {
    int64_t n = 1000;
    pt_scope scope = pt_scope_begin();
    pt_tensor *a = pt_arange(d, PT_I64, -500, 500, 1);
    pt_tensor *b = pt_add_scalar(pt_mul(a, a), 7);
    pt_tensor *c = pt_where(pt_gt(a, pt_zeros(d, PT_I64, 1, &n)), b, pt_neg(b));
    pt_tensor *out = pt_cast(pt_sum(pt_reshape(c, 2, (int64_t[]){10, 100}), 1, false), PT_F64);
    pt_keep(out);
    pt_scope_end(scope);
    return out;
}

static void compare(const char *name, experiment f, pt_device *ref_dev, pt_device *dev, double tol) {
    pt_tensor *r = f(ref_dev), *t = f(dev);
    MUST(r && t);
    int64_t n = pt_tensor_numel(r);
    MUST(n == pt_tensor_numel(t));
    pt_tensor *r64 = pt_cast(r, PT_F64), *t64 = pt_cast(t, PT_F64);
    MUST(r64 && t64);
    double *a = malloc(sizeof(double) * (size_t)n), *b = malloc(sizeof(double) * (size_t)n);
    MUST(a && b);
    MUST(pt_to_host(r64, a, sizeof(double) * (size_t)n) == PT_OK);
    MUST(pt_to_host(t64, b, sizeof(double) * (size_t)n) == PT_OK);
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; ++i)
        if (!(fabs(a[i] - b[i]) <= tol * (1.0 + fabs(a[i])))) bad = i;
    if (bad < 0) {
        ++passed;
        printf("PASS %-20s %lld values equal within %g on %s and %s\n", name, (long long)n, tol,
               pt_device_name(ref_dev), pt_device_name(dev));
    } else {
        ++failed;
        printf("FAIL %-20s index %lld: %s gives %.9g, %s gives %.9g\n", name, (long long)bad,
               pt_device_name(ref_dev), a[bad], pt_device_name(dev), b[bad]);
    }
    free(a);
    free(b);
    pt_release(r);
    pt_release(t);
    pt_release(r64);
    pt_release(t64);
}

/* Reads x (any dtype) as doubles into v (n values); false on failure. */
static bool read_f64(pt_tensor *x, double *v, int64_t n) {
    pt_tensor *c = pt_cast(pt_contiguous(x), PT_F64);
    bool ok = c && pt_tensor_numel(c) == n && pt_to_host(c, v, sizeof(double) * (size_t)n) == PT_OK;
    pt_release(c);
    return ok;
}

static void report(const char *name, bool ok, const char *why) {
    if (ok) {
        ++passed;
        printf("PASS %s\n", name);
    } else {
        ++failed;
        printf("FAIL %s: %s (%s)\n", name, why, pt_last_error());
    }
}

/* pt_copy_ from cpu tensors into dev's: one upload straight into a
 * contiguous dst of the same dtype and shape (after the ops already queued
 * that read dst), the staged path for views, casts and broadcasts, and the
 * upload refused inside a capture on dev. */
static void copy_into_device(pt_device *cpu, pt_device *dev) {
    int64_t s34[2] = {3, 4}, s14[2] = {1, 4}, s43[2] = {4, 3}, n5 = 5;
    double v[12];
    pt_scope scope = pt_scope_begin();
    pt_tensor *src = pt_reshape(pt_arange(cpu, PT_F32, 0, 12, 1), 2, s34);
    pt_tensor *dst = pt_zeros(dev, PT_F32, 2, s34);
    MUST(src && dst);
    pt_tensor *before = pt_mul_scalar(dst, 2); /* queued before the upload: reads zeros */
    bool ok = pt_copy_(dst, src) == PT_OK && read_f64(dst, v, 12);
    for (int i = 0; ok && i < 12; ++i) ok = v[i] == i;
    report("copy_ upload into a contiguous tensor", ok, "values differ");
    ok = before && read_f64(before, v, 12);
    for (int i = 0; ok && i < 12; ++i) ok = v[i] == 0;
    report("copy_ upload waits for the ops queued before it", ok, "an op queued before saw the upload");

    pt_tensor *base = pt_zeros(dev, PT_F32, 2, s43), *view = pt_transpose(base, 0, 1);
    ok = view && pt_copy_(view, src) == PT_OK && read_f64(base, v, 12);
    for (int i = 0; ok && i < 12; ++i) ok = v[i] == (i % 3) * 4 + i / 3;
    report("copy_ into a transposed view", ok, "values differ");

    pt_tensor *src64 = pt_cast(src, PT_F64);
    ok = src64 && pt_fill_(dst, -1) == PT_OK && pt_copy_(dst, src64) == PT_OK && read_f64(dst, v, 12);
    for (int i = 0; ok && i < 12; ++i) ok = v[i] == i;
    report("copy_ with a cast (f64 to f32)", ok, "values differ");

    pt_tensor *row = pt_reshape(pt_arange(cpu, PT_F32, 10, 14, 1), 2, s14);
    ok = row && pt_copy_(dst, row) == PT_OK && read_f64(dst, v, 12);
    for (int i = 0; ok && i < 12; ++i) ok = v[i] == 10 + i % 4;
    report("copy_ broadcasting a row", ok, "values differ");

    const int64_t labels[5] = {3, -1, 9, 0, 1234567890123LL};
    pt_tensor *lsrc = pt_from_data(cpu, PT_I64, 1, &n5, labels), *ldst = pt_zeros(dev, PT_I64, 1, &n5);
    int64_t back[5] = {0};
    ok = lsrc && ldst && pt_copy_(ldst, lsrc) == PT_OK && pt_to_host(ldst, back, sizeof back) == PT_OK &&
         memcmp(back, labels, sizeof back) == 0;
    report("copy_ upload of i64 labels", ok, "values differ");

    MUST(pt_graph_capture_begin(dev) == PT_OK);
    const pt_status in_capture = pt_copy_(dst, src);
    pt_graph *g = pt_graph_capture_end(dev);
    report("copy_ upload refused inside a capture", in_capture != PT_OK && g == NULL && strstr(pt_last_error(), "pt_copy_"),
           "a host upload inside a capture was not refused, or the error does not name pt_copy_");
    pt_graph_free(g);
    pt_clear_error();
    pt_scope_end(scope);
}

/* What the plugin said of staging small uploads to the device, from its
 * info-level message (the OpenCL plugin times a synchronous upload on a CPU
 * device and says which it chose): 1 staged, -1 synchronous, 0 nothing. */
static atomic_int plugin_staging;

static void note_staging(pt_log_level level, const char *message, void *user) {
    (void)user;
    if (strstr(message, "small uploads staged through pinned blocks")) atomic_store(&plugin_staging, 1);
    else if (strstr(message, "small uploads synchronous")) atomic_store(&plugin_staging, -1);
    else if (level >= PT_LOG_WARN) fprintf(stderr, "portable [warn]: %s\n", message);
}

/* Uploads the host may overwrite at once: pt_from_data and pt_copy_ from a
 * cpu tensor. Where small uploads are staged through pinned blocks and queued
 * (PORTABLE_STAGED_UPLOADS, on by default on GPUs), the device must still see
 * the bytes as they were at the call, in queue order, and a loop of uploads
 * that never synchronises must keep reusing a few blocks. */
static void staged_uploads(pt_device *cpu, pt_device *dev) {
    enum { N = 1024, STEPS = 200 };
    static float host[N];
    int64_t n = N;
    double v[8];
    pt_scope scope = pt_scope_begin();
    for (int i = 0; i < N; ++i) host[i] = (float)i;
    pt_tensor *a = pt_from_data(dev, PT_F32, 1, &n, host);
    for (int i = 0; i < N; ++i) host[i] = -1;
    pt_tensor *src = pt_arange(cpu, PT_F32, 0, N, 1), *b = pt_zeros(dev, PT_F32, 1, &n);
    MUST(a && src && b);
    bool ok = pt_copy_(b, src) == PT_OK && pt_fill_(src, -2) == PT_OK;
    pt_tensor *both = pt_add(a, b);
    ok = ok && both && read_f64(pt_narrow(both, 0, N - 8, 8), v, 8);
    for (int i = 0; ok && i < 8; ++i) ok = v[i] == 2.0 * (N - 8 + i);
    report("uploads keep the host bytes of the call", ok,
           "the device saw host memory overwritten after pt_from_data / pt_copy_ returned");

    pt_memory_usage before, after;
    MUST(pt_memory_stats(dev, &before) == PT_OK);
    pt_tensor *acc = pt_zeros(dev, PT_F32, 1, &n), *in = pt_zeros(dev, PT_F32, 1, &n);
    MUST(acc && in);
    ok = true;
    for (int step = 0; ok && step < STEPS; ++step) {
        for (int i = 0; i < N; ++i) host[i] = (float)(step + i % 7);
        ok = pt_copy_(in, pt_from_data(cpu, PT_F32, 1, &n, host)) == PT_OK && pt_axpy_(acc, 1.0, in) == PT_OK;
    }
    ok = ok && read_f64(pt_narrow(acc, 0, 0, 8), v, 8);
    /* sum over steps of step + i % 7: exact in f32 (below 2^24) */
    for (int i = 0; ok && i < 8; ++i) ok = v[i] == STEPS * (STEPS - 1) / 2.0 + STEPS * (i % 7);
    report("a loop of uploads without a synchronize", ok, "the accumulated uploads differ");
    MUST(pt_memory_stats(dev, &after) == PT_OK);
    const int64_t allocs = after.pinned_allocs - before.pinned_allocs,
                  reuses = after.pinned_reuses - before.pinned_reuses;
    const bool staged = allocs + reuses > 0;
    /* The device may lag the host by the whole loop (the simulator does),
     * so the loop's own counts prove nothing about reuse; once the queue has
     * had time to run, a new upload must find a block without a synchronize
     * having happened (queue markers, not synchronize counting). */
    bool reused = !staged;
    for (int attempt = 0; !reused && attempt < 300; ++attempt) {
        const struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
        pt_memory_usage m0, m1;
        MUST(pt_memory_stats(dev, &m0) == PT_OK);
        MUST(pt_copy_(in, pt_from_data(cpu, PT_F32, 1, &n, host)) == PT_OK);
        MUST(pt_memory_stats(dev, &m1) == PT_OK);
        reused = m1.pinned_reuses > m0.pinned_reuses;
    }
    report("staged uploads reuse pinned blocks without a synchronize", reused,
           "no staging block was handed out again within 3 s of the queue's work");
    const char *forced = getenv("PORTABLE_STAGED_UPLOADS");
    const int asked = atomic_load(&plugin_staging);
    if (forced && strcmp(forced, "on") == 0)
        report("PORTABLE_STAGED_UPLOADS=on stages the loop's uploads", staged, "nothing was staged");
    else if (forced && strcmp(forced, "off") == 0)
        report("PORTABLE_STAGED_UPLOADS=off keeps the loop's uploads synchronous", !staged, "uploads were staged");
    else if (asked != 0)
        report("uploads are staged or not as the plugin asked", staged == (asked > 0),
               asked > 0 ? "the plugin asked for staging and nothing was staged"
                         : "the plugin asked for synchronous uploads and some were staged");
    printf("  staged uploads on %s: %s (%lld pinned allocations, %lld reuses for %d uploads)\n",
           pt_device_name(dev), staged ? "yes" : "no", (long long)allocs, (long long)reuses, STEPS);
    pt_scope_end(scope);
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "opencl:0";
    /* the plugins' info messages say how uploads go (a setting of the
     * caller's own wins) */
    setenv("PORTABLE_LOG", "info", 0);
    pt_set_log_handler(note_staging, NULL);
    pt_device *dev = pt_device_get(name), *cpu = pt_cpu();
    if (!dev) {
        printf("SKIP: %s unavailable: %s\n", name, pt_last_error());
        return 77;
    }
    MUST(cpu);
    compare("rng_bits", rng_bits, cpu, dev, 0.0);
    compare("tour_matmul_norms", tour_matmul_norms, cpu, dev, 1e-5);
    compare("op_chain", op_chain, cpu, dev, 1e-5);
    compare("integer_chain", integer_chain, cpu, dev, 0.0);
    copy_into_device(cpu, dev);
    staged_uploads(cpu, dev);
    printf("cross_backend(cpu vs %s): %d passed, %d failed\n", name, passed, failed);
    return failed ? 1 : 0;
}
