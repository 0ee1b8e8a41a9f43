/* libportable core, runtime layer: errors, the plugin registry, devices, the
 * caching allocator and the one file that calls backends. The layers above
 * (tensor, ops, autograd, nn) include this; it includes none of them.
 * Nothing here is exported; names are pt__*.
 *
 * Each layer's internal header includes the one below it and the public
 * headers of its own layer only, never the umbrella portable/portable.h:
 * a function of a later layer is undeclared here, so calling it is an
 * implicit declaration, an error in the core's build
 * (-Werror=implicit-function-declaration, core/CMakeLists.txt). This
 * layer's public headers: status.h, device.h, types.h (dtype names and
 * sizes), env.h, log.h, trace.h, version.h, half.h and the plugin ABI
 * (backend.h with op_table.h). */
#ifndef PORTABLE_CORE_RUNTIME_H
#define PORTABLE_CORE_RUNTIME_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>

#include "portable/backend.h"
#include "portable/device.h"
#include "portable/env.h"
#include "portable/graph.h"
#include "portable/log.h"
#include "portable/status.h"
#include "portable/trace.h"
#include "portable/types.h"
#include "portable/version.h"

/* Thread-locals: the initial-exec model reads them with one instruction
 * instead of a __tls_get_addr call (a few percent of a tiny op). A library
 * using it has its whole TLS block placed in glibc's static TLS reserve when
 * it is dlopen'ed (Python's ctypes, plugin hosts), and that reserve is about
 * 512 bytes shared by every such library. So the library's thread-locals,
 * all of them, stay a few words (tests/threads/check_dlopen.sh checks the
 * block's size): anything bigger (error messages, scope lists) lives in a
 * per-thread heap block reached through one of these pointers and freed by
 * a pthread_key destructor when the thread exits. */
#define PT__HOT_TLS _Thread_local __attribute__((tls_model("initial-exec")))

/* ---- Errors (status.c) ---- */

/* Sets the thread's last error to "fn: <formatted message>" and returns s. */
pt_status pt__error(pt_status s, const char *fn, const char *fmt, ...) PT_PRINTF(3, 4);
/* After a public function fn failed in another public function it called:
 * makes the last error read "fn: <the inner message>" (same status), so the
 * message starts with the function the caller called. Returns the status
 * (PT_OK, changing nothing, when no error is set). */
pt_status pt__error_as(const char *fn);
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
    bool host_visible;           /* the table's host_visible, copied at admission */
    bool shut_down;              /* shutdown ran (process exit): no more calls */
    char reason[1024];           /* why not available */
    char skipped[512];           /* plugin files of this name not loaded, and why ("" if none) */
    int ndev;
    pt_device *devices;          /* ndev entries */
    /* Admission runs once, under load_lock, the first time the backend is
     * asked for; loaded (release) publishes every field above. Before it,
     * only name and path are valid. */
    pthread_mutex_t load_lock;
    _Atomic bool loaded;
    /* Opening (dlopen, the entry point, the table's checks) comes before
     * admission's init, on its own when auto only ranks the plugins: under
     * load_lock, like admission. */
    bool open_tried;
    const pt_backend_vtable *opened_vt; /* the checked table, NULL when opening failed */
    int32_t auto_priority;       /* the table's auto_priority (0: its default) */
} pt__backend;

/* Blocks are carved from driver allocations (segments) in 512-byte units.
 * Requests up to 1 MiB come from 2 MiB segments (the small pool), larger ones
 * from 20 MiB segments, or one of their own rounded to 2 MiB from 10 MiB up
 * (the large pool); the pools never share a segment, so small blocks do not
 * pin large segments. See allocator.c. */
