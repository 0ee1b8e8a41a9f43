/* Autograd: grad mode, the per-tensor metadata, recording ops on the tape and
 * freeing it. The backward walk lives in engine.c and each op's row (what it
 * saves, its derivative) in rules.c. See autograd_internal.h for who owns
 * what. */
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd_internal.h"

/* ---- Grad mode (thread-local) ----
 * The user's pt_no_grad_begin/end and the library's own pauses (inside
 * backward, optimizers, module set-up) count separately so an unbalanced
 * pt_no_grad_end can be reported without confusing the two. */

static PT__HOT_TLS int user_no_grad_depth;
static PT__HOT_TLS int internal_no_grad_depth;

bool pt__grad_enabled(void) { return user_no_grad_depth == 0 && internal_no_grad_depth == 0; }
void pt__grad_pause(void) { ++internal_no_grad_depth; }
void pt__grad_resume(void) { --internal_no_grad_depth; }

void pt_no_grad_begin(void) { ++user_no_grad_depth; }

pt_status pt_no_grad_end(void) {
    if (user_no_grad_depth == 0)
        return pt__error(PT_ERR_INVALID_ARGUMENT, "pt_no_grad_end",
                         "no matching pt_no_grad_begin on this thread (calls must pair up)");
    --user_no_grad_depth;
    return PT_OK;
}

bool pt_grad_enabled(void) { return pt__grad_enabled(); }

/* ---- Small helpers ---- */

bool pt__grad_float(pt_dtype t) { return pt_dtype_is_float(t); }

bool pt__grad_tracked(const pt_tensor *x) {
    return x && x->grad && (x->grad->requires_grad || x->grad->node);
}

void pt__drop_owned(pt_tensor *x) { pt__drop(x); }

pt_tensor *pt__own(pt_tensor *x) {
    /* A registered reference stays the scope's (it drops it at its end);
     * the library takes its own, unregistered one beside it. */
    if (x && x->scope_regs > 0) pt_retain(x);
    return x;
}

struct pt__grad_meta *pt__grad_meta_of(pt_tensor *x, const char *fn) {
    if (x->grad) return x->grad;
    struct pt__grad_meta *m = calloc(1, sizeof *m);
    if (!m) {
        pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for autograd state");
        return NULL;
    }
    x->grad = m;
    return m;
}

/* A history-free view of x's value: shares storage, owns one reference to
 * it, registered in no scope. */
static pt_tensor *value_view(pt_tensor *x) {
    return pt__tensor_view(x, x->ndim, x->shape, x->strides, x->offset);
}

/* ---- Freeing nodes ----
 * Dropping the last reference to a node releases its edges, which may drop
 * the last reference to the nodes they point at, and so on down the whole
 * graph. A thread-local worklist, threaded through the dying nodes' todo_next
 * (a node no walk holds is on no walk's list), turns that cascade into a
 * loop that needs no memory of its own. */

static _Thread_local pt__grad_node *doomed;
static _Thread_local bool draining;

void pt__grad_node_free_saved(pt__grad_node *node) {
    if (node->freed) return;
    node->freed = true;
    pt__drop_owned(node->saved_out);
    node->saved_out = NULL;
    for (int i = 0; i < node->n; ++i) {
        pt__grad_edge *e = &node->edges[i];
        pt__drop_owned(e->saved);
        pt__drop_owned(e->leaf);
        e->saved = e->leaf = NULL;
        if (e->node) pt__grad_node_unref(e->node);
        e->node = NULL;
    }
}

static void node_destroy(pt__grad_node *node) {
    pt__grad_node_free_saved(node);
    pt__drop_owned(node->grad);
    free(node->edges);
    free(node);
}

void pt__grad_node_unref(pt__grad_node *node) {
    if (!node || atomic_fetch_sub(&node->refs, 1) != 1) return;
    node->todo_next = doomed;
    doomed = node;
    if (draining) return;
    draining = true;
    while (doomed) {
        pt__grad_node *next = doomed;
        doomed = next->todo_next;
        node_destroy(next);
    }
    draining = false;
}

static void grad_release(pt_tensor *x) {
    struct pt__grad_meta *m = x->grad;
    if (!m) return;
    x->grad = NULL;
    pt__drop_owned(m->grad);
    pt__grad_node_unref(m->node);
    free(m);
}

/* The tensor layer frees a dying tensor's autograd state through this hook;
 * set when the library loads, before any tensor can carry state. */
void (*pt__grad_release_hook)(pt_tensor *x) = NULL;

__attribute__((constructor)) static void install_release_hook(void) {
    pt__grad_release_hook = grad_release;
}

/* ---- Recording ---- */

bool pt__grad_wanted(int n, pt_tensor *const *inputs) {
    if (!pt__grad_enabled()) return false;
    for (int i = 0; i < n; ++i)
        if (pt__grad_tracked(inputs[i])) return true;
    return false;
}

/* Whether rule reads the value of input i (edges: the node's inputs). */
static bool saves_input(const pt__grad_rule *rule, int i, const pt__grad_edge *edges) {
    if (i >= 8 || !(rule->saves & PT__SAVES_INPUT(i))) return false;
    return !(rule->saves & PT__SAVES_FOR_PARTNER) || edges[1 - i].needs_grad;
}

