/** @file
 * libportable — tensors.
 *
 * A tensor is a reference-counted view (shape, strides, byte offset) of a
 * storage block that lives in one device's memory. Views share storage.
 * Every function returning a pt_tensor * returns a new reference owned by the
 * caller (release it with pt_release, or let an enclosing scope do it), or
 * NULL with the last error set. Tensor-valued functions given a NULL tensor
 * return NULL without touching the error, so the first error is kept.
 *
 * Operations are asynchronous on accelerators: they enqueue work on the
 * device's in-order queue and return. pt_to_host, pt_item and
 * pt_device_synchronize wait.
 *
 * Threads (docs/execution.md, "Threads"): any number of threads may read the
 * same tensor at once (use it as an op input, view it, copy it out, retain
 * and release it, record it in their own scopes); writing a tensor (in-place
 * ops, pt_copy_, requires-grad, .grad, pt_backward reaching it) while another
 * thread uses it needs the caller's own lock. Scopes and the last error are
 * per thread. */
#ifndef PORTABLE_TENSOR_H
#define PORTABLE_TENSOR_H

#include "device.h"
#include "status.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A tensor: opaque, reference counted (pt_retain, pt_release, scopes). */
typedef struct pt_tensor pt_tensor;

/** @name Creation
 * The tensor lives on d; the caller owns the returned reference. Creation is
 * queued on d's device without waiting (pt_from_data waits only until data
 * may be reused).
 *
 * Shapes, here and for every tensor an op or view makes: 0..PT_MAX_DIMS
 * dims, extents >= 0, and at most 2^48 elements counting each 0 extent as
 * 1 (so the strides of an empty tensor fit too). Anything else is
 * PT_ERR_SHAPE naming the function and the shape; a NULL device or shape
 * (with ndim > 0) is PT_ERR_INVALID_ARGUMENT, a dtype outside pt_dtype
 * PT_ERR_DTYPE. docs/api-notes.md explains the limit. */
/** @{ */

/** Uninitialised contents. ndim 0 makes a scalar (shape may be NULL). */
PT_API pt_tensor *pt_empty(pt_device *d, pt_dtype t, int ndim, const int64_t *shape);
/** Filled with 0. */
PT_API pt_tensor *pt_zeros(pt_device *d, pt_dtype t, int ndim, const int64_t *shape);
/** Filled with 1. */
PT_API pt_tensor *pt_ones(pt_device *d, pt_dtype t, int ndim, const int64_t *shape);
/** Filled with value (finite and in range for an integer dtype, else
 * PT_ERR_INVALID_ARGUMENT). */
PT_API pt_tensor *pt_full(pt_device *d, pt_dtype t, int ndim, const int64_t *shape, double value);
/** 1-D: start, start+step, ... while < stop (> stop for negative step). */
PT_API pt_tensor *pt_arange(pt_device *d, pt_dtype t, double start, double stop, double step);
/** U[0,1) from the Philox4x32-10 counter-based generator: for the same seed
 * and sequence of calls every backend gives the same bits. Float dtypes only:
 * f32, f64, and f16/bf16 (drawn in f32, rounded once); PT_ERR_DTYPE
 * otherwise. */
PT_API pt_tensor *pt_rand(pt_device *d, pt_dtype t, int ndim, const int64_t *shape);
/** N(0,1) from the same generator as pt_rand (the same on every backend within
 * rounding of log/sin/cos). Float dtypes only. */
PT_API pt_tensor *pt_randn(pt_device *d, pt_dtype t, int ndim, const int64_t *shape);
/** Resets the generator: seed and counter (process-wide). */
PT_API void pt_manual_seed(uint64_t seed);
/** Copies numel * dtype-size bytes of C-ordered host data onto d (waits until
 * data may be reused). PT_F16 / PT_BF16 data are uint16_t bit patterns:
 * convert floats with pt_f32_to_f16 / pt_f32_to_bf16 below. */
PT_API pt_tensor *pt_from_data(pt_device *d, pt_dtype t, int ndim, const int64_t *shape,
                               const void *data);

/** Host buffers to and from 16-bit storage (n elements; src and dst must not
 * overlap). To 16 bits rounds to nearest even, overflows to +-inf and keeps
 * NaN; from 16 bits is exact. Per element: portable/half.h. Each returns
 * PT_ERR_INVALID_ARGUMENT for a NULL src or dst with n > 0 (nothing
 * written), else PT_OK. */
PT_API pt_status pt_f32_to_f16(const float *src, uint16_t *dst, size_t n);
/** n f16 bit patterns to floats (exact); errors as pt_f32_to_f16's. */
PT_API pt_status pt_f16_to_f32(const uint16_t *src, float *dst, size_t n);
/** n floats to bf16 bit patterns (round to nearest even); errors as
 * pt_f32_to_f16's. */
PT_API pt_status pt_f32_to_bf16(const float *src, uint16_t *dst, size_t n);
/** n bf16 bit patterns to floats (exact); errors as pt_f32_to_f16's. */
PT_API pt_status pt_bf16_to_f32(const uint16_t *src, float *dst, size_t n);

/** @} */
/** @name Reading back */
/** @{ */

