/* libportable cpu backend — IM2COL and COL2IM (backend.h, WINDOW family).
 *
 * Both work one (n, c) image plane at a time, and planes are independent,
 * so the planes are split across threads. COL2IM scatters each column
 * element into its plane with +=: within a plane one thread does all the
 * adding, so there is no race and no atomics. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct window_job {
    const pt_op *op;
    int64_t c, h, w, kh, kw, oh, ow;
    int64_t sh, sw, ph, pw, dh, dw;
    const int64_t *tap; /* small windows: per column element, its offset in the image plane or -1 */
} window_job;

/* Small planes (a CNN on 8x8 digits has rows of 2..8 elements) spend more
 * on the per-row bookkeeping than on the copying, so when a plane's columns
 * number at most TAP_TABLE_MAX, the offsets are computed once per op (the
 * same for every plane) and each plane is one flat loop over them. */
#define TAP_TABLE_MAX 65536

static int64_t *tap_table(const window_job *j, int64_t row_stride, int64_t col_stride) {
    const int64_t n = j->kh * j->kw * j->oh * j->ow;
    int64_t *t = malloc((size_t)n * sizeof *t);
    if (!t) return NULL;
    int64_t e = 0;
    for (int64_t i = 0; i < j->kh; ++i)
        for (int64_t k = 0; k < j->kw; ++k)
            for (int64_t r = 0; r < j->oh; ++r) {
                const int64_t ih = r * j->sh - j->ph + i * j->dh;
                for (int64_t q = 0; q < j->ow; ++q, ++e) {
                    const int64_t iw = q * j->sw - j->pw + k * j->dw;
                    t[e] = (ih >= 0 && ih < j->h && iw >= 0 && iw < j->w) ? ih * row_stride + iw * col_stride : -1;
                }
            }
    return t;
}

#define PT_CPU_WINDOW_TABLE(S, T)                                                                \
    static void im2col_table_##S(void *ctx, int64_t p0, int64_t p1) {                            \
        const window_job *j = ctx;                                                               \
        const pt_operand *x = &j->op->in[0];                                                     \
        const T *xb = (const T *)pt_cpu_base(x);                                                 \
        T *out = (T *)pt_cpu_base(&j->op->out);                                                  \
        const T pad = (T)j->op->scalar;                                                          \
        const int64_t plane = j->kh * j->kw * j->oh * j->ow;                                     \
        const int64_t *restrict tap = j->tap;                                                    \
        int64_t n = p0 / j->c, c = p0 % j->c; /* stepped: no division per (small) plane */     \
        for (int64_t p = p0; p < p1; ++p) {                                                      \
            const T *restrict xp = xb + n * x->strides[0] + c * x->strides[1];                   \
            if (++c == j->c) {                                                                   \
                c = 0;                                                                           \
                ++n;                                                                             \
            }                                                                                    \
            T *restrict o = out + p * plane;                                                     \
            for (int64_t e = 0; e < plane; ++e) o[e] = tap[e] >= 0 ? xp[tap[e]] : pad;           \
        }                                                                                        \
    }                                                                                            \
    static void col2im_table_##S(void *ctx, int64_t p0, int64_t p1) {                            \
        const window_job *j = ctx;                                                               \
        const T *col = (const T *)pt_cpu_base(&j->op->in[0]);                                    \
        T *out = (T *)pt_cpu_base(&j->op->out);                                                  \
        const int64_t plane = j->kh * j->kw * j->oh * j->ow, hw = j->h * j->w;                   \
        const int64_t *restrict tap = j->tap;                                                    \
        for (int64_t p = p0; p < p1; ++p) {                                                      \
            T *restrict img = out + p * hw;                                                      \
            const T *restrict cp = col + p * plane;                                              \
            memset(img, 0, (size_t)hw * sizeof(T));                                              \
            for (int64_t e = 0; e < plane; ++e)                                                  \
                if (tap[e] >= 0) img[tap[e]] += cp[e];                                           \
        }                                                                                        \
    }

/* The output columns ow whose input column iw = ow*sw - pw + j*dw lies in
 * [0, w): [*lo, *hi). */
static void valid_range(int64_t w, int64_t ow, int64_t sw, int64_t off, int64_t *lo, int64_t *hi) {
    /* iw >= 0  <=>  ow >= ceil(-off / sw);  iw < w  <=>  ow <= floor((w - 1 - off) / sw) */
    int64_t a = off >= 0 ? 0 : (-off + sw - 1) / sw;
    int64_t b = w - 1 - off < 0 ? -1 : (w - 1 - off) / sw;
    *lo = a < ow ? a : ow;
    *hi = b + 1 < ow ? b + 1 : ow;
    if (*hi < *lo) *hi = *lo;
}

