/* Resuming training from pt_save + pt_optimizer_save: a small MLP trained
 * N + M steps straight, and N steps, saved, everything freed, a fresh
 * module and optimizer loaded, then M steps, must give the same loss curve
 * and the same weights bit for bit, for SGD with momentum, Adam, and AdamW
 * with the warm-up + cosine schedule and clipping. Without the optimizer's
 * state the curve differs (so the comparison can fail). Also: loading onto
 * another device, loading into a captured graph's optimizer (the replays
 * continue from the loaded state), and every refused file (missing,
 * truncated, another kind, another model, a weights file, damaged
 * metadata), each leaving the optimizer exactly as it was.
 *
 * Usage: test_optim_resume (on PORTABLE_BACKEND's default device; the cpu
 * run wants PORTABLE_CPU_DEVICES=2 for its cross-device case). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nn_test.h"

#define IN 12
#define HIDDEN 24
#define CLASSES 5
#define ROWS 128
#define BATCH 32
#define N_STEPS 5 /* before the save */
#define M_STEPS 7 /* after it: with the schedule's warm-up 3 and total 10, the resumed run ends at min_lr */

static pt_device *dev;
static char dir[64];
static float data_x[ROWS * IN];
static int64_t data_y[ROWS];

static void make_data(void) {
    nn_rng r = {12345};
    double w[IN * CLASSES];
    for (int i = 0; i < IN * CLASSES; ++i) w[i] = nn_uniform(&r) * 2 - 1;
    for (int row = 0; row < ROWS; ++row) {
        double best = -1e300;
        for (int i = 0; i < IN; ++i) data_x[row * IN + i] = (float)(nn_uniform(&r) * 2 - 1);
        for (int c = 0; c < CLASSES; ++c) {
            double v = 0;
            for (int i = 0; i < IN; ++i) v += w[i * CLASSES + c] * data_x[row * IN + i];
            if (v > best) best = v, data_y[row] = c;
        }
    }
}

/* dir/name, in one of 32 buffers used in turn (no caller keeps more). */
static char *path_of(const char *name) {
    static char paths[32][160];
    static int next;
    char *p = paths[next++ % 32];
    snprintf(p, 160, "%s/%s", dir, name);
    return p;
}

static pt_module *make_net(uint64_t seed, int hidden, int layers, pt_device *d) {
    pt_manual_seed(seed);
    pt_module *m = layers == 2 ? pt_sequential(3, (pt_module *[]){pt_linear_sized(IN, hidden), pt_relu_module(),
                                                                   pt_linear_sized(hidden, CLASSES)})
                               : pt_sequential(5, (pt_module *[]){pt_linear_sized(IN, hidden), pt_relu_module(),
                                                                  pt_linear_sized(hidden, hidden), pt_relu_module(),
                                                                  pt_linear_sized(hidden, CLASSES)});
    if (m && pt_module_to(m, d) != PT_OK) {
        pt_module_free(m);
        return NULL;
    }
    return m;
}

/* The batch of step k copied into x [BATCH, IN] and y [BATCH] on their device. */
static pt_status load_batch(int k, pt_tensor *x, pt_tensor *y) {
    const int first = (k * BATCH) % ROWS;
    pt_scope s = pt_scope_begin();
    pt_status st = pt_copy_(x, pt_from_data(pt_cpu(), PT_F32, 2, (int64_t[]){BATCH, IN}, data_x + first * IN));
    if (!st) st = pt_copy_(y, pt_from_data(pt_cpu(), PT_I64, 1, (int64_t[]){BATCH}, data_y + first));
    pt_scope_end(s);
    return st;
}

