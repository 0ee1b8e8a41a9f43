/* libportable null backend — the plugin entry point and the one vtable.
 *
 * A skeleton to copy when starting a backend (README.md): every member of
 * pt_backend_vtable is filled with the simplest thing that is correct, by
 * the file of its role (internal.h). This file holds only the table and the
 * entry point, so nothing calls back into it. */
#include "internal.h"

static const pt_backend_vtable null_vtable = {
    /* What the loader checks before calling anything. */
    .struct_size = sizeof(pt_backend_vtable), .abi_version = PT_BACKEND_ABI_VERSION,
    /* Devices are "<name>:0", ...; buffers are handles, not host pointers. */
    .name = PT_BACKEND_NAME, .host_visible = false,
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
