/* The per-device caching allocator.
 *
 * Device allocations (cudaMalloc, clCreateBuffer) are slow and often
 * synchronising, so memory freed by tensors stays with the device and is
 * handed to the next request. Reusing a block right away is safe because
 * every device runs one in-order queue: work that used the old tensor is
 * queued before work that uses the new one.
 *
 * As PyTorch's CUDA caching allocator does, blocks are carved out of larger
 * driver allocations (segments): requests up to 1 MiB from 2 MiB segments
 * (the small pool), larger ones from 20 MiB segments, or from 10 MiB up from
 * a segment of their own rounded to 2 MiB (the large pool). A block is
 * (segment handle, byte offset): backend handles are opaque (a cl_mem has no
 * pointer arithmetic), so the offset goes into the tensor's offset and from
 * there into pt_operand.offset. Sizes round to 512 bytes. A request takes
 * the best-fitting free block of its pool and splits off the rest; a freed
 * block merges with free neighbours, so a wholly free segment is one block
 * again and fits any request of its size.
 *
 * The tiny-op path stays a pointer pop and push: a freed small block first
 * goes to an exact-size fast bin, unmerged, where the next request of that
 * size finds it. The fast bins are merged (consolidated) only when a request
 * finds no free block that fits, before a new segment is asked for, so the
 * memory is as compact as with eager merging whenever it would grow.
 *
 * Cached memory goes back to the driver (a) on out-of-memory, after waiting
 * for the device, and the request is retried once (then with the exact size if a rounded segment was
 * asked for), (b) on pt_empty_cache, and (c) by garbage collection: before a
 * new segment would make reserved (in_use + cached) exceed gc_ratio x the
 * peak of in_use, wholly free segments are released, oldest first
 * (PORTABLE_ALLOC_GC or pt_set_memory_gc; default 1.5, 0 turns it off).
 *
 * The spinlock guards only the lists and counters, never a driver call or a
 * malloc; block records a split may need are taken before it.
 *
 * PORTABLE_NO_MEMORY_CACHING=1 turns all of this off for memory checkers,
 * like PYTORCH_NO_CUDA_MEMORY_CACHING: each block is then a driver
 * allocation of its own, of exactly the bytes asked for, given back when its
 * tensor dies. Inside a shared segment an out-of-bounds access lands in a
 * neighbour's memory, where no checker (Oclgrind, compute-sanitizer, ASan on
 * the cpu backend) can see it; and Oclgrind's uninitialised-value check
 * ignores the offset of clEnqueueWriteBuffer, so it flags uploads into a
 * block at a nonzero offset as never written. Slow: for checking only. */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format_bytes.h"
#include "runtime/runtime.h"
#include "runtime/trace_internal.h"

enum { BLOCK_USED, BLOCK_FAST, BLOCK_FREE };

#define MIB ((size_t)1 << 20)
#define LARGE_SEGMENT (20 * MIB)  /* shared by large requests under 10 MiB */
#define SEGMENT_ROUND (2 * MIB)   /* own segments of larger requests round to this */
#define DEFAULT_GC_RATIO 1.5

void pt__spin_lock(pt__spinlock *l) {
    for (unsigned spins = 0; atomic_flag_test_and_set_explicit(&l->flag, memory_order_acquire);)
        if (++spins % 64 == 0) sched_yield(); /* the holder was preempted: let it run */
}

void pt__spin_unlock(pt__spinlock *l) { atomic_flag_clear_explicit(&l->flag, memory_order_release); }

static size_t round_size(size_t bytes) {
    if (bytes == 0) bytes = 1; /* empty tensors still get a valid handle */
    return (bytes + PT__SMALL_CLASS - 1) / PT__SMALL_CLASS * PT__SMALL_CLASS;
}

/* The driver allocation that serves a block of `size` when no free one fits. */
static size_t segment_size(size_t size) {
    if (size <= PT__SMALL_LIMIT) return PT__SMALL_SEGMENT;
    if (size < LARGE_SEGMENT / 2) return LARGE_SEGMENT;
    size_t r = (size + SEGMENT_ROUND - 1) / SEGMENT_ROUND * SEGMENT_ROUND;
    return r < size ? size : r;
}

/* ---- Free lists (caller holds the lock) ---- */

