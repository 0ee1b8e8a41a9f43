/* A plugin built against the previous release's plugin ABI header still
 * loads (docs/plugins.md): libportable-null.so of PT_OLD_ABI_PLUGIN_DIR is
 * the null skeleton compiled with a frozen copy of that header
 * (old_abi/backend_v2.h), so its table ends before the members appended
 * since (auto_priority and the DLPack members). This program checks that
 * the table really is the old one, that the core admits it, and that the
 * core uses the documented defaults for what it lacks: auto never picks it
 * (auto_priority 0) and its tensors cannot be exported through DLPack (no
 * device type). conformance_null_old_abi runs the conformance suite on it. */
#include <dlfcn.h>
#include <stddef.h>

#include "../unit/check.h"
#include "portable/backend.h"
#include "portable/dlpack.h"

int main(void) {
    /* 1. The plugin's own table: the frozen header's size, shorter than
     * today's by the appended members. */
    void *dl = dlopen(PT_OLD_ABI_PLUGIN_DIR "/libportable-null.so", RTLD_NOW | RTLD_LOCAL);
    CHECK_NOT_NULL(dl);
    if (!dl) {
        printf("dlopen: %s\n", dlerror());
        return check_summary();
    }
    pt_backend_entry_fn entry;
    void *sym = dlsym(dl, PT_BACKEND_ENTRY_SYMBOL);
    memcpy(&entry, &sym, sizeof entry);
    CHECK_NOT_NULL(sym);
    /* No host API: only the table's fixed fields are read here. */
    const pt_backend_vtable *vt = sym ? entry(NULL, PT_BACKEND_ABI_VERSION) : NULL;
    CHECK_NOT_NULL(vt);
    if (vt) {
        CHECK_INT(vt->abi_version, PT_BACKEND_ABI_VERSION);
        CHECK_INT(vt->struct_size, offsetof(pt_backend_vtable, auto_priority));
        CHECK(vt->struct_size < sizeof(pt_backend_vtable));
    }

    /* 2. The core admits it and supplies the defaults. */
    pt_device *d = pt_device_get("null:0");
    CHECK_NOT_NULL(d);
    if (!d) printf("pt_device_get(null:0): %s\n", pt_last_error());
    pt_device *chosen = pt_default_device(); /* PORTABLE_BACKEND=auto (the test's environment) */
    CHECK_NOT_NULL(chosen);
    if (chosen) CHECK(strncmp(pt_device_name(chosen), "null", 4) != 0);
    if (d) {
        int64_t shape[1] = {4};
        pt_tensor *x = pt_empty(d, PT_F32, 1, shape);
        CHECK_NOT_NULL(x);
        pt_clear_error();
        CHECK(x && pt_to_dlpack(x) == NULL);
        CHECK_LAST(PT_ERR_UNSUPPORTED);
        pt_release(x);
    }
    pt_clear_error();
    return check_summary();
}
