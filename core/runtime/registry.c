/* The plugin registry: finds libportable-<name>.so files and admits each one
 * through a checklist (open, entry symbol, ABI version, table size, required
 * members, init, devices). Every failed step is recorded as the backend's
 * reason, which `portable devices` shows and which an error names when the
 * user asks for that backend. Nothing here is fatal: a process with no
 * working plugin still gets clear errors.
 *
 * Two steps, both thread-safe:
 *  - the scan (once, at the first call that needs a backend): the search
 *    folders, each resolved to an absolute path, and the plugin files in
 *    them. Names and paths only: nothing is opened, so listing backends
 *    costs a few readdir calls.
 *  - admission (per backend, the first time that backend is asked for:
 *    pt_cpu, pt_device_get, PORTABLE_BACKEND, or an enumeration call):
 *    dlopen and the checklist. A process that only wants the cpu never maps
 *    PoCL or the CUDA driver.
 *
 * Search order: each directory of PORTABLE_PLUGIN_PATH (colon-separated,
 * read with secure_getenv, so a setuid program ignores it), the directory
 * libportable.so was loaded from (the build tree keeps plugins there), and
 * its subfolder PT_PLUGIN_SUBDIR ("portable": an installed copy keeps them
 * in <libdir>/portable). No absolute install path is compiled in: the
 * plugins are found relative to the real location of libportable.so, so an
 * installed prefix still works after it is moved. Every one is
 * resolved with realpath: a libportable found through a relative
 * LD_LIBRARY_PATH never makes the loader look relative to the working
 * directory. The first regular file found for a name wins; a FIFO, folder
 * or device named like a plugin is skipped (opening a FIFO would block for
 * ever) and named in that backend's reason.
 *
 * A plugin's constructor runs with the program's rights as soon as it is
 * opened, so only files nobody else could have planted are opened, as the
 * OpenCL ICD loader's guidance asks: the file and its folder must be owned
 * by root or by the user running the program, and writable by nobody else
 * (no world-writable folder, sticky or not). Skipped files are named in the
 * backend's reason (`portable devices` shows it even when the backend
 * loaded from another folder). Group-writable folders are accepted: a
 * umask of 002 makes them for every build tree. A shared object without the
 * entry symbol is another library of the project (libportable-dist.so), not
 * a backend, and is not listed at all (plugin_probe.c). */
#define _GNU_SOURCE /* dladdr, secure_getenv */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/runtime.h"

#define PT__MAX_BACKENDS 16
#define PT__MAX_SEARCH_DIRS 16

static pt__backend backends[PT__MAX_BACKENDS];
static int n_backends; /* fixed once the scan is done */
static char search_dirs[PT__MAX_SEARCH_DIRS][PATH_MAX];
static int n_search_dirs;
static pthread_once_t registry_once = PTHREAD_ONCE_INIT;

/* ---- Where libportable.so itself lives ----
 *
 * Taken when the library is loaded, while the working directory is still
 * the one the dynamic loader resolved a relative LD_LIBRARY_PATH (or dlopen
 * path) against; by the first device call the program may have changed
 * directory, and "lib" would then name somebody else's folder. Empty when
 * it cannot be resolved: then that folder is not searched at all. */
static char self_dir[PATH_MAX];

__attribute__((constructor)) static void find_self_dir(void) {
    Dl_info info;
    char real[PATH_MAX];
    if (!dladdr((void *)&pt__registry_init, &info) || !info.dli_fname ||
        !realpath(info.dli_fname, real))
        return;
    char *slash = strrchr(real, '/');
    if (!slash) return;
    *slash = '\0';
    snprintf(self_dir, sizeof self_dir, "%s", slash == real ? "/" : real);
}

/* ---- The scan ---- */

/* Adds the absolute form of dir[0..len) (realpath); a folder that does not
 * exist, or a duplicate, is left out. */
static void add_search_dir(const char *dir, size_t len, bool given_by_user) {
    char given[PATH_MAX], real[PATH_MAX];
    if (len == 0 || len >= sizeof given || n_search_dirs == PT__MAX_SEARCH_DIRS) return;
    memcpy(given, dir, len);
    given[len] = '\0';
    if (!realpath(given, real)) {
        if (given_by_user)
            pt_log_message(PT_LOG_WARN, "PORTABLE_PLUGIN_PATH entry '%s' cannot be used (%s); accepted: "
               "existing folders, separated by ':'; it is skipped", given, strerror(errno));
        return;
    }
    for (int i = 0; i < n_search_dirs; ++i)
        if (strcmp(search_dirs[i], real) == 0) return;
    snprintf(search_dirs[n_search_dirs++], sizeof search_dirs[0], "%s", real);
}

