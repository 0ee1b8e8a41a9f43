/* libportable OpenCL backend — buffers, pinned host memory and transfers.
 *
 * Buffer handles are cl_mem; every transfer uses byte offsets on its buffer
 * (OpenCL has no pointer arithmetic on cl_mem). All commands go to the
 * device's one in-order queue, so a copy follows the work queued before it.
 *
 * Out of memory is a status, never an abort. OpenCL allocates lazily: a
 * buffer the device cannot hold may only fail at its first use, and PoCL
 * then aborts the process on its own assertion instead of returning an
 * error. So a buffer is checked against the device's limits before the
 * driver is asked: at most CL_DEVICE_MAX_MEM_ALLOC_SIZE bytes, and no more
 * than CL_DEVICE_GLOBAL_MEM_SIZE minus the buffers this process holds (a
 * reservation taken atomically, so threads cannot both squeeze into the last
 * gap). On a CPU device, whose memory is the host's, buffers are created
 * with CL_MEM_ALLOC_HOST_PTR: the driver allocates them at once, so a host
 * that is out of memory fails clCreateBuffer (PT_ERR_OUT_OF_MEMORY) instead
 * of the first kernel that touches the buffer. A GPU that still fails
 * lazily reports PT_ERR_OUT_OF_MEMORY from that first call. */
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"

/* Reserves bytes of d's memory for a new buffer, or says which limit it
 * breaks (what names the buffer's use in the message). */
static pt_status ocl_reserve(ocl_device *d, size_t bytes, const char *what) {
    if (d->max_alloc && bytes > d->max_alloc)
        return ocl_fail(PT_ERR_OUT_OF_MEMORY,
                        "%s of %zu bytes refused: %s allows at most %llu bytes per buffer "
                        "(CL_DEVICE_MAX_MEM_ALLOC_SIZE); split the tensor into pieces of at most "
                        "that size, or use a device with a larger limit",
                        what, bytes, d->name, (unsigned long long)d->max_alloc);
    if (!d->global_mem) return PT_OK;
    cl_ulong before = atomic_fetch_add(&d->held, (cl_ulong)bytes);
    if (before + bytes > d->global_mem) {
        atomic_fetch_sub(&d->held, (cl_ulong)bytes);
        cl_ulong left = before < d->global_mem ? d->global_mem - before : 0;
        return ocl_fail(PT_ERR_OUT_OF_MEMORY,
                        "%s of %zu bytes refused: %s has %llu bytes of global memory "
                        "(CL_DEVICE_GLOBAL_MEM_SIZE) and this process holds %llu bytes of buffers, "
                        "leaving %llu; release tensors (and pt_empty_cache) or use smaller batches",
                        what, bytes, d->name, (unsigned long long)d->global_mem,
                        (unsigned long long)before, (unsigned long long)left);
    }
    return PT_OK;
}

static void ocl_unreserve(ocl_device *d, size_t bytes) {
    if (d->global_mem) atomic_fetch_sub(&d->held, (cl_ulong)bytes);
}

/* A device buffer of bytes (> 0) within the limits, reserved in d->held. */
static pt_status ocl_new_buffer(ocl_device *d, size_t bytes, const char *what, cl_mem *out) {
    pt_status st = ocl_reserve(d, bytes, what);
    if (st != PT_OK) return st;
    cl_mem_flags flags = CL_MEM_READ_WRITE;
    if (d->cl_type & CL_DEVICE_TYPE_CPU) flags |= CL_MEM_ALLOC_HOST_PTR; /* allocated now */
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(d->ctx, flags, bytes, NULL, &err);
    if (!m) {
        ocl_unreserve(d, bytes);
        if (err == CL_INVALID_BUFFER_SIZE)
            return ocl_fail(PT_ERR_OUT_OF_MEMORY,
                            "clCreateBuffer(%zu bytes) failed: CL_INVALID_BUFFER_SIZE (%s "
                            "allows at most %llu bytes per buffer, CL_DEVICE_MAX_MEM_ALLOC_SIZE); "
                            "split the tensor",
                            bytes, d->name, (unsigned long long)d->max_alloc);
        return ocl_cl_fail(err, "clCreateBuffer(%zu bytes, %s) on %s", bytes, what, d->name);
    }
    atomic_fetch_add_explicit(&d->buffers_made, 1, memory_order_relaxed); /* see launch_args.c */
    *out = m;
    return PT_OK;
}

/* Releases a buffer made by ocl_new_buffer. Safe with commands still
 * queued: OpenCL keeps the memory until they end. */
static void ocl_release_buffer(ocl_device *d, cl_mem m) {
    size_t size = 0;
    if (clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof size, &size, NULL) == CL_SUCCESS)
        ocl_unreserve(d, size);
    clReleaseMemObject(m);
}

