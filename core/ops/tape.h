/* libportable core — the tape: how an op records itself for autograd.
 *
 * The recording half of autograd lives in this layer (tape.c): grad mode,
 * the per-tensor autograd state, the graph's nodes and what each op saves
 * for its backward pass (the op table's saves column). Ops call
 * pt__grad_wanted and pt__grad_record and never need the autograd layer
 * above; that layer walks the graph (core/autograd/engine.c) and holds one
 * backward rule per op listed here (core/autograd/rules.c). A new
 * differentiable kind says what it saves in its op table row and adds its
 * rule there. */
#ifndef PORTABLE_CORE_TAPE_H
#define PORTABLE_CORE_TAPE_H

#include "portable/ops.h"
#include "tensor/tensor_internal.h"

/* What a backward rule reads from the forward pass (the saves column of the
 * op table, and the SAVES column below): recording keeps history-free views
 * of exactly these values. */
#define PT__SAVES_INPUT(i) PT_OP_SAVES_IN(i) /* input i (i < 8) */
#define PT__SAVES_OUTPUT PT_OP_SAVES_OUTPUT
/* With two inputs: keep an input marked above only when the other one needs
 * a gradient (the product rules: y = x W^T with x plain data keeps x, not W). */
#define PT__SAVES_FOR_PARTNER PT_OP_SAVES_FOR_PARTNER

/* The differentiable ops: first every kind of the op table whose grad
 * column is 1, saving what its saves column says (a new differentiable kind
 * needs nothing here), then PT__GRAD_OPS: the ops made of views or of
 * several kinds, as (NAME, SAVES). How each is differentiated is its row in
 * core/autograd/rules.c (a missing row fails the build or, for a gap in the
 * middle, every backward through that library at run time). */
#define PT__IN(i) PT__SAVES_INPUT(i)
#define PT__OUT PT__SAVES_OUTPUT
#define PT__GRAD_OPS(X)                                                                            \
    X(NORM, PT__IN(0) | PT__OUT)                                                                   \
    X(RESHAPE, 0)                                                                                  \
    X(TRANSPOSE, 0)                                                                                \
    X(PERMUTE, 0)                                                                                  \
    X(NARROW, 0)                                                                                   \
    X(EXPAND, 0)                                                                                   \
    X(CONTIGUOUS, 0)                                                                               \
    X(CAST, 0)                                                                                     \
    X(CAT, 0)                                                                                      \
    X(STACK, 0)                                                                                    \
    X(CROSS_ENTROPY, PT__IN(1) | PT__IN(2))

/* For expanding the op table's rows of differentiable kinds only:
 * PT__GRAD_IF_##grad(...) keeps its arguments where grad is 1. */
#define PT__GRAD_IF_0(...)
#define PT__GRAD_IF_1(...) __VA_ARGS__

/* Ops call pt__grad_record with one of these after computing out when
 * pt__grad_wanted says an input needs a gradient. */
typedef enum pt__grad_op {
#define PT__GRAD_KIND_ENUM(kind, name, family, arity, dtypes, result, grad, saves)               \
    PT__GRAD_IF_##grad(PT__G_##kind, )
#define PT__GRAD_OP_ENUM(NAME, SAVES) PT__G_##NAME,
    PT_OP_TABLE(PT__GRAD_KIND_ENUM)
    PT__GRAD_OPS(PT__GRAD_OP_ENUM)
#undef PT__GRAD_OP_ENUM
#undef PT__GRAD_KIND_ENUM
    PT__G_COUNT
} pt__grad_op;

typedef struct pt__grad_args {
    int dim;                     /* reductions (PT_ALL too), softmax, transpose d0, cat/stack, gather, narrow */
    int dim2;                    /* transpose d1 */
    bool keepdim;
    double scalar, scalar2;      /* *_SCALAR; clamp's lo, hi */
    int64_t start, length;       /* narrow */
    int n_ints;
    int ints[PT_MAX_DIMS];       /* permute perm, norm_dims dims */
} pt__grad_args;

/* What the backward rule of op reads from the forward pass (PT__SAVES_*). */
unsigned pt__grad_saves(pt__grad_op op);

/* ---- The graph ----
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

/* One input of a recorded op. */
typedef struct pt__grad_edge {
    struct pt__grad_node *node; /* the input's node (retained), or NULL */
    pt_tensor *leaf;            /* the input if it is a leaf that requires grad (retained) */
    pt_tensor *saved;           /* a view of the input's value when the rule needs it */
    bool needs_grad;            /* node or leaf is set */
    pt_dtype dtype;
    int ndim;
    int64_t shape[PT_MAX_DIMS];
    bool column_major;          /* a 2-D input laid out column-major (a transposed view, as
                                   a linear layer's weight^T): a product's rule makes its
                                   gradient in that layout, so the weight gets it contiguous */
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
    /* Scratch of one backward walk (core/autograd/engine.c). */
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
    pt_status (*ready_hook)(pt_tensor *leaf, void *user); /* a pt_grad_ready_fn (autograd.h) */
    void *ready_user;
    uint64_t ready_walk;
    int ready_pending;
};

/* ---- Grad mode (thread-local) ----
 * The user's pt_no_grad_begin/end and the library's own pauses (inside
 * backward, optimizers, module set-up) count separately so an unbalanced
 * pt_no_grad_end can be reported without confusing the two. */

/* Grad mode of this thread without touching the error. */
bool pt__grad_enabled(void);
/* Grad mode off for library-internal work (nests with the user's). */
void pt__grad_pause(void);
void pt__grad_resume(void);
/* The user's pt_no_grad_begin; pt__grad_user_resume is false (and changes
 * nothing) when no user pause is open on this thread. */
void pt__grad_user_pause(void);
bool pt__grad_user_resume(void);

/* ---- Recording and freeing ---- */

/* Whether x takes part in differentiation: a marked leaf or an op output
 * with history. */
bool pt__grad_tracked(const pt_tensor *x);
/* Whether the op kind is differentiable in dtype t (floating point). */
bool pt__grad_float(pt_dtype t);
/* x's meta, created if absent (NULL + PT_ERR_OUT_OF_MEMORY naming fn). */
struct pt__grad_meta *pt__grad_meta_of(pt_tensor *x, const char *fn);
/* A history-free view of x's value: shares storage, owns one reference to
 * it, registered in no scope (NULL when out of memory, no error set). */
pt_tensor *pt__grad_value_view(pt_tensor *x);
/* Drops a reference to a node; the last one frees it and cascades. */
void pt__grad_node_unref(pt__grad_node *node);
/* Releases a node's saved values and edges (after backward). */
void pt__grad_node_free_saved(pt__grad_node *node);

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

/* True when grad mode is on and any of the n inputs requires grad. */
bool pt__grad_wanted(int n, pt_tensor *const *inputs);
/* Records out = op(inputs, args) on the tape. Inputs that do not require grad
 * (an index, a condition) are passed too, in the op's argument order. */
void pt__grad_record(pt_tensor *out, pt__grad_op op, int n, pt_tensor *const *inputs,
                     const pt__grad_args *args);

/* The window of an im2col/col2im record (args.ints: stride, padding,
 * dilation, each h then w) with kernel kh x kw. window.c */
void pt__window_from_args(const pt__grad_args *a, int64_t kh, int64_t kw, pt_window2d *w);

/* Shared by every op without extra autograd arguments. */
extern const pt__grad_args pt__no_grad_args;

#endif
