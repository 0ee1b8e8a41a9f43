/** @file
 * libportable — the plugin ABI.
 *
 * The only header a backend plugin includes. A plugin is a shared object
 * named `libportable-<name>.so` exporting one symbol:
 *
 *   const pt_backend_vtable *pt_backend_entry(const pt_host_api *host, uint32_t host_abi);
 *
 * The loader checks the returned table's abi_version and struct_size before
 * calling anything else. Members are only ever appended; a member marked
 * "(optional)" may be NULL and the core supplies the default it names.
 *
 * Devices are numbered 0..device_count()-1 inside a plugin; buffers are
 * opaque handles (a host pointer, a CUdeviceptr, a cl_mem) addressed with
 * byte offsets, never with pointer arithmetic. Every member returns PT_OK or
 * a status after calling host->set_error() with the driver's reason; none
 * prints to stdout, exits or aborts.
 *
 * The core validates every call completely before a plugin sees it: dtypes,
 * shapes and strides in a pt_op are consistent, every extent is >= 1 (empty
 * work is never sent), and buffers belong to the device named. */
#ifndef PORTABLE_BACKEND_H
#define PORTABLE_BACKEND_H

#include <stdarg.h>

#include "env.h"
#include "log.h"
#include "op_table.h"
#include "status.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI version of this header: a plugin returns it in
 * pt_backend_vtable.abi_version, the core passes it as host_abi, and a
 * mismatch keeps the plugin out (reported by `portable devices`). */
#define PT_BACKEND_ABI_VERSION 2u /* 2: pt_device_props grew; device_info writes all of it */
/** The one symbol a plugin exports, a pt_backend_entry_fn. */
#define PT_BACKEND_ENTRY_SYMBOL "pt_backend_entry"

/** @name Operation descriptors */
/** @{ */

