/* The public graph calls (portable/graph.h): begin and end a capture, turn
 * what capture.c recorded into a graph (its memory plan, its ops resolved
 * to their final buffers), replay it, report on it, free it.
 *
 * A replay does per op only what changes between replays: a random op's
 * seed and counter, an optimizer's step-dependent scalar. Everything else
 * (validation, dtype and shape work, allocation, autograd, scopes) happened
 * once, at the capture. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/graph_internal.h"
#include "runtime/trace_internal.h"

struct pt_graph {
    pt_device *dev;
    int64_t id;                /* its number in traces */
    pt_op *ops;
    int32_t n_ops;
    int32_t *changed;          /* ops a replay updates: random ops, then patched ones */
    int32_t n_changed;
    int32_t n_rng;             /* the first n_rng of changed[] */
    uint64_t *rng_offset;      /* per random op, relative to the replay's draw */
    uint64_t rng_total;        /* elements one replay draws */
    pt__gheld held;            /* the capture's: blocks and memory made before it, patches */
    pt__step_cell **cells;     /* distinct cells of the patches: one step each per replay */
    int32_t n_cells;
    pt__block *arena;          /* the intermediates (NULL when none) */
    pt__block **kept;          /* blocks of the outputs, held */
    int32_t n_kept;
    void *inst;                /* the backend's instance (pt__graph_launch_call) */
    pt__gfused fused;          /* the chains the FUSED ops run */
    int32_t n_constants;       /* ops run once at the build (graph_fold.c), not replayed */
    pt_graph_stats stats;
};

/* Graphs are numbered in the order their captures began, for traces. */
static atomic_llong graph_ids;

pt_status pt_graph_capture_begin(pt_device *d) {
    static const char fn[] = "pt_graph_capture_begin";
    if (!d) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "d is NULL; pass the device to capture on");
    if (pt__capture_now)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "this thread already captures a graph on %s; end it with "
                         "pt_graph_capture_end(%s) first (captures do not nest)",
                         pt__capture_now->dev->name, pt__capture_now->dev->name);
    pt__capture *c = calloc(1, sizeof *c);
    if (!c) return pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for a capture");
    c->dev = d;
    c->id = (int64_t)atomic_fetch_add(&graph_ids, 1) + 1;
    c->begin_ns = pt__trace_now_ns();
    pt__capture_now = c;
    return PT_OK;
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

/* The most bytes the planned values held at once in the eager order: a
 * sweep over the allocations and frees the capture logged. Sizes are
 * rounded as the plan rounds them (the cache's blocks already are; with
 * PORTABLE_NO_MEMORY_CACHING a block is the bytes asked for), so the two
 * figures compare. */
static size_t eager_peak(const pt__capture *c, const bool *planned) {
    size_t live = 0, peak = 0;
    for (int32_t i = 0; i < c->n_events; ++i) {
        int32_t e = c->events[i], v = (e > 0 ? e : -e) - 1;
        if (!planned[v]) continue;
        const size_t size = round_up(c->values[v].size, PT__SMALL_CLASS);
        if (e > 0) {
            live += size;
            if (live > peak) peak = live;
        } else {
            live -= size;
        }
    }
    return peak;
}

/* The arena's bytes (offsets in offset[]) with the constant ops' values
 * (konst, per node) live over every op; SIZE_MAX when out of host memory. */
static size_t plan_with_constants(const pt__capture *c, const bool *konst, const bool *planned,
                                  const int32_t *slot, int32_t np, const size_t *size, const int32_t *first,
                                  const int32_t *last, size_t *offset) {
    int32_t *f = malloc(((size_t)np + 1) * sizeof *f), *l = malloc(((size_t)np + 1) * sizeof *l);
    size_t bytes = SIZE_MAX;
    if (f && l) {
        memcpy(f, first, (size_t)np * sizeof *f);
        memcpy(l, last, (size_t)np * sizeof *l);
        for (int32_t i = 0; i < c->n_nodes; ++i) {
            const int32_t v = c->nodes[i].value[0];
            if (konst[i] && v >= 0 && planned[v]) {
                f[slot[v]] = 0;
                l[slot[v]] = c->n_nodes - 1;
            }
        }
        bytes = pt__plan_arena(np, size, f, l, offset);
    }
    free(f);
    free(l);
    return bytes;
}

