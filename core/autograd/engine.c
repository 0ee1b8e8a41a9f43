/* pt_backward: walks the tape from the loss, sends each node's output
 * gradient through its derivative (its row in rules.c) to its inputs, sums
 * what arrives at each node, accumulates into leaves' .grad, and frees the
 * graph it walked.
 *
 * Order: a node runs only once every consumer of its output in this walk has
 * sent its share (Kahn's algorithm on consumer counts), so each node's
 * derivative runs exactly once on the complete gradient, like PyTorch. All
 * gradient arithmetic is done with public ops on the tensors' device, with
 * grad mode off. */
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd_internal.h"
#include "runtime/trace_internal.h"

static atomic_uint_fast64_t walk_counter;

/* The walk's lists are threaded through the nodes themselves (each node
 * joins each list at most once per walk), so walking needs no memory of its
 * own and cannot run out of it. */

/* The nodes a walk reached, in the order it reached them. */
typedef struct walked {
    pt__grad_node *first, *last;
} walked;

static void push_todo(pt__grad_node **todo, pt__grad_node *node) {
    node->todo_next = *todo;
    *todo = node;
}

static pt__grad_node *pop_todo(pt__grad_node **todo) {
    pt__grad_node *node = *todo;
    *todo = node->todo_next;
    node->todo_next = NULL;
    return node;
}

/* First visit of node in this walk: reset its scratch, retain it once for
 * the walk and list it. */
static void reach(pt__grad_node *node, uint64_t walk, walked *all, pt__grad_node **todo) {
    node->walk = walk;
    node->pending = 0;
    node->grad = NULL;
    node->walk_next = NULL;
    atomic_fetch_add(&node->refs, 1);
    if (all->last) all->last->walk_next = node;
    else all->first = node;
    all->last = node;
    push_todo(todo, node);
}

/* Drops the walk's references; a node may die here, so the link is read
 * first. */
static void release_walked(walked *all) {
    pt__grad_node *next;
    for (pt__grad_node *node = all->first; node; node = next) {
        next = node->walk_next;
        pt__grad_node_unref(node);
    }
}

/* Counts, for a leaf with a gradient-ready hook, the edges of this walk
 * that will send it a gradient, so run_node knows which one is the last. */
static void count_leaf_edge(const pt__grad_edge *e, uint64_t walk) {
    if (!e->needs_grad || e->node || !e->leaf) return;
    struct pt__grad_meta *m = e->leaf->grad;
    if (!m || !m->ready_hook) return;
    if (m->ready_walk != walk) {
        m->ready_walk = walk;
        m->ready_pending = 0;
    }
    ++m->ready_pending;
}

/* Adds g into leaf's .grad and, when that was the last gradient this walk
 * sends it, runs its gradient-ready hook. */
static pt_status deliver_to_leaf(pt_tensor *leaf, pt_tensor *g, bool g_private, const pt_tensor *dying,
                                 uint64_t walk) {
    pt_status s = pt__grad_accumulate_leaf(leaf, g, g_private, dying);
    struct pt__grad_meta *m = leaf->grad;
    if (s || !m->ready_hook || m->ready_walk != walk || --m->ready_pending != 0) return s;
    return m->ready_hook(leaf, m->ready_user);
}

/* Collects every node reachable from root into *all and counts, for each,
 * the edges that point at it from nodes of this walk. */
static pt_status collect(pt__grad_node *root, uint64_t walk, walked *all) {
    pt__grad_node *todo = NULL;
    reach(root, walk, all, &todo);
    while (todo) {
        pt__grad_node *node = pop_todo(&todo);
        if (node->freed) {
            while (todo) pop_todo(&todo);
            return pt__error(PT_ERR_INVALID_ARGUMENT, "pt_backward",
                             "part of this graph was already freed by an earlier pt_backward (each "
                             "forward pass can be differentiated once; run the forward pass again)");
        }
        for (int i = 0; i < node->n; ++i) {
            count_leaf_edge(&node->edges[i], walk);
            pt__grad_node *in = node->edges[i].node;
            if (!in) continue;
            if (in->walk != walk) reach(in, walk, all, &todo);
            ++in->pending;
        }
    }
    return PT_OK;
}

/* Adds g (a gradient of node's output) into node->grad. */
static pt_status add_to_node(pt__grad_node *node, pt_tensor *g) {
    if (!node->grad) {
        node->grad = pt__own(g);
        return PT_OK;
    }
    pt_tensor *sum = pt_add(node->grad, g);
    if (!sum) return pt_last_status();
    pt__drop_owned(node->grad);
    node->grad = pt__own(sum);
    return PT_OK;
}

/* Whether out[i] goes to edge i alone: a derivative may hand one tensor to
 * several inputs (an add's gradient), and a leaf may keep out[i] as its
 * .grad only when no other edge receives it. */
static bool only_edge_of(const pt__grad_node *node, pt_tensor *const *out, int i) {
    for (int j = 0; j < node->n; ++j)
        if (j != i && node->edges[j].needs_grad && out[j] == out[i]) return false;
    return true;
}