#define PT__SMALL_CLASS 512
#define PT__SMALL_LIMIT (1u << 20)
#define PT__SMALL_BINS (PT__SMALL_LIMIT / PT__SMALL_CLASS)
#define PT__SMALL_SEGMENT (2u << 20)
#define PT__SEGMENT_BINS (PT__SMALL_SEGMENT / PT__SMALL_CLASS)
#define PT__SEGMENT_WORDS (PT__SEGMENT_BINS / 64 + 1)

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
    /* Freed small blocks of exact class i, not yet merged with their
     * neighbours: the tiny-op path pops and pushes here. */
    struct pt__block *fast[PT__SMALL_BINS + 1];
    int64_t fast_count;
    /* Merged free blocks of the small pool by class (up to a whole 2 MiB
     * segment), with a bitmap of the non-empty bins for a best-fit search. */
    struct pt__block *small_free[PT__SEGMENT_BINS + 1];
    uint64_t small_map[PT__SEGMENT_WORDS];
    struct pt__block *large_free; /* merged free blocks of the large pool, ascending size */
    uint64_t clock;               /* stamps segments as they become wholly free */
    double gc_ratio;              /* valid when gc_set (pt_set_memory_gc), else the env default */
    bool gc_set;
    int64_t in_use, cached, peak; /* in_use: blocks held by tensors; cached: the rest of the segments */
    int64_t shown_peak;           /* pt_memory_stats' peak: since start or pt_reset_peak_memory */
};

/* Pinned host blocks a device owns, kept for reuse (pinned_cache.c). */
typedef struct pt__pinned_block {
    void *ptr;
    size_t size;                 /* what host_alloc was asked for: the block's class */
    void *marker;                /* queue marker recorded at release (NULL: use sync_ticket) */
    uint64_t sync_ticket;        /* no marker: reusable once sync_done reaches this */
    struct pt__pinned_block *next;
} pt__pinned_block;

typedef struct pt__pinned_cache {
    pthread_mutex_t lock;        /* never held across a host_alloc/host_free call */
    pt__pinned_block *live;      /* handed out */
    pt__pinned_block *released;  /* cached, newest first */
    int64_t cached_bytes, allocs, reuses;
    int32_t n_released; /* blocks on the released list */
    /* Synchronize calls of the device begun and completed (ticket numbers):
     * the fallback "the queue has passed this point" for plugins without
     * queue markers. */
    _Atomic uint64_t sync_started, sync_done;
} pt__pinned_cache;

struct pt_device {
    pt__backend *backend;
    int index;                   /* inside the backend */
    char name[48];               /* "cuda:0" */
    pt__allocator alloc;
    pt__pinned_cache pinned;
    /* Per op kind, the dtypes (bit t) the plugin's supports accepted on this
     * device; asked once per pair. */
    _Atomic unsigned supported[PT_OP_COUNT];
    /* Whether small uploads are staged through pinned blocks (pt__upload):
     * 0 not decided yet, 1 yes, 2 no. */
    _Atomic int staged_uploads;
};

/* Scans the plugin folders once (thread-safe): backend names and files,
 * nothing opened. The functions below call it themselves. */
void pt__registry_init(void);
int pt__backend_total(void);
/* "dir1, dir2, ..." as searched for plugins (absolute paths). */
const char *pt__plugin_search_path(void);
/* Diagnostics (log.c) and the environment parser (env.c): pt_log with a
 * va_list, and the choice parser without its warning (for PORTABLE_LOG,
 * read before the log can take a warning) plus that warning. */
void pt__vlog(pt_log_level level, const char *fmt, va_list ap);
/* Reads PORTABLE_LOG (once) and reports a bad value: at the registry's
 * start, so the warning comes even when nothing else is logged. */
void pt__log_init(void);
int pt__env_choice_quiet(const char *name, const char *const *choices, int fallback, bool *bad);
void pt__env_warn_choice(const char *name, const char *const *choices, int fallback);
/* True when path is a shared object that does not define entry_symbol (a
 * library named like a plugin that is not one); false when it defines it or
 * when the file cannot be judged without loading it (plugin_probe.c). */
bool pt__file_is_other_library(const char *path, const char *entry_symbol);
/* The i-th / named backend, possibly not loaded yet (name and path only). */
pt__backend *pt__backend_at(int i);
pt__backend *pt__backend_find(const char *name);
/* Admits b's plugin the first time it is asked for (thread-safe; later calls
 * are one atomic load); returns b (NULL for NULL). Read available, ndev,
 * devices, vt and reason only after this. */
pt__backend *pt__backend_load(pt__backend *b);
/* b's auto_priority (backend.h; 0, its default, when the plugin does not
 * say or cannot be opened). Opens b's plugin without starting it when it is
 * not loaded yet (thread-safe). */
