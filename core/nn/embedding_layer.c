/* The embedding layer (torch.nn.Embedding): a table of num_embeddings rows
 * of embedding_dim values, weight ~ N(0, 1) as PyTorch initialises it; its
 * forward looks the input indices up with pt_f_embedding. */
#include "nn/module_kind.h"

static pt_tensor *embedding_forward(pt_module *m, pt_tensor *indices) {
    pt_tensor *w = m->params[0].value;
    if (pt_tensor_device(indices) != pt_tensor_device(w)) {
        char a[200], b[200];
        pt__error(PT_ERR_DEVICE_MISMATCH, "pt_module_forward",
                  "indices %s are on another device than embedding '%s' (%s); move the indices with "
                  "pt_to() or the module with pt_module_to()",
                  pt_tensor_describe(indices, a, sizeof a), m->params[0].name, pt_tensor_describe(w, b, sizeof b));
        return NULL;
    }
    /* Under a compute dtype the rows are looked up in the master dtype and
     * rounded once, as torch.autocast leaves embedding to its weight's dtype
     * and the next layer casts. */
    pt_scope scope = pt_scope_begin();
    pt_tensor *y = pt_keep(pt__layer_compute(m, pt_f_embedding(indices, w)));
    pt_scope_end(scope);
    return y;
}

static const pt__module_kind embedding_kind = {.name = "embedding", .forward = embedding_forward};

pt_module *pt_embedding(int64_t num_embeddings, int64_t embedding_dim) {
    static const char fn[] = "pt_embedding";
    if (num_embeddings < 1 || embedding_dim < 1) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "num_embeddings %lld and embedding_dim %lld must both be >= 1",
                  (long long)num_embeddings, (long long)embedding_dim);
        return NULL;
    }
    pt_module *m = pt__module_new(fn, &embedding_kind, sizeof(pt_module));
    if (!m) return NULL;
    pt__module_add_param(m, "weight", 2, (int64_t[]){num_embeddings, embedding_dim});
    if (pt__module_init_param(fn, m, 0, PT__INIT_NORMAL, 1.0)) {
        pt__module_destroy(m);
        return NULL;
    }
    return m;
}
