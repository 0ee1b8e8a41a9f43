/* libportable cpu backend — FILL (any output strides) and ARANGE.
 *
 * FILL's value is converted once to the output dtype (the conversions in
 * internal.h: floats to integers saturate to i32/i64, wrap to u8).
 * ARANGE computes start + i * step per element rather than accumulating, so
 * long ranges do not drift; integer ranges with integral start and step are
 * computed in (wrapping) 64-bit integer arithmetic, exact beyond 2^53. */
#include <math.h>

#include "internal.h"
#include "portable/half.h"

#define PT_CPU_FILL_ROW(S, T)                                                                  \
    static void fill_##S##_row(int64_t n, char *const *p, const int64_t *st,                   \
                               const pt_cpu_scalar *scp) {                                     \
        T *o = (T *)p[0];                                                                     \
        const T v = scp->S;                                                                   \
        const int64_t so = st[0];                                                             \
        if (so == 1) {                                                                        \
            _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) o[i] = v;                     \
        } else {                                                                              \
            for (int64_t i = 0; i < n; ++i) o[i * so] = v;                                    \
        }                                                                                     \
    }

PT_CPU_FILL_ROW(f32, float)
PT_CPU_FILL_ROW(f64, double)
PT_CPU_FILL_ROW(i32, int32_t)
PT_CPU_FILL_ROW(i64, int64_t)
PT_CPU_FILL_ROW(u8, uint8_t)
PT_CPU_FILL_ROW(f16, uint16_t)
PT_CPU_FILL_ROW(bf16, uint16_t)

static const pt_cpu_row_fn fill_rows[PT_DTYPE_COUNT] = {
    [PT_F32] = fill_f32_row, [PT_F64] = fill_f64_row, [PT_I32] = fill_i32_row,
    [PT_I64] = fill_i64_row, [PT_U8] = fill_u8_row, [PT_F16] = fill_f16_row,
    [PT_BF16] = fill_bf16_row,
};

static pt_status fill(const pt_op *op, bool run) {
    const pt_dtype t = op->out.dtype;
    if ((unsigned)t >= PT_DTYPE_COUNT || !fill_rows[t]) return pt_cpu_unsupported(op, t);
    if (op->out.ndim < 0 || op->out.ndim > PT_MAX_DIMS) return pt_cpu_bad_op(op, "bad ndim");
    if (!run) return PT_OK;
    pt_cpu_scalar sc;
    pt_cpu_scalar_from_double(op->scalar, &sc);
    pt_cpu_iter it;
    pt_cpu_iter_init(&it, &op->out, 0, NULL);
    pt_cpu_iter_run(&it, fill_rows[t], &sc, PT_CPU_GRAIN_CHEAP);
    return PT_OK;
}

/* Integral start/step that fit int64: the exact integer path applies. */
static bool is_int64_value(double v) {
    return v == floor(v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0;
}

/* Element begin + i of the range; o points at element begin. The value
 * depends only on the element index, never on how the range was split. */
#define PT_CPU_ARANGE_FLOAT(T)                                                                 \
    for (int64_t i = 0; i < n; ++i) ((T *)o)[i * so] = (T)(start + (double)(begin + i) * step);
#define PT_CPU_ARANGE_INT(T, CONV)                                                             \
    if (exact) {                                                                              \
        for (int64_t i = 0; i < n; ++i)                                                       \
            ((T *)o)[i * so] = (T)(istart + (uint64_t)(begin + i) * istep);                   \
    } else {                                                                                  \
        for (int64_t i = 0; i < n; ++i)                                                       \
            ((T *)o)[i * so] = CONV(start + (double)(begin + i) * step);                      \
    }

/* 16-bit storage: the double value rounded once. */
#define PT_CPU_ARANGE_HALF(CONV)                                                               \
    for (int64_t i = 0; i < n; ++i) ((uint16_t *)o)[i * so] = CONV(start + (double)(begin + i) * step);

/* Writes elements [begin, begin + n) of the range. */
static void arange_piece(pt_dtype t, char *o, int64_t so, int64_t begin, int64_t n, double start,
                         double step) {
    o += begin * so * (int64_t)pt_dtype_table_size(t);
    const bool exact = is_int64_value(start) && is_int64_value(step);
    const uint64_t istart = exact ? (uint64_t)(int64_t)start : 0;
    const uint64_t istep = exact ? (uint64_t)(int64_t)step : 0;
    switch (t) {
    case PT_F32: PT_CPU_ARANGE_FLOAT(float) break;
    case PT_F64: PT_CPU_ARANGE_FLOAT(double) break;
    case PT_I32: PT_CPU_ARANGE_INT(int32_t, pt_sat_i32_f64) break;
    case PT_I64: PT_CPU_ARANGE_INT(int64_t, pt_sat_i64_f64) break;
    case PT_U8: PT_CPU_ARANGE_INT(uint8_t, pt_wrap_u8_f64) break;
    case PT_F16: PT_CPU_ARANGE_HALF(pt_f64_to_f16_bits) break;
    case PT_BF16: PT_CPU_ARANGE_HALF(pt_f64_to_bf16_bits) break;
    default: break;
    }
}

typedef struct arange_ctx {
    pt_dtype t;
    char *o;
    int64_t so;
    double start, step;
} arange_ctx;

static void arange_range(void *ctx, int64_t begin, int64_t end) {
    const arange_ctx *c = ctx;
    arange_piece(c->t, c->o, c->so, begin, end - begin, c->start, c->step);
}

static pt_status arange(const pt_op *op, bool run) {
    const pt_dtype t = op->out.dtype;
    if ((unsigned)t >= PT_DTYPE_COUNT) return pt_cpu_unsupported(op, t);
    if (op->out.ndim != 1) return pt_cpu_bad_op(op, "arange output must be 1-D");
    if (!run) return PT_OK;
    arange_ctx ctx = {t, pt_cpu_base(&op->out), op->out.strides[0], op->scalar, op->scalar2};
    pt_cpu_parallel_ranges(op->out.shape[0], PT_CPU_GRAIN_CHEAP, 64, arange_range, &ctx);
    return PT_OK;
}

pt_status pt_cpu_creation(const pt_op *op, bool run) {
    return op->kind == PT_OP_FILL ? fill(op, run) : arange(op, run);
}
