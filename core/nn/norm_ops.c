/* Batch norm, layer norm and dropout as functions, composed from reductions
 * and element-wise ops that run on every backend, so their gradients come
 * from those ops' rules. The running-statistics update of batch norm is
 * the one step done outside autograd (pt_copy_ with recording paused). */
#include <math.h>

#include "nn/nn_internal.h"

static bool float_input(const char *fn, pt_tensor *x) {
    if (pt__grad_float(x->dtype)) return true;
    pt__error(PT_ERR_DTYPE, fn, "x is %s; it must be f32 or f64 (use pt_cast)", pt_dtype_name(x->dtype));
    return false;
}

/* t is NULL, or [c] of x's dtype and device. */
static bool per_channel(const char *fn, const char *what, pt_tensor *t, pt_tensor *x, int64_t c) {
    if (!t) return true;
    pt_tensor *both[2] = {x, t};
    if (pt__check_same_device(fn, 2, both)) return false;
    if (t->ndim != 1 || t->shape[0] != c || t->dtype != x->dtype) {
        char s[PT__SHAPE_STR_CAP];
        pt__error(PT_ERR_SHAPE, fn, "%s is %s %s; it must be [%lld] %s (one per channel of x)", what,
                  pt_dtype_name(t->dtype), pt__shape_str(t->ndim, t->shape, s, sizeof s), (long long)c,
                  pt_dtype_name(x->dtype));
        return false;
    }
    return true;
}

/* running = (1 - m) running + m batch, outside autograd. */
static pt_status update_running(pt_tensor *running, pt_tensor *batch, double m) {
    pt__grad_pause();
    pt_tensor *next = pt_add(pt_mul_scalar(running, 1.0 - m), pt_mul_scalar(pt_reshape(batch, 1, running->shape), m));
    pt_status s = next ? pt_copy_(running, next) : pt_last_status();
    pt__grad_resume();
    return s;
}

pt_tensor *pt_f_batch_norm(pt_tensor *x, pt_tensor *running_mean, pt_tensor *running_var, pt_tensor *weight,
                           pt_tensor *bias, bool training, double momentum, double eps) {
    static const char fn[] = "pt_f_batch_norm";
    if (!x) return pt__null_input(fn, "x");
    if (!float_input(fn, x)) return NULL;
    if (x->ndim < 2) {
        char s[PT__SHAPE_STR_CAP];
        pt__error(PT_ERR_SHAPE, fn, "x has shape %s; it needs at least [N, C]",
                  pt__shape_str(x->ndim, x->shape, s, sizeof s));
        return NULL;
    }
    if (!(eps >= 0) || !isfinite(eps) || !(momentum >= 0 && momentum <= 1)) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "eps %g and momentum %g: eps must be finite and >= 0, momentum in [0, 1]",
                  eps, momentum);
        return NULL;
    }
    const int64_t n = x->shape[0], c = x->shape[1], l = pt__numel(x->ndim - 2, x->shape + 2);
    if (!per_channel(fn, "running_mean", running_mean, x, c) || !per_channel(fn, "running_var", running_var, x, c) ||
        !per_channel(fn, "weight", weight, x, c) || !per_channel(fn, "bias", bias, x, c))
        return NULL;
    if (!running_mean != !running_var) { /* one without the other has no meaning, in either mode */
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "running_mean is %s but running_var is %s; pass both or neither",
                  running_mean ? "given" : "NULL", running_var ? "given" : "NULL");
        return NULL;
    }
    if (!training && (!running_mean || !running_var)) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "evaluation mode needs running_mean and running_var; pass them or train");
        return NULL;
    }
    if (training && n * l <= 1) {
        pt__error(PT_ERR_SHAPE, fn, "training needs more than one value per channel (x has %lld); use a bigger batch",
                  (long long)(n * l));
        return NULL;
    }
    pt_scope scope = pt_scope_begin();
    const int64_t per_channel[3] = {1, c, 1};
    pt_tensor *x3 = pt_reshape(x, 3, (int64_t[]){n, c, l}), *mean, *var, *d = NULL, *stats = NULL;
    if (training) {
        /* the mean over N and the spatial dims and the biased variance: one
         * call where the device has the kind, else from reductions (the mean
         * of the per-image means is the mean: equal-sized groups) */
        pt_status st = x3 ? pt__channel_stats_fused(fn, x3, &stats) : pt_last_status();
        if (st == PT_OK) {
            mean = pt_reshape(pt_narrow(stats, 0, 0, 1), 3, per_channel);
            var = pt_reshape(pt_narrow(stats, 0, 1, 1), 3, per_channel);
        } else if (st == PT_ERR_UNSUPPORTED) {
            mean = pt_mean(pt_mean(x3, 2, true), 0, true);
            d = pt_sub(x3, mean);
            var = pt_mean(pt_mean(pt_mul(d, d), 2, true), 0, true);
        } else {
            mean = var = NULL;
        }
        pt_release(stats); /* the views above keep it */
        if (running_mean && var) {
            const double unbias = (double)(n * l) / (double)(n * l - 1);
            pt_status s = update_running(running_mean, mean, momentum);
            pt__grad_pause();
            pt_tensor *uv = pt_mul_scalar(var, unbias);
            pt__grad_resume();
            if (!s) s = update_running(running_var, uv, momentum);
            if (s) var = NULL;
        }
    } else {
        mean = pt_reshape(running_mean, 3, per_channel);
        var = pt_reshape(running_var, 3, per_channel);
    }
    /* The per-channel factor weight / sqrt(var + eps) is made on [1, C, 1],
     * so the full-size work is a multiply and an add or two (and their
     * gradients), not a division. With the fused statistics,
     * y = x * scale + (bias - mean * scale), as PyTorch's cpu kernel
     * computes it; on the composed path y = d * scale + bias with d the
     * x - mean the variance was made from, as before the kind existed, so
     * devices without it give the numbers they always gave. */
    pt_tensor *one = pt_ones(pt_tensor_device(x), x->dtype, 0, NULL);
    pt_tensor *scale = pt_div(one, pt_sqrt(pt_add_scalar(var, eps)));
    if (weight) scale = pt_mul(scale, pt_reshape(weight, 3, per_channel));
    pt_tensor *y;
    if (training && !d) {
        pt_tensor *shift = pt_neg(pt_mul(mean, scale));
        if (bias) shift = pt_add(shift, pt_reshape(bias, 3, per_channel));
        y = pt_add(pt_mul(x3, scale), shift);
    } else {
        y = pt_mul(d ? d : pt_sub(x3, mean), scale);
        if (bias) y = pt_add(y, pt_reshape(bias, 3, per_channel));
    }
    y = pt_keep(pt_reshape(y, x->ndim, x->shape));
    pt_scope_end(scope);
    if (!y) pt__error_as(fn);
    return y;
}

