/** @file
 * libportable — tensor operations.
 *
 * All operands must live on one device; the result lives there too.
 * Operands on different devices give PT_ERR_DEVICE_MISMATCH naming both
 * devices. Binary ops broadcast like NumPy. Mixed dtypes are promoted
 * (u8 < i32 < i64 < f32 < f64). Every op returns a new reference (or NULL +
 * error; NULL inputs give NULL and keep the first error) and is queued on the
 * device without waiting. */
#ifndef PORTABLE_OPS_H
#define PORTABLE_OPS_H

#include <limits.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Reduce over every element (for pt_sum, pt_mean, pt_max, pt_argmax). */
#define PT_ALL INT_MIN

/** @name Element-wise, broadcasting
 * Binary ops broadcast a and b like NumPy and promote mixed dtypes; the
 * result is a new tensor on the operands' device (the caller owns it), queued
 * without waiting. PT_ERR_SHAPE when the shapes cannot broadcast,
 * PT_ERR_DEVICE_MISMATCH for operands on two devices, PT_ERR_DTYPE for a
 * dtype the op does not take. */
/** @{ */
/** a + b. */
PT_API pt_tensor *pt_add(pt_tensor *a, pt_tensor *b);
/** a - b. */
PT_API pt_tensor *pt_sub(pt_tensor *a, pt_tensor *b);
/** a * b, element by element (pt_matmul for the matrix product). */
PT_API pt_tensor *pt_mul(pt_tensor *a, pt_tensor *b);
/** a / b; integer dtypes truncate, x / 0 is 0 and INT_MIN / -1 is INT_MIN
 * (never a trap). */
PT_API pt_tensor *pt_div(pt_tensor *a, pt_tensor *b);
/** a to the power b; float dtypes only. */
PT_API pt_tensor *pt_pow(pt_tensor *a, pt_tensor *b);
/** The larger of a and b, element by element (NaN propagates). */
PT_API pt_tensor *pt_maximum(pt_tensor *a, pt_tensor *b);
/** The smaller of a and b, element by element (NaN propagates). */
PT_API pt_tensor *pt_minimum(pt_tensor *a, pt_tensor *b);
/** x + s (s must be finite and in range for an integer x). */
PT_API pt_tensor *pt_add_scalar(pt_tensor *x, double s);
/** x * s (s must be finite and in range for an integer x). */
PT_API pt_tensor *pt_mul_scalar(pt_tensor *x, double s);

/** -x. */
PT_API pt_tensor *pt_neg(pt_tensor *x);
/** |x|. */
PT_API pt_tensor *pt_abs(pt_tensor *x);
/** e^x. This and the transcendental ops below take float dtypes only: cast
 * integers first (PT_ERR_DTYPE otherwise). */
PT_API pt_tensor *pt_exp(pt_tensor *x);
/** Natural logarithm (log of a negative number is NaN, of 0 -inf). */
PT_API pt_tensor *pt_log(pt_tensor *x);
/** Square root (NaN for negative x). */
PT_API pt_tensor *pt_sqrt(pt_tensor *x);
/** 1 / sqrt(x), element-wise (layer norm's scale): +inf at +0, -inf at -0,
 * NaN for negative x. Float dtypes only: an integer x fails with
 * PT_ERR_DTYPE. Within 2 ULP in f32 (OpenCL's and CUDA's rsqrt). */
PT_API pt_tensor *pt_rsqrt(pt_tensor *x);
/** max(x, 0) (NaN propagates). */
PT_API pt_tensor *pt_relu(pt_tensor *x);
/** 1 / (1 + e^-x). */
PT_API pt_tensor *pt_sigmoid(pt_tensor *x);
/** Hyperbolic tangent. */
PT_API pt_tensor *pt_tanh(pt_tensor *x);
/** Sine (x in radians). */
PT_API pt_tensor *pt_sin(pt_tensor *x);
/** Cosine (x in radians). */
PT_API pt_tensor *pt_cos(pt_tensor *x);
/** min(max(x, lo), hi) element-wise, like torch.clamp; NaN stays NaN. Not
 * u8. lo > hi gives hi everywhere (as torch does). Integer tensors: lo is
 * rounded up and hi down to integers and both saturate to the dtype's range
 * (so +-INFINITY means "no bound"). NaN bounds: PT_ERR_INVALID_ARGUMENT.
 * The gradient is 1 where lo <= x <= hi, else 0. */
PT_API pt_tensor *pt_clamp(pt_tensor *x, double lo, double hi);

