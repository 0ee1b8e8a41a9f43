/* libportable core, ops layer: what the op files share. Includes the tensor
 * layer and the tape interface; nothing above. Nothing here is exported.
 *
 * Conventions of the op files:
 *   - a public op validates everything, builds a pt_op and calls pt__execute;
 *   - the pt__*_raw functions do the same work for other op files but return
 *     a reference that is in no scope and has no autograd record, so
 *     composite ops (pt_norm, casts before a binary op, copies before a GEMM)
 *     neither leave temporaries on the tape nor pay for scope bookkeeping;
 *   - only the public function records autograd and returns through pt__ret. */
#ifndef PORTABLE_CORE_OPS_INTERNAL_H
#define PORTABLE_CORE_OPS_INTERNAL_H

#include "ops/tape.h"
#include "portable/ops.h"
#include "tensor/tensor_internal.h"

/* Element-wise ops: kind ADD..GT (binary), NEG..TANH (unary). elementwise.c */
pt_tensor *pt__binary_raw(const char *fn, pt_op_kind kind, pt_tensor *a, pt_tensor *b);
pt_tensor *pt__unary_raw(const char *fn, pt_op_kind kind, pt_tensor *x);
/* out = kind(in[0..n-1]) (scalar for the *_SCALAR kinds) written into out
 * without a new tensor or autograd: every input has out's device, dtype and
 * shape, and is out itself or shares no memory with it. For the core's own
 * state kept across steps (an optimizer's moments). inplace.c */
pt_status pt__elementwise_into(const char *fn, pt_op_kind kind, pt_tensor *out, int n, pt_tensor *const *in,
                               double scalar);
/* Describes x as a 3-D operand [outer, r, inner] around dim d (PT_ALL: [1,
 * numel, 1]), using x's own strides where the dims before and after d merge,
 * else a contiguous copy returned in *copy (NULL when none was needed; the
 * caller releases it after executing). x must not be empty. reduce.c */
pt_status pt__layout3(const char *fn, pt_tensor *x, int d, pt_operand *o, pt_tensor **copy);

/* "dim PT_ALL" is only meaningful to reductions: elsewhere this names the
 * function and the valid range. Otherwise pt__resolve_dim. shape.c */
pt_status pt__resolve_dim_only(const char *fn, int dim, int ndim, int *out);

/* PT_OK when the op table says kind takes dtype t, else PT_ERR_DTYPE
 * "fn: dtype <t> not supported; cast to <fix> with pt_cast()", the fix being
 * f32 for float-only kinds and i32 otherwise. */
pt_status pt__check_op_dtype(const char *fn, pt_op_kind kind, pt_dtype t);

/* Sliding windows (window.c). pt__window_out_size validates w (kernel,
 * stride, dilation >= 1, padding >= 0, each small enough for the tape) and
 * gives the output extents of an h x wd image, or an error naming fn and the
 * values. pt__window_op fills op's window[] and kernel[]; pt__window_args
 * puts stride, padding and dilation (h then w) in a->ints[0..5]. */
pt_status pt__window_out_size(const char *fn, const pt_window2d *w, int64_t h, int64_t wd, int64_t *oh,
                              int64_t *ow);
void pt__window_op(pt_op *op, pt_op_kind kind, pt_dtype t, const pt_window2d *w);
void pt__window_args(const pt_window2d *w, pt__grad_args *a);
/* True when x's device runs the three max pool kinds in x's dtype (natively
 * or through f32); else pooling composes im2col and max. max_pool.c */
bool pt__max_pool2d_kinds_run_on(pt_tensor *x);
/* pt_max_unpool2d for indices this library's max pooling made (the
 * backward pass's saved ones): every value is a tap of its window already,
 * so the host-side pass that checks a caller's indices (a synchronize and a
 * read of every index on host-visible devices) is skipped. Shapes and
 * dtypes are still checked. max_pool.c */
pt_tensor *pt__max_unpool2d_own_indices(pt_tensor *g, pt_tensor *indices, const pt_window2d *w, int64_t height,
                                        int64_t width);

/* Convolution checks (conv.c): x [N, C, H, W] and weight [CO, C/groups, KH,
 * KW] of one float dtype, channels divisible by groups; the window and groups
 * of opts (NULL: stride 1, no padding). The _shapes form checks shapes and
 * dtypes only; pt__conv_check also devices, ranks and the bias. */
