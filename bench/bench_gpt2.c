/* One training step of GPT-2 small on the cpu, libportable's side:
 *
 *   bench_gpt2 [--graph] [warmup [steps]]   (defaults 2 and 5)
 *
 * The model is GPT-2 small as llm.c's train_gpt2.c trains it: vocab 50257,
 * context 1024 (the rows of wpe), 12 layers, 12 heads, width 768 (124M
 * parameters, the head tied to wte), dropout 0, f32, on batches of B 4
 * sequences of T 64 tokens. A step is the forward, the cross-entropy over the
 * 50257 classes, the backward and an AdamW update with llm.c's settings (lr
 * 1e-4, betas 0.9 and 0.999, eps 1e-8, weight decay 0, no clipping), waited
 * for. The tokens are fixed pseudo-random ones (the same batch every step).
 * --graph runs the first step eagerly (AdamW's moments must exist before a
 * capture), captures the step once (portable/graph.h: memory planned,
 * element-wise chains such as AdamW's fused into one pass) and replays it
 * for every later step, as gpt_train --graph does.
 * After warmup steps, steps timed ones; the line printed is
 *
 *   ms <median wall> min <min wall> cpu <median CPU ms> loss <first> <last> params <n> rss_peak <MiB>
 *
 * bench_gpt2.sh runs it beside PyTorch's and llm.c's step, alternated and
 * pinned, and prints the table. A benchmark prints numbers; it asserts
 * nothing. */
#include "bench_clock.h"
#include "portable/portable.h"

#define VOCAB 50257
#define CONTEXT 1024
#define LAYERS 12
#define HEADS 12
#define WIDTH 768
#define BATCH 4
#define SEQ 64

static int fail(const char *what) {
    fprintf(stderr, "bench_gpt2: %s: %s\n", what, pt_last_error());
    return 1;
}

/* B x (T + 1) tokens from a fixed 64-bit LCG: inputs are the first T of each
 * row, targets the last T, as a data loader's shifted window gives them. */
static int make_batch(pt_device *dev, pt_tensor **x, pt_tensor **y) {
    static int32_t in[BATCH * SEQ], out[BATCH * SEQ];
    uint64_t s = 1337;
    for (int b = 0; b < BATCH; ++b) {
        int32_t row[SEQ + 1];
        for (int t = 0; t <= SEQ; ++t) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            row[t] = (int32_t)((s >> 33) % VOCAB);
        }
        for (int t = 0; t < SEQ; ++t) {
            in[b * SEQ + t] = row[t];
            out[b * SEQ + t] = row[t + 1];
        }
    }
    *x = pt_from_data(dev, PT_I32, 2, (int64_t[]){BATCH, SEQ}, in);
    *y = pt_from_data(dev, PT_I32, 1, (int64_t[]){BATCH * SEQ}, out);
    return *x && *y ? 0 : fail("tokens");
}

/* One step, finished on return; *loss is its loss (read after the update,
 * so the read does not split the step). */
static int step(pt_device *dev, pt_module *m, pt_optimizer *o, pt_tensor *x, pt_tensor *y, double *loss) {
    pt_scope scope = pt_scope_begin();
    int rc = pt_optimizer_zero_grad(o) == PT_OK ? 0 : fail("zero_grad");
    pt_tensor *logits = rc ? NULL : pt_module_forward(m, x);
    pt_tensor *l = pt_cross_entropy(pt_reshape(logits, 2, (int64_t[]){BATCH * SEQ, VOCAB}), y);
    if (!rc && !l) rc = fail("forward");
    if (!rc && pt_backward(l) != PT_OK) rc = fail("backward");
    if (!rc && pt_optimizer_step(o) != PT_OK) rc = fail("adamw");
    if (!rc && pt_device_synchronize(dev) != PT_OK) rc = fail("synchronize");
    if (!rc) *loss = pt_item(l);
    pt_scope_end(scope);
    return rc;
}

/* A step by graph: the first call captures the step (recorded, not run)
 * into *g, whose loss is *g_loss; every call then replays it. */
