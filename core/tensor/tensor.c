/* Tensors: creation of the handle, views, reference counts, properties and
 * the thread-local scopes that release temporaries. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor_internal.h"

/* Frees a dying tensor's autograd state; the tape (core/ops/tape.c) sets it
 * when the library loads, so this layer never names anything above it. */
void (*pt__grad_release_hook)(pt_tensor *x) = NULL;

/* ---- Validation helpers shared by every area ---- */

int64_t pt__numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    return n;
}

void pt__contiguous_strides(int ndim, const int64_t *shape, int64_t *strides) {
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; --i) {
        strides[i] = s;
        s *= shape[i] > 1 ? shape[i] : 1;
    }
}

bool pt__is_contiguous(const pt_tensor *x) {
    if (pt__numel(x->ndim, x->shape) == 0) return true; /* nothing to lay out */
    int64_t s = 1;
    for (int i = x->ndim - 1; i >= 0; --i) {
        if (x->shape[i] != 1 && x->strides[i] != s) return false;
        s *= x->shape[i];
    }
    return true;
}

bool pt__tensor_is_private_result(const pt_tensor *x, const pt_tensor *dying) {
    if (atomic_load(&x->refs) != 1 || atomic_load(&x->scope_regs) != 1 || x->st->kind != PT__STORAGE_DEVICE ||
        !pt__is_contiguous(x))
        return false;
    const int sharers = atomic_load(&x->st->refs);
    if (sharers == 1) return true;
    return sharers == 2 && dying && dying != x && dying->st == x->st && atomic_load(&dying->refs) == 1 &&
           atomic_load(&dying->scope_regs) == 0;
}

pt_status pt__check_dtype(const char *fn, pt_dtype t) {
    if ((unsigned)t >= PT_DTYPE_COUNT)
        return pt__error(PT_ERR_DTYPE, fn, "dtype %d is not a pt_dtype (PT_F32, PT_F64, PT_I32, PT_I64, PT_U8, PT_F16, PT_BF16)",
                         (int)t);
    return PT_OK;
}

bool pt__span_fits(int ndim, const int64_t *shape) {
    int64_t span = 1;
    for (int i = 0; i < ndim; ++i) {
        int64_t e = shape[i] > 1 ? shape[i] : 1;
        if (__builtin_mul_overflow(span, e, &span) || span > PT__MAX_ELEMENTS) return false;
    }
    return true;
}

pt_status pt__shape_too_large(const char *fn, int ndim, const int64_t *shape) {
    char buf[PT__SHAPE_STR_CAP];
    pt__shape_str(ndim, shape, buf, sizeof buf);
    bool empty = false;
    for (int i = 0; i < ndim; ++i) empty = empty || shape[i] == 0;
    if (empty)
        return pt__error(PT_ERR_SHAPE, fn,
                         "shape %s is too large: it has no elements, but its non-zero extents "
                         "multiply to more than 2^48, so its strides do not fit (the limit for "
                         "every shape, empty or not, views included)",
                         buf);
    return pt__error(PT_ERR_SHAPE, fn,
                     "shape %s has more than 2^48 elements (the limit for every shape, views "
                     "included)",
                     buf);
}

pt_status pt__check_shape(const char *fn, int ndim, const int64_t *shape) {
    if (ndim < 0 || ndim > PT_MAX_DIMS)
        return pt__error(PT_ERR_SHAPE, fn, "ndim %d is outside 0..%d", ndim, PT_MAX_DIMS);
    if (ndim > 0 && !shape)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "shape is NULL but ndim is %d", ndim);
    for (int i = 0; i < ndim; ++i) {
        if (shape[i] < 0) {
            char buf[PT__SHAPE_STR_CAP];
            return pt__error(PT_ERR_SHAPE, fn, "shape %s: shape[%d] is %lld; extents must be >= 0",
                             pt__shape_str(ndim, shape, buf, sizeof buf), i, (long long)shape[i]);
        }
    }
    if (!pt__span_fits(ndim, shape)) return pt__shape_too_large(fn, ndim, shape);
    return PT_OK;
}

/* The bytes of a contiguous tensor of a checked shape, or PT_ERR_SHAPE when
 * they do not fit in size_t (only possible where size_t is 32 bits). */
