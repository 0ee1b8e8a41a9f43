/* libportable CUDA backend — the C-callable launcher API of the kernels.
 *
 * The host side (C, cuda_*.c) turns a pt_op into one of the launch records
 * below; the .cu files own the kernels, pick template instantiations by dtype
 * and launch them on the given stream. Every launcher returns the CUDA error
 * of its launch (cudaGetLastError() right after it), cudaErrorNotSupported
 * for a kind/dtype combination it has no kernel for, and cudaSuccess
 * otherwise. Pointers are device addresses of element [0, ..., 0] (the op's
 * byte offsets already applied). Nothing here waits for the device. */
#ifndef PTCU_KERNELS_H
#define PTCU_KERNELS_H

#include <cuda_runtime_api.h>

#include "portable/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Operand 0 is the output, 1.. are the inputs. */
#define PTCU_MAX_OPERANDS (1 + PT_OP_MAX_INPUTS)

/* ---- Element-wise ops, creation ops, casts ---- */

/* An element-wise iteration space (launch_geometry.c): the operands' dims as
 * the core merged them (backend.h). strides in elements, per operand, 0 on
 * broadcast dims. */
typedef struct ptcu_geometry {
    int ndim;                                        /* 1..PT_MAX_DIMS */
    int64_t shape[PT_MAX_DIMS];
    int64_t strides[PTCU_MAX_OPERANDS][PT_MAX_DIMS];
} ptcu_geometry;

typedef struct ptcu_ew_launch {
    pt_op_kind kind;
    int n_inputs;                         /* 0 (creation) .. 3 (where) */
    pt_dtype dtype[PTCU_MAX_OPERANDS];
    void *ptr[PTCU_MAX_OPERANDS];
    int64_t numel;
    /* geo.ndim == 1, output stride 1, every input stride 0 or 1: the
     * vectorised linear path; otherwise the strided N-d path. */
    bool contiguous;
    ptcu_geometry geo;
    double scalar, scalar2;               /* as in pt_op */
    uint64_t seed, counter;               /* RAND_* */
    int max_blocks;                       /* grid cap for grid-stride loops; 0: one full wave */
    int sm_count;                         /* multiprocessors, for the full wave */
} ptcu_ew_launch;

/* The rows of PT_EW_BINARY in portable/ew_math.h (kernels_elementwise_binary.cu). */
cudaError_t ptcu_launch_binary(const ptcu_ew_launch *l, cudaStream_t stream);
/* The rows of PT_EW_COMPARE and PT_EW_WHERE in portable/ew_math.h (kernels_elementwise_compare.cu). */
cudaError_t ptcu_launch_compare(const ptcu_ew_launch *l, cudaStream_t stream);
/* The rows of PT_EW_UNARY in portable/ew_math.h (kernels_elementwise_unary.cu). */
cudaError_t ptcu_launch_unary(const ptcu_ew_launch *l, cudaStream_t stream);
/* COPY FILL ARANGE RAND_UNIFORM RAND_NORMAL (k_data.cu). */
cudaError_t ptcu_launch_data(const ptcu_ew_launch *l, cudaStream_t stream);

/* The launcher of l's kind, chosen by the op table's facts: creation and
 * COPY, comparisons (u8 result) and WHERE (3 inputs), other binary ops,
 * other unary ops. */
static inline cudaError_t ptcu_launch_elementwise(const ptcu_ew_launch *l, cudaStream_t stream) {
    const pt_op_info *info = pt_op_info_of(l->kind);
    if (!info) return cudaErrorNotSupported;
    if (info->family == PT_OP_FAMILY_CREATION || l->kind == PT_OP_COPY) return ptcu_launch_data(l, stream);
    if (info->result == PT_OP_RESULT_U8 || info->arity == 3) return ptcu_launch_compare(l, stream);
    if (info->arity == 2) return ptcu_launch_binary(l, stream);
    return ptcu_launch_unary(l, stream);
}