/** a == b as a PT_U8 tensor of 0/1 (so are the comparisons below). */
PT_API pt_tensor *pt_eq(pt_tensor *a, pt_tensor *b);
/** a < b as PT_U8 0/1. */
PT_API pt_tensor *pt_lt(pt_tensor *a, pt_tensor *b);
/** a > b as PT_U8 0/1. */
PT_API pt_tensor *pt_gt(pt_tensor *a, pt_tensor *b);
/** a <= b as PT_U8 0/1. */
PT_API pt_tensor *pt_le(pt_tensor *a, pt_tensor *b);
/** a >= b as PT_U8 0/1. */
PT_API pt_tensor *pt_ge(pt_tensor *a, pt_tensor *b);
/** a != b as PT_U8 0/1; NaN != NaN is 1. */
PT_API pt_tensor *pt_ne(pt_tensor *a, pt_tensor *b);
/** cond (PT_U8, non-zero = true) ? a : b, all three broadcast. */
PT_API pt_tensor *pt_where(pt_tensor *cond, pt_tensor *a, pt_tensor *b);

/** @} */
/** @name Reductions
 * dim may be negative (counted from the end) or PT_ALL (every element, a 0-D
 * result); keepdim keeps the reduced dims with extent 1. A dim outside x's
 * dims is PT_ERR_INVALID_ARGUMENT naming it. New tensor, queued without
 * waiting. */
/** @{ */
/** Sum over dim; u8 sums are accumulated as i64 (like PyTorch); over an
 * empty extent 0. */
PT_API pt_tensor *pt_sum(pt_tensor *x, int dim, bool keepdim);
/** Mean over dim; float dtypes only; over an empty extent NaN. */
PT_API pt_tensor *pt_mean(pt_tensor *x, int dim, bool keepdim);
/** Maximum over dim (NaN propagates); an empty extent is PT_ERR_SHAPE. */
PT_API pt_tensor *pt_max(pt_tensor *x, int dim, bool keepdim);
/** Index (PT_I64) of the first maximum over dim (the first NaN if any); an
 * empty extent is PT_ERR_SHAPE. */
PT_API pt_tensor *pt_argmax(pt_tensor *x, int dim, bool keepdim);
/** Frobenius norm over all elements, a 0-D tensor (float dtypes). */
PT_API pt_tensor *pt_norm(pt_tensor *x);
/** 2-norm over the n listed dims (removed from the result). */
PT_API pt_tensor *pt_norm_dims(pt_tensor *x, int n, const int *dims);
/** Per-channel statistics of x [N, C, ...] (float dtypes): a [2, C] tensor
 * whose row 0 is each channel's mean over its N * (product of the dims
 * after C) values and row 1 their biased variance (divided by that count),
 * the two numbers batch normalisation trains with. One pass on devices that
 * have it (the cpu), composed from reductions elsewhere; differentiable.
 * Fewer than 2 dims, no channel or no value per channel is PT_ERR_SHAPE. */
PT_API pt_tensor *pt_channel_stats(pt_tensor *x);
/** e^x / sum(e^x) along dim, computed stably (max subtracted); float dtypes. */
PT_API pt_tensor *pt_softmax(pt_tensor *x, int dim);
/** log(softmax(x)) along dim without forming softmax; float dtypes. */
PT_API pt_tensor *pt_log_softmax(pt_tensor *x, int dim);

/** @} */
/** @name Attention */
/** @{ */
/** Scaled dot-product attention, softmax(q k^T scale + mask) v, as
 * torch.nn.functional.scaled_dot_product_attention computes it, over
 * q [..., Tq, D], k [..., Tk, D], v [..., Tk, Dv] with the same leading
 * dims (2 to 4 dims: [T, D], [N, T, D] or [B, H, T, D]); the result is
 * [..., Tq, Dv], new and contiguous, queued without waiting.
 * - mask (NULL for none) broadcasts to [..., Tq, Tk]: PT_U8 keeps key j for
 *   query i where nonzero (torch's bool mask), a float mask is added to
 *   the scaled scores (-inf removes a key). It gets no gradient: one that
 *   requires grad is PT_ERR_UNSUPPORTED.
 * - causal: query i sees keys j <= i only (torch's is_causal: the mask
 *   pt_tril(ones(Tq, Tk)), aligned top-left); combines with mask.
 * - scale: the factor on q k^T; 0 means 1 / sqrt(D), torch's default.
 * A query row with no key left gives 0 (torch gives NaN there) and no
 * gradient. Float dtypes (f16/bf16 computed in f32, rounded once);
 * differentiable in q, k and v. Where the device has the ATTENTION kind
 * (the cpu) it runs fused, flash-attention style: memory grows with T, the
 * [Tq, Tk] scores are never stored, and the backward pass recomputes them
 * in blocks from one saved log-sum-exp per row. Elsewhere (opencl, cuda
 * for now) it is composed from matmul, softmax and where, which stores
 * [..., Tq, Tk] (docs/nets.md). Errors: PT_ERR_SHAPE naming the shapes
 * that disagree, PT_ERR_DTYPE (integer or mixed dtypes; a mask neither u8
 * nor float), PT_ERR_DEVICE_MISMATCH, PT_ERR_INVALID_ARGUMENT for a scale
 * that is NaN or infinite. */
