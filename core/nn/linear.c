/* The linear layer, y = x W^T + b: its constructors (sized, or lazy: the
 * input size is taken from the first input), PyTorch's initialisation, and
 * its forward pass with the checks that name the layer. */
#include <math.h>

#include "nn/module_kind.h"

typedef struct linear {
    pt_module base;
    int64_t out_features;
    bool no_bias; /* torch.nn.Linear(bias=False): no bias parameter */
} linear;

/* The parameters, in state-dict order. */
enum { WEIGHT, BIAS };

static pt_tensor *weight_of(pt_module *m) { return m->params[WEIGHT].value; }
static bool has_bias(const pt_module *m) { return !((const linear *)m)->no_bias; }

/* Kaiming-uniform with a = sqrt(5), as torch.nn.Linear.reset_parameters:
 * both weight and bias ~ U(-1/sqrt(in), 1/sqrt(in)), weight drawn first. */
static pt_tensor *uniform_init(pt_device *d, pt_dtype t, int ndim, const int64_t *shape, double bound) {
    pt_tensor *u = pt_rand(d, t, ndim, shape);
    pt_tensor *centred = pt_add_scalar(u, -0.5);
    pt_tensor *scaled = pt_mul_scalar(centred, 2.0 * bound);
    pt_release(u);
    pt_release(centred);
    return pt__own(scaled);
}

/* Creates the weight [out, in] and bias [out] (unless the layer has none) on d. */
static pt_status create_params(const char *fn, pt_module *m, pt_device *d, pt_dtype t, int64_t in) {
    if (in < 1)
        return pt__error(PT_ERR_SHAPE, fn, "a linear layer needs at least one input feature, got %lld",
                         (long long)in);
    int64_t out = ((linear *)m)->out_features;
    double bound = 1.0 / sqrt((double)in);
    int64_t wshape[2] = {out, in};
    pt_scope scope = pt_scope_begin();
    pt__grad_pause();
    pt_tensor *w = uniform_init(d, t, 2, wshape, bound);
    pt_tensor *b = w && has_bias(m) ? uniform_init(d, t, 1, &out, bound) : NULL;
    pt__grad_resume();
    pt_scope_end(scope);
    if (!w || (has_bias(m) && !b) || pt_set_requires_grad(w, true) || (b && pt_set_requires_grad(b, true))) {
        pt__drop_owned(w);
        pt__drop_owned(b);
        return pt_last_status();
    }
    m->params[WEIGHT].value = w;
    if (b) m->params[BIAS].value = b;
    return PT_OK;
}

/* Checks x against the layer (creating a lazy layer's parameters from it)
 * and names the layer in every complaint. */
static bool accepts(pt_module *m, pt_tensor *x) {
    static const char fn[] = "pt_module_forward";
    const char *name = m->params[WEIGHT].name;
    if (!pt__grad_float(x->dtype)) {
        pt__error(PT_ERR_DTYPE, fn, "linear input is %s; it must be f32 or f64 (use pt_cast)",
                  pt_dtype_name(x->dtype));
        return false;
    }
    if (x->ndim < 1) {
        pt__error(PT_ERR_SHAPE, fn, "linear input is a 0-D tensor; it needs a feature dim");
        return false;
    }
    int64_t in = x->shape[x->ndim - 1];
    if (!weight_of(m)) {
        pt_device *d = pt__layer_device(m, x);
        if (create_params(fn, m, d, pt__layer_param_dtype(m, x), in)) return false;
    }
    pt_tensor *w = weight_of(m);
    char a[200], b[200];
    if (pt_tensor_device(x) != pt_tensor_device(w)) {
        pt__error(PT_ERR_DEVICE_MISMATCH, fn,
                  "input %s is on another device than linear '%s' (%s); move the module with "
                  "pt_module_to() or the input with pt_to()",
                  pt_tensor_describe(x, a, sizeof a), name, pt_device_name(pt_tensor_device(w)));
        return false;
    }
    if (in != w->shape[1]) {
        pt__error(PT_ERR_SHAPE, fn, "input %s has %lld features but linear '%s' expects %lld",
                  pt_tensor_describe(x, a, sizeof a), (long long)in, name, (long long)w->shape[1]);
        return false;
    }
    if (!m->mixed && x->dtype != w->dtype) { /* under a compute dtype both are cast to it */
        pt__error(PT_ERR_DTYPE, fn, "input %s but linear '%s' has %s parameters (%s)",
                  pt_tensor_describe(x, a, sizeof a), name, pt_dtype_name(w->dtype),
                  pt_tensor_describe(w, b, sizeof b));
        return false;
    }
    return true;
}

static pt_tensor *linear_forward(pt_module *m, pt_tensor *x) {
    if (!accepts(m, x)) return NULL;
    pt_scope scope = pt_scope_begin();
    pt_tensor *wt = pt_transpose(pt__layer_compute(m, weight_of(m)), 0, 1);
    pt_tensor *xw = pt_matmul(pt__layer_compute(m, x), wt);
    pt_tensor *y = pt_keep(has_bias(m) ? pt_add(xw, pt__layer_compute(m, m->params[BIAS].value)) : xw);
    pt_scope_end(scope);
    return y;
}

static const pt__module_kind linear_kind = {.name = "linear", .forward = linear_forward};

/* A linear layer with no parameters yet (in: -1 until known). */
static pt_module *linear_new(const char *fn, int64_t out_features, bool bias) {
    pt_module *m = pt__module_new(fn, &linear_kind, sizeof(linear));
    if (!m) return NULL;
    ((linear *)m)->out_features = out_features;
    ((linear *)m)->no_bias = !bias;
    pt__module_add_param(m, "weight", 2, (int64_t[]){out_features, -1});
    if (bias) pt__module_add_param(m, "bias", 1, &out_features);
    return m;
}

pt_module *pt_linear(int64_t out_features) {
    if (out_features < 1) {
        pt__error(PT_ERR_INVALID_ARGUMENT, "pt_linear", "out_features is %lld; it must be >= 1",
                  (long long)out_features);
        return NULL;
    }
    return linear_new("pt_linear", out_features, true);
}

pt_module *pt_linear_sized(int64_t in_features, int64_t out_features) {
    return pt__linear_sized("pt_linear_sized", in_features, out_features, true);
}

pt_module *pt__linear_sized(const char *fn, int64_t in_features, int64_t out_features, bool bias) {
    if (in_features < 1 || out_features < 1) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "in_features %lld and out_features %lld must be >= 1",
                  (long long)in_features, (long long)out_features);
        return NULL;
    }
    pt_device *cpu = pt_cpu();
    pt_module *m = cpu ? linear_new(fn, out_features, bias) : NULL;
    if (m && create_params(fn, m, cpu, PT_F32, in_features)) {
        pt__error_as(fn); /* pt_rand's or pt_zeros's failure is the constructor's */
        pt__module_destroy(m);
        return NULL;
    }
    return m;
}