/* ---- Reductions over the middle axis: SUM MEAN MAX ARGMAX (k_reduce.cu) ---- */

/* The input of a reduction or softmax: [outer, r, inner], worked along r.
 * Strides in elements. */
typedef struct ptcu_axis_view {
    int64_t outer, r, inner;
    int64_t s_outer, s_r, s_inner;
} ptcu_axis_view;

typedef struct ptcu_reduce_launch {
    pt_op_kind kind;
    pt_dtype in_dtype, out_dtype;
    const void *in;
    void *out;                            /* [outer, inner] contiguous */
    ptcu_axis_view x;
    int sm_count;
    void *scratch;                        /* ptcu_reduce_scratch_bytes() bytes */
    /* A second pass: in holds [outer, r, inner] partial accumulators of
     * in_dtype's reduction (ptcu_reduce_acc_bytes each; a fused chain's
     * first pass), and count is MEAN's divisor. */
    bool partials;
    int64_t count;
} ptcu_reduce_launch;

/* Device scratch the launch needs for partial results (0: none). */
size_t ptcu_reduce_scratch_bytes(const ptcu_reduce_launch *l);
cudaError_t ptcu_launch_reduce(const ptcu_reduce_launch *l, cudaStream_t stream);
/* The size of kind's accumulator over in_dtype (0: no such reduction). */
size_t ptcu_reduce_acc_bytes(pt_op_kind kind, pt_dtype in_dtype);

/* ---- SOFTMAX LOG_SOFTMAX over the middle axis (k_softmax.cu) ---- */

typedef struct ptcu_softmax_launch {
    bool log;
    pt_dtype dtype;
    const void *in;
    void *out;                            /* [outer, r, inner] contiguous */
    ptcu_axis_view x;
    int sm_count;
} ptcu_softmax_launch;

cudaError_t ptcu_launch_softmax(const ptcu_softmax_launch *l, cudaStream_t stream);

/* ---- GATHER, ONE_HOT and EMBEDDING_BACKWARD (k_index.cu) ---- */

typedef struct ptcu_gather_launch {
    size_t elem_size;                     /* 1, 4 or 8: values are copied bit for bit */
    pt_dtype index_dtype;                 /* PT_I32 or PT_I64 */
    const void *x, *index;
    void *out;                            /* [outer, r_idx, inner] contiguous */
    int64_t outer, r_in, r_idx, inner;
    int64_t xs[3], is[3];                 /* strides of x and index, elements */
    int sm_count;
} ptcu_gather_launch;

cudaError_t ptcu_launch_gather(const ptcu_gather_launch *l, cudaStream_t stream);

typedef struct ptcu_one_hot_launch {
    size_t elem_size;                     /* of the output dtype */
    uint64_t one_bits;                    /* the output dtype's 1, as stored */
    pt_dtype label_dtype;                 /* PT_I32 or PT_I64 */
    const void *labels;
    int64_t label_stride;
    void *out;                            /* [n, count] contiguous */
    int64_t n, count;
    int sm_count;
} ptcu_one_hot_launch;

cudaError_t ptcu_launch_one_hot(const ptcu_one_hot_launch *l, cudaStream_t stream);

/* EMBEDDING_BACKWARD (k_index.cu): out[v] = the sum of the rows g[p] whose
 * index is v in increasing p, 0 where none is. Three launches on the
 * stream: zero the output, link each position to the next one with its
 * index (first[p] set for the first; scratch [2, n]: first, next), and
 * from each first position walk its links, one thread per (position,
 * column). */
typedef struct ptcu_embedding_grad_launch {
    pt_dtype dtype;                       /* PT_F32 or PT_F64 */
    pt_dtype index_dtype;                 /* PT_I32 or PT_I64 */
    const void *g, *index;
    void *out;                            /* [rows, d] contiguous */
    int64_t *scratch;                     /* [2, n] contiguous */
    int64_t n, d, rows;
    int64_t gs[2], index_stride;          /* elements */
    int sm_count;
} ptcu_embedding_grad_launch;

