/* Modules: linear (with a lazy input size), relu, sequential; forward,
 * moving between devices, and the named parameter list (the state dict). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_internal.h"

#define PT__NAME_CAP 192

typedef enum module_kind { MODULE_LINEAR, MODULE_RELU, MODULE_SEQUENTIAL } module_kind;

struct pt_module {
    module_kind kind;
    pt_module *parent;              /* the sequential that owns this module, or NULL */
    char prefix[PT__NAME_CAP];      /* "1.0." inside nested sequentials */
    /* linear */
    int64_t in_features;            /* 0 until a lazy linear has seen its input */
    int64_t out_features;
    pt_tensor *weight, *bias;       /* owned, unregistered; NULL while lazy */
    pt_device *device;              /* where a lazy linear creates its parameters (NULL: the input's) */
    char weight_name[PT__NAME_CAP], bias_name[PT__NAME_CAP];
    /* sequential */
    int n;
    pt_module **children;
};

/* ---- Construction ---- */

static pt_module *module_new(const char *fn, module_kind kind) {
    pt_module *m = calloc(1, sizeof *m);
    if (!m) {
        pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for a module");
        return NULL;
    }
    m->kind = kind;
    if (kind == MODULE_LINEAR) {
        snprintf(m->weight_name, sizeof m->weight_name, "weight");
        snprintf(m->bias_name, sizeof m->bias_name, "bias");
    }
    return m;
}

/* Sets m's name prefix and its descendants'. False when a name would not
 * fit (absurdly deep nesting). */
static bool set_prefix(pt_module *m, const char *prefix) {
    if (strlen(prefix) + 8 >= PT__NAME_CAP) return false;
    snprintf(m->prefix, sizeof m->prefix, "%s", prefix);
    if (m->kind == MODULE_LINEAR) {
        snprintf(m->weight_name, sizeof m->weight_name, "%sweight", prefix);
        snprintf(m->bias_name, sizeof m->bias_name, "%sbias", prefix);
    }
    for (int i = 0; i < m->n; ++i) {
        char child[PT__NAME_CAP + 16];
        snprintf(child, sizeof child, "%s%d.", prefix, i);
        if (!set_prefix(m->children[i], child)) return false;
    }
    return true;
}

/* Kaiming-uniform with a = sqrt(5), as torch.nn.Linear.reset_parameters:
 * both weight and bias ~ U(-1/sqrt(in), 1/sqrt(in)), weight drawn first. */
static pt_tensor *uniform_init(pt_device *d, pt_dtype t, int ndim, const int64_t *shape, double bound) {
    pt_tensor *u = pt_rand(d, t, ndim, shape);
    pt_tensor *centred = pt_add_scalar(u, -0.5);
    pt_tensor *scaled = pt_mul_scalar(centred, 2.0 * bound);
    pt_release(u);
    pt_release(centred);
    return pt__own(scaled);
}

static pt_status linear_create(const char *fn, pt_module *m, pt_device *d, pt_dtype t, int64_t in) {
    if (in < 1)
        return pt__error(PT_ERR_SHAPE, fn, "a linear layer needs at least one input feature, got %lld",
                         (long long)in);
    double bound = 1.0 / sqrt((double)in);
    int64_t wshape[2] = {m->out_features, in};
    pt_scope scope = pt_scope_begin();
    pt__grad_pause();
    pt_tensor *w = uniform_init(d, t, 2, wshape, bound);
    pt_tensor *b = w ? uniform_init(d, t, 1, &m->out_features, bound) : NULL;
    pt__grad_resume();
    pt_scope_end(scope);
    if (!w || !b || pt_set_requires_grad(w, true) || pt_set_requires_grad(b, true)) {
        pt__drop_owned(w);
        pt__drop_owned(b);
        return pt_last_status();
    }
    m->weight = w;
    m->bias = b;
    m->in_features = in;
    return PT_OK;
}

