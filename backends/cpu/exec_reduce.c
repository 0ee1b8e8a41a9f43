/* libportable cpu backend — SUM, MEAN, MAX, ARGMAX over the middle axis of
 * [outer, r, inner] (any strides) into a contiguous [outer, inner].
 *
 * Two loop shapes, chosen by which axis is closer in memory:
 *  - segments: each output reduces r elements along stride s1 (inner == 1,
 *    or r is the faster axis); a contiguous segment is a vectorised loop;
 *  - columns: a tile of up to PT_CPU_TILE outputs along a contiguous inner
 *    axis is accumulated row by row, so every row read is contiguous.
 * Independent outputs (or tiles) are spread over threads; when there are
 * fewer of them than threads (a full reduction is one output), r itself is
 * split, each thread reduces its slice, and the partials are merged in
 * index order, so argmax still returns the first maximum.
 *
 * Accuracy: float sums accumulate in double and pairwise (segments) or in
 * two levels (columns), so a sum of millions of f32 values is accurate to
 * double rounding before the final conversion, and f64 sums lose about
 * log(n) roundings rather than n. Integer sums wrap in the element type (the
 * accumulator is 64-bit unsigned; truncation at the end gives the same
 * residue). MAX and ARGMAX treat NaN as the maximum; argmax returns the first
 * NaN or the first maximum. */
#include <stdlib.h>

#include "internal.h"

#define PT_CPU_TILE 256        /* outputs per column tile */
#define PT_CPU_SUM_BLOCK 256   /* longest run summed in one loop (pairwise leaves) */
#define PT_CPU_SUM_ROWS 64     /* rows per partial sum in a column tile */
#define PT_CPU_ARGMAX_BLOCK 1024 /* elements per vectorised block maximum */

/* The running state of one output. */
typedef struct red_acc {
    union {
        double f64;   /* float sums */
        uint64_t u64; /* integer sums */
        float f32;    /* max / argmax values */
        int32_t i32;
        int64_t i64;
        uint8_t u8;
    } v;
    int64_t idx;      /* argmax */
} red_acc;

/* Reduces n elements at x (stride s elements); first is the index along r
 * of x's element (argmax reports it). */
typedef void (*red_seg_fn)(const char *x, int64_t n, int64_t s, int64_t first, red_acc *acc);
/* Reduces nrows rows at x (row stride s1) of w elements each (stride s2)
 * into acc[0..w); first is the row index along r of x's first row. */
typedef void (*red_cols_fn)(const char *x, int64_t nrows, int64_t s1, int64_t s2, int64_t w,
                            int64_t first, red_acc *acc);
/* a = a followed by later (later covers larger indices). */
typedef void (*red_merge_fn)(red_acc *a, const red_acc *later);
/* Writes the final value of a reduction over r elements. */
typedef void (*red_store_fn)(const red_acc *a, char *out, int64_t r);

typedef struct red_kernels {
    red_seg_fn seg;
    red_cols_fn cols;
    red_merge_fn merge;
    red_store_fn store;
} red_kernels;

static inline bool isnan_f32(float v) { return v != v; }
static inline bool isnan_f64(double v) { return v != v; }
static inline bool isnan_i32(int32_t v) { (void)v; return false; }
static inline bool isnan_i64(int64_t v) { (void)v; return false; }
static inline bool isnan_u8(uint8_t v) { (void)v; return false; }

/* ---- SUM / MEAN: A is the accumulator type, F the red_acc field ---- */

