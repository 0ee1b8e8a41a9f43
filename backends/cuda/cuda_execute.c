/* libportable CUDA backend — supports() and execute(): every pt_op_kind of
 * backend.h, sent by its op-table family to the element-wise launcher
 * (cuda_elementwise.c), a launch record for the other kernels
 * (cuda_kernels.h; the window kinds through cuda_window.c), a cuBLAS call
 * (cuda_matmul.c) or a convolution (cuda_conv.c), queued on the device's
 * stream.
 *
 * Dtypes: f32 f64 i32 i64 for arithmetic; u8 also for COPY, FILL, EQ/LT/GT
 * inputs, WHERE, GATHER values and MAX; float only for POW, the transcendental
 * ops, MEAN, SOFTMAX/LOG_SOFTMAX, MATMUL, the WINDOW and CONV kinds and RAND_*; f16/bf16
 * wherever f32 is, but RAND_* (the core's f32 path). Anything else is
 * PT_ERR_UNSUPPORTED with the kind and dtypes named. */
#include <string.h>

#include "cuda_internal.h"

/* ---- What is supported ---- */

/* f16 and bf16 count as float: kernels load them as f32, compute in f32
 * and round each result once (k_common.cuh: Stored, narrow), MATMUL is
 * cuBLAS with f32 accumulation. RAND_* (!is_half below) is refused, and
 * the core runs it in f32 through COPY (core/runtime/half_widen.c). */
static bool is_half(pt_dtype t) { return t == PT_F16 || t == PT_BF16; }
static bool is_float(pt_dtype t) { return t == PT_F32 || t == PT_F64 || is_half(t); }
static bool is_int(pt_dtype t) { return t == PT_I32 || t == PT_I64; }
static bool is_numeric(pt_dtype t) { return is_float(t) || is_int(t); }
static bool is_any(pt_dtype t) { return is_numeric(t) || t == PT_U8; }

_Static_assert(PT_OP_COUNT == 52, "a pt_op_kind was added: decide its dtypes below");

static bool dtypes_ok(const pt_op *op) {
    const pt_dtype o = op->out.dtype;
    const pt_dtype a = op->n_inputs > 0 ? op->in[0].dtype : o;
    const pt_dtype b = op->n_inputs > 1 ? op->in[1].dtype : a;
    const pt_dtype c = op->n_inputs > 2 ? op->in[2].dtype : b;
    switch (op->kind) {
    case PT_OP_FILL: return is_any(o);
    case PT_OP_ARANGE: return is_any(o);
    case PT_OP_RAND_UNIFORM: case PT_OP_RAND_NORMAL: return is_float(o) && !is_half(o);
    case PT_OP_COPY: return is_any(o) && is_any(a);
    case PT_OP_ADD: case PT_OP_SUB: case PT_OP_MUL: case PT_OP_DIV: case PT_OP_MAXIMUM:
    case PT_OP_MINIMUM: case PT_OP_AXPY: return is_numeric(o) && a == o && b == o;
    case PT_OP_POW: return is_float(o) && a == o && b == o;
    case PT_OP_EQ: case PT_OP_LT: case PT_OP_GT: case PT_OP_LE: case PT_OP_GE: case PT_OP_NE:
        return o == PT_U8 && is_any(a) && b == a;
    case PT_OP_ADD_SCALAR: case PT_OP_MUL_SCALAR: case PT_OP_NEG: case PT_OP_ABS: case PT_OP_RELU:
    case PT_OP_CLAMP:
        return is_numeric(o) && a == o;
    case PT_OP_EXP: case PT_OP_LOG: case PT_OP_SQRT: case PT_OP_SIGMOID: case PT_OP_TANH:
    case PT_OP_SIN: case PT_OP_COS: case PT_OP_GELU: case PT_OP_GELU_GRAD:
        return is_float(o) && a == o;
    case PT_OP_WHERE: return a == PT_U8 && is_any(o) && b == o && c == o;
    case PT_OP_SUM: return is_numeric(a) && (o == a || (is_int(a) && o == PT_I64));
    case PT_OP_MEAN: return is_float(a) && o == a;
    case PT_OP_MAX: return is_any(a) && o == a;
    case PT_OP_ARGMAX: return is_numeric(a) && o == PT_I64;
    case PT_OP_SOFTMAX: case PT_OP_LOG_SOFTMAX: return is_float(a) && o == a;
    case PT_OP_MATMUL: return is_float(o) && a == o && b == o;
    case PT_OP_GATHER: return is_any(a) && o == a && is_int(b);
    case PT_OP_ONE_HOT: return is_int(a) && is_any(o);
    case PT_OP_IM2COL: case PT_OP_COL2IM: return is_float(o) && a == o;
    case PT_OP_MAX_POOL2D: return is_float(o) && a == o;
    case PT_OP_MAX_POOL2D_INDEX: return is_float(a) && o == PT_I64;
    case PT_OP_MAX_UNPOOL2D: return is_float(o) && a == o && b == PT_I64;
    /* im2col / col2im and cuBLAS (cuda_conv.c), which checks the shapes. */
    case PT_OP_CONV2D: case PT_OP_CONV2D_BWD_DATA: case PT_OP_CONV2D_BWD_WEIGHT:
        return is_float(o) && a == o && b == o;
    default: return false;
    }
}

pt_status ptcu_supports(const pt_op *op) {
    const pt_op_info *info = pt_op_info_of(op->kind);
    if (!info || !dtypes_ok(op)) return ptcu_unsupported(op);
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
    }
    return ptcu_unsupported(op);
}

pt_status ptcu_vt_execute(int dev, const pt_op *op) { return ptcu_execute(ptcu_dev(dev), op); }
