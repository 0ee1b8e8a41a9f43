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

/*
 * Ops call pt__grad_record after computing out when pt__grad_wanted says an
 * input needs a gradient. */
typedef enum pt__grad_op {
    PT__G_ADD, PT__G_SUB, PT__G_MUL, PT__G_DIV, PT__G_POW, PT__G_MAXIMUM, PT__G_MINIMUM,
    PT__G_ADD_SCALAR, PT__G_MUL_SCALAR, PT__G_NEG, PT__G_ABS, PT__G_EXP, PT__G_LOG,
    PT__G_SQRT, PT__G_RELU, PT__G_SIGMOID, PT__G_TANH, PT__G_WHERE, PT__G_SUM, PT__G_MEAN,
    PT__G_MAX, PT__G_NORM, PT__G_SOFTMAX, PT__G_LOG_SOFTMAX, PT__G_MATMUL, PT__G_RESHAPE,
    PT__G_TRANSPOSE, PT__G_PERMUTE, PT__G_NARROW, PT__G_EXPAND, PT__G_CONTIGUOUS,
    PT__G_CAST, PT__G_CAT, PT__G_STACK, PT__G_GATHER
} pt__grad_op;

typedef struct pt__grad_args {
    int dim;                     /* reductions (PT_ALL too), softmax, transpose d0, cat/stack, gather, narrow */
    int dim2;                    /* transpose d1 */
    bool keepdim;
    double scalar;               /* *_SCALAR */
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

/* Shared by every op without extra autograd arguments. */
extern const pt__grad_args pt__no_grad_args;

#endif
