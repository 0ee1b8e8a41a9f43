/* pt_scaled_dot_product_attention beyond the values conformance checks:
 *   - memory: forward and backward at T = 4096 (B 1, H 2, D 64) must not
 *     hold a [T, T] score matrix (64 MiB per head in f32) where the device
 *     runs the fused kinds (cpu, OpenCL, cuda): the peak at most about doubles from T / 2 to T
 *     and stays under a quarter of one head's scores; the peaks of
 *     pt_memory_stats are printed either way (the composed path's are
 *     quadratic, by design, and only reported);
 *   - graphs: a captured forward + backward replays to the eager values
 *     with new inputs copied in (the fused kinds' extra operands are planned
 *     and rebound like any other);
 *   - OpenCL: the plugin takes the kinds, and PORTABLE_OPENCL_ATTENTION=composed
 *     makes it refuse the forward one with a message naming the switch;
 *   - AdamW with the warm-up + cosine schedule, captured: each replay takes
 *     its own step's learning rate and equals the eager steps bit for bit;
 *   - a head of D = 260 (wider than the cuda kernels take, so composed
 *     there) gives the cpu's values.
 * `test_attention T` takes another length for the memory check (the CUDA
 * simulator runs a shorter one). PT_TEST_GRAPH_PATHS=cuda fails the run
 * unless the plugin replayed the graphs as CUDA graphs (it says so at
 * PORTABLE_LOG=info) with the ATTENTION kinds in them.
 * `test_attention bits` prints one hash of a forward + backward's output
 * and gradients instead; check_attention_threads.sh compares it across
 * thread counts (the kernels promise the same bits at any).
 * Exit 77 when PORTABLE_BACKEND's device is absent. */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "portable/portable.h"

static int failures;

#define CHECK(cond, ...)                                                                                          \
    do {                                                                                                           \
        if (!(cond)) {                                                                                             \
            ++failures;                                                                                            \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                            \
            printf(__VA_ARGS__);                                                                                   \
            printf(" (%s)\n", pt_last_error());                                                                    \
        }                                                                                                          \
    } while (0)

static double max_diff(pt_tensor *a, pt_tensor *b) {
    const int64_t n = pt_tensor_numel(a);
    float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
    double worst = INFINITY;
    if (x && y && pt_to_host(a, x, sizeof(float) * (size_t)n) == PT_OK &&
        pt_to_host(b, y, sizeof(float) * (size_t)n) == PT_OK) {
        worst = 0;
        for (int64_t i = 0; i < n; ++i) {
            const double d = fabs((double)x[i] - (double)y[i]);
            if (!(d <= worst)) worst = d;
        }
    }
    free(x);
    free(y);
    return worst;
}

/* The devices with the ATTENTION kinds: the cpu, OpenCL and cuda backends,
 * unless their switch sends attention to the composed path. */
static bool fused_here(pt_device *d) {
    static const struct {
        const char *prefix, *variable;
    } fused[] = {{"cpu", "PORTABLE_CPU_ATTENTION"}, {"cuda", "PORTABLE_CUDA_ATTENTION"},
                 {"opencl", "PORTABLE_OPENCL_ATTENTION"}};
    for (size_t i = 0; i < sizeof fused / sizeof fused[0]; ++i) {
        if (strncmp(pt_device_name(d), fused[i].prefix, strlen(fused[i].prefix)) != 0) continue;
        const char *composed = getenv(fused[i].variable);
        return !(composed && strcmp(composed, "composed") == 0);
    }
    return false;
}

/* Peak bytes above the inputs over one causal forward + backward at T = t
 * (B 1, H 2, D 64, f32), printed. */
static double memory_at(pt_device *d, int64_t t) {
    const int64_t s[4] = {1, 2, t, 64};
    pt_scope scope = pt_scope_begin();
    pt_manual_seed(1);
    pt_tensor *q = pt_randn(d, PT_F32, 4, s), *k = pt_randn(d, PT_F32, 4, s), *v = pt_randn(d, PT_F32, 4, s);
    pt_set_requires_grad(q, true);
    pt_set_requires_grad(k, true);
    pt_set_requires_grad(v, true);
    pt_device_synchronize(d);
    pt_memory_usage before, after;
    pt_memory_stats(d, &before);
    pt_reset_peak_memory(d);
    pt_tensor *o = pt_scaled_dot_product_attention(q, k, v, NULL, true, 0);
    pt_tensor *loss = pt_sum(o, PT_ALL, false);
    CHECK(loss && pt_backward(loss) == PT_OK, "attention forward + backward at T = %lld", (long long)t);
    pt_device_synchronize(d);
    pt_memory_stats(d, &after);
    const double scores = (double)(t * t) * 4; /* one head's [T, T] in f32 */
    const double grown = (double)(after.peak - before.in_use);
    printf("attention T = %lld, B 1, H 2, D 64, causal, forward + backward on %s (%s): peak %.1f MiB above the "
           "inputs (%.1f MiB in use before); one head's [T, T] scores would be %.0f MiB\n",
           (long long)t, pt_device_name(d), fused_here(d) ? "fused" : "composed", grown / 1048576.0,
           before.in_use / 1048576.0, scores / 1048576.0);
    pt_scope_end(scope);
    return grown;
}

