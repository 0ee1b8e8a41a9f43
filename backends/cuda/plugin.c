/* libportable CUDA backend — the plugin's entry point and its vtable.
 *
 * This file holds only the table, pt_backend_entry and the entries that
 * wrap members so that each puts the calling thread's current CUDA device
 * back as it found it (device.c: the plugin never moves a program's own
 * CUDA work). Each member comes from the file of its role (internal.h), and
 * nothing calls back into this file. */
#include <stddef.h>

#include "internal.h"

/* ---- Entries that keep the caller's current device ---- */

#define PTCU_KEEP_DEVICE(call)                                \
    do {                                                      \
        const ptcu_caller_device caller_ = ptcu_caller_now(); \
        pt_status s_ = (call);                                \
        ptcu_caller_restore(caller_);                         \
        return s_;                                            \
    } while (0)

static pt_status entry_device_info(int dev, pt_device_props *out) { PTCU_KEEP_DEVICE(ptcu_vt_device_info(dev, out)); }
static pt_status entry_alloc(int dev, size_t bytes, void **buf) { PTCU_KEEP_DEVICE(ptcu_vt_alloc(dev, bytes, buf)); }
static void entry_free(int dev, void *buf) {
    const ptcu_caller_device c = ptcu_caller_now();
    ptcu_vt_free(dev, buf);
    ptcu_caller_restore(c);
}
static pt_status entry_memory_info(int dev, int64_t *free_bytes, int64_t *total_bytes) {
    PTCU_KEEP_DEVICE(ptcu_vt_memory_info(dev, free_bytes, total_bytes));
}
static pt_status entry_host_alloc(int dev, size_t bytes, void **ptr) {
    PTCU_KEEP_DEVICE(ptcu_vt_host_alloc(dev, bytes, ptr));
}
static pt_status entry_copy_h2d(int dev, void *dst, size_t dst_offset, const void *src, size_t bytes, bool async) {
    PTCU_KEEP_DEVICE(ptcu_vt_copy_h2d(dev, dst, dst_offset, src, bytes, async));
}
static pt_status entry_copy_d2h(int dev, void *dst, const void *src, size_t src_offset, size_t bytes, bool async) {
    PTCU_KEEP_DEVICE(ptcu_vt_copy_d2h(dev, dst, src, src_offset, bytes, async));
}
static pt_status entry_copy_d2d(int dev, void *dst, size_t dst_offset, const void *src, size_t src_offset,
                                size_t bytes) {
    PTCU_KEEP_DEVICE(ptcu_vt_copy_d2d(dev, dst, dst_offset, src, src_offset, bytes));
}
static pt_status entry_copy_peer(int dst_dev, void *dst, size_t dst_offset, int src_dev, const void *src,
                                 size_t src_offset, size_t bytes) {
    PTCU_KEEP_DEVICE(ptcu_vt_copy_peer(dst_dev, dst, dst_offset, src_dev, src, src_offset, bytes));
}
static pt_status entry_execute(int dev, const pt_op *op) { PTCU_KEEP_DEVICE(ptcu_vt_execute(dev, op)); }
static pt_status entry_synchronize(int dev) { PTCU_KEEP_DEVICE(ptcu_vt_synchronize(dev)); }
static pt_status entry_marker_record(int dev, void **marker) {
    PTCU_KEEP_DEVICE(ptcu_vt_marker_record(dev, marker));
}
static pt_status entry_stamp_record(int dev, void **stamp) {
    PTCU_KEEP_DEVICE(ptcu_vt_stamp_record(dev, stamp));
}

static pt_status entry_graph_instantiate(int dev, const pt_op *ops, int32_t n_ops, void **graph) {
    PTCU_KEEP_DEVICE(ptcu_vt_graph_instantiate(dev, ops, n_ops, graph));
}
static pt_status entry_graph_launch(int dev, void *graph, const pt_op *ops, int32_t n_ops, const int32_t *changed,
                                    int32_t n_changed) {
    PTCU_KEEP_DEVICE(ptcu_vt_graph_launch(dev, graph, ops, n_ops, changed, n_changed));
}
static void entry_graph_destroy(int dev, void *graph) {
    const ptcu_caller_device c = ptcu_caller_now();
    ptcu_vt_graph_destroy(dev, graph);
    ptcu_caller_restore(c);
}

static const pt_backend_vtable g_vtable = {
    .struct_size = sizeof(pt_backend_vtable),
    .abi_version = PT_BACKEND_ABI_VERSION,
    .name = "cuda",
    .host_visible = false,
    .init = ptcu_vt_init,
    .shutdown = ptcu_vt_shutdown,
    .device_count = ptcu_vt_device_count,
    .unavailable_reason = ptcu_vt_unavailable_reason,
    .device_info = entry_device_info,
    .alloc = entry_alloc,
    .free = entry_free,
    .memory_info = entry_memory_info,
    .host_alloc = entry_host_alloc,
    .host_free = ptcu_vt_host_free,
    .copy_h2d = entry_copy_h2d,
    .copy_d2h = entry_copy_d2h,
    .copy_d2d = entry_copy_d2d,
    .copy_peer = entry_copy_peer,
    .supports = ptcu_vt_supports,
    .execute = entry_execute,
    .synchronize = entry_synchronize,
    .marker_record = entry_marker_record,
    .marker_passed = ptcu_vt_marker_passed,
    .marker_release = ptcu_vt_marker_release,
    .stamp_record = entry_stamp_record,
    .stamp_time = ptcu_vt_stamp_time,
    .stamp_release = ptcu_vt_stamp_release,
    .auto_priority = 200, /* auto: before opencl (100); every device is a GPU */
    .dlpack_device_type = 2 /* kDLCUDA */, .dlpack_host_device_type = 3 /* kDLCUDAHost */, .dlpack_imports = true,
    .graph_instantiate = entry_graph_instantiate,
    .graph_launch = entry_graph_launch,
    .graph_destroy = entry_graph_destroy,
};

PT_PLUGIN_API const pt_backend_vtable *pt_backend_entry(const pt_host_api *host, uint32_t host_abi) {
    /* A core of another ABI version gets NULL; its loader reports the
     * mismatch. A host API too small to hold the members we call is refused
     * the same way. */
    if (host_abi != PT_BACKEND_ABI_VERSION || !host ||
        host->struct_size < offsetof(pt_host_api, log) + sizeof host->log || !host->set_error ||
        !host->log)
        return NULL;
    ptcu_host = host;
    return &g_vtable;
}