/* The kinds, their names, arities and dtypes are rows of op_table.h. What
 * each family's operands look like:
 *
 * CREATION (FILL, ARANGE, RAND_*): no inputs; out any strides (RAND_*:
 *   contiguous), its dimensions merged as for ELEMENTWISE below. FILL: out[i] = scalar. ARANGE: out 1-D contiguous, out[i] =
 *   scalar + i * scalar2. RAND_UNIFORM/RAND_NORMAL: out contiguous,
 *   pt_philox_uniform_*(seed, counter, i) / pt_philox_normal_*(...).
 *
 * ELEMENTWISE: every input has out's ndim and shape (broadcast dims have
 *   stride 0); out may be strided but never overlaps itself. Dimensions
 *   arrive merged: the core drops extent-1 dims and fuses neighbours that are
 *   contiguous for every operand (pt__coalesce), so a contiguous op of any
 *   shape is one 1-D run and ndim >= 1. Backends need no merging of their own.
 *   COPY: out = (out dtype) in[0], any dtype pair. Comparisons write PT_U8.
 *   ADD_SCALAR/MUL_SCALAR: out = in[0] + scalar, in[0] * scalar.
 *   GELU: out = x Phi(x), Phi the standard normal CDF (erf form, exact as
 *   torch's default); GELU_GRAD: out = Phi(x) + x phi(x), its derivative.
 *   CLAMP: out = min(max(in[0], scalar), scalar2), NaN propagating. The core
 *   sends scalar <= scalar2, never NaN; for integer dtypes both are integral
 *   and convert to the dtype by numeric_rules.h's saturating rule (+-2^63
 *   for i64 means its ends).
 *   WHERE: out = in[0] (PT_U8) != 0 ? in[1] : in[2].
 *   AXPY: out = in[0] + scalar * in[1]; out aliases in[0] exactly.
 *   Float to integer conversions follow portable/numeric_rules.h.
 *
 * REDUCE (SUM, MEAN, MAX, ARGMAX): reduction over the middle axis. in[0]:
 *   ndim 3 [outer, r, inner], any strides. out: ndim 2 [outer, inner],
 *   contiguous. ARGMAX writes PT_I64: the index of the first maximum; NaN
 *   counts as the maximum.
 *
 * SOFTMAX (SOFTMAX, LOG_SOFTMAX): over the middle axis: in[0] [outer, r,
 *   inner] any strides, out the same shape, contiguous.
 *
 * MATMUL: batched GEMM: in[0] [B, M, K], in[1] [B, K, N], out [B, M, N]
 *   contiguous. For each input strides[2] == 1 (row-major, leading dim
 *   strides[1]) or strides[1] == 1 (column-major, leading dim strides[2]);
 *   strides[0] is the batch stride and may be 0 (broadcast). f32/f64.
 *
 * INDEX: GATHER: in[0] x [outer, r_in, inner] any strides, in[1] index
 *   (PT_I32 or PT_I64) [outer, r_idx, inner] any strides, out [outer, r_idx,
 *   inner] contiguous: out[o][j][i] = x[o][index[o][j][i]][i]; an index
 *   outside [0, r_in) writes 0 (never reads out of bounds). ONE_HOT: in[0]
 *   labels (PT_I32/PT_I64) 1-D [n] any stride, out [n, count] contiguous of
 *   op dtype: 1 at the label, 0 elsewhere (a label outside [0, count) gives a
 *   zero row).
 *   EMBEDDING: in[0] weight [V, D] any strides, in[1] indices (PT_I32 or
 *   PT_I64) 1-D [N] any stride, out [N, D] contiguous: out[n] = weight[
 *   indices[n]]; an index outside [0, V) writes a zero row (never reads out
 *   of bounds). EMBEDDING_BACKWARD, its adjoint in the weight: in[0] g
 *   [N, D] any strides, in[1] indices [N] as EMBEDDING's, out [V, D]
 *   contiguous: out[v] = the sum of the rows g[n] whose index is v, added
 *   in increasing n (a deterministic scatter-add: the same bits run to
 *   run, no atomics), 0 where no index is v; an index outside [0, V) adds
 *   nothing. extra[PT_EMB_X_SCRATCH] is PT_I64 [2, N] contiguous scratch
 *   the backend may overwrite (n_extra 1). N, D and V are >= 1.
 *
 * WINDOW: sliding 2-D windows over NCHW images, the lowering that turns a
 *   convolution into one GEMM and a pooling into one reduction. window[] =
 *   {stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w}, each stride
 *   and dilation >= 1, each pad >= 0; the kernel and output extents are the
 *   shapes'. Input row of window position (oh, i): h = oh*stride_h - pad_h +
 *   i*dilation_h (columns alike).
 *   IM2COL: in[0] x [N, C, H, W] any strides, out [N, C, KH, KW, OH, OW]
 *   contiguous: out[n][c][i][j][oh][ow] = x[n][c][h][w], or scalar where
 *   (h, w) falls outside the image (0 for a convolution, -inf for max pool).
 *   COL2IM, its adjoint: in[0] [N, C, KH, KW, OH, OW] contiguous, out
 *   [N, C, H, W] contiguous: out[n][c][h][w] = the sum of every in element
 *   IM2COL would have read from (h, w) (0 where none does).
 *   The max pools take the kernel from kernel[] (their shapes lack it):
 *   MAX_POOL2D: in[0] x [N, C, H, W] any strides, out [N, C, OH, OW]
 *   contiguous: each window's maximum over its taps inside the image
 *   (padding never wins; a window of padding only is -inf); NaN wins.
 *   MAX_POOL2D_INDEX: the same windows, out PT_I64 [N, C, OH, OW]
 *   contiguous: h*W + w of the tap MAX_POOL2D chose (the first maximum in
 *   row-major tap order, the first NaN where one is present; -1 for a window
 *   of padding only).
 *   MAX_UNPOOL2D, its adjoint: in[0] g [N, C, OH, OW] contiguous, in[1] PT_I64
 *   indices [N, C, OH, OW] contiguous (from MAX_POOL2D_INDEX with the same
 *   window), out [N, C, H, W] contiguous: out[n][c][h][w] = the sum of
 *   g[n][c][oh][ow] over the windows (oh, ow) that contain (h, w) and whose
 *   index is h*W + w, added in increasing (oh, ow) order (deterministic; the
 *   same bits on every backend).
 *
 * CONV: 2-D convolution as one kind per pass, for a backend with a
 *   convolution library; a backend without one refuses them and the core
 *   composes the convolution from IM2COL and MATMUL instead. window[] as
 *   WINDOW's; count = groups (>= 1, dividing C and CO); the kernel extents
 *   are the weight's shape. Every operand contiguous. The core asks
 *   supports() with the real shapes before each use, so a backend may refuse
 *   one shape (or one call) and accept another.
 *   CONV2D: in[0] x [N, C, H, W], in[1] weight [CO, C/groups, KH, KW], out
 *   [N, CO, OH, OW]: out[n][o][oh][ow] = the sum over the taps (c, i, j) of
 *   o's group of x[n][c][h][w] * weight[o][c - group start][i][j] (taps in
 *   the padding add nothing). No bias: the core adds it.
 *   CONV2D_BWD_DATA, its adjoint in x: in[0] g [N, CO, OH, OW], in[1] weight,
 *   out [N, C, H, W] (H, W from out's shape).
 *   CONV2D_BWD_WEIGHT, its adjoint in the weight: in[0] x [N, C, H, W], in[1]
 *   g [N, CO, OH, OW], out [CO, C/groups, KH, KW].
 *
 * NORM: CHANNEL_STATS, the statistics batch normalisation trains with,
 *   in one call where the composed path takes four full-size ops: in[0] x
 *   [N, C, L] any strides, out [2, C] contiguous: out[0][c] the mean of the
 *   N * L values x[., c, .], out[1][c] their biased variance (the mean of
 *   the squared deviations from that mean). The core sends N * L >= 1 and
 *   composes the two from REDUCE and ELEMENTWISE kinds where a backend
 *   refuses the kind.
 *
 * FUSED: a chain of element-wise ops of a captured graph run as one kernel
 *   (docs/graphs.md, "Fusion"). Only graph replays send it, and the core
 *   asks supports() first: a backend refuses what it cannot fuse and the
 *   core then replays those ops one by one. n_inputs is 0; op.fused is the
 *   chain and op.out a copy of its last stored operand (for messages and
 *   traces). The steps run in order, each an ELEMENTWISE op as execute
 *   would get it (any kind of that family but AXPY), except that
 *   steps[k].src[j] >= 0 makes input j the value step src[j] computed at
 *   the same element (op.in[j] then only states its dtype; its buf is not
 *   read), and that a step's out is written only where steps[k].store is
 *   set. Every step's out is contiguous with numel elements, so element i
 *   of a step is element i, in row-major order, of its out's shape; its
 *   other inputs are read at the same multi-index through their own
 *   strides (each step's dimensions were merged on their own, so steps may
 *   state different shapes of the same numel). A step computes and rounds
 *   exactly as its eager kernel does, so a fused chain equals the eager
 *   ops bit for bit. A store never overlaps an input read from memory,
 *   except exactly (same buffer, offset, dtype and contiguous layout: an
 *   in-place op). reduce, when not NULL, is a REDUCE op (SUM, MEAN or MAX)
 *   on the last step's value: its in[0] is that value read as [outer, r,
 *   inner] contiguous (buf not read), op.out is its out, and that out
 *   overlaps nothing the chain reads or writes. A backend that fuses chains
 *   but not their reductions refuses those; the core then sends the chain
 *   and the reduction apart.
 *
 * ATTENTION: scaled dot-product attention, fused: softmax(q k^T scale +
 *   mask) v without the [Tq, Tk] scores in memory (flash-attention style).
 *   Every tensor operand is 4-D [B, H, T, D] with the last stride 1 and any
 *   other strides (a mask's broadcast dims have stride 0); operands past
 *   in[] and out are in extra[], at the PT_ATTN_X_* positions below; an
 *   absent one has buf NULL and ndim 0. scalar = scale (finite); flags:
 *   PT_ATTN_CAUSAL (query i sees keys j <= i, top-left aligned as
 *   torch.tril(ones(Tq, Tk))), PT_ATTN_MASK_KEEP (extra[MASK] is PT_U8
 *   [B, H, Tq, Tk]: key j takes part in row i where nonzero) or
 *   PT_ATTN_MASK_ADD (extra[MASK] is of the op's dtype, added to the scaled
 *   scores; -inf removes a key). A row where no key takes part gives 0 and
 *   log-sum-exp -inf (and no gradient). f32/f64 (the core computes 16-bit
 *   tensors in f32).
 *   ATTENTION: in[0] q [B, H, Tq, D], in[1] k [B, H, Tk, D], in[2] v
 *   [B, H, Tk, Dv]; out o [B, H, Tq, Dv] contiguous; extra[LSE] an output
 *   [B, H, Tq] contiguous: each row's log of the sum over its keys of
 *   exp(score), what the backward pass recomputes the probabilities from.
 *   ATTENTION_BACKWARD: in[] as ATTENTION's, extra[LSE] that output (an
 *   input now), extra[OUT] o and extra[GRAD_OUT] do [B, H, Tq, Dv]; out dq
 *   (q's shape), extra[GRAD_K] dk and extra[GRAD_V] dv (k's and v's
 *   shapes), all three contiguous and fully written. */