/* The fused path's peak grows linearly with T: doubling T at most about
 * doubles it (the composed path's quadruples, its scores dominating). A
 * run at T / 4 first makes what a device keeps once (a reduction's
 * scratch, a BLAS workspace) part of "in use before". At T = 4096 the peak
 * must also stay under a quarter of one head's scores. */
static void memory_linear(pt_device *d, int64_t t) {
    memory_at(d, t / 4 > 0 ? t / 4 : 1);
    const double half = memory_at(d, t / 2 > 0 ? t / 2 : 1), full = memory_at(d, t);
    if (!fused_here(d)) return;
    CHECK(full < 3 * half, "peak %.0f bytes at T = %lld, %.0f at T / 2: the fused path stored something quadratic",
          full, (long long)t, half);
    if (t >= 4096)
        CHECK(full < (double)(t * t), "peak %.0f bytes at T = %lld: the fused path stored something quadratic", full,
              (long long)t);
}

/* On OpenCL the plugin takes the forward kind itself unless
 * PORTABLE_OPENCL_ATTENTION=composed, which it reads at every op: then it
 * refuses, naming the switch, and the core composes. */
static void opencl_switch(pt_device *d) {
    if (strncmp(pt_device_name(d), "opencl", 6) != 0) return;
    const char *was = getenv("PORTABLE_OPENCL_ATTENTION");
    char saved[32] = "";
    if (was) snprintf(saved, sizeof saved, "%s", was);
    setenv("PORTABLE_OPENCL_ATTENTION", "fused", 1);
    CHECK(pt_device_supports(d, PT_OP_ATTENTION, PT_F32) == PT_OK, "the OpenCL plugin refuses ATTENTION in f32");
    CHECK(pt_device_supports(d, PT_OP_ATTENTION_BACKWARD, PT_F32) == PT_OK,
          "the OpenCL plugin refuses ATTENTION_BACKWARD in f32");
    setenv("PORTABLE_OPENCL_ATTENTION", "composed", 1);
    const pt_status s = pt_device_supports(d, PT_OP_ATTENTION, PT_F32);
    CHECK(s == PT_ERR_UNSUPPORTED && strstr(pt_last_error(), "pt_device_supports") &&
              strstr(pt_last_error(), "PORTABLE_OPENCL_ATTENTION=composed"),
          "with the switch at composed the plugin answered %s", pt_status_name(s));
    /* a forward it ran keeps its backward, whatever the switch says now */
    CHECK(pt_device_supports(d, PT_OP_ATTENTION_BACKWARD, PT_F32) == PT_OK,
          "the switch refused the backward kind");
    pt_clear_error();
    if (was) setenv("PORTABLE_OPENCL_ATTENTION", saved, 1);
    else unsetenv("PORTABLE_OPENCL_ATTENTION");
}

static void graph_replay(pt_device *d) {
    const int64_t s[4] = {2, 3, 37, 16};
    pt_scope scope = pt_scope_begin();
    pt_manual_seed(2);
    pt_tensor *q = pt_randn(d, PT_F32, 4, s), *k = pt_randn(d, PT_F32, 4, s), *v = pt_randn(d, PT_F32, 4, s);
    pt_tensor *q2 = pt_randn(d, PT_F32, 4, s);
    pt_set_requires_grad(q, true);
    pt_set_requires_grad(k, true);
    /* eager, on q2's values: the reference */
    pt_tensor *eq = pt_contiguous(q2);
    pt_set_requires_grad(eq, true);
    pt_tensor *eo = pt_scaled_dot_product_attention(eq, k, v, NULL, true, 0);
    CHECK(pt_backward(pt_sum(pt_mul(eo, eo), PT_ALL, false)) == PT_OK, "eager backward");
    pt_tensor *egq = pt_contiguous(pt_grad(eq));
    pt_zero_grad(k);
    pt_tensor *egk = NULL;
    /* captured on q's values, replayed after q2 is copied into q */
    pt_tensor *out = pt_empty(d, PT_F32, 4, (int64_t[]){2, 3, 37, 16});
    pt_tensor *gq = pt_zeros(d, PT_F32, 4, s), *gk = pt_zeros(d, PT_F32, 4, s);
    CHECK(pt_graph_capture_begin(d) == PT_OK, "capture begin");
    pt_scope inner = pt_scope_begin();
    pt_tensor *o = pt_scaled_dot_product_attention(q, k, v, NULL, true, 0);
    pt_backward(pt_sum(pt_mul(o, o), PT_ALL, false));
    pt_copy_(out, o);
    pt_copy_(gq, pt_grad(q));
    pt_copy_(gk, pt_grad(k));
    pt_zero_grad(q);
    pt_zero_grad(k);
    pt_scope_end(inner);
    pt_graph *g = pt_graph_capture_end(d);
    CHECK(g, "capture of attention forward + backward");
    if (g) {
        pt_copy_(q, q2);
        CHECK(pt_graph_replay(g) == PT_OK, "replay");
        pt_device_synchronize(d);
        CHECK(max_diff(out, eo) <= 1e-6, "replayed output differs from eager by %g", max_diff(out, eo));
        CHECK(max_diff(gq, egq) <= 1e-5, "replayed dq differs from eager by %g", max_diff(gq, egq));
        pt_graph_free(g);
    }
    (void)egk;
    pt_scope_end(scope);
}