PT_API pt_tensor *pt_scaled_dot_product_attention(pt_tensor *q, pt_tensor *k, pt_tensor *v, pt_tensor *mask,
                                                  bool causal, double scale);
/** x (2 or more dims) with the elements above diagonal `diagonal` of its
 * last two dims set to 0, as torch.tril: element [i, j] stays where
 * j - i <= diagonal. Any dtype; differentiable (the gradient is masked the
 * same way). pt_tril(pt_ones(d, PT_U8, 2, (int64_t[]){tq, tk}), 0) is the
 * causal mask pt_scaled_dot_product_attention's causal flag applies. */
PT_API pt_tensor *pt_tril(pt_tensor *x, int64_t diagonal);

/** @} */
/** @name Linear algebra */
/** @{ */
/** 1-D and 2-D like NumPy's matmul; N-D: batched over the leading dims, which
 * broadcast. Float dtypes (f32, f64, and f16/bf16 through f32), both operands
 * the same one: mixed dtypes, f16 with bf16 included, are PT_ERR_DTYPE as in
 * torch.matmul (the promotion rule in types.h is the element-wise ops'). New
 * tensor, queued without waiting; PT_ERR_SHAPE when the inner dims differ. */
PT_API pt_tensor *pt_matmul(pt_tensor *a, pt_tensor *b);

/** @} */
/** @name Shape
 * Views share storage with x (writing one writes the other) and keep it
 * alive; each is a new reference the caller owns. Dims outside x are
 * PT_ERR_INVALID_ARGUMENT, shapes that do not fit PT_ERR_SHAPE. */
/** @{ */
/** A view when x is contiguous or when its strides allow one (as torch's
 * reshape: the new dims only split or merge x's dims where their elements
 * are evenly spaced, e.g. a transposed matrix reshaped to its own shape or
 * a [B, T, C] slice of a permuted tensor merged to [B T, C] along its
 * contiguous runs), else a contiguous copy. One entry may be -1 (inferred). */
PT_API pt_tensor *pt_reshape(pt_tensor *x, int ndim, const int64_t *shape);
/** View with dims d0 and d1 swapped (negative dims count from the end). */
PT_API pt_tensor *pt_transpose(pt_tensor *x, int d0, int d1);
/** View with the dims reordered: result dim i is x's dim perm[i] (ndim entries,
 * each dim once). */
PT_API pt_tensor *pt_permute(pt_tensor *x, const int *perm);
/** View of length elements of dim from start (torch.narrow). */
PT_API pt_tensor *pt_narrow(pt_tensor *x, int dim, int64_t start, int64_t length);
/** Broadcast view to shape (stride 0 on expanded dims), like torch.expand. */
PT_API pt_tensor *pt_expand(pt_tensor *x, int ndim, const int64_t *shape);
/** x itself (retained) when already contiguous, else a contiguous copy. */
PT_API pt_tensor *pt_contiguous(pt_tensor *x);
/** x converted to dtype t (always a new tensor). Float to integer saturates and
 * NaN becomes 0. */
PT_API pt_tensor *pt_cast(pt_tensor *x, pt_dtype t);
/** Joins n tensors along an existing dim. Same dtype and device; other dims
 * equal. */
PT_API pt_tensor *pt_cat(int n, pt_tensor *const *xs, int dim);
/** Joins n tensors of one shape along a new dim inserted at dim. Same dtype
 * and device. */
PT_API pt_tensor *pt_stack(int n, pt_tensor *const *xs, int dim);
/** torch.gather: out[i][j][k] = x[i][index[i][j][k]][k] for dim 1, etc.
 * index is i32/i64 with x's shape except along dim. An index outside
 * [0, size) is PT_ERR_INVALID_ARGUMENT where the index is host-visible (cpu);
 * accelerators cannot check without waiting and write 0 there instead. */
