/* A character-level GPT trained from C, on any device.
 *
 * Learns to continue English text one character at a time: a GPT-2-style
 * decoder (pt_gpt: token and position embeddings, pre-norm transformer
 * blocks, a head tied to the token embedding) trained with AdamW, gradient
 * clipping and a warm-up + cosine learning rate on random windows of the
 * King James Bible (Debian's bible-kjv; the build writes it out as plain
 * text) or any plain text given with --text. PORTABLE_BACKEND picks the
 * device, as in the other examples:
 *
 *   PORTABLE_BACKEND=cpu    ./gpt_train --steps 300
 *   PORTABLE_BACKEND=opencl ./gpt_train --graph --save gpt.safetensors
 *   ./gpt_train --load gpt.safetensors --steps 0 --prompt "In the beginning"
 *
 * It prints the validation loss a unigram model (character frequencies)
 * gets on the same split, then every --eval-every steps the training loss
 * (the mean over those steps), the validation loss (fixed windows of the
 * last tenth of the text) and samples (sequences) per second; at the end it
 * saves the weights (safetensors), reloads them into a fresh model on the
 * cpu and checks its validation loss is the trained model's, then samples a
 * continuation of --prompt (top-k, temperature).
 *
 * --graph captures the training step (forward, loss, backward, clipping,
 * AdamW) once and replays it (portable/graph.h); step 1 runs eagerly, since
 * a capture needs AdamW's moments to exist. The losses are the eager ones.
 * --dtype bf16 computes in bf16 with f32 master weights
 * (pt_module_set_compute_dtype), like torch.autocast.
 *
 * Exit status: 0 done, 1 a failure (a message says which), 2 bad usage or a
 * text that cannot be read, 77 when the device PORTABLE_BACKEND names is not
 * available here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpt_cli.h"
#include "gpt_sample.h"
#include "gpt_text.h"
#include "portable/portable.h"

#ifndef GPT_DEFAULT_TEXT
#define GPT_DEFAULT_TEXT "kjv.txt"
#endif
#define VAL_WINDOWS 256 /* validation windows, evenly spaced over the split */
#define CLIP_NORM 1.0

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int fail(const char *what) {
    fprintf(stderr, "gpt_train: %s: %s (%s)\n", what, pt_last_error(), pt_status_name(pt_last_status()));
    return 1;
}

/* One run's model, optimizer and the device tensors every step reads. */
typedef struct trainer {
    const gpt_cli *a;
    const gpt_text *text;
    pt_device *dev;
    pt_module *m;
    pt_optimizer *o;
    pt_tensor *x, *y;   /* [batch, context] and [batch * context] i64: each step's batch is copied in */
    pt_graph *graph;    /* --graph: the captured step */
    pt_tensor *g_loss;  /* the graph's loss (each replay rewrites it) */
    int64_t *hx, *hy;   /* the batch on the host */
    gpt_rng rng;
} trainer;

static pt_module *make_model(const gpt_cli *a, int vocab) {
    const pt_gpt_config c = {.vocab_size = vocab,
                             .context = a->context,
                             .n_layer = a->layers,
                             .n_head = a->heads,
                             .n_embd = a->width};
    pt_module *m = pt_gpt(&c);
    if (m && a->bf16 && pt_module_set_compute_dtype(m, PT_BF16) != PT_OK) {
        pt_module_free(m);
        return NULL;
    }
    return m;
}

/* Mean cross-entropy of the next characters y [rows] after x [n, T]. */
static pt_tensor *loss_of(pt_module *m, pt_tensor *x, pt_tensor *y) {
    pt_tensor *logits = pt_module_forward(m, x);
    const int64_t rows = pt_tensor_numel(y), vocab = logits ? pt_tensor_shape(logits)[2] : 0;
    /* the loss in f32 whatever the compute dtype, as autocast does */
    return pt_cross_entropy(pt_cast(pt_reshape(logits, 2, (int64_t[]){rows, vocab}), PT_F32), y);
}

/* Forward, loss, backward, clipping, AdamW step on the batch in t->x, t->y;
 * the loss stays referenced (the graph's output when captured). */