/** pt_op.flags of the ATTENTION family. */
#define PT_ATTN_CAUSAL 1u    /**< query i sees keys j <= i */
#define PT_ATTN_MASK_KEEP 2u /**< extra[PT_ATTN_X_MASK]: PT_U8, nonzero keeps the key */
#define PT_ATTN_MASK_ADD 4u  /**< extra[PT_ATTN_X_MASK]: added to the scaled scores */

/** Positions in pt_op.extra of the ATTENTION family's operands. */
enum pt_attn_extra {
    PT_ATTN_X_MASK = 0,     /**< the mask (absent without a MASK flag) */
    PT_ATTN_X_LSE = 1,      /**< log-sum-exp per query row [B, H, Tq] */
    PT_ATTN_X_OUT = 2,      /**< ATTENTION_BACKWARD: the forward output o */
    PT_ATTN_X_GRAD_OUT = 3, /**< ATTENTION_BACKWARD: the gradient of o */
    PT_ATTN_X_GRAD_K = 4,   /**< ATTENTION_BACKWARD: dk (an output) */
    PT_ATTN_X_GRAD_V = 5    /**< ATTENTION_BACKWARD: dv (an output) */
};

/** Positions in pt_op.extra of EMBEDDING_BACKWARD's operands. */
enum pt_emb_extra {
    PT_EMB_X_SCRATCH = 0 /**< PT_I64 [2, N] the backend may overwrite */
};

