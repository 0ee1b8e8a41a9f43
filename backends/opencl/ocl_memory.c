/* libportable OpenCL backend — buffers, pinned host memory and transfers.
 *
 * Buffer handles are cl_mem; every transfer uses byte offsets on its buffer
 * (OpenCL has no pointer arithmetic on cl_mem). All commands go to the
 * device's one in-order queue, so a copy follows the work queued before it.
 * OpenCL allocates lazily: a buffer the device cannot hold may only fail at
 * its first use, which then reports PT_ERR_OUT_OF_MEMORY from that call. */
#include <stdlib.h>
#include <string.h>

#include "ocl_internal.h"

pt_status ocl_alloc(int dev, size_t bytes, void **buf) {
    ocl_device *d = NULL;
    pt_status st = ocl_device_ready(dev, "alloc", &d);
    if (st != PT_OK) return st;
    cl_int err = CL_SUCCESS;
    /* OpenCL rejects 0-byte buffers; the core may still ask for one. */
    cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &err);
    if (!m) {
        if (err == CL_INVALID_BUFFER_SIZE)
            return ocl_fail(PT_ERR_OUT_OF_MEMORY,
                            "clCreateBuffer(%zu bytes) failed: CL_INVALID_BUFFER_SIZE (%s "
                            "allows at most CL_DEVICE_MAX_MEM_ALLOC_SIZE bytes per buffer)",
                            bytes, d->name);
        return ocl_cl_fail(err, "clCreateBuffer(%zu bytes) on %s", bytes, d->name);
    }
    *buf = m;
    return PT_OK;
}

void ocl_free(int dev, void *buf) {
    (void)dev;
    /* Safe with commands still queued: OpenCL keeps the memory until they end. */
    if (buf) clReleaseMemObject((cl_mem)buf);
}

pt_status ocl_memory_info(int dev, int64_t *free_bytes, int64_t *total_bytes) {
    if (dev < 0 || dev >= ocl_g.n_devices)
        return ocl_fail(PT_ERR_NO_DEVICE, "memory_info: no OpenCL device %d", dev);
    *free_bytes = -1; /* OpenCL has no portable query for free memory */
    *total_bytes = (int64_t)ocl_g.devices[dev].global_mem;
    return PT_OK;
}

/* ---- Pinned host memory: a CL_MEM_ALLOC_HOST_PTR buffer mapped for the
 * block's whole life. Drivers place such buffers in page-locked memory the
 * device can DMA from, which is what asynchronous copies need. ---- */

pt_status ocl_host_alloc(int dev, size_t bytes, void **ptr) {
    ocl_device *d = NULL;
    pt_status st = ocl_device_ready(dev, "host_alloc", &d);
    if (st != PT_OK) return st;
    size_t n = bytes ? bytes : 1;
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, n, NULL, &err);
    if (!m) return ocl_cl_fail(err, "clCreateBuffer(%zu bytes, CL_MEM_ALLOC_HOST_PTR)", bytes);
    pthread_mutex_lock(&d->lock);
    void *p = clEnqueueMapBuffer(d->queue, m, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, n, 0, NULL,
                                 NULL, &err);
    pthread_mutex_unlock(&d->lock);
    if (!p) {
        clReleaseMemObject(m);
        return ocl_cl_fail(err, "clEnqueueMapBuffer(%zu bytes of pinned host memory)", bytes);
    }
    pthread_mutex_lock(&d->host_lock);
    if (d->n_host_blocks == d->cap_host_blocks) {
        int cap = d->cap_host_blocks ? 2 * d->cap_host_blocks : 16;
        ocl_host_block *grown = realloc(d->host_blocks, (size_t)cap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&d->host_lock);
            clEnqueueUnmapMemObject(d->queue, m, p, 0, NULL, NULL);
            clFinish(d->queue);
            clReleaseMemObject(m);
            return ocl_fail(PT_ERR_OUT_OF_MEMORY, "out of host memory recording a pinned block");
        }
        d->host_blocks = grown;
        d->cap_host_blocks = cap;
    }
    d->host_blocks[d->n_host_blocks].ptr = p;
    d->host_blocks[d->n_host_blocks].mem = m;
    d->n_host_blocks++;
    pthread_mutex_unlock(&d->host_lock);
    *ptr = p;
    return PT_OK;
}

