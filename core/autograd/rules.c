/* One row per differentiable op: its backward function (what it may read
 * from the forward pass is the op's SAVES column in core/ops/tape.h), which turns g, the gradient of the op's output, into
 * the gradient of each input that needs one.
 *
 * Everything here is built from public ops, so it runs on the tensors'
 * device and is the same code on every backend. The engine calls these
 * inside a scope with grad mode off: intermediate results are simply left to
 * that scope, and every result handed back is a reference registered there
 * too. Ops given NULL return NULL and keep the first error, so each rule is
 * written as plain expressions and checked once at the end. */
#include <string.h>

#include "autograd/autograd_internal.h"
#include "ops/ops_internal.h"

/* ---- Helpers ---- */

/* g reduced back to input i's shape and dtype. */
static pt_tensor *to_input(pt_tensor *g, const pt__grad_edge *e) {
    return pt__grad_unbroadcast(g, e->ndim, e->shape, e->dtype);
}

static pt_tensor *zero_like(pt_tensor *g) { return pt_zeros(pt_tensor_device(g), g->dtype, 0, NULL); }

static pt_tensor *mask_as(pt_tensor *mask, pt_dtype t) { return pt_cast(mask, t); }

/* ---- Rules ---- */

static void backward_pow(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
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
static void backward_extremum(pt__grad_node *node, pt_tensor *g, pt_tensor **out, bool is_max) {
    pt__grad_edge *ea = &node->edges[0], *eb = &node->edges[1];
    pt_tensor *a = ea->saved, *b = eb->saved;
    pt_tensor *wins = is_max ? pt_gt(a, b) : pt_lt(a, b);
    pt_tensor *share = pt_add(mask_as(wins, g->dtype), pt_mul_scalar(mask_as(pt_eq(a, b), g->dtype), 0.5));
    pt_tensor *ga = pt_mul(g, share);
    if (ea->needs_grad) out[0] = to_input(ga, ea);
    if (eb->needs_grad) out[1] = to_input(pt_sub(g, ga), eb);
}

static void backward_reduce(pt__grad_node *node, pt_tensor *g, pt_tensor **out, bool mean) {
    pt__grad_edge *ex = &node->edges[0];
    int64_t keep[PT_MAX_DIMS];
    if (!pt__grad_keep_shape("pt_backward (sum/mean)", ex->ndim, ex->shape, node->args.dim, keep)) return;
    pt_tensor *gk = pt_reshape(g, ex->ndim, keep);
    if (mean) { /* scaled before the expand: on the reduced size, not the input's */
        int64_t reduced = pt__numel(ex->ndim, ex->shape) / (pt__numel(ex->ndim, keep) ? pt__numel(ex->ndim, keep) : 1);
        gk = pt_mul_scalar(gk, reduced ? 1.0 / (double)reduced : 0.0);
    }
    out[0] = to_input(pt_expand(gk, ex->ndim, ex->shape), ex);
}

/* max: the gradient goes to the first maximum (pt_argmax), like PyTorch's
 * max(dim). */
static void backward_max(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt__grad_edge *ex = &node->edges[0];
    pt_tensor *x = ex->saved;
    int64_t keep[PT_MAX_DIMS];
    if (!pt__grad_keep_shape("pt_backward (max)", ex->ndim, ex->shape, node->args.dim, keep)) return;
    pt_tensor *hot;
    if (node->args.dim == PT_ALL) {
        int64_t n = pt__numel(ex->ndim, ex->shape);
        hot = pt_reshape(pt_one_hot(pt_argmax(x, PT_ALL, false), n, g->dtype), ex->ndim, ex->shape);
    } else {
        int d, nd = ex->ndim, perm[PT_MAX_DIMS];
        pt__resolve_dim("pt_backward (max)", node->args.dim, nd, &d);
        pt__grad_last_axis_to(nd, d, perm);
        hot = pt_permute(pt_one_hot(pt_argmax(x, d, false), ex->shape[d], g->dtype), perm);
    }
    out[0] = to_input(pt_mul(hot, pt_reshape(g, ex->ndim, keep)), ex);
}

static void backward_norm(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
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

/* The gradient of b [K, N] in a [..., M, K] x b, which every matrix of a's
 * stack shares: a^T g over all the stack's rows at once, [K, B M] x [B M, N],
 * one product instead of B [K, N] ones to sum. It is made in b's own layout:
 * a b that is a transposed view (a linear layer's weight^T) gets its
 * gradient as (g^T a)^T, so the transpose's backward hands the weight a
 * contiguous gradient instead of one to copy. */
static pt_tensor *matrix_grad(pt_tensor *a, pt_tensor *g, const pt__grad_edge *eb) {
    const int64_t k = eb->shape[0], n = eb->shape[1];
    pt_tensor *a2 = pt_reshape(a, 2, (const int64_t[]){-1, k});
    pt_tensor *g2 = pt_reshape(g, 2, (const int64_t[]){-1, n});
    pt_tensor *gb = eb->column_major ? pt_transpose(pt_matmul(pt_transpose(g2, 0, 1), a2), 0, 1)
                                 : pt_matmul(pt_transpose(a2, 0, 1), g2);
    return pt__grad_unbroadcast(gb, 2, eb->shape, eb->dtype);
}

/* NumPy matmul: 1-D operands are promoted ([K] -> [1, K] on the left,
 * [K, 1] on the right), batch dims broadcast. The gradients are
 * g b^T and a^T g in the promoted shapes, summed over broadcast batch dims,
 * then reshaped back (dropping the promoted 1). */
static void backward_matmul(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
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
    if (eb->needs_grad && eb->ndim == 2 && na >= 2) {
        out[1] = matrix_grad(ea->saved, g2, eb);
    } else if (eb->needs_grad) {
        pt_tensor *a = pt_reshape(ea->saved, na, a2);
        pt_tensor *gb = pt_matmul(pt_transpose(a, na - 2, na - 1), g2);
        out[1] = pt_reshape(pt__grad_unbroadcast(gb, nb, b2, eb->dtype), eb->ndim, eb->shape);
    }
}

static void backward_narrow(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt__grad_edge *ex = &node->edges[0];
    pt_tensor *z = pt_zeros(pt_tensor_device(g), ex->dtype, ex->ndim, ex->shape);
    pt_tensor *window = pt_narrow(z, node->args.dim, node->args.start, node->args.length);
    if (!window || pt_copy_(window, g)) return;
    out[0] = z;
}

static void backward_join(pt__grad_node *node, pt_tensor *g, pt_tensor **out, bool stack) {
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
static void backward_gather(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
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
    pt__grad_last_axis_to(nd, d, perm);
    out[0] = to_input(pt_permute(summed, perm), ex);
}

/* The weight's gradient: each row the sum of g's rows that looked it up, by
 * EMBEDDING_BACKWARD's deterministic scatter-add (core/ops/embedding.c);
 * the indices take none. */
static void backward_embedding(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt__grad_edge *ew = &node->edges[0];
    if (ew->needs_grad)
        out[0] = to_input(pt__embedding_backward("pt_backward (embedding)", g, node->edges[1].saved, ew->shape[0]),
                          ew);
}

/* ---- One backward function per op, or per group of ops sharing a rule ---- */

/* add, add_scalar, contiguous, expand: g itself, summed back to each input's
 * shape. */
static void backward_pass(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    for (int i = 0; i < node->n; ++i)
        if (node->edges[i].needs_grad) out[i] = to_input(g, &node->edges[i]);
}

static void backward_sub(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt__grad_edge *e = node->edges;
    if (e[0].needs_grad) out[0] = to_input(g, &e[0]);
    if (e[1].needs_grad) out[1] = to_input(pt_neg(g), &e[1]);
}

static void backward_mul(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt__grad_edge *e = node->edges;
    if (e[0].needs_grad) out[0] = to_input(pt_mul(g, e[1].saved), &e[0]);
    if (e[1].needs_grad) out[1] = to_input(pt_mul(g, e[0].saved), &e[1]);
}

static void backward_div(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt__grad_edge *e = node->edges;
    pt_tensor *g_over_b = pt_div(g, e[1].saved);
    if (e[0].needs_grad) out[0] = to_input(g_over_b, &e[0]);
    /* d(a/b)/db = -a/b^2 = -(a/b)/b */
    if (e[1].needs_grad) out[1] = to_input(pt_neg(pt_mul(g_over_b, node->saved_out)), &e[1]);
}

static void backward_maximum(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    backward_extremum(node, g, out, true);
}

static void backward_minimum(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    backward_extremum(node, g, out, false);
}

/* The element-wise unary ops and softmaxes: g times the local derivative,
 * from the saved input or output. */
static void backward_mul_scalar(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    out[0] = to_input(pt_mul_scalar(g, node->args.scalar), node->edges);
}

static void backward_neg(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    out[0] = to_input(pt_neg(g), node->edges);
}

static void backward_abs(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt_tensor *zero = zero_like(g), *x = node->edges[0].saved;
    pt_tensor *sign = pt_sub(mask_as(pt_gt(x, zero), g->dtype), mask_as(pt_lt(x, zero), g->dtype));
    out[0] = to_input(pt_mul(g, sign), node->edges);
}

static void backward_exp(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    out[0] = to_input(pt_mul(g, node->saved_out), node->edges);
}

static void backward_log(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    out[0] = to_input(pt_div(g, node->edges[0].saved), node->edges);
}

static void backward_sqrt(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    out[0] = to_input(pt_div(pt_mul_scalar(g, 0.5), node->saved_out), node->edges);
}

/* d/dx x^(-1/2) = -x^(-3/2) / 2 = -y^3 / 2 */
static void backward_rsqrt(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt_tensor *y = node->saved_out;
    out[0] = to_input(pt_mul(g, pt_mul_scalar(pt_mul(y, pt_mul(y, y)), -0.5)), node->edges);
}

static void backward_relu(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt_tensor *y = node->saved_out, *zero = zero_like(g);
    /* g where y > 0, else 0, as torch's threshold_backward: one pass over g
     * after the mask, where a cast mask and a multiply took two. */
    out[0] = to_input(pt_where(pt_gt(y, zero), g, zero), node->edges);
}

static void backward_sigmoid(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt_tensor *y = node->saved_out; /* dy/dx = y (1 - y) */
    out[0] = to_input(pt_mul(g, pt_mul(y, pt_add_scalar(pt_neg(y), 1.0))), node->edges);
}

static void backward_tanh(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt_tensor *y = node->saved_out; /* dy/dx = 1 - y^2 */
    out[0] = to_input(pt_sub(g, pt_mul(g, pt_mul(y, y))), node->edges);
}

static void backward_sin(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    out[0] = to_input(pt_mul(g, pt_cos(node->edges[0].saved)), node->edges); /* cos x */
}

static void backward_cos(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    out[0] = to_input(pt_mul(g, pt_neg(pt_sin(node->edges[0].saved))), node->edges); /* -sin x */
}

static void backward_gelu(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    out[0] = to_input(pt_mul(g, pt_gelu_grad(node->edges[0].saved)), node->edges); /* Phi + x phi */
}

/* im2col and col2im are each other's adjoints. */
static void backward_im2col(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    const pt__grad_edge *ex = &node->edges[0];
    pt_window2d w;
    pt__window_from_args(&node->args, node->out_shape[2], node->out_shape[3], &w);
    out[0] = pt_col2im(g, &w, ex->shape[2], ex->shape[3]);
}

static void backward_col2im(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    const pt__grad_edge *ec = &node->edges[0];
    pt_window2d w;
    pt__window_from_args(&node->args, ec->shape[2], ec->shape[3], &w);
    out[0] = pt_im2col(g, &w, 0.0);
}

/* max pooling: the gradient goes back through the saved indices of each
 * window's maximum (args: the window as im2col's, then the kernel). */
static void backward_max_pool2d(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    const pt__grad_edge *ex = &node->edges[0];
    pt_window2d w;
    pt__window_from_args(&node->args, node->args.ints[6], node->args.ints[7], &w);
    out[0] = pt__max_unpool2d_own_indices(g, node->edges[1].saved, &w, ex->shape[2], ex->shape[3]);
}

/* conv2d as the device's kinds: each input's gradient is one adjoint kind
 * (args: the window as im2col's, then groups). */
static void backward_conv2d(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt__grad_edge *ex = &node->edges[0], *ew = &node->edges[1];
    const int *a = node->args.ints;
    const pt_conv2d_opts o = {{a[0], a[1]}, {a[2], a[3]}, {a[4], a[5]}, a[6]};
    if (ex->needs_grad) out[0] = pt_conv2d_backward_data(g, ew->saved, &o, ex->shape[2], ex->shape[3]);
    if (ew->needs_grad) out[1] = pt_conv2d_backward_weight(ex->saved, g, &o, ew->shape[2], ew->shape[3]);
}

/* Rows (mean, biased var) of x viewed as [N, C, L], M = N * L values per
 * channel: d mean / dx = 1 / M, d var / dx = 2 (x - mean) / M (the mean's
 * own dependence on x cancels, the deviations summing to 0). So
 * dx = x a + b with a = 2 g_var / M and b = g_mean / M - a mean, both per
 * channel: one multiply and one add over x's size. With 16-bit tensors
 * this runs in f32 and rounds once (in to_input), as the forward pass
 * does, from a mean recomputed in f32: the saved one is rounded to 16
 * bits, and x - mean would carry that error into every element. */
static void backward_channel_stats(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt__grad_edge *ex = &node->edges[0];
    pt_tensor *x = ex->saved;
    const int64_t n = x->shape[0], c = x->shape[1], l = pt__numel(x->ndim - 2, x->shape + 2);
    const int64_t per_channel[3] = {1, c, 1};
    const double m = (double)(n * l);
    pt_tensor *x3 = pt_reshape(x, 3, (int64_t[]){n, c, l}), *mean;
    if (pt_dtype_is_half(x->dtype)) {
        x3 = pt_cast(x3, PT_F32);
        g = pt_cast(g, PT_F32);
        mean = pt_mean(pt_mean(x3, 2, true), 0, true);
    } else {
        mean = pt_reshape(pt_narrow(node->saved_out, 0, 0, 1), 3, per_channel);
    }
    pt_tensor *g_mean = pt_reshape(pt_narrow(g, 0, 0, 1), 3, per_channel);
    pt_tensor *g_var = pt_reshape(pt_narrow(g, 0, 1, 1), 3, per_channel);
    pt_tensor *a = pt_mul_scalar(g_var, 2.0 / m);
    pt_tensor *b = pt_sub(pt_mul_scalar(g_mean, 1.0 / m), pt_mul(a, mean));
    pt_tensor *dx = pt_add(pt_mul(x3, a), b);
    out[0] = to_input(pt_reshape(dx, ex->ndim, ex->shape), ex);
}

/* Recorded by the fused forward kind only (the composed path records its
 * own ops): inputs q, k, v, the mask and the log-sum-exp; args.scalar the
 * scale, args.dim the PT_ATTN_* flags. One backward kind recomputes the
 * probabilities in blocks (core/ops/attention.c). */
static void backward_attention(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt__grad_edge *e = node->edges;
    pt_tensor *d[3];
    if (pt__attention_backward("pt_backward (attention)", e[0].saved, e[1].saved, e[2].saved, e[3].saved,
                               e[4].saved, node->saved_out, g, node->args.scalar, (unsigned)node->args.dim, d))
        return;
    for (int i = 0; i < 3; ++i)
        if (e[i].needs_grad) out[i] = d[i];
}

/* 1 where lo <= x <= hi (bounds included, as torch.clamp), else 0. */
static void backward_clamp(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt_tensor *x = node->edges[0].saved;
    pt_device *d = pt_tensor_device(x);
    pt_tensor *lo = pt_full(d, x->dtype, 0, NULL, node->args.scalar);
    pt_tensor *hi = pt_full(d, x->dtype, 0, NULL, node->args.scalar2);
    pt_tensor *inside = pt_mul(pt_cast(pt_ge(x, lo), g->dtype), pt_cast(pt_le(x, hi), g->dtype));
    out[0] = to_input(pt_mul(g, inside), node->edges);
}

static void backward_softmax(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt_tensor *y = node->saved_out; /* y (g - sum(g y)) */
    out[0] = to_input(pt_mul(y, pt_sub(g, pt_sum(pt_mul(g, y), node->args.dim, true))), node->edges);
}

static void backward_log_softmax(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt_tensor *y = node->saved_out; /* g - exp(y) sum(g) */
    out[0] = to_input(pt_sub(g, pt_mul(pt_exp(y), pt_sum(g, node->args.dim, true))), node->edges);
}

/* pt_cross_entropy's loss -mean(log_softmax(z)[label]) as one node: its
 * inputs are the logits, the labels and the forward's log-probabilities
 * (saved, no gradient), args.scalar is 1/N. d loss/dz = (softmax(z) -
 * one_hot(label)) g / N: one element-wise chain, where the log_softmax,
 * gather and mean rules took seven ops. */
static void backward_cross_entropy(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt__grad_edge *ez = &node->edges[0];
    pt_tensor *labels = node->edges[1].saved, *logp = node->edges[2].saved;
    /* the scale and the one-hot first, so that exp, sub and mul follow
     * each other and fuse in a graph */
    pt_tensor *scale = pt_mul_scalar(g, node->args.scalar);
    pt_tensor *hot = pt_one_hot(labels, ez->shape[1], logp->dtype);
    out[0] = to_input(pt_mul(pt_sub(pt_exp(logp), hot), scale), ez);
}

static void backward_where(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    pt__grad_edge *e = node->edges;
    pt_tensor *zero = zero_like(g), *cond = e[0].saved;
    if (e[1].needs_grad) out[1] = to_input(pt_where(cond, g, zero), &e[1]);
    if (e[2].needs_grad) out[2] = to_input(pt_where(cond, zero, g), &e[2]);
}

static void backward_sum(pt__grad_node *node, pt_tensor *g, pt_tensor **out) { backward_reduce(node, g, out, false); }
static void backward_mean(pt__grad_node *node, pt_tensor *g, pt_tensor **out) { backward_reduce(node, g, out, true); }

static void backward_reshape(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    out[0] = pt_reshape(g, node->edges[0].ndim, node->edges[0].shape);
}

static void backward_transpose(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    out[0] = pt_transpose(g, node->args.dim, node->args.dim2);
}

static void backward_permute(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    const pt__grad_args *args = &node->args;
    int inverse[PT_MAX_DIMS], nd = node->out_ndim;
    for (int i = 0; i < nd; ++i) {
        int p = args->ints[i] < 0 ? args->ints[i] + nd : args->ints[i];
        if (p < 0 || p >= nd) {
            pt__error(PT_ERR_INTERNAL, "pt_backward (permute)", "recorded perm[%d] = %d is out of range", i,
                      args->ints[i]);
            return;
        }
        inverse[p] = i;
    }
    out[0] = pt_permute(g, inverse);
}

static void backward_cast(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    out[0] = pt_cast(g, node->edges[0].dtype);
}

static void backward_cat(pt__grad_node *node, pt_tensor *g, pt_tensor **out) { backward_join(node, g, out, false); }
static void backward_stack(pt__grad_node *node, pt_tensor *g, pt_tensor **out) { backward_join(node, g, out, true); }

/* ---- The table: one row per op of PT__GRAD_OPS ----
 * A rule reads only the forward values its op's SAVES column (tape.h)
 * names: the inputs, or the output, recording kept views of. */

static const pt__grad_rule rules[] = {
    [PT__G_ADD] = {"add", backward_pass},
    [PT__G_SUB] = {"sub", backward_sub},
    [PT__G_MUL] = {"mul", backward_mul},
    [PT__G_DIV] = {"div", backward_div},
    [PT__G_POW] = {"pow", backward_pow},
    [PT__G_MAXIMUM] = {"maximum", backward_maximum},
    [PT__G_MINIMUM] = {"minimum", backward_minimum},
    [PT__G_ADD_SCALAR] = {"add_scalar", backward_pass},
    [PT__G_MUL_SCALAR] = {"mul_scalar", backward_mul_scalar},
    [PT__G_NEG] = {"neg", backward_neg},
    [PT__G_ABS] = {"abs", backward_abs},
    [PT__G_EXP] = {"exp", backward_exp},
    [PT__G_LOG] = {"log", backward_log},
    [PT__G_SQRT] = {"sqrt", backward_sqrt},
    [PT__G_RSQRT] = {"rsqrt", backward_rsqrt},
    [PT__G_RELU] = {"relu", backward_relu},
    [PT__G_SIGMOID] = {"sigmoid", backward_sigmoid},
    [PT__G_TANH] = {"tanh", backward_tanh},
    [PT__G_WHERE] = {"where", backward_where},
    [PT__G_SUM] = {"sum", backward_sum},
    [PT__G_MEAN] = {"mean", backward_mean},
    [PT__G_MAX] = {"max", backward_max},
    [PT__G_NORM] = {"norm", backward_norm},
    [PT__G_SOFTMAX] = {"softmax", backward_softmax},
    [PT__G_LOG_SOFTMAX] = {"log_softmax", backward_log_softmax},
    [PT__G_MATMUL] = {"matmul", backward_matmul},
    [PT__G_RESHAPE] = {"reshape", backward_reshape},
    [PT__G_TRANSPOSE] = {"transpose", backward_transpose},
    [PT__G_PERMUTE] = {"permute", backward_permute},
    [PT__G_NARROW] = {"narrow", backward_narrow},
    [PT__G_EXPAND] = {"expand", backward_pass},
    [PT__G_CONTIGUOUS] = {"contiguous", backward_pass},
    [PT__G_CAST] = {"cast", backward_cast},
    /* pt_cast and pt_contiguous record the COPY kind as CAST or CONTIGUOUS;
     * a copy recorded as itself would be differentiated as the cast it is. */
    [PT__G_COPY] = {"copy", backward_cast},
    [PT__G_CAT] = {"cat", backward_cat},
    [PT__G_STACK] = {"stack", backward_stack},
    [PT__G_CROSS_ENTROPY] = {"cross_entropy", backward_cross_entropy},
    [PT__G_GATHER] = {"gather", backward_gather},
    [PT__G_SIN] = {"sin", backward_sin},
    [PT__G_COS] = {"cos", backward_cos},
    [PT__G_CLAMP] = {"clamp", backward_clamp},
    [PT__G_IM2COL] = {"im2col", backward_im2col},
    [PT__G_COL2IM] = {"col2im", backward_col2im},
    [PT__G_GELU] = {"gelu", backward_gelu},
    [PT__G_MAX_POOL2D] = {"max_pool2d", backward_max_pool2d},
    [PT__G_CONV2D] = {"conv2d", backward_conv2d},
    [PT__G_CHANNEL_STATS] = {"channel_stats", backward_channel_stats},
    [PT__G_ATTENTION] = {"attention", backward_attention},
    [PT__G_EMBEDDING] = {"embedding", backward_embedding},
};

/* An op added at the end of PT__GRAD_OPS without a row cannot build... */
_Static_assert(sizeof rules / sizeof rules[0] == PT__G_COUNT,
               "core/autograd/rules.c: every op of PT__GRAD_OPS (core/ops/tape.h) needs a row");

/* ... and one added in the middle leaves a zeroed row, found when the
 * library loads: then every backward fails, so the first autograd test
 * says so rather than only a test of that op. */
static int first_empty_row = -1;

__attribute__((constructor)) static void check_rows(void) {
    for (int op = PT__G_COUNT - 1; op >= 0; --op)
        if (!rules[op].name || !rules[op].backward) first_empty_row = op;
}

const pt__grad_rule *pt__grad_rule_of(pt__grad_op op) {
    if (first_empty_row >= 0) {
        pt__error(PT_ERR_INTERNAL, "autograd", "op %d of PT__GRAD_OPS has no row in core/autograd/rules.c",
                  first_empty_row);
        return NULL;
    }
    if ((unsigned)op >= PT__G_COUNT) {
        pt__error(PT_ERR_INTERNAL, "autograd", "recorded op %d is not one of PT__GRAD_OPS", (int)op);
        return NULL;
    }
    return &rules[op];
}

pt_status pt__grad_node_backward(pt__grad_node *node, pt_tensor *g, pt_tensor **out) {
    for (int i = 0; i < node->n; ++i) out[i] = NULL;
    if (!g) return pt__error(PT_ERR_INTERNAL, "pt_backward", "node reached without a gradient");
    const pt__grad_rule *rule = pt__grad_rule_of(node->op);
    if (!rule) return pt_last_status();
    rule->backward(node, g, out);
    /* A failing op returned NULL with the error set, and NULL flows through
     * every later op of the rule, so a missing result is the whole check. */
    for (int i = 0; i < node->n; ++i) {
        if (!node->edges[i].needs_grad || out[i]) continue;
        pt_status s = pt_last_status();
        if (s == PT_OK)
            s = pt__error(PT_ERR_INTERNAL, "pt_backward", "derivative of %s gave no gradient for input %d",
                          rule->name, i);
        for (int j = 0; j < node->n; ++j) out[j] = NULL; /* the engine's scope releases them */
        return s;
    }
    return PT_OK;
}
