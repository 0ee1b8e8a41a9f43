/* Gradient clipping by global norm, as torch.nn.utils.clip_grad_norm_:
 * total = the 2-norm of every gradient's 2-norm, and each gradient is
 * multiplied in place by min(1, max_norm / (total + 1e-6)). The factor is
 * a tensor on the gradients' device, never read on the host, so a step
 * that clips queues without waiting and can be captured in a graph. */
#include <math.h>
#include <stdlib.h>

#include "nn/nn_internal.h"

/* The gradients of params[0..n) that exist (skipping NULL entries and
 * tensors without one) into g[]; their number. */
static int grads_of(pt_tensor *const *params, int n, pt_tensor **g) {
    int k = 0;
    for (int i = 0; i < n; ++i)
        if (params[i] && params[i]->grad && params[i]->grad->grad) g[k++] = params[i]->grad->grad;
    return k;
}

static pt_tensor *clip(const char *fn, pt_tensor *const *params, int count, double max_norm) {
    if (!isfinite(max_norm) || max_norm <= 0) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "max_norm %g is out of range: it must be finite and > 0 (usual: 1.0)",
                  max_norm);
        return NULL;
    }
    pt_tensor **g = malloc(sizeof *g * (size_t)(count > 0 ? count : 1));
    if (!g) {
        pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
        return NULL;
    }
    const int n = grads_of(params, count, g);
    if (n == 0) { /* nothing to clip: a norm of 0, as torch returns */
        free(g);
        return pt_zeros(pt_cpu(), PT_F32, 0, NULL);
    }
    if (pt__check_same_device(fn, n, g)) {
        free(g);
        return NULL;
    }
    /* The norm in the widest of the gradients' dtypes (f32 for 16-bit). */
    pt_dtype t = PT_F32;
    for (int i = 0; i < n; ++i)
        if (g[i]->dtype == PT_F64) t = PT_F64;
    pt__grad_pause();
    pt_scope scope = pt_scope_begin();
    pt_tensor **norms = malloc(sizeof *norms * (size_t)n);
    pt_status s = norms ? PT_OK : pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    for (int i = 0; i < n && !s; ++i)
        if (!(norms[i] = pt_norm(pt_cast(g[i], t)))) s = pt_last_status();
    pt_tensor *total = s ? NULL : pt_norm(pt_stack(n, norms, 0));
    pt_tensor *limit = pt_full(pt_tensor_device(g[0]), t, 0, NULL, max_norm);
    pt_tensor *coef = pt_clamp(pt_div(limit, pt_add_scalar(total, 1e-6)), -INFINITY, 1.0);
    for (int i = 0; i < n && !s && coef; ++i) s = pt_copy_(g[i], pt_mul(g[i], pt_cast(coef, g[i]->dtype)));
    if (!coef && !s) s = pt_last_status();
    total = s ? NULL : pt_keep(total);
    pt_scope_end(scope);
    pt__grad_resume();
    free(norms);
    free(g);
    if (!total) pt__error_as(fn);
    return total;
}

pt_tensor *pt_clip_grad_norm_params(pt_tensor *const *params, int count, double max_norm) {
    static const char fn[] = "pt_clip_grad_norm_params";
    if (count < 0 || (count > 0 && !params)) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "%s (count %d): pass an array of count parameters",
                  count < 0 ? "count is negative" : "params is NULL", count);
        return NULL;
    }
    return clip(fn, params, count, max_norm);
}

pt_tensor *pt_clip_grad_norm(pt_module *m, double max_norm) {
    static const char fn[] = "pt_clip_grad_norm";
    if (!m) {
        if (pt_last_status() == PT_OK) pt__error(PT_ERR_INVALID_ARGUMENT, fn, "module is NULL");
        return NULL;
    }
    pt__param *ps;
    const int n = pt__module_params_alloc(m, &ps, fn);
    if (n < 0) return NULL;
    pt_tensor **params = malloc(sizeof *params * (size_t)(n > 0 ? n : 1));
    if (!params) {
        free(ps);
        pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
        return NULL;
    }
    int k = 0;
    for (int i = 0; i < n; ++i)
        if (!ps[i].buffer && *ps[i].slot) params[k++] = *ps[i].slot;
    pt_tensor *total = clip(fn, params, k, max_norm);
    free(params);
    free(ps);
    return total;
}
