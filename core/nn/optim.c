/* Optimizers: SGD with momentum, Adam and AdamW, following torch.optim's
 * update rules, with an optional warm-up + cosine learning-rate schedule. Every update is a handful of ops on the parameter's device; the
 * parameter itself changes in place (pt_axpy_) so references to it stay
 * valid, while state tensors are simply replaced each step. Parameters are
 * looked up by position in the module's state dict at every step, so lazy
 * parameters created after the optimizer, pt_module_to and pt_load are all
 * followed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/optim_internal.h"
#include "ops/ops_internal.h"

/* A hyper-parameter's valid values: finite, >= lo (> lo when lo_open) and,
 * when hi_open, < hi. */
typedef struct hyper_range {
    double lo, hi;
    bool lo_open, hi_open;
    const char *text;  /* the range as the message states it */
} hyper_range;

static const hyper_range LR_RANGE = {0.0, 0.0, true, false, "finite and > 0"};
static const hyper_range NONNEG_RANGE = {0.0, 0.0, false, false, "finite and >= 0"};
static const hyper_range UNIT_RANGE = {0.0, 1.0, false, true, "in [0, 1)"};

/* PT_OK, or PT_ERR_INVALID_ARGUMENT "fn: name v is out of range: it must be
 * <range> (usual: <usual>)". NaN fails every comparison, so it is refused. */
static pt_status check_hyper(const char *fn, const char *name, double v, const hyper_range *r,
                             const char *usual) {
    bool ok = isfinite(v) && (r->lo_open ? v > r->lo : v >= r->lo) && (!r->hi_open || v < r->hi);
    if (ok) return PT_OK;
    return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "%s %g is out of range: it must be %s (usual: %s)",
                     name, v, r->text, usual);
}

/* The schedule's own ranges, against the rate lr it starts from. */
static pt_status check_schedule(const char *fn, int64_t warmup, int64_t total, double min_lr, double lr) {
    if (warmup < 0 || total < 1 || warmup > total || total > PT__MAX_COUNT)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "warmup_steps %lld and total_steps %lld: they need 0 <= warmup_steps <= total_steps "
                         "and 1 <= total_steps <= 2^53",
                         (long long)warmup, (long long)total);
    if (!isfinite(min_lr) || min_lr < 0 || min_lr > lr)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "min_lr %g is out of range: it must be in [0, lr] with lr %g (usual: lr / 10)", min_lr, lr);
    return PT_OK;
}

pt_status pt__optim_check(const char *fn, pt__optim_kind kind, const pt__optim_hypers *h) {
    bool refused; /* check_hyper's status is non-zero when it refuses */
    if (kind == PT__OPTIM_SGD)
        refused = check_hyper(fn, "lr", h->lr, &LR_RANGE, "0.01 to 0.1") ||
                  check_hyper(fn, "momentum", h->momentum, &UNIT_RANGE, "0 or 0.9") ||
                  check_hyper(fn, "weight_decay", h->weight_decay, &NONNEG_RANGE, "0 or 1e-4");
    else
        refused = check_hyper(fn, "lr", h->lr, &LR_RANGE, "1e-3") ||
                  check_hyper(fn, "beta1", h->beta1, &UNIT_RANGE, "0.9") ||
                  check_hyper(fn, "beta2", h->beta2, &UNIT_RANGE, "0.999") ||
                  check_hyper(fn, "eps", h->eps, &NONNEG_RANGE, "1e-8") ||
                  check_hyper(fn, "weight_decay", h->weight_decay, &NONNEG_RANGE,
                              kind == PT__OPTIM_ADAMW ? "0.01 or 0.1" : "0");
    if (refused) return pt_last_status();
    return h->total >= 0 ? check_schedule(fn, h->warmup, h->total, h->min_lr, h->lr) : PT_OK;
}

const char *pt__optim_kind_name(pt__optim_kind kind) {
    return kind == PT__OPTIM_SGD ? "SGD" : kind == PT__OPTIM_ADAM ? "Adam" : "AdamW";
}

/* An optimizer of kind with hyper-parameters h (checked first) for m. */
static pt_optimizer *optimizer_new(const char *fn, pt__optim_kind kind, pt_module *m, const pt__optim_hypers *h) {
    if (pt__optim_check(fn, kind, h)) return NULL;
    if (!m) {
        if (pt_last_status() == PT_OK) pt__error(PT_ERR_INVALID_ARGUMENT, fn, "module is NULL");
        return NULL;
    }
    pt_optimizer *o = calloc(1, sizeof *o);
    if (!o) {
        pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
        return NULL;
    }
    o->kind = kind;
    o->module = m;
    o->h = *h;
    return o;
}

