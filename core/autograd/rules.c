/* The derivative of each recorded op: from g, the gradient of the op's
 * output, the gradient of each input that needs one.
 *
 * Everything here is built from public ops, so it runs on the tensors'
 * device and is the same code on every backend. The engine calls these
 * inside a scope with grad mode off: intermediate results are simply left to
 * that scope, and every result handed back is a reference registered there
 * too. Ops given NULL return NULL and keep the first error, so each rule is
 * written as plain expressions and checked once at the end. */
#include <string.h>

#include "autograd/autograd_internal.h"

/* ---- Shape helpers ---- */

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

/* g reduced back to input i's shape and dtype. */
static pt_tensor *to_input(pt_tensor *g, const pt__grad_edge *e) {
    return pt__grad_unbroadcast(g, e->ndim, e->shape, e->dtype);
}

/* The shape of x with the reduced dims kept as 1 (dim may be PT_ALL). */
static bool keep_shape(const char *what, const pt__grad_edge *x, int dim, int64_t *shape) {
    memcpy(shape, x->shape, sizeof x->shape);
    if (dim == PT_ALL) {
        for (int i = 0; i < x->ndim; ++i) shape[i] = 1;
        return true;
    }
    int d;
    if (pt__resolve_dim(what, dim, x->ndim, &d)) return false;
    shape[d] = 1;
    return true;
}

static pt_tensor *zero_like(pt_tensor *g) { return pt_zeros(pt_tensor_device(g), g->dtype, 0, NULL); }

static pt_tensor *mask_as(pt_tensor *mask, pt_dtype t) { return pt_cast(mask, t); }

/* ---- Rules ---- */

static void rule_pow(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt__grad_edge *ea = &node->edges[0], *eb = &node->edges[1];
    pt_tensor *a = ea->saved, *b = eb->saved, *y = node->saved_out, *zero = zero_like(g);
    if (ea->needs_grad) {
        /* d/da a^b = b a^(b-1), taken as 0 where b == 0 (0^-1 would give NaN). */
        pt_tensor *d = pt_mul(b, pt_pow(a, pt_add_scalar(b, -1.0)));
        d = pt_where(pt_eq(b, zero), zero, d);
        out[0] = to_input(pt_mul(g, d), ea);
    }
    if (eb->needs_grad) {
        /* d/db a^b = a^b log a, taken as 0 where a == 0 (like PyTorch). */
        pt_tensor *d = pt_where(pt_eq(a, zero), zero, pt_mul(y, pt_log(a)));
        out[1] = to_input(pt_mul(g, d), eb);
    }
}

/* maximum/minimum: the winner takes the gradient, ties split it evenly. */
static void rule_extremum(pt__grad_node *node, pt_tensor *g, pt_tensor **out, bool is_max) {
    pt__grad_edge *ea = &node->edges[0], *eb = &node->edges[1];
    pt_tensor *a = ea->saved, *b = eb->saved;
    pt_tensor *wins = is_max ? pt_gt(a, b) : pt_lt(a, b);
    pt_tensor *share = pt_add(mask_as(wins, g->dtype), pt_mul_scalar(mask_as(pt_eq(a, b), g->dtype), 0.5));
    pt_tensor *ga = pt_mul(g, share);
    if (ea->needs_grad) out[0] = to_input(ga, ea);
    if (eb->needs_grad) out[1] = to_input(pt_sub(g, ga), eb);
}

static void rule_reduce(pt__grad_node *node, pt_tensor *g, pt_tensor **out, bool mean) {
    pt__grad_edge *ex = &node->edges[0];
    int64_t keep[PT_MAX_DIMS];
    if (!keep_shape("pt_backward (sum/mean)", ex, node->args.dim, keep)) return;
    pt_tensor *gx = pt_expand(pt_reshape(g, ex->ndim, keep), ex->ndim, ex->shape);
    if (mean) {
        int64_t reduced = pt__numel(ex->ndim, ex->shape) / (pt__numel(ex->ndim, keep) ? pt__numel(ex->ndim, keep) : 1);
        gx = pt_mul_scalar(gx, reduced ? 1.0 / (double)reduced : 0.0);
    }
    out[0] = to_input(gx, ex);
}

/* max: the gradient goes to the first maximum (pt_argmax), like PyTorch's
 * max(dim). */
