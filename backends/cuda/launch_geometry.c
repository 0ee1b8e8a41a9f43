/* libportable CUDA backend — element-wise iteration spaces.
 *
 * The core merges element-wise operands' dimensions before they get here
 * (backend.h: extent-1 dims dropped, neighbours contiguous for every operand
 * fused), so "matrix + scalar" and "contiguous + contiguous" arrive 1-D and
 * run the vectorised contiguous kernel; anything else runs the strided one
 * over the dims as given. Creation ops (RAND_*) may arrive as 0-d tensors:
 * one element. Pure C: unit-testable without a GPU. */
#include <string.h>

#include "internal.h"

void ptcu_geometry_build(const pt_operand *out, const pt_operand *in, int n_inputs,
                         ptcu_ew_launch *l) {
    const int nop = 1 + n_inputs;
    ptcu_geometry *g = &l->geo;
    memset(g, 0, sizeof *g); /* operands past nop and dims past ndim: stride 0 */
    int64_t numel = 1;
    for (int d = 0; d < out->ndim; ++d) {
        g->shape[d] = out->shape[d];
        g->strides[0][d] = out->strides[d];
        for (int k = 1; k < nop; ++k) g->strides[k][d] = in[k - 1].strides[d];
        numel *= out->shape[d];
    }
    g->ndim = out->ndim;
    if (g->ndim == 0) { /* a 0-d tensor: one element */
        g->ndim = 1;
        g->shape[0] = 1;
        for (int k = 0; k < nop; ++k) g->strides[k][0] = 1;
    }
    l->numel = numel;

    bool contiguous = g->ndim == 1 && (g->strides[0][0] == 1 || g->shape[0] == 1);
    for (int k = 1; k < nop && contiguous; ++k)
        if (g->strides[k][0] != 0 && g->strides[k][0] != 1 && g->shape[0] != 1) contiguous = false;
    if (contiguous && g->shape[0] == 1)
        for (int k = 0; k < nop; ++k) g->strides[k][0] = 1;
    l->contiguous = contiguous;
}