/* One eager step k; its loss (before the update) into *loss. */
static pt_status step(pt_module *net, pt_optimizer *opt, double clip, int k, float *loss) {
    pt_device *d = pt_tensor_device(pt_module_parameter(net, "0.weight"));
    pt_scope s = pt_scope_begin();
    pt_tensor *x = pt_empty(d, PT_F32, 2, (int64_t[]){BATCH, IN}), *y = pt_empty(d, PT_I64, 1, (int64_t[]){BATCH});
    pt_status st = x && y ? load_batch(k, x, y) : pt_last_status();
    pt_tensor *l = st ? NULL : pt_cross_entropy(pt_module_forward(net, x), y);
    if (!st) st = pt_optimizer_zero_grad(opt);
    if (!st) st = pt_backward(l);
    if (!st && clip > 0 && !pt_clip_grad_norm(net, clip)) st = pt_last_status();
    if (!st) st = pt_optimizer_step(opt);
    if (!st) st = pt_to_host(l, loss, sizeof *loss);
    pt_scope_end(s);
    return st;
}

/* ---- The optimizers ---- */

typedef struct optim_case {
    const char *name;
    pt_optimizer *(*make)(pt_module *);
    /* what the resumed run makes before loading (NULL: make): other
     * hyper-parameters and no schedule, which the load replaces */
    pt_optimizer *(*make_resumed)(pt_module *);
    double clip;
} optim_case;

static pt_optimizer *sgd_momentum(pt_module *m) { return pt_sgd(m, 0.05, 0.9, 1e-4); }
static pt_optimizer *adam(pt_module *m) { return pt_adam(m, 1e-2, 0.9, 0.999, 1e-8, 1e-3); }
static pt_optimizer *adamw_schedule(pt_module *m) {
    pt_optimizer *o = pt_adamw(m, 2e-2, 0.9, 0.95, 1e-8, 0.1);
    if (o && pt_optimizer_set_schedule(o, 3, 10, 2e-3) != PT_OK) {
        pt_optimizer_free(o);
        return NULL;
    }
    return o;
}
static pt_optimizer *adamw_other(pt_module *m) { return pt_adamw(m, 0.5, 0.8, 0.9, 1e-6, 0.0); }

static const optim_case CASES[] = {
    {"sgd momentum", sgd_momentum, NULL, 0.0},
    {"adam", adam, NULL, 0.0},
    {"adamw warm-up cosine clip", adamw_schedule, adamw_other, 0.5},
};

/* ---- Helpers over files ---- */

static long file_bytes(const char *path, unsigned char **out) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = malloc(n > 0 ? (size_t)n : 1);
    if (fread(*out, 1, (size_t)n, f) != (size_t)n) n = -1;
    fclose(f);
    return n;
}

static bool same_file(const char *a, const char *b) {
    unsigned char *x = NULL, *y = NULL;
    long n = file_bytes(a, &x), m = file_bytes(b, &y);
    bool same = n >= 0 && n == m && memcmp(x, y, (size_t)n) == 0;
    free(x);
    free(y);
    return same;
}

static bool write_bytes(const char *path, const unsigned char *bytes, long n) {
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(bytes, 1, (size_t)n, f) == (size_t)n;
    if (f) fclose(f);
    return ok;
}

/* A copy of src with the first occurrence of from (in the header) replaced
 * by to, of the same length, written to dst. */
static bool patched_copy(const char *src, const char *dst, const char *from, const char *to) {
    unsigned char *b = NULL;
    long n = file_bytes(src, &b);
    bool ok = false;
    for (long i = 8; n > 0 && i + (long)strlen(from) <= n; ++i)
        if (memcmp(b + i, from, strlen(from)) == 0) {
            memcpy(b + i, to, strlen(to));
            ok = write_bytes(dst, b, n);
            break;
        }
    free(b);
    return ok;
}

/* Whether every parameter of a and b holds the same bytes. */
static bool same_weights(pt_module *a, pt_module *b) {
    pt_tensor *pa[8], *pb[8];
    int n = pt_module_parameters(a, NULL, pa, 8);
    if (n != pt_module_parameters(b, NULL, pb, 8)) return false;
    bool same = true;
    for (int i = 0; i < n && same; ++i) {
        size_t bytes = (size_t)pt_tensor_numel(pa[i]) * pt_dtype_size(pt_tensor_dtype(pa[i]));
        char *x = malloc(bytes), *y = malloc(bytes);
        same = pt_to_host(pa[i], x, bytes) == PT_OK && pt_to_host(pb[i], y, bytes) == PT_OK &&
               memcmp(x, y, bytes) == 0;
        free(x);
        free(y);
    }
    return same;
}