/* Places the intermediates, allocates the arena and points every operand
 * at its final buffer. The values of the constant ops (*konst, when not
 * NULL) live over the whole graph, unless that makes the arena larger than
 * the eager peak: then nothing is folded (*konst is freed and NULLed). */
static pt_status plan_memory(pt_graph *g, pt__capture *c, const char *fn, bool **konst) {
    const int32_t n = c->n_values;
    bool *planned = calloc((size_t)n + 1, sizeof *planned);
    size_t *size = malloc(((size_t)n + 1) * sizeof *size), *offset = malloc(((size_t)n + 1) * sizeof *offset);
    int32_t *first = malloc(((size_t)n + 1) * sizeof *first), *last = malloc(((size_t)n + 1) * sizeof *last);
    int32_t *slot = malloc(((size_t)n + 1) * sizeof *slot); /* value -> index among the planned */
    pt_status s = PT_OK;
    if (!planned || !size || !offset || !first || !last || !slot) {
        s = pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for the graph's memory plan");
        goto done;
    }
    int32_t np = 0;
    for (int32_t v = 0; v < n; ++v) {
        const pt__gvalue *x = &c->values[v];
        slot[v] = -1;
        if (x->freed && x->first >= 0) {
            planned[v] = true;
            slot[v] = np;
            size[np] = round_up(x->size, PT__SMALL_CLASS);
            first[np] = x->first;
            last[np] = x->last;
            ++np;
        } else if (!x->freed) {
            ++g->stats.outputs;
        }
    }
    g->stats.intermediates = np;
    g->stats.bytes_eager_peak = (int64_t)eager_peak(c, planned);
    size_t bytes = *konst ? plan_with_constants(c, *konst, planned, slot, np, size, first, last, offset)
                          : SIZE_MAX;
    if (*konst && (bytes == SIZE_MAX || bytes > (size_t)g->stats.bytes_eager_peak)) {
        if (bytes != SIZE_MAX)
            pt_log_message(PT_LOG_DEBUG, "graph %lld: its %d constant ops are replayed: kept apart they would "
                           "make the arena %zu bytes, past the eager peak of %lld",
                           (long long)g->id, (int)g->n_constants, bytes, (long long)g->stats.bytes_eager_peak);
        free(*konst);
        *konst = NULL;
        g->n_constants = 0;
        bytes = SIZE_MAX;
    }
    if (!*konst) bytes = pt__plan_arena(np, size, first, last, offset);
    if (bytes == SIZE_MAX) {
        s = pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for the graph's memory plan");
        goto done;
    }
    g->stats.bytes_planned = (int64_t)bytes;
    if (bytes > 0 && !(g->arena = pt__alloc(c->dev, bytes, fn))) {
        s = pt_last_status();
        goto done;
    }
    for (int32_t i = 0; i < g->n_ops; ++i) {
        const pt__gnode *node = &c->nodes[i];
        pt_op *op = &g->ops[i];
        for (int k = 0; k < PT__GRAPH_SLOTS; ++k) {
            int32_t v = node->value[k];
            if (v < 0 || !planned[v]) continue;
            pt_operand *o = pt__op_slot(op, k);
            size_t within = o->offset - c->values[v].offset;
            o->buf = g->arena->buf;
            o->offset = g->arena->offset + offset[slot[v]] + within;
        }
    }
done:
    free(planned);
    free(size);
    free(offset);
    free(first);
    free(last);
    free(slot);
    return s;
}

