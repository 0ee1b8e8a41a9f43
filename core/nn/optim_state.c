/* An optimizer's whole state as a safetensors file (pt_optimizer_save,
 * pt_optimizer_load), so a run that stops resumes with the same moments,
 * step counts and schedule position, bit for bit.
 *
 * Tensors are named as torch.optim's state_dict()["state"] flattened:
 * "state.<i>.step" (I64, 0-D), "state.<i>.exp_avg" and
 * "state.<i>.exp_avg_sq" (Adam, AdamW) or "state.<i>.momentum_buffer" (SGD
 * with momentum), i counting the module's parameters without its buffers,
 * as torch's model.parameters() does. A parameter that was never updated
 * has no entry. SGD keeps a step too: the schedule needs it. The
 * hyper-parameters and the schedule go in "__metadata__" as strings
 * ("%.17g": the double comes back exactly).
 *
 * Loading checks everything against the optimizer and reads every tensor
 * before it changes anything. Then it copies into the state tensors that
 * exist (same shape, dtype and device) rather than replacing them, because
 * a graph that captured a step reads and writes those very tensors at each
 * replay; the step counts are written into the cells such graphs share. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/optim_internal.h"
#include "nn/safetensors_file.h"

#define NAME_CAP 64
#define META_CAP 16
#define VALUE_CAP 32

/* The metadata key of each hyper-parameter, and the kinds that use it. */
static const struct {
    const char *key;
    size_t offset; /* in pt__optim_hypers */
    bool sgd, adam;
} HYPERS[] = {
    {"lr", offsetof(pt__optim_hypers, lr), true, true},
    {"momentum", offsetof(pt__optim_hypers, momentum), true, false},
    {"beta1", offsetof(pt__optim_hypers, beta1), false, true},
    {"beta2", offsetof(pt__optim_hypers, beta2), false, true},
    {"eps", offsetof(pt__optim_hypers, eps), false, true},
    {"weight_decay", offsetof(pt__optim_hypers, weight_decay), true, true},
};
#define N_HYPERS (int)(sizeof HYPERS / sizeof HYPERS[0])

static bool uses(pt__optim_kind kind, int k) { return kind == PT__OPTIM_SGD ? HYPERS[k].sgd : HYPERS[k].adam; }

static double *hyper(pt__optim_hypers *h, int k) { return (double *)((char *)h + HYPERS[k].offset); }

static double hyper_value(const pt__optim_hypers *h, int k) {
    return *(const double *)((const char *)h + HYPERS[k].offset);
}

/* The tensors kind keeps per parameter (after the step), as the file names
 * them; returns how many (SGD without momentum keeps none). */
static int state_names(pt__optim_kind kind, const pt__optim_hypers *h, const char *names[2]) {
    if (kind != PT__OPTIM_SGD) {
        names[0] = "exp_avg";
        names[1] = "exp_avg_sq";
        return 2;
    }
    names[0] = "momentum_buffer";
    return h->momentum > 0 ? 1 : 0;
}

/* The module's parameters as both calls see them: the state dict (ps, n)
 * and the positions in it of the n_train that are not buffers. */
typedef struct params_view {
    pt__param *ps;
    int n, n_train;
    int *pos;
} params_view;

/* The checks both calls start with (inside a graph capture the transfers
 * would be recorded into the graph, and refused there: refused here, with
 * the fix), then o's parameters. */
static pt_status view_params(const char *fn, pt_optimizer *o, const char *path, params_view *v) {
    *v = (params_view){0};
    if (!o) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "optimizer is NULL");
    if (!path) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "path is NULL");
    pt_device *d = pt__capture_device();
    if (d)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "a graph capture on %s is in progress on this thread; call %s before "
                         "pt_graph_capture_begin or after pt_graph_capture_end",
                         pt_device_name(d), fn);
    v->n = pt__module_params_alloc(o->module, &v->ps, fn);
    if (v->n < 0) return pt_last_status();
    v->pos = malloc((v->n > 0 ? (size_t)v->n : 1) * sizeof *v->pos);
    if (!v->pos) return pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    for (int i = 0; i < v->n; ++i)
        if (!v->ps[i].buffer) v->pos[v->n_train++] = i;
    return PT_OK;
}

