/* The layer norm layer (torch.nn.LayerNorm): weight 1 and bias 0 over the
 * normalised trailing dims, made at construction (f32, cpu) like
 * pt_linear_sized; forward is pt_f_layer_norm. */
#include <math.h>
#include <string.h>

#include "nn/module_kind.h"

typedef struct layer_norm {
    pt_module base;
    int n_dims;
    double eps;
} layer_norm;

static pt_tensor *layer_norm_forward(pt_module *m, pt_tensor *x) {
    layer_norm *l = (layer_norm *)m;
    pt_tensor *w = m->params[0].value;
    const bool other_device = pt_tensor_device(x) != pt_tensor_device(w);
    if (other_device || (!m->mixed && pt_tensor_dtype(x) != pt_tensor_dtype(w))) {
        char a[200], b[200];
        pt__error(other_device ? PT_ERR_DEVICE_MISMATCH : PT_ERR_DTYPE, "pt_module_forward",
                  "input %s but layer norm '%s' has %s; %s", pt_tensor_describe(x, a, sizeof a), m->params[0].name,
                  pt_tensor_describe(w, b, sizeof b),
                  other_device ? "move the input with pt_to() or the module with pt_module_to()" : "cast the input");
        return NULL;
    }
    /* Under a compute dtype the statistics and the affine step stay in the
     * parameters' dtype (torch.autocast runs layer_norm in f32); the result
     * is rounded once to the compute dtype. */
    pt_scope scope = pt_scope_begin();
    pt_tensor *xp = m->mixed ? pt__layer_cast(x, pt_tensor_dtype(w)) : x;
    pt_tensor *y = pt_keep(pt__layer_compute(m, pt_f_layer_norm(xp, l->n_dims, w, m->params[1].value, l->eps)));
    pt_scope_end(scope);
    return y;
}

static const pt__module_kind layer_norm_kind = {.name = "layer_norm", .forward = layer_norm_forward};

pt_module *pt_layer_norm(int n_dims, const int64_t *shape, double eps) {
    static const char fn[] = "pt_layer_norm";
    bool ok = n_dims >= 1 && n_dims <= PT_MAX_DIMS && shape && eps >= 0 && isfinite(eps);
    for (int i = 0; ok && i < n_dims; ++i) ok = shape[i] >= 1;
    if (!ok) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                  "n_dims %d, shape %s, eps %g: need 1..%d dims of size >= 1 and a finite eps >= 0", n_dims,
                  shape ? "given" : "NULL", eps, PT_MAX_DIMS);
        return NULL;
    }
    pt_device *cpu = pt_cpu();
    pt_module *m = cpu ? pt__module_new(fn, &layer_norm_kind, sizeof(layer_norm)) : NULL;
    if (!m) return NULL;
    ((layer_norm *)m)->n_dims = n_dims;
    ((layer_norm *)m)->eps = eps;
    pt__module_add_param(m, "weight", n_dims, shape);
    pt__module_add_param(m, "bias", n_dims, shape);
    pt__grad_pause();
    pt_tensor *w = pt__own(pt_ones(cpu, PT_F32, n_dims, shape)), *b = pt__own(pt_zeros(cpu, PT_F32, n_dims, shape));
    pt__grad_resume();
    if (!w || !b || pt_set_requires_grad(w, true) || pt_set_requires_grad(b, true)) {
        pt__error_as(fn);
        pt__drop_owned(w);
        pt__drop_owned(b);
        pt__module_destroy(m);
        return NULL;
    }
    m->params[0].value = w;
    m->params[1].value = b;
    return m;
}
