/* Multi-head self-attention (torch.nn.MultiheadAttention with batch_first
 * and query = key = value): one packed input projection in_proj_weight
 * [3E, E] (+ in_proj_bias [3E]) gives q, k and v, each split into heads of
 * E / H channels; pt_scaled_dot_product_attention attends per head (fused
 * on the cpu), and out_proj, a linear child, mixes the heads back. The
 * parameter names, shapes and initialisation are PyTorch's, so a state dict
 * moves between the two unchanged. */
#include <math.h>

#include "nn/module_kind.h"

typedef struct mha_shape {
    int64_t embed_dim, num_heads;
    double dropout; /* on the attention weights, in training mode */
    bool causal;
} mha_shape;

typedef struct mha {
    pt_module base;
    mha_shape s;
} mha;

enum { IN_PROJ_WEIGHT, IN_PROJ_BIAS };

/* Head i (0: q, 1: k, 2: v) of the packed projection [B, T, 3E] as
 * [B, H, T, E / H]. */
static pt_tensor *split_heads(pt_tensor *qkv, int i, const mha_shape *a) {
    const int64_t b = pt_tensor_shape(qkv)[0], t = pt_tensor_shape(qkv)[1];
    const int64_t e = a->embed_dim, h = a->num_heads;
    pt_tensor *part = pt_narrow(qkv, 2, i * e, e);
    return pt_permute(pt_reshape(part, 4, (int64_t[]){b, t, h, e / h}), (const int[]){0, 2, 1, 3});
}

/* Attention with dropout on its weights, which the fused kernel does not
 * draw: composed from its parts, as torch does when dropout_p > 0. */
static pt_tensor *attend_with_dropout(pt_tensor *q, pt_tensor *k, pt_tensor *v, const mha_shape *a) {
    const int64_t t = pt_tensor_shape(q)[2], d = pt_tensor_shape(q)[3];
    pt_tensor *s = pt_mul_scalar(pt_matmul(q, pt_transpose(k, -2, -1)), 1.0 / sqrt((double)d));
    if (a->causal) {
        pt_device *dev = pt_tensor_device(q);
        pt_tensor *keep = pt_tril(pt_ones(dev, PT_U8, 2, (int64_t[]){t, t}), 0);
        s = pt_where(keep, s, pt_full(dev, pt_tensor_dtype(s), 0, NULL, -INFINITY));
    }
    return pt_matmul(pt_f_dropout(pt_softmax(s, -1), a->dropout, true), v);
}

/* x: [B, T, E] or [T, E], checked against the layer; complaints name it. */
static bool accepts(pt_module *m, pt_tensor *x) {
    static const char fn[] = "pt_module_forward";
    const mha_shape *a = &((const mha *)m)->s;
    if (!pt__layer_input_ok(fn, m, x, 2, 3, "multi-head attention", "[B, T, E] or [T, E]")) return false;
    pt_tensor *w = m->params[IN_PROJ_WEIGHT].value;
    char s1[200], s2[200];
    if (pt_tensor_device(x) != pt_tensor_device(w)) {
        pt__error(PT_ERR_DEVICE_MISMATCH, fn,
                  "input %s is on another device than multi-head attention '%s' (%s); move the module with "
                  "pt_module_to() or the input with pt_to()",
                  pt_tensor_describe(x, s1, sizeof s1), m->params[IN_PROJ_WEIGHT].name,
                  pt_device_name(pt_tensor_device(w)));
        return false;
    }
    const int64_t e = pt_tensor_shape(x)[pt_tensor_ndim(x) - 1];
    if (e != a->embed_dim) {
        pt__error(PT_ERR_SHAPE, fn, "input %s has %lld features but multi-head attention '%s' expects %lld",
                  pt_tensor_describe(x, s1, sizeof s1), (long long)e, m->params[IN_PROJ_WEIGHT].name,
                  (long long)a->embed_dim);
        return false;
    }
    if (!m->mixed && pt_tensor_dtype(x) != pt_tensor_dtype(w)) {
        pt__error(PT_ERR_DTYPE, fn, "input %s but multi-head attention '%s' has %s parameters (%s); cast one",
                  pt_tensor_describe(x, s1, sizeof s1), m->params[IN_PROJ_WEIGHT].name,
                  pt_dtype_name(pt_tensor_dtype(w)), pt_tensor_describe(w, s2, sizeof s2));
        return false;
    }
    return true;
}