static pt_status shape_bytes(const char *fn, int ndim, const int64_t *shape, pt_dtype t,
                             size_t *bytes) {
    uint64_t n = (uint64_t)pt__numel(ndim, shape), es = pt_dtype_size(t);
    if (n > SIZE_MAX / es) {
        char buf[PT__SHAPE_STR_CAP];
        return pt__error(PT_ERR_SHAPE, fn, "shape %s of %s needs more bytes than size_t can count",
                         pt__shape_str(ndim, shape, buf, sizeof buf), pt_dtype_name(t));
    }
    *bytes = (size_t)(n * es);
    return PT_OK;
}

pt_status pt__check_same_device(const char *fn, int n, pt_tensor *const *xs) {
    for (int i = 1; i < n; ++i) {
        if (xs[i]->st->dev != xs[0]->st->dev)
            return pt__error(PT_ERR_DEVICE_MISMATCH, fn,
                             "operands are on different devices (%s and %s); move one with pt_to()",
                             xs[0]->st->dev->name, xs[i]->st->dev->name);
    }
    return PT_OK;
}

pt_status pt__resolve_dim(const char *fn, int dim, int ndim, int *out) {
    int d = dim < 0 ? dim + ndim : dim;
    if (d < 0 || d >= ndim)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "dim %d is out of range for a %d-D tensor (use %d..%d)",
                         dim, ndim, ndim ? -ndim : 0, ndim ? ndim - 1 : 0);
    *out = d;
    return PT_OK;
}

/* ---- Handles ---- */

/* Fills a handle's fields (refs 1, no grad, no scope record). */
static void init_handle(pt_tensor *x, pt__storage *st, pt_dtype t, int ndim, const int64_t *shape,
                        const int64_t *strides, size_t offset) {
    atomic_init(&x->refs, 1);
    atomic_init(&x->scope_regs, 0);
    x->st = st;
    x->offset = offset;
    x->dtype = t;
    x->ndim = ndim;
    for (int i = 0; i < ndim; ++i) {
        x->shape[i] = shape[i];
        x->strides[i] = strides[i];
    }
    x->grad = NULL;
}

static pt_tensor *new_handle(const char *fn, pt__storage *st, pt_dtype t, int ndim,
                             const int64_t *shape, const int64_t *strides, size_t offset) {
    pt_tensor *x = malloc(sizeof *x);
    if (!x) {
        pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for a tensor handle");
        return NULL;
    }
    init_handle(x, st, t, ndim, shape, strides, offset);
    return x;
}

static void storage_release(pt__storage *st) {
    if (atomic_fetch_sub(&st->refs, 1) != 1) return;
    if (st->kind == PT__STORAGE_DEVICE) {
        pt__free(st->dev, st->block);
    } else if (st->kind == PT__STORAGE_EXTERNAL) {
        /* ops queued on the memory must finish before its owner may reuse it;
         * a failed wait (device lost) leaves nothing to wait for */
        (void)pt__wait_device("pt_release", st->dev);
        st->release(st->release_ctx);
    } else {
        pt__host_free(st->pinned_owner, st->buf);
    }
    free(st->record);
}

static void storage_release_kept(void *st) { storage_release(st); }

void pt__storage_capture_keep(pt__storage *st) {
    if (pt__capture_keep(st->dev, st->kind == PT__STORAGE_DEVICE ? st->block : NULL, st,
                         storage_release_kept))
        atomic_fetch_add(&st->refs, 1);
}

/* A fresh tensor and its storage record share one allocation: a tiny op
 * then costs one malloc/free pair, not two. The pair is freed when both the
 * handle and every view of the storage are gone (storage_release). */
typedef struct tensor_with_storage {
    pt_tensor tensor;
    pt__storage storage;
} tensor_with_storage;

/* A storage record of one reference holding bytes at buf on d; the kind's
 * own fields (block, pinned_owner, release) start empty, and the record is
 * its own allocation unless the caller says otherwise. */
static void storage_init(pt__storage *st, pt_device *d, pt__storage_kind kind, void *buf, size_t bytes) {
    memset(st, 0, sizeof *st);
    atomic_init(&st->refs, 1);
    st->dev = d;
    st->kind = kind;
    st->buf = buf;
    st->bytes = bytes;
    st->record = st;
}

