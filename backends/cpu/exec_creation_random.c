/* libportable cpu backend — RAND_UNIFORM and RAND_NORMAL.
 *
 * Element i of a call is a pure function of (seed, counter, i) defined in
 * portable/philox.h, so the output is bit-identical to every other backend
 * whatever the thread split. Uniform values are taken a whole Philox block
 * at a time (4 floats or 2 doubles per block) with the same expressions as
 * the header's per-element functions, so they are bit-identical to them. */
#include "portable/philox.h"

#include "internal.h"

/* Elements [begin, end) of a uniform f32 call; begin is a multiple of 4. */
static void uniform_f32(float *o, int64_t begin, int64_t end, uint64_t seed, uint64_t counter) {
    for (int64_t i = begin; i < end; i += 4) {
        pt_philox_block b = pt_philox4x32_10(seed, counter + (uint64_t)i / 4);
        int64_t m = end - i < 4 ? end - i : 4;
        for (int64_t k = 0; k < m; ++k) o[i + k] = (float)(b.w[k] >> 8) * (1.0f / 16777216.0f);
    }
}

/* Elements [begin, end) of a uniform f64 call; begin is even. */
static void uniform_f64(double *o, int64_t begin, int64_t end, uint64_t seed, uint64_t counter) {
    for (int64_t i = begin; i < end; i += 2) {
        pt_philox_block b = pt_philox4x32_10(seed, counter + (uint64_t)i / 2);
        int64_t m = end - i < 2 ? end - i : 2;
        for (int64_t k = 0; k < m; ++k) {
            uint64_t bits = ((uint64_t)b.w[2 * k] << 32) | b.w[2 * k + 1];
            o[i + k] = (double)(bits >> 11) * (1.0 / 9007199254740992.0);
        }
    }
}

/* Normal values come in Box-Muller pairs (2k, 2k+1) sharing u1, u2 and r;
 * the expressions are the header's, so the values are its values. */
static void normal_f32(float *o, int64_t begin, int64_t end, uint64_t seed, uint64_t counter) {
    for (int64_t i = begin; i < end; i += 4) {
        pt_philox_block b = pt_philox4x32_10(seed, counter + (uint64_t)i / 4);
        int64_t m = end - i < 4 ? end - i : 4;
        for (int64_t k = 0; k < m; k += 2) {
            float u1 = (float)((b.w[k] >> 8) + 1) * (1.0f / 16777216.0f);
            float u2 = (float)(b.w[k + 1] >> 8) * (1.0f / 16777216.0f);
            float r = sqrtf(-2.0f * logf(u1));
            o[i + k] = r * cosf(2.0f * PT_PI_F * u2);
            if (k + 1 < m) o[i + k + 1] = r * sinf(2.0f * PT_PI_F * u2);
        }
    }
}

static void normal_f64(double *o, int64_t begin, int64_t end, uint64_t seed, uint64_t counter) {
    for (int64_t i = begin; i < end; i += 2) {
        pt_philox_block b = pt_philox4x32_10(seed, counter + (uint64_t)i / 2);
        uint64_t a = ((uint64_t)b.w[0] << 32) | b.w[1];
        uint64_t c = ((uint64_t)b.w[2] << 32) | b.w[3];
        double u1 = (double)((a >> 11) + 1) * (1.0 / 9007199254740992.0);
        double u2 = (double)(c >> 11) * (1.0 / 9007199254740992.0);
        double r = sqrt(-2.0 * log(u1));
        o[i] = r * cos(2.0 * PT_PI_D * u2);
        if (i + 1 < end) o[i + 1] = r * sin(2.0 * PT_PI_D * u2);
    }
}

static void rand_piece(const pt_op *op, void *o, int64_t begin, int64_t end) {
    const bool f32 = op->dtype == PT_F32;
    if (op->kind == PT_OP_RAND_UNIFORM) {
        if (f32) uniform_f32(o, begin, end, op->seed, op->counter);
        else uniform_f64(o, begin, end, op->seed, op->counter);
    } else {
        if (f32) normal_f32(o, begin, end, op->seed, op->counter);
        else normal_f64(o, begin, end, op->seed, op->counter);
    }
}

typedef struct rand_ctx {
    const pt_op *op;
    void *o;
} rand_ctx;

static void rand_range(void *ctx, int64_t begin, int64_t end) {
    const rand_ctx *c = ctx;
    rand_piece(c->op, c->o, begin, end);
}

pt_status pt_cpu_random(const pt_op *op, bool run) {
    const pt_dtype t = op->dtype;
    if (t != PT_F32 && t != PT_F64) return pt_cpu_unsupported(op, t);
    if (op->out.dtype != t) return pt_cpu_bad_op(op, "output dtype differs from the op's");
    if (op->out.ndim < 0 || op->out.ndim > PT_MAX_DIMS) return pt_cpu_bad_op(op, "bad ndim");
    if (!run) return PT_OK;
    /* The output is contiguous (backend.h), so element i is o[i]. */
    int64_t n = 1;
    for (int d = 0; d < op->out.ndim; ++d) n *= op->out.shape[d];
    rand_ctx ctx = {op, pt_cpu_base(&op->out)};
    pt_cpu_parallel_ranges(n, op->kind == PT_OP_RAND_UNIFORM ? PT_CPU_GRAIN_CHEAP / 4 : PT_CPU_GRAIN_COSTLY,
                           64, rand_range, &ctx);
    return PT_OK;
}