static pt_tensor *step_ops(trainer *t) {
    pt_scope s = pt_scope_begin();
    pt_optimizer_zero_grad(t->o);
    pt_tensor *loss = loss_of(t->m, t->x, t->y);
    pt_status st = pt_backward(loss);
    if (st == PT_OK && !pt_clip_grad_norm(t->m, CLIP_NORM)) st = pt_last_status();
    if (st == PT_OK) st = pt_optimizer_step(t->o);
    pt_tensor *kept = st == PT_OK ? pt_keep(loss) : NULL;
    pt_scope_end(s);
    return kept;
}

/* Training step k (1 for the first): a new random batch, then the step
 * eagerly or by a replay. Returns the step's loss as a new tensor. */
static pt_tensor *train_step(trainer *t, long k) {
    const gpt_cli *a = t->a;
    gpt_text_train_batch(t->text, &t->rng, (int)a->batch, (int)a->context, t->hx, t->hy);
    pt_scope s = pt_scope_begin();
    const int64_t xs[2] = {a->batch, a->context}, ys[1] = {a->batch * a->context};
    pt_status st = pt_copy_(t->x, pt_from_data(pt_cpu(), PT_I64, 2, xs, t->hx));
    if (st == PT_OK) st = pt_copy_(t->y, pt_from_data(pt_cpu(), PT_I64, 1, ys, t->hy));
    pt_scope_end(s);
    if (st != PT_OK) return NULL;
    if (!a->graph || k == 1) return step_ops(t);
    if (!t->graph) {
        if (pt_graph_capture_begin(t->dev) != PT_OK) return NULL;
        t->g_loss = step_ops(t);
        t->graph = pt_graph_capture_end(t->dev); /* always ends the capture; NULL says why */
        if (!t->graph || !t->g_loss) return NULL;
    }
    if (pt_graph_replay(t->graph) != PT_OK) return NULL;
    /* a copy: the next replay rewrites the graph's loss */
    pt_tensor *copy = pt_empty(t->dev, PT_F32, 0, NULL);
    if (copy && pt_copy_(copy, t->g_loss) != PT_OK) {
        pt_release(copy);
        return NULL;
    }
    return copy;
}

/* The validation loss: mean cross-entropy over VAL_WINDOWS fixed windows
 * of the validation split, batch windows at a time, on dev. NAN + error on
 * failure. Waits for the device. */
static double val_loss(pt_module *m, pt_device *dev, const gpt_text *text, const gpt_cli *a, int64_t *hx,
                       int64_t *hy) {
    const bool training = pt_module_is_training(m);
    pt_module_train(m, false);
    pt_no_grad_begin();
    pt_scope s = pt_scope_begin();
    pt_tensor *sum = pt_zeros(dev, PT_F32, 0, NULL);
    for (int first = 0; sum && first < VAL_WINDOWS; first += (int)a->batch) {
        const int n = VAL_WINDOWS - first < a->batch ? VAL_WINDOWS - first : (int)a->batch;
        gpt_text_val_windows(text, first, n, VAL_WINDOWS, (int)a->context, hx, hy);
        const int64_t xs[2] = {n, a->context}, ys[1] = {n * a->context};
        pt_tensor *loss = loss_of(m, pt_from_data(dev, PT_I64, 2, xs, hx), pt_from_data(dev, PT_I64, 1, ys, hy));
        sum = pt_add(sum, pt_mul_scalar(loss, (double)n / VAL_WINDOWS));
    }
    const double v = pt_item(sum);
    pt_scope_end(s);
    pt_no_grad_end();
    pt_module_train(m, training);
    return v;
}

/* Reads the losses of steps [k0, k0 + n) (releasing them), writes them to
 * the loss log, and returns their mean; NAN on failure. */
static double drain_losses(pt_tensor **losses, int n, long k0, FILE *log) {
    double sum = 0;
    for (int i = 0; i < n; ++i) {
        const double l = pt_item(losses[i]);
        pt_release(losses[i]);
        losses[i] = NULL;
        sum += l;
        if (log && fprintf(log, "1 %ld %.9g\n", k0 + i, l) < 0) sum = NAN;
    }
    return sum / n;
}

static int64_t parameter_count(pt_module *m) {
    const int n = pt_module_parameters(m, NULL, NULL, 0);
    pt_tensor **p = n > 0 ? malloc((size_t)n * sizeof *p) : NULL;
    int64_t total = 0;
    if (p && pt_module_parameters(m, NULL, p, n) == n)
        for (int i = 0; i < n; ++i) total += p[i] ? pt_tensor_numel(p[i]) : 0;
    free(p);
    return total;
}

/* Trains (when steps > 0) and returns the last validation loss; NAN on
 * failure (the message printed). */
