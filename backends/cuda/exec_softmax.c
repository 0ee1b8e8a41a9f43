/* libportable CUDA backend — the softmax family: SOFTMAX and LOG_SOFTMAX
 * along the middle axis of [outer, r, inner] (kernels_softmax.cu). */
#include <string.h>

#include "internal.h"

pt_status ptcu_softmax(ptcu_device *d, const pt_op *op) {
    const pt_operand *x = &op->in[0];
    ptcu_softmax_launch l;
    memset(&l, 0, sizeof l);
    l.log = op->kind == PT_OP_LOG_SOFTMAX;
    l.dtype = x->dtype;
    l.in = ptcu_operand_ptr(x);
    l.out = ptcu_operand_ptr(&op->out);
    l.x = ptcu_axis_view_of(x);
    l.sm_count = d->sm_count;
    return ptcu_launch_error(ptcu_launch_softmax(&l, ptcu_stream(d)), op);
}