static void rule_max(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt__grad_edge *ex = &node->edges[0];
    pt_tensor *x = ex->saved;
    int64_t keep[PT_MAX_DIMS];
    if (!keep_shape("pt_backward (max)", ex, node->args.dim, keep)) return;
    pt_tensor *hot;
    if (node->args.dim == PT_ALL) {
        int64_t n = pt__numel(ex->ndim, ex->shape);
        hot = pt_reshape(pt_one_hot(pt_argmax(x, PT_ALL, false), n, g->dtype), ex->ndim, ex->shape);
    } else {
        int d, nd = ex->ndim, perm[PT_MAX_DIMS];
        pt__resolve_dim("pt_backward (max)", node->args.dim, nd, &d);
        /* one_hot puts the class axis last; move it back to position d. */
        for (int i = 0, k = 0; i < nd; ++i) perm[i] = i == d ? nd - 1 : k++;
        hot = pt_permute(pt_one_hot(pt_argmax(x, d, false), ex->shape[d], g->dtype), perm);
    }
    out[0] = to_input(pt_mul(hot, pt_reshape(g, ex->ndim, keep)), ex);
}

static void rule_norm(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt__grad_edge *ex = &node->edges[0];
    int64_t keep[PT_MAX_DIMS];
    memcpy(keep, ex->shape, sizeof keep);
    if (node->args.n_ints == 0) {
        for (int i = 0; i < ex->ndim; ++i) keep[i] = 1;
    } else {
        for (int i = 0; i < node->args.n_ints; ++i) {
            int d;
            if (pt__resolve_dim("pt_backward (norm)", node->args.ints[i], ex->ndim, &d)) return;
            keep[d] = 1;
        }
    }
    pt_tensor *zero = zero_like(g);
    pt_tensor *y = pt_reshape(node->saved_out, ex->ndim, keep);
    /* d||x||/dx = x / ||x||, taken as 0 at x = 0 (the subgradient PyTorch uses). */
    pt_tensor *scale = pt_div(pt_reshape(g, ex->ndim, keep), y);
    scale = pt_where(pt_eq(y, zero), zero, scale);
    out[0] = to_input(pt_mul(ex->saved, scale), ex);
}

/* NumPy matmul: 1-D operands are promoted ([K] -> [1, K] on the left,
 * [K, 1] on the right), batch dims broadcast. The gradients are
 * g b^T and a^T g in the promoted shapes, summed over broadcast batch dims,
 * then reshaped back (dropping the promoted 1). */
static void rule_matmul(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt__grad_edge *ea = &node->edges[0], *eb = &node->edges[1];
    bool a1 = ea->ndim == 1, b1 = eb->ndim == 1;
    int64_t a2[PT_MAX_DIMS], b2[PT_MAX_DIMS], o2[PT_MAX_DIMS + 2];
    int na = a1 ? 2 : ea->ndim, nb = b1 ? 2 : eb->ndim, no;
    if (a1) {
        a2[0] = 1;
        a2[1] = ea->shape[0];
    } else {
        memcpy(a2, ea->shape, sizeof a2);
    }
    if (b1) {
        b2[0] = eb->shape[0];
        b2[1] = 1;
    } else {
        memcpy(b2, eb->shape, sizeof b2);
    }
    /* The output with the promoted 1s put back. */
    no = node->out_ndim;
    memcpy(o2, node->out_shape, sizeof node->out_shape);
    if (a1 && b1) {
        no = 2;
        o2[0] = o2[1] = 1;
    } else if (a1) {
        o2[no] = o2[no - 1];
        o2[no - 1] = 1;
        ++no;
    } else if (b1) {
        o2[no++] = 1;
    }
    if (no > PT_MAX_DIMS) {
        pt__error(PT_ERR_SHAPE, "pt_backward (matmul)", "promoted output has %d dims (max %d)", no, PT_MAX_DIMS);
        return;
    }
    pt_tensor *g2 = pt_reshape(g, no, o2);
    if (ea->needs_grad) {
        pt_tensor *b = pt_reshape(eb->saved, nb, b2);
        pt_tensor *ga = pt_matmul(g2, pt_transpose(b, nb - 2, nb - 1));
        out[0] = pt_reshape(pt__grad_unbroadcast(ga, na, a2, ea->dtype), ea->ndim, ea->shape);
    }
    if (eb->needs_grad) {
        pt_tensor *a = pt_reshape(ea->saved, na, a2);
        pt_tensor *gb = pt_matmul(pt_transpose(a, na - 2, na - 1), g2);
        out[1] = pt_reshape(pt__grad_unbroadcast(gb, nb, b2, eb->dtype), eb->ndim, eb->shape);
    }
}

