/* libportable OpenCL backend — the plugin's entry point and vtable.
 *
 * Admission: pt_backend_entry checks the host's ABI version and keeps the
 * host API (set_error, log); init lists devices without touching them. A
 * machine without an OpenCL platform still loads this plugin: init succeeds,
 * device_count is 0 and unavailable_reason says why. This file holds only
 * the table and the entry point; each member comes from the file of its
 * role (internal.h), and nothing calls back into it. */
#include "internal.h"

static const pt_backend_vtable ocl_vtable = {
    .struct_size = sizeof(pt_backend_vtable),
    .abi_version = PT_BACKEND_ABI_VERSION,
    .name = "opencl",
    .host_visible = false,
    .init = ocl_init,
    .shutdown = ocl_shutdown,
    .device_count = ocl_device_count,
    .unavailable_reason = ocl_unavailable_reason,
    .device_info = ocl_device_info,
    .alloc = ocl_alloc,
    .free = ocl_free,
    .memory_info = ocl_memory_info,
    .host_alloc = ocl_host_alloc,
    .host_free = ocl_host_free,
    .copy_h2d = ocl_copy_h2d,
    .copy_d2h = ocl_copy_d2h,
    .copy_d2d = ocl_copy_d2d,
    .copy_peer = NULL, /* the core stages through pinned host memory */
    .supports = ocl_supports,
    .execute = ocl_execute,
    .synchronize = ocl_synchronize,
    .marker_record = ocl_marker_record,
    .marker_passed = ocl_marker_passed,
    .marker_release = ocl_marker_release,
    .stamp_record = ocl_stamp_record,
    .stamp_time = ocl_stamp_time,
    .stamp_release = ocl_stamp_release,
    .auto_priority = 100, /* auto: after cuda (200), GPU devices only (the default score) */
    .dlpack_device_type = 4 /* kDLOpenCL */,
    .graph_instantiate = ocl_graph_instantiate,
    .graph_launch = ocl_graph_launch,
    .graph_destroy = ocl_graph_destroy,
    .upload_staging = ocl_upload_staging,
};

PT_PLUGIN_API const pt_backend_vtable *pt_backend_entry(const pt_host_api *host,
                                                        uint32_t host_abi) {
    if (host_abi != PT_BACKEND_ABI_VERSION || !host) return NULL;
    ocl_host = host;
    return &ocl_vtable;
}
