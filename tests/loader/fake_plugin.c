/* A fake backend plugin, built once per way a plugin can be broken (one
 * FAKE_* macro per build, see tests/CMakeLists.txt):
 *   FAKE_BAD_ABI       the vtable says ABI version 999
 *   FAKE_SMALL_STRUCT  the vtable's struct_size is too small for this ABI
 *   FAKE_NO_ENTRY      no pt_backend_entry symbol (another symbol instead)
 *   FAKE_NULL_ENTRY    pt_backend_entry returns NULL (refuses this host)
 *   FAKE_NO_EXECUTE    a required member (execute) is NULL
 *   FAKE_INIT_FAILS    init() fails with a reason given through set_error
 *   FAKE_NO_DEVICES    loads and inits, but has 0 devices and says why
 *   FAKE_PLANTED       a file planted where the loader must never look: its
 *                      constructor writes the file named by PT_PLANTED_MARKER,
 *                      so a test can tell whether it was ever opened
 * Every member that exists fails cleanly if called: the loader must never
 * get as far as using a device of these plugins. */
#include <string.h>

#include <portable/backend.h>

#ifdef FAKE_PLANTED
#include <stdio.h>
#include <stdlib.h>

/* Runs at dlopen, before any entry point: what a hostile plugin would do. */
__attribute__((constructor)) static void planted_constructor(void) {
    const char *marker = getenv("PT_PLANTED_MARKER");
    FILE *f = marker && *marker ? fopen(marker, "w") : NULL;
    if (f) {
        fputs("the planted plugin's constructor ran\n", f);
        fclose(f);
    }
}
#endif

static const pt_host_api *host;

static pt_status fake_init(void) {
    /* through the host API: the application's log handler must get it */
    host->log(PT_LOG_WARN, "fake %s: init logs through the host", FAKE_NAME);
#ifdef FAKE_INIT_FAILS
    host->set_error(PT_ERR_BACKEND, "fake driver: widget firmware missing (code %d)", 42);
    return PT_ERR_BACKEND;
#else
    return PT_OK;
#endif
}

static int fake_device_count(void) { return 0; }
static const char *fake_unavailable_reason(void) { return "fake driver: no widgets attached"; }

static pt_status refuse(void) {
    if (host) host->set_error(PT_ERR_INTERNAL, "fake plugin %s called after admission failed", FAKE_NAME);
    return PT_ERR_INTERNAL;
}
static pt_status fake_device_info(int dev, pt_device_props *out) {
    (void)dev;
    (void)out;
    return refuse();
}
static pt_status fake_alloc(int dev, size_t bytes, void **buf) {
    (void)dev;
    (void)bytes;
    *buf = NULL;
    return refuse();
}
static void fake_free(int dev, void *buf) {
    (void)dev;
    (void)buf;
}
static pt_status fake_copy_h2d(int dev, void *dst, size_t off, const void *src, size_t bytes, bool async) {
    (void)dev, (void)dst, (void)off, (void)src, (void)bytes, (void)async;
    return refuse();
}
static pt_status fake_copy_d2h(int dev, void *dst, const void *src, size_t off, size_t bytes, bool async) {
    (void)dev, (void)dst, (void)off, (void)src, (void)bytes, (void)async;
    return refuse();
}
static pt_status fake_copy_d2d(int dev, void *dst, size_t doff, const void *src, size_t soff, size_t bytes) {
    (void)dev, (void)dst, (void)doff, (void)src, (void)soff, (void)bytes;
    return refuse();
}
static pt_status fake_execute(int dev, const pt_op *op) {
    (void)dev;
    (void)op;
    return refuse();
}
static pt_status fake_synchronize(int dev) {
    (void)dev;
    return refuse();
}

static pt_backend_vtable table = {
    .struct_size = sizeof(pt_backend_vtable),
    .abi_version = PT_BACKEND_ABI_VERSION,
    .name = FAKE_NAME,
    .host_visible = false,
    .init = fake_init,
    .device_count = fake_device_count,
    .unavailable_reason = fake_unavailable_reason,
    .device_info = fake_device_info,
    .alloc = fake_alloc,
    .free = fake_free,
    .copy_h2d = fake_copy_h2d,
    .copy_d2h = fake_copy_d2h,
    .copy_d2d = fake_copy_d2d,
    .execute = fake_execute,
    .synchronize = fake_synchronize,
};

static const pt_backend_vtable *entry(const pt_host_api *h, uint32_t host_abi) {
    (void)host_abi;
    host = h;
#if defined(FAKE_BAD_ABI)
    table.abi_version = 999;
#elif defined(FAKE_SMALL_STRUCT)
    table.struct_size = 16; /* as if built against a much older header */
#elif defined(FAKE_NO_EXECUTE)
    table.execute = NULL;
#elif defined(FAKE_NULL_ENTRY)
    return NULL;
#endif
    return &table;
}

#ifdef FAKE_NO_ENTRY
/* Exported under the wrong name: the loader must not find it. */
PT_PLUGIN_API const pt_backend_vtable *pt_backend_entry_v0(const pt_host_api *h, uint32_t host_abi) {
    return entry(h, host_abi);
}
#else
PT_PLUGIN_API const pt_backend_vtable *pt_backend_entry(const pt_host_api *h, uint32_t host_abi) {
    return entry(h, host_abi);
}
#endif