/* A head wider than a backend's kernels take (the cuda plugin's 256) is
 * refused by the plugin and composed by the core: the cpu's values. */
static void wide_head(pt_device *d) {
    const int64_t s[3] = {2, 7, 260};
    pt_scope scope = pt_scope_begin();
    pt_manual_seed(5);
    pt_tensor *q = pt_randn(pt_cpu(), PT_F32, 3, s), *k = pt_randn(pt_cpu(), PT_F32, 3, s),
              *v = pt_randn(pt_cpu(), PT_F32, 3, s);
    pt_tensor *want = pt_scaled_dot_product_attention(q, k, v, NULL, true, 0);
    pt_tensor *got = pt_scaled_dot_product_attention(pt_to(q, d), pt_to(k, d), pt_to(v, d), NULL, true, 0);
    CHECK(want && got, "attention with D = 260 on %s", pt_device_name(d));
    if (want && got) CHECK(max_diff(got, want) <= 1e-5, "D = 260: differs from the cpu by %g", max_diff(got, want));
    pt_scope_end(scope);
}

/* Two identical linears: one stepped eagerly, one through a captured step. */
static void adamw_schedule_graph(pt_device *d) {
    pt_module *m[2];
    pt_optimizer *o[2];
    pt_tensor *x = NULL;
    pt_scope scope = pt_scope_begin();
    pt_manual_seed(3);
    x = pt_randn(d, PT_F32, 2, (int64_t[]){4, 6});
    for (int i = 0; i < 2; ++i) {
        pt_manual_seed(4);
        m[i] = pt_linear_sized(6, 3);
        pt_module_to(m[i], d);
        o[i] = pt_adamw(m[i], 0.05, 0.9, 0.95, 1e-8, 0.1);
        CHECK(o[i] && pt_optimizer_set_schedule(o[i], 2, 5, 0.005) == PT_OK, "set_schedule");
    }
    /* one eager step each (the capture needs the moments to exist) */
    for (int i = 0; i < 2; ++i) {
        pt_optimizer_zero_grad(o[i]);
        pt_backward(pt_sum(pt_mul(pt_module_forward(m[i], x), pt_module_forward(m[i], x)), PT_ALL, false));
        pt_optimizer_step(o[i]);
    }
    pt_optimizer_zero_grad(o[1]);
    CHECK(pt_graph_capture_begin(d) == PT_OK, "capture begin");
    pt_scope inner = pt_scope_begin();
    pt_backward(pt_sum(pt_mul(pt_module_forward(m[1], x), pt_module_forward(m[1], x)), PT_ALL, false));
    pt_clip_grad_norm(m[1], 1.0);
    pt_optimizer_step(o[1]);
    pt_optimizer_zero_grad(o[1]);
    pt_scope_end(inner);
    pt_graph *g = pt_graph_capture_end(d);
    CHECK(g, "capture of an AdamW step with a schedule and clipping");
    for (int step = 2; g && step <= 7; ++step) {
        pt_optimizer_zero_grad(o[0]);
        pt_backward(pt_sum(pt_mul(pt_module_forward(m[0], x), pt_module_forward(m[0], x)), PT_ALL, false));
        pt_clip_grad_norm(m[0], 1.0);
        pt_optimizer_step(o[0]);
        CHECK(pt_graph_replay(g) == PT_OK, "replay %d", step);
        pt_tensor *w[2][2];
        for (int i = 0; i < 2; ++i) pt_module_parameters(m[i], NULL, w[i], 2);
        const double dw = max_diff(w[0][0], w[1][0]), db = max_diff(w[0][1], w[1][1]);
        CHECK(dw == 0 && db == 0, "step %d: replay differs from eager (weight %g, bias %g)", step, dw, db);
    }
    pt_graph_free(g);
    pt_scope_end(scope);
    for (int i = 0; i < 2; ++i) {
        pt_optimizer_free(o[i]);
        pt_module_free(m[i]);
    }
}

