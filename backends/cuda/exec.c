/* libportable CUDA backend — supports() and execute(): every pt_op_kind of
 * backend.h, sent by its op-table family to its exec_<family>.c: the
 * element-wise launcher (exec_elementwise.c, which also runs the creation
 * kinds), launch records for the other kernels (kernels.h), a cuBLAS call
 * (exec_matmul.c) or a convolution (exec_conv.c), queued on the device's
 * stream.
 *
 * Dtypes: every (kind, compute dtype) the dtype column of op_table.h lets
 * the core send (pt_op_takes_dtype), f16/bf16 included, but RAND_* in
 * 16 bits (the core's f32 path). Anything else is PT_ERR_UNSUPPORTED with
 * the kind and dtypes named. */
#include "fused.h"
#include "internal.h"

/* ---- What is supported ---- */

/* The op table's dtype column says which compute dtypes each kind takes;
 * the kernels cover every one of them (the core checked the operands
 * against each other). f16 and bf16 are loaded as f32, computed in f32 and
 * rounded once (k_common.cuh: Stored, narrow); MATMUL is cuBLAS with f32
 * accumulation. The one device limit: RAND_* has no 16-bit generator, so it
 * is refused there and the core runs it in f32 through COPY
 * (core/runtime/half_widen.c). */
static bool dtypes_ok(const pt_op *op) {
    const int n = op->n_inputs < PT_OP_MAX_INPUTS ? op->n_inputs : PT_OP_MAX_INPUTS;
    if ((unsigned)op->out.dtype >= (unsigned)PT_DTYPE_COUNT) return false;
    for (int i = 0; i < n; ++i)
        if ((unsigned)op->in[i].dtype >= (unsigned)PT_DTYPE_COUNT) return false;
    if ((op->kind == PT_OP_RAND_UNIFORM || op->kind == PT_OP_RAND_NORMAL) && pt_dtype_is_half(op->dtype))
        return false;
    return pt_op_takes_dtype(op->kind, op->dtype);
}

/* Each step as its eager kernel would take it, then the chain as a whole. */
static pt_status fused_supported(const pt_op *op) {
    for (int32_t k = 0; op->fused && k < op->fused->n_steps && k < PTCU_FUSED_MAX_STEPS; ++k) {
        pt_status s = ptcu_supports(&op->fused->steps[k].op);
        if (s != PT_OK) return s;
    }
    return ptcu_fused_supports(op);
}

pt_status ptcu_supports(const pt_op *op) {
    const pt_op_info *info = pt_op_info_of(op->kind);
    if (!info || !dtypes_ok(op)) return ptcu_unsupported(op);
    if (info->family == PT_OP_FAMILY_NORM) return ptcu_unsupported(op); /* the core composes it */
    if (info->family == PT_OP_FAMILY_FUSED) return fused_supported(op);
    return info->family == PT_OP_FAMILY_CONV ? ptcu_conv_supports(op) : PT_OK;
}

pt_status ptcu_vt_supports(int dev, const pt_op *op) {
    /* a chain's kernel is compiled now: a compiler's refusal is the op's */
    pt_status s = ptcu_supports(op);
    if (s == PT_OK && op->kind == PT_OP_FUSED) s = ptcu_fused_prepare(dev, op);
    return s;
}

/* ---- Dispatch ---- */

pt_status ptcu_execute(ptcu_device *d, const pt_op *op) {
    pt_status s = ptcu_supports(op);
    if (s != PT_OK) return s;
    if ((s = ptcu_select(d, pt_op_name(op->kind))) != PT_OK) return s;
    switch (pt_op_info_of(op->kind)->family) {
    case PT_OP_FAMILY_CREATION: case PT_OP_FAMILY_ELEMENTWISE: return ptcu_elementwise(d, op);
    case PT_OP_FAMILY_REDUCE: return ptcu_reduce(d, op);
    case PT_OP_FAMILY_SOFTMAX: return ptcu_softmax(d, op);
    case PT_OP_FAMILY_MATMUL: return ptcu_matmul(d, op);
    case PT_OP_FAMILY_INDEX: return ptcu_index(d, op);
    case PT_OP_FAMILY_WINDOW: return ptcu_window(d, op);
    case PT_OP_FAMILY_CONV: return ptcu_conv(d, op);
    case PT_OP_FAMILY_FUSED: return ptcu_fused(d, op);
    case PT_OP_FAMILY_NORM: break;
    }
    return ptcu_unsupported(op);
}

pt_status ptcu_vt_execute(int dev, const pt_op *op) { return ptcu_execute(ptcu_dev(dev), op); }
