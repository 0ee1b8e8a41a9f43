/* libportable OpenCL backend — supports and execute: which ops run where,
 * and the dispatch to the op families (the family column of op_table.h),
 * one exec_<family>.c each.
 *
 * The core has validated every descriptor (backend.h), so the families only
 * decide which kernel of which per-dtype program runs, pack its arguments
 * and pick work sizes (launch.c). Operand byte offsets become element
 * offsets passed as kernel arguments: a cl_mem has no pointer arithmetic. */
#include <stdio.h>

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
    if (info->family == PT_OP_FAMILY_ATTENTION)
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s has no OpenCL kernel yet: the core composes it from matmul and softmax",
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
    case PT_OP_FAMILY_NORM:
    case PT_OP_FAMILY_ATTENTION: break;
    }
    return ocl_fail(PT_ERR_UNSUPPORTED, "unknown op kind %d", (int)op->kind);
}

/* Runs ops[0..n-1] on d under its lock, then hands their launches to the
 * device. */
static pt_status ocl_run(ocl_device *d, int dev, const pt_op *ops, int32_t n) {
    pthread_mutex_lock(&d->lock);
    pt_status s = PT_OK;
    for (int32_t i = 0; s == PT_OK && i < n; ++i) s = ocl_dispatch(d, dev, &ops[i]);
    /* Hand the launches to the device now: NVIDIA's driver may otherwise
     * hold non-blocking work until the next blocking call. */
    if (s == PT_OK) {
        clFlush(d->queue);
        ocl_after_new_kernels(d);
    }
    pthread_mutex_unlock(&d->lock);
    return s;
}

pt_status ocl_execute(int dev, const pt_op *op) {
    pt_status s = ocl_supports(dev, op);
    if (s != PT_OK) return s;
    ocl_device *d = NULL;
    if ((s = ocl_device_ready(dev, "execute", &d)) != PT_OK) return s;
    return ocl_run(d, dev, op, 1);
}

/* ---- Graphs: one command buffer per graph (launch_graph.c) ---- */

/* Why op cannot be part of a command buffer, or NULL. */
static const char *ocl_unrecordable(const ocl_device *d, const pt_op *op) {
    const pt_op_family f = pt_op_info_of(op->kind)->family;
    if (f == PT_OP_FAMILY_MATMUL || f == PT_OP_FAMILY_CONV)
        return "CLBlast queues its GEMM kernels itself (it cannot record into a command buffer)";
    if (op->kind == PT_OP_RAND_UNIFORM || op->kind == PT_OP_RAND_NORMAL)
        return "its seed and counter change at every replay";
    if (op->kind == PT_OP_COPY && ocl_cast_needs_host(d, op))
        return "the cast converts on the host (no cl_khr_fp64)";
    return NULL;
}

pt_status ocl_graph_instantiate(int dev, const pt_op *ops, int32_t n_ops, void **graph) {
    *graph = NULL;
    ocl_device *d = NULL;
    pt_status s = ocl_device_ready(dev, "graph_instantiate", &d);
    if (s != PT_OK) return s;
    char why[256] = "";
    for (int32_t i = 0; i < n_ops && !why[0]; ++i) {
        const char *no = ocl_unrecordable(d, &ops[i]);
        if (no) snprintf(why, sizeof why, "op %d (%s): %s", (int)i, pt_op_name(ops[i].kind), no);
    }
    ocl_graph *g = NULL;
    if (!why[0]) {
        /* Under the lock throughout: another thread's launches on d must not
         * land in the recording. */
        pthread_mutex_lock(&d->lock);
        s = ocl_record_begin(d, &g, why, sizeof why);
        int32_t i = 0;
        for (; s == PT_OK && i < n_ops; ++i) s = ocl_dispatch(d, dev, &ops[i]);
        if (g) s = ocl_record_end(d, g, s == PT_OK ? NULL : pt_op_name(ops[i - 1].kind), why, sizeof why);
        ocl_after_new_kernels(d);
        pthread_mutex_unlock(&d->lock);
    }
    if (why[0]) {
        ocl_log(PT_LOG_INFO, "opencl:%d: a graph of %d ops replays op by op: %s", dev, (int)n_ops, why);
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s", why);
    }
    ocl_log(PT_LOG_INFO, "opencl:%d: a graph of %d ops replays as one command buffer (%s)", dev,
            (int)n_ops, OCL_CB_EXTENSION);
    *graph = g;
    return PT_OK;
}

pt_status ocl_graph_launch(int dev, void *graph, const pt_op *ops, int32_t n_ops,
                           const int32_t *changed, int32_t n_changed) {
    (void)changed;
    ocl_device *d = NULL;
    pt_status s = ocl_device_ready(dev, "graph_launch", &d);
    if (s != PT_OK) return s;
    /* Scalars the core changed since the recording (Adam's step-dependent
     * ones) are arguments the recorded commands hold: such a replay runs op
     * by op, as the core's default does. */
    if (n_changed > 0) return ocl_run(d, dev, ops, n_ops);
    pthread_mutex_lock(&d->lock);
    s = ocl_graph_enqueue(d, graph);
    if (s == PT_OK) clFlush(d->queue);
    pthread_mutex_unlock(&d->lock);
    return s;
}
