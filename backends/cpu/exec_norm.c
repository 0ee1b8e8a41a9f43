/* libportable cpu backend — CHANNEL_STATS: per channel c of x [N, C, L]
 * (any strides), the mean of its N * L values and their biased variance,
 * into out [2, C].
 *
 * Two passes over each channel, both accumulating in double: the mean
 * first, then the squared deviations from it, so the variance never
 * suffers the cancellation of E[x^2] - E[x]^2 (the composed path in the
 * core computes the same two quantities with four full-size ops). Channels
 * are independent, so they are the threads' tasks. PORTABLE_CPU_NORM=composed
 * refuses the kind (=fused is the default), so tests can run the core's
 * composed path here too and compare it with other backends step by step. */
#include <pthread.h>

#include "internal.h"

#define PT_CPU_BN_STATS_KERNEL(S, T)                                                               \
    static void bn_stats_channel_##S(const pt_op *op, int64_t c) {                                 \
        const pt_operand *in = &op->in[0];                                                         \
        const T *x = (const T *)pt_cpu_base(in) + c * in->strides[1];                              \
        const int64_t n = in->shape[0], l = in->shape[2], sn = in->strides[0], sl = in->strides[2]; \
        double sum = 0;                                                                            \
        for (int64_t b = 0; b < n; ++b) {                                                          \
            const T *row = x + b * sn;                                                             \
            if (sl == 1) {                                                                         \
                _Pragma("omp simd reduction(+ : sum)") for (int64_t j = 0; j < l; ++j) sum +=     \
                    (double)row[j];                                                                \
            } else {                                                                               \
                for (int64_t j = 0; j < l; ++j) sum += (double)row[j * sl];                        \
            }                                                                                      \
        }                                                                                          \
        const double count = (double)(n * l), mean = sum / count;                                  \
        double sq = 0;                                                                             \
        for (int64_t b = 0; b < n; ++b) {                                                          \
            const T *row = x + b * sn;                                                             \
            if (sl == 1) {                                                                         \
                _Pragma("omp simd reduction(+ : sq)") for (int64_t j = 0; j < l; ++j) {           \
                    const double d = (double)row[j] - mean;                                        \
                    sq += d * d;                                                                   \
                }                                                                                  \
            } else {                                                                               \
                for (int64_t j = 0; j < l; ++j) {                                                  \
                    const double d = (double)row[j * sl] - mean;                                   \
                    sq += d * d;                                                                   \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        T *o = (T *)pt_cpu_base(&op->out);                                                         \
        const int64_t channels = in->shape[1];                                                     \
        o[c] = (T)mean;                                                                            \
        o[channels + c] = (T)(sq / count);                                \
    }

PT_CPU_BN_STATS_KERNEL(f32, float)
PT_CPU_BN_STATS_KERNEL(f64, double)

static bool composed_forced;

static void read_switch(void) {
    static const char *const paths[] = {"fused", "composed", NULL};
    composed_forced = PT_HOST_HAS(pt_cpu_host, env_choice) &&
                      pt_cpu_host->env_choice("PORTABLE_CPU_NORM", paths, 0) == 1;
}

pt_status pt_cpu_channel_stats(const pt_op *op, bool run) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, read_switch);
    const pt_dtype t = op->dtype;
    if (composed_forced)
        return pt_cpu_fail(PT_ERR_UNSUPPORTED, "%s: PORTABLE_CPU_NORM=composed sends it to reductions",
                           pt_op_name(op->kind));
    if (op->kind != PT_OP_CHANNEL_STATS) return pt_cpu_bad_op(op, "not a NORM kind");
    if (op->n_inputs != 1) return pt_cpu_bad_op(op, "channel_stats takes one input");
    const pt_operand *in = &op->in[0];
    if (in->ndim != 3 || op->out.ndim != 2) return pt_cpu_bad_op(op, "expected x [N, C, L] and out [2, C]");
    if (op->out.shape[0] != 2 || op->out.shape[1] != in->shape[1])
        return pt_cpu_bad_op(op, "out must be [2, C] for x [N, C, L]");
    if (t != PT_F32 && t != PT_F64) return pt_cpu_unsupported(op, t);
    if (in->dtype != t || op->out.dtype != t) return pt_cpu_bad_op(op, "operand dtype differs");
    if (!run) return PT_OK;

    const int64_t channels = in->shape[1], per_channel = in->shape[0] * in->shape[2];
    void (*channel)(const pt_op *, int64_t) = t == PT_F32 ? bn_stats_channel_f32 : bn_stats_channel_f64;
    const int threads = pt_cpu_max_threads();
    /* A copy's grain, not softmax's: the statistics are two cheap passes,
     * and a split activation's lines end up in both cores' caches, which
     * the next op's writes pay for (the digits CNN's [64, 16, 64] epoch
     * was slower on two threads than on one with the smaller grain). */
    const bool parallel = channels * per_channel >= PT_CPU_GRAIN_CHEAP && channels > 1 && threads > 1;
    if (!parallel) {
        for (int64_t c = 0; c < channels; ++c) channel(op, c);
        return PT_OK;
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(threads)
#endif
    for (int64_t c = 0; c < channels; ++c) channel(op, c);
    return PT_OK;
}
