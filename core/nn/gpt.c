/* A GPT (GPT-2's layout, as nanoGPT and llm.c build it): token embedding
 * wte and position embedding wpe summed, n_layer causal pre-norm blocks
 * h.0 .. h.{L-1} (transformer_block.c, PyTorch's TransformerEncoderLayer
 * names), a final layer norm ln_f, and an output head that is wte.weight
 * itself (weight tying: one parameter, listed, stepped and saved once). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn/module_kind.h"

typedef struct gpt {
    pt_module base;
    pt_gpt_config cfg;
} gpt;

/* The children: wte, wpe, the blocks, then ln_f (torch's order). */
enum { WTE, WPE, FIRST_BLOCK };

static pt_module *ln_f_of(pt_module *m) { return m->children[m->n_children - 1]; }

static bool accepts(pt_module *m, pt_tensor *idx) {
    static const char fn[] = "pt_module_forward";
    const pt_gpt_config *c = &((gpt *)m)->cfg;
    char s[200];
    if (pt_tensor_dtype(idx) != PT_I32 && pt_tensor_dtype(idx) != PT_I64) {
        pt__error(PT_ERR_DTYPE, fn, "gpt takes token indices, i32 or i64 [B, T]; got %s (use pt_cast)",
                  pt_tensor_describe(idx, s, sizeof s));
        return false;
    }
    if (pt_tensor_ndim(idx) != 2 || pt_tensor_shape(idx)[1] < 1) {
        pt__error(PT_ERR_SHAPE, fn, "gpt takes token indices [B, T] with T >= 1; got %s",
                  pt_tensor_describe(idx, s, sizeof s));
        return false;
    }
    const int64_t t = pt_tensor_shape(idx)[1];
    if (t > c->context) {
        pt__error(PT_ERR_SHAPE, fn,
                  "gpt input %s has T = %lld tokens, more than its context of %lld; feed at most the last %lld "
                  "(pt_narrow along dim 1)",
                  pt_tensor_describe(idx, s, sizeof s), (long long)t, (long long)c->context,
                  (long long)c->context);
        return false;
    }
    return true;
}

static pt_tensor *gpt_forward(pt_module *m, pt_tensor *idx) {
    if (!accepts(m, idx)) return NULL;
    pt_tensor *wte = m->children[WTE]->params[0].value;
    const int64_t t = pt_tensor_shape(idx)[1];
    const gpt *g = (const gpt *)m;
    pt_scope scope = pt_scope_begin();
    pt_tensor *pos = pt_arange(pt_tensor_device(idx), PT_I64, 0, (double)t, 1);
    pt_tensor *tok = pt_module_forward(m->children[WTE], idx);
    pt_tensor *x = tok ? pt_add(tok, pt_module_forward(m->children[WPE], pos)) : NULL;
    x = pt_f_dropout(x, g->cfg.dropout, !m->eval);
    for (int i = FIRST_BLOCK; x && i < m->n_children - 1; ++i) x = pt_module_forward(m->children[i], x);
    x = x ? pt_module_forward(ln_f_of(m), x) : NULL;
    /* the tied head: logits = x wte^T */
    pt_tensor *logits = pt_keep(x ? pt_matmul(x, pt_transpose(pt__layer_compute(m, wte), 0, 1)) : NULL);
    pt_scope_end(scope);
    return logits;
}

static const pt__module_kind gpt_kind = {.name = "gpt", .forward = gpt_forward};

static pt_status check_config(const char *fn, const pt_gpt_config *c) {
    if (!c) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "config is NULL");
    if (c->vocab_size < 1 || c->context < 1 || c->n_layer < 1 || c->n_head < 1 || c->n_embd < 1)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "vocab_size %lld, context %lld, n_layer %lld, n_head %lld, n_embd %lld: each must be >= 1",
                         (long long)c->vocab_size, (long long)c->context, (long long)c->n_layer,
                         (long long)c->n_head, (long long)c->n_embd);
    if (c->n_embd % c->n_head)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "n_head %lld does not divide n_embd %lld; pick a width that is a multiple of the heads "
                         "(each head takes n_embd / n_head channels)",
                         (long long)c->n_head, (long long)c->n_embd);
    if (!(c->dropout >= 0 && c->dropout < 1))
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "dropout is %g; it must be in [0, 1)", c->dropout);
    return PT_OK;
}

/* GPT-2's initialisation over the whole tree: every matrix N(0, 0.02), the
 * projections that end a residual branch (self_attn.out_proj, linear2)
 * N(0, 0.02 / sqrt(2 n_layer)) so the residual stream does not grow with
 * depth, every bias 0; the layer norms keep weight 1, bias 0. */
static pt_status init_gpt2(const char *fn, pt_module *m, int64_t n_layer) {
    for (int i = 0; i < m->n_params; ++i) {
        const pt__module_param *p = &m->params[i];
        const char *local = p->local_name;
        const bool residual = strcmp(m->child_name, "out_proj") == 0 || strcmp(m->child_name, "linear2") == 0;
        pt_status s = PT_OK;
        if (p->ndim == 2)
            s = pt__module_init_param(fn, m, i, PT__INIT_NORMAL, residual ? 0.02 / sqrt(2.0 * (double)n_layer) : 0.02);
        else if (strcmp(local, "bias") == 0 || strcmp(local, "in_proj_bias") == 0)
            s = pt__module_init_param(fn, m, i, PT__INIT_CONSTANT, 0.0);
        if (s) return s;
    }
    for (int i = 0; i < m->n_children; ++i) {
        pt_status s = init_gpt2(fn, m->children[i], n_layer);
        if (s) return s;
    }
    return PT_OK;
}

pt_module *pt_gpt(const pt_gpt_config *config) {
    static const char fn[] = "pt_gpt";
    if (check_config(fn, config)) return NULL;
    const pt_gpt_config c = *config;
    pt_module *m = pt__module_new(fn, &gpt_kind, sizeof(gpt));
    if (!m) return NULL;
    ((gpt *)m)->cfg = c;
    pt_module *wte = pt_embedding(c.vocab_size, c.n_embd);
    pt_status s = wte ? pt__module_add_child(fn, m, wte, "wte") : pt__error_as(fn);
    pt_module *wpe = s ? NULL : pt_embedding(c.context, c.n_embd);
    if (!s) s = wpe ? pt__module_add_child(fn, m, wpe, "wpe") : pt__error_as(fn);
    for (int64_t i = 0; i < c.n_layer && !s; ++i) {
        char name[PT__CHILD_NAME_CAP];
        snprintf(name, sizeof name, "h.%lld", (long long)i);
        pt_module *b = pt_transformer_block(c.n_embd, c.n_head, 4 * c.n_embd, c.dropout, true);
        s = b ? pt__module_add_child(fn, m, b, name) : pt__error_as(fn);
    }
    if (!s) {
        pt_module *ln_f = pt_layer_norm(1, &c.n_embd, 1e-5);
        s = ln_f ? pt__module_add_child(fn, m, ln_f, "ln_f") : pt__error_as(fn);
    }
    if (!s) s = init_gpt2(fn, m, c.n_layer);
    if (s) {
        pt__module_destroy(m);
        return NULL;
    }
    return m;
}