static void rule_narrow(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt__grad_edge *ex = &node->edges[0];
    pt_tensor *z = pt_zeros(pt_tensor_device(g), ex->dtype, ex->ndim, ex->shape);
    pt_tensor *window = pt_narrow(z, node->args.dim, node->args.start, node->args.length);
    if (!window || pt_copy_(window, g)) return;
    out[0] = z;
}

static void rule_cat(pt__grad_node *node, pt_tensor *g, pt_tensor **out, bool stack) {
    int d;
    if (pt__resolve_dim("pt_backward (cat/stack)", node->args.dim, node->out_ndim, &d)) return;
    int64_t at = 0;
    for (int i = 0; i < node->n; ++i) {
        pt__grad_edge *e = &node->edges[i];
        int64_t len = stack ? 1 : e->shape[d];
        if (e->needs_grad) {
            pt_tensor *part = pt_narrow(g, d, at, len);
            out[i] = stack ? pt_reshape(part, e->ndim, e->shape) : to_input(part, e);
        }
        at += len;
    }
}

/* gather's adjoint scatters g back to the indexed positions. Without a
 * scatter op: one_hot(index) [.., J, .., R] times g, summed over J, then the
 * class axis moved to the gathered dim. */
static void rule_gather(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt__grad_edge *ex = &node->edges[0];
    pt_tensor *index = node->edges[1].saved;
    int d, nd = ex->ndim, perm[PT_MAX_DIMS];
    if (pt__resolve_dim("pt_backward (gather)", node->args.dim, nd, &d)) return;
    if (nd + 1 > PT_MAX_DIMS) {
        pt__error(PT_ERR_SHAPE, "pt_backward (gather)", "a %d-D gather needs %d dims for its gradient (max %d)",
                  nd, nd + 1, PT_MAX_DIMS);
        return;
    }
    int64_t gshape[PT_MAX_DIMS];
    memcpy(gshape, g->shape, sizeof gshape);
    gshape[nd] = 1;
    pt_tensor *hot = pt_one_hot(index, ex->shape[d], g->dtype);
    pt_tensor *summed = pt_sum(pt_mul(hot, pt_reshape(g, nd + 1, gshape)), d, false);
    for (int i = 0, k = 0; i < nd; ++i) perm[i] = i == d ? nd - 1 : k++;
    out[0] = to_input(pt_permute(summed, perm), ex);
}