/** One operand: a strided view into a backend buffer. */
typedef struct pt_operand {
    void *buf;               /**< handle from alloc() (or a host pointer on host-visible devices) */
    size_t offset;           /**< byte offset of element [0, ..., 0] in buf */
    pt_dtype dtype; /**< the operand's element type */
    int ndim; /**< dims in use in shape and strides (0..PT_MAX_DIMS) */
    int64_t shape[PT_MAX_DIMS]; /**< extents, each >= 1 */
    int64_t strides[PT_MAX_DIMS]; /**< in elements; 0 on broadcast dims; never negative */
} pt_operand;

/** The most inputs an op takes (pt_op.in). */
#define PT_OP_MAX_INPUTS 3
/** The most operands past in[] and out an op has (pt_op.extra; ATTENTION's
 * mask, log-sum-exp and, for its backward kind, more inputs and outputs). */
#define PT_OP_MAX_EXTRA 6

/** One operation for a backend to queue: its kind (a row of op_table.h), its
 * operands and its parameters, already validated by the core. Valid only
 * during the execute or supports call; a backend keeps none of it. */
typedef struct pt_op {
    pt_op_kind kind; /**< which operation */
    pt_dtype dtype;          /**< compute dtype: the inputs' dtype (out's for creation ops) */
    int n_inputs; /**< inputs used in in[] */
    pt_operand out; /**< where the result goes */
    pt_operand in[PT_OP_MAX_INPUTS]; /**< the inputs, n_inputs of them */
    double scalar;           /**< FILL value, ARANGE start, *_SCALAR operand, AXPY alpha */
    double scalar2;          /**< ARANGE step */
    uint64_t seed;           /**< RAND_*: generator key */
    uint64_t counter;        /**< RAND_*: first Philox block of this call */
    int64_t count;           /**< ONE_HOT: number of classes; CONV: groups */
    /* Appended members go below this line. */
    int64_t window[6];       /**< WINDOW: stride h, w; pad h, w; dilation h, w */
    int64_t kernel[2];       /**< MAX_POOL2D*, MAX_UNPOOL2D: window height, width */
    const struct pt_fused_chain *fused; /**< FUSED: the chain (see the family) */
    uint32_t flags;          /**< ATTENTION: PT_ATTN_* */
    int n_extra;             /**< operands used in extra[] (absent ones have buf NULL) */
    pt_operand extra[PT_OP_MAX_EXTRA]; /**< ATTENTION, EMBEDDING_BACKWARD: operands past in[] (pt_attn_extra, pt_emb_extra) */
} pt_op;

