/* libportable core — autograd internals shared by core/autograd*.c and the
 * nets layer (core/nn). Nothing here is exported.
 *
 * The tape is a graph of nodes, one per recorded op output, like PyTorch's
 * grad_fn graph:
 *   - a tensor's pt__grad_meta owns one reference to the node that made it
 *     (NULL for leaves) and, for leaves, the accumulated gradient;
 *   - a node owns references to the nodes of its inputs (edges), to the leaf
 *     tensors it sends gradients to, and to views of the values its backward
 *     rule needs (views share storage but carry no history, so the graph
 *     never forms a cycle through tensors);
 *   - pt_backward walks the nodes from the root, then frees every saved value
 *     and edge of the nodes it walked ("the graph is freed"); a node itself
 *     goes when the tensor that owns it dies.
 * Freeing cascades through edges with a worklist, not recursion, so a long
 * chain of ops cannot overflow the stack; the worklist and the walk's lists
 * are linked through the nodes, so neither can run out of memory. */
#ifndef PORTABLE_CORE_AUTOGRAD_INTERNAL_H
#define PORTABLE_CORE_AUTOGRAD_INTERNAL_H

#include "ops/tape.h"

/* One input of a recorded op. */
typedef struct pt__grad_edge {
    struct pt__grad_node *node; /* the input's node (retained), or NULL */
    pt_tensor *leaf;            /* the input if it is a leaf that requires grad (retained) */
    pt_tensor *saved;           /* a view of the input's value when the rule needs it */
    bool needs_grad;            /* node or leaf is set */
    pt_dtype dtype;
    int ndim;
    int64_t shape[PT_MAX_DIMS];
} pt__grad_edge;

typedef struct pt__grad_node {
    atomic_int refs;            /* the owning tensor's meta + consumers' edges + walks */
    pt__grad_op op;
    pt__grad_args args;
    bool freed;                 /* saved values and edges released by a backward */
    pt_tensor *saved_out;       /* a view of the output's value when the rule needs it */
    pt_dtype out_dtype;
    int out_ndim;
    int64_t out_shape[PT_MAX_DIMS];
    int n;
    pt__grad_edge *edges;       /* n entries */
    /* Scratch of one backward walk. */
    uint64_t walk;              /* id of the walk that last visited this node */
    int pending;                /* consumers in this walk that have not sent their gradient */
    pt_tensor *grad;            /* gradient of the output summed so far (owned) */
    struct pt__grad_node *walk_next; /* next node the walk reached */
    struct pt__grad_node *todo_next; /* next node on the walk's to-visit, then ready, stack;
                                        once dead, on the thread's list of nodes to free */
} pt__grad_node;

struct pt__grad_meta {
    bool requires_grad;         /* a leaf the user marked */
    pt__grad_node *node;        /* the op that made this tensor (retained), or NULL */
    pt_tensor *grad;            /* accumulated gradient of a leaf (owned), or NULL */
    /* pt_set_grad_ready_hook: called when a backward has sent this leaf its
     * last gradient. ready_walk/ready_pending are that walk's scratch: the
     * edges into this leaf that have not delivered yet. */
    pt_grad_ready_fn *ready_hook;
    void *ready_user;
    uint64_t ready_walk;
    int ready_pending;
};

/* ---- record.c ---- */

/* Whether x takes part in differentiation: a marked leaf or an op output
 * with history. */
bool pt__grad_tracked(const pt_tensor *x);
/* Whether the op kind is differentiable in dtype t (floating point). */
bool pt__grad_float(pt_dtype t);
/* Drops a reference to a node; the last one frees it and cascades. */
void pt__grad_node_unref(pt__grad_node *node);
/* Releases a node's saved values and edges (after backward). */
void pt__grad_node_free_saved(pt__grad_node *node);
/* x's meta, created if absent (NULL + PT_ERR_OUT_OF_MEMORY naming fn). */
struct pt__grad_meta *pt__grad_meta_of(pt_tensor *x, const char *fn);
/* Adds g into leaf's .grad (a fresh contiguous copy the first time). */
pt_status pt__grad_accumulate_leaf(pt_tensor *leaf, pt_tensor *g);

/* Takes a reference the library holds itself to x, a result just returned
 * by a public op: when x is registered in a scope, an extra unregistered
 * reference (the scope drops its own at its end), else x's own reference.
 * Callers run inside a scope they end themselves, so that registration
 * does not linger in a user's long-lived scope. NULL passes through. */
pt_tensor *pt__own(pt_tensor *x);

/* Drops a reference the library holds itself (taken with pt__own or
 * pt_retain: a node's edges and saved values, a .grad, a module's
 * parameters, optimizer state), never one a scope registered. All such
 * drops go through here so they can move to a scope-blind primitive of
 * tensor.c; today that is pt_release, which takes a scope registration off
 * only when every remaining reference is a scope's. NULL is fine. */
void pt__drop_owned(pt_tensor *x);

/* Grad mode of this thread without touching the error. */
bool pt__grad_enabled(void);
/* Grad mode off for library-internal work (nests with the user's). */
void pt__grad_pause(void);
void pt__grad_resume(void);

/* ---- rules.c: one row per op of PT__GRAD_OPS ---- */

/* Computes into out[i] the gradient of each input i that needs one, from g,
 * the gradient of node's output (see pt__grad_node_backward). */
typedef void pt__grad_backward_fn(pt__grad_node *node, pt_tensor *g, pt_tensor **out);

/* What a rule reads from the forward pass (bits of pt__grad_rule.saves):
 * recording keeps history-free views of exactly these values. */
#define PT__SAVES_INPUT(i) (1u << (i)) /* input i (i < 8) */
#define PT__SAVES_OUTPUT (1u << 8)
/* With two inputs: keep an input marked above only when the other one needs
 * a gradient (the product rules: y = x W^T with x plain data keeps x, not W). */
#define PT__SAVES_FOR_PARTNER (1u << 9)

typedef struct pt__grad_rule {
    const char *name;              /* "matmul", for messages */
    unsigned saves;                /* PT__SAVES_* bits */
    pt__grad_backward_fn *backward;
} pt__grad_rule;

/* op's row, or NULL + PT_ERR_INTERNAL when op has none (a table gap). */
const pt__grad_rule *pt__grad_rule_of(pt__grad_op op);

/* Computes the gradients of node's inputs from g (the gradient of its
 * output). out[i] gets a new reference for every edge that needs a gradient,
 * shaped and typed like that input, else NULL. Runs with grad mode off. On
 * failure returns the status (error set) and out[] holds nothing. */
pt_status pt__grad_node_backward(pt__grad_node *node, pt_tensor *g, pt_tensor **out);

/* ---- grad_shape.c ---- */

/* Sums g (broadcast result) down to (ndim, shape) and casts to t. New
 * reference, or NULL + error. */
pt_tensor *pt__grad_unbroadcast(pt_tensor *g, int ndim, const int64_t *shape, pt_dtype t);
/* keep = the input shape (ndim, in) with the dim a reduction removed kept as
 * 1 (dim PT_ALL: every dim). False + error (naming what) for a bad dim. */
bool pt__grad_keep_shape(const char *what, int ndim, const int64_t *in, int dim, int64_t *keep);
/* perm moves the last of nd axes (one_hot's class axis) to position d. */
void pt__grad_last_axis_to(int nd, int d, int *perm);

#endif