/* FNV-1a over the bytes of x, continuing from h. */
static uint64_t hash_of(pt_tensor *x, uint64_t h) {
    const size_t n = sizeof(float) * (size_t)pt_tensor_numel(x);
    unsigned char *b = malloc(n);
    if (!b || pt_to_host(x, b, n) != PT_OK) {
        free(b);
        return 0;
    }
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
    free(b);
    return h;
}

/* Causal attention with a keep-mask over 6 heads of 200 rows: several
 * blocks of rows and keys, and several backward tasks per head (whose dq
 * copies are summed). Prints the hash of out, dq, dk and dv. */
static int print_bits(pt_device *d) {
    const int64_t s[4] = {2, 3, 200, 32}, ms[2] = {200, 200};
    pt_scope scope = pt_scope_begin(); /* releases every tensor made here */
    pt_manual_seed(3);
    pt_tensor *q = pt_randn(d, PT_F32, 4, s), *k = pt_randn(d, PT_F32, 4, s), *v = pt_randn(d, PT_F32, 4, s);
    pt_tensor *g = pt_randn(d, PT_F32, 4, s), *u = pt_rand(d, PT_F32, 2, ms);
    pt_tensor *keep = pt_gt(u, pt_full(d, PT_F32, 0, NULL, 0.2));
    CHECK(q && k && v && g && keep && !pt_set_requires_grad(q, true) && !pt_set_requires_grad(k, true) &&
              !pt_set_requires_grad(v, true),
          "inputs");
    pt_tensor *out = pt_scaled_dot_product_attention(q, k, v, keep, true, 0);
    pt_tensor *loss = pt_sum(pt_mul(out, g), PT_ALL, false);
    CHECK(loss && pt_backward(loss) == PT_OK, "forward + backward");
    pt_tensor *gq = pt_grad(q), *gk = pt_grad(k), *gv = pt_grad(v);
    uint64_t h = 14695981039346656037ull;
    h = gq && gk && gv ? hash_of(gv, hash_of(gk, hash_of(gq, hash_of(out, h)))) : 0;
    CHECK(h != 0, "reading the results back");
    printf("attention bits %016llx\n", (unsigned long long)h);
    pt_release(gq);
    pt_release(gk);
    pt_release(gv);
    pt_scope_end(scope);
    return failures ? 1 : 0;
}

/* What the plugin said about its graphs (PORTABLE_LOG=info). */
static atomic_int cuda_graphs, op_by_op_graphs;

static void count_graph_paths(pt_log_level level, const char *message, void *user) {
    (void)user;
    if (strstr(message, "replays as one CUDA graph")) atomic_fetch_add(&cuda_graphs, 1);
    else if (strstr(message, "replays op by op")) atomic_fetch_add(&op_by_op_graphs, 1);
    else if (level >= PT_LOG_WARN) fprintf(stderr, "portable: %s\n", message);
}

int main(int argc, char **argv) {
    pt_device *d = pt_default_device();
    if (!d) {
        printf("skip: %s\n", pt_last_error());
        return 77;
    }
    if (argc > 1 && strcmp(argv[1], "bits") == 0) return print_bits(d);
    const int64_t t = argc > 1 ? atoll(argv[1]) : 4096;
    if (t < 1) {
        printf("usage: test_attention [T >= 1]\n");
        return 2;
    }
    const char *paths = getenv("PT_TEST_GRAPH_PATHS");
    const bool want_cuda_graphs = paths && strcmp(paths, "cuda") == 0;
    if (want_cuda_graphs) pt_set_log_handler(count_graph_paths, NULL);
    opencl_switch(d);
    memory_linear(d, t);
    wide_head(d);
    graph_replay(d);
    if (want_cuda_graphs) {
        const unsigned reached = pt_op_dtypes_reached(PT_OP_ATTENTION_BACKWARD);
        CHECK(atomic_load(&cuda_graphs) > 0 && atomic_load(&op_by_op_graphs) == 0,
              "graphs: %d replayed as CUDA graphs, %d op by op (run at PORTABLE_LOG=info)", atomic_load(&cuda_graphs),
              atomic_load(&op_by_op_graphs));
        CHECK(!fused_here(d) || (reached & PT_DTYPE_BIT(PT_F32)),
              "attention ran composed: no ATTENTION_BACKWARD reached the device");
    }
    adamw_schedule_graph(d);
    printf("%s: %d failure(s)\n", pt_device_name(d), failures);
    return failures ? 1 : 0;
}