static void insert_free(pt__allocator *a, pt__block *b) {
    b->state = BLOCK_FREE;
    b->fprev = NULL;
    if (!b->large) {
        size_t i = b->size / PT__SMALL_CLASS;
        b->fnext = a->small_free[i];
        if (b->fnext) b->fnext->fprev = b;
        a->small_free[i] = b;
        a->small_map[i / 64] |= (uint64_t)1 << (i % 64);
        return;
    }
    pt__block **p = &a->large_free, *prev = NULL;
    while (*p && (*p)->size < b->size) {
        prev = *p;
        p = &(*p)->fnext;
    }
    b->fnext = *p;
    b->fprev = prev;
    if (*p) (*p)->fprev = b;
    *p = b;
}

static void unlink_free(pt__allocator *a, pt__block *b) {
    if (b->fnext) b->fnext->fprev = b->fprev;
    if (b->fprev) {
        b->fprev->fnext = b->fnext;
    } else if (b->large) {
        a->large_free = b->fnext;
    } else {
        size_t i = b->size / PT__SMALL_CLASS;
        a->small_free[i] = b->fnext;
        if (!b->fnext) a->small_map[i / 64] &= ~((uint64_t)1 << (i % 64));
    }
    b->fprev = b->fnext = NULL;
}

/* The smallest free block of the pool that holds `size`, unlinked, or NULL. */
static pt__block *take_free(pt__allocator *a, size_t size) {
    pt__block *b = NULL;
    if (size <= PT__SMALL_LIMIT) {
        size_t i = size / PT__SMALL_CLASS, w = i / 64;
        uint64_t bits = a->small_map[w] & (~(uint64_t)0 << (i % 64));
        while (!bits && ++w < PT__SEGMENT_WORDS) bits = a->small_map[w];
        if (bits) b = a->small_free[w * 64 + (size_t)__builtin_ctzll(bits)];
    } else {
        for (b = a->large_free; b && b->size < size; b = b->fnext) {}
    }
    if (b) {
        unlink_free(a, b);
        b->state = BLOCK_USED; /* before a split, so the rest does not merge back */
    }
    return b;
}

/* Marks b free, merged with its free neighbours; records merged away are
 * pushed on *dead (freed by the caller after unlocking). */
static void merge_free(pt__allocator *a, pt__block *b, pt__block **dead) {
    pt__block *p = b->prev, *n = b->next;
    if (p && p->state == BLOCK_FREE) {
        unlink_free(a, p);
        p->size += b->size;
        p->next = n;
        if (n) n->prev = p;
        b->fnext = *dead;
        *dead = b;
        b = p;
    }
    if (n && n->state == BLOCK_FREE) {
        unlink_free(a, n);
        b->size += n->size;
        b->next = n->next;
        if (n->next) n->next->prev = b;
        n->fnext = *dead;
        *dead = n;
    }
    if (!b->prev && !b->next) b->stamp = ++a->clock;
    insert_free(a, b);
}

/* Merges every fast-bin block; false when there were none. */
static bool consolidate(pt__allocator *a, pt__block **dead) {
    if (!a->fast_count) return false;
    for (size_t i = 0; i <= PT__SMALL_BINS; ++i) {
        while (a->fast[i]) {
            pt__block *b = a->fast[i];
            a->fast[i] = b->fnext;
            merge_free(a, b, dead);
        }
    }
    a->fast_count = 0;
    return true;
}

/* Cuts b down to `size`; the rest becomes a free block in *spare's record
 * (taken, *spare set to NULL) when it is at least one 512-byte unit. */
static void split(pt__allocator *a, pt__block *b, size_t size, pt__block **spare, pt__block **dead) {
    if (b->size == size || !*spare) return;
    pt__block *r = *spare;
    *spare = NULL;
    r->buf = b->buf;
    r->offset = b->offset + size;
    r->size = b->size - size;
    r->large = b->large;
    r->own = 0;
    r->held = r->orphan = 0;
    r->prev = b;
    r->next = b->next;
    if (b->next) b->next->prev = r;
    b->next = r;
    b->size = size;
    merge_free(a, r, dead); /* the next block may be free already */
}

static void free_records(pt__block *b) {
    while (b) {
        pt__block *next = b->fnext;
        free(b);
        b = next;
    }
}

/* ---- Giving memory back ---- */

/* Unlinks the wholly free segments, oldest first, until `enough` bytes are
 * unlinked (SIZE_MAX: all), and returns them as one list (caller holds the
 * lock; the driver calls come after it drops it). Small whole segments sit
 * in the last small bin, unless out-of-memory made one of a block's own
 * size: every non-empty bin is looked at. */