/* The outputs' blocks stay for the replays even if their tensors die. */
static pt_status hold_outputs(pt_graph *g, pt__capture *c, const char *fn) {
    g->kept = malloc(((size_t)c->n_values + 1) * sizeof *g->kept);
    if (!g->kept) return pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    for (int32_t v = 0; v < c->n_values; ++v) {
        if (c->values[v].freed || c->values[v].first < 0) continue;
        pt__block_hold(c->dev, c->values[v].block);
        g->kept[g->n_kept++] = c->values[v].block;
    }
    return PT_OK;
}

/* Random ops and step-dependent scalars: what a replay updates. */
static pt_status collect_changes(pt_graph *g, pt__capture *c, const char *fn) {
    int32_t n_rng = 0;
    for (int32_t i = 0; i < c->n_nodes; ++i) n_rng += c->nodes[i].rng;
    const int32_t n_patches = g->held.n_patches;
    g->changed = malloc(((size_t)n_rng + (size_t)n_patches + 1) * sizeof *g->changed);
    g->rng_offset = malloc(((size_t)n_rng + 1) * sizeof *g->rng_offset);
    g->cells = malloc(((size_t)n_patches + 1) * sizeof *g->cells);
    if (!g->changed || !g->rng_offset || !g->cells)
        return pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    for (int32_t i = 0; i < c->n_nodes; ++i) {
        if (!c->nodes[i].rng) continue;
        g->rng_offset[g->n_rng] = c->nodes[i].rng_offset;
        g->changed[g->n_rng++] = i;
    }
    g->n_changed = g->n_rng;
    g->rng_total = c->rng_drawn;
    for (int32_t i = 0; i < n_patches; ++i) {
        const pt__gpatch *p = &g->held.patches[i];
        g->changed[g->n_changed++] = p->node;
        bool seen = false;
        for (int32_t k = 0; k < g->n_cells && !seen; ++k) seen = g->cells[k] == p->cell;
        if (!seen) g->cells[g->n_cells++] = p->cell;
    }
    g->stats.random_ops = g->n_rng;
    return PT_OK;
}

/* PORTABLE_LOG=debug: the graph's ops as they will run, a fused chain as
 * its steps in brackets, so a user can see what fusion made of a step. */
static void log_ops(const pt_graph *g) {
    char line[2048];
    size_t at = 0;
    for (int32_t i = 0; i < g->n_ops && at + 64 < sizeof line; ++i) {
        const pt_op *op = &g->ops[i];
        at += (size_t)snprintf(line + at, sizeof line - at, "%s", i ? ", " : "");
        if (op->kind != PT_OP_FUSED || !op->fused) {
            at += (size_t)snprintf(line + at, sizeof line - at, "%s", pt_op_name(op->kind));
            continue;
        }
        const pt_fused_chain *ch = op->fused;
        at += (size_t)snprintf(line + at, sizeof line - at, "[");
        for (int32_t k = 0; k < ch->n_steps && at + 32 < sizeof line; ++k)
            at += (size_t)snprintf(line + at, sizeof line - at, "%s%s", k ? " " : "", pt_op_name(ch->steps[k].op.kind));
        if (ch->reduce && at + 32 < sizeof line)
            at += (size_t)snprintf(line + at, sizeof line - at, " -> %s", pt_op_name(ch->reduce->kind));
        if (at + 2 < sizeof line) at += (size_t)snprintf(line + at, sizeof line - at, "]");
    }
    pt_log_message(PT_LOG_DEBUG, "graph %lld: %d kernels after fusion and %d constant ops run once: %s%s",
                   (long long)g->id, (int)g->n_ops, (int)g->n_constants, line, at + 64 >= sizeof line ? ", ..." : "");
}

/* Where each op that a replay updates went (new_index[i], never -1 for
 * those: folded ops are neither random nor patched). */
static void renumber(pt_graph *g, const int32_t *new_index) {
    for (int32_t i = 0; i < g->n_changed; ++i) g->changed[i] = new_index[g->changed[i]];
    for (int32_t i = 0; i < g->held.n_patches; ++i) g->held.patches[i].node = new_index[g->held.patches[i].node];
}