static void view_free(params_view *v) {
    free(v->pos);
    free(v->ps);
}

/* ==== Save ================================================================ */

/* The metadata being written: pairs whose values live in text. */
typedef struct meta_list {
    int n;
    const char *pairs[META_CAP][2];
    char text[META_CAP][VALUE_CAP];
} meta_list;

static void put(meta_list *m, const char *key, const char *fmt, ...) PT_PRINTF(3, 4);

static void put(meta_list *m, const char *key, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->text[m->n], VALUE_CAP, fmt, ap);
    va_end(ap);
    m->pairs[m->n][0] = key;
    m->pairs[m->n][1] = m->text[m->n];
    ++m->n;
}

/* o's kind, parameter count, hyper-parameters and schedule. */
static void metadata(const pt_optimizer *o, int n_params, meta_list *m) {
    put(m, "format", "pt");
    put(m, "optimizer", "%s", pt__optim_kind_name(o->kind));
    put(m, "params", "%d", n_params);
    for (int k = 0; k < N_HYPERS; ++k)
        if (uses(o->kind, k)) put(m, HYPERS[k].key, "%.17g", hyper_value(&o->h, k));
    put(m, "schedule", "%s", o->h.total >= 0 ? "warmup_cosine" : "none");
    if (o->h.total < 0) return;
    put(m, "warmup_steps", "%lld", (long long)o->h.warmup);
    put(m, "total_steps", "%lld", (long long)o->h.total);
    put(m, "min_lr", "%.17g", o->h.min_lr);
}

/* What the file holds: names (storage in text) and tensors (the steps made
 * here, in the caller's scope). */
typedef struct save_list {
    int n;
    char (*text)[NAME_CAP];
    const char **names;
    pt_tensor **tensors;
} save_list;

static void add(save_list *l, int param, const char *what, pt_tensor *t) {
    snprintf(l->text[l->n], NAME_CAP, "state.%d.%s", param, what);
    l->names[l->n] = l->text[l->n];
    l->tensors[l->n++] = t;
}

/* Lists the state of every trainable parameter that has been updated and
 * whose state fits it (state that does not is what the next step would
 * restart: nothing to keep). */
static pt_status list_state(const pt_optimizer *o, const pt__param *ps, const int *pos, int n_train, save_list *l) {
    const char *what[2] = {NULL, NULL};
    state_names(o->kind, &o->h, what);
    for (int j = 0; j < n_train; ++j) {
        const int i = pos[j];
        const pt__optim_state *st = i < o->n ? &o->state[i] : NULL;
        pt_tensor *p = *ps[i].slot;
        if (!st || !st->steps || st->steps->steps <= 0 || !p || !pt__optim_state_fits(st, p)) continue;
        const int64_t steps = st->steps->steps;
        pt_tensor *step = pt_from_data(pt_cpu(), PT_I64, 0, NULL, &steps);
        if (!step) return pt_last_status();
        add(l, j, "step", step);
        if (st->a) add(l, j, what[0], st->a);
        if (st->b) add(l, j, what[1], st->b);
    }
    return PT_OK;
}

pt_status pt_optimizer_save(pt_optimizer *o, const char *path) {
    static const char fn[] = "pt_optimizer_save";
    params_view v;
    pt_status s = view_params(fn, o, path, &v);
    const size_t cap = 3 * (size_t)(v.n_train > 0 ? v.n_train : 1);
    save_list l = {0};
    if (!s) {
        l.text = malloc(cap * sizeof *l.text);
        l.names = malloc(cap * sizeof *l.names);
        l.tensors = malloc(cap * sizeof *l.tensors);
        if (!l.text || !l.names || !l.tensors) s = pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    }
    pt_scope scope = pt_scope_begin();
    if (!s) s = list_state(o, v.ps, v.pos, v.n_train, &l);
    meta_list meta = {0};
    if (!s) metadata(o, v.n_train, &meta);
    if (!s) s = pt__st_save(fn, path, l.n, l.names, l.tensors, meta.n, (const char *const(*)[2])meta.pairs);
    pt_scope_end(scope);
    free(l.text);
    free(l.names);
    free(l.tensors);
    view_free(&v);
    return s;
}

/* ==== Load ================================================================ */