static double train(trainer *t, double *seconds, FILE *log) {
    const gpt_cli *a = t->a;
    const int chunk = (int)(a->eval_every < a->steps ? a->eval_every : a->steps);
    pt_tensor **losses = calloc((size_t)chunk, sizeof *losses);
    double last_val = NAN, busy = 0;
    if (!losses) {
        fprintf(stderr, "gpt_train: out of host memory\n");
        return NAN;
    }
    double t0 = now_seconds();
    int pending = 0;
    for (long k = 1; k <= a->steps; ++k) {
        if (!(losses[pending++] = train_step(t, k))) {
            fail(a->graph && k > 1 ? "training step (graph)" : "training step");
            last_val = NAN; /* an earlier evaluation must not pass for the run's */
            break;
        }
        if (pending < chunk && k < a->steps) continue;
        const double train_loss = drain_losses(losses, pending, k - pending + 1, log); /* waits */
        const double dt = now_seconds() - t0;
        busy += dt;
        last_val = val_loss(t->m, t->dev, t->text, a, t->hx, t->hy);
        if (isnan(train_loss) || isnan(last_val)) {
            fail("reading the losses");
            last_val = NAN;
            break;
        }
        printf("step %6ld  train loss %.4f  val loss %.4f  %8.1f samples/s\n", k, train_loss, last_val,
               (double)(pending * a->batch) / dt);
        fflush(stdout);
        pending = 0;
        t0 = now_seconds();
    }
    for (int i = 0; i < pending; ++i) pt_release(losses[i]);
    free(losses);
    *seconds = busy;
    return last_val;
}

/* Saves, reloads on the cpu into a fresh model and compares validation
 * losses. 0 when they agree (bit for bit for a model trained on the cpu;
 * 1e-5 relative elsewhere, where other kernels sum in another order). */
static int save_and_reload(trainer *t, const gpt_text *text, double trained_val) {
    const gpt_cli *a = t->a;
    char tmp[256] = "";
    const char *path = a->save;
    if (!path) {
        snprintf(tmp, sizeof tmp, "/tmp/gpt_train_%ld.safetensors", (long)getpid());
        path = tmp;
    }
    int status = 1;
    pt_module *reloaded = NULL;
    if (pt_save(t->m, path) != PT_OK) {
        fail("saving");
        goto done;
    }
    pt_manual_seed(a->seed + 1); /* a different initialisation, so the check sees the loaded weights */
    reloaded = make_model(a, text->vocab);
    if (!reloaded || pt_load(reloaded, path, pt_cpu()) != PT_OK) {
        fail("reloading on the cpu");
        goto done;
    }
    const double v = val_loss(reloaded, pt_cpu(), text, a, t->hx, t->hy);
    const bool on_cpu = pt_tensor_device(t->x) == pt_cpu();
    const double tol = on_cpu ? 0 : 1e-5 * fabs(trained_val);
    printf("saved to %s; reloaded on cpu: val loss %.6f (trained model: %.6f)\n", a->save ? a->save : "a temporary file",
           v, trained_val);
    if (!(fabs(v - trained_val) <= tol)) {
        fprintf(stderr, "gpt_train: FAILED: the reloaded model's val loss %.9g is not the trained one's %.9g (tolerance %g)\n",
                v, trained_val, tol);
        goto done;
    }
    status = 0;
done:
    if (tmp[0]) remove(tmp);
    pt_module_free(reloaded);
    return status;
}

