/* libportable cpu backend — the plugin entry point and the one vtable.
 *
 * This file owns every vtable member: admission (pt_backend_entry), memory,
 * transfers and the execute/supports dispatch to the op families (by the
 * family column of op_table.h). Errors are reported by errors.c. Buffers are
 * 64-byte aligned host pointers (host_visible), transfers are memcpy, and
 * execution is immediate, so synchronize has nothing to wait for. */
/* posix_memalign, sysconf: POSIX, also under a strict -std=c11. */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_internal.h"
#include "vecmath.h"

/* Cache-line and AVX-512 friendly: vector loads of a fresh buffer never
 * straddle a line. */
#define PT_CPU_ALIGNMENT 64

/* ---- Lifetime ---- */

static pt_status cpu_init(void) { return PT_OK; }

/* ---- Memory ---- */

static pt_status cpu_aligned_alloc(size_t bytes, void **buf, const char *what) {
    void *p = NULL;
    /* posix_memalign(0) may return NULL; a real block keeps handles unique. */
    int rc = posix_memalign(&p, PT_CPU_ALIGNMENT, bytes ? bytes : PT_CPU_ALIGNMENT);
    if (rc != 0 || !p) {
        *buf = NULL;
        return pt_cpu_fail(PT_ERR_OUT_OF_MEMORY,
                           "%s of %zu bytes failed (posix_memalign: %s); free memory or use "
                           "smaller tensors",
                           what, bytes, strerror(rc ? rc : 12));
    }
    *buf = p;
    return PT_OK;
}

static pt_status cpu_alloc(int dev, size_t bytes, void **buf) {
    (void)dev;
    return cpu_aligned_alloc(bytes, buf, "alloc");
}

static void cpu_free(int dev, void *buf) {
    (void)dev;
    free(buf);
}

/* Any host memory is "pinned" here; cpu_free releases it. */
static pt_status cpu_host_alloc(int dev, size_t bytes, void **ptr) {
    (void)dev;
    return cpu_aligned_alloc(bytes, ptr, "host_alloc");
}

/* ---- Transfers: every device is this process's memory ---- */

static pt_status cpu_copy_h2d(int dev, void *dst, size_t dst_offset, const void *src,
                              size_t bytes, bool async) {
    (void)dev;
    (void)async;
    if (bytes) memmove((char *)dst + dst_offset, src, bytes);
    return PT_OK;
}

static pt_status cpu_copy_d2h(int dev, void *dst, const void *src, size_t src_offset,
                              size_t bytes, bool async) {
    (void)dev;
    (void)async;
    if (bytes) memmove(dst, (const char *)src + src_offset, bytes);
    return PT_OK;
}

static pt_status cpu_copy_d2d(int dev, void *dst, size_t dst_offset, const void *src,
                              size_t src_offset, size_t bytes) {
    (void)dev;
    /* memmove: a copy within one buffer (pt_cat into itself) may overlap. */
    if (bytes) memmove((char *)dst + dst_offset, (const char *)src + src_offset, bytes);
    return PT_OK;
}

static pt_status cpu_copy_peer(int dst_dev, void *dst, size_t dst_offset, int src_dev,
                               const void *src, size_t src_offset, size_t bytes) {
    (void)dst_dev;
    (void)src_dev;
    if (bytes) memmove((char *)dst + dst_offset, (const char *)src + src_offset, bytes);
    return PT_OK;
}

/* ---- Execution ---- */