/* One trainable parameter's state as read from the file. */
typedef struct loaded {
    int64_t steps;    /* 0: none in the file */
    pt_tensor *t[2];  /* owned: the state_names tensors, read onto their device */
} loaded;

typedef struct load_ctx {
    pt__st_file file;
    pt__optim_kind kind;
    pt__optim_hypers h;
    const pt__param *ps;
    const int *pos;
    int n_train;
    loaded *state;  /* n_train entries */
} load_ctx;

/* The metadata value of key, or an error naming it. */
static pt_status meta_text(const load_ctx *c, const char *key, const char **out) {
    *out = pt__st_meta(&c->file, key);
    if (*out) return PT_OK;
    return pt__st_bad(&c->file, NULL,
                      "\"__metadata__\" has no \"%s\", which an %s state needs: load a file that "
                      "pt_optimizer_save wrote",
                      key, pt__optim_kind_name(c->kind));
}

/* The metadata number of key, all of its text: a double, or (count
 * non-NULL) a whole number in [0, 2^53], which a double holds exactly. */
static pt_status meta_number(const load_ctx *c, const char *key, double *out, int64_t *count) {
    const char *text;
    pt_status s = meta_text(c, key, &text);
    if (s) return s;
    char *end = NULL;
    errno = 0;
    const long long whole = count ? strtoll(text, &end, 10) : 0;
    const double v = count ? (double)whole : strtod(text, &end);
    if (end == text || *end != '\0' || errno == ERANGE || (count && (whole < 0 || whole > PT__MAX_COUNT)))
        return pt__st_bad(&c->file, NULL, "\"__metadata__\" \"%s\" is \"%.40s\", not %s", key, text,
                          count ? "a whole number in [0, 2^53]" : "a number");
    if (out) *out = v;
    if (count) *count = whole;
    return PT_OK;
}

/* The kind, the parameter count and the hyper-parameters, checked against
 * o and against their ranges. */
static pt_status read_header_facts(load_ctx *c, const pt_optimizer *o) {
    const pt__st_file *f = &c->file;
    const char *kind = pt__st_meta(f, "optimizer");
    if (!kind)
        return pt__st_bad(f, NULL,
                          "\"__metadata__\" has no \"optimizer\": not an optimizer state (a module's weights, "
                          "which pt_load reads?); load a file that pt_optimizer_save wrote");
    c->kind = o->kind;
    if (strcmp(kind, pt__optim_kind_name(o->kind)) != 0) {
        static const char *const makers[][2] = {{"SGD", "pt_sgd"}, {"Adam", "pt_adam"}, {"AdamW", "pt_adamw"}};
        for (int k = 0; k < 3; ++k)
            if (strcmp(kind, makers[k][0]) == 0)
                return pt__st_bad(f, NULL,
                                  "holds the state of an %s optimizer but this optimizer is %s: load it into an "
                                  "optimizer made by %s, or load a file saved from an %s",
                                  kind, pt__optim_kind_name(o->kind), makers[k][1], pt__optim_kind_name(o->kind));
        return pt__st_bad(f, NULL, "\"__metadata__\" \"optimizer\" is \"%.40s\", not SGD, Adam or AdamW", kind);
    }
    int64_t count;
    pt_status s = meta_number(c, "params", NULL, &count);
    if (s) return s;
    if (count != c->n_train)
        return pt__st_bad(f, NULL,
                          "holds the state of %lld parameters but the optimizer's module has %d: load it into "
                          "an optimizer of the same model it was saved from",
                          (long long)count, c->n_train);
    c->h = (pt__optim_hypers){.total = -1};
    for (int k = 0; k < N_HYPERS && !s; ++k)
        if (uses(c->kind, k)) s = meta_number(c, HYPERS[k].key, hyper(&c->h, k), NULL);
    const char *schedule = NULL;
    if (!s) s = meta_text(c, "schedule", &schedule);
    if (!s && strcmp(schedule, "none") != 0) {
        if (strcmp(schedule, "warmup_cosine") != 0)
            return pt__st_bad(f, NULL, "\"__metadata__\" \"schedule\" is \"%.40s\", not \"none\" or \"warmup_cosine\"",
                              schedule);
        s = meta_number(c, "warmup_steps", NULL, &c->h.warmup);
        if (!s) s = meta_number(c, "total_steps", NULL, &c->h.total);
        if (!s) s = meta_number(c, "min_lr", &c->h.min_lr, NULL);
    }
    if (s) return s;
    /* Values out of range mean a damaged or hand-edited file: named as the
     * constructor would name them. */
    if (pt__optim_check(f->fn, c->kind, &c->h)) {
        char why[512];
        const char *msg = pt_last_error();
        const size_t skip = strlen(f->fn) + 2; /* "<fn>: " */
        snprintf(why, sizeof why, "%s", strlen(msg) > skip ? msg + skip : msg);
        return pt__st_bad(f, NULL, "a hyper-parameter in \"__metadata__\" is refused: %s", why);
    }
    return PT_OK;
}