int32_t pt__backend_auto_priority(pt__backend *b);
/* The names of the backends found, "a, b, c" ("(none)" when none). */
char *pt__backend_names(char *buf, size_t cap);

/* ---- Caching allocator (allocator.c) ---- */

/* A block of device memory: bytes [offset, offset + size) of the segment
 * whose backend handle is buf (handles are opaque, a cl_mem say, so the
 * offset travels beside them into pt_operand.offset). prev/next are the
 * segment's blocks in address order (both NULL: the block is the whole
 * segment); fprev/fnext link free lists. */
typedef struct pt__block {
    void *buf;
    size_t offset;
    size_t size;                 /* multiple of 512 (own blocks: the bytes asked for) */
    struct pt__block *prev, *next;
    struct pt__block *fprev, *fnext;
    uint64_t stamp;              /* when the segment became wholly free */
    unsigned char state;         /* used, cached in a fast bin, or merged free */
    unsigned char large;         /* pool: segments of the large pool */
    unsigned char own;           /* a driver allocation of its own (PORTABLE_NO_MEMORY_CACHING) */
    unsigned char held;          /* a graph replays into it (pt__block_hold) */
    unsigned char orphan;        /* held, and its tensor died: the graph frees it */
} pt__block;

/* Returns a block of at least bytes, from the cache or the backend; on
 * out-of-memory empties the cache and retries once, then fails with
 * PT_ERR_OUT_OF_MEMORY naming the request and what is free. fn names the
 * public function for the message. */
pt__block *pt__alloc(pt_device *d, size_t bytes, const char *fn);
/* Returns the block to d's cache (the memory stays with the driver). A
 * block a graph holds (pt__block_hold) goes back only when the graph lets
 * it go; during a capture the capture sees the free first (graph.c). */
void pt__free(pt_device *d, pt__block *b);
/* A graph keeps b for its replays: a later pt__free of b (its tensor dies)
 * only marks it, and pt__block_unhold gives it back then (or just drops the
 * hold while the tensor lives). */
void pt__block_hold(pt_device *d, pt__block *b);
void pt__block_unhold(pt_device *d, pt__block *b);
/* Gives b back to d's cache past the capture's hook and any hold: memory a
 * graph owns (its arena, blocks it kept alive). */
void pt__free_direct(pt_device *d, pt__block *b);


/* ---- Pinned host-block cache (pinned_cache.c) ----
 *
 * Pinned memory owned by device d (its host_alloc: cudaHostAlloc, a mapped
 * OpenCL buffer) for asynchronous copies. A released block is cached and
 * handed out again, to a request of the same size class, once d's queue has
 * passed a marker recorded at its release (or a synchronize of d began after
 * it); pt_empty_cache(d) frees the cached ones. */
pt_status pt__host_alloc(const char *fn, pt_device *d, size_t bytes, void **ptr);
void pt__host_free(pt_device *d, void *ptr);
/* A pinned block of at least bytes for a staged upload (pt__upload, which
 * stages only on devices with queue markers: without them the block could
 * not be reused before the next synchronize), to be given back with
 * pt__host_free right after the upload is queued; NULL where
 * PT__STAGING_CACHED_BLOCKS released blocks are cached
 * and none of the class is ready (the host is far ahead of d: a synchronous
 * copy lets the queue drain, and each request would ask every pending
 * block's marker), or where none can be had. Never waits and never sets an
 * error. */
#define PT__STAGING_CACHED_BLOCKS 64
void *pt__pinned_staging(pt_device *d, size_t bytes);
/* The host API's device_alloc/device_free (plugin_memory.c): a plugin's
 * scratch space from the caching allocator. */
pt_status pt__plugin_device_alloc(const char *backend, int dev, size_t bytes, void **buf,
                                  size_t *offset, void **block);
void pt__plugin_device_free(const char *backend, int dev, void *block);
/* Frees every cached block (the caller has synchronised d). */
void pt__pinned_release_cached(pt_device *d);
/* Counts for pt_memory_stats. */
void pt__pinned_stats(pt_device *d, int64_t *cached_bytes, int64_t *allocs, int64_t *reuses);