static pt_status cpu_dispatch(int dev, const pt_op *op, bool run) {
    const pt_op_info *info = pt_op_info_of(op->kind);
    if (!info)
        return pt_cpu_fail(PT_ERR_UNSUPPORTED,
                           "op kind %d is not known to this plugin (built for backend ABI %u); "
                           "rebuild libportable-cpu.so with the core",
                           (int)op->kind, PT_BACKEND_ABI_VERSION);
    switch (info->family) {
    case PT_OP_FAMILY_CREATION:
        return op->kind == PT_OP_RAND_UNIFORM || op->kind == PT_OP_RAND_NORMAL
                   ? pt_cpu_random(op, run)
                   : pt_cpu_creation(op, run);
    case PT_OP_FAMILY_ELEMENTWISE:
        return op->kind == PT_OP_COPY ? pt_cpu_copy(op, run) : pt_cpu_elementwise(op, run);
    case PT_OP_FAMILY_REDUCE: return pt_cpu_reduce(op, run);
    case PT_OP_FAMILY_SOFTMAX: return pt_cpu_softmax(op, run);
    case PT_OP_FAMILY_MATMUL: return pt_cpu_matmul(op, run);
    case PT_OP_FAMILY_INDEX: return pt_cpu_index_op(op, run);
    case PT_OP_FAMILY_WINDOW:
        return op->kind == PT_OP_IM2COL || op->kind == PT_OP_COL2IM ? pt_cpu_window(op, run)
                                                                      : pt_cpu_max_pool(op, run);
    case PT_OP_FAMILY_CONV: return pt_cpu_conv(dev, op, run);
    case PT_OP_FAMILY_NORM: return pt_cpu_channel_stats(op, run);
    }
    return pt_cpu_bad_op(op, "family outside op_table.h");
}

static pt_status cpu_supports(int dev, const pt_op *op) { return cpu_dispatch(dev, op, false); }

static pt_status cpu_execute(int dev, const pt_op *op) { return cpu_dispatch(dev, op, true); }

static pt_status cpu_synchronize(int dev) {
    (void)dev;
    return PT_OK; /* every member completed before returning */
}

/* ---- Device timing for traces ---- */

/* Execution is immediate, so the queue passes a stamp the moment it is
 * recorded: the stamp is the host's clock then, held in the handle itself
 * (nothing to allocate, nothing to leak if a trace is cut off at exit). */
_Static_assert(sizeof(void *) >= sizeof(int64_t), "a stamp handle holds nanoseconds");

static pt_status cpu_stamp_record(int dev, void **stamp) {
    (void)dev;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *stamp = (void *)(uintptr_t)((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
    return PT_OK;
}

static pt_status cpu_stamp_time(int dev, void *stamp, int64_t *ns) {
    (void)dev;
    *ns = (int64_t)(uintptr_t)stamp;
    return PT_OK;
}

static void cpu_stamp_release(int dev, void *stamp) {
    (void)dev;
    (void)stamp;
}

/* ---- Admission ---- */

static const pt_backend_vtable pt_cpu_vtable = {
    .struct_size = sizeof(pt_backend_vtable),
    .abi_version = PT_BACKEND_ABI_VERSION,
    .name = "cpu",
    .host_visible = true,
    .init = cpu_init,
    .shutdown = NULL,
    .device_count = pt_cpu_device_count,
    .unavailable_reason = NULL,
    .device_info = pt_cpu_device_info,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .memory_info = pt_cpu_memory_info,
    .host_alloc = cpu_host_alloc,
    .host_free = cpu_free,
    .copy_h2d = cpu_copy_h2d,
    .copy_d2h = cpu_copy_d2h,
    .copy_d2d = cpu_copy_d2d,
    .copy_peer = cpu_copy_peer,
    .supports = cpu_supports,
    .execute = cpu_execute,
    .synchronize = cpu_synchronize,
    .stamp_record = cpu_stamp_record,
    .stamp_time = cpu_stamp_time,
    .stamp_release = cpu_stamp_release,
};

PT_PLUGIN_API const pt_backend_vtable *pt_backend_entry(const pt_host_api *host,
                                                        uint32_t host_abi) {
    if (host_abi != PT_BACKEND_ABI_VERSION) return NULL;
    pt_cpu_host = host;
    pt_cpu_vecmath_init(); /* before any kernel runs */
    pt_cpu_blas_init();
    return &pt_cpu_vtable;
}