/* The nodes whose values every replay would compute the same (graph_fold.c),
 * in *konst (NULL when none, or when PORTABLE_GRAPH_FUSION=off keeps every
 * recorded op a kernel of its own); before the memory plan. */
static pt_status mark_constants(pt_graph *g, pt__capture *c, const char *fn, bool **konst) {
    *konst = NULL;
    if (!pt__graph_fusion_on()) return PT_OK;
    bool *varies = calloc((size_t)c->n_nodes, sizeof *varies), *k = calloc((size_t)c->n_nodes, sizeof *k);
    if (!varies || !k) {
        free(varies);
        free(k);
        return pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for constant folding");
    }
    for (int32_t i = 0; i < g->held.n_patches; ++i) varies[g->held.patches[i].node] = true;
    const int32_t n = pt__graph_fold_mark(c, varies, k);
    free(varies);
    if (n == 0 || n == c->n_nodes) { /* nothing to fold, or nothing would be left to replay */
        free(k);
        return PT_OK;
    }
    g->n_constants = n;
    *konst = k;
    return PT_OK;
}

/* Fuses the element-wise runs, runs the constant ops once and drops them,
 * and renumbers what refers to ops by index. konst (per recorded op, or
 * NULL) keeps the constant ops out of the chains. */
static pt_status fuse(pt_graph *g, pt__capture *c, const char *fn, const bool *konst) {
    bool *patched = calloc((size_t)g->n_ops, sizeof *patched);
    int32_t *new_index = malloc((size_t)g->n_ops * sizeof *new_index);
    bool *folded = konst ? calloc((size_t)g->n_ops, sizeof *folded) : NULL;
    if (!patched || !new_index || (konst && !folded)) {
        free(patched);
        free(new_index);
        free(folded);
        return pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for fusion");
    }
    for (int32_t i = 0; i < g->held.n_patches; ++i) patched[g->held.patches[i].node] = true;
    for (int32_t i = 0; konst && i < g->n_ops; ++i) patched[i] = patched[i] || konst[i];
    const int32_t recorded = g->n_ops;
    pt_status s = pt__graph_fuse(c, g->dev, &g->ops, &g->n_ops, patched, new_index, &g->fused);
    if (s == PT_OK) renumber(g, new_index);
    if (s == PT_OK && konst) {
        /* a constant op is never in a chain: it keeps an op of its own */
        for (int32_t i = 0; i < recorded; ++i) folded[new_index[i]] = folded[new_index[i]] || konst[i];
        s = pt__graph_fold_run(fn, g->dev, g->ops, &g->n_ops, folded, new_index);
        if (s == PT_OK) renumber(g, new_index);
    }
    if (s == PT_OK) g->stats.kernels = g->n_ops;
    free(patched);
    free(new_index);
    free(folded);
    if (s == PT_OK) log_ops(g);
    return s;
}

static pt_graph *build(pt__capture *c, const char *fn) {
    pt_graph *g = calloc(1, sizeof *g);
    if (!g) {
        pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for a graph");
        return NULL;
    }
    g->dev = c->dev;
    g->id = c->id;
    g->n_ops = c->n_nodes;
    g->ops = malloc((size_t)g->n_ops * sizeof *g->ops);
    if (!g->ops) {
        pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for a graph");
        pt_graph_free(g);
        return NULL;
    }
    for (int32_t i = 0; i < g->n_ops; ++i) g->ops[i] = c->nodes[i].op;
    g->stats.ops = g->stats.kernels = g->n_ops;
    /* what the capture holds for the replays moves to the graph */
    g->held = c->held;
    c->held = (pt__gheld){0};
    bool *konst = NULL;
    if (collect_changes(g, c, fn) || mark_constants(g, c, fn, &konst) || plan_memory(g, c, fn, &konst) ||
        hold_outputs(g, c, fn) || fuse(g, c, fn, konst)) {
        free(konst);
        pt_graph_free(g);
        return NULL;
    }
    free(konst);
    return g;
}

