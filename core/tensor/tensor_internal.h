/* libportable core, tensor layer: tensors and their storage, scopes,
 * creation, transfers, dtype rules and operand layout (broadcasting and the
 * dimension merging every element-wise op goes through). Includes only the
 * runtime layer below it. Nothing here is exported; names are pt__*. */
#ifndef PORTABLE_CORE_TENSOR_INTERNAL_H
#define PORTABLE_CORE_TENSOR_INTERNAL_H

#include "portable/tensor.h"
#include "runtime/runtime.h"

/* ---- Tensors (tensor.c) ---- */

typedef enum pt__storage_kind {
    PT__STORAGE_DEVICE,          /* from the device's caching allocator */
    PT__STORAGE_PINNED,          /* host memory from pinned_owner's host_alloc (cpu tensors) */
    PT__STORAGE_EXTERNAL         /* somebody else's memory (a DLPack import): release(ctx)
                                    gives it back */
} pt__storage_kind;

typedef struct pt__storage {
    atomic_int refs;
    pt_device *dev;
    pt__storage_kind kind;
    pt__block *block;            /* PT__STORAGE_DEVICE */
    void *buf;                   /* handle passed to the backend (block->buf or the host ptr) */
    size_t bytes;
    pt_device *pinned_owner;     /* PT__STORAGE_PINNED: whose host_free to call */
    void *record;                /* the allocation holding this record: itself, or the
                                    handle it was born with (one malloc per new tensor) */
    void (*release)(void *ctx);  /* PT__STORAGE_EXTERNAL: called once, after the device
                                    finished with the memory */
    void *release_ctx;
} pt__storage;

struct pt__grad_meta;            /* autograd state, owned by the tape (core/ops/tape.h) */

/* Frees x's autograd state when x dies (tensor.c defines it). The tape sets
 * it when the library loads (a constructor), so this layer never calls
 * upwards by name. */
extern void (*pt__grad_release_hook)(pt_tensor *x);

struct pt_tensor {
    atomic_int refs;
    atomic_int scope_regs;       /* references held by scope records, of any thread (a
                                    tensor shared across threads can be recorded in
                                    several threads' scopes: pt_contiguous and the like
                                    return it retained) */
    pt__storage *st;
    size_t offset;               /* bytes from st->buf to element [0, ..., 0] */
    pt_dtype dtype;
    int ndim;
    int64_t shape[PT_MAX_DIMS];
    int64_t strides[PT_MAX_DIMS]; /* elements */
    struct pt__grad_meta *grad;  /* NULL unless autograd touched it */
};

/* A new contiguous tensor with fresh storage on d (contents undefined).
 * Validates ndim/shape and names fn in errors. Not registered in a scope. */
pt_tensor *pt__tensor_new(const char *fn, pt_device *d, pt_dtype t, int ndim,
                          const int64_t *shape);
/* A new view of x's storage (retains the storage). strides in elements,
 * offset in bytes from the storage start. Not registered in a scope. */
pt_tensor *pt__tensor_view(pt_tensor *x, int ndim, const int64_t *shape, const int64_t *strides,
                           size_t offset);
/* A tensor over pinned host memory owned by owner (for pt_to_async to cpu). */
pt_tensor *pt__tensor_pinned(const char *fn, pt_device *cpu, pt_device *owner, pt_dtype t,
                             int ndim, const int64_t *shape);
/* A tensor over memory the library does not own (a DLPack import): buf is
 * what the backend takes as a buffer handle (a host pointer on the cpu),
 * bytes its extent, offset/strides the view inside it. release(ctx) runs
 * once, when the last view of it is gone. NULL on failure (out of host
 * memory), and then release is not called: the memory is still the
 * caller's. */
pt_tensor *pt__tensor_external(const char *fn, pt_device *d, pt_dtype t, int ndim,
                               const int64_t *shape, const int64_t *strides, size_t offset,
                               void *buf, size_t bytes, void (*release)(void *ctx), void *ctx);
/* Registers a reference being returned to the user in the innermost scope of
 * this thread (if any). Every public function returning a new reference ends
 * with `return pt__ret(x);`. NULL passes through. */
pt_tensor *pt__ret(pt_tensor *x);
/* Drops a reference the library holds itself (taken with pt_retain or made
 * by an internal, unregistered constructor), never a scope's record. */
void pt__drop(pt_tensor *x);
/* Contiguous strides for shape. */
void pt__contiguous_strides(int ndim, const int64_t *shape, int64_t *strides);
int64_t pt__numel(int ndim, const int64_t *shape);
bool pt__is_contiguous(const pt_tensor *x);
/* Whether x is a fresh result nobody else can reach: one reference, which
 * one scope holds; contiguous, in device-allocator storage that no other
 * tensor shares but dying, if given: a tensor with one reference and no
 * scope's, which its holder drops before anything writes x. Such a tensor
 * can be kept instead of copied (autograd makes it a leaf's .grad) and
 * written in place later without anyone seeing the writes. */