pt_module *pt_linear(int64_t out_features) {
    if (out_features < 1) {
        pt__error(PT_ERR_INVALID_ARGUMENT, "pt_linear", "out_features is %lld; it must be >= 1",
                  (long long)out_features);
        return NULL;
    }
    pt_module *m = module_new("pt_linear", MODULE_LINEAR);
    if (m) m->out_features = out_features;
    return m;
}

pt_module *pt_linear_sized(int64_t in_features, int64_t out_features) {
    static const char fn[] = "pt_linear_sized";
    if (in_features < 1 || out_features < 1) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "in_features %lld and out_features %lld must be >= 1",
                  (long long)in_features, (long long)out_features);
        return NULL;
    }
    pt_device *cpu = pt_cpu();
    if (!cpu) return NULL;
    pt_module *m = module_new(fn, MODULE_LINEAR);
    if (!m) return NULL;
    m->out_features = out_features;
    if (linear_create(fn, m, cpu, PT_F32, in_features)) {
        free(m);
        return NULL;
    }
    return m;
}

pt_module *pt_relu_module(void) { return module_new("pt_relu_module", MODULE_RELU); }

static void module_destroy(pt_module *m) {
    if (!m) return;
    for (int i = 0; i < m->n; ++i) module_destroy(m->children[i]);
    free(m->children);
    pt__drop_owned(m->weight);
    pt__drop_owned(m->bias);
    free(m);
}

pt_module *pt_sequential(int n, pt_module *const *modules) {
    static const char fn[] = "pt_sequential";
    bool ok = n >= 0 && (n == 0 || modules);
    if (!ok) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "n is %d and modules is %s", n, modules ? "set" : "NULL");
        return NULL;
    }
    int bad = -1;
    for (int i = 0; i < n && ok; ++i) {
        if (!modules[i]) {
            /* A constructor failed and already said why: keep its error. */
            if (pt_last_status() == PT_OK)
                pt__error(PT_ERR_INVALID_ARGUMENT, fn, "modules[%d] is NULL", i);
            ok = false;
        } else if (modules[i]->parent) {
            pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                      "modules[%d] already belongs to another sequential; a module has one owner", i);
            bad = i;
            ok = false;
        }
        for (int j = 0; j < i && ok; ++j)
            if (modules[j] == modules[i]) {
                pt__error(PT_ERR_INVALID_ARGUMENT, fn, "modules[%d] and modules[%d] are the same module", j, i);
                bad = i;
                ok = false;
            }
    }
    pt_module *m = ok ? module_new(fn, MODULE_SEQUENTIAL) : NULL;
    if (m && n > 0) {
        m->children = malloc((size_t)n * sizeof *m->children);
        if (!m->children) {
            pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for %d children", n);
            free(m);
            m = NULL;
        }
    }
    if (!m) {
        /* Ownership was promised: free what we were given (but not a module
         * another sequential owns, nor one listed twice). */
        for (int i = 0; i < n; ++i) {
            if (!modules[i] || modules[i]->parent || i == bad) continue;
            bool seen = false;
            for (int j = 0; j < i; ++j) seen = seen || modules[j] == modules[i];
            if (!seen) module_destroy(modules[i]);
        }
        return NULL;
    }
    m->n = n;
    for (int i = 0; i < n; ++i) {
        m->children[i] = modules[i];
        modules[i]->parent = m;
    }
    if (!set_prefix(m, "")) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "modules are nested too deeply for parameter names");
        module_destroy(m);
        return NULL;
    }
    return m;
}

void pt_module_free(pt_module *m) {
    if (!m) return;
    if (m->parent) {
        pt__error(PT_ERR_INVALID_ARGUMENT, "pt_module_free",
                  "this module belongs to a sequential; free the sequential instead");
        return;
    }
    module_destroy(m);
}

/* ---- Forward ---- */

