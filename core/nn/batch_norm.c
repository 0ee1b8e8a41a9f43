/* The 2-D batch norm layer (torch.nn.LazyBatchNorm2d): weight, bias and the
 * buffers running_mean, running_var and num_batches_tracked, made from the
 * first input's channel count; forward is pt_f_batch_norm in the module's
 * mode. */
#include <math.h>

#include "nn/module_kind.h"

typedef struct batch_norm {
    pt_module base;
    double eps, momentum;
} batch_norm;

/* State-dict order, as torch's. */
enum { WEIGHT, BIAS, RUNNING_MEAN, RUNNING_VAR, NUM_BATCHES };

static pt_status create_state(const char *fn, pt_module *m, pt_device *d, pt_dtype t, int64_t c) {
    if (c < 1) return pt__error(PT_ERR_SHAPE, fn, "batch norm '%s' got 0 channels", m->params[WEIGHT].name);
    pt_tensor *made[5];
    pt_scope scope = pt_scope_begin();
    pt__grad_pause();
    made[WEIGHT] = pt__own(pt_ones(d, t, 1, &c));
    made[BIAS] = pt__own(pt_zeros(d, t, 1, &c));
    made[RUNNING_MEAN] = pt__own(pt_zeros(d, t, 1, &c));
    made[RUNNING_VAR] = pt__own(pt_ones(d, t, 1, &c));
    made[NUM_BATCHES] = pt__own(pt_zeros(d, PT_I64, 0, NULL));
    pt__grad_resume();
    pt_scope_end(scope);
    bool ok = true;
    for (int i = 0; i < 5; ++i) ok = ok && made[i];
    if (ok) ok = !pt_set_requires_grad(made[WEIGHT], true) && !pt_set_requires_grad(made[BIAS], true);
    if (!ok) {
        for (int i = 0; i < 5; ++i) pt__drop_owned(made[i]);
        return pt_last_status();
    }
    for (int i = 0; i < 5; ++i) m->params[i].value = made[i];
    return PT_OK;
}

static pt_tensor *batch_norm_forward(pt_module *m, pt_tensor *x) {
    static const char fn[] = "pt_module_forward";
    batch_norm *b = (batch_norm *)m;
    if (!pt__layer_input_ok(fn, m, x, 2, PT_MAX_DIMS, "batch norm", "[N, C, ...]")) return NULL;
    if (!m->params[WEIGHT].value &&
        create_state(fn, m, pt__layer_device(m, x), pt__layer_param_dtype(m, x), pt_tensor_shape(x)[1]))
        return NULL;
    /* Under a compute dtype the statistics, the running buffers and the
     * affine step stay in the parameters' dtype (f32), as cuDNN does for
     * 16-bit inputs under torch.autocast: x is widened, y rounded once. */
    pt_scope scope = pt_scope_begin();
    pt_tensor *xp = m->mixed ? pt__layer_cast(x, pt_tensor_dtype(m->params[WEIGHT].value)) : x;
    pt_tensor *y = pt_keep(pt__layer_compute(
        m, pt_f_batch_norm(xp, m->params[RUNNING_MEAN].value, m->params[RUNNING_VAR].value, m->params[WEIGHT].value,
                           m->params[BIAS].value, !m->eval, b->momentum, b->eps)));
    pt_scope_end(scope);
    if (y && !m->eval) { /* torch counts the training batches (used only with momentum None) */
        pt__grad_pause();
        pt_tensor *nb = m->params[NUM_BATCHES].value;
        pt_tensor *next = pt_add_scalar(nb, 1.0);
        pt_status s = next ? pt_copy_(nb, next) : pt_last_status();
        pt_release(next);
        pt__grad_resume();
        if (s) {
            pt_release(y);
            return NULL;
        }
    }
    return y;
}

static const pt__module_kind batch_norm_kind = {.name = "batch_norm2d", .forward = batch_norm_forward};

pt_module *pt_batch_norm2d(double eps, double momentum) {
    static const char fn[] = "pt_batch_norm2d";
    if (!(eps >= 0) || !isfinite(eps) || !(momentum >= 0 && momentum <= 1)) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "eps %g and momentum %g: eps must be finite and >= 0, momentum in [0, 1]",
                  eps, momentum);
        return NULL;
    }
    pt_module *m = pt__module_new(fn, &batch_norm_kind, sizeof(batch_norm));
    if (!m) return NULL;
    ((batch_norm *)m)->eps = eps;
    ((batch_norm *)m)->momentum = momentum;
    const int64_t lazy = -1;
    pt__module_add_param(m, "weight", 1, &lazy);
    pt__module_add_param(m, "bias", 1, &lazy);
    pt__module_add_buffer(m, "running_mean", 1, &lazy, false);
    pt__module_add_buffer(m, "running_var", 1, &lazy, false);
    pt__module_add_buffer(m, "num_batches_tracked", 0, NULL, true);
    return m;
}
