/* What capture.c records and graph.c turns into a graph: private to the
 * runtime's graph files. */
#ifndef PORTABLE_CORE_GRAPH_INTERNAL_H
#define PORTABLE_CORE_GRAPH_INTERNAL_H

#include "runtime/runtime.h"

/* Operand slots of a recorded op: those of pt__op_slot. */
#define PT__GRAPH_SLOTS PT__OP_SLOTS

/* A recorded op, its operands tied to the blocks the capture made. */
typedef struct pt__gnode {
    pt_op op;
    int32_t value[PT__GRAPH_SLOTS]; /* the capture's block the operand lies in; -1: made before */
    uint64_t rng_offset;           /* random ops: counter relative to the capture's start */
    bool rng;
} pt__gnode;

/* A block allocated during the capture. */
typedef struct pt__gvalue {
    pt__block *block;              /* valid while not freed: the allocator may merge the
                                      record away after the free */
    void *buf;                     /* the block's place, copied at its allocation */
    size_t offset, size;
    int32_t first, last;           /* the first and last op using it; -1: none */
    bool freed;                    /* released during the capture: an intermediate */
} pt__gvalue;

/* An op whose scalar is a function of an optimizer's step number. */
typedef struct pt__gpatch {
    int32_t node;
    pt_op_kind kind;               /* the op kind the patch expects */
    pt__step_cell *cell;           /* retained */
    pt__step_scalar_fn f;
    double p[PT__STEP_PARAMS];
} pt__gpatch;

/* Memory made before the capture that its ops use: owner's reference,
 * dropped by release (pt__capture_keep). */
typedef struct pt__gkeep {
    void *owner;
    void (*release)(void *owner);
} pt__gkeep;

/* What a capture holds for the replays of its graph: it moves to the graph
 * at pt_graph_capture_end, and pt__graph_let_go gives it back. */
typedef struct pt__gheld {
    pt__block **adopted;           /* blocks made before, freed during the capture */
    int32_t n_adopted, cap_adopted;
    pt__gkeep *keeps;              /* memory made before the capture that its ops use */
    int32_t n_keeps, cap_keeps;
    pt__gpatch *patches;           /* their cells retained */
    int32_t n_patches, cap_patches;
} pt__gheld;

struct pt__capture {
    pt_device *dev;
    int64_t id;                    /* the graph's number in traces (1, 2, ... per process) */
    int64_t begin_ns;              /* when it began, for its span in a trace */
    pt_status refused;             /* PT_OK while the capture is valid */
    char reason[1024];             /* the refusal's message */
    pt__gnode *nodes;
    int32_t n_nodes, cap_nodes;
    pt__gvalue *values;
    int32_t n_values, cap_values;
    int32_t *events;               /* allocations (value + 1) and frees (-(value + 1)) in order */
    int32_t n_events, cap_events;
    pt__gheld held;
    pt__gpatch pending;            /* for the next op (pending.cell != NULL) */
    uint64_t rng_drawn;            /* elements the capture's random ops drew */
};

/* Frees what the capture holds (pt__graph_let_go of what did not move to
 * a graph). */
void pt__capture_destroy(pt__capture *c);

/* Gives back the blocks made before a capture and freed during it, drops
 * the references to the memory made before it, releases the patches' step
 * cells, and frees the arrays. capture.c */
void pt__graph_let_go(pt_device *d, pt__gheld *held);

/* The FUSED ops' chains of a graph (graph_fuse.c): the ops point into
 * these arrays. */
typedef struct pt__gfused {
    pt_fused_step *steps;
    pt_fused_chain *chains;
    pt_op *reduces;                /* per chain, its reduction when it has one */
    int32_t n_chains;
} pt__gfused;

/* Replaces the runs of element-wise ops in (*ops)[0..*n_ops-1] (planned,
 * resolved to their final buffers) by FUSED ops where d's backend takes
 * them; patched[i] keeps op i out of any chain. new_index[i] is where op i
 * went (its chain's op when fused). *ops is reallocated; fused holds the
 * chains until pt__graph_fused_free. PORTABLE_GRAPH_FUSION=off leaves the
 * ops as they are. graph_fuse.c */
pt_status pt__graph_fuse(pt__capture *c, pt_device *d, pt_op **ops, int32_t *n_ops, const bool *patched,
                         int32_t *new_index, pt__gfused *fused);
/* Whether PORTABLE_GRAPH_FUSION (read at each capture's end) lets graphs
 * fuse chains and fold constants: not when it is "off". graph_fuse.c */
bool pt__graph_fusion_on(void);
void pt__graph_fused_free(pt__gfused *fused);

/* Constant folding (graph_fold.c). pt__graph_fold_mark sets konst[i] for
 * the nodes whose out value is the same at every replay (varies[i]: node i
 * is patched per replay); the memory plan must then keep those values'
 * places for the whole graph. Returns how many it marked.
 * pt__graph_fold_run runs ops[i] with konst[i] once, now, and drops them
 * from the list: new_index[i] is where op i went, -1 for a folded one. */
int32_t pt__graph_fold_mark(pt__capture *c, const bool *varies, bool *konst);
pt_status pt__graph_fold_run(const char *fn, pt_device *d, pt_op *ops, int32_t *n_ops, const bool *konst,
                             int32_t *new_index);
/* The arena plan: offsets for n values of size[i] bytes, live over the ops
 * [first[i], last[i]], such that values live at once never overlap.
 * Returns the arena's bytes. graph_plan.c */
size_t pt__plan_arena(int32_t n, const size_t *size, const int32_t *first, const int32_t *last,
                      size_t *offset);
#endif
