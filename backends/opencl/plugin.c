/* libportable OpenCL backend — the plugin's entry point and vtable.
 *
 * Admission: pt_backend_entry checks the host's ABI version and keeps the
 * host API (set_error, log); init lists devices without touching them. A
 * machine without an OpenCL platform still loads this plugin: init succeeds,
 * device_count is 0 and unavailable_reason says why. */
#include <stdio.h>
#include <string.h>

#include "ocl_internal.h"

static void ocl_copy_str(char *dst, size_t cap, const char *src) {
    snprintf(dst, cap, "%s", src);
}

static pt_status ocl_init(void) { return ocl_devices_enumerate(); }

static void ocl_shutdown(void) { ocl_devices_release(); }

static int ocl_device_count(void) { return ocl_g.n_devices; }

static const char *ocl_unavailable_reason(void) {
    return ocl_g.reason[0] ? ocl_g.reason : "no OpenCL devices";
}

static pt_status ocl_device_info(int dev, pt_device_props *out) {
    if (dev < 0 || dev >= ocl_g.n_devices)
        return ocl_fail(PT_ERR_NO_DEVICE, "device_info: no OpenCL device %d (%d present)", dev,
                        ocl_g.n_devices);
    const ocl_device *d = &ocl_g.devices[dev];
    memset(out, 0, sizeof *out);
    ocl_copy_str(out->name, sizeof out->name, d->name);
    ocl_copy_str(out->backend, sizeof out->backend, "opencl");
    ocl_copy_str(out->vendor, sizeof out->vendor, d->vendor);
    snprintf(out->platform, sizeof out->platform, "%s (%s)", d->platform_name,
             d->platform_version);
    ocl_copy_str(out->driver_version, sizeof out->driver_version, d->driver_version);
    out->type = (d->cl_type & CL_DEVICE_TYPE_GPU)           ? PT_DEVICE_GPU
                : (d->cl_type & CL_DEVICE_TYPE_ACCELERATOR) ? PT_DEVICE_ACCELERATOR
                : (d->cl_type & CL_DEVICE_TYPE_CPU)         ? PT_DEVICE_CPU
                                                            : PT_DEVICE_OTHER;
    out->compute_units = (int)d->compute_units;
    out->memory_total = (int64_t)d->global_mem;
    out->memory_free = -1; /* OpenCL cannot tell */
    out->supports_f64 = d->fp64;
    ocl_device_props_extra(d, out);
    return PT_OK;
}

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
    .stamp_record = ocl_stamp_record,
    .stamp_time = ocl_stamp_time,
    .stamp_release = ocl_stamp_release,
    .auto_priority = 100, /* auto: after cuda (200), GPU devices only (the default score) */
    .dlpack_device_type = 4 /* kDLOpenCL */,
};

PT_PLUGIN_API const pt_backend_vtable *pt_backend_entry(const pt_host_api *host,
                                                        uint32_t host_abi) {
    if (host_abi != PT_BACKEND_ABI_VERSION || !host) return NULL;
    ocl_g.host = host;
    return &ocl_vtable;
}
