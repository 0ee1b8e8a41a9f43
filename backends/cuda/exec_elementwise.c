/* libportable CUDA backend — element-wise and creation ops: a pt_op turned
 * into one launch record (kernels.h) over its iteration space
 * (launch_geometry.c), and strided copies into contiguous buffers for the
 * other ops (MATMUL operands cuBLAS cannot take as they are). */
#include <string.h>

#include "internal.h"

static pt_status run(ptcu_device *d, const pt_op *op, int arity) {
    ptcu_ew_launch l;
    memset(&l, 0, sizeof l);
    l.kind = op->kind;
    l.n_inputs = arity;
    l.dtype[0] = op->out.dtype;
    l.ptr[0] = ptcu_operand_ptr(&op->out);
    for (int k = 0; k < arity; ++k) {
        l.dtype[k + 1] = op->in[k].dtype;
        l.ptr[k + 1] = ptcu_operand_ptr(&op->in[k]);
    }
    ptcu_geometry_build(&op->out, op->in, arity, &l);
    l.scalar = op->scalar;
    l.scalar2 = op->scalar2;
    l.seed = op->seed;
    l.counter = op->counter;
    l.max_blocks = 0; /* one full wave: SMs x resident blocks per SM (occupancy API) */
    l.sm_count = d->sm_count;

    /* A same-dtype contiguous copy is a plain device-to-device memcpy. */
    if (op->kind == PT_OP_COPY && l.contiguous && op->in[0].dtype == op->out.dtype &&
        (l.geo.strides[1][0] == 1 || l.numel == 1)) {
        cudaError_t e = cudaMemcpyAsync(l.ptr[0], l.ptr[1], (size_t)l.numel * pt_dtype_table_size(op->out.dtype),
                                        cudaMemcpyDeviceToDevice, ptcu_stream(d));
        if (e != cudaSuccess) return ptcu_cuda_error(e, "COPY: cudaMemcpyAsync device to device");
        return PT_OK;
    }
    return ptcu_launch_error(ptcu_launch_elementwise(&l, ptcu_stream(d)), op);
}

pt_status ptcu_elementwise(ptcu_device *d, const pt_op *op) {
    return run(d, op, pt_op_info_of(op->kind)->arity);
}

pt_status ptcu_copy_contiguous(ptcu_device *d, const pt_operand *src, void *dst) {
    pt_op op;
    memset(&op, 0, sizeof op);
    op.kind = PT_OP_COPY;
    op.dtype = src->dtype;
    op.n_inputs = 1;
    op.in[0] = *src;
    op.out.buf = dst;
    op.out.dtype = src->dtype;
    op.out.ndim = src->ndim;
    int64_t stride = 1;
    for (int dd = src->ndim - 1; dd >= 0; --dd) {
        op.out.shape[dd] = src->shape[dd];
        op.out.strides[dd] = stride;
        stride *= src->shape[dd];
    }
    return run(d, &op, 1);
}
