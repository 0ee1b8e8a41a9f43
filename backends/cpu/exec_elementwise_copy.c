/* libportable cpu backend — COPY: strided copy with conversion between any
 * two dtypes (pt_contiguous, pt_cast, pt_copy_, pt_cat, expand).
 *
 * Same-dtype copies move bit patterns (one kernel per element size,
 * memcpy for contiguous rows); float to integer conversions follow
 * portable/numeric_rules.h. */
#include <string.h>

#include "internal.h"
#include "portable/half.h"
#include "vecmath.h"

/* ---- Conversions: cv_<from>_<to>(x) ---- */

#define PT_CPU_CV(FROM, TF, TO, TT, EXPR) \
    static inline TT cv_##FROM##_##TO(TF x) { return (EXPR); }

PT_CPU_CV(f32, float, f64, double, (double)x)
PT_CPU_CV(f32, float, i32, int32_t, pt_sat_i32_f32(x))
PT_CPU_CV(f32, float, i64, int64_t, pt_sat_i64_f32(x))
PT_CPU_CV(f32, float, u8, uint8_t, pt_wrap_u8_f32(x))
PT_CPU_CV(f64, double, f32, float, (float)x)
PT_CPU_CV(f64, double, i32, int32_t, pt_sat_i32_f64(x))
PT_CPU_CV(f64, double, i64, int64_t, pt_sat_i64_f64(x))
PT_CPU_CV(f64, double, u8, uint8_t, pt_wrap_u8_f64(x))
PT_CPU_CV(i32, int32_t, f32, float, (float)x)
PT_CPU_CV(i32, int32_t, f64, double, (double)x)
PT_CPU_CV(i32, int32_t, i64, int64_t, (int64_t)x)
PT_CPU_CV(i32, int32_t, u8, uint8_t, (uint8_t)x)
PT_CPU_CV(i64, int64_t, f32, float, (float)x)
PT_CPU_CV(i64, int64_t, f64, double, (double)x)
PT_CPU_CV(i64, int64_t, i32, int32_t, (int32_t)(uint32_t)x) /* wraps */
PT_CPU_CV(i64, int64_t, u8, uint8_t, (uint8_t)x)
PT_CPU_CV(u8, uint8_t, f32, float, (float)x)
PT_CPU_CV(u8, uint8_t, f64, double, (double)x)
PT_CPU_CV(u8, uint8_t, i32, int32_t, (int32_t)x)
PT_CPU_CV(u8, uint8_t, i64, int64_t, (int64_t)x)

/* 16-bit storage (portable/half.h): from 16 bits exactly to float, then as
 * from f32; to 16 bits rounded once to nearest even (doubles and integers
 * through the double routine, which rounds to odd first). */
/* Every conversion out of one 16-bit type S (DECODE: its bits to float);
 * OTHER is the other 16-bit type and ENCODE_OTHER rounds a float to it. */
#define PT_CPU_CV_FROM_16(S, DECODE, OTHER, ENCODE_OTHER)                     \
    PT_CPU_CV(S, uint16_t, f32, float, DECODE(x))                             \
    PT_CPU_CV(S, uint16_t, f64, double, (double)DECODE(x))                    \
    PT_CPU_CV(S, uint16_t, i32, int32_t, pt_sat_i32_f32(DECODE(x)))           \
    PT_CPU_CV(S, uint16_t, i64, int64_t, pt_sat_i64_f32(DECODE(x)))           \
    PT_CPU_CV(S, uint16_t, u8, uint8_t, pt_wrap_u8_f32(DECODE(x)))            \
    PT_CPU_CV(S, uint16_t, OTHER, uint16_t, ENCODE_OTHER(DECODE(x)))
PT_CPU_CV_FROM_16(f16, pt_f16_bits_to_f32, bf16, pt_f32_to_bf16_bits)
PT_CPU_CV_FROM_16(bf16, pt_bf16_bits_to_f32, f16, pt_f32_to_f16_bits)
PT_CPU_CV(f32, float, f16, uint16_t, pt_f32_to_f16_bits(x))
PT_CPU_CV(f32, float, bf16, uint16_t, pt_f32_to_bf16_bits(x))
PT_CPU_CV(f64, double, f16, uint16_t, pt_f64_to_f16_bits(x))
PT_CPU_CV(f64, double, bf16, uint16_t, pt_f64_to_bf16_bits(x))
PT_CPU_CV(i32, int32_t, f16, uint16_t, pt_f64_to_f16_bits((double)x))
PT_CPU_CV(i32, int32_t, bf16, uint16_t, pt_f64_to_bf16_bits((double)x))
PT_CPU_CV(i64, int64_t, f16, uint16_t, pt_f64_to_f16_bits((double)x))
PT_CPU_CV(i64, int64_t, bf16, uint16_t, pt_f64_to_bf16_bits((double)x))
PT_CPU_CV(u8, uint8_t, f16, uint16_t, pt_f32_to_f16_bits((float)x))
PT_CPU_CV(u8, uint8_t, bf16, uint16_t, pt_f32_to_bf16_bits((float)x))