bool pt__tensor_is_private_result(const pt_tensor *x, const pt_tensor *dying);
/* The most elements a shape may have: 2^48. The limit is on the shape's
 * span, the product of its extents with 0 counted as 1, so that the
 * contiguous strides of an empty tensor fit too; it holds for every tensor,
 * views (pt_expand, pt_reshape) included, so numel, strides, byte offsets
 * (x 8 bytes) and every op's loop counts fit in int64 without checks.
 * docs/api-notes.md explains the choice. */
#define PT__MAX_ELEMENTS ((int64_t)1 << 48)
/* Validates a shape: 0 <= ndim <= PT_MAX_DIMS, every extent >= 0, the span
 * at most PT__MAX_ELEMENTS. PT_ERR_SHAPE naming fn and the shape. */
pt_status pt__check_shape(const char *fn, int ndim, const int64_t *shape);
/* Whether extents (all >= 0) have a span of at most PT__MAX_ELEMENTS. */
bool pt__span_fits(int ndim, const int64_t *shape);
/* PT_ERR_SHAPE "fn: shape [..] has more than 2^48 elements ..." (or the
 * empty-shape wording): for a shape pt__span_fits refused. */
pt_status pt__shape_too_large(const char *fn, int ndim, const int64_t *shape);
pt_status pt__check_dtype(const char *fn, pt_dtype t);
/* Same device for all n tensors, else PT_ERR_DEVICE_MISMATCH naming both
 * devices and the fix. */
pt_status pt__check_same_device(const char *fn, int n, pt_tensor *const *xs);
/* Resolves a possibly negative dim against ndim; error names fn and values. */
pt_status pt__resolve_dim(const char *fn, int dim, int ndim, int *out);


/* While this thread captures a graph: the storage an operand is made of
 * stays with the graph when it existed before the capture (one reference,
 * dropped by pt_graph_free), so releasing its tensors cannot leave the
 * replays writing into memory handed to someone else. pt__operand and
 * pt__operand_broadcast call it. */
void pt__storage_capture_keep(pt__storage *st);

/* Fills an operand describing x as it is. */
void pt__operand(const pt_tensor *x, pt_operand *out);
/* Fills an operand describing x broadcast to (ndim, shape): missing leading
 * dims and size-1 dims get stride 0. Caller checked broadcastability. */
void pt__operand_broadcast(const pt_tensor *x, int ndim, const int64_t *shape, pt_operand *out);
/* Describes contiguous x as a contiguous operand of another shape with the
 * same element count (a reduction's [outer, inner], a GEMM's [B, M, N]). */
void pt__operand_packed(const pt_tensor *x, int ndim, const int64_t *shape, pt_operand *o);
/* Host pointer of a host-visible buffer (cpu backend) plus offset. */
void *pt__host_ptr(const pt_tensor *x);

/* ---- Transfers (transfer.c) ---- */

/* pt_to / pt_to_async with fn naming the caller in errors: x itself
 * (retained) when already on d, else a contiguous copy on d; async as
 * pt_to_async. A reference registered like a public result. pt_copy_
 * (ops) moves a source on another device through it. */
pt_tensor *pt__move(const char *fn, pt_tensor *x, pt_device *d, bool async);
/* pt_copy_ from a host-visible device to an accelerator in one upload,
 * straight into dst, where that is the whole copy: both contiguous, the
 * same dtype and shape (a training loop's batch written into the input a
 * graph reads in place: no staging tensor, no copy kernel). *done says
 * whether it applied; when not, nothing happened. */
pt_status pt__copy_into_accelerator(const char *fn, pt_tensor *dst, pt_tensor *src, bool *done);




/* Room for a formatted shape "[a, b, ...]" of PT_MAX_DIMS int64 extents. */
#define PT__SHAPE_STR_CAP 200

static inline pt_device *pt__dev(const pt_tensor *x) { return x->st->dev; }
static inline bool pt__is_float(pt_dtype t) { return pt_dtype_is_float(t); }
static inline int64_t pt__tensor_numel(const pt_tensor *x) { return pt__numel(x->ndim, x->shape); }
static inline bool pt__host_visible(const pt_device *d) { return d->backend->host_visible; }

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
    for (int i = 0; i < 6; ++i) op->window[i] = 0;
    op->kernel[0] = op->kernel[1] = 0;
    op->flags = 0;
    op->n_extra = 0; /* extra[] unused: nothing reads past n_extra */
}

/* ---- dtype rules (layout.c) ---- */

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
/* A NULL tensor input of a tensor-returning function: keeps the pending
 * error (the input came from a call that failed), or sets
 * PT_ERR_INVALID_ARGUMENT naming fn and what. Returns NULL. */
pt_tensor *pt__null_input(const char *fn, const char *what);

/* ---- Shapes and operands (layout.c) ---- */

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

/* ---- Raw ops the layers above share (new reference, no scope, no autograd) ---- */

/* A new contiguous tensor of dtype t and shape (ndim, shape) on x's device,
 * filled with x broadcast to that shape and converted (one COPY op).
 * layout.c */
pt_tensor *pt__copy_new(const char *fn, pt_tensor *x, pt_dtype t, int ndim, const int64_t *shape);
/* FILL op over x's elements with a value already checked by
 * pt__scalar_for_dtype. creation.c */
pt_status pt__fill(const char *fn, pt_tensor *x, double value);
#endif