/* ---- Straight against resumed ---- */

static void check_resume(const optim_case *c) {
    float straight[N_STEPS + M_STEPS], resumed[M_STEPS], cold[M_STEPS];
    char *wpath = path_of("weights.safetensors"), *opath = path_of("optim.safetensors");
    pt_status st = PT_OK;

    pt_module *ref = make_net(7, HIDDEN, 2, dev);
    pt_optimizer *oref = ref ? c->make(ref) : NULL;
    for (int k = 0; k < N_STEPS + M_STEPS && oref && !st; ++k) st = step(ref, oref, c->clip, k, &straight[k]);
    NN_CHECK(oref && !st, "%s: the straight run", c->name);

    pt_module *net = make_net(7, HIDDEN, 2, dev);
    pt_optimizer *opt = net ? c->make(net) : NULL;
    st = opt ? PT_OK : pt_last_status();
    for (int k = 0; k < N_STEPS && !st; ++k) st = step(net, opt, c->clip, k, &resumed[0]);
    if (!st) st = pt_save(net, wpath);
    if (!st) st = pt_optimizer_save(opt, opath);
    NN_CHECK(!st, "%s: %d steps, then both saves", c->name, N_STEPS);
    pt_optimizer_free(opt);
    pt_module_free(net);

    /* A fresh start, other initial weights: everything must come from the files. */
    net = make_net(99, HIDDEN, 2, dev);
    opt = net ? (c->make_resumed ? c->make_resumed : c->make)(net) : NULL;
    st = opt ? pt_load(net, wpath, NULL) : pt_last_status();
    if (!st) st = pt_optimizer_load(opt, opath, NULL);
    NN_CHECK(!st, "%s: loading both", c->name);
    for (int k = 0; k < M_STEPS && !st; ++k) st = step(net, opt, c->clip, N_STEPS + k, &resumed[k]);
    NN_CHECK(!st && memcmp(resumed, straight + N_STEPS, sizeof resumed) == 0,
             "%s: resumed losses differ from the straight run's (step %d: %.9g vs %.9g)", c->name, N_STEPS + 1,
             (double)resumed[0], (double)straight[N_STEPS]);
    NN_CHECK(same_weights(net, ref), "%s: final weights differ from the straight run's", c->name);
    pt_optimizer_free(opt);
    pt_module_free(net);

    /* The control: the weights alone, a fresh optimizer. */
    net = make_net(99, HIDDEN, 2, dev);
    opt = net ? c->make(net) : NULL;
    st = opt ? pt_load(net, wpath, NULL) : pt_last_status();
    for (int k = 0; k < M_STEPS && !st; ++k) st = step(net, opt, c->clip, N_STEPS + k, &cold[k]);
    NN_CHECK(!st && memcmp(cold, straight + N_STEPS, sizeof cold) != 0,
             "%s: restarting the optimizer gave the straight curve too: the comparison cannot fail", c->name);
    pt_optimizer_free(opt);
    pt_module_free(net);
    pt_optimizer_free(oref);
    pt_module_free(ref);
    printf("%s %s: %d + %d steps, resumed curve equal bit for bit (last loss %.6f)\n", st ? "FAIL" : "ok  ",
           c->name, N_STEPS, M_STEPS, (double)straight[N_STEPS + M_STEPS - 1]);
}

/* ---- Another device ---- */

/* The state saved on dev, loaded onto other (map_location) and saved from
 * there, is the same file; on cpu:1 of the cpu backend the resumed curve
 * is also the straight one. */
