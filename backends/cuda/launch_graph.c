/* libportable CUDA backend — graphs replayed as CUDA graphs. At the first
 * replay exec.c runs each op of the graph through its eager code while
 * its stream is captured (cudaStreamBeginCapture on the graph's own
 * stream, relaxed mode: the caching allocator may still call cudaMalloc),
 * so every kernel, device copy and cuBLAS call the op queues becomes a node
 * of the op's child graph and nothing runs; the children form one chain,
 * instantiated once. A replay is one cudaGraphLaunch on the device's
 * stream, ordered with the eager work there. An op whose scalars, seed or
 * counter changed is captured again and its child swapped in the
 * executable graph (cudaGraphExecChildGraphNodeSetParams: same topology,
 * new kernel parameters). The device memory the ops take for themselves
 * while captured (reduction partials, operand copies, convolution columns)
 * is the graph's until it is destroyed (memory.c's held lists). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

pt_status ptcu_graph_new(ptcu_device *d, int32_t n_ops, ptcu_graph **out) {
    *out = NULL;
    ptcu_graph *g = calloc(1, sizeof *g);
    ptcu_graph_op *ops = calloc(n_ops > 0 ? (size_t)n_ops : 1, sizeof *ops);
    if (!g || !ops) {
        free(g);
        free(ops);
        return ptcu_fail(PT_ERR_OUT_OF_MEMORY, "out of host memory for a graph of %d ops", (int)n_ops);
    }
    g->ops = ops;
    g->n_ops = n_ops;
    cudaError_t e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaGraphCreate(&g->graph, 0);
    if (e != cudaSuccess) {
        ptcu_graph_free(d, g);
        return ptcu_cuda_error(e, "a graph's capture stream or cudaGraphCreate on CUDA device %d", d->ordinal);
    }
    *out = g;
    return PT_OK;
}

pt_status ptcu_record_begin(ptcu_device *d, ptcu_graph *g, ptcu_held *held) {
    cudaError_t e = cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeRelaxed);
    if (e != cudaSuccess) return ptcu_cuda_error(e, "cudaStreamBeginCapture");
    ptcu_record_into(d, g->stream, held);
    return PT_OK;
}

pt_status ptcu_record_end(ptcu_device *d, ptcu_graph *g, pt_status ran, cudaGraph_t *child, size_t *n_nodes) {
    (void)d;
    ptcu_record_into(NULL, NULL, NULL);
    *child = NULL;
    *n_nodes = 0;
    cudaGraph_t captured = NULL;
    /* Always ended, so the stream can capture again. */
    cudaError_t e = cudaStreamEndCapture(g->stream, &captured);
    if (ran != PT_OK) {
        if (captured) cudaGraphDestroy(captured);
        (void)cudaGetLastError();
        return ran;
    }
    if (e != cudaSuccess) /* cudaErrorStreamCaptureInvalidated: a call in it cannot be captured */
        return ptcu_cuda_error(e, "cudaStreamEndCapture (something the op queued cannot be captured)");
    size_t n = 0;
    e = cudaGraphGetNodes(captured, NULL, &n);
    if (e != cudaSuccess) {
        cudaGraphDestroy(captured);
        return ptcu_cuda_error(e, "cudaGraphGetNodes");
    }
    if (n == 0) {
        cudaGraphDestroy(captured);
        return PT_OK;
    }
    *child = captured;
    *n_nodes = n;
    return PT_OK;
}

pt_status ptcu_graph_append(ptcu_graph *g, int32_t i, cudaGraph_t child, size_t n_nodes) {
    if (!child) return PT_OK;
    cudaGraphNode_t node = NULL;
    /* Added as a copy: the child is ours to destroy. */
    cudaError_t e = cudaGraphAddChildGraphNode(&node, g->graph, g->last ? &g->last : NULL, g->last ? 1 : 0, child);
    cudaGraphDestroy(child);
    if (e != cudaSuccess) return ptcu_cuda_error(e, "cudaGraphAddChildGraphNode");
    g->ops[i].node = node;
    g->last = node;
    g->n_nodes += n_nodes;
    return PT_OK;
}

pt_status ptcu_graph_finish(ptcu_graph *g) {
    cudaError_t e = cudaGraphInstantiate(&g->exec, g->graph, 0);
    if (e != cudaSuccess) {
        g->exec = NULL;
        return ptcu_cuda_error(e, "cudaGraphInstantiate (%zu nodes)", g->n_nodes);
    }
    return PT_OK;
}

pt_status ptcu_graph_update(ptcu_device *d, ptcu_graph *g, int32_t i, cudaGraph_t child, size_t n_nodes,
                            ptcu_held *fresh) {
    (void)n_nodes;
    pt_status s = PT_OK;
    const cudaGraphNode_t node = g->ops[i].node;
    if (!node != !child) {
        s = ptcu_fail(PT_ERR_UNSUPPORTED, "op %d queued %s work than when the graph was made", (int)i,
                      child ? "more" : "less");
    } else if (child) {
        cudaError_t e = cudaGraphExecChildGraphNodeSetParams(g->exec, node, child);
        if (e != cudaSuccess) {
            ptcu_cuda_error(e, "cudaGraphExecChildGraphNodeSetParams (op %d)", (int)i);
            s = PT_ERR_UNSUPPORTED;
        }
    }
    if (child) cudaGraphDestroy(child);
    if (s != PT_OK) {
        ptcu_held_release(d, fresh);
        return s;
    }
    /* Replays queued before still use the old memory: it goes back in queue order. */
    ptcu_held_release(d, &g->ops[i].held);
    g->ops[i].held = *fresh;
    return PT_OK;
}

pt_status ptcu_graph_enqueue(ptcu_device *d, ptcu_graph *g) {
    cudaError_t e = cudaGraphLaunch(g->exec, d->stream);
    if (e != cudaSuccess) return ptcu_cuda_error(e, "cudaGraphLaunch (%zu nodes) on CUDA device %d", g->n_nodes,
                                                 d->ordinal);
    return PT_OK;
}

void ptcu_graph_free(ptcu_device *d, ptcu_graph *g) {
    if (!g) return;
    /* cuBLAS's handle may still name the capture stream (ptcu_blas moves it
     * back at the next eager product): move it now, before the stream goes. */
    pthread_mutex_lock(&d->lock);
    if (g->stream && d->blas_stream == g->stream) (void)ptcu_blas_follow(d, d->stream);
    pthread_mutex_unlock(&d->lock);
    /* Replays already queued run to their end (CUDA keeps what they need). */
    if (g->exec) cudaGraphExecDestroy(g->exec);
    if (g->graph) cudaGraphDestroy(g->graph);
    if (g->stream) cudaStreamDestroy(g->stream);
    for (int32_t i = 0; i < g->n_ops; ++i) ptcu_held_release(d, &g->ops[i].held);
    (void)cudaGetLastError();
    free(g->ops);
    free(g);
}