/* ---- Random generator state (rng.c) ---- */

/* Returns the counter for a call drawing n elements and advances it; *seed
 * is the generator's key. While this thread captures a graph the draw is
 * the graph's: the counter is relative to the capture's start and the
 * shared state does not move (each replay advances it instead). */
uint64_t pt__rng_take(uint64_t n, uint64_t *seed);
/* The same draw from the shared state, never the capture's (a replay takes
 * its whole step's draw with it). */
uint64_t pt__rng_advance(uint64_t n, uint64_t *seed);
/* pt_manual_seed: a new key, the counter back to 0. */
void pt__rng_reseed(uint64_t seed);

/* ---- Graph capture (capture.c, graph.c, graph_plan.c) ----
 *
 * The recorder lives in the runtime because everything it watches passes
 * through here: every op reaches pt__execute, every tensor's memory
 * pt__alloc / pt__free, every draw pt__rng_take, every host transfer the
 * copy wrappers. The layers above need no hook of their own except the
 * optimizer's step counters (pt__step_cell). */

typedef struct pt__capture pt__capture;
/* This thread's capture, NULL when it captures nothing (the eager paths'
 * one test). */
extern PT__HOT_TLS pt__capture *pt__capture_now;
/* The device this thread captures on, NULL when none. */
pt_device *pt__capture_device(void);
/* Records op (already coalesced and accepted by supports) in this thread's
 * capture instead of executing it. */
pt_status pt__capture_record(const char *fn, pt_device *d, const pt_op *op);
/* The capture's refusals: each sets the error (naming fn, why and the fix),
 * marks the capture invalid with it and returns the status. */
pt_status pt__capture_refuse_device(const char *fn, pt_device *d);
pt_status pt__capture_refuse_transfer(const char *fn, pt_device *d, const char *what);
/* After a failure that happened while capturing (a plugin refused an op):
 * the capture keeps the last error as its reason. Returns s. */
pt_status pt__capture_fail(pt_status s);
/* Allocation and free of d's blocks while this thread captures on d: the
 * capture tracks the lifetime of the blocks it made, and keeps blocks made
 * before it (freed during it) alive for its replays. pt__capture_free
 * returns true when it took the block (the caller must not free it). */
void pt__capture_alloc(pt_device *d, pt__block *b);
bool pt__capture_free(pt_device *d, pt__block *b);
/* The capture's draw of n random elements: its counter relative to the
 * capture's start. */
uint64_t pt__capture_rng_take(uint64_t n);
/* Memory made before this thread's capture on d, which an op of the capture
 * is about to use: the graph keeps it for its replays (until pt_graph_free;
 * until pt_graph_capture_end when no graph comes of the capture), so the
 * caller may release its tensors while the graph still replays into it.
 * owner is what holds the memory (the tensor layer's storage), b its block
 * (NULL where the allocator does not own the memory: pinned host memory, a
 * DLPack import). Returns true when the capture takes owner: the caller
 * then adds the reference that release(owner) drops. False when d is not
 * the capture's device, b is a block the capture made (its own, planned or
 * an output) or owner is taken already. */
bool pt__capture_keep(pt_device *d, const pt__block *b, void *owner, void (*release)(void *owner));

/* A step counter shared by an optimizer and the graphs that captured its
 * step (reference counted: either may go first). A replay reads steps
 * before launching and adds one after. */
typedef struct pt__step_cell {
    atomic_int refs;
    int64_t steps;
} pt__step_cell;
pt__step_cell *pt__step_cell_new(void);
void pt__step_cell_release(pt__step_cell *c);
/* The scalar of an op that depends on the step number k (1 for the first
 * update): computed on the host at each replay from p[] as the eager step
 * computes it. */
typedef double (*pt__step_scalar_fn)(const double *p, int64_t k);
/* The parameters a step-dependent scalar is computed from (p[]). */
#define PT__STEP_PARAMS 8
/* While capturing (else nothing): the next op recorded, which must be of
 * kind kind, takes its scalar from f(p, cell's steps + 1) at each replay,
 * and the replay counts cell's step. */
void pt__capture_step_scalar(pt__step_cell *cell, pt_op_kind kind, pt__step_scalar_fn f,
                             const double p[PT__STEP_PARAMS]);

