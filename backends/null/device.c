/* libportable null backend — lifetime and devices: one device, <name>:0.
 *
 * A real backend enumerates what its driver offers here, and says why when
 * that is nothing (unavailable_reason). */
#include <string.h>

#include "internal.h"

pt_status null_init(void) { return PT_OK; }

void null_shutdown(void) {}

int null_device_count(void) { return 1; }

/* Only asked when device_count() is 0, which never happens here; a real
 * backend says what is missing (driver, device, permission). */
const char *null_unavailable_reason(void) { return "no devices"; }

static void copy_text(char *dst, size_t cap, const char *src) {
    strncpy(dst, src, cap - 1);
    dst[cap - 1] = '\0';
}

pt_status null_device_info(int dev, pt_device_props *out) {
    (void)dev;
    memset(out, 0, sizeof *out);
    copy_text(out->name, sizeof out->name, PT_BACKEND_NAME " device (runs no ops)");
    copy_text(out->backend, sizeof out->backend, PT_BACKEND_NAME);
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