/* ---- Row kernels ---- */

#define PT_CPU_CONVERT_ROW(FROM, TF, TO, TT)                                                   \
    static void copy_##FROM##_##TO##_row(int64_t n, char *const *p, const int64_t *st,         \
                                         const pt_cpu_scalar *scp) {                           \
        (void)scp;                                                                            \
        TT *o = (TT *)p[0];                                                                   \
        const TF *a = (const TF *)p[1];                                                       \
        const int64_t so = st[0], sa = st[1];                                                 \
        if (so == 1 && sa == 1) {                                                             \
            _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) o[i] = cv_##FROM##_##TO(a[i]); \
        } else {                                                                              \
            for (int64_t i = 0; i < n; ++i) o[i * so] = cv_##FROM##_##TO(a[i * sa]);          \
        }                                                                                     \
    }

/* Bit copies. A broadcast input (stride 0) is a fill of its one value. */
#define PT_CPU_BITS_ROW(NAME, T)                                                               \
    static void NAME(int64_t n, char *const *p, const int64_t *st, const pt_cpu_scalar *scp) { \
        (void)scp;                                                                            \
        T *o = (T *)p[0];                                                                     \
        const T *a = (const T *)p[1];                                                         \
        const int64_t so = st[0], sa = st[1];                                                 \
        if (so == 1 && sa == 1) {                                                             \
            memmove(o, a, (size_t)n * sizeof(T));                                             \
        } else if (so == 1 && sa == 0) {                                                      \
            const T v = a[0];                                                                 \
            _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) o[i] = v;                     \
        } else {                                                                              \
            for (int64_t i = 0; i < n; ++i) o[i * so] = a[i * sa];                            \
        }                                                                                     \
    }

PT_CPU_BITS_ROW(copy_bits1_row, uint8_t)
PT_CPU_BITS_ROW(copy_bits2_row, uint16_t)
PT_CPU_BITS_ROW(copy_bits4_row, uint32_t)
PT_CPU_BITS_ROW(copy_bits8_row, uint64_t)

#define PT_CPU_CONVERT_FROM(FROM, TF)                                                          \
    PT_CPU_CONVERT_ROW(FROM, TF, f32, float)                                                  \
    PT_CPU_CONVERT_ROW(FROM, TF, f64, double)                                                 \
    PT_CPU_CONVERT_ROW(FROM, TF, i32, int32_t)                                                \
    PT_CPU_CONVERT_ROW(FROM, TF, i64, int64_t)                                                \
    PT_CPU_CONVERT_ROW(FROM, TF, u8, uint8_t)                                                 \
    PT_CPU_CONVERT_ROW(FROM, TF, f16, uint16_t)                                               \
    PT_CPU_CONVERT_ROW(FROM, TF, bf16, uint16_t)

/* The same-dtype rows these generate are unused (bit copies serve them) but
 * keep the macro uniform; the identity conversions they need: */
static inline float cv_f32_f32(float x) { return x; }
static inline double cv_f64_f64(double x) { return x; }
static inline int32_t cv_i32_i32(int32_t x) { return x; }
static inline int64_t cv_i64_i64(int64_t x) { return x; }
static inline uint8_t cv_u8_u8(uint8_t x) { return x; }
static inline uint16_t cv_f16_f16(uint16_t x) { return x; }
static inline uint16_t cv_bf16_bf16(uint16_t x) { return x; }

PT_CPU_CONVERT_FROM(f32, float)
PT_CPU_CONVERT_FROM(f64, double)
PT_CPU_CONVERT_FROM(i32, int32_t)
PT_CPU_CONVERT_FROM(i64, int64_t)
PT_CPU_CONVERT_FROM(u8, uint8_t)
PT_CPU_CONVERT_FROM(f16, uint16_t)
PT_CPU_CONVERT_FROM(bf16, uint16_t)