static void collect_search_dirs(void) {
    const char *env = secure_getenv("PORTABLE_PLUGIN_PATH");
    while (env && *env) {
        const char *colon = strchr(env, ':');
        size_t len = colon ? (size_t)(colon - env) : strlen(env);
        add_search_dir(env, len, true); /* an empty entry means nothing (not ".") */
        env = colon ? colon + 1 : NULL;
    }
    add_search_dir(self_dir, strlen(self_dir), false);
    if (self_dir[0]) {
        char installed[PATH_MAX];
        int n = snprintf(installed, sizeof installed, "%s/%s", self_dir, PT_PLUGIN_SUBDIR);
        if (n > 0 && (size_t)n < sizeof installed) add_search_dir(installed, (size_t)n, false);
    }
}

static pt__backend *find_slot(const char *name) {
    for (int i = 0; i < n_backends; ++i)
        if (strcmp(backends[i].name, name) == 0) return &backends[i];
    return NULL;
}

static pt__backend *slot_for(const char *name) {
    pt__backend *b = find_slot(name);
    if (b || n_backends == PT__MAX_BACKENDS) return b;
    b = &backends[n_backends++];
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "%s", name);
    pthread_mutex_init(&b->load_lock, NULL);
    atomic_init(&b->loaded, false);
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

static const char *file_kind(mode_t m) {
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISDIR(m)) return "a folder";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
    return "not a file";
}

/* Whether st (a plugin file or its folder) could only have been made by
 * root or this user; otherwise why not, in why. */
static bool trusted(const char *what, const char *path, const struct stat *st, char *why, size_t cap) {
    if (st->st_uid != 0 && st->st_uid != geteuid()) {
        snprintf(why, cap, "%s %s is owned by uid %u, neither root nor this user (uid %u): not loaded", what,
                 path, (unsigned)st->st_uid, (unsigned)geteuid());
        return false;
    }
    if (st->st_mode & S_IWOTH) {
        snprintf(why, cap, "%s %s is writable by others (mode %o): not loaded", what, path,
                 (unsigned)(st->st_mode & 07777));
        return false;
    }
    return true;
}

/* Whether path is a regular file (after symlinks) that root or this user
 * owns, in a folder only they can write; otherwise why not, in why. Only
 * such files are ever handed to dlopen: opening a FIFO blocks until
 * somebody writes to it, a device may do anything, and another user's file
 * would run its code as this user. */
static bool regular_file(const char *path, char *why, size_t cap) {
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(why, cap, "%s cannot be read: %s", path, strerror(errno));
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, cap, "%s is not a regular file (%s); only regular files are opened",
                 path, file_kind(st.st_mode));
        return false;
    }
    struct stat file = st;
    char folder[PATH_MAX];
    snprintf(folder, sizeof folder, "%s", path);
    char *slash = strrchr(folder, '/');
    if (slash) *slash = '\0';
    if (slash == folder) snprintf(folder, sizeof folder, "/");
    if (stat(slash ? folder : ".", &st) != 0) {
        snprintf(why, cap, "the folder of %s cannot be read: %s", path, strerror(errno));
        return false;
    }
    return trusted("folder", slash ? folder : ".", &st, why, cap) && trusted("plugin", path, &file, why, cap);
}

/* Appends "why" to b's list of skipped files. */
static void note_skipped(pt__backend *b, const char *why) {
    size_t used = strlen(b->skipped);
    if (used + 3 < sizeof b->skipped)
        snprintf(b->skipped + used, sizeof b->skipped - used, "%s%s", used ? "; " : "", why);
}