static pt_tensor *linear_forward(pt_module *m, pt_tensor *x) {
    static const char fn[] = "pt_module_forward";
    if (!pt__grad_float(x->dtype)) {
        pt__error(PT_ERR_DTYPE, fn, "linear input is %s; it must be f32 or f64 (use pt_cast)",
                  pt_dtype_name(x->dtype));
        return NULL;
    }
    if (x->ndim < 1) {
        pt__error(PT_ERR_SHAPE, fn, "linear input is a 0-D tensor; it needs a feature dim");
        return NULL;
    }
    int64_t in = x->shape[x->ndim - 1];
    if (!m->weight) {
        pt_device *d = m->device ? m->device : pt_tensor_device(x);
        if (linear_create(fn, m, d, x->dtype, in)) return NULL;
    }
    char a[200], b[200];
    if (pt_tensor_device(x) != pt_tensor_device(m->weight)) {
        pt__error(PT_ERR_DEVICE_MISMATCH, fn,
                  "input %s is on another device than linear '%s' (%s); move the module with "
                  "pt_module_to() or the input with pt_to()",
                  pt_tensor_describe(x, a, sizeof a), m->weight_name,
                  pt_device_name(pt_tensor_device(m->weight)));
        return NULL;
    }
    if (in != m->in_features) {
        pt__error(PT_ERR_SHAPE, fn, "input %s has %lld features but linear '%s' expects %lld",
                  pt_tensor_describe(x, a, sizeof a), (long long)in, m->weight_name,
                  (long long)m->in_features);
        return NULL;
    }
    if (x->dtype != m->weight->dtype) {
        pt__error(PT_ERR_DTYPE, fn, "input %s but linear '%s' has %s parameters (%s)",
                  pt_tensor_describe(x, a, sizeof a), m->weight_name, pt_dtype_name(m->weight->dtype),
                  pt_tensor_describe(m->weight, b, sizeof b));
        return NULL;
    }
    pt_tensor *wt = pt_transpose(m->weight, 0, 1);
    pt_tensor *xw = pt_matmul(x, wt);
    pt_tensor *y = pt_add(xw, m->bias);
    pt_release(wt);
    pt_release(xw);
    return y;
}

pt_tensor *pt_module_forward(pt_module *m, pt_tensor *x) {
    if (!x) return NULL;
    if (!m) {
        pt__error(PT_ERR_INVALID_ARGUMENT, "pt_module_forward", "module is NULL");
        return NULL;
    }
    switch (m->kind) {
    case MODULE_LINEAR:
        return linear_forward(m, x);
    case MODULE_RELU:
        return pt_relu(x);
    case MODULE_SEQUENTIAL: {
        pt_tensor *cur = x;
        for (int i = 0; i < m->n && cur; ++i) {
            pt_tensor *next = pt_module_forward(m->children[i], cur);
            if (cur != x) pt_release(cur);
            cur = next;
        }
        /* An empty sequential is the identity: still a new reference. */
        return cur == x ? pt__ret(pt_retain(x)) : cur;
    }
    }
    pt__error(PT_ERR_INTERNAL, "pt_module_forward", "unknown module kind %d", (int)m->kind);
    return NULL;
}

/* ---- Parameters ---- */

static int collect(pt_module *m, pt__param *out, int cap, int at) {
    if (m->kind == MODULE_LINEAR) {
        for (int k = 0; k < 2; ++k, ++at) {
            if (at >= cap) continue;
            pt__param *p = &out[at];
            p->name = k == 0 ? m->weight_name : m->bias_name;
            p->slot = k == 0 ? &m->weight : &m->bias;
            p->owner = m;
            p->ndim = k == 0 ? 2 : 1;
            p->shape[0] = m->out_features;
            if (k == 0) p->shape[1] = m->in_features > 0 ? m->in_features : -1;
        }
    }
    for (int i = 0; i < m->n; ++i) at = collect(m->children[i], out, cap, at);
    return at;
}

int pt__module_params(pt_module *m, pt__param *out, int cap) { return collect(m, out, out ? cap : 0, 0); }

int pt__module_params_alloc(pt_module *m, pt__param **out, const char *fn) {
    *out = NULL;
    if (!m) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "module is NULL");
        return -1;
    }
    int n = pt__module_params(m, NULL, 0);
    *out = calloc(n > 0 ? (size_t)n : 1, sizeof **out);
    if (!*out) {
        pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory listing %d parameters", n);
        return -1;
    }
    return pt__module_params(m, *out, n);
}

