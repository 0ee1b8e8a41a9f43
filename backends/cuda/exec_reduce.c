/* libportable CUDA backend — the reduce family: SUM, MEAN, MAX, ARGMAX over
 * [outer, r, inner] (kernels_reduce.cu), with device scratch for the
 * partials of a split reduction. */
#include <string.h>

#include "internal.h"

pt_status ptcu_reduce(ptcu_device *d, const pt_op *op) {
    const pt_operand *x = &op->in[0];
    ptcu_reduce_launch l;
    memset(&l, 0, sizeof l);
    l.kind = op->kind;
    l.in_dtype = x->dtype;
    l.out_dtype = op->out.dtype;
    l.in = ptcu_operand_ptr(x);
    l.out = ptcu_operand_ptr(&op->out);
    l.x = ptcu_axis_view_of(x);
    l.sm_count = d->sm_count;
    const size_t need = ptcu_reduce_scratch_bytes(&l);
    pthread_mutex_lock(&d->lock);
    pt_status s = PT_OK;
    if (need > 0) s = ptcu_scratch(d, need, &l.scratch);
    if (s == PT_OK) s = ptcu_launch_error(ptcu_launch_reduce(&l, ptcu_stream(d)), op);
    pthread_mutex_unlock(&d->lock);
    return s;
}