static pt_tensor *mha_forward(pt_module *m, pt_tensor *x) {
    if (!accepts(m, x)) return NULL;
    const mha_shape *a = &((const mha *)m)->s;
    const bool unbatched = pt_tensor_ndim(x) == 2;
    const int64_t b = unbatched ? 1 : pt_tensor_shape(x)[0], t = pt_tensor_shape(x)[unbatched ? 0 : 1];
    const int64_t e = a->embed_dim;
    pt_scope scope = pt_scope_begin();
    pt_tensor *x3 = unbatched ? pt_reshape(x, 3, (int64_t[]){1, t, e}) : x;
    pt_tensor *qkv = pt_matmul(pt__layer_compute(m, x3),
                               pt_transpose(pt__layer_compute(m, m->params[IN_PROJ_WEIGHT].value), 0, 1));
    if (m->n_params > IN_PROJ_BIAS) qkv = pt_add(qkv, pt__layer_compute(m, m->params[IN_PROJ_BIAS].value));
    pt_tensor *q = split_heads(qkv, 0, a), *k = split_heads(qkv, 1, a), *v = split_heads(qkv, 2, a);
    pt_tensor *o = !m->eval && a->dropout > 0 ? attend_with_dropout(q, k, v, a)
                                               : pt_scaled_dot_product_attention(q, k, v, NULL, a->causal, 0.0);
    pt_tensor *merged = pt_reshape(pt_permute(o, (const int[]){0, 2, 1, 3}), 3, (int64_t[]){b, t, e});
    pt_tensor *y = merged ? pt_module_forward(m->children[0], merged) : NULL;
    if (y && unbatched) y = pt_reshape(y, 2, (int64_t[]){t, e});
    y = pt_keep(y);
    pt_scope_end(scope);
    return y;
}

static const pt__module_kind mha_kind = {.name = "multihead_attention", .forward = mha_forward};

pt_module *pt_multihead_attention(int64_t embed_dim, int64_t num_heads, bool bias, double dropout, bool causal) {
    static const char fn[] = "pt_multihead_attention";
    if (embed_dim < 1 || num_heads < 1 || embed_dim % num_heads != 0) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                  "embed_dim %lld and num_heads %lld: both must be >= 1 and num_heads must divide embed_dim "
                  "(each head takes embed_dim / num_heads channels)",
                  (long long)embed_dim, (long long)num_heads);
        return NULL;
    }
    if (!(dropout >= 0 && dropout <= 1)) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "dropout is %g; it must be in [0, 1]", dropout);
        return NULL;
    }
    pt_module *m = pt__module_new(fn, &mha_kind, sizeof(mha));
    if (!m) return NULL;
    ((mha *)m)->s = (mha_shape){embed_dim, num_heads, dropout, causal};
    const int64_t e3 = 3 * embed_dim;
    pt__module_add_param(m, "in_proj_weight", 2, (int64_t[]){e3, embed_dim});
    if (bias) pt__module_add_param(m, "in_proj_bias", 1, &e3);
    /* torch's _reset_parameters: Xavier-uniform in_proj_weight (fan_in E,
     * fan_out 3E), zero biases; out_proj keeps nn.Linear's weight. */
    pt_status s = pt__module_init_param(fn, m, IN_PROJ_WEIGHT, PT__INIT_UNIFORM, sqrt(6.0 / (double)(4 * embed_dim)));
    if (!s && bias) s = pt__module_init_param(fn, m, IN_PROJ_BIAS, PT__INIT_CONSTANT, 0.0);
    pt_module *out = s ? NULL : pt__linear_sized(fn, embed_dim, embed_dim, bias);
    if (!s) s = out ? pt__module_add_child(fn, m, out, "out_proj") : pt_last_status();
    if (!s && bias) s = pt__module_init_param(fn, out, 1, PT__INIT_CONSTANT, 0.0);
    if (s) {
        pt__module_destroy(m);
        return NULL;
    }
    return m;
}