void pt__module_install(const pt__param *p, pt_tensor *t, pt_tensor *grad) {
    pt__drop_owned(*p->slot);
    *p->slot = t;
    pt_set_requires_grad(t, true);
    if (t->grad) {
        pt__drop_owned(t->grad->grad);
        t->grad->grad = grad;
    } else {
        pt__drop_owned(grad);
    }
    if (p->slot == &p->owner->weight) p->owner->in_features = t->shape[1];
}

int pt_module_parameters(pt_module *m, const char **names, pt_tensor **tensors, int cap) {
    pt__param *ps;
    int n = pt__module_params_alloc(m, &ps, "pt_module_parameters");
    if (n < 0) return -1;
    for (int i = 0; i < n && i < cap; ++i) {
        if (names) names[i] = ps[i].name;
        if (tensors) tensors[i] = *ps[i].slot;
    }
    free(ps);
    return n;
}

pt_tensor *pt_module_parameter(pt_module *m, const char *name) {
    static const char fn[] = "pt_module_parameter";
    if (!name) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "name is NULL");
        return NULL;
    }
    pt__param *ps;
    int n = pt__module_params_alloc(m, &ps, fn);
    pt_tensor *found = NULL;
    bool known = false;
    for (int i = 0; i < n; ++i)
        if (strcmp(ps[i].name, name) == 0) {
            found = *ps[i].slot;
            known = true;
        }
    free(ps);
    if (n >= 0 && !known)
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "the module has no parameter \"%s\"", name);
    else if (known && !found)
        pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                  "parameter \"%s\" belongs to a lazy linear that has not run yet (run a forward pass)",
                  name);
    return found;
}

pt_status pt_module_zero_grad(pt_module *m) {
    pt__param *ps;
    int n = pt__module_params_alloc(m, &ps, "pt_module_zero_grad");
    if (n < 0) return pt_last_status();
    for (int i = 0; i < n; ++i)
        if (*ps[i].slot) pt_zero_grad(*ps[i].slot);
    free(ps);
    return PT_OK;
}

/* ---- Moving ---- */

static void set_device(pt_module *m, pt_device *d) {
    if (m->kind == MODULE_LINEAR) m->device = d;
    for (int i = 0; i < m->n; ++i) set_device(m->children[i], d);
}

pt_status pt_module_to(pt_module *m, pt_device *d) {
    static const char fn[] = "pt_module_to";
    if (!d) {
        if (pt_last_status() != PT_OK) return pt_last_status(); /* pt_device_get failed: keep its reason */
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "device is NULL");
    }
    pt__param *ps;
    int n = pt__module_params_alloc(m, &ps, fn);
    if (n < 0) return pt_last_status();
    pt_tensor **moved = calloc(2 * (size_t)(n > 0 ? n : 1), sizeof *moved);
    if (!moved) {
        free(ps);
        return pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    }
    pt_status s = PT_OK;
    pt_scope scope = pt_scope_begin();
    pt__grad_pause();
    /* Copy everything first, so a failure leaves the module as it was. */
    for (int i = 0; i < n && !s; ++i) {
        pt_tensor *p = *ps[i].slot;
        if (!p) continue;
        moved[2 * i] = pt__own(pt_to(p, d));
        if (!moved[2 * i]) s = pt_last_status();
        if (!s && p->grad && p->grad->grad) {
            moved[2 * i + 1] = pt__own(pt_to(p->grad->grad, d));
            if (!moved[2 * i + 1]) s = pt_last_status();
        }
    }
    pt__grad_resume();
    pt_scope_end(scope);
    for (int i = 0; i < n; ++i) {
        if (!moved[2 * i]) continue;
        if (s) {
            pt__drop_owned(moved[2 * i]);
            pt__drop_owned(moved[2 * i + 1]);
        } else {
            pt__module_install(&ps[i], moved[2 * i], moved[2 * i + 1]);
        }
    }
    if (!s) set_device(m, d);
    free(moved);
    free(ps);
    return s;
}