#define PT_CPU_IM2COL(S, T)                                                                      \
    static void im2col_##S(void *ctx, int64_t p0, int64_t p1) {                                  \
        const window_job *j = ctx;                                                               \
        const pt_operand *x = &j->op->in[0];                                                     \
        const T *restrict xb = (const T *)pt_cpu_base(x);                                        \
        T *restrict out = (T *)pt_cpu_base(&j->op->out);                                         \
        const T pad = (T)j->op->scalar;                                                          \
        const int64_t xs2 = x->strides[2], xs3 = x->strides[3], plane = j->kh * j->kw * j->oh * j->ow; \
        for (int64_t p = p0; p < p1; ++p) {                                                      \
            const int64_t n = p / j->c, c = p % j->c;                                            \
            const T *restrict xp = xb + n * x->strides[0] + c * x->strides[1];                   \
            T *restrict o = out + p * plane;                                                     \
            for (int64_t i = 0; i < j->kh; ++i)                                                  \
                for (int64_t k = 0; k < j->kw; ++k) {                                            \
                    const int64_t offw = k * j->dw - j->pw;                                      \
                    int64_t lo, hi;                                                              \
                    valid_range(j->w, j->ow, j->sw, offw, &lo, &hi);                             \
                    for (int64_t r = 0; r < j->oh; ++r, o += j->ow) {                            \
                        const int64_t ih = r * j->sh - j->ph + i * j->dh;                        \
                        if (ih < 0 || ih >= j->h) {                                              \
                            for (int64_t q = 0; q < j->ow; ++q) o[q] = pad;                      \
                            continue;                                                            \
                        }                                                                        \
                        const T *restrict row = xp + ih * xs2;                                   \
                        for (int64_t q = 0; q < lo; ++q) o[q] = pad;                             \
                        if (j->sw == 1 && xs3 == 1) {                                            \
                            const T *restrict src = row + offw;                                  \
                            for (int64_t q = lo; q < hi; ++q) o[q] = src[q];                     \
                        } else {                                                                 \
                            for (int64_t q = lo; q < hi; ++q) o[q] = row[(q * j->sw + offw) * xs3]; \
                        }                                                                        \
                        for (int64_t q = hi; q < j->ow; ++q) o[q] = pad;                         \
                    }                                                                            \
                }                                                                                \
        }                                                                                        \
    }

#define PT_CPU_COL2IM(S, T)                                                                      \
    static void col2im_##S(void *ctx, int64_t p0, int64_t p1) {                                  \
        const window_job *j = ctx;                                                               \
        const T *restrict col = (const T *)pt_cpu_base(&j->op->in[0]);                           \
        T *restrict out = (T *)pt_cpu_base(&j->op->out);                                         \
        const int64_t plane = j->kh * j->kw * j->oh * j->ow;                                     \
        for (int64_t p = p0; p < p1; ++p) {                                                      \
            T *restrict img = out + p * j->h * j->w;                                             \
            memset(img, 0, (size_t)(j->h * j->w) * sizeof(T));                                   \
            const T *restrict cp = col + p * plane;                                              \
            for (int64_t i = 0; i < j->kh; ++i)                                                  \
                for (int64_t k = 0; k < j->kw; ++k) {                                            \
                    const int64_t offw = k * j->dw - j->pw;                                      \
                    int64_t lo, hi;                                                              \
                    valid_range(j->w, j->ow, j->sw, offw, &lo, &hi);                             \
                    for (int64_t r = 0; r < j->oh; ++r, cp += j->ow) {                           \
                        const int64_t ih = r * j->sh - j->ph + i * j->dh;                        \
                        if (ih < 0 || ih >= j->h) continue;                                      \
                        T *restrict row = img + ih * j->w;                                       \
                        for (int64_t q = lo; q < hi; ++q) row[q * j->sw + offw] += cp[q];        \
                    }                                                                            \
                }                                                                                \
        }                                                                                        \
    }

PT_CPU_WINDOW_TABLE(f32, float)
PT_CPU_WINDOW_TABLE(f64, double)
PT_CPU_IM2COL(f32, float)
PT_CPU_IM2COL(f64, double)
PT_CPU_COL2IM(f32, float)
PT_CPU_COL2IM(f64, double)

pt_status pt_cpu_window(const pt_op *op, bool run) {
    const bool im2col = op->kind == PT_OP_IM2COL;
    const pt_operand *img = im2col ? &op->in[0] : &op->out, *col = im2col ? &op->out : &op->in[0];
    if (op->n_inputs != 1 || img->ndim != 4 || col->ndim != 6)
        return pt_cpu_bad_op(op, "expected an [N, C, H, W] image and [N, C, KH, KW, OH, OW] columns");
    if (img->shape[0] != col->shape[0] || img->shape[1] != col->shape[1])
        return pt_cpu_bad_op(op, "image and columns differ in N or C");
    if (op->dtype != PT_F32 && op->dtype != PT_F64) return pt_cpu_unsupported(op, op->dtype);
    if (img->dtype != op->dtype || col->dtype != op->dtype) return pt_cpu_bad_op(op, "operand dtype differs");
    if (!run) return PT_OK;
    window_job j = {
        .op = op, .c = img->shape[1], .h = img->shape[2], .w = img->shape[3],
        .kh = col->shape[2], .kw = col->shape[3], .oh = col->shape[4], .ow = col->shape[5],
        .sh = op->window[0], .sw = op->window[1], .ph = op->window[2], .pw = op->window[3],
        .dh = op->window[4], .dw = op->window[5],
    };
    const int64_t planes = img->shape[0] * img->shape[1];
    const int64_t per_plane = j.kh * j.kw * j.oh * j.ow;
    /* grain in planes: about PT_CPU_GRAIN_CHEAP column elements per piece */
    const int64_t grain = per_plane >= PT_CPU_GRAIN_CHEAP ? 1 : PT_CPU_GRAIN_CHEAP / per_plane;
    pt_cpu_piece_fn fn = op->dtype == PT_F32 ? (im2col ? im2col_f32 : col2im_f32)
                                             : (im2col ? im2col_f64 : col2im_f64);
    int64_t *table = NULL;
    if (per_plane <= TAP_TABLE_MAX &&
        (table = im2col ? tap_table(&j, img->strides[2], img->strides[3]) : tap_table(&j, j.w, 1))) {
        j.tap = table;
        fn = op->dtype == PT_F32 ? (im2col ? im2col_table_f32 : col2im_table_f32)
                                 : (im2col ? im2col_table_f64 : col2im_table_f64);
    } /* without memory for the table, the row loops below need none */
    pt_cpu_parallel_ranges(planes, grain, 1, fn, &j);
    free(table);
    return PT_OK;
}