pt_optimizer *pt_sgd(pt_module *m, double lr, double momentum, double weight_decay) {
    const pt__optim_hypers h = {.lr = lr, .momentum = momentum, .weight_decay = weight_decay, .total = -1};
    return optimizer_new("pt_sgd", PT__OPTIM_SGD, m, &h);
}

static pt_optimizer *adam_new(const char *fn, pt__optim_kind kind, pt_module *m, double lr, double beta1, double beta2,
                              double eps, double weight_decay) {
    const pt__optim_hypers h = {
        .lr = lr, .beta1 = beta1, .beta2 = beta2, .eps = eps, .weight_decay = weight_decay, .total = -1};
    return optimizer_new(fn, kind, m, &h);
}

pt_optimizer *pt_adam(pt_module *m, double lr, double beta1, double beta2, double eps, double weight_decay) {
    return adam_new("pt_adam", PT__OPTIM_ADAM, m, lr, beta1, beta2, eps, weight_decay);
}

pt_optimizer *pt_adamw(pt_module *m, double lr, double beta1, double beta2, double eps, double weight_decay) {
    return adam_new("pt_adamw", PT__OPTIM_ADAMW, m, lr, beta1, beta2, eps, weight_decay);
}

double pt_lr_warmup_cosine(double max_lr, double min_lr, int64_t warmup_steps, int64_t total_steps, int64_t step) {
    const int64_t it = step - 1; /* updates made before this one */
    if (it < 0) return 0.0;
    if (it < warmup_steps) return max_lr * (double)(it + 1) / (double)warmup_steps;
    if (it >= total_steps) return min_lr;
    const double ratio = (double)(it - warmup_steps) / (double)(total_steps - warmup_steps);
    return min_lr + 0.5 * (1.0 + cos(M_PI * ratio)) * (max_lr - min_lr);
}

pt_status pt_optimizer_set_schedule(pt_optimizer *o, int64_t warmup_steps, int64_t total_steps, double min_lr) {
    static const char fn[] = "pt_optimizer_set_schedule";
    if (!o) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "optimizer is NULL");
    pt_status s = check_schedule(fn, warmup_steps, total_steps, min_lr, o->h.lr);
    if (s) return s;
    o->h.warmup = warmup_steps;
    o->h.total = total_steps;
    o->h.min_lr = min_lr;
    return PT_OK;
}

void pt_optimizer_free(pt_optimizer *o) {
    if (!o) return;
    for (int i = 0; i < o->n; ++i) {
        pt__drop_owned(o->state[i].a);
        pt__drop_owned(o->state[i].b);
        pt__step_cell_release(o->state[i].steps);
    }
    free(o->state);
    free(o);
}

pt_status pt_optimizer_set_lr(pt_optimizer *o, double lr) {
    if (!o) return pt__error(PT_ERR_INVALID_ARGUMENT, "pt_optimizer_set_lr", "optimizer is NULL");
    pt_status s = check_hyper("pt_optimizer_set_lr", "lr", lr, &LR_RANGE, "the value the optimizer was made with");
    if (s) return s;
    o->h.lr = lr;
    if (o->h.total >= 0 && o->h.min_lr > lr) o->h.min_lr = lr; /* the schedule never climbs past lr */
    return PT_OK;
}

pt_status pt_optimizer_zero_grad(pt_optimizer *o) {
    if (!o) return pt__error(PT_ERR_INVALID_ARGUMENT, "pt_optimizer_zero_grad", "optimizer is NULL");
    return pt_module_zero_grad(o->module);
}

/* ---- State ---- */

void pt__optim_state_reset(pt__optim_state *st) {
    pt__drop_owned(st->a);
    pt__drop_owned(st->b);
    st->a = st->b = NULL;
    if (st->steps) st->steps->steps = 0;
}

bool pt__optim_state_fits(const pt__optim_state *st, const pt_tensor *p) {
    const pt_tensor *bufs[2] = {st->a, st->b};
    for (int k = 0; k < 2; ++k) {
        const pt_tensor *t = bufs[k];
        if (!t) continue;
        bool same = t->ndim == p->ndim && t->dtype == p->dtype;
        for (int i = 0; same && i < p->ndim; ++i) same = t->shape[i] == p->shape[i];
        if (!same) return false;
    }
    return true;
}

