/* The pinned host-block cache.
 *
 * pt_to_async to the cpu lands in pinned memory the source device's plugin
 * allocates (cudaHostAlloc, a mapped OpenCL buffer), and a staged copy
 * between devices passes through it. Those calls are slow, and freeing is
 * worse: cudaFreeHost waits for the whole device. So a released block stays
 * with its owning device and serves the next request of its size class, as
 * PyTorch's CachingHostAllocator does.
 *
 * A block may still be read or written by copies queued on its owner when
 * it is released (the tensor was dropped before a synchronize). It is handed
 * out again only once the owner's queue has passed a marker recorded at the
 * release (the plugin's marker_*, a CUDA event), or, for plugins without
 * markers, once a synchronize of the owner that began after the release has
 * completed. A request finding no block that is ready allocates a new one:
 * nothing here waits for a device, except the out-of-memory retry, which
 * synchronises before it frees cached blocks.
 *
 * Size classes: powers of two from 4 KiB up to 64 MiB, multiples of 2 MiB
 * above, so loops with varying small shapes still meet cached blocks while
 * large blocks waste at most 2 MiB. pt_empty_cache frees the cached blocks.
 * The mutex guards the two lists and counters only; allocations and frees
 * happen outside it (marker queries are cheap and non-blocking). */
#include <stdlib.h>

#include "runtime/runtime.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define MIN_CLASS (4 * KIB)
#define POW2_LIMIT (64 * MIB)
#define LARGE_ROUND (2 * MIB)

static size_t class_of(size_t bytes) {
    if (bytes > POW2_LIMIT) {
        size_t r = (bytes + LARGE_ROUND - 1) / LARGE_ROUND * LARGE_ROUND;
        return r < bytes ? bytes : r; /* no overflow near SIZE_MAX */
    }
    size_t c = MIN_CLASS;
    while (c < bytes) c <<= 1;
    return c;
}

/* Whether d's queue is past b's release (caller holds the lock). */
static bool ready(pt_device *d, const pt__pinned_block *b) {
    if (b->marker) return pt__marker_passed(d, b->marker);
    return atomic_load(&d->pinned.sync_done) >= b->sync_ticket;
}

/* Unlinks and returns the first ready released block of class size (every
 * ready block when size is 0), as a list through next. */
static pt__pinned_block *take_ready(pt_device *d, size_t size, bool all) {
    pt__pinned_cache *c = &d->pinned;
    pt__pinned_block *out = NULL, **p = &c->released;
    pthread_mutex_lock(&c->lock);
    while (*p) {
        pt__pinned_block *b = *p;
        if ((all || b->size == size) && ready(d, b)) {
            *p = b->next;
            c->cached_bytes -= (int64_t)b->size;
            --c->n_released;
            b->next = out;
            out = b;
            if (!all) break;
        } else {
            p = &b->next;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return out;
}

static void push_live(pt_device *d, pt__pinned_block *b, bool reused) {
    pt__pinned_cache *c = &d->pinned;
    pthread_mutex_lock(&c->lock);
    b->next = c->live;
    c->live = b;
    if (reused) ++c->reuses;
    else ++c->allocs;
    pthread_mutex_unlock(&c->lock);
}

/* Frees a list of blocks taken from the cache (their markers have passed). */
static void free_blocks(pt_device *d, pt__pinned_block *b) {
    while (b) {
        pt__pinned_block *next = b->next;
        if (b->marker) pt__marker_release(d, b->marker);
        pt__host_free_call(d, b->ptr);
        free(b);
        b = next;
    }
}

/* Hands out a ready cached block of class size as *ptr; false when none is. */
static bool reuse(pt_device *d, size_t size, void **ptr) {
    pt__pinned_block *b = take_ready(d, size, false);
    if (!b) return false;
    if (b->marker) pt__marker_release(d, b->marker);
    b->marker = NULL;
    *ptr = b->ptr;
    push_live(d, b, true);
    return true;
}

/* A new block of class size from the plugin, as *ptr. quiet (a caller with
 * a way that needs no block): a failure leaves this thread's error alone and
 * nothing waits; otherwise, on out-of-memory, wait for d and free the cached
 * blocks, then try once more. */
static pt_status fresh(const char *fn, pt_device *d, size_t size, bool quiet, void **ptr) {
    pt__pinned_block *b = malloc(sizeof *b);
    if (!b)
        return quiet ? PT_ERR_OUT_OF_MEMORY
                     : pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for a pinned block record");
    pt_status s = quiet ? (pt__host_alloc_try(d, size, &b->ptr) ? PT_OK : PT_ERR_OUT_OF_MEMORY)
                        : pt__host_alloc_call(fn, d, size, &b->ptr);
    if (s == PT_ERR_OUT_OF_MEMORY && !quiet) {
        /* Cached blocks may still be in use by queued copies: wait for the
         * owner first, then give them all back and try once more. */
        if (pt__wait_device(fn, d) == PT_OK) {
            free_blocks(d, take_ready(d, 0, true));
            s = pt__host_alloc_call(fn, d, size, &b->ptr);
        }
    }
    if (s != PT_OK) {
        free(b);
        return s;
    }
    b->size = size;
    b->marker = NULL;
    b->sync_ticket = 0;
    *ptr = b->ptr;
    push_live(d, b, false);
    return PT_OK;
}

pt_status pt__host_alloc(const char *fn, pt_device *d, size_t bytes, void **ptr) {
    const size_t size = class_of(bytes);
    return reuse(d, size, ptr) ? PT_OK : fresh(fn, d, size, false, ptr);
}

void *pt__pinned_staging(pt_device *d, size_t bytes) {
    const size_t size = class_of(bytes);
    void *ptr = NULL;
    if (reuse(d, size, &ptr)) return ptr;
    pthread_mutex_lock(&d->pinned.lock);
    const bool full = d->pinned.n_released >= PT__STAGING_CACHED_BLOCKS;
    pthread_mutex_unlock(&d->pinned.lock);
    if (full) return NULL;
    return fresh("pt__pinned_staging", d, size, true, &ptr) == PT_OK ? ptr : NULL;
}

void pt__host_free(pt_device *d, void *ptr) {
    pt__pinned_cache *c = &d->pinned;
    pthread_mutex_lock(&c->lock);
    pt__pinned_block **p = &c->live;
    while (*p && (*p)->ptr != ptr) p = &(*p)->next;
    pt__pinned_block *b = *p;
    if (b) *p = b->next;
    pthread_mutex_unlock(&c->lock);
    if (!b) { /* not from this cache: give it straight back */
        pt__host_free_call(d, ptr);
        return;
    }
    b->marker = NULL;
    if (pt__marker_supported(d) && pt__marker_record(d, &b->marker) != PT_OK) {
        pt__take_backend_message(); /* fall back to counting synchronize calls */
        b->marker = NULL;
    }
    b->sync_ticket = atomic_load(&c->sync_started) + 1;
    pthread_mutex_lock(&c->lock);
    b->next = c->released;
    c->released = b;
    c->cached_bytes += (int64_t)b->size;
    ++c->n_released;
    pthread_mutex_unlock(&c->lock);
}

void pt__pinned_release_cached(pt_device *d) { free_blocks(d, take_ready(d, 0, true)); }

void pt__pinned_stats(pt_device *d, int64_t *cached_bytes, int64_t *allocs, int64_t *reuses) {
    pt__pinned_cache *c = &d->pinned;
    pthread_mutex_lock(&c->lock);
    *cached_bytes = c->cached_bytes;
    *allocs = c->allocs;
    *reuses = c->reuses;
    pthread_mutex_unlock(&c->lock);
}
