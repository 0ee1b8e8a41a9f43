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
#include <stdio.h>

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
    if (op->fused && op->fused->reduce) {
        pt_status s = ptcu_supports(op->fused->reduce);
        if (s != PT_OK) return s;
    }
    return ptcu_fused_supports(op);
}

pt_status ptcu_supports(const pt_op *op) {
    const pt_op_info *info = pt_op_info_of(op->kind);
    if (!info || !dtypes_ok(op)) return ptcu_unsupported(op);
    /* the core composes NORM */
    if (info->family == PT_OP_FAMILY_NORM) return ptcu_unsupported(op);
    if (info->family == PT_OP_FAMILY_ATTENTION) return ptcu_attention_supports(op);
    /* the deterministic scatter-add sums in f32/f64; the core widens 16-bit tables */
    if (op->kind == PT_OP_EMBEDDING_BACKWARD && pt_dtype_is_half(op->dtype)) return ptcu_unsupported(op);
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
    case PT_OP_FAMILY_ATTENTION: return ptcu_attention(d, op);
    case PT_OP_FAMILY_NORM: break;
    }
    return ptcu_unsupported(op);
}

pt_status ptcu_vt_execute(int dev, const pt_op *op) { return ptcu_execute(ptcu_dev(dev), op); }

/* ---- Graphs: one CUDA graph per graph (launch_graph.c) ---- */

/* PORTABLE_CUDA_GRAPHS: off/on (or 0/1); on by default. */
static bool cuda_graphs_on(void) {
    static const char *const off_on[] = {"off", "on", "0", "1", NULL};
    return !PT_HOST_HAS(ptcu_host, env_choice) || ptcu_host->env_choice("PORTABLE_CUDA_GRAPHS", off_on, 1) % 2 == 1;
}

/* Runs op with its work captured into a child of g (its memory into held). */
static pt_status capture_op(ptcu_device *d, ptcu_graph *g, const pt_op *op, ptcu_held *held, cudaGraph_t *child,
                            size_t *n_nodes) {
    pt_status s = ptcu_record_begin(d, g, held);
    if (s != PT_OK) return s;
    return ptcu_record_end(d, g, ptcu_execute(d, op), child, n_nodes);
}

/* Why the products of ops cannot be captured, or NULL: cuBLAS's handle and
 * its workspace are made before the capture (cublasCreate and an
 * allocation are no graph nodes), and without a workspace of ours cuBLAS
 * would allocate from its own pool inside the capture. */
static const char *products_unready(ptcu_device *d, const pt_op *ops, int32_t n_ops, int32_t *at) {
    for (int32_t i = 0; i < n_ops; ++i) {
        const pt_op_family f = pt_op_info_of(ops[i].kind)->family;
        if (f != PT_OP_FAMILY_MATMUL && f != PT_OP_FAMILY_CONV) continue;
        *at = i;
        cublasHandle_t h = NULL;
        pthread_mutex_lock(&d->lock);
        pt_status s = ptcu_blas(d, &h, &ops[i]);
        const bool workspace = d->workspace != NULL;
        pthread_mutex_unlock(&d->lock);
        if (s != PT_OK) return "cuBLAS's handle could not be made";
        if (!workspace) return "cuBLAS has no workspace of ours (no device memory for it), so it would allocate "
                               "inside the capture";
        return NULL;
    }
    return NULL;
}

pt_status ptcu_vt_graph_instantiate(int dev, const pt_op *ops, int32_t n_ops, void **graph) {
    *graph = NULL;
    ptcu_device *d = ptcu_dev(dev);
    pt_status s = ptcu_select(d, "graph_instantiate");
    if (s != PT_OK) return s;
    char why[768] = "";
    int32_t i = 0;
    const char *no = NULL;
    ptcu_graph *g = NULL;
    if (!cuda_graphs_on()) {
        snprintf(why, sizeof why, "PORTABLE_CUDA_GRAPHS=off");
    } else if ((no = products_unready(d, ops, n_ops, &i))) {
        snprintf(why, sizeof why, "op %d (%s): %s", (int)i, pt_op_name(ops[i].kind), no);
    } else if ((s = ptcu_graph_new(d, n_ops, &g)) != PT_OK) {
        snprintf(why, sizeof why, "%s", ptcu_last_failure());
    } else {
        for (i = 0; i < n_ops && s == PT_OK; ++i) {
            cudaGraph_t child = NULL;
            size_t n_nodes = 0;
            s = capture_op(d, g, &ops[i], &g->ops[i].held, &child, &n_nodes);
            if (s == PT_OK) s = ptcu_graph_append(g, i, child, n_nodes);
            if (s != PT_OK)
                snprintf(why, sizeof why, "op %d (%s) cannot be captured: %s", (int)i, pt_op_name(ops[i].kind),
                         ptcu_last_failure());
        }
        if (s == PT_OK && (s = ptcu_graph_finish(g)) != PT_OK) snprintf(why, sizeof why, "%s", ptcu_last_failure());
    }
    if (why[0]) {
        ptcu_graph_free(d, g);
        ptcu_host->log(PT_LOG_INFO, "cuda:%d: a graph of %d ops replays op by op: %s", dev, (int)n_ops, why);
        return ptcu_fail(PT_ERR_UNSUPPORTED, "%s", why);
    }
    ptcu_host->log(PT_LOG_INFO, "cuda:%d: a graph of %d ops replays as one CUDA graph (%zu kernels and copies)",
                   dev, (int)n_ops, g->n_nodes);
    *graph = g;
    return PT_OK;
}

/* ops[0..n_ops-1] through execute, as the core's default replay does. */
static pt_status run_ops(ptcu_device *d, const pt_op *ops, int32_t n_ops) {
    pt_status s = PT_OK;
    for (int32_t i = 0; i < n_ops && s == PT_OK; ++i) s = ptcu_execute(d, &ops[i]);
    return s;
}

pt_status ptcu_vt_graph_launch(int dev, void *graph, const pt_op *ops, int32_t n_ops, const int32_t *changed,
                               int32_t n_changed) {
    ptcu_device *d = ptcu_dev(dev);
    ptcu_graph *g = graph;
    pt_status s = ptcu_select(d, "graph_launch");
    if (s != PT_OK) return s;
    /* The changed ops (random draws, Adam's step scalars) captured again
     * with their new values, their children swapped in. */
    for (int32_t k = 0; k < n_changed && !g->per_op; ++k) {
        const int32_t i = changed[k];
        ptcu_held fresh = {0};
        cudaGraph_t child = NULL;
        size_t n_nodes = 0;
        s = capture_op(d, g, &ops[i], &fresh, &child, &n_nodes);
        if (s == PT_OK) s = ptcu_graph_update(d, g, i, child, n_nodes, &fresh);
        else ptcu_held_release(d, &fresh);
        if (s != PT_OK) {
            /* The executable graph holds ops of both replays now: op by op from here on. */
            g->per_op = true;
            ptcu_host->log(PT_LOG_INFO, "cuda:%d: a graph of %d ops replays op by op from now on: op %d (%s) "
                           "could not be updated: %s", dev, (int)n_ops, (int)i, pt_op_name(ops[i].kind),
                           ptcu_last_failure());
        }
    }
    if (g->per_op) return run_ops(d, ops, n_ops);
    return ptcu_graph_enqueue(d, g);
}

void ptcu_vt_graph_destroy(int dev, void *graph) {
    ptcu_device *d = ptcu_dev(dev);
    if (ptcu_select(d, "graph_destroy") != PT_OK) return; /* a device that failed holds no graph */
    ptcu_graph_free(d, graph);
}