static void check_other_device(pt_device *other) {
    const optim_case *c = &CASES[2];
    char *wpath = path_of("weights.safetensors"), *opath = path_of("optim.safetensors"),
         *again = path_of("optim_again.safetensors");
    float straight[N_STEPS + M_STEPS], resumed[M_STEPS];
    pt_module *net = make_net(7, HIDDEN, 2, dev);
    pt_optimizer *opt = net ? c->make(net) : NULL;
    pt_status st = opt ? PT_OK : pt_last_status();
    for (int k = 0; k < N_STEPS + M_STEPS && !st; ++k) {
        if (k == N_STEPS && !st) st = pt_save(net, wpath);
        if (k == N_STEPS && !st) st = pt_optimizer_save(opt, opath);
        if (!st) st = step(net, opt, c->clip, k, &straight[k]);
    }
    pt_optimizer_free(opt);
    pt_module_free(net);

    /* The module is made on the cpu and loaded with map_location: nothing
     * of it ever lives on dev. */
    net = make_net(99, HIDDEN, 2, pt_cpu());
    opt = net ? c->make(net) : NULL;
    if (!st) st = pt_load(net, wpath, other);
    if (!st) st = pt_optimizer_load(opt, opath, other);
    if (!st) st = pt_optimizer_save(opt, again);
    NN_CHECK(!st && same_file(opath, again), "%s on %s, loaded onto %s and saved again: another file",
             c->name, pt_device_name(dev), pt_device_name(other));
    bool same_backend = strncmp(pt_device_name(dev), pt_device_name(other), 3) == 0;
    for (int k = 0; same_backend && k < M_STEPS && !st; ++k) st = step(net, opt, c->clip, N_STEPS + k, &resumed[k]);
    if (same_backend)
        NN_CHECK(!st && memcmp(resumed, straight + N_STEPS, sizeof resumed) == 0,
                 "resumed on %s: the curve differs from %s's", pt_device_name(other), pt_device_name(dev));
    printf("%s state from %s loaded onto %s%s\n", st ? "FAIL" : "ok  ", pt_device_name(dev),
           pt_device_name(other), same_backend ? ", resumed curve equal" : ", saved again byte for byte");
    pt_optimizer_free(opt);
    pt_module_free(net);
}

/* ---- A captured step ---- */

typedef struct captured {
    pt_module *net;
    pt_optimizer *opt;
    pt_tensor *x, *y, *loss;
    pt_graph *graph;
} captured;

static pt_status capture(captured *g, const optim_case *c) {
    g->net = make_net(7, HIDDEN, 2, dev);
    g->opt = g->net ? c->make(g->net) : NULL;
    g->x = pt_keep(pt_empty(dev, PT_F32, 2, (int64_t[]){BATCH, IN}));
    g->y = pt_keep(pt_empty(dev, PT_I64, 1, (int64_t[]){BATCH}));
    float first;
    /* one eager step first: a capture needs the state a step reads */
    pt_status st = g->opt && g->x && g->y ? step(g->net, g->opt, c->clip, 0, &first) : pt_last_status();
    if (!st) st = load_batch(1, g->x, g->y);
    if (!st) st = pt_graph_capture_begin(dev);
    if (st) return st;
    pt_scope s = pt_scope_begin();
    pt_tensor *l = pt_cross_entropy(pt_module_forward(g->net, g->x), g->y);
    st = pt_optimizer_zero_grad(g->opt);
    if (!st) st = pt_backward(l);
    if (!st && !pt_clip_grad_norm(g->net, c->clip)) st = pt_last_status();
    if (!st) st = pt_optimizer_step(g->opt);
    pt_tensor *kept = pt_keep(l);
    pt_scope_end(s);
    g->loss = pt_keep(kept);
    g->graph = pt_graph_capture_end(dev);
    return st ? st : g->graph ? PT_OK : pt_last_status();
}

static pt_status replay(captured *g, int k, float *loss) {
    pt_status st = load_batch(k, g->x, g->y);
    if (!st) st = pt_graph_replay(g->graph);
    if (!st) st = pt_to_host(g->loss, loss, sizeof *loss);
    return st;
}

/* Replays continue from a state loaded into the captured optimizer: the
 * curve after the load is the one after the save, bit for bit. The
 * weights are restored in place too (pt_load would make new tensors, which
 * the graph does not use). */
