/* The per-device caching allocator.
 *
 * Device allocations (cudaMalloc, clCreateBuffer) are slow and often
 * synchronising, so freed blocks stay with the device in size-class bins and
 * are handed to the next request of that class. Reusing a block right away is
 * safe because every device runs one in-order queue: work that used the old
 * tensor is queued before work that uses the new one. pt_memory_stats tells
 * memory held by tensors (in_use) from memory kept for reuse (cached), which
 * together are what the driver sees as taken; pt_empty_cache gives the cached
 * part back. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "format_bytes.h"
#include "runtime/runtime.h"

static size_t round_size(size_t bytes) {
    if (bytes == 0) bytes = 1; /* empty tensors still get a valid handle */
    if (bytes <= PT__SMALL_LIMIT)
        return (bytes + PT__SMALL_CLASS - 1) / PT__SMALL_CLASS * PT__SMALL_CLASS;
    const size_t mib = (size_t)1 << 20; /* large blocks in whole MiB */
    return (bytes + mib - 1) / mib * mib;
}

/* Takes a cached block that fits `size` out of the cache, or NULL. */
static pt__block *take_cached(pt__allocator *a, size_t size) {
    if (size <= PT__SMALL_LIMIT) {
        pt__block **bin = &a->small[size / PT__SMALL_CLASS];
        pt__block *b = *bin;
        if (b) *bin = b->next;
        return b;
    }
    for (pt__block **p = &a->large; *p; p = &(*p)->next) {
        pt__block *b = *p;
        if (b->size < size) continue;
        if (b->size - size > b->size / 4) return NULL; /* the rest are larger still */
        *p = b->next;
        return b;
    }
    return NULL;
}

static void put_cached(pt__allocator *a, pt__block *b) {
    if (b->size <= PT__SMALL_LIMIT) {
        pt__block **bin = &a->small[b->size / PT__SMALL_CLASS];
        b->next = *bin;
        *bin = b;
        return;
    }
    pt__block **p = &a->large;
    while (*p && (*p)->size < b->size) p = &(*p)->next;
    b->next = *p;
    *p = b;
}

void pt__spin_lock(pt__spinlock *l) {
    for (unsigned spins = 0; atomic_flag_test_and_set_explicit(&l->flag, memory_order_acquire);)
        if (++spins % 64 == 0) sched_yield(); /* the holder was preempted: let it run */
}

void pt__spin_unlock(pt__spinlock *l) { atomic_flag_clear_explicit(&l->flag, memory_order_release); }

/* Unlinks every cached block (caller holds the lock) and returns them as one
 * list, so they can be freed after the lock is dropped. */
static pt__block *detach_cached(pt__allocator *a) {
    pt__block *all = a->large;
    a->large = NULL;
    for (size_t i = 0; i <= PT__SMALL_BINS; ++i) {
        while (a->small[i]) {
            pt__block *b = a->small[i];
            a->small[i] = b->next;
            b->next = all;
            all = b;
        }
    }
    a->cached = 0;
    return all;
}

/* Hands every cached block of d back to the driver. */
static void release_cached(pt_device *d) {
    pt__spin_lock(&d->alloc.lock);
    pt__block *b = detach_cached(&d->alloc);
    pt__spin_unlock(&d->alloc.lock);
    while (b) {
        pt__block *next = b->next;
        pt__free_call(d, b->buf);
        free(b);
        b = next;
    }
}

/* backend_says: the plugin's own explanation (its limits, say), copied
 * before pt_device_info can replace it. */
static pt__block *out_of_memory(pt_device *d, size_t bytes, const char *fn, const char *backend_says) {
    char says[1024];
    snprintf(says, sizeof says, "%s", backend_says);
    char want[32], used[32], total_s[32] = "unknown", free_s[32] = "unknown";
    pt__format_bytes((int64_t)bytes, 2, want, sizeof want);
    pt__format_bytes(d->alloc.in_use, 2, used, sizeof used);
    pt_device_props p;
    if (pt_device_info(d, &p) == PT_OK) { /* a negative figure (not reported) prints "unknown" */
        pt__format_bytes(p.memory_total, 2, total_s, sizeof total_s);
        pt__format_bytes(p.memory_free, 2, free_s, sizeof free_s);
    }
    pt__error(PT_ERR_OUT_OF_MEMORY, fn,
              "%s: out of memory allocating %s (%s held by live tensors, cache already emptied; "
              "device reports %s free of %s); release tensors or use a smaller batch; the "
              "backend says: %s",
              d->name, want, used, free_s, total_s, says);
    return NULL;
}

/* A new block of `size` bytes from the driver; on out-of-memory the cache
 * goes back to the driver and the request is tried once more. */
static pt__block *driver_alloc(pt_device *d, size_t size, const char *fn) {
    pt__block *b = malloc(sizeof *b);
    if (!b) {
        pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for a block record");
        return NULL;
    }
    b->size = size;
    pt_status s = pt__alloc_call(d, size, &b->buf);
    if (s == PT_ERR_OUT_OF_MEMORY) {
        pt__take_backend_message();
        release_cached(d);
        s = pt__alloc_call(d, size, &b->buf);
    }
    if (s == PT_OK) return b;
    free(b);
    if (s == PT_ERR_OUT_OF_MEMORY) return out_of_memory(d, size, fn, pt__take_backend_message());
    pt__backend_failed(s, fn, d);
    return NULL;
}

pt__block *pt__alloc(pt_device *d, size_t bytes, const char *fn) {
    size_t size = round_size(bytes);
    if (size < bytes) {
        pt__error(PT_ERR_OUT_OF_MEMORY, fn, "%s: %zu bytes is too large", d->name, bytes);
        return NULL;
    }
    pt__allocator *a = &d->alloc;
    pt__spin_lock(&a->lock);
    pt__block *b = take_cached(a, size);
    if (b) {
        a->cached -= (int64_t)b->size;
    } else {
        pt__spin_unlock(&a->lock);
        if (!(b = driver_alloc(d, size, fn))) return NULL;
        pt__spin_lock(&a->lock);
    }
    b->next = NULL;
    a->in_use += (int64_t)b->size;
    if (a->in_use > a->peak) a->peak = a->in_use;
    pt__spin_unlock(&a->lock);
    return b;
}

void pt__free(pt_device *d, pt__block *b) {
    if (!b) return;
    pt__allocator *a = &d->alloc;
    pt__spin_lock(&a->lock);
    a->in_use -= (int64_t)b->size;
    a->cached += (int64_t)b->size;
    put_cached(a, b);
    pt__spin_unlock(&a->lock);
}

pt_status pt_empty_cache(pt_device *d) {
    if (!d) return pt__error(PT_ERR_INVALID_ARGUMENT, "pt_empty_cache", "device is NULL");
    /* Blocks in the cache may still be read by queued work of their last
     * owner: wait before handing them to the driver. */
    pt_status s = pt__synchronize("pt_empty_cache", d);
    if (s) return s;
    release_cached(d);
    return PT_OK;
}