pt_tensor *pt__tensor_new(const char *fn, pt_device *d, pt_dtype t, int ndim,
                          const int64_t *shape) {
    if (!d) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "device is NULL (did pt_device_get fail? see its error)");
        return NULL;
    }
    size_t bytes = 0;
    if (pt__check_dtype(fn, t) || pt__check_shape(fn, ndim, shape) ||
        shape_bytes(fn, ndim, shape, t, &bytes))
        return NULL;
    tensor_with_storage *both = malloc(sizeof *both);
    if (!both) {
        pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for a tensor handle");
        return NULL;
    }
    pt__storage *st = &both->storage;
    pt__block *block = pt__alloc(d, bytes, fn);
    if (!block) {
        free(both);
        return NULL;
    }
    storage_init(st, d, PT__STORAGE_DEVICE, block->buf, bytes);
    st->block = block;
    st->record = both;
    int64_t strides[PT_MAX_DIMS];
    pt__contiguous_strides(ndim, shape, strides);
    /* the block is a slice of a driver segment: its offset starts the tensor's */
    init_handle(&both->tensor, st, t, ndim, shape, strides, st->block->offset);
    return &both->tensor;
}

pt_tensor *pt__tensor_view(pt_tensor *x, int ndim, const int64_t *shape, const int64_t *strides,
                           size_t offset) {
    pt_tensor *v = new_handle("view", x->st, x->dtype, ndim, shape, strides, offset);
    if (v) atomic_fetch_add(&x->st->refs, 1);
    return v;
}

pt_tensor *pt__tensor_pinned(const char *fn, pt_device *cpu, pt_device *owner, pt_dtype t,
                             int ndim, const int64_t *shape) {
    size_t bytes = 0; /* the shape is an existing tensor's: only the byte count is new */
    if (shape_bytes(fn, ndim, shape, t, &bytes)) return NULL;
    void *ptr = NULL;
    if (pt__host_alloc(fn, owner, bytes ? bytes : 1, &ptr)) return NULL;
    pt__storage *st = malloc(sizeof *st);
    if (!st) {
        pt__host_free(owner, ptr);
        pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for a storage record");
        return NULL;
    }
    storage_init(st, cpu, PT__STORAGE_PINNED, ptr, bytes);
    st->pinned_owner = owner;
    int64_t strides[PT_MAX_DIMS];
    pt__contiguous_strides(ndim, shape, strides);
    pt_tensor *x = new_handle(fn, st, t, ndim, shape, strides, 0);
    if (!x) storage_release(st);
    return x;
}

pt_tensor *pt__tensor_external(const char *fn, pt_device *d, pt_dtype t, int ndim,
                               const int64_t *shape, const int64_t *strides, size_t offset,
                               void *buf, size_t bytes, void (*release)(void *ctx), void *ctx) {
    pt__storage *st = malloc(sizeof *st);
    if (!st) {
        pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for a storage record");
        return NULL;
    }
    storage_init(st, d, PT__STORAGE_EXTERNAL, buf, bytes);
    st->release = release;
    st->release_ctx = ctx;
    pt_tensor *x = new_handle(fn, st, t, ndim, shape, strides, offset);
    if (!x) free(st); /* the memory stays the caller's */
    return x;
}

static void drop_reference(pt_tensor *x) {
    if (atomic_fetch_sub(&x->refs, 1) != 1) return;
    if (x->grad && pt__grad_release_hook) pt__grad_release_hook(x);
    bool born_with_storage = x->st->record == (void *)x;
    storage_release(x->st); /* frees x too when it was the last user of the pair */
    if (!born_with_storage) free(x);
}

/* ---- Scopes ----
 * Each thread keeps a stack of scopes; each scope a list of the references
 * it owns. pt_release of a reference a scope owns takes it off the list, so
 * code that releases its own temporaries inside a scope stays correct.
 *
 * The stack is a heap block reached through one thread-local pointer (the
 * library's TLS stays a few words, see PT__HOT_TLS), made at the thread's
 * first pt_scope_begin and freed at its exit by a pthread_key destructor,
 * which also ends scopes the thread left open.
 *
 * A handle carries its level and a process-wide id given at its begin; it
 * ends its scope only while that scope is open on this thread, so a stale
 * handle (its scope already ended, directly or with an enclosing one) or
 * another thread's never ends a newer scope that sits at the same level. */

