/* Recording a graph: this thread's ops on the capturing device are stored
 * instead of executed, each operand tied to the block the capture made it
 * in (or left as it is when the tensor existed before the capture); the
 * blocks' allocations and frees are logged for the memory plan; random ops
 * draw relative to the capture's start. A refusal keeps its message and
 * invalidates the capture until pt_graph_capture_end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/graph_internal.h"

PT__HOT_TLS pt__capture *pt__capture_now;

pt_device *pt__capture_device(void) { return pt__capture_now ? pt__capture_now->dev : NULL; }

/* Marks the capture invalid with the last error as its reason (the first
 * refusal wins). Returns s. */
static pt_status invalidate(pt__capture *c, pt_status s) {
    if (c && c->refused == PT_OK) {
        c->refused = s;
        snprintf(c->reason, sizeof c->reason, "%s", pt_last_error());
    }
    return s;
}

pt_status pt__capture_fail(pt_status s) { return invalidate(pt__capture_now, s); }

pt_status pt__capture_refuse_device(const char *fn, pt_device *d) {
    pt__capture *c = pt__capture_now;
    pt_status s = pt__error(PT_ERR_DEVICE_MISMATCH, fn,
                            "an op on %s while this thread captures a graph on %s: a graph runs on "
                            "one device; move the operands to %s before pt_graph_capture_begin "
                            "(pt_to), or run this op after pt_graph_capture_end",
                            d->name, c->dev->name, c->dev->name);
    return invalidate(c, s);
}

pt_status pt__capture_refuse_transfer(const char *fn, pt_device *d, const char *what) {
    pt_status s = pt__error(PT_ERR_UNSUPPORTED, fn,
                            "%s during a graph capture on %s, where no value exists until a "
                            "replay; do it before pt_graph_capture_begin (warm up eagerly so "
                            "lazy parameters and optimizer state exist; make input tensors "
                            "first and copy each batch into them with pt_copy_) or after "
                            "pt_graph_capture_end and pt_graph_replay",
                            what, d->name);
    return invalidate(pt__capture_now, s);
}

/* Grows *arr (of *cap elements of size each) to hold one more; false when
 * the host is out of memory. */
static bool grow(void **arr, int32_t n, int32_t *cap, size_t size) {
    if (n < *cap) return true;
    int32_t want = *cap ? *cap * 2 : 64;
    void *p = realloc(*arr, (size_t)want * size);
    if (!p) return false;
    *arr = p;
    *cap = want;
    return true;
}

#define GROW(c, arr, n, cap) grow((void **)&(c)->arr, (c)->n, &(c)->cap, sizeof *(c)->arr)

static pt_status out_of_host_memory(pt__capture *c, const char *fn) {
    return invalidate(c, pt__error(PT_ERR_OUT_OF_MEMORY, fn,
                                   "out of host memory for the graph being captured on %s",
                                   c->dev->name));
}

/* The live value (made during the capture, not freed) whose block holds
 * byte offset off of buf, or -1. Newest first: the blocks of a step's last
 * ops are the likeliest. */
static int32_t value_at(const pt__capture *c, const void *buf, size_t off) {
    for (int32_t i = c->n_values - 1; i >= 0; --i) {
        const pt__gvalue *v = &c->values[i];
        if (!v->freed && v->buf == buf && off >= v->offset && off < v->offset + v->size)
            return i;
    }
    return -1;
}

static void tie_operand(pt__capture *c, pt__gnode *n, int slot, const pt_operand *o, int32_t at) {
    int32_t v = value_at(c, o->buf, o->offset);
    n->value[slot] = v;
    if (v < 0) return;
    if (c->values[v].first < 0) c->values[v].first = at;
    c->values[v].last = at;
}

pt_status pt__capture_record(const char *fn, pt_device *d, const pt_op *op) {
    pt__capture *c = pt__capture_now;
    if (c->refused != PT_OK)
        return pt__error(c->refused, fn, "the graph capture on %s was refused earlier: %s", d->name,
                         c->reason);
    if (!GROW(c, nodes, n_nodes, cap_nodes)) return out_of_host_memory(c, fn);
    const int32_t at = c->n_nodes;
    pt__gnode *n = &c->nodes[at];
    n->op = *op;
    n->rng = op->kind == PT_OP_RAND_UNIFORM || op->kind == PT_OP_RAND_NORMAL;
    n->rng_offset = op->counter;
    for (int k = 0; k < PT__GRAPH_SLOTS; ++k) {
        const pt_operand *o = pt__op_slot(&n->op, k);
        if (o) {
            tie_operand(c, n, k, o, at);
        } else {
            n->value[k] = -1;
        }
    }
    if (c->pending.cell) {
        pt__gpatch p = c->pending;
        c->pending.cell = NULL;
        if (p.kind != op->kind) {
            pt__step_cell_release(p.cell);
            return invalidate(c, pt__error(PT_ERR_INTERNAL, fn,
                                           "a step-dependent scalar expected a %s op, got %s; "
                                           "please report this",
                                           pt_op_name(p.kind), pt_op_name(op->kind)));
        }
        if (!GROW(c, held.patches, held.n_patches, held.cap_patches)) {
            pt__step_cell_release(p.cell);
            return out_of_host_memory(c, fn);
        }
        p.node = at;
        c->held.patches[c->held.n_patches++] = p;
    }
    c->n_nodes++;
    return PT_OK;
}

