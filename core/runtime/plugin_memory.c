/* Device memory a plugin asks the core for (pt_host_api's device_alloc and
 * device_free): its scratch buffers and BLAS workspaces come from the same
 * caching allocator as tensors, so they count in pt_memory_stats, are
 * reused without a driver call, and give way to tensors on out-of-memory
 * (the allocator empties its cache and retries) instead of holding memory
 * the driver can no longer hand out. */
#include <stdio.h>

#include "runtime/runtime.h"

static pt_device *device_of(const char *backend, int dev) {
    pt__backend *b = backend ? pt__backend_find(backend) : NULL;
    if (!b || !b->available || dev < 0 || dev >= b->ndev) return NULL;
    return &b->devices[dev];
}

pt_status pt__plugin_device_alloc(const char *backend, int dev, size_t bytes, void **buf,
                                  size_t *offset, void **block) {
    static const char fn[] = "device_alloc";
    pt_device *d = device_of(backend, dev);
    if (!d || !buf || !offset || !block) {
        pt__host_api()->set_error(PT_ERR_INVALID_ARGUMENT,
                                  "%s: no device %d of backend \"%s\" (or a NULL result pointer)",
                                  fn, dev, backend ? backend : "(null)");
        return PT_ERR_INVALID_ARGUMENT;
    }
    pt__block *b = pt__alloc(d, bytes, fn);
    if (!b) {
        /* The allocator's message (what was asked, what is free) becomes the
         * plugin's reason, which the core prefixes with the public call. */
        pt_status s = pt_last_status();
        pt__host_api()->set_error(s, "%s", pt_last_error());
        return s;
    }
    *buf = b->buf;
    *offset = b->offset;
    *block = b;
    return PT_OK;
}

void pt__plugin_device_free(const char *backend, int dev, void *block) {
    pt_device *d = device_of(backend, dev);
    if (d && block) pt__free(d, (pt__block *)block);
}