#define PT__MAX_SCOPE_DEPTH 64

typedef struct scope_list {
    pt_tensor **items;
    int n, cap;
    uint64_t id;                 /* the handle's id while the scope is open */
} scope_list;

typedef struct scope_stack {
    scope_list level[PT__MAX_SCOPE_DEPTH + 1]; /* level 1.. */
} scope_stack;

static PT__HOT_TLS int scope_depth;
static PT__HOT_TLS scope_stack *scopes;
static atomic_uint_fast64_t last_scope_id; /* ids from 1; 0 is "never begun" */

static bool scope_push(scope_list *l, pt_tensor *x) {
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 64;
        pt_tensor **items = realloc(l->items, (size_t)cap * sizeof *items);
        if (!items) return false;
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = x;
    return true;
}

/* Removes one registration of x from level's list; true if found. */
static bool scope_remove(scope_list *l, pt_tensor *x) {
    for (int i = l->n - 1; i >= 0; --i) {
        if (l->items[i] != x) continue;
        l->items[i] = l->items[--l->n];
        return true;
    }
    return false;
}

/* Scope records count in scope_regs, which other threads read and change
 * for tensors they share with this one; relaxed order suffices: it is a
 * count, and each thread only takes off records it made. */
static void regs_add(pt_tensor *x, int d) {
    atomic_fetch_add_explicit(&x->scope_regs, d, memory_order_relaxed);
}

static bool has_regs(const pt_tensor *x) {
    return atomic_load_explicit(&x->scope_regs, memory_order_relaxed) > 0;
}

pt_tensor *pt__ret(pt_tensor *x) {
    if (!x || scope_depth == 0) return x;
    /* Without room to track it the reference simply goes to the caller. */
    if (scope_push(&scopes->level[scope_depth], x)) regs_add(x, 1);
    return x;
}

/* Releases every reference recorded at levels >= level, innermost first. */
static void end_from(int level) {
    while (scope_depth >= level) {
        scope_list *l = &scopes->level[scope_depth];
        /* The level stays current while it drains, so a release that frees
         * another tensor recorded here takes that record off first. */
        while (l->n > 0) {
            pt_tensor *x = l->items[--l->n];
            regs_add(x, -1);
            drop_reference(x);
        }
        l->id = 0;
        --scope_depth;
    }
}

static pthread_key_t scopes_key;
static pthread_once_t scopes_key_once = PTHREAD_ONCE_INIT;
static bool scopes_key_made;

/* Thread exit: scopes left open end (their references would leak), then
 * the stack and its lists are freed. */
static void scopes_at_thread_exit(void *block) {
    if (scopes == block && scope_depth > 0) end_from(1);
    scope_stack *st = block;
    for (int i = 0; i <= PT__MAX_SCOPE_DEPTH; ++i) free(st->level[i].items);
    free(st);
    if (scopes == block) {
        scopes = NULL;
        scope_depth = 0;
    }
}

static void make_scopes_key(void) {
    scopes_key_made = pthread_key_create(&scopes_key, scopes_at_thread_exit) == 0;
}

pt_scope pt_scope_begin(void) {
    static const char fn[] = "pt_scope_begin";
    pt_scope s = {0, 0};
    if (scope_depth == PT__MAX_SCOPE_DEPTH) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "scopes nest at most %d deep; end inner scopes first",
                  PT__MAX_SCOPE_DEPTH);
        return s;
    }
    if (!scopes) {
        pthread_once(&scopes_key_once, make_scopes_key);
        scope_stack *st = calloc(1, sizeof *st);
        if (!st) {
            pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for this thread's scope stack");
            return s;
        }
        /* Without a key the stack would outlive the thread: that is the
         * only cost, so it is still used. */
        if (scopes_key_made) pthread_setspecific(scopes_key, st);
        scopes = st;
    }
    ++scope_depth;
    scope_list *l = &scopes->level[scope_depth];
    l->n = 0;
    l->id = atomic_fetch_add_explicit(&last_scope_id, 1, memory_order_relaxed) + 1;
    s.level = scope_depth;
    s.id = l->id;
    return s;
}

