/* A GPT training step (forward, cross-entropy, backward, clipping, AdamW
 * with the warm-up + cosine schedule) captured once as a graph and replayed
 * gives the eager run's losses and weights: two GPTs made from the same
 * seed, one stepped eagerly and one by replays, on the same batches. Bit
 * for bit on the cpu, which keeps the eager order inside fused chains;
 * elsewhere a fused chain with a reduction may sum in its own order
 * (docs/graphs.md), so 1e-5 relative there (0 measured on PoCL and the
 * CUDA simulator). */
#include <string.h>

#include "nn_test.h"

enum { V = 13, CTX = 8, BATCH = 3, STEPS = 12 };

static pt_device *dev;

typedef struct run {
    pt_module *m;
    pt_optimizer *o;
} run;

static run make_run(void) {
    const pt_gpt_config c = {.vocab_size = V, .context = CTX, .n_layer = 2, .n_head = 2, .n_embd = 16};
    pt_manual_seed(21);
    run r = {pt_gpt(&c), NULL};
    if (r.m && pt_module_to(r.m, dev) == PT_OK) {
        r.o = pt_adamw(r.m, 1e-2, 0.9, 0.95, 1e-8, 0.1);
        pt_optimizer_set_schedule(r.o, 3, STEPS, 1e-3);
    }
    return r;
}

/* One step on the batch in x, y (tensors that outlive it); the loss stays
 * referenced (a graph's output when captured). */
static pt_tensor *step(run *r, pt_tensor *x, pt_tensor *y) {
    pt_scope s = pt_scope_begin();
    pt_optimizer_zero_grad(r->o);
    pt_tensor *loss = pt_cross_entropy(pt_reshape(pt_module_forward(r->m, x), 2, (int64_t[]){BATCH * CTX, V}), y);
    pt_backward(loss);
    pt_clip_grad_norm(r->m, 1.0);
    pt_optimizer_step(r->o);
    pt_tensor *kept = pt_keep(loss);
    pt_scope_end(s);
    return kept;
}

/* Batch k: windows of a fixed token stream. */
static void batch(int k, pt_tensor *x, pt_tensor *y) {
    int64_t in[BATCH * CTX], next[BATCH * CTX];
    for (int r = 0; r < BATCH; ++r)
        for (int t = 0; t < CTX; ++t) {
            const int at = 7 * k + 5 * r + t;
            in[r * CTX + t] = (at * at + 3 * at) % V;
            next[r * CTX + t] = ((at + 1) * (at + 1) + 3 * (at + 1)) % V;
        }
    pt_scope s = pt_scope_begin();
    pt_copy_(x, pt_from_data(dev, PT_I64, 2, (int64_t[]){BATCH, CTX}, in));
    pt_copy_(y, pt_from_data(dev, PT_I64, 1, (int64_t[]){BATCH * CTX}, next));
    pt_scope_end(s);
}

static double max_param_diff(pt_module *a, pt_module *b) {
    pt_tensor *pa[64], *pb[64];
    const int n = pt_module_parameters(a, NULL, pa, 64);
    pt_module_parameters(b, NULL, pb, 64);
    double worst = 0;
    for (int i = 0; i < n && i < 64; ++i) {
        pt_tensor *d = pt_max(pt_abs(pt_sub(pa[i], pb[i])), PT_ALL, false);
        const double v = pt_item(d);
        worst = v > worst || v != v ? v : worst;
    }
    return worst;
}

int main(void) {
    nn_begin();
    dev = nn_device_or_skip();
    printf("a captured GPT training step on %s\n", pt_device_name(dev));
    run eager = make_run(), graphed = make_run();
    NN_CHECK(eager.o && graphed.o, "two GPTs with AdamW");
    if (!eager.o || !graphed.o) return nn_finish();
    pt_scope outer = pt_scope_begin();
    pt_tensor *x = pt_zeros(dev, PT_I64, 2, (int64_t[]){BATCH, CTX});
    pt_tensor *y = pt_zeros(dev, PT_I64, 1, (int64_t[]){BATCH * CTX});
    /* step 1 eagerly on both: the capture needs AdamW's moments to exist */
    batch(0, x, y);
    const double e1 = pt_item(step(&eager, x, y)), g1 = pt_item(step(&graphed, x, y));
    NN_CHECK(e1 == g1, "the two runs start alike: %g and %g", e1, g1);
    NN_CHECK(pt_graph_capture_begin(dev) == PT_OK, "capture begin");
    pt_tensor *loss = step(&graphed, x, y);
    pt_graph *g = pt_graph_capture_end(dev);
    NN_CHECK(g, "the step was captured");
    double worst_loss = 0, first = e1, last = e1;
    for (int k = 1; g && k < STEPS; ++k) {
        batch(k, x, y);
        const double want = pt_item(step(&eager, x, y));
        NN_CHECK(pt_graph_replay(g) == PT_OK, "replay %d", k + 1);
        const double got = pt_item(loss), d = fabs(got - want);
        worst_loss = d > worst_loss || d != d ? d : worst_loss;
        last = want;
    }
    const double worst_w = max_param_diff(eager.m, graphed.m);
    printf("%d steps: loss %.5f -> %.5f; replay against eager: worst loss difference %g, weights %g\n", STEPS, first,
           last, worst_loss, worst_w);
    const double tol = strncmp(pt_device_name(dev), "cpu", 3) == 0 ? 0 : 1e-5;
    NN_CHECK(worst_loss <= tol * fabs(first) && worst_w <= tol, "replays give the eager losses and weights (tolerance %g)",
             tol);
    NN_CHECK(last < first, "the run learns");
    pt_graph_free(g);
    pt_scope_end(outer);
    for (int i = 0; i < 2; ++i) {
        run *r = i ? &graphed : &eager;
        pt_optimizer_free(r->o);
        pt_module_free(r->m);
    }
    return nn_finish();
}
