/* libportable cpu backend — one matrix product on the calling thread:
 * C = alpha op(A) op(B) + beta C, row-major, the call every kernel that
 * multiplies blocks makes (MATMUL's batches and row blocks, ATTENTION's
 * score and gradient blocks). f32 goes to oneDNN's sgemm where the plugin
 * chose it over OpenBLAS's kernels (exec_matmul_choice.c), else to
 * OpenBLAS, which runs single-threaded (pt_cpu_blas_init): callers split
 * work across the OpenMP team themselves. Without BLAS at build time a
 * plain loop computes the same product. */
#include <limits.h>

#include "internal.h"

#ifdef PT_CPU_HAVE_CBLAS
#include <cblas.h>
#endif

/* The loop: element (r, c) of op(X) is X[r * ld + c], or X[c * ld + r]
 * when transposed. The k loop is innermost over a row of op(B) when B is
 * read as is, so that case vectorises. */
#define PT_CPU_GEMM_PLAIN(S, T)                                                                      \
    static void gemm_plain_##S(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T *A, \
                               int64_t lda, const T *B, int64_t ldb, T beta, T *C, int64_t ldc) {       \
        for (int64_t m = 0; m < M; ++m) {                                                            \
            T *c = C + m * ldc;                                                                      \
            for (int64_t n = 0; n < N; ++n) c[n] = beta == 0 ? 0 : beta * c[n];                     \
            for (int64_t k = 0; k < K; ++k) {                                                        \
                const T a = alpha * (ta ? A[k * lda + m] : A[m * lda + k]);                          \
                if (tb) {                                                                            \
                    for (int64_t n = 0; n < N; ++n) c[n] += a * B[n * ldb + k];                      \
                } else {                                                                             \
                    const T *b = B + k * ldb;                                                        \
                    _Pragma("omp simd") for (int64_t n = 0; n < N; ++n) c[n] += a * b[n];            \
                }                                                                                    \
            }                                                                                        \
        }                                                                                            \
    }

PT_CPU_GEMM_PLAIN(f32, float)
PT_CPU_GEMM_PLAIN(f64, double)

/* BLAS takes int extents; callers pass blocks, far below INT_MAX, and the
 * loop takes whatever does not fit. */
static bool fits_int(int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb, int64_t ldc) {
    return M <= INT_MAX && N <= INT_MAX && K <= INT_MAX && lda <= INT_MAX && ldb <= INT_MAX && ldc <= INT_MAX;
}

void pt_cpu_gemm_f32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                     const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    if (M == 0 || N == 0) return;
#ifdef PT_CPU_HAVE_ONEDNN
    if (pt_cpu_gemm_onednn && pt_cpu_onednn_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
#endif
#ifdef PT_CPU_HAVE_CBLAS
    if (fits_int(M, N, K, lda, ldb, ldc)) {
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N,
                    (int)K, alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
        return;
    }
#endif
    gemm_plain_f32(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void pt_cpu_gemm_f64(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double *A, int64_t lda,
                     const double *B, int64_t ldb, double beta, double *C, int64_t ldc) {
    if (M == 0 || N == 0) return;
#ifdef PT_CPU_HAVE_CBLAS
    if (fits_int(M, N, K, lda, ldb, ldc)) {
        cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N,
                    (int)K, alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
        return;
    }
#endif
    gemm_plain_f64(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
