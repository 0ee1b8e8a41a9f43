/* Modules: the machinery every layer kind shares — naming, listing and
 * installing parameters, forward dispatch, moving between devices, freeing.
 * Each layer kind is its own file (linear.c, relu_module.c, sequential.c)
 * behind the small vtable of module_kind.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/module_kind.h"

/* ---- Building and freeing ---- */

pt_module *pt__module_new(const char *fn, const pt__module_kind *kind, size_t size) {
    pt_module *m = calloc(1, size);
    if (!m) {
        pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for a module");
        return NULL;
    }
    m->kind = kind;
    return m;
}

pt__module_param *pt__module_add_param(pt_module *m, const char *local_name, int ndim, const int64_t *shape) {
    if (m->n_params == PT__MODULE_MAX_PARAMS) {
        pt__error(PT_ERR_INTERNAL, "pt__module_add_param",
                  "a %s has more than %d parameters (raise PT__MODULE_MAX_PARAMS)", m->kind->name,
                  PT__MODULE_MAX_PARAMS);
        return NULL;
    }
    pt__module_param *p = &m->params[m->n_params++];
    p->local_name = local_name;
    snprintf(p->name, sizeof p->name, "%s%s", m->prefix, local_name);
    p->ndim = ndim;
    if (ndim > 0) memcpy(p->shape, shape, (size_t)ndim * sizeof *shape); /* 0-D: shape may be NULL */
    return p;
}

pt__module_param *pt__module_add_buffer(pt_module *m, const char *local_name, int ndim, const int64_t *shape,
                                        bool count) {
    pt__module_param *p = pt__module_add_param(m, local_name, ndim, shape);
    if (p) {
        p->buffer = true;
        p->count = count;
    }
    return p;
}

bool pt__module_set_prefix(pt_module *m, const char *prefix) {
    if (strlen(prefix) + 8 >= PT__NAME_CAP) return false;
    snprintf(m->prefix, sizeof m->prefix, "%s", prefix);
    for (int i = 0; i < m->n_params; ++i) {
        pt__module_param *p = &m->params[i];
        if (strlen(prefix) + strlen(p->local_name) >= sizeof p->name) return false;
        snprintf(p->name, sizeof p->name, "%s%s", prefix, p->local_name);
    }
    for (int i = 0; i < m->n_children; ++i) {
        char child[PT__NAME_CAP + PT__CHILD_NAME_CAP + 16];
        const char *name = m->children[i]->child_name;
        if (name[0])
            snprintf(child, sizeof child, "%s%s.", prefix, name);
        else
            snprintf(child, sizeof child, "%s%d.", prefix, i);
        if (!pt__module_set_prefix(m->children[i], child)) return false;
    }
    return true;
}

pt_status pt__module_add_child(const char *fn, pt_module *parent, pt_module *child, const char *name) {
    if (name && strlen(name) >= sizeof child->child_name) {
        pt__module_destroy(child);
        return pt__error(PT_ERR_INTERNAL, fn, "child name \"%s\" is longer than %d characters", name,
                         PT__CHILD_NAME_CAP - 1);
    }
    pt_module **grown = realloc(parent->children, (size_t)(parent->n_children + 1) * sizeof *grown);
    if (!grown) {
        pt__module_destroy(child);
        return pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for a child module");
    }
    parent->children = grown;
    parent->children[parent->n_children++] = child;
    child->parent = parent;
    snprintf(child->child_name, sizeof child->child_name, "%s", name ? name : "");
    char prefix[PT__NAME_CAP];
    memcpy(prefix, parent->prefix, sizeof prefix); /* set_prefix writes parent->prefix */
    if (!pt__module_set_prefix(parent, prefix))
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "modules are nested too deeply for parameter names");
    return PT_OK;
}

pt_status pt__module_init_param(const char *fn, pt_module *m, int i, pt__init how, double a) {
    pt__module_param *p = &m->params[i];
    pt_device *d = p->value ? pt_tensor_device(p->value) : pt_cpu();
    const pt_dtype t = p->value ? pt_tensor_dtype(p->value) : PT_F32;
    const int nd = p->value ? p->value->ndim : p->ndim; /* a sized linear declared [out, -1] */
    const int64_t *shape = p->value ? p->value->shape : p->shape;
    pt_scope scope = pt_scope_begin();
    pt__grad_pause();
    pt_tensor *fresh = NULL;
    if (how == PT__INIT_NORMAL)
        fresh = pt_mul_scalar(pt_randn(d, t, nd, shape), a);
    else if (how == PT__INIT_UNIFORM) /* (u - 1/2) 2a */
        fresh = pt_mul_scalar(pt_add_scalar(pt_rand(d, t, nd, shape), -0.5), 2 * a);
    else
        fresh = pt_full(d, t, nd, shape, a);
    fresh = pt__own(fresh);
    pt__grad_resume();
    pt_scope_end(scope);
    if (!fresh || (!p->buffer && pt_set_requires_grad(fresh, true))) {
        pt__drop_owned(fresh);
        return pt__error_as(fn);
    }
    pt__drop_owned(p->value);
    p->value = fresh;
    return PT_OK;
}

