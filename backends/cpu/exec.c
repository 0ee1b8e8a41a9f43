/* libportable cpu backend — supports and execute: the dispatch to the op
 * families (the family column of op_table.h), one exec_<family>.c each.
 *
 * Every family function checks the descriptor and, when run is true, runs
 * the kernel; with run false it stops after the checks, which is supports().
 * Execution is immediate: execute returns when the result is written. */
#include "internal.h"

static pt_status dispatch(int dev, const pt_op *op, bool run) {
    const pt_op_info *info = pt_op_info_of(op->kind);
    if (!info)
        return pt_cpu_fail(PT_ERR_UNSUPPORTED,
                           "op kind %d is not known to this plugin (built for backend ABI %u); "
                           "rebuild libportable-cpu.so with the core",
                           (int)op->kind, PT_BACKEND_ABI_VERSION);
    switch (info->family) {
    case PT_OP_FAMILY_CREATION:
        return op->kind == PT_OP_RAND_UNIFORM || op->kind == PT_OP_RAND_NORMAL
                   ? pt_cpu_random(op, run)
                   : pt_cpu_creation(op, run);
    case PT_OP_FAMILY_ELEMENTWISE:
        return op->kind == PT_OP_COPY ? pt_cpu_copy(op, run) : pt_cpu_elementwise(op, run);
    case PT_OP_FAMILY_REDUCE: return pt_cpu_reduce(op, run);
    case PT_OP_FAMILY_SOFTMAX: return pt_cpu_softmax(op, run);
    case PT_OP_FAMILY_MATMUL: return pt_cpu_matmul(op, run);
    case PT_OP_FAMILY_INDEX:
        return op->kind == PT_OP_EMBEDDING || op->kind == PT_OP_EMBEDDING_BACKWARD ? pt_cpu_embedding(op, run)
                                                                                   : pt_cpu_index_op(op, run);
    case PT_OP_FAMILY_WINDOW:
        return op->kind == PT_OP_IM2COL || op->kind == PT_OP_COL2IM ? pt_cpu_window(op, run)
                                                                      : pt_cpu_max_pool(op, run);
    case PT_OP_FAMILY_CONV: return pt_cpu_conv(dev, op, run);
    case PT_OP_FAMILY_NORM: return pt_cpu_channel_stats(op, run);
    case PT_OP_FAMILY_FUSED: return pt_cpu_fused(op, run);
    case PT_OP_FAMILY_ATTENTION: return pt_cpu_attention(op, run);
    }
    return pt_cpu_bad_op(op, "family outside op_table.h");
}

pt_status pt_cpu_supports(int dev, const pt_op *op) { return dispatch(dev, op, false); }

pt_status pt_cpu_execute(int dev, const pt_op *op) { return dispatch(dev, op, true); }