/* Makes st fit parameter p: moves it to p's device after pt_module_to,
 * restarts it when p's shape changed (pt_load into a lazy linear). */
static pt_status state_follow(pt__optim_state *st, pt_tensor *p) {
    if (!pt__optim_state_fits(st, p)) {
        pt__optim_state_reset(st);
        return PT_OK;
    }
    pt_tensor **bufs[2] = {&st->a, &st->b};
    for (int k = 0; k < 2; ++k) {
        pt_tensor *t = *bufs[k];
        if (t && pt_tensor_device(t) != pt_tensor_device(p)) {
            pt_tensor *moved = pt__own(pt_to(t, pt_tensor_device(p)));
            if (!moved) return pt_last_status();
            pt__drop_owned(t);
            *bufs[k] = moved;
        }
    }
    return PT_OK;
}

/* A fresh tensor with x's value (state must not alias the gradient, which
 * the next backward adds into in place). */
static pt_tensor *clone(pt_tensor *x) {
    pt_tensor *c = pt_empty(pt_tensor_device(x), x->dtype, x->ndim, x->shape);
    if (c && pt_copy_(c, x)) {
        pt_release(c);
        return NULL;
    }
    return c;
}

/* Keeps fresh (a result of this step, made inside the step's scope) as
 * state in place of the old value. While a graph is captured the old
 * tensor takes the value instead (one copy), since a replay reads and
 * writes the tensors that existed before the capture in place. */
static pt_status replace(pt_tensor **slot, pt_tensor *fresh) {
    if (*slot && pt__capture_device()) return pt_copy_(*slot, fresh);
    pt__drop_owned(*slot);
    *slot = pt__own(fresh);
    return PT_OK;
}

/* Capturing a step needs the state a step reads to exist before the
 * capture, else every replay would be a first step: refused, with the fix. */
static pt_status no_state_yet(const char *what) {
    return pt__capture_fail(pt__error(PT_ERR_UNSUPPORTED, "pt_optimizer_step",
                                      "a graph capture on %s reached a parameter without %s yet "
                                      "(each replay would repeat the first step); run one step "
                                      "eagerly before pt_graph_capture_begin",
                                      pt_device_name(pt__capture_device()), what));
}

/* The step-dependent scalars, as the eager step computes them for step k
 * (a replay computes them again for its own step). Those that use the
 * learning rate read it from p[0..3] (lr_params): the rate, and the
 * schedule's min_lr, warm-up and total steps (total < 0: no schedule). */
static void lr_params(const pt_optimizer *o, double p[PT__STEP_PARAMS]) {
    for (int i = 0; i < PT__STEP_PARAMS; ++i) p[i] = 0;
    p[0] = o->h.lr;
    p[1] = o->h.min_lr;
    p[2] = (double)o->h.warmup;
    p[3] = (double)o->h.total;
}

static double lr_at(const double *p, int64_t k) {
    return p[3] < 0 ? p[0] : pt_lr_warmup_cosine(p[0], p[1], (int64_t)p[2], (int64_t)p[3], k);
}

static double adam_denom_scale(const double *p, int64_t k) {
    return 1.0 / sqrt(1.0 - pow(p[0], (double)k));
}

/* p[4]: beta1 */
static double adam_alpha(const double *p, int64_t k) { return -lr_at(p, k) / (1.0 - pow(p[4], (double)k)); }

static double sgd_alpha(const double *p, int64_t k) { return -lr_at(p, k); }

/* p[4]: weight_decay; the factor of AdamW's p -= lr wd p */
static double adamw_decay(const double *p, int64_t k) { return -lr_at(p, k) * p[4]; }

/* ---- Updates (inside a scope: temporaries are left to it) ---- */

static pt_status sgd_update(pt_optimizer *o, pt__optim_state *st, pt_tensor *p, pt_tensor *g) {
    pt_tensor *d = g;
    if (o->h.weight_decay > 0) d = pt_add(g, pt_mul_scalar(p, o->h.weight_decay));
    if (o->h.momentum > 0) {
        if (!st->a && pt__capture_device()) return no_state_yet("a momentum buffer");
        pt_tensor *buf = st->a ? pt_add(pt_mul_scalar(st->a, o->h.momentum), d) : clone(d);
        if (!buf) return pt_last_status();
        pt_status s = replace(&st->a, buf);
        if (s) return s;
        d = st->a;
    }
    if (!d) return pt_last_status();
    double lp[PT__STEP_PARAMS];
    lr_params(o, lp);
    const int64_t k = st->steps->steps + 1;
    if (pt__capture_device() && o->h.total >= 0) pt__capture_step_scalar(st->steps, PT_OP_AXPY, sgd_alpha, lp);
    return pt_axpy_(p, sgd_alpha(lp, k), d);
}

