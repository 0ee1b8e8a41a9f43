/* libportable core — internal structures and helpers shared by core/ files.
 * Nothing here is exported; names are pt__*. */
#ifndef PORTABLE_CORE_INTERNAL_H
#define PORTABLE_CORE_INTERNAL_H

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

/* ---- Tensors (tensor.c) ---- */

typedef enum pt__storage_kind {
    PT__STORAGE_DEVICE,          /* from the device's caching allocator */
    PT__STORAGE_PINNED           /* host memory from pinned_owner's host_alloc (cpu tensors) */
} pt__storage_kind;

typedef struct pt__storage {
    atomic_int refs;
    pt_device *dev;
    pt__storage_kind kind;
    pt__block *block;            /* PT__STORAGE_DEVICE */
    void *buf;                   /* handle passed to the backend (block->buf or the host ptr) */
    size_t bytes;
    pt_device *pinned_owner;     /* PT__STORAGE_PINNED: whose host_free to call */
    void *record;                /* the allocation holding this record: itself, or the
                                    handle it was born with (one malloc per new tensor) */
} pt__storage;

struct pt__grad_meta;            /* autograd state, owned by core/autograd*.c */

struct pt_tensor {
    atomic_int refs;
    int scope_regs;              /* references held by scopes of the creating thread */
    pt__storage *st;
    size_t offset;               /* bytes from st->buf to element [0, ..., 0] */
    pt_dtype dtype;
    int ndim;
    int64_t shape[PT_MAX_DIMS];
    int64_t strides[PT_MAX_DIMS]; /* elements */
    struct pt__grad_meta *grad;  /* NULL unless autograd touched it */
};

/* A new contiguous tensor with fresh storage on d (contents undefined).
 * Validates ndim/shape and names fn in errors. Not registered in a scope. */
pt_tensor *pt__tensor_new(const char *fn, pt_device *d, pt_dtype t, int ndim,
                          const int64_t *shape);
/* A new view of x's storage (retains the storage). strides in elements,
 * offset in bytes from the storage start. Not registered in a scope. */
pt_tensor *pt__tensor_view(pt_tensor *x, int ndim, const int64_t *shape, const int64_t *strides,
                           size_t offset);
/* A tensor over pinned host memory owned by owner (for pt_to_async to cpu). */
pt_tensor *pt__tensor_pinned(const char *fn, pt_device *cpu, pt_device *owner, pt_dtype t,
                             int ndim, const int64_t *shape);
/* Registers a reference being returned to the user in the innermost scope of
 * this thread (if any). Every public function returning a new reference ends
 * with `return pt__ret(x);`. NULL passes through. */
pt_tensor *pt__ret(pt_tensor *x);
/* Drops a reference the library holds itself (taken with pt_retain or made
 * by an internal, unregistered constructor), never a scope's record. */
void pt__drop(pt_tensor *x);
/* Contiguous strides for shape. */
void pt__contiguous_strides(int ndim, const int64_t *shape, int64_t *strides);
int64_t pt__numel(int ndim, const int64_t *shape);
bool pt__is_contiguous(const pt_tensor *x);
/* Validates a shape: 0 <= ndim <= PT_MAX_DIMS, every extent >= 0, the element
 * count fits in memory arithmetic. */
pt_status pt__check_shape(const char *fn, int ndim, const int64_t *shape);
pt_status pt__check_dtype(const char *fn, pt_dtype t);
/* Same device for all n tensors, else PT_ERR_DEVICE_MISMATCH naming both
 * devices and the fix. */
pt_status pt__check_same_device(const char *fn, int n, pt_tensor *const *xs);
/* Resolves a possibly negative dim against ndim; error names fn and values. */
pt_status pt__resolve_dim(const char *fn, int dim, int ndim, int *out);

/* ---- Dispatch (dispatch.c: the one file that calls the vtable's execution
 * and transfer members) ---- */

/* Fills an operand describing x as it is. */
void pt__operand(const pt_tensor *x, pt_operand *out);
/* Fills an operand describing x broadcast to (ndim, shape): missing leading
 * dims and size-1 dims get stride 0. Caller checked broadcastability. */
void pt__operand_broadcast(const pt_tensor *x, int ndim, const int64_t *shape, pt_operand *out);
/* Queues op on d; on failure sets the error (naming fn and d) and returns it. */
pt_status pt__execute(const char *fn, pt_device *d, const pt_op *op);
pt_status pt__synchronize(const char *fn, pt_device *d);
pt_status pt__copy_h2d(const char *fn, pt_device *d, void *dst, size_t dst_off, const void *src,
                       size_t bytes, bool async);
pt_status pt__copy_d2h(const char *fn, pt_device *d, void *dst, const void *src, size_t src_off,
                       size_t bytes, bool async);
pt_status pt__copy_d2d(const char *fn, pt_device *d, void *dst, size_t dst_off, const void *src,
                       size_t src_off, size_t bytes);
/* Host pointer of a host-visible buffer (cpu backend) plus offset. */
void *pt__host_ptr(const pt_tensor *x);

/* ---- Random generator state (creation.c) ---- */
/* Copies src into dst when they live on different devices (transfer.c):
 * broadcasting and casting like pt_copy_. */
pt_status pt__copy_cross_device(pt_tensor *dst, pt_tensor *src);

/* Returns the counter for a call drawing n elements and advances it. */
uint64_t pt__rng_take(uint64_t n, uint64_t *seed);

/* ---- Autograd hook (autograd.c) ----
 * Ops call pt__grad_record after computing out when pt__grad_wanted says an
 * input needs a gradient. */
typedef enum pt__grad_op {
    PT__G_ADD, PT__G_SUB, PT__G_MUL, PT__G_DIV, PT__G_POW, PT__G_MAXIMUM, PT__G_MINIMUM,
    PT__G_ADD_SCALAR, PT__G_MUL_SCALAR, PT__G_NEG, PT__G_ABS, PT__G_EXP, PT__G_LOG,
    PT__G_SQRT, PT__G_RELU, PT__G_SIGMOID, PT__G_TANH, PT__G_WHERE, PT__G_SUM, PT__G_MEAN,
    PT__G_MAX, PT__G_NORM, PT__G_SOFTMAX, PT__G_LOG_SOFTMAX, PT__G_MATMUL, PT__G_RESHAPE,
    PT__G_TRANSPOSE, PT__G_PERMUTE, PT__G_NARROW, PT__G_EXPAND, PT__G_CONTIGUOUS,
    PT__G_CAST, PT__G_CAT, PT__G_STACK, PT__G_GATHER
} pt__grad_op;

typedef struct pt__grad_args {
    int dim;                     /* reductions (PT_ALL too), softmax, transpose d0, cat/stack, gather, narrow */
    int dim2;                    /* transpose d1 */
    bool keepdim;
    double scalar;               /* *_SCALAR */
    int64_t start, length;       /* narrow */
    int n_ints;
    int ints[PT_MAX_DIMS];       /* permute perm, norm_dims dims */
} pt__grad_args;

/* True when grad mode is on and any of the n inputs requires grad. */
bool pt__grad_wanted(int n, pt_tensor *const *inputs);
/* Records out = op(inputs, args) on the tape. Inputs that do not require grad
 * (an index, a condition) are passed too, in the op's argument order. */
void pt__grad_record(pt_tensor *out, pt__grad_op op, int n, pt_tensor *const *inputs,
                     const pt__grad_args *args);
/* Frees autograd state when a tensor dies (tensor.c calls it). */
void pt__grad_release(pt_tensor *x);

#endif