void ocl_host_free(int dev, void *ptr) {
    if (!ptr || dev < 0 || dev >= ocl_g.n_devices) return;
    ocl_device *d = &ocl_g.devices[dev];
    cl_mem m = NULL;
    pthread_mutex_lock(&d->host_lock);
    for (int i = 0; i < d->n_host_blocks; ++i) {
        if (d->host_blocks[i].ptr == ptr) {
            m = d->host_blocks[i].mem;
            d->host_blocks[i] = d->host_blocks[--d->n_host_blocks];
            break;
        }
    }
    pthread_mutex_unlock(&d->host_lock);
    if (!m) {
        ocl_log(PT_LOG_WARN, "host_free(%p): not a pinned block of opencl:%d; ignored", ptr, dev);
        return;
    }
    /* Unmap after every queued use of the block (copies may still read or
     * write it), then let OpenCL free the buffer when the unmap is done. */
    cl_int err = clEnqueueUnmapMemObject(d->queue, m, ptr, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        ocl_log(PT_LOG_WARN, "clEnqueueUnmapMemObject failed: %s", ocl_error_name(err));
    clReleaseMemObject(m);
}

/* ---- Transfers ---- */

/* One blocking (or, with async, queued) transfer between host memory and a
 * buffer: clEnqueueWriteBuffer to_device, clEnqueueReadBuffer otherwise. */
static pt_status ocl_host_transfer(int dev, bool to_device, cl_mem buf, size_t offset,
                                   void *host, size_t bytes, bool async) {
    ocl_device *d = NULL;
    pt_status st = ocl_device_ready(dev, to_device ? "copy_h2d" : "copy_d2h", &d);
    if (st != PT_OK) return st;
    if (bytes == 0) return PT_OK;
    const cl_bool blocking = async ? CL_FALSE : CL_TRUE;
    cl_int err = to_device ? clEnqueueWriteBuffer(d->queue, buf, blocking, offset, bytes, host,
                                                  0, NULL, NULL)
                           : clEnqueueReadBuffer(d->queue, buf, blocking, offset, bytes, host,
                                                 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return ocl_cl_fail(err, "%s(%zu bytes at offset %zu)",
                           to_device ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer", bytes,
                           offset);
    return PT_OK;
}

pt_status ocl_copy_h2d(int dev, void *dst, size_t dst_offset, const void *src, size_t bytes,
                       bool async) {
    /* Only read: clEnqueueWriteBuffer takes it as const. */
    return ocl_host_transfer(dev, true, (cl_mem)dst, dst_offset, (void *)src, bytes, async);
}

pt_status ocl_copy_d2h(int dev, void *dst, const void *src, size_t src_offset, size_t bytes,
                       bool async) {
    return ocl_host_transfer(dev, false, (cl_mem)src, src_offset, dst, bytes, async);
}

pt_status ocl_copy_d2d(int dev, void *dst, size_t dst_offset, const void *src, size_t src_offset,
                       size_t bytes) {
    ocl_device *d = NULL;
    pt_status st = ocl_device_ready(dev, "copy_d2d", &d);
    if (st != PT_OK) return st;
    if (bytes == 0) return PT_OK;
    /* OpenCL forbids overlapping copies within one buffer; the core only
     * copies between distinct regions. */
    cl_int err = clEnqueueCopyBuffer(d->queue, (cl_mem)src, (cl_mem)dst, src_offset, dst_offset,
                                     bytes, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return ocl_cl_fail(err, "clEnqueueCopyBuffer(%zu bytes, offset %zu -> %zu)", bytes,
                           src_offset, dst_offset);
    return PT_OK;
}

pt_status ocl_synchronize(int dev) {
    ocl_device *d = NULL;
    pt_status st = ocl_device_ready(dev, "synchronize", &d);
    if (st != PT_OK) return st;
    cl_int err = clFinish(d->queue);
    if (err != CL_SUCCESS) return ocl_cl_fail(err, "clFinish on %s", d->name);
    return PT_OK;
}

pt_status ocl_scratch(ocl_device *d, size_t bytes, cl_mem *out) {
    if (d->scratch && d->scratch_bytes >= bytes) {
        *out = d->scratch;
        return PT_OK;
    }
    size_t want = bytes < 65536 ? 65536 : bytes;
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, want, NULL, &err);
    if (!m) return ocl_cl_fail(err, "clCreateBuffer(%zu bytes of reduction scratch)", want);
    /* Work already queued keeps the old buffer alive until it ends. */
    if (d->scratch) clReleaseMemObject(d->scratch);
    d->scratch = m;
    d->scratch_bytes = want;
    *out = m;
    return PT_OK;
}
