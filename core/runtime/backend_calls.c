/* The one file that calls a backend's execution, ordering and transfer
 * members: each wrapper turns a failed call into an error naming the public
 * function and the device, with the plugin's own reason. */
#include "runtime/runtime.h"

pt_status pt__execute(const char *fn, pt_device *d, const pt_op *op) {
    pt_status s = d->backend->vt->execute(d->index, op);
    return s == PT_OK ? PT_OK : pt__backend_failed(s, fn, d);
}

pt_status pt__synchronize(const char *fn, pt_device *d) {
    pt_status s = d->backend->vt->synchronize(d->index);
    return s == PT_OK ? PT_OK : pt__backend_failed(s, fn, d);
}

pt_status pt__copy_h2d(const char *fn, pt_device *d, void *dst, size_t dst_off, const void *src,
                       size_t bytes, bool async) {
    if (bytes == 0) return PT_OK;
    pt_status s = d->backend->vt->copy_h2d(d->index, dst, dst_off, src, bytes, async);
    return s == PT_OK ? PT_OK : pt__backend_failed(s, fn, d);
}

pt_status pt__copy_d2h(const char *fn, pt_device *d, void *dst, const void *src, size_t src_off,
                       size_t bytes, bool async) {
    if (bytes == 0) return PT_OK;
    pt_status s = d->backend->vt->copy_d2h(d->index, dst, src, src_off, bytes, async);
    return s == PT_OK ? PT_OK : pt__backend_failed(s, fn, d);
}

pt_status pt__copy_d2d(const char *fn, pt_device *d, void *dst, size_t dst_off, const void *src,
                       size_t src_off, size_t bytes) {
    if (bytes == 0) return PT_OK;
    pt_status s = d->backend->vt->copy_d2d(d->index, dst, dst_off, src, src_off, bytes);
    return s == PT_OK ? PT_OK : pt__backend_failed(s, fn, d);
}

