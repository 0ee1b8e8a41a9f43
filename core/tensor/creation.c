/* Creation ops (empty, zeros, ones, full, arange, rand, randn) and the
 * process-wide state of the counter-based random generator.
 *
 * The generator is Philox4x32-10 (portable/philox.h): a call drawing n
 * elements gets (seed, counter) and then advances the counter by n, which
 * covers every block the call uses for both f32 (n/4 blocks) and f64 (n/2).
 * Each backend computes element i from (seed, counter, i) alone, so the same
 * sequence of calls gives the same bits everywhere. */
#include <math.h>

#include "tensor/tensor_internal.h"

/* ---- Generator state ----
 * The state itself is the runtime's (core/runtime/rng.c), where a graph
 * capture takes its draws and a replay advances it. */

void pt_manual_seed(uint64_t seed) { pt__rng_reseed(seed); }

/* ---- Creation ---- */

/* The tensor every creation op starts from, or NULL with the error set. */
static pt_tensor *new_tensor(const char *fn, pt_device *d, pt_dtype t, int ndim,
                             const int64_t *shape) {
    if (!d) {
        pt__null_device(fn);
        return NULL;
    }
    return pt__tensor_new(fn, d, t, ndim, shape);
}

pt_tensor *pt_empty(pt_device *d, pt_dtype t, int ndim, const int64_t *shape) {
    return pt__ret(new_tensor("pt_empty", d, t, ndim, shape));
}

static pt_tensor *full(const char *fn, pt_device *d, pt_dtype t, int ndim, const int64_t *shape,
                       double value) {
    if (!d) {
        pt__null_device(fn);
        return NULL;
    }
    double v;
    if (pt__check_dtype(fn, t) || pt__scalar_for_dtype(fn, "value", value, t, &v)) return NULL;
    pt_tensor *x = pt__tensor_new(fn, d, t, ndim, shape);
    if (x && pt__fill(fn, x, v) != PT_OK) {
        pt_release(x);
        return NULL;
    }
    return pt__ret(x);
}

pt_tensor *pt_zeros(pt_device *d, pt_dtype t, int ndim, const int64_t *shape) {
    return full("pt_zeros", d, t, ndim, shape, 0.0);
}

pt_tensor *pt_ones(pt_device *d, pt_dtype t, int ndim, const int64_t *shape) {
    return full("pt_ones", d, t, ndim, shape, 1.0);
}

pt_tensor *pt_full(pt_device *d, pt_dtype t, int ndim, const int64_t *shape, double value) {
    return full("pt_full", d, t, ndim, shape, value);
}

pt_tensor *pt_arange(pt_device *d, pt_dtype t, double start, double stop, double step) {
    static const char fn[] = "pt_arange";
    if (!d) {
        pt__null_device(fn);
        return NULL;
    }
    if (pt__check_dtype(fn, t)) return NULL;
    if (!isfinite(start) || !isfinite(stop) || !isfinite(step)) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "start %g, stop %g and step %g must be finite", start,
                  stop, step);
        return NULL;
    }
    if (step == 0.0) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "step is 0 (start %g, stop %g); use a non-zero step",
                  start, stop);
        return NULL;
    }
    double span = ceil((stop - start) / step);
    if (!(span < (double)((int64_t)1 << 48))) {
        pt__error(PT_ERR_SHAPE, fn, "start %g, stop %g, step %g give %g elements, more than 2^48",
                  start, stop, step, span);
        return NULL;
    }
    int64_t count = span > 0.0 ? (int64_t)span : 0;
    if (count > 0 && !pt__is_float(t)) {
        /* Integer dtypes: both ends must be representable. */
        double v;
        if (pt__scalar_for_dtype(fn, "start", start, t, &v) ||
            pt__scalar_for_dtype(fn, "last value", start + (double)(count - 1) * step, t, &v))
            return NULL;
    }
    pt_tensor *x = pt__tensor_new(fn, d, t, 1, &count);
    if (!x || count == 0) return pt__ret(x);
    pt_op op;
    pt__op_init(&op, PT_OP_ARANGE, t, 0);
    op.scalar = start;
    op.scalar2 = step;
    pt__operand(x, &op.out);
    if (pt__execute(fn, d, &op) != PT_OK) {
        pt_release(x);
        return NULL;
    }
    return pt__ret(x);
}

static pt_tensor *random_tensor(const char *fn, pt_op_kind kind, pt_device *d, pt_dtype t,
                                int ndim, const int64_t *shape) {
    if (!d) {
        pt__null_device(fn);
        return NULL;
    }
    if (pt__check_dtype(fn, t)) return NULL;
    if (!pt__is_float(t)) {
        pt__dtype_unsupported(fn, t, PT_F32);
        return NULL;
    }
    pt_tensor *x = pt__tensor_new(fn, d, t, ndim, shape);
    if (!x) return NULL;
    int64_t n = pt__tensor_numel(x);
    if (n == 0) return pt__ret(x); /* draws nothing: the counter stays */
    pt_op op;
    pt__op_init(&op, kind, t, 0);
    op.counter = pt__rng_take((uint64_t)n, &op.seed);
    pt__operand(x, &op.out);
    if (pt__execute(fn, d, &op) != PT_OK) {
        pt_release(x);
        return NULL;
    }
    return pt__ret(x);
}

pt_tensor *pt_rand(pt_device *d, pt_dtype t, int ndim, const int64_t *shape) {
    return random_tensor("pt_rand", PT_OP_RAND_UNIFORM, d, t, ndim, shape);
}

pt_tensor *pt_randn(pt_device *d, pt_dtype t, int ndim, const int64_t *shape) {
    return random_tensor("pt_randn", PT_OP_RAND_NORMAL, d, t, ndim, shape);
}

pt_status pt__fill(const char *fn, pt_tensor *x, double value) {
    if (pt__tensor_numel(x) == 0) return PT_OK;
    pt_op op;
    pt__op_init(&op, PT_OP_FILL, x->dtype, 0);
    op.scalar = value;
    pt__operand(x, &op.out);
    /* An expanded dim is one memory location: write it once. */
    for (int i = 0; i < op.out.ndim; ++i)
        if (op.out.strides[i] == 0) op.out.shape[i] = 1;
    return pt__execute(fn, pt__dev(x), &op);
}