static void run_rule(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt__grad_edge *e = node->edges;
    pt__grad_args *args = &node->args;
    pt_tensor *y = node->saved_out;
    bool need0 = node->n > 0 && e[0].needs_grad, need1 = node->n > 1 && e[1].needs_grad;
    switch (node->op) {
    case PT__G_ADD:
        if (need0) out[0] = to_input(g, &e[0]);
        if (need1) out[1] = to_input(g, &e[1]);
        break;
    case PT__G_SUB:
        if (need0) out[0] = to_input(g, &e[0]);
        if (need1) out[1] = to_input(pt_neg(g), &e[1]);
        break;
    case PT__G_MUL:
        if (need0) out[0] = to_input(pt_mul(g, e[1].saved), &e[0]);
        if (need1) out[1] = to_input(pt_mul(g, e[0].saved), &e[1]);
        break;
    case PT__G_DIV: {
        pt_tensor *g_over_b = pt_div(g, e[1].saved);
        if (need0) out[0] = to_input(g_over_b, &e[0]);
        /* d(a/b)/db = -a/b^2 = -(a/b)/b */
        if (need1) out[1] = to_input(pt_neg(pt_mul(g_over_b, y)), &e[1]);
        break;
    }
    case PT__G_POW:
        rule_pow(node, g, out);
        break;
    case PT__G_MAXIMUM:
    case PT__G_MINIMUM:
        rule_extremum(node, g, out, node->op == PT__G_MAXIMUM);
        break;
    case PT__G_ADD_SCALAR:
    case PT__G_CONTIGUOUS:
    case PT__G_EXPAND:
        out[0] = to_input(g, &e[0]);
        break;
    case PT__G_MUL_SCALAR:
        out[0] = to_input(pt_mul_scalar(g, args->scalar), &e[0]);
        break;
    case PT__G_NEG:
        out[0] = to_input(pt_neg(g), &e[0]);
        break;
    case PT__G_ABS: {
        pt_tensor *zero = zero_like(g), *x = e[0].saved;
        pt_tensor *sign = pt_sub(mask_as(pt_gt(x, zero), g->dtype), mask_as(pt_lt(x, zero), g->dtype));
        out[0] = to_input(pt_mul(g, sign), &e[0]);
        break;
    }
    case PT__G_EXP:
        out[0] = to_input(pt_mul(g, y), &e[0]);
        break;
    case PT__G_LOG:
        out[0] = to_input(pt_div(g, e[0].saved), &e[0]);
        break;
    case PT__G_SQRT:
        out[0] = to_input(pt_div(pt_mul_scalar(g, 0.5), y), &e[0]);
        break;
    case PT__G_RELU:
        out[0] = to_input(pt_mul(g, mask_as(pt_gt(y, zero_like(g)), g->dtype)), &e[0]);
        break;
    case PT__G_SIGMOID: /* y (1 - y) */
        out[0] = to_input(pt_mul(g, pt_mul(y, pt_add_scalar(pt_neg(y), 1.0))), &e[0]);
        break;
    case PT__G_TANH: /* 1 - y^2 */
        out[0] = to_input(pt_sub(g, pt_mul(g, pt_mul(y, y))), &e[0]);
        break;
    case PT__G_WHERE: {
        pt_tensor *zero = zero_like(g), *cond = e[0].saved;
        if (need1) out[1] = to_input(pt_where(cond, g, zero), &e[1]);
        if (node->n > 2 && e[2].needs_grad) out[2] = to_input(pt_where(cond, zero, g), &e[2]);
        break;
    }
    case PT__G_SUM:
    case PT__G_MEAN:
        rule_reduce(node, g, out, node->op == PT__G_MEAN);
        break;
    case PT__G_MAX:
        rule_max(node, g, out);
        break;
    case PT__G_NORM:
        rule_norm(node, g, out);
        break;
    case PT__G_SOFTMAX: /* y (g - sum(g y)) */
        out[0] = to_input(pt_mul(y, pt_sub(g, pt_sum(pt_mul(g, y), args->dim, true))), &e[0]);
        break;
    case PT__G_LOG_SOFTMAX: /* g - exp(y) sum(g) */
        out[0] = to_input(pt_sub(g, pt_mul(pt_exp(y), pt_sum(g, args->dim, true))), &e[0]);
        break;
    case PT__G_MATMUL:
        rule_matmul(node, g, out);
        break;
    case PT__G_RESHAPE:
        out[0] = pt_reshape(g, e[0].ndim, e[0].shape);
        break;
    case PT__G_TRANSPOSE:
        out[0] = pt_transpose(g, args->dim, args->dim2);
        break;
    case PT__G_PERMUTE: {
        int inverse[PT_MAX_DIMS], nd = node->out_ndim;
        for (int i = 0; i < nd; ++i) {
            int p = args->ints[i] < 0 ? args->ints[i] + nd : args->ints[i];
            if (p < 0 || p >= nd) {
                pt__error(PT_ERR_INTERNAL, "pt_backward (permute)", "recorded perm[%d] = %d is out of range",
                          i, args->ints[i]);
                return;
            }
            inverse[p] = i;
        }
        out[0] = pt_permute(g, inverse);
        break;
    }
    case PT__G_NARROW:
        rule_narrow(node, g, out);
        break;
    case PT__G_CAST:
        out[0] = pt_cast(g, e[0].dtype);
        break;
    case PT__G_CAT:
    case PT__G_STACK:
        rule_cat(node, g, out, node->op == PT__G_STACK);
        break;
    case PT__G_GATHER:
        rule_gather(node, g, out);
        break;
    default:
        pt__error(PT_ERR_INTERNAL, "pt_backward", "no derivative for recorded op %d", (int)node->op);
        break;
    }
}

pt_status pt__grad_node_backward(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    for (int i = 0; i < node->n; ++i) out[i] = NULL;
    if (!g) return pt__error(PT_ERR_INTERNAL, "pt_backward", "node reached without a gradient");
    run_rule(node, g, out);
    /* A failing op returned NULL with the error set, and NULL flows through
     * every later op of the rule, so a missing result is the whole check. */
    for (int i = 0; i < node->n; ++i) {
        if (!node->edges[i].needs_grad || out[i]) continue;
        pt_status s = pt_last_status();
        if (s == PT_OK)
            s = pt__error(PT_ERR_INTERNAL, "pt_backward", "derivative of op %d gave no gradient for input %d",
                          (int)node->op, i);
        for (int j = 0; j < node->n; ++j) out[j] = NULL; /* the engine's scope releases them */
        return s;
    }
    return PT_OK;
}
