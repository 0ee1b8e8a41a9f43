/* libportable cpu backend — the plugin entry point and the one vtable.
 *
 * This file holds only the table and pt_backend_entry; each member comes
 * from the file of its role (internal.h): devices (device.c), memory and
 * transfers (memory.c), the queue (launch.c), supports/execute (exec.c).
 * Nothing calls back into it. */
#include "internal.h"
#include "vecmath.h"

static const pt_backend_vtable pt_cpu_vtable = {
    .struct_size = sizeof(pt_backend_vtable),
    .abi_version = PT_BACKEND_ABI_VERSION,
    .name = "cpu",
    .host_visible = true,
    .init = pt_cpu_init,
    .shutdown = NULL,
    .device_count = pt_cpu_device_count,
    .unavailable_reason = NULL,
    .device_info = pt_cpu_device_info,
    .alloc = pt_cpu_alloc,
    .free = pt_cpu_free,
    .memory_info = pt_cpu_memory_info,
    .host_alloc = pt_cpu_host_alloc,
    .host_free = pt_cpu_free,
    .copy_h2d = pt_cpu_copy_h2d,
    .copy_d2h = pt_cpu_copy_d2h,
    .copy_d2d = pt_cpu_copy_d2d,
    .copy_peer = pt_cpu_copy_peer,
    .supports = pt_cpu_supports,
    .execute = pt_cpu_execute,
    .synchronize = pt_cpu_synchronize,
    .stamp_record = pt_cpu_stamp_record,
    .stamp_time = pt_cpu_stamp_time,
    .stamp_release = pt_cpu_stamp_release,
};

PT_PLUGIN_API const pt_backend_vtable *pt_backend_entry(const pt_host_api *host,
                                                        uint32_t host_abi) {
    if (host_abi != PT_BACKEND_ABI_VERSION) return NULL;
    pt_cpu_host = host;
    pt_cpu_vecmath_init(); /* before any kernel runs */
    pt_cpu_blas_init();
    return &pt_cpu_vtable;
}