/** EMBEDDING as the GATHER it is, for a backend that runs it with its gather
 * kernel: in[0] the weight as [1, V, D], in[1] the indices as [1, N, D] with
 * stride 0 along each row, out [1, N, D]; the same buffers. */
static inline pt_op pt_embedding_as_gather(const pt_op *op) {
    pt_op g = *op;
    const pt_operand *w = &op->in[0], *ix = &op->in[1];
    pt_operand *x = &g.in[0], *i = &g.in[1];
    g.kind = PT_OP_GATHER;
    x->ndim = i->ndim = g.out.ndim = 3;
    x->shape[0] = i->shape[0] = g.out.shape[0] = 1;
    x->shape[1] = w->shape[0];
    i->shape[1] = g.out.shape[1] = ix->shape[0];
    x->shape[2] = i->shape[2] = g.out.shape[2] = w->shape[1];
    x->strides[0] = i->strides[0] = 0;
    x->strides[1] = w->strides[0];
    x->strides[2] = w->strides[1];
    i->strides[1] = ix->strides[0];
    i->strides[2] = 0;
    g.out.strides[0] = 0;
    g.out.strides[1] = op->out.strides[0];
    g.out.strides[2] = op->out.strides[1];
    return g;
}

/** One step of a FUSED chain: an element-wise op whose inputs may be the
 * values of earlier steps. */
typedef struct pt_fused_step {
    pt_op op;                        /**< the op as execute would get it */
    int32_t src[PT_OP_MAX_INPUTS];   /**< >= 0: input j is step src[j]'s value; -1: read op.in[j] */
    bool store;                      /**< write the value to op.out */
} pt_fused_step;

/** A chain of element-wise ops run as one kernel (the FUSED family). */
typedef struct pt_fused_chain {
    int32_t n_steps;                 /**< >= 2, or 1 when reduce is set */
    const pt_fused_step *steps;      /**< in order */
    int64_t numel;                   /**< elements of every step's out */
    const pt_op *reduce;             /**< a REDUCE op on the last value, or NULL */
} pt_fused_chain;

/** @} */
/** @name What the core offers a plugin */
/** @{ */

/** What the core gives a plugin at pt_backend_entry: error reporting, logging
 * (pt_log_level is in log.h), settings and device memory from its allocator.
 * Owned by the core and valid until the plugin's shutdown returns. */