PT_API pt_tensor *pt_gather(pt_tensor *x, int dim, pt_tensor *index);
/** labels (i32/i64, any shape) -> shape + [num_classes] of dtype t with a 1 at
 * each label; out-of-range labels give a row of zeros (and an error on cpu). */
PT_API pt_tensor *pt_one_hot(pt_tensor *labels, int64_t num_classes, pt_dtype t);

/** @} */
/** @name Convolutional nets (NCHW images; f32/f64)
 * The pt_f_ functions are torch.nn.functional's: the plain names (pt_conv2d,
 * pt_max_pool2d, ...) are the layers of nn.h that call them. */
/** @{ */
/** A 2-D sliding window: kernel KH x KW, stride, zero/fill padding on both
 * sides, dilation (the gap between kernel taps), each {h, w}. */
typedef struct pt_window2d {
    int64_t kernel[2];   /**< >= 1 */
    int64_t stride[2];   /**< >= 1 */
    int64_t padding[2];  /**< >= 0 */
    int64_t dilation[2]; /**< >= 1 */
} pt_window2d;
/** x [N, C, H, W] -> [N, C, KH, KW, OH, OW] with OH = (H + 2 pad - dil (KH - 1)
 * - 1) / stride + 1: every window's elements (torch.nn.functional.unfold
 * before its reshape); pad_value where a tap falls in the padding (not NaN).
 * PT_ERR_SHAPE when the window does not fit the padded image. */
PT_API pt_tensor *pt_im2col(pt_tensor *x, const pt_window2d *w, double pad_value);
/** The adjoint of pt_im2col: col [N, C, KH, KW, OH, OW] summed back into an
 * [N, C, height, width] image (torch's fold). col's shape must be what
 * pt_im2col gives for that image. */
PT_API pt_tensor *pt_col2im(pt_tensor *col, const pt_window2d *w, int64_t height, int64_t width);
/** Max pooling over windows w (torch's max_pool2d with dilation; f32/f64,
 * 16-bit through f32): x [N, C, H, W] -> [N, C, OH, OW], OH as pt_im2col's.
 * Taps in the padding never win (a window of padding only gives -inf); NaN
 * wins. Differentiable: the gradient goes to the first maximum of each
 * window (the first NaN where there is one), summed where windows overlap. */
PT_API pt_tensor *pt_max_pool2d_window(pt_tensor *x, const pt_window2d *w);
/** The i64 index h * W + w within its image plane of each window's maximum
 * (the element pt_max_pool2d_window took; -1 for a window of padding only),
 * [N, C, OH, OW]: torch's max_pool2d(return_indices=True). Not recorded. */
PT_API pt_tensor *pt_max_pool2d_indices(pt_tensor *x, const pt_window2d *w);
/** The adjoint of max pooling: g [N, C, OH, OW] routed through indices (from
 * pt_max_pool2d_indices with the same w) into an [N, C, height, width]
 * image; an element takes the sum of g over the windows of w that contain
 * it and chose it (0 where none does). Not recorded (no gradient). */
PT_API pt_tensor *pt_max_unpool2d(pt_tensor *g, pt_tensor *indices, const pt_window2d *w, int64_t height,
                                  int64_t width);

/** torch.nn.functional.conv2d options; 0 in stride, dilation or groups means 1.
 * Options structs only ever grow at their end, and 0 in a new member keeps
 * the old behaviour, so callers that zero-initialise keep compiling and
 * meaning the same. */
typedef struct pt_conv2d_opts {
    int64_t stride[2]; /**< step between windows {h, w}; 0 means 1 */
    int64_t padding[2]; /**< zeros added on both sides {h, w} */
    int64_t dilation[2]; /**< gap between kernel taps {h, w}; 0 means 1 */
    int64_t groups; /**< input and output channels split into this many groups; 0 means 1 */
} pt_conv2d_opts;
/** x [N, C, H, W], weight [CO, C / groups, KH, KW], bias [CO] or NULL ->
 * [N, CO, OH, OW]. opts NULL: stride 1, padding 0, dilation 1, groups 1.
 * Runs as the device's own convolution kinds where it has them and takes
 * the shape (the cpu backend's oneDNN; PORTABLE_CPU_CONV=im2col|onednn
 * forces either path there), else lowered to pt_im2col and one batched GEMM
 * (OpenBLAS, CLBlast, cuBLAS); differentiable in x, weight and bias. */