#define PT_CPU_SUM_KERNELS(S, T, A, F)                                                         \
    /* Pairwise: halves until a block is short, so rounding error grows with                 \
     * log(n) rather than n; each block is one vectorised loop. */                           \
    static A sum_pairwise_##S(const T *x, int64_t n, int64_t s) {                             \
        if (n > PT_CPU_SUM_BLOCK) {                                                           \
            int64_t h = (n / 2 + 7) & ~(int64_t)7;                                            \
            return sum_pairwise_##S(x, h, s) + sum_pairwise_##S(x + h * s, n - h, s);         \
        }                                                                                     \
        A part = 0;                                                                           \
        if (s == 1) {                                                                         \
            _Pragma("omp simd reduction(+ : part)") for (int64_t i = 0; i < n; ++i)           \
                part += (A)x[i];                                                              \
        } else {                                                                              \
            for (int64_t i = 0; i < n; ++i) part += (A)x[i * s];                              \
        }                                                                                     \
        return part;                                                                          \
    }                                                                                         \
    static void sum_seg_##S(const char *xp, int64_t n, int64_t s, int64_t first,               \
                            red_acc *acc) {                                                    \
        (void)first;                                                                          \
        acc->v.F = sum_pairwise_##S((const T *)xp, n, s);                                     \
    }                                                                                         \
    /* Rows are summed in blocks of PT_CPU_SUM_ROWS whose partials are then added:            \
     * two-level, so the error grows like (block + r / block), not r. */                     \
    static void sum_cols_##S(const char *xp, int64_t nrows, int64_t s1, int64_t s2, int64_t w, \
                             int64_t first, red_acc *acc) {                                    \
        (void)first;                                                                          \
        const T *x = (const T *)xp;                                                           \
        A total[PT_CPU_TILE], part[PT_CPU_TILE];                                              \
        for (int64_t t = 0; t < w; ++t) total[t] = 0;                                         \
        for (int64_t j0 = 0; j0 < nrows; j0 += PT_CPU_SUM_ROWS) {                             \
            const int64_t j1 = nrows - j0 < PT_CPU_SUM_ROWS ? nrows : j0 + PT_CPU_SUM_ROWS;   \
            for (int64_t t = 0; t < w; ++t) part[t] = 0;                                      \
            for (int64_t j = j0; j < j1; ++j) {                                               \
                const T *row = x + j * s1;                                                    \
                if (s2 == 1) {                                                                \
                    _Pragma("omp simd") for (int64_t t = 0; t < w; ++t) part[t] += (A)row[t]; \
                } else {                                                                      \
                    for (int64_t t = 0; t < w; ++t) part[t] += (A)row[t * s2];                \
                }                                                                             \
            }                                                                                 \
            for (int64_t t = 0; t < w; ++t) total[t] += part[t];                              \
        }                                                                                     \
        for (int64_t t = 0; t < w; ++t) acc[t].v.F = total[t];                                \
    }                                                                                         \
    static void sum_merge_##S(red_acc *a, const red_acc *later) { a->v.F += later->v.F; }     \
    static void sum_store_##S(const red_acc *a, char *out, int64_t r) {                       \
        (void)r;                                                                              \
        *(T *)out = (T)a->v.F;                                                                \
    }

PT_CPU_SUM_KERNELS(f32, float, double, f64)
PT_CPU_SUM_KERNELS(f64, double, double, f64)
PT_CPU_SUM_KERNELS(i32, int32_t, uint64_t, u64)
PT_CPU_SUM_KERNELS(i64, int64_t, uint64_t, u64)
PT_CPU_SUM_KERNELS(u8, uint8_t, uint64_t, u64)

static void mean_store_f32(const red_acc *a, char *out, int64_t r) {
    *(float *)out = (float)(a->v.f64 / (double)r);
}
static void mean_store_f64(const red_acc *a, char *out, int64_t r) {
    *(double *)out = a->v.f64 / (double)r;
}

/* ---- MAX / ARGMAX ---- */