/* ---- Op descriptors (descriptor.c) ---- */

/* Every operand an op may have: out, in[], then extra[] (backend.h). */
#define PT__OP_SLOTS (1 + PT_OP_MAX_INPUTS + PT_OP_MAX_EXTRA)
/* Operand k of op (0 is out, 1 + i is in[i], 1 + PT_OP_MAX_INPUTS + j is
 * extra[j]); NULL for one the op does not use (past n_inputs or n_extra,
 * or an absent extra). Whoever rewrites where operands live (a graph's
 * memory plan) goes through this, so no operand is forgotten. */
static inline pt_operand *pt__op_slot(pt_op *op, int k) {
    if (k == 0) return &op->out;
    if (k <= PT_OP_MAX_INPUTS) return k - 1 < op->n_inputs ? &op->in[k - 1] : NULL;
    const int j = k - 1 - PT_OP_MAX_INPUTS;
    return j < op->n_extra && op->extra[j].buf ? &op->extra[j] : NULL;
}

/* Rewrites an element-wise op's operands (out and in[0..n_inputs-1], which
 * share out's shape) with extent-1 dims dropped and neighbouring dims fused
 * where every operand is contiguous over them; the result keeps ndim >= 1.
 * Backends then see a contiguous op of any shape as one 1-D run.
 * pt__execute applies it to every ELEMENTWISE and CREATION op (backend.h
 * promises it; a creation op has only out, which merges to 1-D when
 * contiguous, keeping the flat element order the RNG counts in). */
void pt__coalesce(pt_op *op);

/* Counts op's kind and dtype as reached (pt_op_dtypes_reached) for an op
 * that is offered to a backend other than through pt__execute: a graph's
 * FUSED ops. backend_calls.c */
void pt__note_reached(const pt_op *op);
/* A one-element descriptor of kind in compute dtype t, laid out as its family
 * requires (backend.h), with no buffers: what pt_device_supports asks a
 * plugin about. kind must be in the table. */
void pt__probe_op(pt_op_kind kind, pt_dtype t, pt_op *op);

/* ---- Backend calls (backend_calls.c: the one file that calls a plugin's
 * vtable). Each wrapper names the public function fn in its error and holds
 * the documented default of an optional member; nothing else in the core
 * reads or calls a vtable. ---- */

/* Admission: checks a plugin's table (ABI version, size, required members);
 * false with *reason filled when it cannot be used. */
bool pt__backend_check_vtable(const char *path, const pt_backend_vtable *vt, char *reason,
                              size_t cap);
/* The table's auto_priority, 0 (its default) when absent. */
int32_t pt__vtable_auto_priority(const pt_backend_vtable *vt);
/* Device d's auto_device_score (default: 1 for a GPU, else 0). */
int32_t pt__device_auto_score(pt_device *d);
/* The DLPack members of an admitted backend's table (backend.h), raw: 0 or
 * false when the plugin does not give them; the tensor layer's dlpack.c
 * applies the documented defaults. */
int32_t pt__backend_dlpack_device_type(const pt__backend *b);
int32_t pt__backend_dlpack_host_device_type(const pt__backend *b);
bool pt__backend_dlpack_imports(const pt__backend *b);
/* Runs init, then counts devices; b->reason says why when it returns 0. */
int pt__backend_start(pt__backend *b);
/* shutdown (default: nothing) for every started backend, at process exit. */
void pt__backend_shutdown(pt__backend *b);

pt_status pt__device_info_call(const pt_device *d, pt_device_props *out);
/* (default: device_info's figures) */
pt_status pt__memory_info_call(const pt_device *d, int64_t *free_bytes, int64_t *total_bytes);

pt_status pt__alloc_call(pt_device *d, size_t bytes, void **buf);
void pt__free_call(pt_device *d, void *buf);
/* Pinned host memory for asynchronous copies straight from the plugin
 * (default: malloc/free); the rest of the core goes through the cache below. */
pt_status pt__host_alloc_call(const char *fn, pt_device *d, size_t bytes, void **ptr);
void pt__host_free_call(pt_device *d, void *ptr);
/* As pt__host_alloc_call for a caller with a way that needs no block: false
 * on failure, leaving this thread's error alone. */
