/* libportable null backend — memory and copies.
 *
 * Buffers are malloc'ed host memory handed to the core as opaque handles
 * (host_visible is false, so the core moves data only through the copy
 * members, as it would for a GPU). Copies are memmove and complete before
 * returning, async ones included: there is nothing to wait for later. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

pt_status null_alloc(int dev, size_t bytes, void **buf) {
    (void)dev;
    /* malloc(0) may return NULL; a real block keeps handles unique. */
    *buf = malloc(bytes ? bytes : 1);
    return *buf ? PT_OK : null_out_of_memory("alloc", bytes);
}

void null_free(int dev, void *buf) {
    (void)dev;
    free(buf);
}

/* Host memory: no figures of its own (-1: unknown). */
pt_status null_memory_info(int dev, int64_t *free_bytes, int64_t *total_bytes) {
    (void)dev;
    *free_bytes = *total_bytes = -1;
    return PT_OK;
}

/* memmove: a copy within one buffer (pt_cat into itself) may overlap. */
static pt_status null_move(void *dst, size_t dst_offset, const void *src, size_t src_offset,
                           size_t bytes) {
    if (bytes) memmove((char *)dst + dst_offset, (const char *)src + src_offset, bytes);
    return PT_OK;
}

pt_status null_copy_h2d(int dev, void *dst, size_t dst_offset, const void *src, size_t bytes,
                        bool async) {
    (void)dev, (void)async;
    return null_move(dst, dst_offset, src, 0, bytes);
}

pt_status null_copy_d2h(int dev, void *dst, const void *src, size_t src_offset, size_t bytes,
                        bool async) {
    (void)dev, (void)async;
    return null_move(dst, 0, src, src_offset, bytes);
}

pt_status null_copy_d2d(int dev, void *dst, size_t dst_offset, const void *src, size_t src_offset,
                        size_t bytes) {
    (void)dev;
    return null_move(dst, dst_offset, src, src_offset, bytes);
}

pt_status null_copy_peer(int dst_dev, void *dst, size_t dst_offset, int src_dev, const void *src,
                         size_t src_offset, size_t bytes) {
    (void)dst_dev, (void)src_dev;
    return null_move(dst, dst_offset, src, src_offset, bytes);
}