typedef struct pt_host_api {
    uint32_t struct_size; /**< sizeof(pt_host_api) in the core: members past it are absent */
    uint32_t abi_version; /**< PT_BACKEND_ABI_VERSION of the core */
    /** Records the reason for the status the plugin is about to return. The
     * core prefixes it with the public function and device names. */
    void (*set_error)(pt_status s, const char *fmt, ...) PT_PRINTF(2, 3);
    /** Diagnostics: through the application's log handler (pt_set_log_handler)
     * or to stderr, when PORTABLE_LOG=debug|info|warn allows. */
    void (*log)(pt_log_level level, const char *fmt, ...) PT_PRINTF(2, 3);
    /* Appended members go below this line (check struct_size before use). */
    /** Device memory for a plugin's own use (scratch space, a BLAS workspace)
     * from the core's caching allocator of device dev of backend `backend`
     * (the plugin's name): bytes [*offset, *offset + bytes) of the handle
     * *buf; *block is what device_free takes back. Work queued on dev's
     * queue before the free may still use it (the allocator reuses it in
     * queue order). On failure the status (PT_ERR_OUT_OF_MEMORY after the
     * cache was emptied) with its reason already recorded. */
    pt_status (*device_alloc)(const char *backend, int dev, size_t bytes, void **buf, size_t *offset,
                              void **block);
    /** Gives back a block from device_alloc (work already queued on dev may
     * still use it: it is reused in queue order). */
    void (*device_free)(const char *backend, int dev, void *block);
    /* The environment, read and checked as the core reads it (env.h:
     * pt_env_int, pt_env_choice): a bad value is a warning naming the
     * variable, the value and what is accepted, and the fallback is used.
     * Use PT_HOST_HAS(host, env_int) first. */
    /** The integer in variable `name`, within [lo, hi]; fallback when unset,
     * empty or bad (bad: a warning naming it). */
    int64_t (*env_int)(const char *name, int64_t lo, int64_t hi, int64_t fallback);
    /** The index in `choices` (NULL-terminated) of variable `name`'s value;
     * fallback when unset, empty or not one of them (then a warning). */
    int (*env_choice)(const char *name, const char *const *choices, int fallback);
} pt_host_api;

/** Whether the host API h (as the core that loaded the plugin was built)
 * has the appended member m. */
#define PT_HOST_HAS(h, m) \
    ((h) && (h)->struct_size >= offsetof(pt_host_api, m) + sizeof((h)->m) && (h)->m)

/** @} */
/** @name What a plugin offers the core */
/** @{ */

/** What a plugin gives the core: its name and the members the core calls.
 * Returned by pt_backend_entry, owned by the plugin and valid until the plugin
 * is unloaded. Members are only ever appended. */
