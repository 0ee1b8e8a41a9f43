/* libportable OpenCL backend — supports and execute: which ops run where,
 * and the dispatch to the op families (the family column of op_table.h),
 * one exec_<family>.c each.
 *
 * The core has validated every descriptor (backend.h), so the families only
 * decide which kernel of which per-dtype program runs, pack its arguments
 * and pick work sizes (launch.c). Operand byte offsets become element
 * offsets passed as kernel arguments: a cl_mem has no pointer arithmetic. */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

/* Ops that only move elements: they run on a device without fp64 (in the
 * i64 program) when every f64 operand stays f64. */
static bool ocl_moves_bits_only(const pt_op *op) {
    switch (op->kind) {
    case PT_OP_FILL: case PT_OP_WHERE: case PT_OP_GATHER: case PT_OP_EMBEDDING: return true;
    case PT_OP_COPY: return op->in[0].dtype == op->out.dtype;
    default: return false;
    }
}

/* ---- What is supported ---- */

/* A FUSED chain: each step as execute would take it alone, then what the
 * generated kernel can do (exec_fused.c). */
static pt_status ocl_supports_chain(int dev, const pt_op *op) {
    const pt_fused_chain *c = op->fused;
    if (!c || c->n_steps < 1 || !c->steps)
        return ocl_fail(PT_ERR_INVALID_ARGUMENT, "a fused op without a chain of steps");
    for (int32_t k = 0; k < c->n_steps; ++k)
        if (ocl_supports(dev, &c->steps[k].op) != PT_OK)
            return ocl_fail(PT_ERR_UNSUPPORTED, "fused chain: step %d (%s on %s) is not run by this "
                            "plugin on its own", (int)k, pt_op_name(c->steps[k].op.kind),
                            pt_dtype_table_name(c->steps[k].op.out.dtype));
    if (c->reduce && ocl_supports(dev, c->reduce) != PT_OK)
        return ocl_fail(PT_ERR_UNSUPPORTED, "fused chain: its reduction (%s to %s) is not run by this "
                        "plugin on its own", pt_op_name(c->reduce->kind),
                        pt_dtype_table_name(c->reduce->out.dtype));
    return ocl_fused_supports(&ocl_g.devices[dev], op);
}

pt_status ocl_supports(int dev, const pt_op *op) {
    if (dev < 0 || dev >= ocl_g.n_devices)
        return ocl_fail(PT_ERR_NO_DEVICE, "no OpenCL device %d (%d present)", dev,
                        ocl_g.n_devices);
    const ocl_device *d = &ocl_g.devices[dev];
    const pt_op_info *info = pt_op_info_of(op->kind);
    if (!info) return ocl_fail(PT_ERR_UNSUPPORTED, "unknown op kind %d", (int)op->kind);
    if (info->family == PT_OP_FAMILY_FUSED) return ocl_supports_chain(dev, op);
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
    const bool by_index = op->kind == PT_OP_GATHER || op->kind == PT_OP_EMBEDDING ||
                          op->kind == PT_OP_EMBEDDING_BACKWARD;
    if ((by_index && op->in[1].dtype != PT_I32 && op->in[1].dtype != PT_I64) ||
        (op->kind == PT_OP_ONE_HOT && op->in[0].dtype != PT_I32 && op->in[0].dtype != PT_I64))
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s needs i32 or i64 indices", pt_op_name(op->kind));
    if (op->kind == PT_OP_MAX_UNPOOL2D && op->in[1].dtype != PT_I64)
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s needs i64 indices", pt_op_name(op->kind));
    if (info->family == PT_OP_FAMILY_CONV) return ocl_conv_supports(d, op);
    if (info->family == PT_OP_FAMILY_NORM)
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s has no OpenCL kernel: the core composes it from reductions",
                        pt_op_name(op->kind));
    if (info->family == PT_OP_FAMILY_ATTENTION) return ocl_attention_supports(d, op);
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
    case PT_OP_FAMILY_FUSED: return ocl_fused(d, op);
    case PT_OP_FAMILY_ATTENTION: return ocl_attention(d, op);
    case PT_OP_FAMILY_NORM: break;
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

/* ---- Graphs: command buffers between the ops they cannot hold ----
 * A graph's ops in order become segments: each run of ops that can be
 * recorded is one command buffer (launch_graph.c), and the ops that cannot
 * (ocl_unrecordable) are dispatched one at a time at every replay, between
 * those buffers, on the same in-order queue: a training step's CLBlast
 * products go to CLBlast as eagerly, and everything around them is
 * replayed from command buffers. */