static pt__block *detach_segments(pt__allocator *a, size_t enough) {
    pt__block *out = NULL;
    size_t got = 0;
    while (got < enough) {
        pt__block *oldest = NULL;
        for (size_t w = 0; w < PT__SEGMENT_WORDS; ++w)
            for (uint64_t bits = a->small_map[w]; bits; bits &= bits - 1)
                for (pt__block *b = a->small_free[w * 64 + (size_t)__builtin_ctzll(bits)]; b; b = b->fnext)
                    if (!b->prev && !b->next && (!oldest || b->stamp < oldest->stamp)) oldest = b;
        for (pt__block *b = a->large_free; b; b = b->fnext)
            if (!b->prev && !b->next && (!oldest || b->stamp < oldest->stamp)) oldest = b;
        if (!oldest) break;
        unlink_free(a, oldest);
        a->cached -= (int64_t)oldest->size;
        got += oldest->size;
        oldest->fnext = out;
        out = oldest;
    }
    return out;
}

static void release_segments(pt_device *d, pt__block *b) {
    while (b) {
        pt__block *next = b->fnext;
        pt__free_call(d, b->buf);
        free(b);
        b = next;
    }
}

/* Hands every wholly free segment of d back to the driver. */
static void release_cached(pt_device *d) {
    pt__block *dead = NULL;
    pt__spin_lock(&d->alloc.lock);
    consolidate(&d->alloc, &dead);
    pt__block *segs = detach_segments(&d->alloc, SIZE_MAX);
    pt__spin_unlock(&d->alloc.lock);
    free_records(dead);
    release_segments(d, segs);
}

static double env_gc_ratio(void) {
    static _Atomic double ratio = -1;
    double r = atomic_load_explicit(&ratio, memory_order_relaxed);
    if (r >= 0) return r;
    r = pt_env_double("PORTABLE_ALLOC_GC", 1, HUGE_VAL, 1, DEFAULT_GC_RATIO);
    atomic_store_explicit(&ratio, r, memory_order_relaxed);
    return r;
}

/* Garbage collection before growing by seg bytes for a block of size: when
 * reserved would exceed ratio x the peak of in_use, waits for d (a cached
 * block's last user may still be queued) and frees wholly free segments,
 * oldest first, until it would not. */
static pt_status collect(pt_device *d, size_t size, size_t seg, const char *fn) {
    pt__allocator *a = &d->alloc;
    pt__spin_lock(&a->lock);
    double ratio = a->gc_set ? a->gc_ratio : -1;
    int64_t in_use = a->in_use, reserved = a->in_use + a->cached, peak = a->peak;
    pt__spin_unlock(&a->lock);
    if (ratio < 0) ratio = env_gc_ratio();
    if (ratio == 0) return PT_OK;
    int64_t live = in_use + (int64_t)size > peak ? in_use + (int64_t)size : peak;
    double limit = ratio * (double)live, after = (double)reserved + (double)seg;
    if (after <= limit || reserved - in_use == 0) return PT_OK;
    pt_status s = pt__wait_device(fn, d);
    if (s) return s;
    pt__block *dead = NULL;
    pt__spin_lock(&a->lock);
    consolidate(a, &dead);
    after = (double)(a->in_use + a->cached) + (double)seg;
    pt__block *segs = after > limit ? detach_segments(a, (size_t)(after - limit)) : NULL;
    pt__spin_unlock(&a->lock);
    free_records(dead);
    release_segments(d, segs);
    return PT_OK;
}

pt_status pt_set_memory_gc(pt_device *d, double ratio) {
    if (!d) return pt__error(PT_ERR_INVALID_ARGUMENT, "pt_set_memory_gc", "device is NULL");
    if (!isfinite(ratio) || (ratio != 0 && ratio < 1))
        return pt__error(PT_ERR_INVALID_ARGUMENT, "pt_set_memory_gc",
                         "ratio %g: use 0 (no collection) or a ratio >= 1 of reserved to peak in-use bytes",
                         ratio);
    pt__spin_lock(&d->alloc.lock);
    d->alloc.gc_ratio = ratio;
    d->alloc.gc_set = true;
    pt__spin_unlock(&d->alloc.lock);
    return PT_OK;
}

/* ---- Allocation ---- */

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

/* A new segment for a block of `size` (its size in *seg). On out-of-memory
 * the cache goes back to the driver and the request is tried once more, and
 * then with the block's own size if the segment was larger. */