pt_graph *pt_graph_capture_end(pt_device *d) {
    static const char fn[] = "pt_graph_capture_end";
    pt__capture *c = pt__capture_now;
    if (!d) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                  "d is NULL; pass the device the capture runs on%s%s (a capture goes on)",
                  c ? ", " : "", c ? c->dev->name : "");
        return NULL;
    }
    if (!c) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                  "this thread is not capturing; call pt_graph_capture_begin(%s) first", d->name);
        return NULL;
    }
    if (d != c->dev) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                  "d is %s, but this thread captures on %s; pass %s (the capture goes on)",
                  d->name, c->dev->name, c->dev->name);
        return NULL;
    }
    pt__capture_now = NULL; /* ended, whatever follows */
    pt_graph *g = NULL;
    if (c->refused != PT_OK) {
        pt__error(c->refused, fn, "the capture on %s was refused: %s", d->name, c->reason);
    } else if (c->n_nodes == 0) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                  "nothing to replay: no op ran on %s on this thread during the capture", d->name);
    } else {
        g = build(c, fn);
    }
    if (pt__tracing()) pt__trace_capture(d, c->begin_ns, c->id, c->n_nodes, g ? PT_OK : pt_last_status());
    pt__capture_destroy(c);
    return g;
}

pt_status pt_graph_replay(pt_graph *g) {
    static const char fn[] = "pt_graph_replay";
    if (!g) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "g is NULL (did pt_graph_capture_end fail? see its error)");
    if (pt__capture_now && pt__capture_now->dev == g->dev)
        return pt__capture_fail(pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                                          "this thread is capturing on %s: a replay cannot be "
                                          "captured; replay after pt_graph_capture_end",
                                          g->dev->name));
    if (g->n_rng) {
        uint64_t seed;
        uint64_t base = pt__rng_advance(g->rng_total, &seed);
        for (int32_t i = 0; i < g->n_rng; ++i) {
            pt_op *op = &g->ops[g->changed[i]];
            op->seed = seed;
            op->counter = base + g->rng_offset[i];
        }
    }
    for (int32_t i = 0; i < g->held.n_patches; ++i) {
        const pt__gpatch *p = &g->held.patches[i];
        g->ops[p->node].scalar = p->f(p->p, p->cell->steps + 1);
    }
    pt_status s = pt__tracing() ? pt__trace_replay(g->dev, &g->inst, g->ops, g->n_ops, g->changed,
                                                   g->n_changed, g->id, g->stats.replays + 1)
                                : pt__graph_launch_call(g->dev, &g->inst, g->ops, g->n_ops, g->changed,
                                                        g->n_changed);
    if (s != PT_OK) return s;
    for (int32_t i = 0; i < g->n_cells; ++i) g->cells[i]->steps++;
    g->stats.replays++;
    return PT_OK;
}

pt_status pt_graph_info(const pt_graph *g, pt_graph_stats *out) {
    static const char fn[] = "pt_graph_info";
    if (!g) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "g is NULL (did pt_graph_capture_end fail? see its error)");
    if (!out) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "out is NULL; pass a pt_graph_stats to fill");
    *out = g->stats;
    return PT_OK;
}

void pt_graph_free(pt_graph *g) {
    if (!g) return;
    pt__graph_release_call(g->dev, g->inst);
    for (int32_t i = 0; i < g->n_kept; ++i) pt__block_unhold(g->dev, g->kept[i]);
    pt__free_direct(g->dev, g->arena);
    pt__graph_let_go(g->dev, &g->held);
    pt__graph_fused_free(&g->fused);
    free(g->ops);
    free(g->changed);
    free(g->rng_offset);
    free(g->cells);
    free(g->kept);
    free(g);
}