/* Why op cannot be part of a command buffer, or NULL. */
static const char *ocl_unrecordable(const ocl_device *d, const pt_op *op) {
    const pt_op_family f = pt_op_info_of(op->kind)->family;
    ocl_gemm_call g;
    if (f == PT_OP_FAMILY_MATMUL && ocl_matmul_call(op, &g) == PT_OK && ocl_gemm_own_takes(d, &g)) return NULL;
    if (f == PT_OP_FAMILY_MATMUL || f == PT_OP_FAMILY_CONV)
        return "CLBlast queues its GEMM kernels itself (it cannot record into a command buffer)";
    if (op->kind == PT_OP_RAND_UNIFORM || op->kind == PT_OP_RAND_NORMAL)
        return "its seed and counter change at every replay";
    if (op->kind == PT_OP_COPY && ocl_cast_needs_host(d, op))
        return "the cast converts on the host (no cl_khr_fp64)";
    return NULL;
}

/* Ops [first, end) of a graph: recorded into cb, or dispatched one at a
 * time at each replay (cb NULL). */
typedef struct ocl_segment {
    int32_t first, end;
    ocl_graph *cb;
} ocl_segment;

/* What graph_instantiate hands the core: the segments in order. */
typedef struct ocl_plan {
    ocl_segment *seg;
    int n_seg;
    int n_cb;           /* segments with a command buffer */
    int32_t n_recorded; /* ops in them */
    int n_groups;       /* group kernels recorded (exec_fused_group.c) ... */
    int32_t n_grouped;  /* ... running this many chains */
} ocl_plan;

static void ocl_plan_free(const ocl_device *d, ocl_plan *p) {
    for (int i = 0; i < p->n_seg; ++i)
        if (p->seg[i].cb) ocl_record_release(d, p->seg[i].cb);
    free(p->seg);
    free(p);
}

/* Appends ops [first, end) as a segment (recorded into cb, or not). */
static bool ocl_plan_add(ocl_plan *p, int32_t first, int32_t end, ocl_graph *cb) {
    ocl_segment *last = p->n_seg ? &p->seg[p->n_seg - 1] : NULL;
    if (!cb && last && !last->cb && last->end == first) {
        last->end = end;
        return true;
    }
    ocl_segment *m = realloc(p->seg, (size_t)(p->n_seg + 1) * sizeof *m);
    if (!m) return false;
    p->seg = m;
    p->seg[p->n_seg++] = (ocl_segment){first, end, cb};
    if (cb) {
        p->n_cb += 1;
        p->n_recorded += end - first;
    }
    return true;
}

/* Ends the recording *g of ops [first, end) and appends it to p. */
static pt_status ocl_plan_close(ocl_device *d, ocl_plan *p, int32_t first, int32_t end, ocl_graph **g,
                                char *why, size_t cap) {
    pt_status s = ocl_record_end(d, *g, NULL, why, cap);
    if (s == PT_OK && !ocl_plan_add(p, first, end, *g)) {
        ocl_record_release(d, *g);
        s = PT_ERR_UNSUPPORTED;
    }
    *g = NULL;
    return s;
}

/* Records the graph's segments into p, under d->lock (another thread's
 * launches on d must not land in a recording). On failure, why says why
 * and p keeps what it has (the caller frees it). unrecorded: why the first
 * op left out of every command buffer is, or "" if none is. */
static pt_status ocl_plan_record(ocl_device *d, int dev, const pt_op *ops, int32_t n_ops, ocl_plan *p,
                                 char *why, size_t cap, char *unrecorded, size_t ucap) {
    ocl_graph *g = NULL;
    int32_t first = 0;
    pt_status s = PT_OK;
    for (int32_t i = 0; i < n_ops && s == PT_OK; ++i) {
        const char *no = ocl_unrecordable(d, &ops[i]);
        if (no) {
            if (!unrecorded[0]) snprintf(unrecorded, ucap, "op %d (%s): %s", (int)i, pt_op_name(ops[i].kind), no);
            if (g) s = ocl_plan_close(d, p, first, i, &g, why, cap);
            if (s == PT_OK && !ocl_plan_add(p, i, i + 1, NULL)) s = PT_ERR_UNSUPPORTED;
            continue;
        }
        if (!g) {
            if ((s = ocl_record_begin(d, &g, why, cap)) != PT_OK) break;
            first = i;
        }
        /* consecutive chains on disjoint memory: one kernel for them all;
         * where it cannot be built, each chain's own */
        const int group = ocl_fused_group_len(d, &ops[i], n_ops - i);
        if (group > 1 && ocl_fused_group(d, &ops[i], group) == PT_OK) {
            p->n_groups += 1;
            p->n_grouped += group;
            i += group - 1;
            continue;
        }
        if ((s = ocl_dispatch(d, dev, &ops[i])) != PT_OK) {
            ocl_record_end(d, g, pt_op_name(ops[i].kind), why, cap);
            g = NULL;
        }
    }
    if (g) s = ocl_plan_close(d, p, first, n_ops, &g, why, cap);
    if (s != PT_OK && !why[0]) snprintf(why, cap, "out of host memory");
    return s;
}

