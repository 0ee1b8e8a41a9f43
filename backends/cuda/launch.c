/* libportable CUDA backend — the device's queue (its stream): waiting for
 * it, markers on it for the core's pinned-block cache, the cuBLAS handle
 * bound to it, and tearing the queues down at shutdown. Kernels are queued
 * through the launch records of kernels.h (exec_<family>.c); trace stamps
 * are launch_stamps.c's, iteration spaces launch_geometry.c's. */
#include <stdio.h>
#include <string.h>

#include "fused.h"
#include "internal.h"

pt_status ptcu_vt_synchronize(int dev) {
    ptcu_device *d = ptcu_dev(dev);
    pt_status s = ptcu_select(d, "synchronize");
    if (s != PT_OK) return s;
    cudaError_t e = cudaStreamSynchronize(d->stream);
    /* An error here usually comes from a kernel queued earlier. */
    if (e != cudaSuccess) return ptcu_cuda_error(e, "cudaStreamSynchronize (an earlier queued operation failed)");
    return PT_OK;
}

/* ---- Queue markers (the core's pinned host-block cache) ---- */

pt_status ptcu_record_event(ptcu_device *d, unsigned flags, const char *what, cudaEvent_t *out) {
    cudaEvent_t ev = NULL;
    cudaError_t e = cudaEventCreateWithFlags(&ev, flags);
    if (e == cudaSuccess) e = cudaEventRecord(ev, d->stream);
    if (e != cudaSuccess) {
        if (ev) cudaEventDestroy(ev);
        return ptcu_cuda_error(e, "%s: cudaEventRecord on CUDA device %d", what, d->ordinal);
    }
    *out = ev;
    return PT_OK;
}

pt_status ptcu_vt_marker_record(int dev, void **marker) {
    ptcu_device *d = ptcu_dev(dev);
    pt_status s = ptcu_select(d, "marker_record");
    cudaEvent_t ev = NULL;
    if (s == PT_OK) s = ptcu_record_event(d, cudaEventDisableTiming, "marker_record", &ev);
    if (s == PT_OK) *marker = ev;
    return s;
}

bool ptcu_vt_marker_passed(int dev, void *marker) {
    (void)dev;
    /* cudaEventQuery needs no current device and never waits. */
    cudaError_t e = cudaEventQuery((cudaEvent_t)marker);
    if (e == cudaSuccess) return true;
    (void)cudaGetLastError(); /* cudaErrorNotReady, or an earlier failure: not reusable yet */
    return false;
}

void ptcu_vt_marker_release(int dev, void *marker) {
    (void)dev;
    if (marker && cudaEventDestroy((cudaEvent_t)marker) != cudaSuccess) (void)cudaGetLastError();
}

