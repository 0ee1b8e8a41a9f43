/* 16-bit dtypes on plugins that store them but compute an op only in f32.
 *
 * PT_F16 and PT_BF16 are storage types: every op computes in f32 and rounds
 * its result once (types.h). A plugin that has no 16-bit kernel for a kind
 * refuses it in supports(); pt__execute then calls pt__execute_widened,
 * which runs the same op in f32 on the same device, on the same queue: each
 * 16-bit input is converted into an f32 temporary by the plugin's own COPY
 * (which every plugin must offer for the 16-bit dtypes), the op runs in f32
 * into an f32 temporary, and a last COPY rounds that into the real output.
 * That is the arithmetic a 16-bit kernel computing in f32 does, with two
 * more passes over memory; plugins add native kernels where speed matters.
 *
 * Temporaries go back to the caching allocator as soon as their work is
 * queued: the device's one in-order queue runs anything that later reuses
 * the memory after this op, as for every other tensor. */
#include <string.h>

#include "portable/half.h"
#include "runtime/runtime.h"

/* Contiguous strides for shape (elements). */
static void contiguous_strides(int ndim, const int64_t *shape, int64_t *strides) {
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; --d) {
        strides[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
}

static int64_t numel_of(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= shape[d];
    return n;
}

/* A f32 twin of x in a fresh block: same shape, contiguous, except that a
 * broadcast dim (stride 0) stays broadcast with one stored element. */
static pt__block *f32_twin(const char *fn, pt_device *d, const pt_operand *x, pt_operand *twin,
                           int64_t *compact) {
    for (int k = 0; k < x->ndim; ++k) compact[k] = x->strides[k] == 0 ? 1 : x->shape[k];
    const int64_t n = numel_of(x->ndim, compact);
    pt__block *b = pt__alloc(d, (size_t)(n > 0 ? n : 1) * sizeof(float), fn);
    if (!b) return NULL;
    *twin = *x;
    twin->buf = b->buf;
    twin->offset = b->offset;
    twin->dtype = PT_F32;
    contiguous_strides(x->ndim, compact, twin->strides);
    for (int k = 0; k < x->ndim; ++k)
        if (x->strides[k] == 0) twin->strides[k] = 0;
    return b;
}

/* COPY src -> dst over src's shape with extents replaced by shape. */
static pt_status convert(const char *fn, pt_device *d, const pt_operand *src,
                         const pt_operand *dst, const int64_t *shape) {
    pt_op c;
    memset(&c, 0, sizeof c);
    c.kind = PT_OP_COPY;
    c.dtype = src->dtype;
    c.n_inputs = 1;
    c.in[0] = *src;
    c.out = *dst;
    for (int k = 0; k < src->ndim; ++k) c.in[0].shape[k] = c.out.shape[k] = shape[k];
    return pt__execute(fn, d, &c);
}

static bool same_operand(const pt_operand *a, const pt_operand *b) {
    return a->buf == b->buf && a->offset == b->offset && a->ndim == b->ndim &&
           memcmp(a->strides, b->strides, sizeof(int64_t) * (size_t)a->ndim) == 0;
}

pt_status pt__execute_widened(const char *fn, pt_device *d, const pt_op *op) {
    const pt_dtype t = op->dtype;
    pt_op w = *op;
    w.dtype = PT_F32;
    pt__block *blocks[1 + PT_OP_MAX_INPUTS] = {NULL};
    int nblocks = 0;
    pt_status s = PT_OK;
    int64_t compact[PT_MAX_DIMS];
    int aliased = -1; /* AXPY: out is in[0] */

    for (int i = 0; i < op->n_inputs && !s; ++i) {
        if (op->in[i].dtype != t) continue; /* where's condition, gather's index */
        pt__block *b = f32_twin(fn, d, &op->in[i], &w.in[i], compact);
        if (!b) return pt_last_status();
        blocks[nblocks++] = b;
        pt_operand src = op->in[i];
        pt_operand dst = w.in[i];
        contiguous_strides(op->in[i].ndim, compact, dst.strides);
        s = convert(fn, d, &src, &dst, compact);
        if (same_operand(&op->out, &op->in[i])) aliased = i;
    }

    const bool narrow_out = op->out.dtype == t;
    if (!s && narrow_out) {
        if (aliased >= 0) {
            w.out = w.in[aliased];
        } else {
            pt_operand plain = op->out;
            for (int k = 0; k < plain.ndim; ++k) plain.strides[k] = 1; /* no broadcast outputs */
            pt__block *b = f32_twin(fn, d, &plain, &w.out, compact);
            if (!b) s = pt_last_status();
            else blocks[nblocks++] = b;
        }
    }
    if (!s && narrow_out) w.out.dtype = PT_F32;
    /* FILL's value is rounded to the 16-bit type first, so the f32 fill and
     * the narrowing give that value exactly (no double rounding). */
    if (!s && op->kind == PT_OP_FILL)
        w.scalar = t == PT_F16 ? (double)pt_f16_bits_to_f32(pt_f64_to_f16_bits(op->scalar))
                               : (double)pt_bf16_bits_to_f32(pt_f64_to_bf16_bits(op->scalar));
    if (!s) {
        pt_op run = w; /* pt__execute merges dims in place; w.out keeps op's layout */
        s = pt__execute(fn, d, &run);
    }
    /* Uniform draws in [1 - u/2, 1) would round up to 1: they take the
     * largest 16-bit value below 1 instead, so [0, 1) holds. */
    if (!s && op->kind == PT_OP_RAND_UNIFORM) {
        pt_op c;
        memset(&c, 0, sizeof c);
        c.kind = PT_OP_CLAMP;
        c.dtype = PT_F32;
        c.n_inputs = 1;
        c.out = c.in[0] = w.out;
        c.scalar = 0.0;
        c.scalar2 = 1.0 - (t == PT_F16 ? 1.0 / 2048.0 : 1.0 / 256.0);
        s = pt__execute(fn, d, &c);
    }
    if (!s && narrow_out) s = convert(fn, d, &w.out, &op->out, op->out.shape);
    for (int i = 0; i < nblocks; ++i) pt__free(d, blocks[i]);
    return s;
}