static const char fn_step[] = "pt_optimizer_step";

static pt_status adam_update(pt_optimizer *o, pt__optim_state *st, pt_tensor *p, pt_tensor *g) {
    const bool capturing = pt__capture_device() != NULL;
    if (capturing && (!st->a || !st->b)) return no_state_yet("Adam's moments");
    pt_tensor *d = g;
    const int64_t k = st->steps->steps + 1;
    double lp[PT__STEP_PARAMS];
    lr_params(o, lp);
    if (o->kind == PT__OPTIM_ADAMW && o->h.weight_decay > 0) {
        /* decoupled: p -= lr wd p before the update, as torch.optim.AdamW */
        lp[4] = o->h.weight_decay;
        if (capturing) pt__capture_step_scalar(st->steps, PT_OP_AXPY, adamw_decay, lp);
        pt_status s = pt_axpy_(p, adamw_decay(lp, k), p);
        if (s) return s;
    } else if (o->h.weight_decay > 0) {
        d = pt_add(g, pt_mul_scalar(p, o->h.weight_decay));
    }
    /* m = b1 m + (1 - b1) d;  v = b2 v + (1 - b2) d^2  (both start at 0).
     * f32 and f64 moments are updated in place, as torch.optim's
     * exp_avg.mul_(b1).add_(d, alpha=1 - b1): no new tensors a step (with
     * many parameters the old and new moments of a step, and each op's
     * result, cost more time and memory than the arithmetic); 16-bit ones
     * take the composed ops, which widen where a device lacks the dtype. */
    const bool in_place = st->a && st->b && (st->a->dtype == PT_F32 || st->a->dtype == PT_F64) &&
                          st->b->dtype == st->a->dtype && d->dtype == st->a->dtype;
    pt_status s;
    if (in_place) {
        pt_tensor *dd = pt_mul(d, d);
        if (!dd) return pt_last_status();
        s = pt__elementwise_into(fn_step, PT_OP_MUL_SCALAR, st->a, 1, &st->a, o->h.beta1);
        if (!s) s = pt_axpy_(st->a, 1.0 - o->h.beta1, d);
        if (!s) s = pt__elementwise_into(fn_step, PT_OP_MUL_SCALAR, st->b, 1, &st->b, o->h.beta2);
        if (!s) s = pt_axpy_(st->b, 1.0 - o->h.beta2, dd);
    } else {
        pt_tensor *m = pt_mul_scalar(d, 1.0 - o->h.beta1);
        pt_tensor *v = pt_mul_scalar(pt_mul(d, d), 1.0 - o->h.beta2);
        if (st->a) m = pt_add(pt_mul_scalar(st->a, o->h.beta1), m);
        if (st->b) v = pt_add(pt_mul_scalar(st->b, o->h.beta2), v);
        if (!m || !v) return pt_last_status();
        s = replace(&st->a, m);
        if (!s) s = replace(&st->b, v);
    }
    if (s) return s;
    pt_tensor *m = st->a, *v = st->b;
    const double scale_p[PT__STEP_PARAMS] = {o->h.beta2};
    lp[4] = o->h.beta1;
    /* p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps), as torch.optim.Adam;
     * a captured step takes both step-dependent scalars anew at each replay.
     * In place, the denominator and the update share one tensor. */
    pt_tensor *root = pt_sqrt(v);
    if (!root) return pt_last_status();
    if (capturing) pt__capture_step_scalar(st->steps, PT_OP_MUL_SCALAR, adam_denom_scale, scale_p);
    pt_tensor *update;
    if (in_place) {
        pt_tensor *both[2] = {m, root};
        s = pt__elementwise_into(fn_step, PT_OP_MUL_SCALAR, root, 1, &root, adam_denom_scale(scale_p, k));
        if (!s) s = pt__elementwise_into(fn_step, PT_OP_ADD_SCALAR, root, 1, &root, o->h.eps);
        if (!s) s = pt__elementwise_into(fn_step, PT_OP_DIV, root, 2, both, 0.0);
        if (s) return s;
        update = root;
    } else {
        pt_tensor *scaled = pt_mul_scalar(root, adam_denom_scale(scale_p, k));
        pt_tensor *denom = pt_add_scalar(scaled, o->h.eps);
        update = pt_div(m, denom);
        if (!update) return pt_last_status();
    }
    if (capturing) pt__capture_step_scalar(st->steps, PT_OP_AXPY, adam_alpha, lp);
    return pt_axpy_(p, adam_alpha(lp, k), update);
}