#define PT_CPU_TO_ALL(FROM)                                                                    \
    {[PT_F32] = copy_##FROM##_f32_row, [PT_F64] = copy_##FROM##_f64_row,                       \
     [PT_I32] = copy_##FROM##_i32_row, [PT_I64] = copy_##FROM##_i64_row,                       \
     [PT_U8] = copy_##FROM##_u8_row, [PT_F16] = copy_##FROM##_f16_row,                         \
     [PT_BF16] = copy_##FROM##_bf16_row}

/* [from][to]; the diagonal is replaced by bit copies below. */
static const pt_cpu_row_fn convert_rows[PT_DTYPE_COUNT][PT_DTYPE_COUNT] = {
    [PT_F32] = PT_CPU_TO_ALL(f32), [PT_F64] = PT_CPU_TO_ALL(f64), [PT_I32] = PT_CPU_TO_ALL(i32),
    [PT_I64] = PT_CPU_TO_ALL(i64), [PT_U8] = PT_CPU_TO_ALL(u8), [PT_F16] = PT_CPU_TO_ALL(f16),
    [PT_BF16] = PT_CPU_TO_ALL(bf16),
};

/* f32 <-> f16 and f32 -> i32 through the vecmath level's conversions (F16C
 * and AVX2 where the CPU has them) when both sides are contiguous: the same
 * bits as the scalar rows. */
static void copy_f32_f16_row_vm(int64_t n, char *const *p, const int64_t *st, const pt_cpu_scalar *scp) {
    if (st[0] == 1 && st[1] == 1) pt_cpu_vm.to_f16(n, (uint16_t *)p[0], (const float *)p[1]);
    else copy_f32_f16_row(n, p, st, scp);
}
static void copy_f16_f32_row_vm(int64_t n, char *const *p, const int64_t *st, const pt_cpu_scalar *scp) {
    if (st[0] == 1 && st[1] == 1) pt_cpu_vm.from_f16(n, (float *)p[0], (const uint16_t *)p[1]);
    else copy_f16_f32_row(n, p, st, scp);
}
static void copy_f32_i32_row_vm(int64_t n, char *const *p, const int64_t *st, const pt_cpu_scalar *scp) {
    if (st[0] == 1 && st[1] == 1) pt_cpu_vm.f32_to_i32(n, (int32_t *)p[0], (const float *)p[1]);
    else copy_f32_i32_row(n, p, st, scp);
}

pt_status pt_cpu_copy_row(const pt_op *op, pt_cpu_row_fn *row) {
    if (op->n_inputs != 1) return pt_cpu_bad_op(op, "copy takes one input");
    const pt_operand *in = &op->in[0];
    if (in->ndim != op->out.ndim) return pt_cpu_bad_op(op, "input ndim differs from output's");
    for (int d = 0; d < in->ndim; ++d)
        if (in->shape[d] != op->out.shape[d])
            return pt_cpu_bad_op(op, "input shape differs from output's");
    const pt_dtype from = in->dtype, to = op->out.dtype;
    if ((unsigned)from >= PT_DTYPE_COUNT) return pt_cpu_unsupported(op, from);
    if ((unsigned)to >= PT_DTYPE_COUNT) return pt_cpu_unsupported(op, to);
    pt_cpu_row_fn fn = convert_rows[from][to];
    if (from == PT_F32 && to == PT_F16) fn = copy_f32_f16_row_vm;
    if (from == PT_F16 && to == PT_F32) fn = copy_f16_f32_row_vm;
    if (from == PT_F32 && to == PT_I32) fn = copy_f32_i32_row_vm;
    if (from == to) {
        size_t es = pt_dtype_table_size(from);
        fn = es == 1 ? copy_bits1_row : es == 2 ? copy_bits2_row : es == 4 ? copy_bits4_row : copy_bits8_row;
    }
    *row = fn;
    return PT_OK;
}

pt_status pt_cpu_copy(const pt_op *op, bool run) {
    pt_cpu_row_fn fn = NULL;
    pt_status s = pt_cpu_copy_row(op, &fn);
    if (s != PT_OK || !run) return s;
    pt_cpu_iter it;
    pt_cpu_iter_init(&it, &op->out, 1, &op->in[0]);
    pt_cpu_iter_run(&it, fn, NULL, PT_CPU_GRAIN_CHEAP);
    return PT_OK;
}
