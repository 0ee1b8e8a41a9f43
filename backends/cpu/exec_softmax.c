/* libportable cpu backend — SOFTMAX and LOG_SOFTMAX over the middle axis of
 * [outer, r, inner] (any input strides) into a contiguous output of the
 * same shape.
 *
 * Numerically stable: the maximum along r is subtracted before exp, so the
 * largest term is exp(0) = 1 and nothing overflows; the sum of exponentials
 * accumulates in double. A NaN anywhere along r makes that slice NaN.
 * Loop shapes follow exec_reduce.c: per-slice segments when r is the faster axis,
 * column tiles along a contiguous inner axis otherwise. */
#include "internal.h"

#define PT_CPU_SM_TILE 128

#define PT_CPU_SOFTMAX_KERNELS(S, T, F)                                                        \
    static inline T sm_max_##S(T m, T v) { return (v > m || v != v) ? v : m; }                \
    /* Maximum of n elements at stride s; NaN if any is NaN. The contiguous case              \
     * vectorises: a plain max plus a separate "any NaN" flag. */                             \
    static T sm_max_run_##S(const T *x, int64_t n, int64_t s) {                               \
        T m = x[0];                                                                           \
        if (s != 1) {                                                                         \
            for (int64_t j = 1; j < n; ++j) m = sm_max_##S(m, x[j * s]);                      \
            return m;                                                                         \
        }                                                                                     \
        int nan = 0;                                                                          \
        _Pragma("omp simd reduction(max : m) reduction(| : nan)") for (int64_t j = 0; j < n;  \
                                                                        ++j) {                \
            m = x[j] > m ? x[j] : m;                                                          \
            nan |= x[j] != x[j];                                                              \
        }                                                                                     \
        return nan ? (T)NAN : m;                                                              \
    }                                                                                         \
    /* One slice: n elements at x (stride s) into o (stride os). */                           \
    static void softmax_seg_##S(const T *x, int64_t n, int64_t s, T *o, int64_t os,            \
                                bool log_out) {                                                \
        const T m = sm_max_run_##S(x, n, s);                                                  \
        double sum = 0;                                                                       \
        if (log_out) {                                                                        \
            for (int64_t j = 0; j < n; ++j) sum += (double)exp##F(x[j * s] - m);              \
            const double lse = log(sum);                                                      \
            if (s == 1 && os == 1) {                                                          \
                _Pragma("omp simd") for (int64_t j = 0; j < n; ++j)                           \
                    o[j] = (T)((double)x[j] - (double)m - lse);                               \
            } else {                                                                          \
                for (int64_t j = 0; j < n; ++j)                                               \
                    o[j * os] = (T)((double)x[j * s] - (double)m - lse);                      \
            }                                                                                 \
        } else {                                                                              \
            for (int64_t j = 0; j < n; ++j) {                                                 \
                T e = exp##F(x[j * s] - m);                                                   \
                o[j * os] = e;                                                                \
                sum += (double)e;                                                             \
            }                                                                                 \
            const double inv = 1.0 / sum;                                                     \
            if (os == 1) {                                                                    \
                _Pragma("omp simd") for (int64_t j = 0; j < n; ++j)                           \
                    o[j] = (T)((double)o[j] * inv);                                           \
            } else {                                                                          \
                for (int64_t j = 0; j < n; ++j) o[j * os] = (T)((double)o[j * os] * inv);     \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
    /* w slices side by side: x[j * s1 + t * s2] into o[j * os + t]. */                       \
    static void softmax_cols_##S(const T *x, int64_t n, int64_t s1, int64_t s2, int64_t w,     \
                                 T *o, int64_t os, bool log_out) {                             \
        T m[PT_CPU_SM_TILE];                                                                  \
        double sum[PT_CPU_SM_TILE];                                                           \
        for (int64_t t = 0; t < w; ++t) {                                                     \
            m[t] = x[t * s2];                                                                 \
            sum[t] = 0;                                                                       \
        }                                                                                     \
        for (int64_t j = 1; j < n; ++j)                                                       \
            for (int64_t t = 0; t < w; ++t) m[t] = sm_max_##S(m[t], x[j * s1 + t * s2]);      \
        for (int64_t j = 0; j < n; ++j) {                                                     \
            for (int64_t t = 0; t < w; ++t) {                                                 \
                T e = exp##F(x[j * s1 + t * s2] - m[t]);                                      \
                if (!log_out) o[j * os + t] = e;                                              \
                sum[t] += (double)e;                                                          \
            }                                                                                 \
        }                                                                                     \
        for (int64_t t = 0; t < w; ++t) sum[t] = log_out ? log(sum[t]) : 1.0 / sum[t];        \
        for (int64_t j = 0; j < n; ++j) {                                                     \
            if (log_out) {                                                                    \
                for (int64_t t = 0; t < w; ++t)                                               \
                    o[j * os + t] =                                                           \
                        (T)((double)x[j * s1 + t * s2] - (double)m[t] - sum[t]);              \
            } else {                                                                          \
                for (int64_t t = 0; t < w; ++t)                                               \
                    o[j * os + t] = (T)((double)o[j * os + t] * sum[t]);                      \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
    static void softmax_task_##S(const pt_op *op, bool seg_mode, int64_t q, bool log_out) {   \
        const pt_operand *in = &op->in[0];                                                    \
        const T *x = (const T *)pt_cpu_base(in);                                              \
        T *o = (T *)pt_cpu_base(&op->out);                                                    \
        const int64_t r = in->shape[1], inner = in->shape[2];                                 \
        const int64_t s0 = in->strides[0], s1 = in->strides[1], s2 = in->strides[2];          \
        if (seg_mode) {                                                                       \
            int64_t oi = q / inner, i = q % inner;                                            \
            softmax_seg_##S(x + oi * s0 + i * s2, r, s1, o + oi * r * inner + i, inner,       \
                            log_out);                                                         \
        } else {                                                                              \
            int64_t tiles = (inner + PT_CPU_SM_TILE - 1) / PT_CPU_SM_TILE;                    \
            int64_t oi = q / tiles, i0 = (q % tiles) * PT_CPU_SM_TILE;                        \
            int64_t w = inner - i0 < PT_CPU_SM_TILE ? inner - i0 : PT_CPU_SM_TILE;            \
            softmax_cols_##S(x + oi * s0 + i0 * s2, r, s1, s2, w, o + oi * r * inner + i0,    \
                             inner, log_out);                                                 \
        }                                                                                     \
    }

PT_CPU_SOFTMAX_KERNELS(f32, float, f)
PT_CPU_SOFTMAX_KERNELS(f64, double, )

pt_status pt_cpu_softmax(const pt_op *op, bool run) {
    const pt_dtype t = op->dtype;
    if (op->n_inputs != 1) return pt_cpu_bad_op(op, "softmax takes one input");
    const pt_operand *in = &op->in[0];
    if (in->ndim != 3 || op->out.ndim != 3) return pt_cpu_bad_op(op, "expected [outer, r, inner]");
    for (int d = 0; d < 3; ++d)
        if (in->shape[d] != op->out.shape[d]) return pt_cpu_bad_op(op, "output shape differs");
    if (t != PT_F32 && t != PT_F64) return pt_cpu_unsupported(op, t);
    if (in->dtype != t || op->out.dtype != t) return pt_cpu_bad_op(op, "operand dtype differs");
    if (!run) return PT_OK;

    const bool log_out = op->kind == PT_OP_LOG_SOFTMAX;
    const int64_t outer = in->shape[0], r = in->shape[1], inner = in->shape[2];
    const bool seg_mode = inner == 1 || (in->strides[2] != 1 && in->strides[1] <= in->strides[2]);
    const int64_t tasks =
        seg_mode ? outer * inner : outer * ((inner + PT_CPU_SM_TILE - 1) / PT_CPU_SM_TILE);
    const int threads = pt_cpu_max_threads();
    const bool parallel = outer * r * inner >= PT_CPU_GRAIN_SOFTMAX && tasks > 1 && threads > 1;
    /* One pair of loops for both dtypes: the task is picked once here (each
     * task is a whole row or tile, so the indirect call costs nothing). */
    void (*task)(const pt_op *, bool, int64_t, bool) =
        t == PT_F32 ? softmax_task_f32 : softmax_task_f64;
    if (!parallel) {
        for (int64_t q = 0; q < tasks; ++q) task(op, seg_mode, q, log_out);
        return PT_OK;
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(threads)
#endif
    for (int64_t q = 0; q < tasks; ++q) task(op, seg_mode, q, log_out);
    return PT_OK;
}
