/* libportable cpu backend — MAX_POOL2D, MAX_POOL2D_INDEX and MAX_UNPOOL2D
 * (backend.h, WINDOW family).
 *
 * One (n, c) image plane at a time, planes split across threads. The pools
 * visit each window's taps inside the image in row-major order and keep the
 * first maximum (the first NaN once one is seen); the unpool scatters each
 * window's gradient into its plane in increasing window order, so every
 * element sums its windows in the order the OpenCL and CUDA gathers do, and
 * one thread owns a plane: no races, no atomics. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct pool_job {
    const pt_operand *x, *out, *g, *index;
    int64_t c, h, w, kh, kw, oh, ow;
    int64_t sh, sw, ph, pw, dh, dw;
    /* Small planes: per window e and tap t (window-major, [e * taps + t]),
     * its offset in x's plane and its index h*W + w, or -1 in the padding.
     * The same for every plane, computed once per op. */
    const int64_t *off, *pos;
} pool_job;

/* Planes of up to this many taps (KH*KW*OH*OW) use the tables: a CNN's
 * pools (2x2 windows over 8x8 images) then run one flat, branch-free loop
 * per plane instead of bounds checks and a data-dependent branch per tap,
 * which mispredicts on about every other tap of random data. */
#define POOL_TABLE_MAX 65536

static void pool_tables(const pool_job *j, int64_t *off, int64_t *pos) {
    const int64_t taps = j->kh * j->kw, xs2 = j->x ? j->x->strides[2] : 0, xs3 = j->x ? j->x->strides[3] : 0;
    for (int64_t r = 0, e = 0; r < j->oh; ++r)
        for (int64_t q = 0; q < j->ow; ++q, ++e)
            for (int64_t i = 0, t = 0; i < j->kh; ++i)
                for (int64_t k = 0; k < j->kw; ++k, ++t) {
                    const int64_t ih = r * j->sh - j->ph + i * j->dh, iw = q * j->sw - j->pw + k * j->dw;
                    const bool in = ih >= 0 && ih < j->h && iw >= 0 && iw < j->w;
                    off[e * taps + t] = in ? ih * xs2 + iw * xs3 : -1;
                    pos[e * taps + t] = in ? ih * j->w + iw : -1;
                }
}

/* Branch-free maxima: each float becomes an integer key in the same order,
 * (-0 and +0 equal), NaN above everything (so the first NaN wins), a tap in the
 * padding below every key (it never wins, and a window of padding only
 * keeps the sentinel). Keys and selects compile to integer compares and
 * conditional moves: nothing for the branch predictor to miss. */
static inline int32_t pool_key_f32(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    const int32_t s = (int32_t)u, key = s >= 0 ? s : -(int32_t)(u & 0x7FFFFFFFu); /* -0 == +0 */
    return (u & 0x7FFFFFFFu) > 0x7F800000u ? INT32_MAX : key; /* NaN: above +inf */
}

