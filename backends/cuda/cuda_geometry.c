/* libportable CUDA backend — element-wise iteration spaces.
 *
 * Fewer dimensions mean cheaper index arithmetic in the strided kernel, and
 * a space that collapses to one dimension with unit output stride runs the
 * vectorised contiguous kernel. Broadcast operands (stride 0) merge like any
 * other, so "matrix + scalar" and "contiguous + contiguous" both become 1-D.
 * Pure C: unit-testable without a GPU. */
#include "cuda_internal.h"

void ptcu_geometry_build(const pt_operand *out, const pt_operand *in, int n_inputs,
                         ptcu_ew_launch *l) {
    const int nop = 1 + n_inputs;
    const pt_operand *ops[PTCU_MAX_OPERANDS];
    ops[0] = out;
    for (int k = 0; k < n_inputs; ++k) ops[k + 1] = &in[k];

    ptcu_geometry *g = &l->geo;
    int nd = 0;
    int64_t numel = 1;
    for (int d = 0; d < out->ndim; ++d) {
        const int64_t size = out->shape[d];
        numel *= size;
        if (size == 1) continue; /* its stride never matters */
        bool merged = false;
        if (nd > 0) {
            /* The previous (outer) dim and this one form one dim when, for
             * every operand, stepping the outer dim equals stepping this one
             * size times. */
            merged = true;
            for (int k = 0; k < nop; ++k)
                if (g->strides[k][nd - 1] != ops[k]->strides[d] * size) merged = false;
        }
        if (merged) {
            g->shape[nd - 1] *= size;
            for (int k = 0; k < nop; ++k) g->strides[k][nd - 1] = ops[k]->strides[d];
        } else {
            g->shape[nd] = size;
            for (int k = 0; k < nop; ++k) g->strides[k][nd] = ops[k]->strides[d];
            ++nd;
        }
    }
    if (nd == 0) { /* a single element (a 0-d tensor or all extents 1) */
        g->shape[0] = 1;
        for (int k = 0; k < nop; ++k) g->strides[k][0] = 1;
        nd = 1;
    }
    for (int k = nop; k < PTCU_MAX_OPERANDS; ++k)
        for (int d = 0; d < nd; ++d) g->strides[k][d] = 0;
    g->ndim = nd;
    l->numel = numel;

    bool contiguous = nd == 1 && (g->strides[0][0] == 1 || g->shape[0] == 1);
    for (int k = 1; k < nop && contiguous; ++k)
        if (g->strides[k][0] != 0 && g->strides[k][0] != 1 && g->shape[0] != 1) contiguous = false;
    if (contiguous && g->shape[0] == 1)
        for (int k = 0; k < nop; ++k) g->strides[k][0] = 1;
    l->contiguous = contiguous;
}
