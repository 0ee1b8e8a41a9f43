/* libportable cpu backend — memory and copies.
 *
 * Buffers are 64-byte aligned host pointers (host_visible), pinned host
 * blocks are the same, and every device is this process's memory, so a
 * transfer in any direction is a memmove that completes before returning
 * (the async flags change nothing). */
/* posix_memalign: POSIX, also under a strict -std=c11. */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Cache-line and AVX-512 friendly: vector loads of a fresh buffer never
 * straddle a line. */
#define PT_CPU_ALIGNMENT 64

static pt_status aligned_alloc_for(size_t bytes, void **buf, const char *what) {
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

pt_status pt_cpu_alloc(int dev, size_t bytes, void **buf) {
    (void)dev;
    return aligned_alloc_for(bytes, buf, "alloc");
}

void pt_cpu_free(int dev, void *buf) {
    (void)dev;
    free(buf);
}

/* Any host memory is "pinned" here; pt_cpu_free releases it. */
pt_status pt_cpu_host_alloc(int dev, size_t bytes, void **ptr) {
    (void)dev;
    return aligned_alloc_for(bytes, ptr, "host_alloc");
}

/* ---- Transfers: every device is this process's memory ---- */

pt_status pt_cpu_copy_h2d(int dev, void *dst, size_t dst_offset, const void *src,
                          size_t bytes, bool async) {
    (void)dev;
    (void)async;
    if (bytes) memmove((char *)dst + dst_offset, src, bytes);
    return PT_OK;
}

pt_status pt_cpu_copy_d2h(int dev, void *dst, const void *src, size_t src_offset,
                          size_t bytes, bool async) {
    (void)dev;
    (void)async;
    if (bytes) memmove(dst, (const char *)src + src_offset, bytes);
    return PT_OK;
}

pt_status pt_cpu_copy_d2d(int dev, void *dst, size_t dst_offset, const void *src,
                          size_t src_offset, size_t bytes) {
    (void)dev;
    /* memmove: a copy within one buffer (pt_cat into itself) may overlap. */
    if (bytes) memmove((char *)dst + dst_offset, (const char *)src + src_offset, bytes);
    return PT_OK;
}

pt_status pt_cpu_copy_peer(int dst_dev, void *dst, size_t dst_offset, int src_dev,
                           const void *src, size_t src_offset, size_t bytes) {
    (void)dst_dev;
    (void)src_dev;
    if (bytes) memmove((char *)dst + dst_offset, (const char *)src + src_offset, bytes);
    return PT_OK;
}
