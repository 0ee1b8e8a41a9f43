/* The tape: grad mode, the per-tensor autograd state, recording ops and
 * freeing the graph. This is the half of autograd that ops need; it knows
 * what each op saves (the op table, PT__GRAD_OPS) but not how any op is differentiated:
 * the backward walk (core/autograd/engine.c) and the rules
 * (core/autograd/rules.c) sit in the layer above. See tape.h for who owns
 * what. */
#include <stdlib.h>
#include <string.h>

#include "ops/ops_internal.h"

/* ---- What each op saves (the op table's saves column, PT__GRAD_OPS') ---- */

static const unsigned saves_of[] = {
#define PT__GRAD_KIND_SAVES(kind, name, family, arity, dtypes, result, grad, saves)              \
    PT__GRAD_IF_##grad([PT__G_##kind] = PT_OP_SAVES_##saves, )
#define PT__GRAD_OP_SAVES(NAME, SAVES) [PT__G_##NAME] = (SAVES),
    PT_OP_TABLE(PT__GRAD_KIND_SAVES)
    PT__GRAD_OPS(PT__GRAD_OP_SAVES)
#undef PT__GRAD_OP_SAVES
#undef PT__GRAD_KIND_SAVES
};

unsigned pt__grad_saves(pt__grad_op op) { return (unsigned)op < PT__G_COUNT ? saves_of[op] : 0; }

/* ---- Grad mode (thread-local) ---- */

static PT__HOT_TLS int user_no_grad_depth;
static PT__HOT_TLS int internal_no_grad_depth;

bool pt__grad_enabled(void) { return user_no_grad_depth == 0 && internal_no_grad_depth == 0; }
void pt__grad_pause(void) { ++internal_no_grad_depth; }
void pt__grad_resume(void) { --internal_no_grad_depth; }
void pt__grad_user_pause(void) { ++user_no_grad_depth; }

bool pt__grad_user_resume(void) {
    if (user_no_grad_depth == 0) return false;
    --user_no_grad_depth;
    return true;
}

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

pt_tensor *pt__grad_value_view(pt_tensor *x) {
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

/* The tensor layer frees a dying tensor's autograd state through its hook
 * (core/tensor/tensor.c); set when the library loads, before any tensor can
 * carry state. */
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

/* Whether the op's rule reads the value of input i (edges: the node's
 * inputs). */
static bool saves_input(unsigned saves, int i, const pt__grad_edge *edges) {
    if (i >= 8 || !(saves & PT__SAVES_INPUT(i))) return false;
    return !(saves & PT__SAVES_FOR_PARTNER) || edges[1 - i].needs_grad;
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
    if ((unsigned)op >= PT__G_COUNT) {
        pt__error(PT_ERR_INTERNAL, fn, "recorded op %d is not one of PT__GRAD_OPS", (int)op);
        return;
    }
    unsigned saves = saves_of[op];

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
        e->column_major = x->ndim == 2 && x->shape[0] > 1 && x->shape[1] > 1 && x->strides[0] == 1;
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
        if (inputs[i] && saves_input(saves, i, edges)) {
            edges[i].saved = pt__grad_value_view(inputs[i]);
            ok = ok && edges[i].saved;
        }
    }
    if (saves & PT__SAVES_OUTPUT) {
        node->saved_out = pt__grad_value_view(out);
        ok = ok && node->saved_out;
    }
    if (!ok) {
        node_destroy(node);
        pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory saving values for backward");
        return;
    }
    meta->node = node;
}