static pt_status entry_fits(const load_ctx *c, const pt__st_entry *e, int j, const pt_tensor *p) {
    bool same = e->ndim == p->ndim && e->dtype == p->dtype;
    for (int d = 0; same && d < p->ndim; ++d) same = e->shape[d] == p->shape[d];
    if (same) return PT_OK;
    char a[160], b[160];
    return pt__st_bad(&c->file, e->name,
                      "%s %s does not match parameter %d (\"%s\") of the optimizer's module, %s %s: the state "
                      "was saved for another model",
                      pt__st_dtype_tag(e->dtype), pt__shape_str(e->ndim, e->shape, a, sizeof a), j,
                      c->ps[c->pos[j]].name, pt__st_dtype_tag(p->dtype), pt__shape_str(p->ndim, p->shape, b, sizeof b));
}

/* Parameter j's step count (0 when the file has no state for it) and the
 * tensors that go with it, checked against the parameter. */
static pt_status match_param(load_ctx *c, int j) {
    char name[NAME_CAP];
    snprintf(name, sizeof name, "state.%d.step", j);
    pt__st_entry *step = pt__st_find(&c->file, name);
    if (!step) return PT_OK;
    step->claimed = j;
    if (step->dtype != PT_I64 || step->ndim != 0)
        return pt__st_bad(&c->file, name, "is %s with %d dims, but a step count is an I64 scalar (0 dims)",
                          pt__st_dtype_tag(step->dtype), step->ndim);
    void *host = NULL;
    pt_status s = pt__st_read_host(&c->file, step, &host);
    if (s) return s;
    memcpy(&c->state[j].steps, host, sizeof c->state[j].steps);
    free(host);
    if (c->state[j].steps < 1 || c->state[j].steps > PT__MAX_COUNT)
        return pt__st_bad(&c->file, name, "holds %lld, but a saved state has made from 1 to 2^53 updates",
                          (long long)c->state[j].steps);
    const pt__param *param = &c->ps[c->pos[j]];
    if (!*param->slot)
        return pt__st_bad(&c->file, name,
                          "parameter %d (\"%s\") belongs to a lazy layer that has not run yet: pt_load the "
                          "module's weights (or run a forward pass) before pt_optimizer_load",
                          j, param->name);
    const char *what[2] = {NULL, NULL};
    const int k_max = state_names(c->kind, &c->h, what);
    for (int k = 0; k < k_max && !s; ++k) {
        snprintf(name, sizeof name, "state.%d.%s", j, what[k]);
        pt__st_entry *e = pt__st_find(&c->file, name);
        if (!e)
            return pt__st_bad(&c->file, name, "missing from the file (an %s state with \"state.%d.step\" has it)",
                              pt__optim_kind_name(c->kind), j);
        e->claimed = j;
        s = entry_fits(c, e, j, *param->slot);
    }
    return s;
}

static pt_status match_all(load_ctx *c) {
    pt_status s = PT_OK;
    for (int j = 0; j < c->n_train && !s; ++j) s = match_param(c, j);
    for (int k = 0; k < c->file.n_entries && !s; ++k)
        if (c->file.entries[k].claimed < 0) {
            const char *what[2] = {NULL, NULL};
            const int n = state_names(c->kind, &c->h, what);
            s = pt__st_bad(&c->file, c->file.entries[k].name,
                           "not part of %s state (unexpected tensor): it holds state.<i>.step%s%s%s%s for i < %d",
                           c->kind == PT__OPTIM_SGD && n == 0 ? "a momentum-free SGD" : "this optimizer's",
                           n > 0 ? ", ." : "", n > 0 ? what[0] : "", n > 1 ? ", ." : "", n > 1 ? what[1] : "",
                           c->n_train);
        }
    return s;
}