pt_tensor *pt_f_layer_norm(pt_tensor *x, int n_dims, pt_tensor *weight, pt_tensor *bias, double eps) {
    static const char fn[] = "pt_f_layer_norm";
    if (!x) return pt__null_input("pt_f_layer_norm", "x");
    if (!float_input(fn, x)) return NULL;
    char a[PT__SHAPE_STR_CAP], b[PT__SHAPE_STR_CAP];
    if (n_dims < 1 || n_dims > x->ndim) {
        pt__error(PT_ERR_SHAPE, fn, "n_dims %d for x of shape %s: normalise over 1..%d trailing dims", n_dims,
                  pt__shape_str(x->ndim, x->shape, a, sizeof a), x->ndim);
        return NULL;
    }
    if (!(eps >= 0) || !isfinite(eps)) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "eps is %g; it must be finite and >= 0", eps);
        return NULL;
    }
    const int lead = x->ndim - n_dims;
    pt_tensor *affine[2] = {weight, bias};
    for (int i = 0; i < 2; ++i) {
        pt_tensor *t = affine[i];
        if (!t) continue;
        pt_tensor *both[2] = {x, t};
        if (pt__check_same_device(fn, 2, both)) return NULL;
        bool ok = t->ndim == n_dims && t->dtype == x->dtype;
        for (int d = 0; ok && d < n_dims; ++d) ok = t->shape[d] == x->shape[lead + d];
        if (!ok) {
            pt__error(PT_ERR_SHAPE, fn, "%s is %s %s; it must be %s %s (x's last %d dims)", i ? "bias" : "weight",
                      pt_dtype_name(t->dtype), pt__shape_str(t->ndim, t->shape, a, sizeof a),
                      pt_dtype_name(x->dtype), pt__shape_str(n_dims, x->shape + lead, b, sizeof b), n_dims);
            return NULL;
        }
    }
    const int64_t k = pt__numel(n_dims, x->shape + lead);
    if (k == 0 || pt__tensor_numel(x) == 0) return pt__ret(pt_retain(x)); /* nothing to normalise */
    pt_scope scope = pt_scope_begin();
    pt_tensor *x2 = pt_reshape(x, 2, (int64_t[]){-1, k});
    pt_tensor *mean = pt_mean(x2, 1, true);
    pt_tensor *d = pt_sub(x2, mean);
    pt_tensor *var = pt_mean(pt_mul(d, d), 1, true);
    pt_tensor *y = pt_reshape(pt_div(d, pt_sqrt(pt_add_scalar(var, eps))), x->ndim, x->shape);
    if (weight) y = pt_mul(y, weight);
    if (bias) y = pt_add(y, bias);
    y = pt_keep(y);
    pt_scope_end(scope);
    if (!y) pt__error_as(fn);
    return y;
}

pt_tensor *pt_f_dropout(pt_tensor *x, double p, bool training) {
    static const char fn[] = "pt_f_dropout";
    if (!x) return pt__null_input("pt_f_dropout", "x");
    if (!(p >= 0 && p <= 1)) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "p is %g; it must be in [0, 1]", p);
        return NULL;
    }
    if (!float_input(fn, x)) return NULL;
    if (!training || p == 0) return pt__ret(pt_retain(x));
    pt_scope scope = pt_scope_begin();
    pt_tensor *y;
    if (p == 1) {
        y = pt_mul_scalar(x, 0.0); /* torch: all dropped; keeps the graph */
    } else {
        pt_tensor *u = pt_rand(pt_tensor_device(x), x->dtype, x->ndim, x->shape);
        pt_tensor *p_t = pt_full(pt_tensor_device(x), x->dtype, 0, NULL, p);
        pt_tensor *keep = pt_cast(pt_ge(u, p_t), x->dtype);
        y = pt_mul(x, pt_mul_scalar(keep, 1.0 / (1.0 - p)));
    }
    y = pt_keep(y);
    pt_scope_end(scope);
    if (!y) pt__error_as(fn);
    return y;
}
