/* libportable CUDA backend — memory and transfers.
 *
 * Device memory: cudaMalloc/cudaFree (the core's caching allocator sits in
 * front, so these run rarely). Pinned host memory: cudaHostAlloc with
 * cudaHostAllocPortable, so a buffer pinned through one device serves copies
 * on every device. Every copy is queued on the device's stream after the
 * work already there; a synchronous copy then waits for that stream only.
 * Copies between two GPUs wait for both devices' queued work (events), go
 * peer-to-peer when the hardware allows (peer access is enabled on first
 * use), and make the destination's later work wait for them.
 *
 * While a thread records a graph's op for a device (launch_graph.c), its
 * kernels for that device go to the recording's capture stream
 * (ptcu_stream) and the device memory they use (scratch, temporaries) is
 * the graph's: kept in the op's held list until the graph lets it go, as a
 * replay reuses it long after the op's execute has returned. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

pt_status ptcu_vt_alloc(int dev, size_t bytes, void **buf) {
    ptcu_device *d = ptcu_dev(dev);
    pt_status s = ptcu_select(d, "alloc");
    if (s != PT_OK) return s;
    void *p = NULL;
    /* A zero-byte request still gets a distinct, freeable handle. */
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        size_t free_b = 0, total_b = 0;
        (void)cudaGetLastError();
        if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) (void)cudaGetLastError();
        return ptcu_cuda_error(e, "cudaMalloc(%zu bytes) with %zu of %zu bytes free on the device",
                               bytes, free_b, total_b);
    }
    *buf = p;
    return PT_OK;
}

void ptcu_vt_free(int dev, void *buf) {
    ptcu_device *d = ptcu_dev(dev);
    if (!buf || ptcu_select(d, "free") != PT_OK) return;
    cudaError_t e = cudaFree(buf);
    if (e != cudaSuccess) {
        ptcu_host->log(PT_LOG_WARN, "cuda:%d: cudaFree(%p): %s (%s)", dev, buf, cudaGetErrorName(e),
                       cudaGetErrorString(e));
        (void)cudaGetLastError();
    }
}

pt_status ptcu_vt_memory_info(int dev, int64_t *free_bytes, int64_t *total_bytes) {
    ptcu_device *d = ptcu_dev(dev);
    pt_status s = ptcu_select(d, "memory_info");
    if (s != PT_OK) return s;
    size_t free_b = 0, total_b = 0;
    cudaError_t e = cudaMemGetInfo(&free_b, &total_b);
    if (e != cudaSuccess) return ptcu_cuda_error(e, "cudaMemGetInfo");
    *free_bytes = (int64_t)free_b;
    *total_bytes = (int64_t)total_b;
    return PT_OK;
}

pt_status ptcu_vt_host_alloc(int dev, size_t bytes, void **ptr) {
    ptcu_device *d = ptcu_dev(dev);
    pt_status s = ptcu_select(d, "host_alloc");
    if (s != PT_OK) return s;
    void *p = NULL;
    cudaError_t e = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable);
    if (e != cudaSuccess) return ptcu_cuda_error(e, "cudaHostAlloc(%zu bytes, pinned)", bytes);
    *ptr = p;
    return PT_OK;
}

void ptcu_vt_host_free(int dev, void *ptr) {
    (void)dev;
    if (!ptr) return;
    cudaError_t e = cudaFreeHost(ptr);
    if (e != cudaSuccess) {
        ptcu_host->log(PT_LOG_WARN, "cuda: cudaFreeHost(%p): %s (%s)", ptr, cudaGetErrorName(e),
                       cudaGetErrorString(e));
        (void)cudaGetLastError();
    }
}

static pt_status finish_copy(ptcu_device *d, bool async, const char *what, size_t bytes) {
    if (async) return PT_OK;
    cudaError_t e = cudaStreamSynchronize(d->stream);
    if (e != cudaSuccess) return ptcu_cuda_error(e, "%s of %zu bytes: cudaStreamSynchronize", what, bytes);
    return PT_OK;
}

pt_status ptcu_vt_copy_h2d(int dev, void *dst, size_t dst_offset, const void *src, size_t bytes,
                           bool async) {
    ptcu_device *d = ptcu_dev(dev);
    pt_status s = ptcu_select(d, "copy_h2d");
    if (s != PT_OK) return s;
    cudaError_t e = cudaMemcpyAsync((char *)dst + dst_offset, src, bytes, cudaMemcpyHostToDevice, d->stream);
    if (e != cudaSuccess) return ptcu_cuda_error(e, "cudaMemcpyAsync host to device, %zu bytes", bytes);
    return finish_copy(d, async, "host to device copy", bytes);
}