void pt__grad_record(pt_tensor *out, pt__grad_op op, int n, pt_tensor *const *inputs,
                     const pt__grad_args *args) {
    static const char fn[] = "autograd";
    if (!out || n <= 0 || !pt__grad_wanted(n, inputs)) return;
    /* Integer results carry no gradient (argmax-like paths stop here). */
    if (!pt__grad_float(out->dtype)) return;
    /* Ops that hand back an input unchanged (pt_contiguous of a contiguous
     * tensor) already have the input's history. */
    for (int i = 0; i < n; ++i)
        if (inputs[i] == out) return;
    if (pt__grad_tracked(out)) return;
    const pt__grad_rule *rule = pt__grad_rule_of(op);
    if (!rule) return;

    pt__grad_node *node = calloc(1, sizeof *node);
    pt__grad_edge *edges = node ? calloc((size_t)n, sizeof *edges) : NULL;
    struct pt__grad_meta *meta = edges ? pt__grad_meta_of(out, fn) : NULL;
    if (!meta) {
        free(edges);
        free(node);
        if (pt_last_status() != PT_ERR_OUT_OF_MEMORY)
            pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory recording an op");
        return;
    }
    atomic_init(&node->refs, 1);
    node->op = op;
    if (args) node->args = *args;
    node->out_dtype = out->dtype;
    node->out_ndim = out->ndim;
    memcpy(node->out_shape, out->shape, sizeof node->out_shape);
    node->n = n;
    node->edges = edges;

    for (int i = 0; i < n; ++i) {
        pt__grad_edge *e = &edges[i];
        pt_tensor *x = inputs[i];
        if (!x) continue;
        e->dtype = x->dtype;
        e->ndim = x->ndim;
        memcpy(e->shape, x->shape, sizeof e->shape);
        if (!pt__grad_tracked(x) || !pt__grad_float(x->dtype)) continue;
        e->needs_grad = true;
        if (x->grad->node) {
            e->node = x->grad->node;
            atomic_fetch_add(&e->node->refs, 1);
        } else {
            e->leaf = pt_retain(x);
        }
    }
    bool ok = true;
    for (int i = 0; i < n; ++i) {
        if (inputs[i] && saves_input(rule, i, edges)) {
            edges[i].saved = value_view(inputs[i]);
            ok = ok && edges[i].saved;
        }
    }
    if (rule->saves & PT__SAVES_OUTPUT) {
        node->saved_out = value_view(out);
        ok = ok && node->saved_out;
    }
    if (!ok) {
        node_destroy(node);
        pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory saving values for backward");
        return;
    }
    meta->node = node;
}

/* ---- Leaf gradients ---- */

pt_status pt__grad_accumulate_leaf(pt_tensor *leaf, pt_tensor *g) {
    struct pt__grad_meta *m = leaf->grad;
    if (!m) return pt__error(PT_ERR_INTERNAL, "pt_backward", "leaf without autograd state");
    if (m->grad) return pt_axpy_(m->grad, 1.0, g);
    /* A fresh contiguous tensor: g may be a broadcast view or shared with
     * another input's gradient, and later accumulations write in place. */
    pt_tensor *copy = pt_empty(pt_tensor_device(leaf), leaf->dtype, leaf->ndim, leaf->shape);
    if (!copy) return pt_last_status();
    pt_status s = pt_copy_(copy, g);
    if (s) {
        pt_release(copy);
        return s;
    }
    m->grad = pt__own(copy);
    return PT_OK;
}

/* ---- Public API ---- */

pt_status pt_set_requires_grad(pt_tensor *x, bool requires) {
    static const char fn[] = "pt_set_requires_grad";
    if (!x) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "x is NULL; pass a tensor");
    if (x->grad && x->grad->node)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "the tensor is the result of an op, not a leaf; its requires-grad follows "
                         "its inputs (use pt_detach() for a leaf copy of its value)");
    if (!requires) {
        if (x->grad) x->grad->requires_grad = false;
        return PT_OK;
    }
    if (!pt__grad_float(x->dtype))
        return pt__error(PT_ERR_DTYPE, fn,
                         "only f32/f64 tensors can require gradients; this one is %s (cast it first)",
                         pt_dtype_name(x->dtype));
    struct pt__grad_meta *m = pt__grad_meta_of(x, fn);
    if (!m) return PT_ERR_OUT_OF_MEMORY;
    m->requires_grad = true;
    return PT_OK;
}

pt_status pt_set_grad_ready_hook(pt_tensor *leaf, pt_grad_ready_fn *fn, void *user) {
    static const char fn_name[] = "pt_set_grad_ready_hook";
    if (!leaf) return pt__error(PT_ERR_INVALID_ARGUMENT, fn_name, "leaf is NULL; pass a tensor");
    if (leaf->grad && leaf->grad->node)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn_name,
                         "the tensor is the result of an op, not a leaf: only leaves accumulate a .grad");
    if (!fn && !leaf->grad) return PT_OK;
    struct pt__grad_meta *m = pt__grad_meta_of(leaf, fn_name);
    if (!m) return PT_ERR_OUT_OF_MEMORY;
    m->ready_hook = fn;
    m->ready_user = fn ? user : NULL;
    m->ready_walk = 0;
    return PT_OK;
}

bool pt_requires_grad(const pt_tensor *x) { return pt__grad_tracked(x); }

pt_tensor *pt_grad(pt_tensor *x) {
    if (!x || !x->grad || !x->grad->grad) return NULL;
    return pt__ret(pt_retain(x->grad->grad));
}

pt_status pt_zero_grad(pt_tensor *x) {
    if (!x) return pt__error(PT_ERR_INVALID_ARGUMENT, "pt_zero_grad", "x is NULL; pass a tensor");
    if (x->grad && x->grad->grad) {
        pt__drop_owned(x->grad->grad);
        x->grad->grad = NULL;
    }
    return PT_OK;
}

pt_tensor *pt_detach(pt_tensor *x) {
    if (!x) return pt__null_input("pt_detach", "x");
    pt_tensor *v = value_view(x);
    if (!v) {
        pt__error(PT_ERR_OUT_OF_MEMORY, "pt_detach", "out of host memory for a tensor handle");
        return NULL;
    }
    return pt__ret(v);
}
