/* libportable CUDA backend — the index family: GATHER, ONE_HOT and the
 * EMBEDDING kinds (kernels_index.cu); indices outside the range give 0
 * (EMBEDDING_BACKWARD: they add nothing). */
#include <string.h>

#include "internal.h"

static pt_status run_gather(ptcu_device *d, const pt_op *op) {
    const pt_operand *x = &op->in[0], *idx = &op->in[1];
    ptcu_gather_launch l;
    memset(&l, 0, sizeof l);
    l.elem_size = pt_dtype_table_size(x->dtype);
    l.index_dtype = idx->dtype;
    l.x = ptcu_operand_ptr(x);
    l.index = ptcu_operand_ptr(idx);
    l.out = ptcu_operand_ptr(&op->out);
    l.outer = x->shape[0];
    l.r_in = x->shape[1];
    l.r_idx = idx->shape[1];
    l.inner = x->shape[2];
    for (int k = 0; k < 3; ++k) {
        l.xs[k] = x->strides[k];
        l.is[k] = idx->strides[k];
    }
    l.sm_count = d->sm_count;
    return ptcu_launch_error(ptcu_launch_gather(&l, ptcu_stream(d)), op);
}

static uint64_t one_bits(pt_dtype t) {
    union {
        float f;
        double d;
        uint32_t u32;
        uint64_t u64;
    } v;
    memset(&v, 0, sizeof v);
    switch (t) {
    case PT_F32: v.f = 1.0f; return v.u32;
    case PT_F64: v.d = 1.0; return v.u64;
    case PT_F16: return 0x3c00;
    case PT_BF16: return 0x3f80;
    default: return 1;
    }
}

static pt_status run_one_hot(ptcu_device *d, const pt_op *op) {
    const pt_operand *labels = &op->in[0];
    ptcu_one_hot_launch l;
    memset(&l, 0, sizeof l);
    l.elem_size = pt_dtype_table_size(op->out.dtype);
    l.one_bits = one_bits(op->out.dtype);
    l.label_dtype = labels->dtype;
    l.labels = ptcu_operand_ptr(labels);
    l.label_stride = labels->strides[0];
    l.out = ptcu_operand_ptr(&op->out);
    l.n = labels->shape[0];
    l.count = op->count;
    l.sm_count = d->sm_count;
    return ptcu_launch_error(ptcu_launch_one_hot(&l, ptcu_stream(d)), op);
}


static pt_status run_embedding_backward(ptcu_device *d, const pt_op *op) {
    const pt_operand *g = &op->in[0], *idx = &op->in[1];
    ptcu_embedding_grad_launch l;
    memset(&l, 0, sizeof l);
    l.dtype = op->dtype;
    l.index_dtype = idx->dtype;
    l.g = ptcu_operand_ptr(g);
    l.index = ptcu_operand_ptr(idx);
    l.out = ptcu_operand_ptr(&op->out);
    l.scratch = (int64_t *)ptcu_operand_ptr(&op->extra[PT_EMB_X_SCRATCH]);
    l.n = idx->shape[0];
    l.d = g->shape[1];
    l.rows = op->out.shape[0];
    l.gs[0] = g->strides[0];
    l.gs[1] = g->strides[1];
    l.index_stride = idx->strides[0];
    l.sm_count = d->sm_count;
    return ptcu_launch_error(ptcu_launch_embedding_grad(&l, ptcu_stream(d)), op);
}

pt_status ptcu_index(ptcu_device *d, const pt_op *op) {
    switch (op->kind) {
    case PT_OP_GATHER: return run_gather(d, op);
    case PT_OP_EMBEDDING: { /* a gather of whole rows */
        const pt_op g = pt_embedding_as_gather(op);
        return run_gather(d, &g);
    }
    case PT_OP_EMBEDDING_BACKWARD: return run_embedding_backward(d, op);
    default: return run_one_hot(d, op);
    }
}