pt_status ptcu_vt_copy_d2h(int dev, void *dst, const void *src, size_t src_offset, size_t bytes,
                           bool async) {
    ptcu_device *d = ptcu_dev(dev);
    pt_status s = ptcu_select(d, "copy_d2h");
    if (s != PT_OK) return s;
    cudaError_t e = cudaMemcpyAsync(dst, (const char *)src + src_offset, bytes, cudaMemcpyDeviceToHost,
                                    d->stream);
    if (e != cudaSuccess) return ptcu_cuda_error(e, "cudaMemcpyAsync device to host, %zu bytes", bytes);
    return finish_copy(d, async, "device to host copy", bytes);
}

pt_status ptcu_vt_copy_d2d(int dev, void *dst, size_t dst_offset, const void *src, size_t src_offset,
                           size_t bytes) {
    ptcu_device *d = ptcu_dev(dev);
    pt_status s = ptcu_select(d, "copy_d2d");
    if (s != PT_OK) return s;
    cudaError_t e = cudaMemcpyAsync((char *)dst + dst_offset, (const char *)src + src_offset, bytes,
                                    cudaMemcpyDeviceToDevice, d->stream);
    if (e != cudaSuccess) return ptcu_cuda_error(e, "cudaMemcpyAsync device to device, %zu bytes", bytes);
    return PT_OK;
}

/* Lets src's context reach dst's memory directly, once per pair. Failure
 * only costs speed: cudaMemcpyPeerAsync stages through the host then. */
static void enable_peer_access(ptcu_device *src, ptcu_device *dst, int dst_dev) {
    pthread_mutex_lock(&src->lock);
    if (!src->peer_tried[dst_dev]) {
        src->peer_tried[dst_dev] = true;
        int can = 0;
        if (cudaDeviceCanAccessPeer(&can, src->ordinal, dst->ordinal) == cudaSuccess && can) {
            cudaError_t e = cudaDeviceEnablePeerAccess(dst->ordinal, 0);
            if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
                ptcu_host->log(PT_LOG_INFO, "cuda: peer access %d -> %d unavailable: %s", src->ordinal,
                               dst->ordinal, cudaGetErrorName(e));
        }
        (void)cudaGetLastError();
    }
    pthread_mutex_unlock(&src->lock);
}

/* Makes the work queued on `to` from now on wait for the work queued on
 * `from` so far (an event recorded on from's stream). Leaves `to` selected.
 * copy names the copy in errors; the roles name the two streams. */
static pt_status order_streams(ptcu_device *from, const char *from_role, ptcu_device *to,
                               const char *to_role, const char *copy) {
    cudaEvent_t ev = NULL;
    char step[64] = "cudaEventCreateWithFlags";
    pt_status s = ptcu_select(from, "copy_peer");
    if (s != PT_OK) return s;
    cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (e == cudaSuccess) {
        snprintf(step, sizeof step, "cudaEventRecord (%s stream)", from_role);
        e = cudaEventRecord(ev, from->stream);
    }
    if (e == cudaSuccess && (s = ptcu_select(to, "copy_peer")) == PT_OK) {
        snprintf(step, sizeof step, "cudaStreamWaitEvent (%s stream)", to_role);
        e = cudaStreamWaitEvent(to->stream, ev, 0);
    }
    /* Destroying a recorded event is fine: its resources go when it completes. */
    if (ev) cudaEventDestroy(ev);
    if (e != cudaSuccess) return ptcu_cuda_error(e, "%s: %s", copy, step);
    return s;
}

pt_status ptcu_vt_copy_peer(int dst_dev, void *dst, size_t dst_offset, int src_dev, const void *src,
                            size_t src_offset, size_t bytes) {
    if (dst_dev == src_dev) return ptcu_vt_copy_d2d(dst_dev, dst, dst_offset, src, src_offset, bytes);
    ptcu_device *dd = ptcu_dev(dst_dev), *sd = ptcu_dev(src_dev);
    char copy[96];
    snprintf(copy, sizeof copy, "copy of %zu bytes from CUDA device %d to %d", bytes, sd->ordinal, dd->ordinal);
    pt_status s = ptcu_select(sd, "copy_peer");
    if (s != PT_OK) return s;
    enable_peer_access(sd, dd, dst_dev);
    /* The destination buffer may still be in use by work queued on dst. */
    if ((s = order_streams(dd, "destination", sd, "source", copy)) != PT_OK) return s;
    cudaError_t e = cudaMemcpyPeerAsync((char *)dst + dst_offset, dd->ordinal, (const char *)src + src_offset,
                                        sd->ordinal, bytes, sd->stream);
    if (e != cudaSuccess) return ptcu_cuda_error(e, "%s: cudaMemcpyPeerAsync", copy);
    /* Later work on dst reads the copy only after it lands. */
    return order_streams(sd, "source", dd, "destination", copy);
}

/* Device memory from the core's caching allocator (pt_host_api's
 * device_alloc), so scratch space is reused without cudaMalloc, shows in
 * pt_memory_stats, and gives way to tensors on out-of-memory. */
static bool core_allocator(void) {
    return ptcu_host->struct_size >= offsetof(pt_host_api, device_free) + sizeof ptcu_host->device_free &&
           ptcu_host->device_alloc && ptcu_host->device_free;
}

