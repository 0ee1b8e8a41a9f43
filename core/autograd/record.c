/* Autograd's public face: grad mode, marking leaves, reading and dropping
 * gradients, hooks, detach; and adding a gradient into a leaf. Recording
 * and the graph's memory are the tape's (core/ops/tape.c, in the ops layer
 * so ops can record without calling up); the backward walk lives in
 * engine.c and each op's derivative in rules.c. */
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd_internal.h"

/* ---- Grad mode ----
 * The counters are the tape's (core/ops/tape.c): ops read them there. */

void pt_no_grad_begin(void) { pt__grad_user_pause(); }

pt_status pt_no_grad_end(void) {
    if (!pt__grad_user_resume())
        return pt__error(PT_ERR_INVALID_ARGUMENT, "pt_no_grad_end",
                         "no matching pt_no_grad_begin on this thread (calls must pair up)");
    return PT_OK;
}

bool pt_grad_enabled(void) { return pt__grad_enabled(); }

/* ---- Leaf gradients ---- */

pt_status pt__grad_accumulate_leaf(pt_tensor *leaf, pt_tensor *g, bool g_private, const pt_tensor *dying) {
    struct pt__grad_meta *m = leaf->grad;
    if (!m) return pt__error(PT_ERR_INTERNAL, "pt_backward", "leaf without autograd state");
    if (m->grad) return pt_axpy_(m->grad, 1.0, g);
    /* Later accumulations write the .grad in place, so it must be memory
     * nothing else reads: g itself when nobody else holds it (a product's
     * or a sum's fresh result, which saves a copy kernel per parameter and
     * step), else a fresh contiguous copy (g may be a broadcast view or
     * shared with another input's gradient). */
    if (g_private && !g->grad && g->dtype == leaf->dtype && g->ndim == leaf->ndim &&
        pt_tensor_device(g) == pt_tensor_device(leaf) &&
        !memcmp(g->shape, leaf->shape, (size_t)leaf->ndim * sizeof *leaf->shape) &&
        pt__tensor_is_private_result(g, dying)) {
        pt_retain(g);
        m->grad = g;
        return PT_OK;
    }
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
    pt_tensor *v = pt__grad_value_view(x);
    if (!v) {
        pt__error(PT_ERR_OUT_OF_MEMORY, "pt_detach", "out of host memory for a tensor handle");
        return NULL;
    }
    return pt__ret(v);
}
