/* A pre-norm transformer block, torch.nn.TransformerEncoderLayer(d_model,
 * nhead, dim_feedforward, dropout, activation="gelu", batch_first=True,
 * norm_first=True) with the same children and so the same parameter names
 * (self_attn.*, linear1.*, linear2.*, norm1.*, norm2.*):
 *
 *   h = x + dropout(self_attn(norm1(x)))
 *   y = h + dropout(linear2(dropout(gelu(linear1(norm2(h))))))
 *
 * The dropouts follow the block's train/eval mode. */
#include "nn/module_kind.h"

typedef struct block {
    pt_module base;
    double dropout;
} block;

/* The children, in torch's state-dict order. */
enum { SELF_ATTN, LINEAR1, LINEAR2, NORM1, NORM2, N_CHILDREN };

static pt_tensor *block_forward(pt_module *m, pt_tensor *x) {
    const double p = ((block *)m)->dropout;
    const bool training = !m->eval;
    pt_module **c = m->children;
    pt_scope scope = pt_scope_begin();
    pt_tensor *a = pt_module_forward(c[SELF_ATTN], pt_module_forward(c[NORM1], x));
    pt_tensor *h = a ? pt_add(x, pt_f_dropout(a, p, training)) : NULL;
    pt_tensor *f = h ? pt_module_forward(c[LINEAR1], pt_module_forward(c[NORM2], h)) : NULL;
    f = f ? pt_module_forward(c[LINEAR2], pt_f_dropout(pt_gelu(f), p, training)) : NULL;
    pt_tensor *y = pt_keep(f ? pt_add(h, pt_f_dropout(f, p, training)) : NULL);
    pt_scope_end(scope);
    return y;
}

static const pt__module_kind block_kind = {.name = "transformer_block", .forward = block_forward};

pt_module *pt_transformer_block(int64_t d_model, int64_t nhead, int64_t dim_feedforward, double dropout,
                                bool causal) {
    static const char fn[] = "pt_transformer_block";
    if (dim_feedforward < 1) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "dim_feedforward is %lld; it must be >= 1 (usually 4 * d_model)",
                  (long long)dim_feedforward);
        return NULL;
    }
    /* pt_multihead_attention checks d_model, nhead and dropout */
    pt_module *attn = pt_multihead_attention(d_model, nhead, true, dropout, causal);
    if (!attn) {
        pt__error_as(fn);
        return NULL;
    }
    pt_module *m = pt__module_new(fn, &block_kind, sizeof(block));
    if (!m) {
        pt__module_destroy(attn);
        return NULL;
    }
    ((block *)m)->dropout = dropout;
    static const char *const names[N_CHILDREN] = {"self_attn", "linear1", "linear2", "norm1", "norm2"};
    pt_status s = pt__module_add_child(fn, m, attn, names[SELF_ATTN]);
    for (int i = LINEAR1; i < N_CHILDREN && !s; ++i) {
        pt_module *child = i == LINEAR1   ? pt__linear_sized(fn, d_model, dim_feedforward, true)
                           : i == LINEAR2 ? pt__linear_sized(fn, dim_feedforward, d_model, true)
                                          : pt_layer_norm(1, &d_model, 1e-5);
        s = child ? pt__module_add_child(fn, m, child, names[i]) : pt__error_as(fn);
    }
    if (s) {
        pt__module_destroy(m);
        return NULL;
    }
    return m;
}