static inline int64_t pool_key_f64(double v) {
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    const int64_t s = (int64_t)u, key = s >= 0 ? s : -(int64_t)(u & 0x7FFFFFFFFFFFFFFFull);
    return (u & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull ? INT64_MAX : key;
}

/* The winning tap of one window (taps at offsets off[0..taps), -1 in the
 * padding), or -1 for a window of padding only. f32: key and reversed tap
 * number packed in one unsigned 64-bit word, so the first maximum is one
 * running max (a conditional move); padding packs to 0, below every tap. */
static inline int64_t winner_f32(const float *restrict xp, const int64_t *restrict off, int64_t taps) {
    uint64_t best = 0;
    for (int64_t t = 0; t < taps; ++t) {
        const int64_t o = off[t];
        const uint32_t key = (uint32_t)pool_key_f32(xp[o >= 0 ? o : 0]) ^ 0x80000000u; /* > 0: key > INT32_MIN */
        const uint64_t c = o >= 0 ? ((uint64_t)key << 32) | (uint32_t)(taps - 1 - t) : 0;
        best = c > best ? c : best;
    }
    return best ? taps - 1 - (int64_t)(uint32_t)best : -1;
}

static inline int64_t winner_f64(const double *restrict xp, const int64_t *restrict off, int64_t taps) {
    int64_t best = INT64_MIN, win = -1;
    for (int64_t t = 0; t < taps; ++t) {
        const int64_t o = off[t];
        const int64_t c = o >= 0 ? pool_key_f64(xp[o >= 0 ? o : 0]) : INT64_MIN;
        const bool take = c > best;
        best = take ? c : best;
        win = take ? t : win;
    }
    return win;
}

#define PT_CPU_POOL_TABLE(S, T, WINNER)                                                          \
    static void max_pool_table_##S(void *ctx, int64_t p0, int64_t p1) {                          \
        const pool_job *j = ctx;                                                                 \
        const T *xb = (const T *)pt_cpu_base(j->x);                                              \
        const int64_t *xs = j->x->strides, windows = j->oh * j->ow, taps = j->kh * j->kw;        \
        const bool index = j->out->dtype == PT_I64;                                              \
        T *vals = (T *)pt_cpu_base(j->out);                                                      \
        int64_t *idxs = (int64_t *)pt_cpu_base(j->out);                                          \
        const int64_t *restrict off = j->off, *restrict pos = j->pos;                            \
        int64_t n = p0 / j->c, c = p0 % j->c; /* (n, c) of plane p, stepped: no division per plane */ \
        for (int64_t p = p0; p < p1; ++p) {                                                      \
            const T *restrict xp = xb + n * xs[0] + c * xs[1];                                   \
            if (++c == j->c) {                                                                   \
                c = 0;                                                                           \
                ++n;                                                                             \
            }                                                                                    \
            for (int64_t e = 0; e < windows; ++e) {                                              \
                const int64_t b = e * taps; /* 2x2 and 3x3 unrolled: the common pools */         \
                const int64_t t = taps == 4   ? WINNER(xp, off + b, 4)                           \
                                  : taps == 9 ? WINNER(xp, off + b, 9)                           \
                                              : WINNER(xp, off + b, taps);                       \
                const int64_t at = t >= 0 ? pos[b + t] : -1;                                     \
                const T val = t >= 0 ? xp[off[b + t]] : (T)-INFINITY;                            \
                if (index) idxs[p * windows + e] = at;                                           \
                else vals[p * windows + e] = val;                                                \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
    static void max_unpool_table_##S(void *ctx, int64_t p0, int64_t p1) {                        \
        const pool_job *j = ctx;                                                                 \
        const T *gb = (const T *)pt_cpu_base(j->g);                                              \
        const int64_t *ib = (const int64_t *)pt_cpu_base(j->index);                              \
        T *out = (T *)pt_cpu_base(j->out);                                                       \
        const int64_t windows = j->oh * j->ow, hw = j->h * j->w, taps = j->kh * j->kw;           \
        const int64_t *restrict pos = j->pos;                                                    \
        for (int64_t p = p0; p < p1; ++p) {                                                      \
            T *restrict img = out + p * hw;                                                      \
            const T *restrict gp = gb + p * windows;                                             \
            const int64_t *restrict ip = ib + p * windows;                                       \
            for (int64_t e = 0; e < hw; ++e) img[e] = (T)0;                                      \
            for (int64_t e = 0; e < windows; ++e) {                                              \
                const int64_t at = ip[e];                                                        \
                bool mine = false; /* at is one of window e's taps in the image */               \
                for (int64_t t = e * taps; t < (e + 1) * taps; ++t) mine |= pos[t] == at;        \
                if (mine & (at >= 0)) img[at] += gp[e];                                          \
            }                                                                                    \
        }                                                                                        \
    }

/* The window (r, q)'s maximum of plane xp (strides xs2, xs3) and its index
 * h*W + w, or -inf and -1 for a window of padding only. v > best is false
 * for a NaN v, so a NaN is taken explicitly, and only over a number. */
#define PT_CPU_WINDOW_MAX(S, T)                                                                  \
    static inline T window_max_##S(const pool_job *j, const T *restrict xp, int64_t xs2,        \
                                   int64_t xs3, int64_t r, int64_t q, int64_t *at) {             \
        T best = (T)-INFINITY;                                                                   \
        int64_t where = -1;                                                                      \
        for (int64_t i = 0; i < j->kh; ++i) {                                                    \
            const int64_t ih = r * j->sh - j->ph + i * j->dh;                                    \
            if (ih < 0 || ih >= j->h) continue;                                                  \
            for (int64_t k = 0; k < j->kw; ++k) {                                                \
                const int64_t iw = q * j->sw - j->pw + k * j->dw;                                \
                if (iw < 0 || iw >= j->w) continue;                                              \
                const T v = xp[ih * xs2 + iw * xs3];                                             \
                if (where < 0 || v > best || (v != v && best == best)) {                         \
                    best = v;                                                                    \
                    where = ih * j->w + iw;                                                      \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
        *at = where;                                                                             \
        return best;                                                                             \
    }                                                                                            \
    /* Values, or (an i64 output: MAX_POOL2D_INDEX) the indices of the maxima. */            \
    static void max_pool_##S(void *ctx, int64_t p0, int64_t p1) {                                \
        const pool_job *j = ctx;                                                                 \
        const T *xb = (const T *)pt_cpu_base(j->x);                                              \
        const bool index = j->out->dtype == PT_I64;                                              \
        T *vals = (T *)pt_cpu_base(j->out);                                                      \
        int64_t *idxs = (int64_t *)pt_cpu_base(j->out);                                          \
        const int64_t *xs = j->x->strides, windows = j->oh * j->ow;                              \
        for (int64_t p = p0; p < p1; ++p) {                                                      \
            const T *restrict xp = xb + (p / j->c) * xs[0] + (p % j->c) * xs[1];                 \
            for (int64_t r = 0, e = p * windows; r < j->oh; ++r)                                 \
                for (int64_t q = 0; q < j->ow; ++q, ++e) {                                       \
                    int64_t at;                                                                  \
                    const T v = window_max_##S(j, xp, xs[2], xs[3], r, q, &at);                  \
                    if (index)                                                                   \
                        idxs[e] = at;                                                            \
                    else                                                                         \
                        vals[e] = v;                                                             \
                }                                                                                \
        }                                                                                        \
    }                                                                                            \
    static void max_unpool_##S(void *ctx, int64_t p0, int64_t p1) {                              \
        const pool_job *j = ctx;                                                                 \
        const T *gb = (const T *)pt_cpu_base(j->g);                                              \
        const int64_t *ib = (const int64_t *)pt_cpu_base(j->index);                              \
        T *out = (T *)pt_cpu_base(j->out);                                                       \
        const int64_t windows = j->oh * j->ow, hw = j->h * j->w;                                 \
        for (int64_t p = p0; p < p1; ++p) {                                                      \
            T *restrict img = out + p * hw;                                                      \
            const T *restrict gp = gb + p * windows;                                             \
            const int64_t *restrict ip = ib + p * windows;                                       \
            memset(img, 0, (size_t)hw * sizeof(T));                                              \
            for (int64_t r = 0, e = 0; r < j->oh; ++r)                                           \
                for (int64_t q = 0; q < j->ow; ++q, ++e)                                         \
                    if (in_window(j, ip[e], r, q)) img[ip[e]] += gp[e];                          \
        }                                                                                        \
    }

/* Whether index e = h*W + w is a tap of window (r, q) inside the image: an
 * index from elsewhere (not from MAX_POOL2D_INDEX) is skipped, as the GPU
 * gathers, which only look at each element's own windows, skip it. */
static inline bool in_window(const pool_job *j, int64_t e, int64_t r, int64_t q) {
    if (e < 0 || e >= j->h * j->w) return false;
    const int64_t dh = e / j->w - (r * j->sh - j->ph), dw = e % j->w - (q * j->sw - j->pw);
    return dh >= 0 && dw >= 0 && dh % j->dh == 0 && dw % j->dw == 0 && dh / j->dh < j->kh &&
           dw / j->dw < j->kw;
}

/* The commonest pool, 2x2 windows at stride 2 without padding or dilation
 * over rows of contiguous floats (a CNN's "max pool 2"): the four taps are
 * read in place, with no tables and no padding tests. */
static inline uint64_t tap_word_f32(float v, unsigned t) {
    return ((uint64_t)((uint32_t)pool_key_f32(v) ^ 0x80000000u) << 32) | (3u - t);
}

/* The commonest pool, 2x2 windows at stride 2 over f32 rows of stride 1,
 * four windows at a time in output order (they may span rows of windows:
 * a 4x4 image has two windows per row). Each lane keeps the first maximum
 * of its four taps in row-major order in the order of the integer keys
 * above (NaN wins, the first NaN first; -0 equals +0), all lanes at once:
 * float compares and selects, no branch per tap. */
typedef float pool_v4f __attribute__((vector_size(16)));
typedef int32_t pool_v4i __attribute__((vector_size(16)));

/* a where the mask m is all ones, else b (m from a vector compare). */
static inline pool_v4i pool_sel4(pool_v4i m, pool_v4i a, pool_v4i b) { return (a & m) | (b & ~m); }


/* Lanes i, j, k, l of the eight in a then b: clang's builtin, or GCC's
 * (which has clang's only from GCC 12 on). */
#if defined(__clang__)
#define POOL_PICK4(a, b, i, j, k, l) __builtin_shufflevector(a, b, i, j, k, l)
#else
#define POOL_PICK4(a, b, i, j, k, l) __builtin_shuffle(a, b, (pool_v4i){i, j, k, l})
#endif

static inline pool_v4f pool_load4(const float *p) {
    pool_v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Windows e0..e0+3 of one plane (all present): their taps' values, tap
 * order 0 top-left, 1 top-right, 2 bottom-left, 3 bottom-right, and where
 * each window's top-left tap sits (h * W + w). (r, q) is window e0's.
 * Where the four windows lie on one row of windows, or on two rows of two
 * (a 4x4 or 5x5 image), the taps come from whole-vector loads split into
 * even and odd columns; building them from sixteen scalar stores instead
 * stalled every vector read on store forwarding (most of the pool's time). */
static inline void pool_gather4(const float *restrict xp, int64_t xs2, int64_t w, int64_t ow, int64_t r, int64_t q,
                                pool_v4f tap[4], int64_t at[4]) {
    for (int64_t k = 0, rk = r, qk = q; k < 4; ++k) {
        at[k] = 2 * rk * w + 2 * qk;
        if (++qk == ow) {
            qk = 0;
            ++rk;
        }
    }
    const float *top = xp + 2 * r * xs2 + 2 * q;
    if (q + 4 <= ow) {
        const pool_v4f a = pool_load4(top), b = pool_load4(top + 4);
        const pool_v4f c = pool_load4(top + xs2), d = pool_load4(top + xs2 + 4);
        tap[0] = POOL_PICK4(a, b, 0, 2, 4, 6);
        tap[1] = POOL_PICK4(a, b, 1, 3, 5, 7);
        tap[2] = POOL_PICK4(c, d, 0, 2, 4, 6);
        tap[3] = POOL_PICK4(c, d, 1, 3, 5, 7);
        return;
    }
    if (ow == 2 && q == 0) { /* windows (r, 0), (r, 1), (r + 1, 0), (r + 1, 1) */
        const pool_v4f a = pool_load4(top), b = pool_load4(top + xs2);
        const pool_v4f c = pool_load4(top + 2 * xs2), d = pool_load4(top + 3 * xs2);
        tap[0] = POOL_PICK4(a, c, 0, 2, 4, 6);
        tap[1] = POOL_PICK4(a, c, 1, 3, 5, 7);
        tap[2] = POOL_PICK4(b, d, 0, 2, 4, 6);
        tap[3] = POOL_PICK4(b, d, 1, 3, 5, 7);
        return;
    }
    float v[4][4];
    for (int k = 0; k < 4; ++k) {
        const float *t = xp + 2 * r * xs2 + 2 * q, *bottom = t + xs2;
        v[0][k] = t[0];
        v[1][k] = t[1];
        v[2][k] = bottom[0];
        v[3][k] = bottom[1];
        if (++q == ow) {
            q = 0;
            ++r;
        }
    }
    memcpy(tap, v, sizeof v);
}

static void max_pool_2x2_f32(void *ctx, int64_t p0, int64_t p1) {
    const pool_job *j = ctx;
    const float *xb = (const float *)pt_cpu_base(j->x);
    const int64_t *xs = j->x->strides, xs2 = xs[2], windows = j->oh * j->ow, ow = j->ow;
    const bool index = j->out->dtype == PT_I64;
    int64_t n = p0 / j->c, c = p0 % j->c;
    for (int64_t p = p0; p < p1; ++p) {
        const float *restrict xp = xb + n * xs[0] + c * xs[1];
        if (++c == j->c) {
            c = 0;
            ++n;
        }
        float *restrict vals = (float *)pt_cpu_base(j->out) + p * windows;
        int64_t *restrict idxs = (int64_t *)pt_cpu_base(j->out) + p * windows;
        int64_t e = 0, r = 0, q = 0;
        for (; e + 4 <= windows; e += 4) {
            pool_v4f tap[4], best;
            int64_t at[4];
            pool_gather4(xp, xs2, j->w, ow, r, q, tap, at);
            pool_v4i won = {0, 0, 0, 0};
            best = tap[0];
            for (int t = 1; t < 4; ++t) {
                /* The order of the keys, on the floats themselves: a tap wins
                 * when greater, or when it is the first NaN (equal taps,
                 * -0 and +0 among them, keep the first). */
                const pool_v4i take = (tap[t] > best) | ((tap[t] != tap[t]) & (best == best));
                won = pool_sel4(take, (pool_v4i){t, t, t, t}, won);
                best = (pool_v4f)pool_sel4(take, (pool_v4i)tap[t], (pool_v4i)best);
            }
            if (index) {
                for (int k = 0; k < 4; ++k) idxs[e + k] = at[k] + (won[k] >> 1) * j->w + (won[k] & 1);
            } else {
                memcpy(vals + e, &best, sizeof best);
            }
            q += 4;
            while (q >= ow) {
                q -= ow;
                ++r;
            }
        }
        for (; e < windows; ++e) { /* the last windows of the plane, one at a time */
            const float *restrict row0 = xp + 2 * r * xs2, *restrict row1 = row0 + xs2;
            uint64_t best = tap_word_f32(row0[2 * q], 0), w;
            w = tap_word_f32(row0[2 * q + 1], 1);
            best = w > best ? w : best;
            w = tap_word_f32(row1[2 * q], 2);
            best = w > best ? w : best;
            w = tap_word_f32(row1[2 * q + 1], 3);
            best = w > best ? w : best;
            const int64_t t = 3 - (int64_t)(uint32_t)best, i = t >> 1, k = t & 1;
            if (index) idxs[e] = (2 * r + i) * j->w + 2 * q + k;
            else vals[e] = (i ? row1 : row0)[2 * q + k];
            if (++q == ow) {
                q = 0;
                ++r;
            }
        }
    }
}

/* Its adjoint: the windows do not overlap, so each image element gets the
 * gradient of the one window that covers it when that window chose it, else
 * 0 (written directly, four windows at a time, instead of zeroing the plane
 * and adding); + 0.0f turns a -0 gradient into +0, as the sum 0 + g the other
 * backends compute does. Elements no window covers (an odd last row or
 * column) are 0. */
/* Windows (r, q..q+3) of one row of windows, or (r, 0), (r, 1), (r + 1, 0),
 * (r + 1, 1) when there are two a row: their gradients g where each one's
 * index ix chose the tap, else 0, written as whole rows of four image
 * elements (the masks and interleaves in vectors; per window, eight-byte
 * copies of words just stored stalled on store forwarding). */
static inline void unpool_write4(float *restrict img, const float *restrict g, const int64_t *restrict ix, int64_t w,
                                 int64_t ow, int64_t r, int64_t q) {
    pool_v4i d;
    for (int64_t k = 0, rk = r, qk = q; k < 4; ++k) {
        /* the index's tap in its window: 0, 1, w, w + 1, else -1 (an
         * index from elsewhere chooses none, as the scalar loop below) */
        const int64_t off = ix[k] - (2 * rk * w + 2 * qk);
        d[k] = off >= 0 && off <= w + 1 ? (int32_t)off : -1;
        if (++qk == ow) {
            qk = 0;
            ++rk;
        }
    }
    const pool_v4i gi = (pool_v4i)(pool_load4(g) + 0.0f);
    const int32_t wi = (int32_t)w; /* the caller keeps w + 1 in int32 */
    const pool_v4i v0 = gi & (d == 0), v1 = gi & (d == 1), v2 = gi & (d == wi), v3 = gi & (d == wi + 1);
    const pool_v4i top_lo = POOL_PICK4(v0, v1, 0, 4, 1, 5), top_hi = POOL_PICK4(v0, v1, 2, 6, 3, 7);
    const pool_v4i bot_lo = POOL_PICK4(v2, v3, 0, 4, 1, 5), bot_hi = POOL_PICK4(v2, v3, 2, 6, 3, 7);
    float *at = img + 2 * r * w + 2 * q;
    /* one row of windows: eight elements of two image rows; two a row: four
     * of four rows */
    float *const hi = q + 4 <= ow ? at + 4 : at + 2 * w, *const bottom_hi = hi + w;
    memcpy(at, &top_lo, sizeof top_lo);
    memcpy(at + w, &bot_lo, sizeof bot_lo);
    memcpy(hi, &top_hi, sizeof top_hi);
    memcpy(bottom_hi, &bot_hi, sizeof bot_hi);
}

static void max_unpool_2x2_f32(void *ctx, int64_t p0, int64_t p1) {
    const pool_job *j = ctx;
    const float *gb = (const float *)pt_cpu_base(j->g);
    const int64_t *ib = (const int64_t *)pt_cpu_base(j->index);
    float *out = (float *)pt_cpu_base(j->out);
    const int64_t windows = j->oh * j->ow, hw = j->h * j->w, w = j->w, ow = j->ow;
    const bool uncovered = j->h != 2 * j->oh || j->w != 2 * j->ow;
    for (int64_t p = p0; p < p1; ++p) {
        float *restrict img = out + p * hw;
        const float *restrict gp = gb + p * windows;
        const int64_t *restrict ip = ib + p * windows;
        if (uncovered) memset(img, 0, (size_t)hw * sizeof *img);
        int64_t e = 0, r = 0, q = 0;
        for (; e + 4 <= windows && w < INT32_MAX && (q + 4 <= ow || (ow == 2 && q == 0)); e += 4) {
            unpool_write4(img, gp + e, ip + e, w, ow, r, q);
            q += 4;
            while (q >= ow) {
                q -= ow;
                ++r;
            }
        }
        for (; e < windows; ++e) {
            const int64_t top = 2 * r * w + 2 * q, d = ip[e] - top;
            const float g = gp[e] + 0.0f;
            uint32_t gbits, v[4];
            memcpy(&gbits, &g, sizeof g);
            /* masks, not branches: which tap won is random data */
            v[0] = gbits & (0u - (uint32_t)(d == 0));
            v[1] = gbits & (0u - (uint32_t)(d == 1));
            v[2] = gbits & (0u - (uint32_t)(d == w));
            v[3] = gbits & (0u - (uint32_t)(d == w + 1));
            memcpy(img + top, v, 2 * sizeof *v);
            memcpy(img + top + w, v + 2, 2 * sizeof *v);
            if (++q == ow) {
                q = 0;
                ++r;
            }
        }
    }
}

PT_CPU_WINDOW_MAX(f32, float)
PT_CPU_WINDOW_MAX(f64, double)
PT_CPU_POOL_TABLE(f32, float, winner_f32)
PT_CPU_POOL_TABLE(f64, double, winner_f64)

pt_status pt_cpu_max_pool(const pt_op *op, bool run) {
    const bool unpool = op->kind == PT_OP_MAX_UNPOOL2D;
    const pt_operand *img = unpool ? &op->out : &op->in[0], *win = unpool ? &op->in[0] : &op->out;
    if (op->n_inputs != (unpool ? 2 : 1) || img->ndim != 4 || win->ndim != 4 ||
        (unpool && op->in[1].ndim != 4))
        return pt_cpu_bad_op(op, "expected an [N, C, H, W] image and [N, C, OH, OW] windows");
    if (img->shape[0] != win->shape[0] || img->shape[1] != win->shape[1])
        return pt_cpu_bad_op(op, "image and windows differ in N or C");
    if (op->kernel[0] < 1 || op->kernel[1] < 1) return pt_cpu_bad_op(op, "kernel below 1");
    if (op->dtype != PT_F32 && op->dtype != PT_F64) return pt_cpu_unsupported(op, op->dtype);
    const pt_dtype out_t = op->kind == PT_OP_MAX_POOL2D_INDEX ? PT_I64 : op->dtype;
    if (op->in[0].dtype != op->dtype || op->out.dtype != out_t || (unpool && op->in[1].dtype != PT_I64))
        return pt_cpu_bad_op(op, "operand dtype differs");
    if (!run) return PT_OK;
    pool_job j = {
        .x = &op->in[0], .out = &op->out, .g = &op->in[0], .index = &op->in[1],
        .c = img->shape[1], .h = img->shape[2], .w = img->shape[3],
        .kh = op->kernel[0], .kw = op->kernel[1], .oh = win->shape[2], .ow = win->shape[3],
        .sh = op->window[0], .sw = op->window[1], .ph = op->window[2], .pw = op->window[3],
        .dh = op->window[4], .dw = op->window[5],
    };
    const bool f32 = op->dtype == PT_F32;
    pt_cpu_piece_fn fn = op->kind == PT_OP_MAX_POOL2D ? (f32 ? max_pool_f32 : max_pool_f64)
                         : unpool                     ? (f32 ? max_unpool_f32 : max_unpool_f64)
                                                      : (f32 ? max_pool_f32 : max_pool_f64);
    /* grain in planes: about PT_CPU_GRAIN_CHEAP taps (or image elements) per piece */
    const int64_t per_plane = unpool ? j.h * j.w + j.oh * j.ow : j.kh * j.kw * j.oh * j.ow;
    const int64_t grain = per_plane >= PT_CPU_GRAIN_CHEAP ? 1 : PT_CPU_GRAIN_CHEAP / (per_plane ? per_plane : 1);
    int64_t *tables = NULL;
    const int64_t taps = j.kh * j.kw * j.oh * j.ow;
    const bool two_by_two = f32 && j.kh == 2 && j.kw == 2 && j.sh == 2 && j.sw == 2 && j.ph == 0 && j.pw == 0 &&
                            j.dh == 1 && j.dw == 1 && (unpool || op->in[0].strides[3] == 1);
    if (two_by_two) {
        fn = unpool ? max_unpool_2x2_f32 : max_pool_2x2_f32;
    } else if (taps <= POOL_TABLE_MAX && (tables = malloc(2 * (size_t)taps * sizeof *tables))) {
        if (unpool) j.x = NULL; /* no image to read: offsets unused */
        pool_tables(&j, tables, tables + taps);
        j.off = tables;
        j.pos = tables + taps;
        fn = unpool ? (f32 ? max_unpool_table_f32 : max_unpool_table_f64)
                    : (f32 ? max_pool_table_f32 : max_pool_table_f64);
    } /* without memory for the tables, the loops above need none */
    pt_cpu_parallel_ranges(img->shape[0] * img->shape[1], grain, 1, fn, &j);
    free(tables);
    return PT_OK;
}