pt_status ptcu_blas(ptcu_device *d, cublasHandle_t *out, const pt_op *product) {
    /* A graph makes the handle before capturing (exec.c): its workspace
     * would otherwise become the graph's memory. */
    if (!d->blas && ptcu_stream(d) != d->stream)
        return ptcu_fail(PT_ERR_INTERNAL, "cuBLAS's handle would be made inside a graph's capture");
    if (!d->blas) {
        /* Only here (once per device, and in errors) is the product described. */
        char for_what[128];
        const pt_operand *C = &product->out;
        if (product->kind == PT_OP_MATMUL)
            snprintf(for_what, sizeof for_what, "MATMUL [%lld x %lld] @ [%lld x %lld] x %lld batches (%s)",
                     (long long)C->shape[1], (long long)product->in[0].shape[2],
                     (long long)product->in[0].shape[2], (long long)C->shape[2], (long long)C->shape[0],
                     pt_dtype_table_name(C->dtype));
        else /* a convolution: its output */
            snprintf(for_what, sizeof for_what, "%s into [%lld, %lld, %lld, %lld] (%s)", pt_op_name(product->kind),
                     (long long)C->shape[0], (long long)C->shape[1], (long long)C->shape[2],
                     (long long)C->shape[3], pt_dtype_table_name(C->dtype));
        cublasHandle_t h = NULL;
        cublasStatus_t st = cublasCreate(&h);
        if (st == CUBLAS_STATUS_ALLOC_FAILED) {
            return ptcu_fail(PT_ERR_OUT_OF_MEMORY,
                             "%s: cublasCreate on CUDA device %d returned %s: no device memory left for "
                             "cuBLAS's workspace; release tensors or call pt_empty_cache, then retry",
                             for_what, d->ordinal, cublasGetStatusName(st));
        }
        if (st != CUBLAS_STATUS_SUCCESS)
            return ptcu_blas_error(st, "cublasCreate on CUDA device %d, for %s", d->ordinal, for_what);
        st = cublasSetStream(h, d->stream);
        if (st != CUBLAS_STATUS_SUCCESS) {
            cublasDestroy(h);
            return ptcu_blas_error(st, "cublasSetStream");
        }
        /* cuBLAS's own workspace, from the caching allocator: NVIDIA
         * recommends 32 MiB on Hopper (4 MiB is its default elsewhere), and
         * without one it allocates behind our back. Failing to get it only
         * costs speed: cuBLAS falls back to its default. */
        void *ws = NULL, *ws_block = NULL;
        if (ptcu_temp_alloc(d, PTCU_CUBLAS_WORKSPACE, &ws, &ws_block) == PT_OK) {
            st = cublasSetWorkspace(h, ws, PTCU_CUBLAS_WORKSPACE);
            if (st == CUBLAS_STATUS_SUCCESS) {
                d->workspace = ws;
                d->workspace_block = ws_block;
            } else {
                ptcu_host->log(PT_LOG_INFO, "cuda: cublasSetWorkspace: %s", cublasGetStatusName(st));
                ptcu_temp_free(d, ws, ws_block);
            }
        } else {
            ptcu_host->log(PT_LOG_INFO, "cuda: no device memory for cuBLAS's workspace; using its default");
        }
        d->blas = h;
        d->blas_stream = d->stream;
    }
    /* A graph's capture (launch_graph.c) moves the handle to its stream, the
     * next eager product back. cublasSetStream drops the workspace (cuBLAS
     * falls back to its own pool, which would allocate inside a capture):
     * set it again each time. */
    cublasStatus_t st = ptcu_blas_follow(d, ptcu_stream(d));
    if (st != CUBLAS_STATUS_SUCCESS) return ptcu_blas_error(st, "cublasSetStream / cublasSetWorkspace");
    *out = d->blas;
    return PT_OK;
}

cublasStatus_t ptcu_blas_follow(ptcu_device *d, cudaStream_t stream) {
    if (!d->blas || stream == d->blas_stream) return CUBLAS_STATUS_SUCCESS;
    cublasStatus_t st = cublasSetStream(d->blas, stream);
    if (st == CUBLAS_STATUS_SUCCESS && d->workspace)
        st = cublasSetWorkspace(d->blas, d->workspace, PTCU_CUBLAS_WORKSPACE);
    if (st == CUBLAS_STATUS_SUCCESS) d->blas_stream = stream;
    return st;
}

/* ---- Shutdown: every device's queue and what hangs off it ---- */

void ptcu_vt_shutdown(void) {
    /* At process exit the runtime may already be unloading: errors are
     * ignored. The primary contexts are left alone (cudaDeviceReset would
     * pull memory from under other users of CUDA in this process). */
    for (int i = 0; i < ptcu_device_total(); ++i) {
        ptcu_device *d = ptcu_dev(i);
        /* Devices never used have no context: nothing to tear down. The
         * scratch and workspace go back to the core's allocator (the core
         * outlives its plugins) before the handles to them are wiped. */
        if (__atomic_load_n(&d->up, __ATOMIC_ACQUIRE) == 1 && cudaSetDevice(d->ordinal) == cudaSuccess) {
            if (d->blas) cublasDestroy(d->blas);
            if (d->stream) cudaStreamSynchronize(d->stream);
            ptcu_scratch_release(d);
            if (d->clock_anchor) cudaEventDestroy(d->clock_anchor); /* the trace stamps' */
            if (d->stream) cudaStreamDestroy(d->stream);
        }
        pthread_mutex_destroy(&d->lock);
        pthread_mutex_destroy(&d->up_lock);
        pthread_mutex_destroy(&d->clock_lock);
        memset(d, 0, sizeof *d);
    }
    ptcu_fused_forget();
    ptcu_devices_forget();
    (void)cudaGetLastError();
}