pt_status ocl_alloc(int dev, size_t bytes, void **buf) {
    ocl_device *d = NULL;
    pt_status st = ocl_device_ready(dev, "alloc", &d);
    if (st != PT_OK) return st;
    /* OpenCL rejects 0-byte buffers; the core may still ask for one. */
    cl_mem m = NULL;
    st = ocl_new_buffer(d, bytes ? bytes : 1, "a buffer", &m);
    if (st != PT_OK) return st;
    *buf = m;
    return PT_OK;
}

void ocl_free(int dev, void *buf) {
    if (!buf) return;
    if (dev >= 0 && dev < ocl_g.n_devices) ocl_release_buffer(&ocl_g.devices[dev], (cl_mem)buf);
    else clReleaseMemObject((cl_mem)buf);
}

/* CL_DEVICE_GLOBAL_FREE_MEMORY_AMD (cl_ext.h): two size_t, the free memory
 * in KiB in total and in the largest free block. */
#define OCL_GLOBAL_FREE_MEMORY_AMD 0x4039

/* Free bytes from AMD's cl_amd_device_attribute_query, the one OpenCL query
 * for it (NVIDIA's cl_nv_device_attribute_query has none); -1 elsewhere:
 * unknown, never an estimate. */
static int64_t free_memory(cl_device_id id) {
    size_t n = 0;
    if (clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, 0, NULL, &n) != CL_SUCCESS || n == 0) return -1;
    char *ext = malloc(n + 1);
    if (!ext) return -1;
    bool amd = clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, n, ext, NULL) == CL_SUCCESS &&
               (ext[n] = '\0', strstr(ext, "cl_amd_device_attribute_query") != NULL);
    free(ext);
    size_t kib[2] = {0, 0};
    if (!amd || clGetDeviceInfo(id, OCL_GLOBAL_FREE_MEMORY_AMD, sizeof kib, kib, NULL) != CL_SUCCESS)
        return -1;
    return (int64_t)kib[0] * 1024;
}

pt_status ocl_memory_info(int dev, int64_t *free_bytes, int64_t *total_bytes) {
    if (dev < 0 || dev >= ocl_g.n_devices)
        return ocl_fail(PT_ERR_NO_DEVICE, "memory_info: no OpenCL device %d", dev);
    *free_bytes = free_memory(ocl_g.devices[dev].id);
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
    if (d->blocking_transfers) async = false; /* complete on return, which async allows */
    const cl_bool blocking = async ? CL_FALSE : CL_TRUE;
    cl_int err = to_device ? clEnqueueWriteBuffer(d->queue, buf, blocking, offset, bytes, host,
                                                  0, NULL, NULL)
                           : clEnqueueReadBuffer(d->queue, buf, blocking, offset, bytes, host,
                                                 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return ocl_cl_fail(err, "%s(%zu bytes at offset %zu)",
                           to_device ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer", bytes,
                           offset);
    if (async) clFlush(d->queue); /* start it now (see ocl_execute, exec.c) */
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
    clFlush(d->queue); /* start it now (see ocl_execute, exec.c) */
    return PT_OK;
}

pt_status ocl_scratch(ocl_device *d, size_t bytes, cl_mem *out) {
    if (d->scratch && d->scratch_bytes >= bytes) {
        *out = d->scratch;
        return PT_OK;
    }
    size_t want = bytes < 65536 ? 65536 : bytes;
    cl_mem m = NULL;
    pt_status st = ocl_new_buffer(d, want, "reduction scratch", &m);
    if (st != PT_OK) return st;
    /* Work already queued keeps the old buffer alive until it ends. */
    if (d->scratch) ocl_release_buffer(d, d->scratch);
    d->scratch = m;
    d->scratch_bytes = want;
    *out = m;
    return PT_OK;
}

/* The core's caching allocator, where the core offers it (pt_host_api's
 * device_alloc and device_free, appended members). */
static bool ocl_core_allocator(void) {
    const pt_host_api *h = ocl_host;
    return h && h->struct_size >= offsetof(pt_host_api, device_free) + sizeof h->device_free && h->device_alloc &&
           h->device_free;
}

pt_status ocl_temp_alloc(ocl_device *d, int dev, size_t bytes, cl_mem *mem, size_t *offset, void **block) {
    *block = NULL;
    *offset = 0;
    if (ocl_core_allocator()) {
        void *buf = NULL;
        pt_status st = ocl_host->device_alloc("opencl", dev, bytes, &buf, offset, block);
        if (st == PT_OK) *mem = (cl_mem)buf;
        return st;
    }
    return ocl_new_buffer(d, bytes, "convolution columns", mem);
}

void ocl_temp_free(ocl_device *d, int dev, cl_mem mem, void *block) {
    if (block) ocl_host->device_free("opencl", dev, block);
    else if (mem) ocl_release_buffer(d, mem);
}