static void find_plugin_files(void) {
    for (int d = 0; d < n_search_dirs; ++d) {
        /* in name order, so listings and messages do not follow the file system's */
        struct dirent **entries;
        int n = scandir(search_dirs[d], &entries, NULL, alphasort);
        for (int k = 0; k < n; ++k) {
            const struct dirent *e = entries[k];
            char name[32];
            if (!plugin_name(e->d_name, name, sizeof name)) continue;
            pt__backend *b = find_slot(name);
            if (b && b->path[0]) continue; /* an earlier directory wins */
            char path[sizeof b->path], why[sizeof b->reason];
            if (snprintf(path, sizeof path, "%s/%s", search_dirs[d], e->d_name) >= (int)sizeof path)
                continue;
            /* libportable-dist.so and the like: named like a plugin, not one */
            if (pt__file_is_other_library(path, PT_BACKEND_ENTRY_SYMBOL)) continue;
            if (!b) b = slot_for(name);
            if (!b) continue;
            if (regular_file(path, why, sizeof why))
                snprintf(b->path, sizeof b->path, "%s", path);
            else /* kept for `portable devices` and admission's "not found" reason */
                note_skipped(b, why);
        }
        for (int k = 0; k < n; ++k) free(entries[k]);
        if (n > 0) free(entries);
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

/* The admission checklist, up to the table's checks: the file, dlopen, the
 * entry point, the table. Runs once per backend (under b->load_lock); on
 * any failure b->reason says which step and why, and the plugin is closed
 * again. Nothing of the plugin runs but its constructors and its entry
 * point, so auto can rank every plugin it found by auto_priority and start
 * only those it tries. */
static bool open_plugin(pt__backend *b) {
    if (b->open_tried) return b->opened_vt != NULL;
    b->open_tried = true;
    if (!b->path[0]) {
        char dirs[700], skipped[300] = "";
        describe_search(dirs, sizeof dirs);
        if (b->skipped[0]) snprintf(skipped, sizeof skipped, "%s; ", b->skipped);
        snprintf(b->reason, sizeof b->reason,
                 "%splugin libportable-%s.so not found (searched: %s; set PORTABLE_PLUGIN_PATH)",
                 skipped, b->name, dirs);
        return false;
    }
    /* Checked again: the file may have been replaced since the scan. */
    char why[sizeof b->reason];
    if (!regular_file(b->path, why, sizeof why)) {
        snprintf(b->reason, sizeof b->reason, "%s", why);
        return false;
    }
    dlerror();
    b->dl = dlopen(b->path, RTLD_NOW | RTLD_LOCAL);
    if (!b->dl) {
        snprintf(b->reason, sizeof b->reason, "dlopen(%s) failed: %s", b->path, dlerror());
        return false;
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
    b->opened_vt = vt;
    b->auto_priority = pt__vtable_auto_priority(vt);
    return true;
reject:
    dlclose(b->dl);
    b->dl = NULL;
    return false;
}

/* Admission: the plugin opened (above), then init and its devices. */
static void admit(pt__backend *b) {
    if (!open_plugin(b)) return;
    b->vt = b->opened_vt;
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
        pthread_mutex_init(&d->pinned.lock, NULL);
    }
    b->ndev = n;
    b->available = true;
}

/* ---- Shutdown at exit ----
 *
 * Each admitted plugin's shutdown runs once at exit, from an exit handler
 * registered right after its admission: after the handlers registered
 * later (users', and those of plugins admitted later), before those the
 * plugin's own driver registered while it loaded. Handlers run in reverse
 * order of registration, so each one shuts down the latest admission that
 * is still up. */
static pt__backend *admitted[PT__MAX_BACKENDS];
static int n_admitted;
static pthread_mutex_t admitted_lock = PTHREAD_MUTEX_INITIALIZER;

static void shutdown_latest(void) {
    pthread_mutex_lock(&admitted_lock);
    pt__backend *b = n_admitted > 0 ? admitted[--n_admitted] : NULL;
    pthread_mutex_unlock(&admitted_lock);
    if (b) pt__backend_shutdown(b);
}

static void registry_init_once(void) {
    pt__log_init();
    collect_search_dirs();
    find_plugin_files(); /* the backends are the plugins found: the core names none */
}

void pt__registry_init(void) { pthread_once(&registry_once, registry_init_once); }

pt__backend *pt__backend_load(pt__backend *b) {
    if (!b || atomic_load_explicit(&b->loaded, memory_order_acquire)) return b;
    pthread_mutex_lock(&b->load_lock);
    if (!atomic_load_explicit(&b->loaded, memory_order_relaxed)) {
        admit(b);
        if (b->vt) {
            pthread_mutex_lock(&admitted_lock);
            admitted[n_admitted++] = b;
            pthread_mutex_unlock(&admitted_lock);
            atexit(shutdown_latest);
        }
        /* publishes vt, devices, ndev, available and reason */
        atomic_store_explicit(&b->loaded, true, memory_order_release);
    }
    pthread_mutex_unlock(&b->load_lock);
    return b;
}

int pt__backend_total(void) {
    pt__registry_init();
    return n_backends;
}

pt__backend *pt__backend_at(int i) {
    pt__registry_init();
    return i >= 0 && i < n_backends ? &backends[i] : NULL;
}

pt__backend *pt__backend_find(const char *name) {
    pt__registry_init();
    return find_slot(name);
}

int32_t pt__backend_auto_priority(pt__backend *b) {
    if (!b) return 0;
    pthread_mutex_lock(&b->load_lock);
    bool opened = open_plugin(b); /* a loaded backend was opened already: no change */
    int32_t p = opened ? b->auto_priority : 0;
    pthread_mutex_unlock(&b->load_lock);
    return p;
}

char *pt__backend_names(char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < pt__backend_total() && used < cap; ++i)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", pt__backend_at(i)->name);
    if (!buf[0]) snprintf(buf, cap, "(none)");
    return buf;
}