typedef struct pt_backend_vtable {
    uint32_t struct_size;    /**< sizeof(pt_backend_vtable) as the plugin was built */
    uint32_t abi_version;    /**< PT_BACKEND_ABI_VERSION */
    const char *name;        /**< "cpu", "cuda", "opencl": device names are name:N */
    bool host_visible;       /**< buffers are host pointers in this process (the cpu backend) */

    /** Lifetime. init runs once after admission; its failure is recorded and
     * the backend reports no devices. shutdown (optional) default: nothing. */
    pt_status (*init)(void);
    void (*shutdown)(void); /**< Releases what init made (optional; default: nothing). */

    /** Devices. device_count may be 0 (driver present but no device); then
     * unavailable_reason (optional) default: "no devices" says why. */
    int (*device_count)(void);
    const char *(*unavailable_reason)(void); /**< Why there are no devices (optional; default: "no devices"). */
    /** Fills out with device dev's name, memory and features: a whole
     * pt_device_props of this header's size (the core zeroes it first;
     * members the plugin cannot tell stay 0). */
    pt_status (*device_info)(int dev, pt_device_props *out);

    /** Memory. alloc returns PT_ERR_OUT_OF_MEMORY when the driver has no room
     * (the core then empties its cache and retries once). host_visible: the
     * buffer handle is a host pointer valid in this process (cpu). */
    pt_status (*alloc)(int dev, size_t bytes, void **buf);
    void (*free)(int dev, void *buf); /**< Gives back a buffer from alloc (queued work may still use it until synchronize). */
    /** (optional) default: device_info's figures. */
    pt_status (*memory_info)(int dev, int64_t *free_bytes, int64_t *total_bytes);
    /** Pinned host memory for asynchronous copies. (optional) default: malloc/free. */
    pt_status (*host_alloc)(int dev, size_t bytes, void **ptr);
    void (*host_free)(int dev, void *ptr); /**< Gives back host_alloc memory (optional with host_alloc). */

    /** Host to device: bytes from src into dst at dst_offset. Transfers (this
     * and the two below) are queued on dev's in-order queue after earlier
     * work. With async false the call returns when the copy is complete; with
     * async true host memory must be pinned (host_alloc) and stay valid until
     * synchronize(dev). */
    pt_status (*copy_h2d)(int dev, void *dst, size_t dst_offset, const void *src, size_t bytes,
                          bool async);
    /** Device to host: bytes from src at src_offset into dst (queued as copy_h2d). */
    pt_status (*copy_d2h)(int dev, void *dst, const void *src, size_t src_offset, size_t bytes,
                          bool async);
    /** Within device dev: bytes from src at src_offset to dst at dst_offset
     * (queued as copy_h2d; never waits). */
    pt_status (*copy_d2d)(int dev, void *dst, size_t dst_offset, const void *src,
                          size_t src_offset, size_t bytes);
    /** Between two devices of this backend. (optional) default: the core
     * stages through pinned host memory. */
    pt_status (*copy_peer)(int dst_dev, void *dst, size_t dst_offset, int src_dev, const void *src,
                           size_t src_offset, size_t bytes);

    /** Execution. execute queues op on dev; PT_ERR_UNSUPPORTED (with a reason)
     * for a kind/dtype it lacks, which the conformance suite reports as a skip.
     * supports (optional) default: try execute. */
    pt_status (*supports)(int dev, const pt_op *op);
    pt_status (*execute)(int dev, const pt_op *op); /**< Queues op on dev (see supports for what it may refuse). */
    pt_status (*synchronize)(int dev); /**< Waits until everything queued on dev is complete. */

    /* Appended members go below this line. */
    /** Queue markers (optional, all three or none), for the core's pinned
     * host-block cache: a pinned block released while queued copies may still
     * read or write it is handed out again only once dev's queue has passed a
     * marker recorded at its release. marker_record puts a marker at the end
     * of dev's queue (a CUDA event, say); marker_passed returns true once all
     * work queued before it is complete (it never waits); marker_release frees
     * it. Default: a released block is reused only after a synchronize of dev
     * that began after the release. */
    pt_status (*marker_record)(int dev, void **marker);
    bool (*marker_passed)(int dev, void *marker); /**< Whether the work before marker is complete (never waits). */
    void (*marker_release)(int dev, void *marker); /**< Frees a marker from marker_record. */
    /** Device timing for traces (optional, all three or none) default: no
     * device spans; the trace shows the host's calls only. Asked only while
     * a trace is being written (include/portable/trace.h), around each op
     * and copy. stamp_record puts a timestamp at the end of dev's queue
     * (*stamp is never NULL on success: NULL means "no stamp" to the core);
     * stamp_time, called after a synchronize of dev, gives the time at which
     * the queue passed it (the work queued before it complete) on the host's
     * CLOCK_MONOTONIC clock in nanoseconds, never later than the true time
     * (a device clock mapped with an offset measured early, say);
     * stamp_release frees it. A backend that executes at once (the cpu)
     * returns the host's clock when recording. */
    pt_status (*stamp_record)(int dev, void **stamp);
    pt_status (*stamp_time)(int dev, void *stamp, int64_t *ns); /**< When the queue passed stamp (host ns). */
    void (*stamp_release)(int dev, void *stamp); /**< Frees a stamp from stamp_record. */

    /* What the core knows of a backend only from the backend itself (the
     * core names none). Appended within ABI version 2: a table built with an
     * older header is shorter, and the core reads these only when
     * struct_size covers them; otherwise, and when a member is 0 or NULL, it
     * uses the default named. */
    /** How strongly PORTABLE_BACKEND=auto prefers this backend, read right
     * after pt_backend_entry (before init, so auto can rank the plugins it
     * found without starting them all). auto starts the backends whose
     * priority is above 0, highest first (plugin file order on ties), and
     * takes the first that has a device auto_device_score accepts; when none
     * has, the cpu. The cuda plugin says 200, opencl 100. (optional)
     * default: 0, never picked by auto. */
    int32_t auto_priority;
    /** Whether and how much auto may pick device dev of this backend (above
     * 0: it may; the highest score wins, the lowest index on ties).
     * (optional) default: 1 for a device whose device_info type is
     * PT_DEVICE_GPU, else 0. */
    int32_t (*auto_device_score)(int dev);
    /** The DLPack device type (a DLDeviceType of dlpack/dlpack.h: kDLCUDA is
     * 2, kDLOpenCL 4, ...) of this backend's device buffers; pt_to_dlpack
     * reports device index N of the backend as that type's device_id N.
     * (optional) default: kDLCPU (1) for a host_visible backend, else none:
     * its tensors cannot be exported (PT_ERR_UNSUPPORTED). */
    int32_t dlpack_device_type;
    /** The DLPack device type of memory from this backend's host_alloc (the
     * CUDA plugin's pinned memory is kDLCUDAHost, 3). (optional) default:
     * kDLCPU (1). */
    int32_t dlpack_host_device_type;
    /** Whether memory another library allocated on this backend's device
     * type (a DLPack tensor of dlpack_device_type from PyTorch, say) is
     * usable as a buffer handle of this backend, its data pointer being the
     * handle (true for CUDA device pointers; false for OpenCL, whose
     * buffers belong to one context). (optional) default: false:
     * pt_from_dlpack takes back only the tensors libportable exported
     * itself. */
    bool dlpack_imports;
    /* Graph replay: a captured step (include/portable/graph.h) handed to the
     * backend as one list of ops, to replay by its own mechanism (a CUDA
     * graph, an OpenCL command buffer, pre-bound kernels). Appended within
     * ABI version 2, like the members above. (optional, all three or none)
     * default: the core replays a graph by calling execute for each op in
     * order, with no validation or allocation in between. */
    /** Makes the backend's replayable form of ops[0..n_ops-1] on dev (the
     * ops as execute would get them, in queue order; every buffer stays
     * valid until graph_destroy) and returns it in *graph. Called at a
     * graph's first replay. PT_ERR_UNSUPPORTED (with a reason) when it
     * cannot: the core then uses its default for that graph. */
    pt_status (*graph_instantiate)(int dev, const pt_op *ops, int32_t n_ops, void **graph);
    /** Queues one replay of graph on dev and returns at once. ops is the
     * list as instantiated, except the ops whose indices changed[0..n_changed-1]
     * names: their scalar, scalar2, seed or counter differ (random ops draw
     * fresh numbers, a step counter moved); their operands never change. */
    pt_status (*graph_launch)(int dev, void *graph, const pt_op *ops, int32_t n_ops,
                              const int32_t *changed, int32_t n_changed);
    /** Frees a graph from graph_instantiate (replays already queued may still
     * run: free in queue order). */
    void (*graph_destroy)(int dev, void *graph);
    /** Whether the core should stage small uploads to dev (copy them into a
     * pinned block and queue them, so the host does not wait for the queue
     * to drain): above 0 yes, below 0 no, 0 the default. Read once per
     * device; PORTABLE_STAGED_UPLOADS=on|off overrides it. Appended within
     * ABI version 2, like the members above. (optional) default: staged
     * where the device is not the host's own cores (device_info's type is
     * not PT_DEVICE_CPU) and the plugin has queue markers. */
    int32_t (*upload_staging)(int dev);
} pt_backend_vtable;

/** The type of a plugin's pt_backend_entry: given the core's host API and ABI
 * version, returns the plugin's table, or NULL (after host->set_error) when it
 * cannot serve this core. */
typedef const pt_backend_vtable *(*pt_backend_entry_fn)(const pt_host_api *host, uint32_t host_abi);

/** @} */
#ifdef __cplusplus
}
#endif
#endif
