/* The plugin registry: finds libportable-<name>.so files and admits each one
 * through a checklist (open, entry symbol, ABI version, table size, required
 * members, init, devices). Every failed step is recorded as the backend's
 * reason, which `portable devices` shows and which an error names when the
 * user asks for that backend. Nothing here is fatal: a process with no
 * working plugin still gets clear errors.
 *
 * Search order: each directory of PORTABLE_PLUGIN_PATH (colon-separated),
 * the directory libportable.so was loaded from (dladdr), the install
 * directory. The first file found for a name wins. */
#define _GNU_SOURCE /* dladdr */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

#define PT__MAX_BACKENDS 16
#define PT__MAX_SEARCH_DIRS 16

static pt__backend backends[PT__MAX_BACKENDS];
static int n_backends;
static char search_dirs[PT__MAX_SEARCH_DIRS][1024];
static int n_search_dirs;
static pthread_once_t registry_once = PTHREAD_ONCE_INIT;

/* The backends every build knows about: listed even when their file is
 * missing, so "why is there no cuda?" always has an answer. */
static const char *const well_known[] = {"cpu", "cuda", "opencl"};

static void add_search_dir(const char *dir, size_t len) {
    if (len == 0 || len >= sizeof search_dirs[0] || n_search_dirs == PT__MAX_SEARCH_DIRS) return;
    for (int i = 0; i < n_search_dirs; ++i)
        if (strlen(search_dirs[i]) == len && strncmp(search_dirs[i], dir, len) == 0) return;
    memcpy(search_dirs[n_search_dirs], dir, len);
    search_dirs[n_search_dirs][len] = '\0';
    ++n_search_dirs;
}

static void collect_search_dirs(void) {
    const char *env = getenv("PORTABLE_PLUGIN_PATH");
    while (env && *env) {
        const char *colon = strchr(env, ':');
        size_t len = colon ? (size_t)(colon - env) : strlen(env);
        add_search_dir(env, len);
        env = colon ? colon + 1 : NULL;
    }
    Dl_info info;
    if (dladdr((void *)&pt__registry_init, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        if (slash) add_search_dir(info.dli_fname, (size_t)(slash - info.dli_fname));
    }
    add_search_dir(PT_PLUGIN_INSTALL_DIR, strlen(PT_PLUGIN_INSTALL_DIR));
}

static pt__backend *slot_for(const char *name) {
    pt__backend *b = pt__backend_find(name);
    if (b || n_backends == PT__MAX_BACKENDS) return b;
    b = &backends[n_backends++];
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "%s", name);
    return b;
}

/* Backend name from "libportable-<name>.so", or false. */
static bool plugin_name(const char *file, char *name, size_t cap) {
    static const char prefix[] = "libportable-", suffix[] = ".so";
    size_t len = strlen(file), pre = sizeof prefix - 1, suf = sizeof suffix - 1;
    if (len <= pre + suf || strncmp(file, prefix, pre) != 0 || strcmp(file + len - suf, suffix) != 0)
        return false;
    size_t n = len - pre - suf;
    if (n >= cap) return false;
    memcpy(name, file + pre, n);
    name[n] = '\0';
    return true;
}

static void find_plugin_files(void) {
    for (int d = 0; d < n_search_dirs; ++d) {
        DIR *dir = opendir(search_dirs[d]);
        if (!dir) continue;
        struct dirent *e;
        while ((e = readdir(dir)) != NULL) {
            char name[32];
            if (!plugin_name(e->d_name, name, sizeof name)) continue;
            pt__backend *b = slot_for(name);
            if (!b || b->path[0]) continue; /* an earlier directory wins */
            snprintf(b->path, sizeof b->path, "%s/%s", search_dirs[d], e->d_name);
        }
        closedir(dir);
    }
}


static void describe_search(char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (int d = 0; d < n_search_dirs && used < cap; ++d)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", d ? ", " : "", search_dirs[d]);
}