static int replay(pt_device *dev, pt_module *m, pt_optimizer *o, pt_tensor *x, pt_tensor *y, pt_graph **g,
                  pt_tensor **g_loss, double *loss) {
    if (!*g) {
        if (pt_graph_capture_begin(dev) != PT_OK) return fail("pt_graph_capture_begin");
        pt_scope scope = pt_scope_begin();
        pt_optimizer_zero_grad(o);
        pt_tensor *l = pt_cross_entropy(pt_reshape(pt_module_forward(m, x), 2, (int64_t[]){BATCH * SEQ, VOCAB}), y);
        pt_status st = l ? pt_backward(l) : pt_last_status();
        if (st == PT_OK) st = pt_optimizer_step(o);
        *g_loss = st == PT_OK ? pt_keep(l) : NULL;
        pt_scope_end(scope);
        *g = pt_graph_capture_end(dev); /* always ends the capture; NULL says why */
        if (!*g || !*g_loss) return fail("capture");
    }
    if (pt_graph_replay(*g) != PT_OK || pt_device_synchronize(dev) != PT_OK) return fail("pt_graph_replay");
    *loss = pt_item(*g_loss);
    return 0;
}

static int64_t count_params(pt_module *m) {
    pt_tensor *p[256];
    const int n = pt_module_parameters(m, NULL, p, 256);
    int64_t total = 0;
    for (int i = 0; i < n && i < 256; ++i) total += pt_tensor_numel(p[i]);
    return total;
}

static int run(bool graph, int warmup, int steps) {
    pt_device *dev = pt_cpu();
    pt_manual_seed(1);
    const pt_gpt_config cfg = {.vocab_size = VOCAB, .context = CONTEXT, .n_layer = LAYERS,
                               .n_head = HEADS, .n_embd = WIDTH, .dropout = 0.0};
    pt_module *m = pt_gpt(&cfg);
    if (!m) return fail("pt_gpt");
    pt_optimizer *o = pt_adamw(m, 1e-4, 0.9, 0.999, 1e-8, 0.0);
    pt_tensor *x = NULL, *y = NULL;
    double *w = malloc(sizeof(double) * (size_t)steps), *c = malloc(sizeof(double) * (size_t)steps);
    double first = 0, loss = 0;
    pt_graph *g = NULL;
    pt_tensor *g_loss = NULL;
    int rc = !o ? fail("pt_adamw") : !w || !c ? fail("memory") : make_batch(dev, &x, &y);
    for (int i = 0; !rc && i < warmup; ++i)
        rc = graph && i > 0 ? replay(dev, m, o, x, y, &g, &g_loss, &loss) : step(dev, m, o, x, y, i ? &loss : &first);
    for (int i = 0; !rc && i < steps; ++i) {
        const double w0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
        double *l = warmup == 0 && i == 0 ? &first : &loss;
        rc = graph && warmup + i > 0 ? replay(dev, m, o, x, y, &g, &g_loss, l) : step(dev, m, o, x, y, l);
        w[i] = now_ms(CLOCK_MONOTONIC) - w0;
        c[i] = now_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
    }
    if (!rc) {
        qsort(w, (size_t)steps, sizeof *w, cmp_double);
        qsort(c, (size_t)steps, sizeof *c, cmp_double);
        printf("ms %.1f min %.1f cpu %.1f loss %.4f %.4f params %lld rss_peak %.0f\n", w[steps / 2], w[0],
               c[steps / 2], first, loss, (long long)count_params(m), rss_peak_mib());
    }
    free(w);
    free(c);
    pt_release(g_loss);
    pt_graph_free(g);
    pt_release(x);
    pt_release(y);
    pt_optimizer_free(o);
    pt_module_free(m);
    return rc;
}

int main(int argc, char **argv) {
    const bool graph = argc > 1 && strcmp(argv[1], "--graph") == 0;
    const int first = graph ? 2 : 1;
    const int warmup = argc > first ? atoi(argv[first]) : 2, steps = argc > first + 1 ? atoi(argv[first + 1]) : 5;
    if (argc > first + 2 || warmup < (graph ? 2 : 0) || steps < 1) {
        fprintf(stderr, "usage: bench_gpt2 [--graph] [warmup >= 0 [steps >= 1]] (--graph: a warm-up of 2 or more, the eager step and the capture)\n");
        return 2;
    }
    return run(graph, warmup, steps);
}