static void *driver_alloc(pt_device *d, size_t size, size_t *seg, const char *fn) {
    void *buf = NULL;
    pt_status s = pt__alloc_call(d, *seg, &buf);
    if (s == PT_ERR_OUT_OF_MEMORY) {
        pt__take_backend_message();
        /* A cached block's last user may still be queued (freeing is not
         * synchronous everywhere: clReleaseMemObject, cudaFreeAsync): wait
         * for the device before the cache goes back to the driver. */
        pt_status w = pt__wait_device(fn, d);
        if (w) return NULL;
        release_cached(d);
        s = pt__alloc_call(d, *seg, &buf);
        if (s == PT_ERR_OUT_OF_MEMORY && *seg > size) {
            pt__take_backend_message();
            *seg = size;
            s = pt__alloc_call(d, size, &buf);
        }
    }
    if (s == PT_OK) return buf;
    if (s == PT_ERR_OUT_OF_MEMORY) return out_of_memory(d, size, fn, pt__take_backend_message());
    pt__backend_failed(s, fn, d);
    return NULL;
}

static void count_used(pt__allocator *a, pt__block *b) {
    b->state = BLOCK_USED;
    a->in_use += (int64_t)b->size;
    a->cached -= (int64_t)b->size;
    if (a->in_use > a->peak) a->peak = a->in_use;
    if (a->in_use > a->shown_peak) a->shown_peak = a->in_use;
}

/* The path that found no fast-bin block: best fit among merged free blocks,
 * then after consolidating the fast bins, then a new segment. */
static pt__block *alloc_slow(pt_device *d, size_t size, const char *fn) {
    pt__allocator *a = &d->alloc;
    pt__block *rec[2] = {malloc(sizeof(pt__block)), malloc(sizeof(pt__block))};
    if (!rec[0] || !rec[1]) {
        free(rec[0]);
        free(rec[1]);
        pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for a block record");
        return NULL;
    }
    pt__block *dead = NULL, *b;
    pt__spin_lock(&a->lock);
    if (!(b = take_free(a, size)) && consolidate(a, &dead)) b = take_free(a, size);
    if (b) {
        split(a, b, size, &rec[0], &dead);
        count_used(a, b);
    }
    pt__spin_unlock(&a->lock);
    free_records(dead);
    if (b) {
        free(rec[0]); /* free(NULL) when the split took it */
        free(rec[1]);
        return b;
    }
    size_t seg = segment_size(size);
    void *buf = NULL;
    if (collect(d, size, seg, fn) || !(buf = driver_alloc(d, size, &seg, fn))) {
        free(rec[0]);
        free(rec[1]);
        return NULL;
    }
    b = rec[1];
    memset(b, 0, sizeof *b);
    b->buf = buf;
    b->size = seg;
    b->large = size > PT__SMALL_LIMIT;
    dead = NULL;
    pt__spin_lock(&a->lock);
    a->cached += (int64_t)seg;
    split(a, b, size, &rec[0], &dead);
    count_used(a, b);
    pt__spin_unlock(&a->lock);
    free_records(dead);
    free(rec[0]);
    return b;
}

static bool env_no_caching(void) {
    static _Atomic int no_caching = -1;
    int v = atomic_load_explicit(&no_caching, memory_order_relaxed);
    if (v < 0) {
        static const char *const off_on[] = {"0", "1", NULL};
        v = pt_env_choice("PORTABLE_NO_MEMORY_CACHING", off_on, 0);
        atomic_store_explicit(&no_caching, v, memory_order_relaxed);
    }
    return v;
}

/* A block that is a driver allocation of its own (PORTABLE_NO_MEMORY_CACHING). */
static pt__block *alloc_own(pt_device *d, size_t bytes, const char *fn) {
    pt__block *b = calloc(1, sizeof *b);
    if (!b) {
        pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for a block record");
        return NULL;
    }
    size_t size = bytes ? bytes : 1; /* empty tensors still get a valid handle */
    if (!(b->buf = driver_alloc(d, size, &size, fn))) {
        free(b);
        return NULL;
    }
    b->size = size;
    b->own = 1;
    b->large = 1;
    pt__allocator *a = &d->alloc;
    pt__spin_lock(&a->lock);
    a->cached += (int64_t)size;
    count_used(a, b);
    pt__spin_unlock(&a->lock);
    return b;
}

/* Gives an own block back to the driver once the device's queued work, which
 * may still use it, is done. */