static char described_path[2048];
static pthread_once_t described_once = PTHREAD_ONCE_INIT;
static void describe_search_once(void) { describe_search(described_path, sizeof described_path); }

const char *pt__plugin_search_path(void) {
    pt__registry_init();
    pthread_once(&described_once, describe_search_once);
    return described_path;
}

/* The admission checklist. On any failure b->reason says which step and
 * why, and the backend stays unavailable. */
static void admit(pt__backend *b) {
    if (!b->path[0]) {
        char dirs[900];
        describe_search(dirs, sizeof dirs);
        snprintf(b->reason, sizeof b->reason,
                 "plugin libportable-%s.so not found (searched: %s; set PORTABLE_PLUGIN_PATH)",
                 b->name, dirs);
        return;
    }
    dlerror();
    b->dl = dlopen(b->path, RTLD_NOW | RTLD_LOCAL);
    if (!b->dl) {
        snprintf(b->reason, sizeof b->reason, "dlopen(%s) failed: %s", b->path, dlerror());
        return;
    }
    pt_backend_entry_fn entry;
    void *sym = dlsym(b->dl, PT_BACKEND_ENTRY_SYMBOL);
    memcpy(&entry, &sym, sizeof entry); /* object-to-function pointer without a cast warning */
    if (!sym) {
        snprintf(b->reason, sizeof b->reason, "%s has no %s symbol: %s", b->path,
                 PT_BACKEND_ENTRY_SYMBOL, dlerror());
        goto reject;
    }
    const pt_backend_vtable *vt = entry(pt__host_api(), PT_BACKEND_ABI_VERSION);
    if (!vt) {
        snprintf(b->reason, sizeof b->reason,
                 "%s refused to load (%s returned NULL; libportable's ABI version is %u: "
                 "rebuild the plugin against this libportable)",
                 b->path, PT_BACKEND_ENTRY_SYMBOL, PT_BACKEND_ABI_VERSION);
        goto reject;
    }
    if (!pt__backend_check_vtable(b->path, vt, b->reason, sizeof b->reason)) goto reject;
    b->vt = vt;
    int n = pt__backend_start(b);
    if (n <= 0) return;
    b->devices = calloc((size_t)n, sizeof *b->devices);
    if (!b->devices) {
        snprintf(b->reason, sizeof b->reason, "out of host memory listing %d devices", n);
        return;
    }
    for (int i = 0; i < n; ++i) {
        pt_device *d = &b->devices[i];
        d->backend = b;
        d->index = i;
        snprintf(d->name, sizeof d->name, "%s:%d", b->name, i);
        atomic_flag_clear(&d->alloc.lock.flag);
    }
    b->ndev = n;
    b->available = true;
    return;
reject:
    dlclose(b->dl);
    b->dl = NULL;
}

/* Each admitted plugin's shutdown runs once at exit, after the exit handlers
 * registered later than the first library call (users' and plugins'). */
static void shutdown_backends(void) {
    for (int i = n_backends - 1; i >= 0; --i) pt__backend_shutdown(&backends[i]);
}

static void registry_init_once(void) {
    collect_search_dirs();
    for (size_t i = 0; i < sizeof well_known / sizeof well_known[0]; ++i) slot_for(well_known[i]);
    find_plugin_files();
    for (int i = 0; i < n_backends; ++i) admit(&backends[i]);
    atexit(shutdown_backends);
}

void pt__registry_init(void) { pthread_once(&registry_once, registry_init_once); }

int pt__backend_total(void) {
    pt__registry_init();
    return n_backends;
}

pt__backend *pt__backend_at(int i) {
    pt__registry_init();
    return i >= 0 && i < n_backends ? &backends[i] : NULL;
}

pt__backend *pt__backend_find(const char *name) {
    for (int i = 0; i < n_backends; ++i)
        if (strcmp(backends[i].name, name) == 0) return &backends[i];
    return NULL;
}
