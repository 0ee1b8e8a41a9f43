/* libportable core — the tape interface: how an op records itself for
 * autograd.
 *
 * Ops (this layer) call pt__grad_wanted and pt__grad_record; the autograd
 * layer above implements them and holds, in core/autograd/rules.c, one row
 * per name listed here: what the backward pass saves and its rule. A new
 * differentiable op adds its name to PT__GRAD_OPS and its row there. */
#ifndef PORTABLE_CORE_TAPE_H
#define PORTABLE_CORE_TAPE_H

#include "tensor/tensor_internal.h"

/* The differentiable ops, by name only: what each saves and how it is
 * differentiated is its row in core/autograd/rules.c (a missing row fails
 * the build or, for a gap in the middle, every recording at run time). */
#define PT__GRAD_OPS(X)                                                                            \
    X(ADD) X(SUB) X(MUL) X(DIV) X(POW) X(MAXIMUM) X(MINIMUM) X(ADD_SCALAR) X(MUL_SCALAR) X(NEG)      \
    X(ABS) X(EXP) X(LOG) X(SQRT) X(RELU) X(SIGMOID) X(TANH) X(WHERE) X(SUM) X(MEAN) X(MAX) X(NORM)  \
    X(SOFTMAX) X(LOG_SOFTMAX) X(MATMUL) X(RESHAPE) X(TRANSPOSE) X(PERMUTE) X(NARROW) X(EXPAND)      \
    X(CONTIGUOUS) X(CAST) X(CAT) X(STACK) X(GATHER) X(SIN) X(COS) X(CLAMP)     \
    X(IM2COL) X(COL2IM) X(GELU) X(MAX_POOL2D) X(CONV2D)

/* Ops call pt__grad_record with one of these after computing out when
 * pt__grad_wanted says an input needs a gradient. */
typedef enum pt__grad_op {
#define PT__GRAD_OP_ENUM(NAME) PT__G_##NAME,
    PT__GRAD_OPS(PT__GRAD_OP_ENUM)
#undef PT__GRAD_OP_ENUM
    PT__G_COUNT
} pt__grad_op;

typedef struct pt__grad_args {
    int dim;                     /* reductions (PT_ALL too), softmax, transpose d0, cat/stack, gather, narrow */
    int dim2;                    /* transpose d1 */
    bool keepdim;
    double scalar, scalar2;      /* *_SCALAR; clamp's lo, hi */
    int64_t start, length;       /* narrow */
    int n_ints;
    int ints[PT_MAX_DIMS];       /* permute perm, norm_dims dims */
} pt__grad_args;

/* True when grad mode is on and any of the n inputs requires grad. */
bool pt__grad_wanted(int n, pt_tensor *const *inputs);
/* Records out = op(inputs, args) on the tape. Inputs that do not require grad
 * (an index, a condition) are passed too, in the op's argument order. */
void pt__grad_record(pt_tensor *out, pt__grad_op op, int n, pt_tensor *const *inputs,
                     const pt__grad_args *args);

/* The window of an im2col/col2im record (args.ints: stride, padding,
 * dilation, each h then w) with kernel kh x kw. window.c */
void pt__window_from_args(const pt__grad_args *a, int64_t kh, int64_t kw, pt_window2d *w);

/* Shared by every op without extra autograd arguments. */
extern const pt__grad_args pt__no_grad_args;

#endif
