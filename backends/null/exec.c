/* libportable null backend — supports and execute: the dispatch by op
 * family, here refusing every op by name.
 *
 * A real backend switches on pt_op_info_of(op->kind)->family and calls its
 * exec_<family>.c for each family it runs; everything else gets
 * PT_ERR_UNSUPPORTED with a reason, which the conformance suite reports as a
 * skip, so a backend can grow op by op. supports answers the same question
 * as execute without running anything. */
#include "internal.h"

pt_status null_supports(int dev, const pt_op *op) {
    (void)dev;
    return null_unsupported(op);
}

pt_status null_execute(int dev, const pt_op *op) {
    (void)dev;
    return null_unsupported(op);
}
