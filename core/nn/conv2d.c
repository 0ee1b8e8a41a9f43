/* The 2-D convolution layer (torch.nn.LazyConv2d): weight [out, in/groups,
 * KH, KW] and bias [out], created at the first input from its channel count,
 * initialised like torch.nn.Conv2d; forward is pt_f_conv2d. */
#include <math.h>

#include "nn/module_kind.h"

typedef struct conv2d {
    pt_module base;
    int64_t out_channels, kh, kw;
    pt_conv2d_opts opts;
    bool has_bias;
} conv2d;

enum { WEIGHT, BIAS };

/* U(-bound, bound), drawn with pt_rand so every backend draws the same. */
static pt_tensor *uniform(pt_device *d, pt_dtype t, int ndim, const int64_t *shape, double bound) {
    pt_tensor *u = pt_rand(d, t, ndim, shape);
    return pt__own(pt_mul_scalar(pt_add_scalar(u, -0.5), 2.0 * bound));
}

static pt_status create_params(const char *fn, conv2d *c, pt_device *d, pt_dtype t, int64_t in) {
    const int64_t groups = c->opts.groups ? c->opts.groups : 1;
    if (in < 1 || in % groups)
        return pt__error(PT_ERR_SHAPE, fn, "conv2d '%s' got %lld input channels; it needs a positive multiple of groups %lld",
                         c->base.params[WEIGHT].name, (long long)in, (long long)groups);
    /* kaiming_uniform_(a=sqrt(5)) gives 1/sqrt(fan_in) for the weight, and the bias uses the same bound */
    int64_t fan_in;
    if (__builtin_mul_overflow(in / groups, c->kh * c->kw, &fan_in)) /* kh, kw <= 2^30: pt_conv2d */
        return pt__error(PT_ERR_SHAPE, fn, "conv2d '%s': %lld input channels per group times kernel %lldx%lld overflows int64",
                         c->base.params[WEIGHT].name, (long long)(in / groups), (long long)c->kh, (long long)c->kw);
    const double bound = 1.0 / sqrt((double)fan_in);
    int64_t wshape[4] = {c->out_channels, in / groups, c->kh, c->kw};
    pt_scope scope = pt_scope_begin();
    pt__grad_pause();
    pt_tensor *w = uniform(d, t, 4, wshape, bound);
    pt_tensor *b = w && c->has_bias ? uniform(d, t, 1, &c->out_channels, bound) : NULL;
    pt__grad_resume();
    pt_scope_end(scope);
    if (!w || (c->has_bias && !b) || pt_set_requires_grad(w, true) || (b && pt_set_requires_grad(b, true))) {
        pt__drop_owned(w);
        pt__drop_owned(b);
        return pt_last_status();
    }
    c->base.params[WEIGHT].value = w;
    if (b) c->base.params[BIAS].value = b;
    return PT_OK;
}

static pt_tensor *conv2d_forward(pt_module *m, pt_tensor *x) {
    static const char fn[] = "pt_module_forward";
    conv2d *c = (conv2d *)m;
    if (!pt__layer_input_ok(fn, m, x, 4, 4, "conv2d", "[N, C, H, W]")) return NULL;
    if (!m->params[WEIGHT].value &&
        create_params(fn, c, pt__layer_device(m, x), pt__layer_param_dtype(m, x), pt_tensor_shape(x)[1]))
        return NULL;
    pt_scope scope = pt_scope_begin();
    pt_tensor *y = pt_keep(pt_f_conv2d(pt__layer_compute(m, x), pt__layer_compute(m, m->params[WEIGHT].value),
                                       c->has_bias ? pt__layer_compute(m, m->params[BIAS].value) : NULL, &c->opts));
    pt_scope_end(scope);
    return y;
}

static const pt__module_kind conv2d_kind = {.name = "conv2d", .forward = conv2d_forward};

pt_module *pt_conv2d(int64_t out_channels, int64_t kernel_h, int64_t kernel_w, const pt_conv2d_opts *opts, bool bias) {
    static const char fn[] = "pt_conv2d";
    const pt_conv2d_opts none = {{1, 1}, {0, 0}, {1, 1}, 1};
    if (!opts) opts = &none;
    /* kernels up to 2^30, as every window op takes (window.c) */
    bool ok = out_channels >= 1 && kernel_h >= 1 && kernel_w >= 1 && kernel_h <= (1 << 30) && kernel_w <= (1 << 30) &&
              opts->groups >= 0 &&
              out_channels % (opts->groups ? opts->groups : 1) == 0;
    for (int i = 0; i < 2; ++i)
        ok = ok && opts->stride[i] >= 0 && opts->padding[i] >= 0 && opts->dilation[i] >= 0;
    if (!ok) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                  "out_channels %lld, kernel %lldx%lld, groups %lld: the sizes must be >= 1 (kernels at most 2^30), out_channels a "
                  "multiple of groups, and stride, padding and dilation >= 0 (0 stride or dilation means 1)",
                  (long long)out_channels, (long long)kernel_h, (long long)kernel_w, (long long)opts->groups);
        return NULL;
    }
    pt_module *m = pt__module_new(fn, &conv2d_kind, sizeof(conv2d));
    if (!m) return NULL;
    conv2d *c = (conv2d *)m;
    c->out_channels = out_channels;
    c->kh = kernel_h;
    c->kw = kernel_w;
    c->opts = *opts;
    c->has_bias = bias;
    pt__module_add_param(m, "weight", 4, (int64_t[]){out_channels, -1, kernel_h, kernel_w});
    if (bias) pt__module_add_param(m, "bias", 1, &out_channels);
    return m;
}
