/* The shape arithmetic the backward functions of rules.c share: summing a
 * broadcast gradient back to its input's shape, the shape a reduction kept,
 * and putting one_hot's class axis back where it belongs. */
#include <string.h>

#include "autograd/autograd_internal.h"

/* A scope-registered reference to x (for rules that pass g through). */
static pt_tensor *same(pt_tensor *x) { return x ? pt__ret(pt_retain(x)) : NULL; }

static bool shape_equal(int na, const int64_t *a, int nb, const int64_t *b) {
    if (na != nb) return false;
    for (int i = 0; i < na; ++i)
        if (a[i] != b[i]) return false;
    return true;
}

pt_tensor *pt__grad_unbroadcast(pt_tensor *g, int ndim, const int64_t *shape, pt_dtype t) {
    if (!g) return NULL;
    pt_tensor *cur = g;
    int lead = g->ndim - ndim;
    if (lead < 0) {
        pt__error(PT_ERR_INTERNAL, "pt_backward", "gradient has fewer dims (%d) than its input (%d)",
                  g->ndim, ndim);
        return NULL;
    }
    /* Leading dims the input did not have: sum them away. */
    for (int i = 0; i < lead && cur; ++i) cur = pt_sum(cur, 0, false);
    /* Dims the input had as 1 and the op broadcast: sum, keeping the 1. */
    for (int d = 0; d < ndim && cur; ++d)
        if (shape[d] == 1 && cur->shape[d] != 1) cur = pt_sum(cur, d, true);
    if (!cur) return NULL;
    if (!shape_equal(cur->ndim, cur->shape, ndim, shape)) cur = pt_reshape(cur, ndim, shape);
    if (cur && cur->dtype != t) cur = pt_cast(cur, t);
    return cur == g ? same(g) : cur;
}

bool pt__grad_keep_shape(const char *what, int ndim, const int64_t *in, int dim, int64_t *keep) {
    memcpy(keep, in, (size_t)ndim * sizeof *keep);
    if (dim == PT_ALL) {
        for (int i = 0; i < ndim; ++i) keep[i] = 1;
        return true;
    }
    int d;
    if (pt__resolve_dim(what, dim, ndim, &d)) return false;
    keep[d] = 1;
    return true;
}

void pt__grad_last_axis_to(int nd, int d, int *perm) {
    for (int i = 0, k = 0; i < nd; ++i) perm[i] = i == d ? nd - 1 : k++;
}