PT_API pt_tensor *pt_f_conv2d(pt_tensor *x, pt_tensor *weight, pt_tensor *bias, const pt_conv2d_opts *opts);
/** The device's own convolution (backend.h CONV kinds), with no fallback:
 * PT_ERR_UNSUPPORTED naming the reason where the device has no convolution
 * library or refuses the shape (pt_f_conv2d then composes it). Operands as
 * pt_f_conv2d's, without the bias. Differentiable in x and weight, once (its
 * gradients, pt_conv2d_backward_data and _weight, are not recorded). */
PT_API pt_tensor *pt_conv2d_direct(pt_tensor *x, pt_tensor *weight, const pt_conv2d_opts *opts);
/** The gradient of a convolution's input [N, C, height, width] from g [N, CO,
 * OH, OW], the gradient of its output, and its weight (the CONV2D_BWD_DATA
 * kind; PT_ERR_UNSUPPORTED as pt_conv2d_direct). PT_ERR_SHAPE when g is not
 * that convolution's output shape. */
PT_API pt_tensor *pt_conv2d_backward_data(pt_tensor *g, pt_tensor *weight, const pt_conv2d_opts *opts, int64_t height,
                                          int64_t width);
/** The gradient of a convolution's weight [CO, C/groups, kernel_h, kernel_w]
 * from its input x and g, the gradient of its output (the CONV2D_BWD_WEIGHT
 * kind; PT_ERR_UNSUPPORTED as pt_conv2d_direct). PT_ERR_SHAPE when g is not
 * that convolution's output shape. */
PT_API pt_tensor *pt_conv2d_backward_weight(pt_tensor *x, pt_tensor *g, const pt_conv2d_opts *opts, int64_t kernel_h,
                                            int64_t kernel_w);
/** Pooling options: kernel >= 1; stride 0 means the kernel (torch's default);
 * padding at most half the kernel (as torch requires). */
typedef struct pt_pool2d_opts {
    int64_t kernel[2]; /**< window {h, w}, >= 1 */
    int64_t stride[2]; /**< step {h, w}; 0 means the kernel */
    int64_t padding[2]; /**< added on both sides {h, w}, at most half the kernel */
} pt_pool2d_opts;
/** x [N, C, H, W] -> [N, C, OH, OW]: the maximum of each window (padding never
 * wins); the gradient goes to the first maximum of each window. */
PT_API pt_tensor *pt_f_max_pool2d(pt_tensor *x, const pt_pool2d_opts *opts);
/** The mean of each window, padding counted as zeros (torch's default
 * count_include_pad=True). */
PT_API pt_tensor *pt_f_avg_pool2d(pt_tensor *x, const pt_pool2d_opts *opts);
/** x [N, C, H, W] -> [N, C, out_h, out_w] averaging equal blocks; H and W must
 * be multiples of out_h and out_w (1x1, the global average, always is). */
PT_API pt_tensor *pt_adaptive_avg_pool2d(pt_tensor *x, int64_t out_h, int64_t out_w);
/** x Phi(x), Phi the standard normal CDF (the erf form, torch's default). */
PT_API pt_tensor *pt_gelu(pt_tensor *x);
/** Its derivative Phi(x) + x phi(x), element-wise (what pt_gelu's gradient
 * multiplies by); not itself differentiable. */
PT_API pt_tensor *pt_gelu_grad(pt_tensor *x);
/** Dims start_dim..end_dim (negative: from the end) merged into one, like
 * torch.flatten; a view when x is contiguous. */
PT_API pt_tensor *pt_f_flatten(pt_tensor *x, int start_dim, int end_dim);

/** @} */
/** @name In place
 * These write into an existing tensor and return a status: PT_OK, or the
 * error (the tensor is then unchanged). They are queued like any op; read the
 * result back with pt_to_host or pt_item, which wait. */
/** @{ */
/** dst[...] = src, broadcasting src to dst's shape and casting its dtype.
 * src may live on another device (copied over first). */
PT_API pt_status pt_copy_(pt_tensor *dst, pt_tensor *src);
/** y += alpha * x (same shape, dtype and device). For optimizers. */
PT_API pt_status pt_axpy_(pt_tensor *y, double alpha, pt_tensor *x);
/** Sets every element of x to value. */
PT_API pt_status pt_fill_(pt_tensor *x, double value);

/** @} */
#ifdef __cplusplus
}
#endif
#endif
