/* pt_scaled_dot_product_attention beyond the values conformance checks:
 *   - memory: forward and backward at T = 4096 (B 1, H 2, D 64) must not
 *     hold a [T, T] score matrix (64 MiB per head in f32) where the device
 *     runs the fused kinds (cpu, OpenCL), and the peak must grow linearly
 *     from T = 2048; the peak of pt_memory_stats is printed either way (the
 *     composed path's is quadratic, by design, and only reported);
 *   - graphs: a captured forward + backward replays to the eager values
 *     with new inputs copied in (the fused kinds' extra operands are planned
 *     and rebound like any other);
 *   - OpenCL: the plugin takes the kinds, and PORTABLE_OPENCL_ATTENTION=composed
 *     makes it refuse the forward one with a message naming the switch;
 *   - AdamW with the warm-up + cosine schedule, captured: each replay takes
 *     its own step's learning rate and equals the eager steps bit for bit.
 * Exit 77 when PORTABLE_BACKEND's device is absent. */
#include <math.h>
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

/* Whether d runs the ATTENTION kinds: the cpu and OpenCL plugins do,
 * unless their switch asks for the composed path. */
static bool fused_here(pt_device *d) {
    const char *name = pt_device_name(d);
    const char *composed = strncmp(name, "cpu", 3) == 0      ? getenv("PORTABLE_CPU_ATTENTION")
                           : strncmp(name, "opencl", 6) == 0 ? getenv("PORTABLE_OPENCL_ATTENTION")
                                                             : NULL;
    if (strncmp(name, "cpu", 3) != 0 && strncmp(name, "opencl", 6) != 0) return false;
    return !(composed && strcmp(composed, "composed") == 0);
}

/* Bytes the peak of d's memory rose by during a causal forward + backward
 * at sequence length t (B 1, H 2, D 64, f32), above what was in use
 * before; *before gets that. */
static double attention_peak(pt_device *d, int64_t t, double *before_bytes) {
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
    pt_scope_end(scope);
    *before_bytes = (double)before.in_use;
    return (double)(after.peak - before.in_use);
}

/* The peak at T = 2048 and 4096: where the kinds run fused it must stay far
 * below one head's [T, T] scores and grow about twice (linear), not four
 * times (quadratic), from one to the other. */
static void memory_at_4096(pt_device *d) {
    const int64_t t = 4096;
    double before = 0, before_half = 0;
    const double half = attention_peak(d, t / 2, &before_half), grown = attention_peak(d, t, &before);
    const double scores = (double)(t * t) * 4; /* one head's [T, T] in f32 */
    printf("attention T = 4096, B 1, H 2, D 64, causal, forward + backward on %s (%s): peak %.1f MiB above the "
           "inputs (%.1f MiB in use before; %.1f MiB at T = 2048, x%.2f); one head's [T, T] scores would be %.0f "
           "MiB\n",
           pt_device_name(d), fused_here(d) ? "fused" : "composed", grown / 1048576.0, before / 1048576.0,
           half / 1048576.0, half > 0 ? grown / half : 0.0, scores / 1048576.0);
    if (fused_here(d)) {
        CHECK(grown < scores / 4, "peak %.0f bytes: the fused path stored something quadratic", grown);
        CHECK(half > 0 && grown < 3 * half, "the peak grew x%.2f from T = 2048 to 4096: faster than linear (x2; "
              "quadratic is x4)", half > 0 ? grown / half : 0.0);
    }
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

int main(void) {
    pt_device *d = pt_default_device();
    if (!d) {
        printf("skip: %s\n", pt_last_error());
        return 77;
    }
    opencl_switch(d);
    memory_at_4096(d);
    graph_replay(d);
    adamw_schedule_graph(d);
    printf("%s: %d failure(s)\n", pt_device_name(d), failures);
    return failures ? 1 : 0;
}