/* Runs node's derivative and hands the results to its inputs. */
static pt_status run_node(pt__grad_node *node, pt__grad_node **ready, uint64_t walk) {
    pt_tensor *stack_out[4];
    pt_tensor **out = node->n <= 4 ? stack_out : calloc((size_t)node->n, sizeof *out);
    if (!out) return pt__error(PT_ERR_OUT_OF_MEMORY, "pt_backward", "out of host memory");
    pt_scope scope = pt_scope_begin();
    pt_status s = pt__grad_node_backward(node, node->grad, out);
    for (int i = 0; !s && i < node->n; ++i) {
        pt__grad_edge *e = &node->edges[i];
        if (!e->needs_grad) continue; /* out[i] is set: pt__grad_node_backward checked */
        if (e->node) {
            s = add_to_node(e->node, out[i]);
            if (!s && --e->node->pending == 0) push_todo(ready, e->node);
        } else if (e->leaf) {
            /* node->grad goes right after this loop: a view of it (a
             * transpose's gradient) may still become the leaf's .grad */
            s = deliver_to_leaf(e->leaf, out[i], only_edge_of(node, out, i), node->grad, walk);
        }
    }
    pt_scope_end(scope); /* the derivative's temporaries and out[] */
    if (out != stack_out) free(out);
    pt__drop_owned(node->grad);
    node->grad = NULL;
    return s;
}

static pt_status backward_from_leaf(pt_tensor *leaf) {
    pt_tensor *one = pt_ones(pt_tensor_device(leaf), leaf->dtype, leaf->ndim, leaf->shape);
    if (!one) return pt_last_status();
    pt_status s = pt__grad_accumulate_leaf(leaf, one, true, NULL);
    pt_release(one);
    struct pt__grad_meta *m = leaf->grad;
    if (!s && m->ready_hook) s = m->ready_hook(leaf, m->ready_user);
    return s;
}

static pt_status backward(pt_tensor *loss);

/* In a trace, the ops backward runs (through the public functions) sit
 * inside one "backward" span, apart from the caller's own calls. */
pt_status pt_backward(pt_tensor *loss) {
    pt_device *d = loss ? pt_tensor_device(loss) : NULL;
    if (!pt__tracing() || !d) return backward(loss);
    pt__trace_mark m;
    pt__trace_region_begin(&m, "backward", "pt_backward", d);
    pt_status s = backward(loss);
    pt__trace_region_end(&m, d, s);
    return s;
}

static pt_status backward(pt_tensor *loss) {
    static const char fn[] = "pt_backward";
    if (!loss) {
        if (pt_last_status() != PT_OK) return pt_last_status(); /* keep the first error */
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "loss is NULL");
    }
    if (pt_tensor_numel(loss) != 1) {
        char desc[200];
        return pt__error(PT_ERR_SHAPE, fn,
                         "the loss must have exactly one element, it is %s (reduce it with pt_sum "
                         "or pt_mean first)",
                         pt_tensor_describe(loss, desc, sizeof desc));
    }
    if (!pt__grad_tracked(loss))
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "the loss does not require grad: no input was marked with "
                         "pt_set_requires_grad, or it was computed in no-grad mode");

    /* Everything backward creates is registered in this scope, so nothing
     * lingers in a scope of the caller's. */
    pt_scope scope = pt_scope_begin();
    pt__grad_pause();
    pt_status s;
    if (!loss->grad->node) {
        s = backward_from_leaf(loss);
        pt__grad_resume();
        pt_scope_end(scope);
        return s;
    }

    pt__grad_node *root = loss->grad->node;
    uint64_t walk = atomic_fetch_add(&walk_counter, 1) + 1;
    walked all = {0};
    s = collect(root, walk, &all);
    if (s) {
        /* Nothing ran: leave the graph as it was. */
        release_walked(&all);
        pt__grad_resume();
        pt_scope_end(scope);
        return s;
    }

    pt__grad_node *ready = NULL; /* nodes whose every consumer has sent its gradient */
    pt_tensor *seed = pt_ones(pt_tensor_device(loss), root->out_dtype, root->out_ndim, root->out_shape);
    if (!seed) s = pt_last_status();
    else root->grad = pt__own(seed);
    if (!s) push_todo(&ready, root);
    while (!s && ready) s = run_node(pop_todo(&ready), &ready, walk);
    while (ready) pop_todo(&ready);

    /* Free the graph: saved values and edges of every node walked, whether
     * or not the walk finished (a failed backward cannot be resumed). The
     * walk's own references keep every node alive until its turn. */
    for (pt__grad_node *node = all.first; node; node = node->walk_next) {
        pt__drop_owned(node->grad);
        node->grad = NULL;
        pt__grad_node_free_saved(node);
    }
    release_walked(&all);
    pt__grad_resume();
    pt_scope_end(scope);
    return s;
}