static void free_own(pt_device *d, pt__block *b) {
    pt__allocator *a = &d->alloc;
    pt__spin_lock(&a->lock);
    a->in_use -= (int64_t)b->size;
    pt__spin_unlock(&a->lock);
    pt__wait_device("pt_release", d);
    pt__free_call(d, b->buf);
    free(b);
}

pt__block *pt__alloc(pt_device *d, size_t bytes, const char *fn) {
    pt__block *b = pt__tracing() ? pt__trace_alloc(d, bytes, fn) : pt__alloc_untraced(d, bytes, fn);
    if (pt__capture_now && b) pt__capture_alloc(d, b);
    return b;
}

pt__block *pt__alloc_untraced(pt_device *d, size_t bytes, const char *fn) {
    if (env_no_caching()) return alloc_own(d, bytes, fn);
    size_t size = round_size(bytes);
    if (size < bytes || size > SIZE_MAX / 2) {
        pt__error(PT_ERR_OUT_OF_MEMORY, fn, "%s: %zu bytes is too large", d->name, bytes);
        return NULL;
    }
    if (size <= PT__SMALL_LIMIT) {
        pt__allocator *a = &d->alloc;
        pt__spin_lock(&a->lock);
        pt__block *b = a->fast[size / PT__SMALL_CLASS];
        if (b) {
            a->fast[size / PT__SMALL_CLASS] = b->fnext;
            a->fast_count--;
            count_used(a, b);
            pt__spin_unlock(&a->lock);
            return b;
        }
        pt__spin_unlock(&a->lock);
    }
    return alloc_slow(d, size, fn);
}

/* The free itself, after the graph hooks. */
static void give_back(pt_device *d, pt__block *b) {
    if (pt__tracing()) {
        pt__trace_free(d, b);
        return;
    }
    pt__free_untraced(d, b);
}

void pt__free_direct(pt_device *d, pt__block *b) {
    if (b) give_back(d, b);
}

/* A graph holds b: its tensor's death only marks it (true), and the graph
 * gives it back when it lets go (pt__block_unhold). */
static bool kept_for_graph(pt__allocator *a, pt__block *b) {
    pt__spin_lock(&a->lock);
    bool held = b->held;
    if (held) b->orphan = 1;
    pt__spin_unlock(&a->lock);
    return held;
}

void pt__free(pt_device *d, pt__block *b) {
    if (!b) return;
    if (__builtin_expect(b->held, 0) && kept_for_graph(&d->alloc, b)) return;
    if (pt__capture_now && pt__capture_free(d, b)) return;
    give_back(d, b);
}

void pt__block_hold(pt_device *d, pt__block *b) {
    pt__spin_lock(&d->alloc.lock);
    b->held = 1;
    b->orphan = 0;
    pt__spin_unlock(&d->alloc.lock);
}

void pt__block_unhold(pt_device *d, pt__block *b) {
    pt__spin_lock(&d->alloc.lock);
    bool orphan = b->orphan;
    b->held = b->orphan = 0;
    pt__spin_unlock(&d->alloc.lock);
    if (orphan) give_back(d, b);
}

void pt__free_untraced(pt_device *d, pt__block *b) {
    if (!b) return;
    if (b->own) {
        free_own(d, b);
        return;
    }
    pt__allocator *a = &d->alloc;
    if (!b->large) { /* the tiny-op path: into the fast bin, unmerged */
        pt__spin_lock(&a->lock);
        a->in_use -= (int64_t)b->size;
        a->cached += (int64_t)b->size;
        b->state = BLOCK_FAST;
        b->fnext = a->fast[b->size / PT__SMALL_CLASS];
        a->fast[b->size / PT__SMALL_CLASS] = b;
        a->fast_count++;
        pt__spin_unlock(&a->lock);
        return;
    }
    pt__block *dead = NULL;
    pt__spin_lock(&a->lock);
    a->in_use -= (int64_t)b->size;
    a->cached += (int64_t)b->size;
    merge_free(a, b, &dead);
    pt__spin_unlock(&a->lock);
    free_records(dead);
}

pt_status pt_empty_cache(pt_device *d) {
    if (!d) return pt__error(PT_ERR_INVALID_ARGUMENT, "pt_empty_cache", "device is NULL");
    /* Blocks in the cache may still be read by queued work of their last
     * owner: wait before handing them to the driver. */
    pt_status s = pt__synchronize("pt_empty_cache", d);
    if (s) return s;
    release_cached(d);
    pt__pinned_release_cached(d);
    return PT_OK;
}
