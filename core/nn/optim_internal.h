/* libportable core — an optimizer's insides, shared by its steps (optim.c)
 * and its state file (optim_state.c). Nothing here is exported. */
#ifndef PORTABLE_CORE_NN_OPTIM_INTERNAL_H
#define PORTABLE_CORE_NN_OPTIM_INTERNAL_H

#include "nn/nn_internal.h"

/* The most updates and schedule steps an optimizer counts: the step-
 * dependent scalars of a captured step carry them as doubles, exact up to
 * 2^53. */
#define PT__MAX_COUNT (INT64_C(1) << 53)

typedef enum pt__optim_kind { PT__OPTIM_SGD, PT__OPTIM_ADAM, PT__OPTIM_ADAMW } pt__optim_kind;

/* The hyper-parameters (those a kind does not use stay 0) and the
 * schedule (pt_optimizer_set_schedule; total < 0: none). */
typedef struct pt__optim_hypers {
    double lr, momentum, weight_decay, beta1, beta2, eps;
    double min_lr;
    int64_t warmup, total;
} pt__optim_hypers;

/* One parameter's state. */
typedef struct pt__optim_state {
    pt_tensor *a, *b;   /* SGD: momentum buffer; Adam: first and second moments (owned) */
    /* Updates applied to this parameter: shared with the graphs that
     * captured a step, whose replays count theirs (NULL until needed). */
    pt__step_cell *steps;
} pt__optim_state;

struct pt_optimizer {
    pt__optim_kind kind;
    pt_module *module;
    pt__optim_hypers h;
    int n;                  /* state entries: one per state-dict position */
    pt__optim_state *state;
};

/* PT_OK when every hyper-parameter kind uses, and the schedule if any, is
 * in range; else PT_ERR_INVALID_ARGUMENT naming fn, the hyper-parameter, its
 * value, the range and the usual value. */
pt_status pt__optim_check(const char *fn, pt__optim_kind kind, const pt__optim_hypers *h);
/* torch.optim's class name of kind: "SGD", "Adam", "AdamW". */
const char *pt__optim_kind_name(pt__optim_kind kind);
/* Whether st's tensors (those it has) have p's shape and dtype: state that
 * does not is restarted by the next step. */
bool pt__optim_state_fits(const pt__optim_state *st, const pt_tensor *p);
/* Grows o's state to n entries (new ones empty). */
pt_status pt__optim_state_grow(pt_optimizer *o, int n, const char *fn);
/* Drops st's tensors and sets its update count to 0 (a graph that
 * captured a step keeps the cell, and sees the 0). */
void pt__optim_state_reset(pt__optim_state *st);

#endif
