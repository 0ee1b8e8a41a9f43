/* libportable null backend — the plugin entry point and the one vtable.
 *
 * A skeleton to copy when starting a backend (README.md): every member of
 * pt_backend_vtable is filled with the simplest thing that is correct. One
 * device, "null:0", whose buffers are malloc'ed host memory handed to the
 * core as opaque handles (host_visible is false, so the core moves data only
 * through the copy members, as it would for a GPU). Copies are memmove and
 * complete before returning, so synchronize has nothing to wait for. No op
 * runs: supports and execute answer PT_ERR_UNSUPPORTED naming the op, which
 * the conformance suite reports as a skip. */
#include <stdlib.h>
#include <string.h>

#include "null_errors.h"

/* ---- Lifetime ---- */

static pt_status null_init(void) { return PT_OK; }

static void null_shutdown(void) {}

/* ---- Devices ---- */

static int null_device_count(void) { return 1; }

/* Only asked when device_count() is 0, which never happens here; a real
 * backend says what is missing (driver, device, permission). */
static const char *null_unavailable_reason(void) { return "no devices"; }

static void copy_text(char *dst, size_t cap, const char *src) {
    strncpy(dst, src, cap - 1);
    dst[cap - 1] = '\0';
}

static pt_status null_device_info(int dev, pt_device_props *out) {
    (void)dev;
    memset(out, 0, sizeof *out);
    copy_text(out->name, sizeof out->name, "null device (runs no ops)");
    copy_text(out->backend, sizeof out->backend, "null");
    copy_text(out->vendor, sizeof out->vendor, "libportable");
    copy_text(out->platform, sizeof out->platform, "none");
    copy_text(out->driver_version, sizeof out->driver_version, "none");
    out->type = PT_DEVICE_OTHER;
    out->compute_units = 1;
    out->memory_total = -1; /* host memory: no figure of our own */
    out->memory_free = -1;
    out->supports_f64 = true;
    return PT_OK;
}

/* ---- Memory: plain host memory behind opaque handles ---- */

static pt_status null_alloc(int dev, size_t bytes, void **buf) {
    (void)dev;
    /* malloc(0) may return NULL; a real block keeps handles unique. */
    *buf = malloc(bytes ? bytes : 1);
    return *buf ? PT_OK : null_out_of_memory("alloc", bytes);
}

static void null_free(int dev, void *buf) {
    (void)dev;
    free(buf);
}

/* Host memory: no figures of its own (-1: unknown). */
static pt_status null_memory_info(int dev, int64_t *free_bytes, int64_t *total_bytes) {
    (void)dev;
    *free_bytes = *total_bytes = -1;
    return PT_OK;
}

/* ---- Transfers: synchronous, async included (nothing to wait for later) ---- */

/* memmove: a copy within one buffer (pt_cat into itself) may overlap. */
static pt_status null_move(void *dst, size_t dst_offset, const void *src, size_t src_offset,
                           size_t bytes) {
    if (bytes) memmove((char *)dst + dst_offset, (const char *)src + src_offset, bytes);
    return PT_OK;
}

static pt_status null_copy_h2d(int dev, void *dst, size_t dst_offset, const void *src,
                               size_t bytes, bool async) {
    (void)dev, (void)async;
    return null_move(dst, dst_offset, src, 0, bytes);
}

static pt_status null_copy_d2h(int dev, void *dst, const void *src, size_t src_offset,
                               size_t bytes, bool async) {
    (void)dev, (void)async;
    return null_move(dst, 0, src, src_offset, bytes);
}

static pt_status null_copy_d2d(int dev, void *dst, size_t dst_offset, const void *src,
                               size_t src_offset, size_t bytes) {
    (void)dev;
    return null_move(dst, dst_offset, src, src_offset, bytes);
}

static pt_status null_copy_peer(int dst_dev, void *dst, size_t dst_offset, int src_dev,
                                const void *src, size_t src_offset, size_t bytes) {
    (void)dst_dev, (void)src_dev;
    return null_move(dst, dst_offset, src, src_offset, bytes);
}

/* ---- Execution: a real backend dispatches on pt_op_info_of(op->kind)->family ---- */

static pt_status null_supports(int dev, const pt_op *op) {
    (void)dev;
    return null_unsupported(op);
}

static pt_status null_execute(int dev, const pt_op *op) {
    (void)dev;
    return null_unsupported(op);
}

static pt_status null_synchronize(int dev) {
    (void)dev;
    return PT_OK; /* every member completed before returning */
}

/* ---- Admission ---- */

static const pt_backend_vtable null_vtable = {
    /* What the loader checks before calling anything. */
    .struct_size = sizeof(pt_backend_vtable), .abi_version = PT_BACKEND_ABI_VERSION,
    /* Devices are "null:0", ...; buffers are handles, not host pointers. */
    .name = "null", .host_visible = false,
    .init = null_init, .shutdown = null_shutdown,
    .device_count = null_device_count, .unavailable_reason = null_unavailable_reason,
    .device_info = null_device_info,
    .alloc = null_alloc, .free = null_free, .memory_info = null_memory_info,
    /* Nothing to pin: copies are synchronous, so any memory will do. */
    .host_alloc = null_alloc, .host_free = null_free,
    .copy_h2d = null_copy_h2d, .copy_d2h = null_copy_d2h,
    .copy_d2d = null_copy_d2d, .copy_peer = null_copy_peer,
    .supports = null_supports, .execute = null_execute, .synchronize = null_synchronize,
};

PT_PLUGIN_API const pt_backend_vtable *pt_backend_entry(const pt_host_api *host,
                                                        uint32_t host_abi) {
    if (host_abi != PT_BACKEND_ABI_VERSION) return NULL;
    null_set_host(host);
    return &null_vtable;
}