pt_status pt__optim_state_grow(pt_optimizer *o, int n, const char *fn) {
    if (n <= o->n) return PT_OK;
    pt__optim_state *grown = realloc(o->state, (size_t)n * sizeof *grown);
    if (!grown) return pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for optimizer state");
    memset(grown + o->n, 0, (size_t)(n - o->n) * sizeof *grown);
    o->state = grown;
    o->n = n;
    return PT_OK;
}

/* Updates parameter i of the module (entry ps[i]); nothing for a buffer,
 * a lazy parameter not made yet, or one without a gradient. The state is
 * per position, so stepping parameters one subset at a time is the same
 * computation as one full step. */
static pt_status step_one(pt_optimizer *o, const pt__param *ps, int i) {
    pt_tensor *p = *ps[i].slot;
    if (!p || ps[i].buffer || !p->grad || !p->grad->grad) return PT_OK;
    pt__optim_state *st = &o->state[i];
    if (!st->steps && !(st->steps = pt__step_cell_new()))
        return pt__error(PT_ERR_OUT_OF_MEMORY, "pt_optimizer_step", "out of host memory for optimizer state");
    pt_scope scope = pt_scope_begin();
    pt_status s = state_follow(st, p);
    if (!s) s = o->kind == PT__OPTIM_SGD ? sgd_update(o, st, p, p->grad->grad) : adam_update(o, st, p, p->grad->grad);
    if (!s && !pt__capture_device()) ++st->steps->steps; /* a captured step counts at replay */
    pt_scope_end(scope);
    return s;
}

pt_status pt_optimizer_step(pt_optimizer *o) {
    static const char fn[] = "pt_optimizer_step";
    if (!o) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "optimizer is NULL");
    pt__param *ps;
    int n = pt__module_params_alloc(o->module, &ps, fn);
    if (n < 0) return pt_last_status();
    pt_status s = pt__optim_state_grow(o, n, fn);
    pt__grad_pause();
    for (int i = 0; i < n && !s; ++i) s = step_one(o, ps, i);
    pt__grad_resume();
    free(ps);
    return s ? pt__error_as(fn) : PT_OK; /* a step's pt_axpy_ or pt_copy_ failure is the step's */
}

pt_status pt_optimizer_step_params(pt_optimizer *o, pt_tensor *const *params, int count) {
    static const char fn[] = "pt_optimizer_step_params";
    if (!o) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "optimizer is NULL");
    if (count < 0 || (count > 0 && !params))
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "%s (count %d): pass an array of count parameters",
                         count < 0 ? "count is negative" : "params is NULL", count);
    pt__param *ps;
    int n = pt__module_params_alloc(o->module, &ps, fn);
    if (n < 0) return pt_last_status();
    /* Positions first, all of them, so a bad entry changes nothing. */
    int *at = malloc((size_t)(count ? count : 1) * sizeof *at);
    pt_status s = at ? pt__optim_state_grow(o, n, fn) : pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    for (int k = 0; !s && k < count; ++k) {
        at[k] = -1;
        for (int i = 0; i < n && at[k] < 0; ++i)
            if (params[k] && *ps[i].slot == params[k]) at[k] = i;
        if (at[k] < 0)
            s = pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                          "params[%d] is %s: pass tensors from pt_module_parameters of the optimizer's module "
                          "(taken after its last pt_module_to or pt_load)",
                          k, params[k] ? "not a parameter of the optimizer's module" : "NULL");
        for (int j = 0; !s && j < k; ++j)
            if (at[j] == at[k])
                s = pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                              "params[%d] and params[%d] are the same parameter (%s): list each once, or it "
                              "would be updated twice",
                              j, k, ps[at[k]].name);
    }
    pt__grad_pause();
    for (int k = 0; k < count && !s; ++k) s = step_one(o, ps, at[k]);
    pt__grad_resume();
    free(at);
    free(ps);
    return s ? pt__error_as(fn) : PT_OK;
}
