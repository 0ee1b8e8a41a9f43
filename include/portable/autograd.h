/** @file
 * libportable — autograd: marking leaves, grad mode, pt_backward, reading
 * gradients. nn.h includes this header; the modules, losses and optimizers
 * there are built on it.
 *
 * Conventions are those of tensor.h: tensor-valued functions return a new
 * reference (registered in the innermost pt_scope, if any) or NULL with the
 * last error set; a NULL tensor argument gives NULL and keeps the first
 * error. Functions returning pt_status return PT_OK or the error's status.
 * Nothing here waits for a device unless its comment says so. */
#ifndef PORTABLE_AUTOGRAD_H
#define PORTABLE_AUTOGRAD_H

#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @name Autograd
 *
 * Reverse mode, like PyTorch's: mark leaves with pt_set_requires_grad; every
 * differentiable op (ops.h) whose input requires grad records itself; then
 * pt_backward(loss) fills the .grad of every leaf the loss depends on.
 * Gradients accumulate across backward calls until pt_zero_grad. The graph
 * (the values the derivatives need) is freed when pt_backward finishes, or
 * when its tensors are released without a backward.
 *
 * Differentiable: add sub mul div pow maximum minimum add_scalar mul_scalar
 * neg abs exp log sqrt relu sigmoid tanh where sum mean max norm norm_dims
 * softmax log_softmax matmul reshape transpose permute narrow expand
 * contiguous cast cat stack gather. In-place ops (pt_copy_, pt_axpy_,
 * pt_fill_) are not recorded: do not modify a tensor in place between the
 * forward pass that used it and the backward. */
/** @{ */

/** Marks x (an f32/f64 leaf: a tensor made by a creation function, not by an
 * op with history) as needing a gradient, or unmarks it. Errors:
 * PT_ERR_INVALID_ARGUMENT (NULL, or x is an op's result), PT_ERR_DTYPE
 * (integer x). */
PT_API pt_status pt_set_requires_grad(pt_tensor *x, bool needs_grad);
/** Whether x is a marked leaf or an op result with history. false for NULL. */
PT_API bool pt_requires_grad(const pt_tensor *x);
/** Computes d loss / d leaf for every leaf loss depends on and adds it to the
 * leaf's gradient. loss must have exactly one element (PT_ERR_SHAPE
 * otherwise: reduce with pt_sum/pt_mean) and require grad
 * (PT_ERR_INVALID_ARGUMENT otherwise). Queues the work on the loss's device
 * and returns without waiting. Frees the graph afterwards, also on failure;
 * a second backward through the same graph is PT_ERR_INVALID_ARGUMENT.
 * Not for concurrent use on graphs that share nodes or leaves. */
PT_API pt_status pt_backward(pt_tensor *loss);
/** The accumulated gradient of leaf x (same shape, dtype and device), as a
 * new reference; NULL without touching the error when x has no gradient yet
 * (or x is NULL). The tensor is the one later backwards add into in place. */
PT_API pt_tensor *pt_grad(pt_tensor *x);
/** Drops x's accumulated gradient (pt_grad then gives NULL, like PyTorch's
 * set_to_none). PT_ERR_INVALID_ARGUMENT for NULL. */
PT_API pt_status pt_zero_grad(pt_tensor *x);
/** Gradient-ready hook (what data-parallel training needs to start
 * averaging a gradient while the backward pass is still running, like
 * PyTorch's register_post_accumulate_grad_hook). fn(leaf, user) is called
 * by pt_backward, on its thread and with grad mode off, right after the
 * last gradient that backward sends to leaf has been added into leaf's
 * .grad: pt_grad(leaf) is then final for this backward (queued on the
 * device, not waited for). A leaf the loss does not depend on is not
 * called. A non-OK status from fn stops the backward and is returned by
 * it (fn sets the error). One hook per leaf; fn NULL removes it. The hook
 * stays with the tensor: a module moved with pt_module_to has new
 * parameter tensors without hooks. Errors: PT_ERR_INVALID_ARGUMENT (NULL
 * leaf, or leaf is an op's result), PT_ERR_OUT_OF_MEMORY. */
typedef pt_status pt_grad_ready_fn(pt_tensor *leaf, void *user);
/** Sets (fn non-NULL) or removes (fn NULL) leaf's gradient-ready hook, the
 * pt_grad_ready_fn above. Does not wait. */
PT_API pt_status pt_set_grad_ready_hook(pt_tensor *leaf, pt_grad_ready_fn *fn, void *user);
/** Turns recording off on this thread until the matching pt_no_grad_end;
 * pairs nest. For evaluation and parameter updates. */
PT_API void pt_no_grad_begin(void);
/** PT_ERR_INVALID_ARGUMENT when there is no matching pt_no_grad_begin. */
PT_API pt_status pt_no_grad_end(void);
/** Whether ops on this thread are recorded now. */
PT_API bool pt_grad_enabled(void);
/** A new tensor sharing x's storage without its history or requires-grad
 * (a view: writes to one show in the other). */
PT_API pt_tensor *pt_detach(pt_tensor *x);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
