/* Embedding lookup as a function (torch.nn.functional.embedding): each index
 * picks one row of the weight table. Composed here from a row gather, so its
 * gradient comes from the gather rule (a one-hot product, exact and
 * deterministic but sized indices x width x rows). */
#include "nn/nn_internal.h"

pt_tensor *pt_f_embedding(pt_tensor *indices, pt_tensor *weight) {
    static const char fn[] = "pt_f_embedding";
    if (!indices) return pt__null_input(fn, "indices");
    if (!weight) return pt__null_input(fn, "weight");
    if (indices->dtype != PT_I32 && indices->dtype != PT_I64) {
        pt__error(PT_ERR_DTYPE, fn, "indices are %s; they must be i32 or i64 (use pt_cast)",
                  pt_dtype_name(indices->dtype));
        return NULL;
    }
    if (weight->ndim != 2) {
        char s[PT__SHAPE_STR_CAP];
        pt__error(PT_ERR_SHAPE, fn, "weight is %s; it must be [num_embeddings, embedding_dim]",
                  pt__shape_str(weight->ndim, weight->shape, s, sizeof s));
        return NULL;
    }
    if (indices->ndim + 1 > PT_MAX_DIMS) {
        pt__error(PT_ERR_SHAPE, fn, "indices have %d dims; the result needs one more (max %d)", indices->ndim,
                  PT_MAX_DIMS);
        return NULL;
    }
    pt_tensor *both[2] = {indices, weight};
    if (pt__check_same_device(fn, 2, both)) return NULL;
    const int64_t n = pt_tensor_numel(indices), width = weight->shape[1];
    int64_t out_shape[PT_MAX_DIMS];
    for (int i = 0; i < indices->ndim; i++) out_shape[i] = indices->shape[i];
    out_shape[indices->ndim] = width;
    pt_scope scope = pt_scope_begin();
    const int64_t col[2] = {n, 1}, rows[2] = {n, width};
    pt_tensor *index = pt_expand(pt_reshape(pt_contiguous(indices), 2, col), 2, rows);
    pt_tensor *y = pt_keep(pt_reshape(pt_gather(weight, 0, index), indices->ndim + 1, out_shape));
    pt_scope_end(scope);
    return y;
}
