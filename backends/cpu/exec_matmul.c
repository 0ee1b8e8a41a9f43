/* libportable cpu backend — MATMUL: [B, M, K] x [B, K, N] -> [B, M, N].
 *
 * Each batch is one row-major GEMM call (exec_matmul_gemm.c): an input whose strides make
 * it column-major is passed transposed, a batch stride of 0 reuses the same
 * matrix. An input BLAS cannot address (a broadcast row, a leading dimension
 * smaller than a row) is first packed into a contiguous scratch copy. Tiny
 * matrices skip BLAS, whose per-call set-up would dominate, and run a
 * straight loop with batches spread over threads. Without BLAS at build time
 * every product takes that loop. */
#include <limits.h>
#include <stdlib.h>

#include "internal.h"

#ifdef PT_CPU_HAVE_CBLAS
#include <cblas.h>
#endif

/* Products up to this many multiply-adds per batch use the loop below:
 * OpenBLAS's small-matrix kernels win from about 4x4x4 up. */
#define PT_CPU_SMALL_GEMM 64

/* c[M, N] (contiguous) = a[M, K] (strides sa1, sa2) x b[K, N] (strides sb1, sb2). */
#define PT_CPU_GEMM_LOOP(S, T)                                                                 \
    static void gemm_loop_##S(const T *a, int64_t sa1, int64_t sa2, const T *b, int64_t sb1,   \
                              int64_t sb2, T *c, int64_t m0, int64_t m1, int64_t N,            \
                              int64_t K) {                                                     \
        for (int64_t m = m0; m < m1; ++m) {                                                   \
            T *crow = c + m * N;                                                              \
            for (int64_t n = 0; n < N; ++n) crow[n] = 0;                                      \
            for (int64_t k = 0; k < K; ++k) {                                                 \
                const T av = a[m * sa1 + k * sa2];                                            \
                const T *brow = b + k * sb1;                                                  \
                if (sb2 == 1) {                                                               \
                    _Pragma("omp simd") for (int64_t n = 0; n < N; ++n) crow[n] += av * brow[n]; \
                } else {                                                                      \
                    for (int64_t n = 0; n < N; ++n) crow[n] += av * brow[n * sb2];            \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
    }

PT_CPU_GEMM_LOOP(f32, float)
PT_CPU_GEMM_LOOP(f64, double)

typedef struct mm_job {
    pt_dtype t;
    size_t es;
    const char *a, *b;
    char *c;
    int64_t B, M, K, N;
    int64_t sa0, sa1, sa2, sb0, sb1, sb2;
} mm_job;

/* Rows [m0, m1) of batch i with the loop. */
static void mm_loop(const mm_job *j, int64_t i, int64_t m0, int64_t m1) {
    const int64_t es = (int64_t)j->es;
    const char *a = j->a + i * j->sa0 * es, *b = j->b + i * j->sb0 * es;
    char *c = j->c + i * j->M * j->N * es;
    if (j->t == PT_F32)
        gemm_loop_f32((const float *)a, j->sa1, j->sa2, (const float *)b, j->sb1, j->sb2,
                      (float *)c, m0, m1, j->N, j->K);
    else
        gemm_loop_f64((const double *)a, j->sa1, j->sa2, (const double *)b, j->sb1, j->sb2,
                      (double *)c, m0, m1, j->N, j->K);
}

/* Every batch with the loop; threads take (batch, row block) pairs. */
static void mm_run_loop(const mm_job *j) {
    const int64_t rows_per_task = 16;
    const int64_t blocks = (j->M + rows_per_task - 1) / rows_per_task;
    const int64_t tasks = j->B * blocks;
    const int threads = pt_cpu_max_threads();
    const bool parallel = j->B * j->M * j->N * j->K >= PT_CPU_GRAIN_GEMM / 4 && tasks > 1 &&
                          threads > 1;
    if (!parallel) {
        for (int64_t i = 0; i < j->B; ++i) mm_loop(j, i, 0, j->M);
        return;
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(threads)
#endif
    for (int64_t q = 0; q < tasks; ++q) {
        int64_t i = q / blocks, m0 = (q % blocks) * rows_per_task;
        int64_t m1 = m0 + rows_per_task < j->M ? m0 + rows_per_task : j->M;
        mm_loop(j, i, m0, m1);
    }
}

#ifdef PT_CPU_HAVE_CBLAS

/* How BLAS can read a rows x cols matrix with strides (rs, cs): row-major
 * (cs == 1) with leading dimension rs, or column-major (rs == 1), i.e. the
 * transpose, with leading dimension cs. A single row or column may have any
 * stride along its length-1 axis, so its leading dimension is chosen. false:
 * BLAS cannot address it (pack it first). */
static bool blas_view(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool *trans,
                      int64_t *ld) {
    if (cs == 1 || cols == 1) {
        int64_t l = rows == 1 ? cols : rs;
        if (l >= cols && l <= INT_MAX) {
            *trans = false;
            *ld = l;
            return true;
        }
    }
    if (rs == 1 || rows == 1) {
        int64_t l = cols == 1 ? rows : cs;
        if (l >= rows && l <= INT_MAX) {
            *trans = true;
            *ld = l;
            return true;
        }
    }
    return false;
}

/* Copies a strided rows x cols matrix into dst, contiguous row-major. */
static void pack(const char *src, int64_t rows, int64_t cols, int64_t rs, int64_t cs, size_t es,
                 char *dst) {
    if (es == 4) {
        const float *s = (const float *)src;
        float *d = (float *)dst;
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) d[r * cols + c] = s[r * rs + c * cs];
    } else {
        const double *s = (const double *)src;
        double *d = (double *)dst;
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) d[r * cols + c] = s[r * rs + c * cs];
    }
}

/* One operand as BLAS will see it: either the original memory or a packed
 * copy (repacked per batch unless the batch stride is 0). */
typedef struct mm_side {
    const char *base;
    int64_t rows, cols, rs, cs, bs;
    bool trans, packed;
    int64_t ld;
    char *scratch;
} mm_side;

static pt_status mm_side_init(mm_side *s, const char *base, int64_t rows, int64_t cols,
                              int64_t bs, int64_t rs, int64_t cs, size_t es) {
    *s = (mm_side){.base = base, .rows = rows, .cols = cols, .rs = rs, .cs = cs, .bs = bs};
    if (blas_view(rows, cols, rs, cs, &s->trans, &s->ld)) return PT_OK;
    s->packed = true;
    s->trans = false;
    s->ld = cols;
    s->scratch = malloc((size_t)(rows * cols) * es);
    if (!s->scratch)
        return pt_cpu_fail(PT_ERR_OUT_OF_MEMORY,
                           "matmul: no memory for a %lld x %lld packed copy of a strided operand; "
                           "make it contiguous first (pt_contiguous)",
                           (long long)rows, (long long)cols);
    return PT_OK;
}

/* Pointer BLAS reads for batch i. */
static const char *mm_side_at(mm_side *s, int64_t i, size_t es) {
    const char *p = s->base + i * s->bs * (int64_t)es;
    if (!s->packed) return p;
    if (i == 0 || s->bs != 0) pack(p, s->rows, s->cols, s->rs, s->cs, es, s->scratch);
    return s->scratch;
}

/* One BLAS call: rows [m0, m1) and columns [n0, n1) of batch i's product,
 * from pa, pb (batch i's matrices as BLAS sees them). */
static void mm_blas_block(const mm_job *j, const mm_side *a, const mm_side *b, const char *pa,
                          const char *pb, char *pc, int64_t m0, int64_t m1, int64_t n0,
                          int64_t n1) {
    const int64_t es = (int64_t)j->es;
    /* Row m of op(A) starts at m * ld when A is read as is, at m when BLAS
     * reads it transposed; column n of op(B) likewise. */
    pa += m0 * (a->trans ? 1 : a->ld) * es;
    pb += n0 * (b->trans ? b->ld : 1) * es;
    pc += (m0 * j->N + n0) * es;
    const int64_t M = m1 - m0, N = n1 - n0;
    if (j->t == PT_F32)
        pt_cpu_gemm_f32(a->trans, b->trans, M, N, j->K, 1.0f, (const float *)pa, a->ld, (const float *)pb, b->ld,
                        0.0f, (float *)pc, j->N);
    else
        pt_cpu_gemm_f64(a->trans, b->trans, M, N, j->K, 1.0, (const double *)pa, a->ld, (const double *)pb, b->ld,
                        0.0, (double *)pc, j->N);
}

/* Threads: OpenBLAS runs single-threaded (pt_cpu_blas_init) and the OpenMP
 * team splits the work, so one thread pool serves every kernel and its
 * threads never spin against another pool's. Batches go to threads whole
 * when there are enough of them and nothing needs packing; otherwise each
 * batch's product is cut into one block of rows (or of columns, when N is
 * the longer side) per thread. Below PT_CPU_GRAIN_GEMM multiply-adds the
 * product stays on the calling thread. */
static pt_status mm_run_blas(const mm_job *j) {
    mm_side a, b;
    pt_status st = mm_side_init(&a, j->a, j->M, j->K, j->sa0, j->sa1, j->sa2, j->es);
    if (st != PT_OK) return st;
    st = mm_side_init(&b, j->b, j->K, j->N, j->sb0, j->sb1, j->sb2, j->es);
    if (st != PT_OK) {
        free(a.scratch);
        return st;
    }
    const int64_t es = (int64_t)j->es, per_batch = j->M * j->N * j->K;
    int threads = pt_cpu_max_threads();
    if (j->B * per_batch < PT_CPU_GRAIN_GEMM) threads = 1;
#if defined(PT_CPU_HAVE_ONEDNN) && defined(PT_CPU_ONEDNN_ONE_THREAD)
    if (j->t == PT_F32 && pt_cpu_gemm_onednn) threads = 1; /* oneDNN on one thread: exec_matmul_choice.c */
#endif
    if (threads > 1 && !a.packed && !b.packed && j->B >= threads) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(threads)
#endif
        for (int64_t i = 0; i < j->B; ++i)
            mm_blas_block(j, &a, &b, a.base + i * a.bs * es, b.base + i * b.bs * es,
                          j->c + i * j->M * j->N * es, 0, j->M, 0, j->N);
    } else {
        for (int64_t i = 0; i < j->B; ++i) {
            const char *pa = mm_side_at(&a, i, j->es), *pb = mm_side_at(&b, i, j->es);
            char *pc = j->c + i * j->M * j->N * es;
            int nt = per_batch < PT_CPU_GRAIN_GEMM ? 1 : threads;
            const bool by_rows = j->M >= j->N;
            const int64_t len = by_rows ? j->M : j->N;
            if (nt > len / 16) nt = (int)(len / 16); /* blocks of at least 16 */
            if (nt <= 1) {
                mm_blas_block(j, &a, &b, pa, pb, pc, 0, j->M, 0, j->N);
                continue;
            }
#ifdef _OPENMP
#pragma omp parallel num_threads(nt)
#endif
            {
#ifdef _OPENMP
                const int tid = omp_get_thread_num(), used = omp_get_num_threads();
#else
                const int tid = 0, used = 1;
#endif
                /* Block edges on multiples of 16 (whole cache lines of C). */
                const int64_t chunk = ((len + used - 1) / used + 15) & ~(int64_t)15;
                const int64_t lo = (int64_t)tid * chunk, hi = lo + chunk < len ? lo + chunk : len;
                if (lo < hi) {
                    if (by_rows) mm_blas_block(j, &a, &b, pa, pb, pc, lo, hi, 0, j->N);
                    else mm_blas_block(j, &a, &b, pa, pb, pc, 0, j->M, lo, hi);
                }
            }
        }
    }
    free(a.scratch);
    free(b.scratch);
    return PT_OK;
}

#endif /* PT_CPU_HAVE_CBLAS */

#if defined(PT_CPU_HAVE_CBLAS) && defined(PT_CPU_HAVE_OPENBLAS_CONFIG)
/* OpenBLAS's pthreads build (not in its headers; weak: absent elsewhere). */
extern int blas_thread_shutdown_(void) __attribute__((weak));
#endif

void pt_cpu_blas_init(void) {
#if defined(PT_CPU_HAVE_CBLAS) && defined(PT_CPU_HAVE_OPENBLAS_CONFIG)
    openblas_set_num_threads(1);
    /* OpenBLAS's pthreads build starts its own pool when it is loaded, and
     * each worker allocates a 128 MiB buffer as it starts, retrying for
     * ever when that fails; its exit handler then waits for the worker, so
     * under an address-space limit a process hung at exit. The pool is
     * never used (one thread, above), so under a limit it is stopped here,
     * while the workers' buffers could still be had. */
    if (blas_thread_shutdown_ && pt_cpu_address_space_limited()) blas_thread_shutdown_();
#endif
    pt_cpu_gemm_choose();
}

pt_status pt_cpu_matmul(const pt_op *op, bool run) {
    const pt_dtype t = op->dtype;
    if (op->n_inputs != 2) return pt_cpu_bad_op(op, "matmul takes two inputs");
    const pt_operand *A = &op->in[0], *Bm = &op->in[1], *C = &op->out;
    if (A->ndim != 3 || Bm->ndim != 3 || C->ndim != 3)
        return pt_cpu_bad_op(op, "expected [B, M, K] x [B, K, N] -> [B, M, N]");
    if (A->shape[0] != C->shape[0] || Bm->shape[0] != C->shape[0] || A->shape[1] != C->shape[1] ||
        Bm->shape[2] != C->shape[2] || A->shape[2] != Bm->shape[1])
        return pt_cpu_bad_op(op, "operand shapes do not chain");
    if (t != PT_F32 && t != PT_F64) return pt_cpu_unsupported(op, t);
    if (A->dtype != t || Bm->dtype != t || C->dtype != t)
        return pt_cpu_bad_op(op, "operand dtype differs from the op's");
    if (!run) return PT_OK;

    mm_job j = {
        .t = t, .es = pt_dtype_table_size(t),
        .a = pt_cpu_base(A), .b = pt_cpu_base(Bm), .c = pt_cpu_base(C),
        .B = C->shape[0], .M = C->shape[1], .K = A->shape[2], .N = C->shape[2],
        .sa0 = A->strides[0], .sa1 = A->strides[1], .sa2 = A->strides[2],
        .sb0 = Bm->strides[0], .sb1 = Bm->strides[1], .sb2 = Bm->strides[2],
    };
#ifdef PT_CPU_HAVE_CBLAS
    const bool fits_int = j.M <= INT_MAX && j.N <= INT_MAX && j.K <= INT_MAX;
    if (fits_int && j.M * j.N * j.K > PT_CPU_SMALL_GEMM) return mm_run_blas(&j);
#endif
    mm_run_loop(&j);
    return PT_OK;
}