void pt__module_destroy(pt_module *m) {
    if (!m) return;
    for (int i = 0; i < m->n_children; ++i) pt__module_destroy(m->children[i]);
    free(m->children);
    for (int i = 0; i < m->n_params; ++i) pt__drop_owned(m->params[i].value);
    if (m->kind->release) m->kind->release(m);
    free(m);
}

void pt_module_free(pt_module *m) {
    if (!m) return;
    if (m->parent) {
        pt__error(PT_ERR_INVALID_ARGUMENT, "pt_module_free",
                  "this module belongs to a sequential; free the sequential instead");
        return;
    }
    pt__module_destroy(m);
}

/* ---- Forward ---- */

pt_tensor *pt_module_forward(pt_module *m, pt_tensor *x) {
    if (!x) return pt__null_input("pt_module_forward", "x");
    if (!m) {
        pt__error(PT_ERR_INVALID_ARGUMENT, "pt_module_forward", "module is NULL");
        return NULL;
    }
    /* a layer runs other public functions (pt_zeros for lazy parameters,
     * pt_f_conv2d, ...): their failures are reported as the forward's */
    pt_tensor *y = m->kind->forward(m, x);
    if (!y) pt__error_as("pt_module_forward");
    return y;
}

/* ---- Parameters ---- */

/* A parameter's expected shape is its tensor's once it exists (a lazy
 * layer's input size is known then), else what the layer declared. */
static int collect(pt_module *m, pt__param *out, int cap, int at) {
    for (int k = 0; k < m->n_params; ++k, ++at) {
        if (at >= cap) continue;
        pt__module_param *mp = &m->params[k];
        pt__param *p = &out[at];
        p->name = mp->name;
        p->slot = &mp->value;
        p->owner = m;
        p->buffer = mp->buffer;
        p->count = mp->count;
        p->ndim = mp->value ? mp->value->ndim : mp->ndim;
        memcpy(p->shape, mp->value ? mp->value->shape : mp->shape, (size_t)p->ndim * sizeof *p->shape);
    }
    for (int i = 0; i < m->n_children; ++i) at = collect(m->children[i], out, cap, at);
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
    if (p->buffer) {
        pt__drop_owned(grad);
        return;
    }
    pt_set_requires_grad(t, true);
    if (t->grad) {
        pt__drop_owned(t->grad->grad);
        t->grad->grad = grad;
    } else {
        pt__drop_owned(grad);
    }
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
    const pt__param *known = NULL;
    for (int i = 0; i < n; ++i)
        if (strcmp(ps[i].name, name) == 0) known = &ps[i];
    pt_tensor *found = known ? *known->slot : NULL;
    if (n >= 0 && !known)
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "the module has no parameter \"%s\"", name);
    else if (known && !found)
        pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                  "parameter \"%s\" belongs to a lazy %s that has not run yet (run a forward pass)", name,
                  known->owner->kind->name);
    free(ps);
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

/* ---- Train / eval ---- */

pt_status pt_module_train(pt_module *m, bool training) {
    if (!m) return pt__error(PT_ERR_INVALID_ARGUMENT, "pt_module_train", "module is NULL");
    m->eval = !training;
    for (int i = 0; i < m->n_children; ++i) pt_module_train(m->children[i], training);
    return PT_OK;
}

bool pt_module_is_training(const pt_module *m) { return m && !m->eval; }

/* ---- Moving ---- */

static void set_device(pt_module *m, pt_device *d) {
    m->device = d;
    for (int i = 0; i < m->n_children; ++i) set_device(m->children[i], d);
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
    return s ? pt__error_as(fn) : PT_OK; /* pt_to's failure is the move's */
}

bool pt__layer_input_ok(const char *fn, const pt_module *m, const pt_tensor *x, int min_ndim, int max_ndim,
                        const char *what, const char *form) {
    const int nd = pt_tensor_ndim(x);
    if (nd >= min_ndim && nd <= max_ndim && pt__grad_float(pt_tensor_dtype(x))) return true;
    char a[200];
    pt__error(PT_ERR_SHAPE, fn, "%s '%s' takes f32/f64 %s input, got %s", what, m->params[0].name, form,
              pt_tensor_describe(x, a, sizeof a));
    return false;
}

pt_device *pt__layer_device(const pt_module *m, const pt_tensor *x) {
    return m->device ? m->device : pt_tensor_device(x);
}
