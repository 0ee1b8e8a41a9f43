/* The memory plan of a graph: each intermediate gets an offset in one arena
 * from its lifetime, the ops [first, last] that use it, as ggml's gallocr
 * and TFLite's arena planner do. Greedy: each value in turn goes into the
 * smallest gap (best fit) between the values already placed whose
 * lifetimes overlap its own, else above them all. Two orders are tried and
 * the smaller arena kept: largest first (TFLite's), and in the order the
 * values are first used, largest first among equals, which packs a small
 * long-lived value under the large ones that die before it (largest first
 * can leave it on top of them). The lifetimes are the ops that use a value,
 * never longer than the eager run's allocation-to-release, so the arena
 * usually comes out at or below the eager peak of the same values;
 * pt_graph_info reports both. */
#include <stdint.h>
#include <stdlib.h>

#include "runtime/graph_internal.h"

typedef struct placed {
    size_t offset, size;
} placed;

static int by_offset(const void *a, const void *b) {
    const placed *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

typedef struct order_key {
    size_t size;
    int32_t first, index;
} order_key;

static int by_size_desc(const void *a, const void *b) {
    const order_key *x = a, *y = b;
    if (x->size != y->size) return x->size > y->size ? -1 : 1;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int by_first_use(const void *a, const void *b) {
    const order_key *x = a, *y = b;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    return by_size_desc(a, b);
}

/* Places the values in order's order into offset[]; returns the arena's bytes. */
static size_t place(int32_t n, const order_key *order, const size_t *size, const int32_t *first,
                    const int32_t *last, size_t *offset, placed *busy, bool *done) {
    for (int32_t i = 0; i < n; ++i) done[i] = false;
    size_t total = 0;
    for (int32_t k = 0; k < n; ++k) {
        const int32_t v = order[k].index;
        int32_t nb = 0;
        for (int32_t u = 0; u < n; ++u)
            if (done[u] && first[u] <= last[v] && first[v] <= last[u])
                busy[nb++] = (placed){offset[u], size[u]};
        qsort(busy, (size_t)nb, sizeof *busy, by_offset);
        size_t best = SIZE_MAX, best_gap = SIZE_MAX, at = 0;
        for (int32_t b = 0; b < nb; ++b) {
            if (busy[b].offset >= at + size[v] && busy[b].offset - at < best_gap) {
                best = at;
                best_gap = busy[b].offset - at;
            }
            if (busy[b].offset + busy[b].size > at) at = busy[b].offset + busy[b].size;
        }
        offset[v] = best != SIZE_MAX ? best : at;
        done[v] = true;
        if (offset[v] + size[v] > total) total = offset[v] + size[v];
    }
    return total;
}

size_t pt__plan_arena(int32_t n, const size_t *size, const int32_t *first, const int32_t *last,
                      size_t *offset) {
    if (n <= 0) return 0;
    order_key *order = malloc((size_t)n * sizeof *order);
    placed *busy = malloc((size_t)n * sizeof *busy);
    bool *done = malloc((size_t)n * sizeof *done);
    size_t *other = malloc((size_t)n * sizeof *other);
    size_t total = SIZE_MAX;
    if (order && busy && done && other) {
        for (int32_t i = 0; i < n; ++i) order[i] = (order_key){size[i], first[i], i};
        qsort(order, (size_t)n, sizeof *order, by_size_desc);
        total = place(n, order, size, first, last, offset, busy, done);
        qsort(order, (size_t)n, sizeof *order, by_first_use);
        const size_t by_use = place(n, order, size, first, last, other, busy, done);
        if (by_use < total) {
            for (int32_t i = 0; i < n; ++i) offset[i] = other[i];
            total = by_use;
        }
    }
    free(order);
    free(busy);
    free(done);
    free(other);
    return total;
}