pt_status ocl_graph_instantiate(int dev, const pt_op *ops, int32_t n_ops, void **graph) {
    *graph = NULL;
    ocl_device *d = NULL;
    pt_status s = ocl_device_ready(dev, "graph_instantiate", &d);
    if (s != PT_OK) return s;
    char why[256] = "", unrecorded[256] = "";
    ocl_plan *p = calloc(1, sizeof *p);
    if (!p) snprintf(why, sizeof why, "out of host memory");
    if (p && !d->cb.create && !d->graph_kernels) snprintf(why, sizeof why, "%s", d->no_graphs);
    if (!why[0]) {
        pthread_mutex_lock(&d->lock);
        (void)ocl_plan_record(d, dev, ops, n_ops, p, why, sizeof why, unrecorded, sizeof unrecorded);
        ocl_after_new_kernels(d);
        pthread_mutex_unlock(&d->lock);
    }
    if (!why[0] && p->n_cb == 0) snprintf(why, sizeof why, "%s", unrecorded);
    if (why[0]) {
        if (p) ocl_plan_free(d, p);
        ocl_log(PT_LOG_INFO, "opencl:%d: a graph of %d ops replays op by op: %s", dev, (int)n_ops, why);
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s", why);
    }
    /* What a recorded run is: a command buffer, or a list of pre-bound
     * kernels (and why not a command buffer). */
    char how[320], grouped[96] = "";
    if (p->n_groups)
        snprintf(grouped, sizeof grouped, "; %d of its chains run as %d group kernel%s", (int)p->n_grouped,
                 p->n_groups, p->n_groups == 1 ? "" : "s");
    if (d->cb.create) snprintf(how, sizeof how, "%s%s", OCL_CB_EXTENSION, grouped);
    else snprintf(how, sizeof how, "pre-bound kernels: %s%s", d->no_graphs[0] ? d->no_graphs : "PORTABLE_OPENCL_GRAPHS=kernels",
                  grouped);
    const char *what = d->cb.create ? "command buffer" : "kernel list";
    if (p->n_seg == 1)
        ocl_log(PT_LOG_INFO, "opencl:%d: a graph of %d ops replays as one %s (%s)", dev, (int)n_ops, what, how);
    else
        ocl_log(PT_LOG_INFO,
                "opencl:%d: a graph of %d ops replays as %d %ss (%s) holding %d of its ops, "
                "the other %d queued one at a time between them (the first: %s)",
                dev, (int)n_ops, p->n_cb, what, how, (int)p->n_recorded, (int)(n_ops - p->n_recorded),
                unrecorded);
    *graph = p;
    return PT_OK;
}

/* Whether one of ops [first, end) is in changed[]. */
static bool ocl_segment_changed(const ocl_segment *sg, const int32_t *changed, int32_t n_changed) {
    for (int32_t i = 0; i < n_changed; ++i)
        if (changed[i] >= sg->first && changed[i] < sg->end) return true;
    return false;
}

pt_status ocl_graph_launch(int dev, void *graph, const pt_op *ops, int32_t n_ops,
                           const int32_t *changed, int32_t n_changed) {
    (void)n_ops;
    const ocl_plan *p = graph;
    ocl_device *d = NULL;
    pt_status s = ocl_device_ready(dev, "graph_launch", &d);
    if (s != PT_OK) return s;
    pthread_mutex_lock(&d->lock);
    for (int k = 0; k < p->n_seg && s == PT_OK; ++k) {
        const ocl_segment *sg = &p->seg[k];
        /* Scalars the core changed since the recording (Adam's
         * step-dependent ones) are arguments the recorded commands hold:
         * such a segment runs op by op, as the core's default does. The
         * random ops, whose seeds change, are never recorded. */
        if (sg->cb && !ocl_segment_changed(sg, changed, n_changed)) {
            s = ocl_graph_enqueue(d, sg->cb);
            continue;
        }
        for (int32_t i = sg->first; s == PT_OK && i < sg->end; ++i) s = ocl_dispatch(d, dev, &ops[i]);
    }
    if (s == PT_OK) {
        clFlush(d->queue);
        ocl_after_new_kernels(d);
    }
    pthread_mutex_unlock(&d->lock);
    return s;
}

void ocl_graph_destroy(int dev, void *graph) {
    ocl_plan *p = graph;
    if (!p || dev < 0 || dev >= ocl_g.n_devices) return;
    const ocl_device *d = &ocl_g.devices[dev];
    /* Replays still queued may need the kernels' arguments (PoCL 3.1 reads
     * them when a command runs): wait for them before releasing. */
    if (!d->no_calls_at_exit) clFinish(d->queue);
    ocl_plan_free(d, p);
}