#define PT_CPU_MAX_KERNELS(S, T)                                                               \
    /* v replaces m when larger, or when v is NaN (NaN is the maximum and a NaN m stays). */  \
    static inline T max_step_##S(T m, T v) { return (v > m || isnan_##S(v)) ? v : m; }        \
    /* Contiguous maximum: eight independent running maxima the compiler keeps              \
     * in one vector register. n >= 1. */                                                    \
    static T max_contig_##S(const T *x, int64_t n) {                                          \
        T m = x[0];                                                                           \
        int64_t i = 1;                                                                        \
        if (n >= 16) {                                                                        \
            T lane[8];                                                                        \
            for (int k = 0; k < 8; ++k) lane[k] = x[k];                                       \
            for (i = 8; i + 8 <= n; i += 8)                                                   \
                for (int k = 0; k < 8; ++k) lane[k] = max_step_##S(lane[k], x[i + k]);        \
            for (int k = 0; k < 8; ++k) m = max_step_##S(m, lane[k]);                         \
        }                                                                                     \
        for (; i < n; ++i) m = max_step_##S(m, x[i]);                                         \
        return m;                                                                             \
    }                                                                                         \
    static void max_seg_##S(const char *xp, int64_t n, int64_t s, int64_t first,               \
                            red_acc *acc) {                                                    \
        (void)first;                                                                          \
        const T *x = (const T *)xp;                                                           \
        T m = x[0];                                                                           \
        if (s == 1) {                                                                         \
            m = max_contig_##S(x, n);                                                         \
        } else {                                                                              \
            for (int64_t i = 1; i < n; ++i) m = max_step_##S(m, x[i * s]);                   \
        }                                                                                     \
        acc->v.S = m;                                                                         \
    }                                                                                         \
    static void max_cols_##S(const char *xp, int64_t nrows, int64_t s1, int64_t s2, int64_t w, \
                             int64_t first, red_acc *acc) {                                    \
        (void)first;                                                                          \
        const T *x = (const T *)xp;                                                           \
        T m[PT_CPU_TILE];                                                                     \
        for (int64_t t = 0; t < w; ++t) m[t] = x[t * s2];                                     \
        for (int64_t j = 1; j < nrows; ++j) {                                                 \
            const T *row = x + j * s1;                                                        \
            for (int64_t t = 0; t < w; ++t) m[t] = max_step_##S(m[t], row[t * s2]);           \
        }                                                                                     \
        for (int64_t t = 0; t < w; ++t) acc[t].v.S = m[t];                                    \
    }                                                                                         \
    static void max_merge_##S(red_acc *a, const red_acc *later) {                             \
        a->v.S = max_step_##S(a->v.S, later->v.S);                                            \
    }                                                                                         \
    static void max_store_##S(const red_acc *a, char *out, int64_t r) {                       \
        (void)r;                                                                              \
        *(T *)out = a->v.S;                                                                   \
    }                                                                                         \
    /* v at a later index replaces m only when strictly larger, or when v is the first NaN. */\
    static inline bool argmax_takes_##S(T m, T v) {                                           \
        return v > m || (isnan_##S(v) && !isnan_##S(m));                                      \
    }                                                                                         \
    /* Contiguous: block maxima are vectorised, and a block is rescanned (from               \
     * L1) only when it holds something larger than the best so far, or a NaN. */           \
    static void argmax_seg_##S(const char *xp, int64_t n, int64_t s, int64_t first,            \
                               red_acc *acc) {                                                 \
        const T *x = (const T *)xp;                                                           \
        T m = x[0];                                                                           \
        int64_t mi = 0;                                                                       \
        if (s == 1) {                                                                         \
            for (int64_t b = 0; b < n && !isnan_##S(m); b += PT_CPU_ARGMAX_BLOCK) {           \
                const int64_t e = n - b < PT_CPU_ARGMAX_BLOCK ? n : b + PT_CPU_ARGMAX_BLOCK;  \
                const T bm = max_contig_##S(x + b, e - b);                                    \
                if (!argmax_takes_##S(m, bm)) continue;                                       \
                /* The block's first maximum (or first NaN) is the new overall one. */       \
                int64_t i = b;                                                                \
                if (isnan_##S(bm))                                                            \
                    while (!isnan_##S(x[i])) ++i;                                             \
                else                                                                          \
                    while (!(x[i] == bm)) ++i;                                                \
                m = x[i];                                                                     \
                mi = i;                                                                       \
            }                                                                                 \
        } else {                                                                              \
            for (int64_t i = 1; i < n && !isnan_##S(m); ++i) {                                \
                T v = x[i * s];                                                               \
                if (argmax_takes_##S(m, v)) {                                                 \
                    m = v;                                                                    \
                    mi = i;                                                                   \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
        acc->v.S = m;                                                                         \
        acc->idx = first + mi;                                                                \
    }                                                                                         \
    static void argmax_cols_##S(const char *xp, int64_t nrows, int64_t s1, int64_t s2,         \
                                int64_t w, int64_t first, red_acc *acc) {                      \
        const T *x = (const T *)xp;                                                           \
        T m[PT_CPU_TILE];                                                                     \
        int64_t mi[PT_CPU_TILE];                                                              \
        for (int64_t t = 0; t < w; ++t) {                                                     \
            m[t] = x[t * s2];                                                                 \
            mi[t] = 0;                                                                        \
        }                                                                                     \
        for (int64_t j = 1; j < nrows; ++j) {                                                 \
            const T *row = x + j * s1;                                                        \
            if (s2 == 1) { /* selects, not branches: vectorised (max pooling's windows) */   \
                _Pragma("omp simd") for (int64_t t = 0; t < w; ++t) {                         \
                    const T v = row[t];                                                       \
                    const bool take = argmax_takes_##S(m[t], v);                              \
                    m[t] = take ? v : m[t];                                                   \
                    mi[t] = take ? j : mi[t];                                                 \
                }                                                                             \
                continue;                                                                     \
            }                                                                                 \
            for (int64_t t = 0; t < w; ++t) {                                                 \
                T v = row[t * s2];                                                            \
                if (argmax_takes_##S(m[t], v)) {                                              \
                    m[t] = v;                                                                 \
                    mi[t] = j;                                                                \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
        for (int64_t t = 0; t < w; ++t) {                                                     \
            acc[t].v.S = m[t];                                                                \
            acc[t].idx = first + mi[t];                                                       \
        }                                                                                     \
    }                                                                                         \
    static void argmax_merge_##S(red_acc *a, const red_acc *later) {                          \
        if (argmax_takes_##S(a->v.S, later->v.S)) *a = *later;                                \
    }

PT_CPU_MAX_KERNELS(f32, float)
PT_CPU_MAX_KERNELS(f64, double)
PT_CPU_MAX_KERNELS(i32, int32_t)
PT_CPU_MAX_KERNELS(i64, int64_t)
PT_CPU_MAX_KERNELS(u8, uint8_t)

static void argmax_store(const red_acc *a, char *out, int64_t r) {
    (void)r;
    *(int64_t *)out = a->idx;
}

#define PT_CPU_SUM_SET(S) {sum_seg_##S, sum_cols_##S, sum_merge_##S, sum_store_##S}
#define PT_CPU_MEAN_SET(S) {sum_seg_##S, sum_cols_##S, sum_merge_##S, mean_store_##S}
#define PT_CPU_MAX_SET(S) {max_seg_##S, max_cols_##S, max_merge_##S, max_store_##S}
#define PT_CPU_ARGMAX_SET(S) {argmax_seg_##S, argmax_cols_##S, argmax_merge_##S, argmax_store}
#define PT_CPU_RED_ALL(SET)                                                                    \
    {[PT_F32] = SET(f32), [PT_F64] = SET(f64), [PT_I32] = SET(i32), [PT_I64] = SET(i64),       \
     [PT_U8] = SET(u8)}

static const red_kernels red_table[4][PT_DTYPE_COUNT] = {
    [0] = PT_CPU_RED_ALL(PT_CPU_SUM_SET),
    [1] = {[PT_F32] = PT_CPU_MEAN_SET(f32), [PT_F64] = PT_CPU_MEAN_SET(f64)},
    [2] = PT_CPU_RED_ALL(PT_CPU_MAX_SET),
    [3] = PT_CPU_RED_ALL(PT_CPU_ARGMAX_SET),
};

/* ---- Driver ---- */

typedef struct red_job {
    const red_kernels *k;
    const char *x;     /* element [0, 0, 0]; NULL when fill makes the input */
    pt_cpu_fill_fn fill;
    void *fill_ctx;
    char *scratch;     /* fill: region_cap elements per thread */
    int64_t region_cap;
    size_t es, out_es; /* element sizes of input and output */
    char *out;
    int64_t outer, r, inner, s0, s1, s2;
} red_job;

/* Address of x[o][j][i]. */
static const char *red_at(const red_job *jb, int64_t o, int64_t j, int64_t i) {
    return jb->x + (o * jb->s0 + j * jb->s1 + i * jb->s2) * (int64_t)jb->es;
}

/* With a fill function, the rows [j0, j0 + nrows) of columns [i0, i0 + w)
 * of output row o, made into this thread's scratch as a contiguous
 * [nrows, w] block; else the input itself. *s1, *s2: the strides to read
 * them with. The kernels then add the same values in the same order. */
static const char *red_region(const red_job *jb, int64_t o, int64_t j0, int64_t nrows, int64_t i0,
                              int64_t w, int64_t *s1, int64_t *s2) {
    if (!jb->fill) {
        *s1 = jb->s1;
        *s2 = jb->s2;
        return red_at(jb, o, j0, i0);
    }
#ifdef _OPENMP
    const int64_t tid = omp_get_thread_num();
#else
    const int64_t tid = 0;
#endif
    char *dst = jb->scratch + tid * jb->region_cap * (int64_t)jb->es;
    const int64_t first = (o * jb->r + j0) * jb->inner + i0;
    if (w == jb->inner) {
        jb->fill(jb->fill_ctx, first, nrows * w, dst);
    } else {
        for (int64_t j = 0; j < nrows; ++j)
            jb->fill(jb->fill_ctx, first + j * jb->inner, w, dst + j * w * (int64_t)jb->es);
    }
    *s1 = w;
    *s2 = 1;
    return dst;
}

/* Task q of the job: one output (segments) or one tile (columns), rows
 * [j0, j1) of r, into acc (1 or up to PT_CPU_TILE entries). Returns the
 * number of outputs, and their first flat output index in *first_out. */
static int64_t red_task(const red_job *jb, bool seg_mode, int64_t q, int64_t j0, int64_t j1,
                        red_acc *acc, int64_t *first_out) {
    int64_t s1, s2;
    if (seg_mode) {
        int64_t o = q / jb->inner, i = q % jb->inner;
        const char *x = red_region(jb, o, j0, j1 - j0, i, 1, &s1, &s2);
        jb->k->seg(x, j1 - j0, s1, j0, acc);
        *first_out = q;
        return 1;
    }
    int64_t tiles = (jb->inner + PT_CPU_TILE - 1) / PT_CPU_TILE;
    int64_t o = q / tiles, i0 = (q % tiles) * PT_CPU_TILE;
    int64_t w = jb->inner - i0 < PT_CPU_TILE ? jb->inner - i0 : PT_CPU_TILE;
    const char *x = red_region(jb, o, j0, j1 - j0, i0, w, &s1, &s2);
    jb->k->cols(x, j1 - j0, s1, s2, w, j0, acc);
    *first_out = o * jb->inner + i0;
    return w;
}

static void red_store_task(const red_job *jb, const red_acc *acc, int64_t first_out, int64_t w) {
    for (int64_t t = 0; t < w; ++t)
        jb->k->store(&acc[t], jb->out + (first_out + t) * (int64_t)jb->out_es, jb->r);
}

static void red_whole_tasks(const red_job *jb, bool seg_mode, int64_t q0, int64_t q1) {
    red_acc acc[PT_CPU_TILE];
    for (int64_t q = q0; q < q1; ++q) {
        int64_t first_out;
        int64_t w = red_task(jb, seg_mode, q, 0, jb->r, acc, &first_out);
        red_store_task(jb, acc, first_out, w);
    }
}

/* Few tasks, long r: every thread reduces a slice of r for each task in
 * turn; the slices are merged in index order. false when out of memory (the
 * caller then runs sequentially). */
static bool red_split_r(const red_job *jb, bool seg_mode, int64_t tasks, int nt) {
    const int64_t width = seg_mode ? 1 : PT_CPU_TILE;
    red_acc *part = malloc(sizeof(red_acc) * (size_t)width * (size_t)nt);
    if (!part) return false;
    int64_t chunk = (jb->r + nt - 1) / nt;
    for (int64_t q = 0; q < tasks; ++q) {
        int64_t first_out = 0, w = 1;
        int used = 0;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt)
#endif
        {
#ifdef _OPENMP
            int t = omp_get_thread_num();
#pragma omp single
            used = omp_get_num_threads();
#else
            int t = 0;
            used = 1;
#endif
            int64_t j0 = (int64_t)t * chunk, j1 = j0 + chunk < jb->r ? j0 + chunk : jb->r;
            if (j0 < j1) {
                int64_t fo;
                int64_t ww = red_task(jb, seg_mode, q, j0, j1, part + t * width, &fo);
                if (t == 0) {
                    first_out = fo;
                    w = ww;
                }
            }
        }
        /* The team may be smaller than asked; slices past it were not computed. */
        if (used < nt) {
            red_whole_tasks(jb, seg_mode, q, q + 1);
            continue;
        }
        for (int t = 1; t < nt && (int64_t)t * chunk < jb->r; ++t)
            for (int64_t i = 0; i < w; ++i) jb->k->merge(&part[i], &part[t * width + i]);
        red_store_task(jb, part, first_out, w);
    }
    free(part);
    return true;
}

static void red_run(const red_job *jb) {
    const int64_t total = jb->outer * jb->r * jb->inner;
    /* Segments when r is the faster axis (or the only one); columns when a
     * contiguous inner axis can be read row by row. */
    const bool seg_mode = jb->inner == 1 || (jb->s2 != 1 && jb->s1 <= jb->s2);
    const int64_t tasks =
        seg_mode ? jb->outer * jb->inner
                 : jb->outer * ((jb->inner + PT_CPU_TILE - 1) / PT_CPU_TILE);
    const int threads = pt_cpu_max_threads();
    if (total < PT_CPU_GRAIN_REDUCE || threads <= 1) {
        red_whole_tasks(jb, seg_mode, 0, tasks);
        return;
    }
    if (tasks < threads && jb->r >= 4 * threads) {
        if (red_split_r(jb, seg_mode, tasks, threads)) return;
        red_whole_tasks(jb, seg_mode, 0, tasks);
        return;
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(threads)
#endif
    for (int64_t q = 0; q < tasks; ++q) red_whole_tasks(jb, seg_mode, q, q + 1);
}

static pt_status red_check(const pt_op *op, int *which) {
    const pt_dtype t = op->dtype;
    *which = op->kind == PT_OP_SUM    ? 0
             : op->kind == PT_OP_MEAN ? 1
             : op->kind == PT_OP_MAX  ? 2
                                      : 3; /* red_table row */
    if (op->n_inputs != 1) return pt_cpu_bad_op(op, "reductions take one input");
    const pt_operand *in = &op->in[0];
    if (in->ndim != 3 || op->out.ndim != 2) return pt_cpu_bad_op(op, "expected [outer, r, inner]");
    if (in->dtype != t) return pt_cpu_bad_op(op, "input dtype differs from the op's");
    if (op->out.dtype != (op->kind == PT_OP_ARGMAX ? PT_I64 : t))
        return pt_cpu_bad_op(op, "output dtype does not match the op");
    if (op->out.shape[0] != in->shape[0] || op->out.shape[1] != in->shape[2])
        return pt_cpu_bad_op(op, "output shape is not [outer, inner]");
    if ((unsigned)t >= PT_DTYPE_COUNT || !red_table[*which][t].seg)
        return pt_cpu_unsupported(op, t);
    return PT_OK;
}

static red_job red_job_of(const pt_op *op, int which) {
    const pt_operand *in = &op->in[0];
    return (red_job){
        .k = &red_table[which][op->dtype],
        .x = pt_cpu_base(in),
        .es = pt_dtype_table_size(op->dtype),
        .out_es = pt_dtype_table_size(op->out.dtype),
        .out = pt_cpu_base(&op->out),
        .outer = in->shape[0], .r = in->shape[1], .inner = in->shape[2],
        .s0 = in->strides[0], .s1 = in->strides[1], .s2 = in->strides[2],
    };
}

pt_status pt_cpu_reduce(const pt_op *op, bool run) {
    int which;
    pt_status s = red_check(op, &which);
    if (s != PT_OK || !run) return s;
    red_job jb = red_job_of(op, which);
    red_run(&jb);
    return PT_OK;
}

int64_t pt_cpu_reduce_region(const pt_op *op) {
    const int64_t r = op->in[0].shape[1], inner = op->in[0].shape[2];
    return r * (inner == 1 ? 1 : inner < PT_CPU_TILE ? inner : PT_CPU_TILE);
}

pt_status pt_cpu_reduce_filled(const pt_op *op, pt_cpu_fill_fn fill, void *ctx, bool run) {
    int which;
    pt_status s = red_check(op, &which);
    if (s != PT_OK || !run) return s;
    red_job jb = red_job_of(op, which);
    /* The input as contiguous: the strides choose the loop shape as they
     * would for the value stored and read back. */
    jb.x = NULL;
    jb.s2 = 1;
    jb.s1 = jb.inner;
    jb.s0 = jb.r * jb.inner;
    jb.fill = fill;
    jb.fill_ctx = ctx;
    jb.region_cap = pt_cpu_reduce_region(op);
    const size_t bytes = (size_t)pt_cpu_max_threads() * (size_t)jb.region_cap * jb.es;
    jb.scratch = malloc(bytes > 0 ? bytes : 1);
    if (!jb.scratch)
        return pt_cpu_fail(PT_ERR_OUT_OF_MEMORY, "out of host memory for a fused %s's %zu bytes of scratch",
                           pt_op_name(op->kind), bytes);
    red_run(&jb);
    free(jb.scratch);
    return PT_OK;
}