/* Reads every claimed tensor onto map_location, or its parameter's device. */
static pt_status materialise(load_ctx *c, pt_device *map_location) {
    pt_status s = PT_OK;
    pt_scope scope = pt_scope_begin();
    const char *what[2] = {NULL, NULL};
    const int k_max = state_names(c->kind, &c->h, what);
    for (int j = 0; j < c->n_train && !s; ++j) {
        if (!c->state[j].steps) continue;
        pt_tensor *p = *c->ps[c->pos[j]].slot;
        pt_device *dev = map_location ? map_location : pt_tensor_device(p);
        for (int k = 0; k < k_max && !s; ++k) {
            char name[NAME_CAP];
            snprintf(name, sizeof name, "state.%d.%s", j, what[k]);
            c->state[j].t[k] = pt__own(pt__st_read(&c->file, pt__st_find(&c->file, name), dev));
            if (!c->state[j].t[k]) s = pt_last_status();
        }
    }
    pt_scope_end(scope);
    return s;
}

/* *slot takes fresh's value (fresh is consumed; NULL empties the slot): in
 * place when the old tensor has its shape, dtype and device, so a graph
 * that captured a step sees it. */
static pt_status install(pt_tensor **slot, pt_tensor *fresh) {
    pt_tensor *old = *slot;
    bool same = old && fresh && old->ndim == fresh->ndim && old->dtype == fresh->dtype &&
                pt_tensor_device(old) == pt_tensor_device(fresh);
    for (int d = 0; same && d < old->ndim; ++d) same = old->shape[d] == fresh->shape[d];
    if (!same) {
        pt__drop_owned(old);
        *slot = fresh;
        return PT_OK;
    }
    pt_status s = pt_copy_(old, fresh);
    pt__drop_owned(fresh);
    return s;
}

/* Makes the loaded state o's. Only a device's failure to copy can stop it
 * half way; everything that can be refused was checked before. */
static pt_status commit(load_ctx *c, pt_optimizer *o, int n, const char *fn) {
    pt_status s = pt__optim_state_grow(o, n, fn);
    for (int j = 0; j < c->n_train && !s; ++j) {
        pt__optim_state *st = &o->state[c->pos[j]];
        if (c->state[j].steps && !st->steps && !(st->steps = pt__step_cell_new()))
            s = pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for optimizer state");
    }
    if (s) return s;
    for (int j = 0; j < c->n_train; ++j) {
        pt__optim_state *st = &o->state[c->pos[j]];
        if (!c->state[j].steps) {
            pt__optim_state_reset(st);
            continue;
        }
        pt_status a = install(&st->a, c->state[j].t[0]);
        pt_status b = install(&st->b, c->state[j].t[1]);
        c->state[j].t[0] = c->state[j].t[1] = NULL;
        st->steps->steps = c->state[j].steps;
        if (!s) s = a ? a : b;
    }
    o->h = c->h;
    return s;
}

pt_status pt_optimizer_load(pt_optimizer *o, const char *path, pt_device *map_location) {
    static const char fn[] = "pt_optimizer_load";
    params_view v;
    pt_status s = view_params(fn, o, path, &v);
    load_ctx c = {.ps = v.ps, .pos = v.pos, .n_train = v.n_train};
    if (!s) {
        c.state = calloc(v.n_train > 0 ? (size_t)v.n_train : 1, sizeof *c.state);
        if (!c.state) s = pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    }
    if (!s) s = pt__st_open(&c.file, fn, path);
    if (!s) s = read_header_facts(&c, o);
    if (!s) s = match_all(&c);
    pt__grad_pause();
    if (!s) s = materialise(&c, map_location);
    if (!s) s = commit(&c, o, v.n, fn);
    pt__grad_resume();
    for (int j = 0; c.state && j < c.n_train; ++j) {
        pt__drop_owned(c.state[j].t[0]);
        pt__drop_owned(c.state[j].t[1]);
    }
    pt__st_close(&c.file);
    free(c.state);
    view_free(&v);
    return s;
}