static void check_graph(void) {
    const optim_case *c = &CASES[2];
    char *wpath = path_of("graph_weights.safetensors"), *opath = path_of("graph_optim.safetensors");
    captured g = {0};
    float after_save[M_STEPS], after_load[M_STEPS], weights_only[M_STEPS], loss;
    pt_status st = capture(&g, c);
    NN_CHECK(!st, "capturing a step of %s on %s", c->name, pt_device_name(dev));
    /* the capture recorded step 1 without running it: replays are steps 1.. */
    for (int k = 1; k < N_STEPS && !st; ++k) st = replay(&g, k, &loss);
    if (!st) st = pt_save(g.net, wpath);
    if (!st) st = pt_optimizer_save(g.opt, opath);
    for (int k = 0; k < M_STEPS && !st; ++k) st = replay(&g, N_STEPS + k, &after_save[k]);

    pt_module *snap = make_net(99, HIDDEN, 2, dev);
    pt_tensor *from[8], *to[8];
    int n = snap ? pt_module_parameters(g.net, NULL, to, 8) : 0;
    NN_CHECK(!st && snap && pt_load(snap, wpath, NULL) == PT_OK, "graph: saving and reloading the weights");
    pt_module_parameters(snap, NULL, from, 8);
    for (int pass = 0; pass < 2 && !st; ++pass) {
        for (int i = 0; i < n && !st; ++i) st = pt_copy_(to[i], from[i]);
        if (!st && pass == 0) st = pt_optimizer_load(g.opt, opath, NULL);
        float *curve = pass == 0 ? after_load : weights_only;
        for (int k = 0; k < M_STEPS && !st; ++k) st = replay(&g, N_STEPS + k, &curve[k]);
    }
    NN_CHECK(!st && memcmp(after_load, after_save, sizeof after_load) == 0,
             "graph: replays after pt_optimizer_load differ from those after the save (%.9g vs %.9g)",
             (double)after_load[0], (double)after_save[0]);
    NN_CHECK(!st && memcmp(weights_only, after_save, sizeof weights_only) != 0,
             "graph: the weights alone gave the same replays: the comparison cannot fail");

    /* Saving or loading while capturing is refused, with the fix. */
    if (pt_graph_capture_begin(dev) == PT_OK) {
        pt_status a = pt_optimizer_save(g.opt, opath);
        NN_CHECK(a == PT_ERR_INVALID_ARGUMENT && strstr(pt_last_error(), "pt_optimizer_save: a graph capture"),
                 "save while capturing: %s", pt_status_name(a));
        a = pt_optimizer_load(g.opt, opath, NULL);
        NN_CHECK(a == PT_ERR_INVALID_ARGUMENT && strstr(pt_last_error(), "pt_graph_capture_end"),
                 "load while capturing: %s", pt_status_name(a));
        pt_graph_free(pt_graph_capture_end(dev));
        pt_clear_error();
    }
    printf("%s a captured step of %s: %d replays after the load equal those after the save\n",
           st ? "FAIL" : "ok  ", c->name, M_STEPS);
    pt_module_free(snap);
    pt_graph_free(g.graph);
    pt_release(g.x);
    pt_release(g.y);
    pt_release(g.loss);
    pt_optimizer_free(g.opt);
    pt_module_free(g.net);
}

/* ---- Refused files ---- */

/* pt_optimizer_load(o, path) fails with status and a message that starts
 * "pt_optimizer_load: <path>" (for PT_ERR_IO) and holds want and fix, and
 * o is unchanged: saving it again gives the file it gave before. */