pt_status pt_scope_end(pt_scope s) {
    static const char fn[] = "pt_scope_end";
    if (s.id == 0)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "scope handle {level %d, id 0} was never begun (a zero handle, or the "
                         "result of a pt_scope_begin that failed); end only handles pt_scope_begin "
                         "returned",
                         s.level);
    if (s.level >= 1 && s.level <= scope_depth && scopes->level[s.level].id == s.id) {
        end_from(s.level);
        return PT_OK;
    }
    /* Nothing is released: the scope now at that level (if any) is not s. */
    if (scope_depth == 0)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "scope handle {level %d, id %llu} has already ended, or was begun on another "
                         "thread: this thread has no open scope. End each scope once, innermost "
                         "first, on the thread that began it (ending a scope ends the scopes inside "
                         "it too)",
                         s.level, (unsigned long long)s.id);
    return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                     "scope handle {level %d, id %llu} has already ended, or was begun on another "
                     "thread; this thread's innermost open scope is {level %d, id %llu}. End each "
                     "scope once, innermost first, on the thread that began it (ending a scope "
                     "ends the scopes inside it too, so their handles are stale afterwards)",
                     s.level, (unsigned long long)s.id, scope_depth,
                     (unsigned long long)scopes->level[scope_depth].id);
}

pt_tensor *pt_keep(pt_tensor *x) {
    if (!x || scope_depth == 0 || !has_regs(x)) return x;
    if (!scope_remove(&scopes->level[scope_depth], x)) return x;
    /* The record moves out one level (or the reference to the caller). */
    if (scope_depth == 1 || !scope_push(&scopes->level[scope_depth - 1], x)) regs_add(x, -1);
    return x;
}

/* ---- Lifetime ---- */

pt_tensor *pt_retain(pt_tensor *x) {
    if (x) atomic_fetch_add(&x->refs, 1);
    return x;
}

void pt_release(pt_tensor *x) {
    if (!x) return;
    /* A user releasing, inside a scope, what an op returned there releases
     * the reference that scope recorded. The library's own references go
     * through pt__drop instead, so they never take a user's record away.
     * Only this thread's scopes are searched: another thread's records of a
     * shared tensor are that thread's to drop. */
    if (has_regs(x)) {
        for (int level = scope_depth; level >= 1; --level) {
            if (scope_remove(&scopes->level[level], x)) {
                regs_add(x, -1);
                break;
            }
        }
    }
    drop_reference(x);
}

void pt__drop(pt_tensor *x) {
    if (x) drop_reference(x);
}

/* ---- Properties ---- */

pt_device *pt_tensor_device(const pt_tensor *x) { return x ? x->st->dev : NULL; }
pt_dtype pt_tensor_dtype(const pt_tensor *x) { return x ? x->dtype : (pt_dtype)-1; }
int pt_tensor_ndim(const pt_tensor *x) { return x ? x->ndim : -1; }
const int64_t *pt_tensor_shape(const pt_tensor *x) { return x ? x->shape : NULL; }
const int64_t *pt_tensor_strides(const pt_tensor *x) { return x ? x->strides : NULL; }
int64_t pt_tensor_numel(const pt_tensor *x) { return x ? pt__numel(x->ndim, x->shape) : -1; }
bool pt_tensor_is_contiguous(const pt_tensor *x) { return x && pt__is_contiguous(x); }

bool pt_tensor_shares_storage(const pt_tensor *a, const pt_tensor *b) {
    return a && b && a->st == b->st;
}

char *pt_tensor_describe(const pt_tensor *x, char *buf, size_t cap) {
    if (!buf) {
        pt__error(PT_ERR_INVALID_ARGUMENT, "pt_tensor_describe", "buf is NULL; pass a buffer of cap bytes");
        return NULL;
    }
    if (cap == 0) return buf;
    if (!x) {
        snprintf(buf, cap, "(null tensor)");
        return buf;
    }
    char shape[160];
    snprintf(buf, cap, "%s%s on %s", pt_dtype_name(x->dtype),
             pt__shape_str(x->ndim, x->shape, shape, sizeof shape), x->st->dev->name);
    return buf;
}