bool pt__host_alloc_try(pt_device *d, size_t bytes, void **ptr);
/* Queue markers (backend.h): false from pt__marker_supported when the plugin
 * has none, and then the cache counts synchronize calls instead. */
bool pt__marker_supported(const pt_device *d);
pt_status pt__marker_record(pt_device *d, void **marker);
bool pt__marker_passed(pt_device *d, void *marker);
void pt__marker_release(pt_device *d, void *marker);

/* Queues op on d; on failure sets the error (naming fn and d) and returns it.
 * ELEMENTWISE and CREATION ops are coalesced first. The first time d sees a kind in a
 * dtype, the plugin's supports (default: none, execute decides) is asked, so
 * an op the backend lacks fails with its reason before anything is queued. */
pt_status pt__execute(const char *fn, pt_device *d, pt_op *op);
/* op (compute dtype PT_F16 or PT_BF16, refused by the plugin) run in f32 on
 * d: 16-bit inputs converted into f32 temporaries by the plugin's COPY, the
 * op in f32, the result rounded into op->out by COPY. half_widen.c */
pt_status pt__execute_widened(const char *fn, pt_device *d, const pt_op *op);
/* Waits for d: for a host read, refused while this thread captures on d. */
pt_status pt__synchronize(const char *fn, pt_device *d);
/* Waits for d on the library's own account (the allocator, the pinned
 * cache, traces, a released external tensor): never refused. */
pt_status pt__wait_device(const char *fn, pt_device *d);
/* Graph replay through the plugin (backend.h graph_*; default: execute
 * each op in order). *inst is the plugin's instance from the first launch,
 * NULL when it has none; changed[] lists the ops whose scalar, seed or
 * counter differ from the instantiation. pt__graph_release_call frees it. */
pt_status pt__graph_launch_call(pt_device *d, void **inst, const pt_op *ops, int32_t n_ops,
                                const int32_t *changed, int32_t n_changed);
void pt__graph_release_call(pt_device *d, void *inst);
/* The two halves of pt__graph_launch_call's default, for a traced replay
 * (a span per op): pt__graph_prepare_call makes the plugin's instance on
 * the first replay and says whether the plugin replays the graph itself
 * (*own: then pt__graph_launch_call launches it); otherwise
 * pt__graph_execute_call runs op i of the n_ops (a failure names the
 * device, the op and its index). */
pt_status pt__graph_prepare_call(pt_device *d, void **inst, const pt_op *ops, int32_t n_ops,
                                 bool *own);
pt_status pt__graph_execute_call(pt_device *d, const pt_op *ops, int32_t i, int32_t n_ops);
/* The plugin's verdict on op (supports; default PT_OK: execute decides). */
pt_status pt__supports_call(const char *fn, pt_device *d, const pt_op *op);
pt_status pt__copy_h2d(const char *fn, pt_device *d, void *dst, size_t dst_off, const void *src,
                       size_t bytes, bool async);
/* Host bytes the caller may reuse at return into d's memory, after d's queued
 * work: up to PT__STAGED_UPLOAD_MAX bytes through a pinned block and queued
 * (the host goes on while d works), larger ones synchronously. */
#define PT__STAGED_UPLOAD_MAX ((size_t)1 << 20)
pt_status pt__upload(const char *fn, pt_device *d, void *dst, size_t dst_off, const void *src,
                     size_t bytes);
pt_status pt__copy_d2h(const char *fn, pt_device *d, void *dst, const void *src, size_t src_off,
                       size_t bytes, bool async);
pt_status pt__copy_d2d(const char *fn, pt_device *d, void *dst, size_t dst_off, const void *src,
                       size_t src_off, size_t bytes);
/* Between two accelerator devices, after the source's queued work: the
 * plugin's copy_peer when both are its devices, else (the default) staged
 * through pinned host memory of the source device. Returns when the copy is
 * queued on dst (copy_peer) or complete (staged). */
pt_status pt__copy_peer(const char *fn, pt_device *dst_dev, void *dst, size_t dst_off,
                        pt_device *src_dev, const void *src, size_t src_off, size_t bytes);
#endif