static void refused(pt_optimizer *o, const char *path, pt_status status, const char *want, const char *fix) {
    static char before[160], after[160];
    snprintf(before, sizeof before, "%s/before.safetensors", dir);
    snprintf(after, sizeof after, "%s/after.safetensors", dir);
    NN_CHECK(pt_optimizer_save(o, before) == PT_OK, "saving before");
    pt_status s = pt_optimizer_load(o, path, NULL);
    char msg[1024], prefix[256];
    snprintf(msg, sizeof msg, "%s", pt_last_error());
    snprintf(prefix, sizeof prefix, "pt_optimizer_load: %s", path);
    NN_CHECK(s == status && strncmp(msg, prefix, strlen(prefix)) == 0 && strstr(msg, want) && strstr(msg, fix),
             "%s: got %s '%s', want %s with '%s' and '%s'", path, pt_status_name(s), msg, pt_status_name(status),
             want, fix);
    NN_CHECK(pt_optimizer_save(o, after) == PT_OK && same_file(before, after),
             "%s: the refused load changed the optimizer", path);
}

static void check_errors(void) {
    const int failed_before = nn_failed;
    pt_module *net = make_net(7, HIDDEN, 2, dev);
    pt_optimizer *adamw = net ? adamw_schedule(net) : NULL, *sgd = net ? sgd_momentum(net) : NULL;
    float loss;
    pt_status st = adamw && sgd ? PT_OK : pt_last_status();
    for (int k = 0; k < 3 && !st; ++k) st = step(net, adamw, 0.5, k, &loss);
    if (!st) st = step(net, sgd, 0.0, 3, &loss);
    char *good = path_of("good.safetensors"), *sgd_file = path_of("sgd.safetensors"),
         *weights = path_of("weights.safetensors"), *bad = path_of("bad.safetensors");
    if (!st) st = pt_optimizer_save(adamw, good);
    if (!st) st = pt_optimizer_save(sgd, sgd_file);
    if (!st) st = pt_save(net, weights);
    NN_CHECK(!st, "error cases: set-up");

    refused(adamw, path_of("missing.safetensors"), PT_ERR_IO, "cannot open", "No such file");
    unsigned char *bytes = NULL;
    long n = file_bytes(good, &bytes);
    NN_CHECK(n > 64 && write_bytes(bad, bytes, n - 8), "a truncated copy");
    refused(adamw, bad, PT_ERR_IO, "run past the data section", "truncated file?");
    NN_CHECK(write_bytes(bad, bytes, 5), "a 5-byte copy");
    refused(adamw, bad, PT_ERR_IO, "too short", "header length");
    free(bytes);
    refused(adamw, sgd_file, PT_ERR_IO, "holds the state of an SGD optimizer but this optimizer is AdamW",
            "made by pt_sgd");
    refused(sgd, good, PT_ERR_IO, "an AdamW optimizer but this optimizer is SGD", "made by pt_adamw");
    refused(adamw, weights, PT_ERR_IO, "no \"optimizer\"", "pt_optimizer_save wrote");
    /* The good file with one piece of its header changed (same length). */
    static const struct {
        const char *from, *to, *want, *fix;
    } patches[] = {
        {"\"lr\":\"0.02", "\"lr\":\"x.02", "\"lr\" is \"x.02", "not a number"},
        {"\"lr\":\"0.02", "\"lr\":\"-.02", "lr -0.02 is out of range", "finite and > 0"},
        {"\"optimizer\":\"AdamW\"", "\"optimizer\":\"Lion_\"", "\"Lion_\"", "not SGD, Adam or AdamW"},
        {"state.1.exp_avg_sq", "state.1.exp_avg_sX", "tensor \"state.1.exp_avg_sq\": missing", "state.1.step"},
        {"state.3.step", "state.9.step", "tensor \"state.9.step\"", "unexpected tensor"},
        {"\"params\":\"4\"", "\"params\":\"x\"", "\"params\" is \"x\"", "a whole number"},
    };
    for (size_t i = 0; i < sizeof patches / sizeof patches[0]; ++i) {
        NN_CHECK(patched_copy(good, bad, patches[i].from, patches[i].to), "patching %s", patches[i].from);
        refused(adamw, bad, PT_ERR_IO, patches[i].want, patches[i].fix);
    }

    /* Another model: more layers, or other sizes. */
    pt_module *deep = make_net(7, HIDDEN, 3, dev), *wide = make_net(7, HIDDEN + 1, 2, dev);
    pt_optimizer *odeep = deep ? adamw_schedule(deep) : NULL, *owide = wide ? adamw_schedule(wide) : NULL;
    NN_CHECK(odeep && owide, "other models");
    if (odeep && owide) {
        for (int k = 0; k < 2; ++k) step(deep, odeep, 0.5, k, &loss), step(wide, owide, 0.5, k, &loss);
        refused(odeep, good, PT_ERR_IO, "state of 4 parameters but the optimizer's module has 6",
                "the same model");
        refused(owide, good, PT_ERR_IO, "tensor \"state.0.exp_avg\": F32 [24, 12] does not match parameter 0",
                "[25, 12]");
    }
    /* A lazy module that has not run: its weights must come first. */
    pt_module *lazy = pt_sequential(3, (pt_module *[]){pt_linear(HIDDEN), pt_relu_module(), pt_linear(CLASSES)});
    pt_optimizer *olazy = lazy ? adamw_schedule(lazy) : NULL;
    NN_CHECK(olazy && pt_optimizer_load(olazy, good, NULL) == PT_ERR_IO && strstr(pt_last_error(), "lazy") &&
                 strstr(pt_last_error(), "pt_load the module's weights"),
             "state for a lazy module not run yet: %s", pt_last_error());
    NN_CHECK(olazy && pt_load(lazy, weights, dev) == PT_OK && pt_optimizer_load(olazy, good, NULL) == PT_OK,
             "the same after pt_load of the weights");
    /* Step numbers travel as doubles in a captured step: the schedule stops at 2^53. */
    NN_CHECK(pt_optimizer_set_schedule(sgd, 0, (INT64_C(1) << 53) + 1, 0.0) == PT_ERR_INVALID_ARGUMENT &&
                 strstr(pt_last_error(), "1 <= total_steps <= 2^53"),
             "a schedule over 2^53 steps: %s", pt_last_error());
    NN_CHECK(pt_optimizer_load(adamw, NULL, NULL) == PT_ERR_INVALID_ARGUMENT &&
                 strstr(pt_last_error(), "pt_optimizer_load: path is NULL"),
             "NULL path");
    NN_CHECK(pt_optimizer_save(NULL, good) == PT_ERR_INVALID_ARGUMENT &&
                 strstr(pt_last_error(), "pt_optimizer_save: optimizer is NULL"),
             "NULL optimizer");
    char ro[160];
    snprintf(ro, sizeof ro, "%s/no-such-folder/optim.safetensors", dir);
    NN_CHECK(pt_optimizer_save(adamw, ro) == PT_ERR_IO && strstr(pt_last_error(), "cannot create a temporary"),
             "saving into a missing folder: %s", pt_last_error());
    printf("%s refused files leave the optimizer as it was\n", nn_failed > failed_before ? "FAIL" : "ok  ");
    pt_optimizer_free(olazy);
    pt_module_free(lazy);
    pt_optimizer_free(odeep);
    pt_optimizer_free(owide);
    pt_module_free(deep);
    pt_module_free(wide);
    pt_optimizer_free(adamw);
    pt_optimizer_free(sgd);
    pt_module_free(net);
}

int main(void) {
    nn_begin();
    dev = nn_device_or_skip();
    snprintf(dir, sizeof dir, "/tmp/pt_optim_resume_XXXXXX");
    if (!mkdtemp(dir)) {
        printf("FAIL: cannot make a temporary folder\n");
        return 1;
    }
    make_data();
    printf("optimizer state save/load on %s\n", pt_device_name(dev));
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; ++i) check_resume(&CASES[i]);
    pt_device *other = pt_device_get("cpu:1");
    if (dev != pt_cpu() || other) check_other_device(dev == pt_cpu() ? other : pt_cpu());
    else printf("note: one cpu device only (PORTABLE_CPU_DEVICES=2 adds cpu:1): no cross-device case\n");
    pt_clear_error();
    check_graph();
    check_errors();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("note: could not remove %s\n", dir);
    return nn_finish();
}
