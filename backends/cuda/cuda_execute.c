/* libportable CUDA backend — supports() and execute(): every pt_op_kind of
 * backend.h, sent by its op-table family to the element-wise launcher
 * (cuda_elementwise.c), a launch record for the other kernels
 * (cuda_kernels.h; the window kinds through cuda_window.c), a cuBLAS call
 * (cuda_matmul.c) or a convolution (cuda_conv.c), queued on the device's
 * stream.
 *
 * Dtypes: every (kind, compute dtype) the dtype column of op_table.h lets
 * the core send (pt_op_takes_dtype), f16/bf16 included, but RAND_* in
 * 16 bits (the core's f32 path). Anything else is PT_ERR_UNSUPPORTED with
 * the kind and dtypes named. */
#include <string.h>

#include "cuda_internal.h"

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

pt_status ptcu_supports(const pt_op *op) {
    const pt_op_info *info = pt_op_info_of(op->kind);
    if (!info || !dtypes_ok(op)) return ptcu_unsupported(op);
    if (info->family == PT_OP_FAMILY_NORM) return ptcu_unsupported(op); /* the core composes it */
    return info->family == PT_OP_FAMILY_CONV ? ptcu_conv_supports(op) : PT_OK;
}

pt_status ptcu_vt_supports(int dev, const pt_op *op) {
    (void)dev;
    return ptcu_supports(op);
}

/* ---- Reductions and softmax: in [outer, r, inner] ---- */

static ptcu_axis_view axis_view_of(const pt_operand *x) {
    const ptcu_axis_view v = {x->shape[0], x->shape[1], x->shape[2], x->strides[0], x->strides[1], x->strides[2]};
    return v;
}

static pt_status run_reduce(ptcu_device *d, const pt_op *op) {
    const pt_operand *x = &op->in[0];
    ptcu_reduce_launch l;
    memset(&l, 0, sizeof l);
    l.kind = op->kind;
    l.in_dtype = x->dtype;
    l.out_dtype = op->out.dtype;
    l.in = ptcu_operand_ptr(x);
    l.out = ptcu_operand_ptr(&op->out);
    l.x = axis_view_of(x);
    l.sm_count = d->sm_count;
    const size_t need = ptcu_reduce_scratch_bytes(&l);
    pthread_mutex_lock(&d->lock);
    pt_status s = PT_OK;
    if (need > 0) s = ptcu_scratch(d, need, &l.scratch);
    if (s == PT_OK) s = ptcu_launch_error(ptcu_launch_reduce(&l, d->stream), op);
    pthread_mutex_unlock(&d->lock);
    return s;
}

static pt_status run_softmax(ptcu_device *d, const pt_op *op) {
    const pt_operand *x = &op->in[0];
    ptcu_softmax_launch l;
    memset(&l, 0, sizeof l);
    l.log = op->kind == PT_OP_LOG_SOFTMAX;
    l.dtype = x->dtype;
    l.in = ptcu_operand_ptr(x);
    l.out = ptcu_operand_ptr(&op->out);
    l.x = axis_view_of(x);
    l.sm_count = d->sm_count;
    return ptcu_launch_error(ptcu_launch_softmax(&l, d->stream), op);
}

/* ---- Indexing ---- */

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
    return ptcu_launch_error(ptcu_launch_gather(&l, d->stream), op);
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
    return ptcu_launch_error(ptcu_launch_one_hot(&l, d->stream), op);
}

/* ---- Dispatch ---- */

pt_status ptcu_execute(ptcu_device *d, const pt_op *op) {
    pt_status s = ptcu_supports(op);
    if (s != PT_OK) return s;
    if ((s = ptcu_select(d, pt_op_name(op->kind))) != PT_OK) return s;
    switch (pt_op_info_of(op->kind)->family) {
    case PT_OP_FAMILY_CREATION: case PT_OP_FAMILY_ELEMENTWISE: return ptcu_elementwise(d, op);
    case PT_OP_FAMILY_REDUCE: return run_reduce(d, op);
    case PT_OP_FAMILY_SOFTMAX: return run_softmax(d, op);
    case PT_OP_FAMILY_MATMUL: return ptcu_matmul(d, op);
    case PT_OP_FAMILY_INDEX: return op->kind == PT_OP_GATHER ? run_gather(d, op) : run_one_hot(d, op);
    case PT_OP_FAMILY_WINDOW: return ptcu_window(d, op);
    case PT_OP_FAMILY_CONV: return ptcu_conv(d, op);
    case PT_OP_FAMILY_NORM: break;
    }
    return ptcu_unsupported(op);
}

pt_status ptcu_vt_execute(int dev, const pt_op *op) { return ptcu_execute(ptcu_dev(dev), op); }
