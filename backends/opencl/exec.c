/* libportable OpenCL backend — supports and execute: which ops run where,
 * and the dispatch to the op families (the family column of op_table.h),
 * one exec_<family>.c each.
 *
 * The core has validated every descriptor (backend.h), so the families only
 * decide which kernel of which per-dtype program runs, pack its arguments
 * and pick work sizes (launch.c). Operand byte offsets become element
 * offsets passed as kernel arguments: a cl_mem has no pointer arithmetic. */
#include "internal.h"

/* Ops that only move elements: they run on a device without fp64 (in the
 * i64 program) when every f64 operand stays f64. */
static bool ocl_moves_bits_only(const pt_op *op) {
    switch (op->kind) {
    case PT_OP_FILL: case PT_OP_WHERE: case PT_OP_GATHER: return true;
    case PT_OP_COPY: return op->in[0].dtype == op->out.dtype;
    default: return false;
    }
}

/* ---- What is supported ---- */

pt_status ocl_supports(int dev, const pt_op *op) {
    if (dev < 0 || dev >= ocl_g.n_devices)
        return ocl_fail(PT_ERR_NO_DEVICE, "no OpenCL device %d (%d present)", dev,
                        ocl_g.n_devices);
    const ocl_device *d = &ocl_g.devices[dev];
    const pt_op_info *info = pt_op_info_of(op->kind);
    if (!info) return ocl_fail(PT_ERR_UNSUPPORTED, "unknown op kind %d", (int)op->kind);
    const pt_operand *ops[1 + PT_OP_MAX_INPUTS] = {&op->out, &op->in[0], &op->in[1], &op->in[2]};
    int n = 1 + (op->n_inputs < PT_OP_MAX_INPUTS ? op->n_inputs : PT_OP_MAX_INPUTS);
    for (int i = 0; i < n; ++i) {
        if (ops[i]->dtype < 0 || ops[i]->dtype >= PT_DTYPE_COUNT)
            return ocl_fail(PT_ERR_UNSUPPORTED, "%s: unknown dtype %d", pt_op_name(op->kind),
                            (int)ops[i]->dtype);
        if (ops[i]->dtype == PT_F64 && !d->fp64 && !ocl_moves_bits_only(op) &&
            !ocl_cast_needs_host(d, op))
            return ocl_fail(PT_ERR_UNSUPPORTED,
                            "%s on f64: %s (%s) lacks cl_khr_fp64, so OpenCL f64 is unavailable "
                            "there; use f32",
                            pt_op_name(op->kind), d->name, d->platform_name);
    }
    /* f16/bf16: the programs of those types move and convert bits; any
     * arithmetic is refused here and the core runs it in f32 through these
     * conversions (types.h). The exception: f16 MATMUL on a cl_khr_fp16
     * device is CLBlastHgemm (exec_matmul.c). CLBlast has no bf16 GEMM. */
    const bool hgemm = op->kind == PT_OP_MATMUL && d->fp16 && op->out.dtype == PT_F16 &&
                       op->in[0].dtype == PT_F16 && op->in[1].dtype == PT_F16;
    for (int i = 0; i < n && !hgemm; ++i)
        if (pt_dtype_is_half(ops[i]->dtype) && !ocl_moves_bits_only(op) && op->kind != PT_OP_COPY &&
            op->kind != PT_OP_ONE_HOT)
            return ocl_fail(PT_ERR_UNSUPPORTED,
                            "%s on %s: this plugin stores 16-bit floats but computes them in f32 "
                            "(the core converts)",
                            pt_op_name(op->kind), pt_dtype_table_name(ops[i]->dtype));
    /* The dtype the op computes in (creation ops: the output's). */
    pt_dtype t = (info->family == PT_OP_FAMILY_CREATION || op->kind == PT_OP_WHERE ||
                  op->kind == PT_OP_ONE_HOT)
                     ? op->out.dtype
                     : op->in[0].dtype;
    if (info->family == PT_OP_FAMILY_ELEMENTWISE && op->kind != PT_OP_COPY &&
        op->kind != PT_OP_WHERE && !ocl_has_ew_kernel(op->kind))
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s has no OpenCL kernel in this plugin",
                        pt_op_name(op->kind));
    /* The dtypes of the kind's row in op_table.h (FLOAT kinds: not integers). */
    if (!pt_op_takes_dtype(op->kind, t))
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s is not defined for %s (op_table.h)",
                        pt_op_name(op->kind), pt_dtype_table_name(t));
    if ((op->kind == PT_OP_GATHER && op->in[1].dtype != PT_I32 && op->in[1].dtype != PT_I64) ||
        (op->kind == PT_OP_ONE_HOT && op->in[0].dtype != PT_I32 && op->in[0].dtype != PT_I64))
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s needs i32 or i64 indices", pt_op_name(op->kind));
    if (op->kind == PT_OP_MAX_UNPOOL2D && op->in[1].dtype != PT_I64)
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s needs i64 indices", pt_op_name(op->kind));
    if (info->family == PT_OP_FAMILY_CONV) return ocl_conv_supports(d, op);
    if (info->family == PT_OP_FAMILY_NORM)
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s has no OpenCL kernel: the core composes it from reductions",
                        pt_op_name(op->kind));
    return PT_OK;
}

/* By the family column of op_table.h; ocl_supports has checked the kind. */
static pt_status ocl_dispatch(ocl_device *d, int dev, const pt_op *op) {
    const pt_op_info *info = pt_op_info_of(op->kind);
    switch (info->family) {
    case PT_OP_FAMILY_CREATION: return ocl_creation(d, op);
    case PT_OP_FAMILY_ELEMENTWISE: return ocl_elementwise(d, op);
    case PT_OP_FAMILY_REDUCE: return ocl_reduce(d, op);
    case PT_OP_FAMILY_SOFTMAX: return ocl_softmax(d, op);
    case PT_OP_FAMILY_MATMUL: return ocl_matmul(d, op);
    case PT_OP_FAMILY_INDEX: return ocl_index(d, op);
    case PT_OP_FAMILY_WINDOW: return ocl_window_run(d, op);
    case PT_OP_FAMILY_CONV: return ocl_conv(d, dev, op);
    case PT_OP_FAMILY_NORM: break;
    }
    return ocl_fail(PT_ERR_UNSUPPORTED, "unknown op kind %d", (int)op->kind);
}

pt_status ocl_execute(int dev, const pt_op *op) {
    pt_status s = ocl_supports(dev, op);
    if (s != PT_OK) return s;
    ocl_device *d = NULL;
    if ((s = ocl_device_ready(dev, "execute", &d)) != PT_OK) return s;
    pthread_mutex_lock(&d->lock);
    s = ocl_dispatch(d, dev, op);
    /* Hand the launches to the device now: NVIDIA's driver may otherwise
     * hold non-blocking work until the next blocking call. */
    if (s == PT_OK) {
        clFlush(d->queue);
        ocl_after_new_kernels(d);
    }
    pthread_mutex_unlock(&d->lock);
    return s;
}
