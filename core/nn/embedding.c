/* Embedding lookup as a function (torch.nn.functional.embedding): each index
 * picks one row of the weight table. The op itself (the EMBEDDING kind, its
 * deterministic scatter-add gradient and the gather composition where a
 * device refuses it) is core/ops/embedding.c. */
#include "nn/nn_internal.h"

pt_tensor *pt_f_embedding(pt_tensor *indices, pt_tensor *weight) {
    return pt__embedding("pt_f_embedding", indices, weight);
}