static int run(const gpt_cli *a, const gpt_text *text, pt_device *dev, FILE *log) {
    trainer t = {.a = a, .text = text, .dev = dev, .rng = {a->seed}};
    int status = 1;
    const size_t window = (size_t)a->batch * (size_t)a->context;
    t.hx = malloc(window * sizeof *t.hx);
    t.hy = malloc(window * sizeof *t.hy);
    pt_manual_seed(a->seed);
    t.m = make_model(a, text->vocab);
    if (!t.hx || !t.hy || !t.m || pt_module_to(t.m, dev) != PT_OK) {
        fail("building the model");
        goto done;
    }
    if (a->load && pt_load(t.m, a->load, dev) != PT_OK) {
        fprintf(stderr, "gpt_train: --load %s: %s\n", a->load, pt_last_error());
        status = 2;
        goto done;
    }
    t.o = pt_adamw(t.m, a->lr, 0.9, 0.95, 1e-8, 0.1);
    if (!t.o || (a->steps > 0 && pt_optimizer_set_schedule(t.o, a->steps / 10, a->steps, a->lr / 10) != PT_OK)) {
        fail("making the optimizer");
        goto done;
    }
    t.x = pt_zeros(dev, PT_I64, 2, (int64_t[]){a->batch, a->context});
    t.y = pt_zeros(dev, PT_I64, 1, (int64_t[]){a->batch * a->context});
    if (!t.x || !t.y) {
        fail("making the batch tensors");
        goto done;
    }
    printf("model: %ld layers, %ld heads, width %ld, context %ld: %lld parameters, %s compute%s\n", a->layers,
           a->heads, a->width, a->context, (long long)parameter_count(t.m), a->bf16 ? "bf16" : "f32",
           a->bf16 ? " (f32 master weights)" : "");
    printf("training on %s: %ld steps of %ld sequences%s\n", pt_device_name(dev), a->steps, a->batch,
           a->graph ? ", the step captured once and replayed" : "");
    double seconds = 0, v = NAN;
    if (a->steps > 0) {
        v = train(&t, &seconds, log);
        if (isnan(v)) goto done;
        printf("trained %ld steps in %.1f s (%.1f samples/s); final val loss %.4f against the unigram's %.4f\n",
               a->steps, seconds, (double)(a->steps * a->batch) / seconds, v, gpt_text_unigram_loss(text));
    } else {
        v = val_loss(t.m, dev, text, a, t.hx, t.hy);
        if (isnan(v)) {
            fail("evaluating");
            goto done;
        }
        printf("val loss %.6f (no training)\n", v);
    }
    if (save_and_reload(&t, text, v) != 0) goto done;
    if (a->sample > 0 && gpt_sample(t.m, dev, text, a, &t.rng) != 0) {
        fail("sampling");
        goto done;
    }
    status = 0;
done:
    pt_graph_free(t.graph);
    pt_release(t.g_loss);
    pt_release(t.x);
    pt_release(t.y);
    pt_optimizer_free(t.o); /* before its module */
    pt_module_free(t.m);
    free(t.hx);
    free(t.hy);
    return status;
}

int main(int argc, char **argv) {
    gpt_cli a = gpt_cli_defaults(GPT_DEFAULT_TEXT);
    const int parsed = gpt_cli_parse(argc, argv, &a);
    if (parsed) return parsed == 1 ? 0 : 2;
    gpt_text text;
    char err[1024];
    const int loaded = gpt_text_load(a.text, a.context + 2, &text, err, sizeof err);
    if (loaded == -1) {
        fprintf(stderr, "gpt_train: %s\n", err);
        fprintf(stderr,
                "gpt_train: the default text is the King James Bible of Debian's bible-kjv-text package, written "
                "out as %s by the build: install it (apt-get install bible-kjv bible-kjv-text) and rebuild, or give "
                "any plain text with --text FILE\n",
                GPT_DEFAULT_TEXT);
        return 2;
    }
    if (loaded != 0) {
        fprintf(stderr, "gpt_train: %s\n", err);
        return 2;
    }
    for (const char *c = a.prompt; *c; ++c)
        if (text.id_of[(unsigned char)*c] < 0) {
            fprintf(stderr, "gpt_train: --prompt \"%s\" has '%c', which %s never uses; pick characters of the text\n",
                    a.prompt, *c, a.text);
            gpt_text_free(&text);
            return 2;
        }
    FILE *log = NULL;
    if (a.loss_log && !(log = fopen(a.loss_log, "w"))) {
        fprintf(stderr, "gpt_train: cannot write the loss log %s; give a path in a writable folder\n", a.loss_log);
        gpt_text_free(&text);
        return 2;
    }
    printf("text: %s, %lld characters, vocabulary %d; %lld train / %lld validation\n", a.text, (long long)text.n,
           text.vocab, (long long)text.n_train, (long long)(text.n - text.n_train));
    printf("unigram (character frequency) val loss: %.4f\n", gpt_text_unigram_loss(&text));
    pt_device *dev = pt_default_device();
    int status = dev ? run(&a, &text, dev, log) : (fail("no device"), 77);
    if (log && fclose(log) != 0 && status == 0) {
        fprintf(stderr, "gpt_train: writing the loss log %s failed\n", a.loss_log);
        status = 1;
    }
    gpt_text_free(&text);
    return status;
}