cudaError_t ptcu_launch_embedding_grad(const ptcu_embedding_grad_launch *l, cudaStream_t stream);

/* ---- IM2COL, COL2IM and the max pools (k_window.cu); the pools take kh,
 * kw from pt_op.kernel and oh, ow from their [n, c, oh, ow] windows ---- */

typedef struct ptcu_window_launch {
    pt_op_kind kind;                      /* PT_OP_IM2COL, COL2IM, MAX_POOL2D(_INDEX), MAX_UNPOOL2D */
    pt_dtype dtype;                       /* PT_F32 or PT_F64 */
    const void *in;
    void *out;                            /* contiguous */
    int64_t n, c, h, w, kh, kw, oh, ow;   /* image [n, c, h, w], columns [n, c, kh, kw, oh, ow] */
    int64_t xs[4];                        /* IM2COL: the image's strides, elements */
    int64_t window[6];                    /* as pt_op.window */
    double pad;                           /* IM2COL: value outside the image */
    int sm_count;
    const void *index;                    /* MAX_UNPOOL2D: in[1], i64 [n, c, oh, ow] contiguous */
} ptcu_window_launch;

cudaError_t ptcu_launch_window(const ptcu_window_launch *l, cudaStream_t stream);

/* ---- ATTENTION and ATTENTION_BACKWARD (kernels_attention.cu) ---- */

/* The operands of backend.h's ATTENTION family, 4-D [B, H, T, D] with the
 * last stride 1; the strides of dims 0..2 in elements (0 on a broadcast
 * dim). */
typedef struct ptcu_attention_launch {
    bool backward;
    pt_dtype dtype;                       /* PT_F32 or PT_F64 */
    int64_t b, h, tq, tk, d, dv;          /* d, dv: 1..PTCU_ATTENTION_MAX_D */
    uint32_t flags;                       /* PT_ATTN_* */
    double scale;
    const void *q, *k, *v;
    int64_t sq[3], sk[3], sv[3];
    const void *mask;                     /* NULL without a MASK flag */
    int64_t sm[4];                        /* the mask's strides, all four dims */
    void *out;                            /* forward: o [B, H, Tq, Dv]; backward: dq; contiguous */
    void *lse;                            /* [B, H, Tq] contiguous: written forward, read backward */
    const void *o, *dout;                 /* backward: o and its gradient, strided as q */
    int64_t so[3], sdo[3];
    void *dk, *dv_out;                    /* backward: contiguous */
    void *delta;                          /* backward: scratch of B * H * Tq elements */
    int64_t shared_default;               /* shared memory a block takes without opting in */
    int64_t shared_limit;                 /* the most a block may opt in to */
    int sm_count;
} ptcu_attention_launch;

/* The widest D (and Dv) the kernels take; the core composes wider heads. */
#define PTCU_ATTENTION_MAX_D 256

/* The forward pass, or the backward's three kernels (delta, dk/dv by key
 * block, dq by query block); cudaErrorNotSupported when no tile fits the
 * shared memory limit. */
cudaError_t ptcu_launch_attention(const ptcu_attention_launch *l, cudaStream_t stream);

/* ---- Device admission (k_probe.cu) ---- */

/* Whether the current device can run this plugin's kernels: cudaSuccess, or
 * cudaErrorNoKernelImageForDevice / cudaErrorInvalidDeviceFunction when none
 * of the compiled architectures fits it. */
cudaError_t ptcu_probe_kernels(void);
/* The architectures the kernels were compiled for, e.g. "sm_80 sm_90 compute_90". */
const char *ptcu_compiled_architectures(void);
/* The same as CMake CUDA_ARCHITECTURES words ("80-real 90-real 90-virtual"),
 * for admission without a context (ptcu_architecture_fits). */
const char *ptcu_compiled_architecture_codes(void);

#ifdef __cplusplus
}
#endif
#endif
