/* libportable core — helpers shared by the op files (creation.c, broadcast.c,
 * ops_*.c). Nothing here is exported; names are pt__*.
 *
 * Conventions of the op files:
 *   - a public op validates everything, builds a pt_op and calls pt__execute;
 *   - the pt__*_raw functions below do the same work for other op files but
 *     return a reference that is in no scope and has no autograd record, so
 *     composite ops (pt_norm, casts before a binary op, copies before a GEMM)
 *     neither leave temporaries on the tape nor pay for scope bookkeeping;
 *   - only the public function records autograd and returns through pt__ret. */
#ifndef PORTABLE_CORE_OPS_UTIL_H
#define PORTABLE_CORE_OPS_UTIL_H

#include "internal.h"

/* Room for a formatted shape "[a, b, ...]" of PT_MAX_DIMS int64 extents. */
#define PT__SHAPE_STR_CAP 200

static inline pt_device *pt__dev(const pt_tensor *x) { return x->st->dev; }
static inline bool pt__is_float(pt_dtype t) { return t == PT_F32 || t == PT_F64; }
static inline int64_t pt__tensor_numel(const pt_tensor *x) { return pt__numel(x->ndim, x->shape); }
static inline bool pt__host_visible(const pt_device *d) { return d->backend->vt->host_visible; }

/* Sets the scalar members of op; the caller fills out and in[0..n_inputs-1]
 * (the unused inputs are left alone: a backend reads only n_inputs of them). */
static inline void pt__op_init(pt_op *op, pt_op_kind kind, pt_dtype t, int n_inputs) {
    op->kind = kind;
    op->dtype = t;
    op->n_inputs = n_inputs;
    op->scalar = 0.0;
    op->scalar2 = 0.0;
    op->seed = 0;
    op->counter = 0;
    op->count = 0;
}

/* Shared by every op without extra autograd arguments. */
extern const pt__grad_args pt__no_grad_args;

/* ---- dtype rules (broadcast.c) ---- */

/* The promoted dtype of a and b: u8 < i32 < i64 < f32 < f64. */
pt_dtype pt__promote(pt_dtype a, pt_dtype b);
/* PT_ERR_DTYPE "fn: dtype <t> not supported; cast to <fix> with pt_cast()". */
pt_status pt__dtype_unsupported(const char *fn, pt_dtype t, pt_dtype fix);
/* Checks that v can be stored in dtype t and returns in *out the value the
 * backend will store (integers: truncated toward zero). NaN, infinities and
 * out-of-range values for integer dtypes are PT_ERR_INVALID_ARGUMENT naming
 * what (e.g. "value", "scalar"). */
pt_status pt__scalar_for_dtype(const char *fn, const char *what, double v, pt_dtype t,
                               double *out);
/* A NULL device: an error unless one is already pending (then that first
 * error is kept: the device came from a failed lookup). */
void pt__null_device(const char *fn);
/* A NULL tensor argument of a status-returning function: returns the
 * pending error, or sets PT_ERR_INVALID_ARGUMENT naming what. */
pt_status pt__null_tensor_status(const char *fn, const char *what);

/* ---- Shapes and operands (broadcast.c) ---- */

/* NumPy broadcasting of the n tensors' shapes into (*ndim, shape). On
 * failure: PT_ERR_SHAPE "fn: shapes [2, 3] and [4] cannot broadcast (dim -1:
 * 3 vs 4)". */
pt_status pt__broadcast_tensors(const char *fn, int n, pt_tensor *const *xs, int *ndim,
                                int64_t *shape);
/* The same rule on bare shapes: returns 0 on success, else the failing dim
 * counted from the end (-1 is the last) with the two clashing extents. */
int pt__broadcast_shapes(int n, const int *ndims, const int64_t *const *shapes, int *ndim,
                         int64_t *shape, int64_t *clash_a, int64_t *clash_b);
/* Whether the n dims walk memory with a single stride (extent-1 dims
 * ignored); *stride receives it (1 when every extent is 1). */
bool pt__merge_dims(int n, const int64_t *shape, const int64_t *strides, int64_t *stride);
/* Rewrites an element-wise op's operands (out and in[0..n_inputs-1], which
 * share out's shape) with extent-1 dims dropped and neighbouring dims fused
 * where every operand is contiguous over them; the result keeps ndim >= 1.
 * Backends then see a contiguous op of any shape as one 1-D run. */
void pt__coalesce(pt_op *op);
/* "dim PT_ALL" is only meaningful to reductions: elsewhere this names the
 * function and the valid range. Otherwise pt__resolve_dim. */
pt_status pt__resolve_dim_only(const char *fn, int dim, int ndim, int *out);

/* ---- Raw ops (new reference, no scope, no autograd) ---- */

/* A new contiguous tensor of dtype t and shape (ndim, shape) on x's device,
 * filled with x broadcast to that shape and converted (one COPY op).
 * ops_shape.c */
pt_tensor *pt__copy_new(const char *fn, pt_tensor *x, pt_dtype t, int ndim, const int64_t *shape);
/* Element-wise ops: kind ADD..GT (binary), NEG..TANH (unary). ops_elementwise.c */
pt_tensor *pt__binary_raw(const char *fn, pt_op_kind kind, pt_tensor *a, pt_tensor *b);
pt_tensor *pt__unary_raw(const char *fn, pt_op_kind kind, pt_tensor *x);
/* FILL op over x's elements with a value already checked by
 * pt__scalar_for_dtype. ops_inplace.c */
pt_status pt__fill(const char *fn, pt_tensor *x, double value);
/* Describes x as a 3-D operand [outer, r, inner] around dim d (PT_ALL: [1,
 * numel, 1]), using x's own strides where the dims before and after d merge,
 * else a contiguous copy returned in *copy (NULL when none was needed; the
 * caller releases it after executing). x must not be empty. ops_reduce.c */
pt_status pt__layout3(const char *fn, pt_tensor *x, int d, pt_operand *o, pt_tensor **copy);

#endif
