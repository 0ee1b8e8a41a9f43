/* libportable core, runtime layer: errors, the plugin registry, devices, the
 * caching allocator and the one file that calls backends. The layers above
 * (tensor, ops, autograd, nn) include this; it includes none of them.
 * Nothing here is exported; names are pt__*. */
#ifndef PORTABLE_CORE_RUNTIME_H
#define PORTABLE_CORE_RUNTIME_H

#include <pthread.h>
#include <stdatomic.h>

#include "portable/backend.h"
#include "portable/portable.h"

/* Thread-locals read on every op: the initial-exec model reads them with
 * one instruction instead of a __tls_get_addr call (a few percent of a
 * tiny op). Only for small variables: static TLS space is limited when the
 * library is dlopen'ed. */
#define PT__HOT_TLS _Thread_local __attribute__((tls_model("initial-exec")))

/* ---- Errors (status.c) ---- */

/* Sets the thread's last error to "fn: <formatted message>" and returns s. */
pt_status pt__error(pt_status s, const char *fn, const char *fmt, ...) PT_PRINTF(3, 4);
/* After a backend member returned s != PT_OK: sets the last error to
 * "fn: <device>: <what the plugin said>" and returns s. */
pt_status pt__backend_failed(pt_status s, const char *fn, const pt_device *d);
/* The message a plugin left with set_error ("no reason given" if none),
 * cleared; valid until the next call on this thread. */
const char *pt__take_backend_message(void);
/* The host API handed to plugins (set_error stores a pending backend message). */
const pt_host_api *pt__host_api(void);
/* Formats shape as "[2, 3]" into buf. Returns buf. */
char *pt__shape_str(int ndim, const int64_t *shape, char *buf, size_t cap);

/* ---- Backends and devices (registry.c, device.c) ---- */

typedef struct pt__allocator pt__allocator;

typedef struct pt__backend {
    char name[32];
    char path[1024];             /* file loaded, "" if none found */
    void *dl;                    /* dlopen handle */
    const pt_backend_vtable *vt; /* NULL when admission failed */
    bool available;              /* admitted, initialised and >= 1 device */
    char reason[1024];           /* why not available */
    int ndev;
    pt_device *devices;          /* ndev entries */
} pt__backend;

/* Blocks up to 1 MiB come in 512-byte classes with one exact-size bin each;
 * larger ones sit in one list sorted by size and are reused best-fit when
 * they waste at most a quarter of the block. */
#define PT__SMALL_CLASS 512
#define PT__SMALL_LIMIT (1u << 20)
#define PT__SMALL_BINS (PT__SMALL_LIMIT / PT__SMALL_CLASS)

/* A short lock for the allocator's lists and counters: held for a few
 * pointer moves, never across a driver call, so spinning beats a mutex's
 * system-call path (which cost a quarter of a tiny op's time). */
typedef struct pt__spinlock {
    atomic_flag flag;
} pt__spinlock;
void pt__spin_lock(pt__spinlock *l);
void pt__spin_unlock(pt__spinlock *l);

struct pt__allocator {
    pt__spinlock lock;
    struct pt__block *small[PT__SMALL_BINS + 1]; /* bin i: blocks of i * 512 bytes */
    struct pt__block *large;     /* cached blocks over 1 MiB, ascending size */
    int64_t in_use, cached, peak;
};

struct pt_device {
    pt__backend *backend;
    int index;                   /* inside the backend */
    char name[48];               /* "cuda:0" */
    pt__allocator alloc;
};

/* Loads every plugin once (thread-safe); returns the registry. */
void pt__registry_init(void);
int pt__backend_total(void);
/* "dir1, dir2, ..." as searched for plugins. */
const char *pt__plugin_search_path(void);
pt__backend *pt__backend_at(int i);
pt__backend *pt__backend_find(const char *name);

/* ---- Caching allocator (allocator.c) ---- */

/* A block of device memory: buf is the backend handle. */
typedef struct pt__block {
    void *buf;
    size_t size;                 /* rounded size class actually allocated */
    struct pt__block *next;
} pt__block;

/* Returns a block of at least bytes, from the cache or the backend; on
 * out-of-memory empties the cache and retries once, then fails with
 * PT_ERR_OUT_OF_MEMORY naming the request and what is free. fn names the
 * public function for the message. */
pt__block *pt__alloc(pt_device *d, size_t bytes, const char *fn);
/* Returns the block to d's cache (the memory stays with the driver). */
void pt__free(pt_device *d, pt__block *b);

/* ---- Backend calls (backend_calls.c: the one file that calls a plugin's
 * vtable; each wrapper supplies an optional member's default) ---- */

/* Queues op on d; on failure sets the error (naming fn and d) and returns it. */
pt_status pt__execute(const char *fn, pt_device *d, const pt_op *op);
pt_status pt__synchronize(const char *fn, pt_device *d);
pt_status pt__copy_h2d(const char *fn, pt_device *d, void *dst, size_t dst_off, const void *src,
                       size_t bytes, bool async);
pt_status pt__copy_d2h(const char *fn, pt_device *d, void *dst, const void *src, size_t src_off,
                       size_t bytes, bool async);
pt_status pt__copy_d2d(const char *fn, pt_device *d, void *dst, size_t dst_off, const void *src,
                       size_t src_off, size_t bytes);
#endif