static void log_event(pt__capture *c, int32_t e) {
    if (GROW(c, events, n_events, cap_events)) {
        c->events[c->n_events++] = e;
    } else {
        out_of_host_memory(c, "pt_graph_capture_begin");
    }
}

void pt__capture_alloc(pt_device *d, pt__block *b) {
    pt__capture *c = pt__capture_now;
    if (d != c->dev) return;
    if (!GROW(c, values, n_values, cap_values)) {
        out_of_host_memory(c, "pt_graph_capture_begin");
        return;
    }
    c->values[c->n_values] = (pt__gvalue){
        .block = b, .buf = b->buf, .offset = b->offset, .size = b->size, .first = -1, .last = -1, .freed = false};
    log_event(c, ++c->n_values);
}

bool pt__capture_free(pt_device *d, pt__block *b) {
    pt__capture *c = pt__capture_now;
    if (d != c->dev) return false;
    for (int32_t i = c->n_values - 1; i >= 0; --i) {
        if (c->values[i].block == b && !c->values[i].freed) {
            c->values[i].freed = true;
            log_event(c, -(i + 1));
            return false; /* an intermediate: its block is a placeholder, free now */
        }
    }
    /* Made before the capture: the recorded ops may use it, so the graph
     * keeps it until it is freed. */
    if (!GROW(c, held.adopted, held.n_adopted, held.cap_adopted)) {
        out_of_host_memory(c, "pt_graph_capture_begin");
        return false;
    }
    c->held.adopted[c->held.n_adopted++] = b;
    return true;
}

bool pt__capture_keep(pt_device *d, const pt__block *b, void *owner, void (*release)(void *owner)) {
    pt__capture *c = pt__capture_now;
    if (d != c->dev) return false; /* the op is refused: a graph runs on one device */
    if (b)
        for (int32_t i = c->n_values - 1; i >= 0; --i)
            if (c->values[i].block == b && !c->values[i].freed) return false;
    for (int32_t i = 0; i < c->held.n_keeps; ++i)
        if (c->held.keeps[i].owner == owner) return false;
    if (!GROW(c, held.keeps, held.n_keeps, held.cap_keeps)) {
        out_of_host_memory(c, "pt_graph_capture_begin");
        return false;
    }
    c->held.keeps[c->held.n_keeps++] = (pt__gkeep){owner, release};
    return true;
}

uint64_t pt__capture_rng_take(uint64_t n) {
    pt__capture *c = pt__capture_now;
    uint64_t at = c->rng_drawn;
    c->rng_drawn += n;
    return at;
}

void pt__capture_step_scalar(pt__step_cell *cell, pt_op_kind kind, pt__step_scalar_fn f,
                             const double p[PT__STEP_PARAMS]) {
    pt__capture *c = pt__capture_now;
    if (!c || !cell) return;
    if (c->pending.cell) pt__step_cell_release(c->pending.cell);
    atomic_fetch_add(&cell->refs, 1);
    c->pending = (pt__gpatch){.node = -1, .kind = kind, .cell = cell, .f = f};
    memcpy(c->pending.p, p, sizeof c->pending.p);
}

void pt__capture_destroy(pt__capture *c) {
    if (!c) return;
    pt__graph_let_go(c->dev, &c->held);
    if (c->pending.cell) pt__step_cell_release(c->pending.cell);
    free(c->nodes);
    free(c->values);
    free(c->events);
    free(c);
}

void pt__graph_let_go(pt_device *d, pt__gheld *held) {
    for (int32_t i = 0; i < held->n_adopted; ++i) pt__free_direct(d, held->adopted[i]);
    for (int32_t i = 0; i < held->n_keeps; ++i) held->keeps[i].release(held->keeps[i].owner);
    for (int32_t i = 0; i < held->n_patches; ++i) pt__step_cell_release(held->patches[i].cell);
    free(held->adopted);
    free(held->keeps);
    free(held->patches);
    *held = (pt__gheld){0};
}

pt__step_cell *pt__step_cell_new(void) {
    pt__step_cell *c = malloc(sizeof *c);
    if (!c) return NULL;
    atomic_init(&c->refs, 1);
    c->steps = 0;
    return c;
}

void pt__step_cell_release(pt__step_cell *c) {
    if (c && atomic_fetch_sub(&c->refs, 1) == 1) free(c);
}