static int index_of(const ptcu_device *d) {
    for (int i = 0; i < ptcu_device_total(); ++i)
        if (ptcu_dev(i) == d) return i;
    return -1;
}

/* bytes of d's memory for the plugin's own use; *block NULL when it came
 * from cudaMalloc (a core without device_alloc). */
static pt_status device_scratch_alloc(ptcu_device *d, size_t bytes, void **ptr, void **block) {
    *block = NULL;
    if (core_allocator()) {
        void *buf = NULL;
        size_t offset = 0;
        pt_status s = ptcu_host->device_alloc("cuda", index_of(d), bytes, &buf, &offset, block);
        if (s != PT_OK) return s;
        *ptr = (char *)buf + offset;
        return PT_OK;
    }
    cudaError_t e = cudaMalloc(ptr, bytes);
    if (e != cudaSuccess) return ptcu_cuda_error(e, "cudaMalloc(%zu bytes) for scratch space", bytes);
    return PT_OK;
}

/* Work queued before this call may still use p: the caching allocator hands
 * it out again only to work queued after (one in-order stream per device),
 * and cudaFree waits for the device. */
static void device_scratch_free(ptcu_device *d, void *p, void *block) {
    if (block) ptcu_host->device_free("cuda", index_of(d), block);
    else if (p) cudaFree(p);
}

/* ---- What this thread records (launch_graph.c) ---- */

static _Thread_local struct {
    const ptcu_device *d; /* NULL: not recording */
    cudaStream_t stream;
    ptcu_held *held;
} recording;

void ptcu_record_into(const ptcu_device *d, cudaStream_t stream, ptcu_held *held) {
    recording.d = d;
    recording.stream = stream;
    recording.held = held;
}

cudaStream_t ptcu_stream(const ptcu_device *d) { return recording.d == d ? recording.stream : d->stream; }

/* The recording's held list, when this thread records for d. */
static ptcu_held *held_by_recording(const ptcu_device *d) { return recording.d == d ? recording.held : NULL; }

void ptcu_held_release(ptcu_device *d, ptcu_held *h) {
    for (int i = 0; i < h->n; ++i) device_scratch_free(d, h->blocks[i].ptr, h->blocks[i].block);
    free(h->blocks);
    memset(h, 0, sizeof *h);
}

pt_status ptcu_temp_alloc(ptcu_device *d, size_t bytes, void **ptr, void **block) {
    ptcu_held *h = held_by_recording(d);
    if (h && h->n == h->cap) { /* room first: a block is never left unowned */
        const int cap = h->cap ? 2 * h->cap : 4;
        ptcu_held_block *b = realloc(h->blocks, (size_t)cap * sizeof *b);
        if (!b) return ptcu_fail(PT_ERR_OUT_OF_MEMORY, "out of host memory recording a graph's device memory");
        h->blocks = b;
        h->cap = cap;
    }
    pt_status s = device_scratch_alloc(d, bytes, ptr, block);
    if (s == PT_OK && h) h->blocks[h->n++] = (ptcu_held_block){*ptr, *block};
    return s;
}

void ptcu_temp_free(ptcu_device *d, void *ptr, void *block) {
    if (held_by_recording(d)) return; /* the graph's until ptcu_held_release */
    device_scratch_free(d, ptr, block);
}

void ptcu_scratch_release(ptcu_device *d) {
    device_scratch_free(d, d->scratch, d->scratch_block);
    device_scratch_free(d, d->workspace, d->workspace_block);
    d->scratch = d->scratch_block = d->workspace = d->workspace_block = NULL;
    d->scratch_bytes = 0;
}

pt_status ptcu_scratch(ptcu_device *d, size_t bytes, void **out) {
    if (held_by_recording(d)) { /* a block of the graph's own, never replaced */
        void *block = NULL;
        return ptcu_temp_alloc(d, bytes, out, &block);
    }
    if (bytes <= d->scratch_bytes && d->scratch) {
        *out = d->scratch;
        return PT_OK;
    }
    /* From 10 MiB up the caching allocator gives a block its own segment,
     * so the scratch never pins a shared segment that pt_empty_cache could
     * otherwise return. */
    size_t want = (size_t)10 << 20;
    while (want < bytes) want <<= 1;
    device_scratch_free(d, d->scratch, d->scratch_block);
    d->scratch = d->scratch_block = NULL;
    d->scratch_bytes = 0;
    void *p = NULL, *block = NULL;
    pt_status s = device_scratch_alloc(d, want, &p, &block);
    if (s == PT_ERR_OUT_OF_MEMORY && want > bytes) {
        want = bytes;
        s = device_scratch_alloc(d, want, &p, &block);
    }
    if (s != PT_OK) return s;
    d->scratch = p;
    d->scratch_block = block;
    d->scratch_bytes = want;
    *out = p;
    return PT_OK;
}