/** Waits for x's device and copies x (C order, contiguous) into dst (f16 and
 * bf16 as uint16_t bits; pt_item converts them to double).
 * PT_ERR_INVALID_ARGUMENT if dst_bytes < numel * dtype size. */
PT_API pt_status pt_to_host(const pt_tensor *x, void *dst, size_t dst_bytes);
/** The single element of x (any shape with numel 1) as a double; waits.
 * NAN + error otherwise. */
PT_API double pt_item(const pt_tensor *x);

/** @} */
/** @name Moving between devices */
/** @{ */

/** Copy of x on d. If x already lives on d, returns x itself with its
 * reference count raised (like `Z.cuda(1) is Z`). Waits for the copy. */
PT_API pt_tensor *pt_to(pt_tensor *x, pt_device *d);
/** Like pt_to but does not wait: the copy is queued on x's device. A copy to
 * the cpu lands in pinned (page-locked) memory where the backend has it, and
 * is valid after pt_device_synchronize() of x's device. */
PT_API pt_tensor *pt_to_async(pt_tensor *x, pt_device *d);

/** @} */
/** @name Properties
 * None of these waits; a NULL x gives NULL, -1 or false as said. */
/** @{ */

/** The device x lives on (owned by the library); NULL for NULL x. */
PT_API pt_device *pt_tensor_device(const pt_tensor *x);
/** x's dtype; -1 (no pt_dtype) for NULL x. */
PT_API pt_dtype pt_tensor_dtype(const pt_tensor *x);
/** Number of dims (0 for a scalar); -1 for NULL x. */
PT_API int pt_tensor_ndim(const pt_tensor *x);
/** Valid while x lives; ndim entries. */
PT_API const int64_t *pt_tensor_shape(const pt_tensor *x);
/** Strides in elements, ndim entries; valid while x lives. */
PT_API const int64_t *pt_tensor_strides(const pt_tensor *x);
/** Number of elements (1 for a scalar, 0 when an extent is 0); -1 for NULL x. */
PT_API int64_t pt_tensor_numel(const pt_tensor *x);
/** Whether x's elements are dense in C order (views may not be); false for
 * NULL x. */
PT_API bool pt_tensor_is_contiguous(const pt_tensor *x);
/** Whether two tensors share one storage block (views of each other). */
PT_API bool pt_tensor_shares_storage(const pt_tensor *a, const pt_tensor *b);
/** Writes "f32[2, 3] on cpu:0" into buf (always NUL-terminated); returns buf. */
PT_API char *pt_tensor_describe(const pt_tensor *x, char *buf, size_t cap);

/** @} */
/** @name Interop
 * For libraries that hand tensor memory to others (MPI, NCCL). */
/** @{ */
/** The backend's handle of x's storage and x's offset in it, in bytes:
 * a host pointer for a host-visible device (cpu; x's first element is at
 * (char *)*buffer + *offset), a CUDA device pointer for cuda, a cl_mem for
 * opencl (buffers there have no pointer arithmetic, hence the offset). The
 * handle is valid while x (or a view of its storage) lives. Does not wait:
 * call pt_device_synchronize(pt_tensor_device(x)) before reading or writing
 * the memory behind it outside the library, and mind x's strides
 * (pt_tensor_is_contiguous). Errors: PT_ERR_INVALID_ARGUMENT for NULL x or
 * outputs. A cpu tensor made by pt_to_async from an accelerator is written by
 * that accelerator: synchronize the accelerator too. */
PT_API pt_status pt_tensor_storage(const pt_tensor *x, void **buffer, size_t *offset_bytes);

/** @} */
/** @name Lifetime */
/** @{ */

/** Adds a reference (the caller releases it). */
PT_API pt_tensor *pt_retain(pt_tensor *x);
/** Drops one reference; frees the tensor (and its storage when no view
 * remains) at zero. NULL is fine. Inside a scope of this thread that
 * recorded x, the scope's reference is the one given back (so releasing an
 * op's result early is safe, and a tensor shared with another thread stays
 * alive for it). Consequently a pt_retain of such a tensor is balanced by a
 * pt_release after that scope ends, or by pt_keep: released inside the
 * scope, it releases the scope's reference and the retained one stays. */
PT_API void pt_release(pt_tensor *x);

/** Scopes release temporaries: every tensor reference returned to this thread
 * after pt_scope_begin is released by the matching pt_scope_end, except those
 * passed to pt_keep. Scopes are per thread and nest; end them in reverse
 * order. Ending a scope ends the scopes still open inside it, and their
 * handles are stale from then on. */
typedef struct pt_scope {
    int level;                   /**< nesting depth, 1 for the outermost */
    uint64_t id;                 /**< unique to this begin; 0 if it failed */
} pt_scope;
/** {0, 0} with the error set when scopes already nest 64 deep or out of memory. */
PT_API pt_scope pt_scope_begin(void);
/** Ends s and the scopes inside it. A handle that is not open on this thread
 * (already ended, begun on another thread, or from a failed begin) is
 * PT_ERR_INVALID_ARGUMENT naming both handles, and nothing is released. */
PT_API pt_status pt_scope_end(pt_scope s);
/** Hands x from the innermost scope to the enclosing one (or to the caller
 * when there is none). Returns x. */
PT_API pt_tensor *pt_keep(pt_tensor *x);

/** @} */
#ifdef __cplusplus
}
#endif
#endif
