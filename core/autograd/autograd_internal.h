/* libportable core, autograd layer: the backward walk and the rules, shared
 * by the files of core/autograd and the nets layer (core/nn). Nothing here is
 * exported. The graph itself (nodes, edges, per-tensor state), grad mode and
 * recording are the tape's, one layer down (core/ops/tape.h). */
#ifndef PORTABLE_CORE_AUTOGRAD_INTERNAL_H
#define PORTABLE_CORE_AUTOGRAD_INTERNAL_H

#include "ops/ops_internal.h"
#include "portable/autograd.h"

/* ---- record.c ---- */

/* Adds g into leaf's .grad. The first time, the .grad is g itself when
 * g_private says nothing else holds g (the caller knows no other edge got
 * the same tensor) and g is a private result (tensor_internal.h, with
 * dying, the caller's tensor that it drops next, or NULL) of the leaf's
 * dtype and shape; otherwise a fresh contiguous copy. */
pt_status pt__grad_accumulate_leaf(pt_tensor *leaf, pt_tensor *g, bool g_private, const pt_tensor *dying);

/* ---- rules.c: one row per op of PT__GRAD_OPS ---- */

/* Computes into out[i] the gradient of each input i that needs one, from g,
 * the gradient of node's output (see pt__grad_node_backward). */
typedef void pt__grad_backward_fn(pt__grad_node *node, pt_tensor *g, pt_tensor **out);

typedef struct pt__grad_rule {
    const char *name;              /* "matmul", for messages */
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