pt_status pt__conv_check_shapes(const char *fn, const int64_t xs[4], const int64_t ws[4], pt_dtype tx, pt_dtype tw,
                                const pt_conv2d_opts *opts, pt_window2d *w, int64_t *groups);
pt_status pt__conv_check(const char *fn, pt_tensor *x, pt_tensor *weight, pt_tensor *bias, const pt_conv2d_opts *opts,
                         pt_window2d *w, int64_t *groups);
/* True when x's device takes this convolution as its CONV kinds (the
 * forward pass, and both adjoints when grad): asked per call with the real
 * shapes, since a backend may refuse some. conv_kinds.c */
bool pt__conv_kinds_run(pt_tensor *x, pt_tensor *weight, const pt_window2d *w, int64_t groups, bool grad);

/* The CHANNEL_STATS kind on x [N, C, ...] into *out, a fresh [2, C] of
 * each channel's mean and biased variance, recorded for autograd.
 * PT_ERR_UNSUPPORTED with no error set when x's device refuses the kind
 * (the caller composes the statistics); any other failure names fn.
 * channel_stats.c */
pt_status pt__channel_stats_fused(const char *fn, pt_tensor *x, pt_tensor **out);

/* The ATTENTION_BACKWARD kind: the gradients of q, k and v (grads[0..2],
 * their shapes, registered in the caller's scope) of an attention whose
 * forward kind ran on q, k, v (f32/f64) with mask (u8, or additive in q's
 * dtype; NULL for none), flags (PT_ATTN_*) and scale, giving o and the
 * log-sum-exp lse; g is o's gradient. Only for a device that ran the
 * forward kind. attention.c */
pt_status pt__attention_backward(const char *fn, pt_tensor *q, pt_tensor *k, pt_tensor *v, pt_tensor *mask,
                                 pt_tensor *lse, pt_tensor *o, pt_tensor *g, double scale, unsigned flags,
                                 pt_tensor *grads[3]);

/* Sends op, a kind the caller can also compose, to d: PT_ERR_UNSUPPORTED
 * with no error set when the device refuses it (the caller composes), any
 * other failure with its error. Without a capture the kind is sent without
 * asking, so the conformance suite's coverage sees it reach every backend.
 * run_kind.c */
pt_status pt__run_kind(const char *fn, pt_device *d, pt_op *op);

/* Checks every element of idx (i32/i64, any strides) against [0, limit)
 * after waiting for idx's device: "fn: <what> value v at position [..] is
 * out of range for <range_what> (valid: 0..limit-1)". index.c */
pt_status pt__check_index_values(const char *fn, const char *what, const pt_tensor *idx, int64_t limit,
                                 const char *range_what);
/* Describes idx (not empty) as a 1-D operand of its numel elements: its
 * own single stride when its dims merge, else a contiguous copy returned in
 * *copy (NULL when none was needed; the caller releases it after
 * executing). index.c */
pt_status pt__index_run(const char *fn, pt_tensor *idx, pt_operand *o, pt_tensor **copy);

/* The embedding lookup (pt_f_embedding): out[..., :] = weight[indices[...],
 * :], validated, through the EMBEDDING kind where the device runs it (then
 * recorded with the EMBEDDING rule), else composed from pt_gather. Errors
 * name fn. embedding.c */
pt_tensor *pt__embedding(const char *fn, pt_tensor *indices, pt_tensor *weight);
/* The weight gradient [rows, D] of an embedding lookup with these indices
 * whose output's gradient is g (indices' shape + [D]): EMBEDDING_BACKWARD's
 * deterministic scatter-add, or where the device refuses it the one-hot
 * product. Registered in the caller's scope. embedding.c */
pt_tensor *pt__embedding_backward(const char *fn, pt_tensor *g, pt_tensor *indices, int64_t rows);

/* Records out = g(inputs, args) on the tape when out exists and an input
 * needs a gradient; returns out. The one way a public op records itself. */
static inline pt_tensor *pt__record(pt_tensor *out, pt__grad_op g, int n, pt_tensor *const *in,
                                    const pt__grad_args *args) {
    if (out && pt__grad_wanted(n, in)) pt__grad_record(out, g, n, in, args);
    return out;
}

/* out when s is PT_OK, else releases out and returns NULL: the last step of
 * an op that ran into a fresh result. */
static inline pt_tensor *pt__result_or_release(pt_status s, pt_tensor *out) {
    if (s == PT_OK) return out;
    pt_release(out);
    return NULL;
}

#endif
