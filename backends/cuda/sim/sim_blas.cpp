/* libportable CUDA backend — a simulated cuBLAS for the simulated runtime:
 * the handful of calls the plugin makes, with cuBLAS's argument checks
 * (leading dimensions, data and compute types, device pointers) so that
 * the plugin's row-major -> column-major mapping is tested for real, and
 * the product computed by OpenBLAS (column-major, as cuBLAS) on the
 * handle's stream. CUBLAS_COMPUTE_32F_FAST_TF32 rounds both inputs to TF32
 * (10 mantissa bits, round to nearest) before an FP32 product, which is
 * what the tensor cores see. CUDA_R_16F / CUDA_R_16BF operands (compute type
 * CUBLAS_COMPUTE_32F, as for cuBLAS's tensor-core path) are widened exactly
 * to f32, multiplied by SGEMM (f32 accumulation) and each result rounded
 * once to the 16-bit type by portable/half.h, as the GPU's epilogue does
 * (round to nearest even), or kept in f32 where C is CUDA_R_32F (a 16-bit
 * product accumulated in f32, which cuBLAS offers too). PTCU_SIM_FAIL_CUBLAS=1 makes cublasCreate fail
 * as it does on a device without memory for cuBLAS's workspace.
 *
 * Workspaces: cublasSetStream drops the handle's workspace, as cuBLAS's
 * does (back to its own pool), and a GEMM queued into a stream capture
 * without a workspace set fails with CUBLAS_STATUS_NOT_SUPPORTED: the
 * simulator's stand-in for cuBLAS allocating from its pool while a graph is
 * captured, which the plugin avoids by setting its workspace again after
 * every cublasSetStream. */
#include <cblas.h>
#include <cublas_v2.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "portable/half.h"
#include "sim_internal.h"

struct cublasContext {
    cudaStream_t stream = nullptr;
    int device = 0;
    size_t workspace_bytes = 0; /* cublasSetWorkspace */
};

namespace {

float to_tf32(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) { /* finite: round the low 13 bits away */
        u += 0x00000fffu + ((u >> 13) & 1u);
        u &= 0xffffe000u;
    }
    memcpy(&x, &u, 4);
    return x;
}

struct Gemm {
    bool ta, tb;
    int m, n, k;
    const void *A, *B;
    void *C;
    int lda, ldb, ldc;
    long long sa, sb, sc;
    int batch;
    bool f64, tf32;
    cudaDataType type; /* CUDA_R_32F, CUDA_R_64F, CUDA_R_16F or CUDA_R_16BF */
    bool c32;          /* 16-bit A and B, C CUDA_R_32F */
    double alpha, beta;
};

/* Bytes spanned by a column-major rows x cols matrix with leading dimension ld. */
size_t span(int rows, int cols, int ld, size_t es) {
    if (rows == 0 || cols == 0) return 0;
    return ((size_t)(cols - 1) * (size_t)ld + (size_t)rows) * es;
}

float widen16(cudaDataType t, uint16_t bits) {
    return t == CUDA_R_16F ? pt_f16_bits_to_f32(bits) : pt_bf16_bits_to_f32(bits);
}
uint16_t narrow16(cudaDataType t, float v) {
    return t == CUDA_R_16F ? pt_f32_to_f16_bits(v) : pt_f32_to_bf16_bits(v);
}

/* The f32 twin of a column-major rows x cols 16-bit matrix (gaps included). */
std::vector<float> widen_matrix(cudaDataType t, const void *p, int rows, int cols, int ld) {
    const uint16_t *h = (const uint16_t *)p;
    std::vector<float> r(span(rows, cols, ld, 1));
    for (size_t i = 0; i < r.size(); ++i) r[i] = widen16(t, h[i]);
    return r;
}

/* One 16-bit product: f32 operands, SGEMM, the m x n results rounded once
 * (the gaps between C's columns are left alone, as cuBLAS does). */
void run16(const Gemm &g, const CBLAS_TRANSPOSE ta, const CBLAS_TRANSPOSE tb, int b) {
    const uint16_t *A = (const uint16_t *)g.A + b * g.sa, *B = (const uint16_t *)g.B + b * g.sb;
    const std::vector<float> fa = widen_matrix(g.type, A, g.ta ? g.k : g.m, g.ta ? g.m : g.k, g.lda);
    const std::vector<float> fb = widen_matrix(g.type, B, g.tb ? g.n : g.k, g.tb ? g.k : g.n, g.ldb);
    if (g.c32) {
        cblas_sgemm(CblasColMajor, ta, tb, g.m, g.n, g.k, (float)g.alpha, fa.data(), g.lda, fb.data(), g.ldb,
                    (float)g.beta, (float *)g.C + b * g.sc, g.ldc);
        return;
    }
    uint16_t *C = (uint16_t *)g.C + b * g.sc;
    std::vector<float> fc = g.beta != 0.0 ? widen_matrix(g.type, C, g.m, g.n, g.ldc)
                                          : std::vector<float>(span(g.m, g.n, g.ldc, 1), 0.0f);
    cblas_sgemm(CblasColMajor, ta, tb, g.m, g.n, g.k, (float)g.alpha, fa.data(), g.lda, fb.data(), g.ldb,
                (float)g.beta, fc.data(), g.ldc);
    for (int j = 0; j < g.n; ++j)
        for (int i = 0; i < g.m; ++i) C[(size_t)j * g.ldc + i] = narrow16(g.type, fc[(size_t)j * g.ldc + i]);
}

void run(const Gemm &g) {
    const CBLAS_TRANSPOSE ta = g.ta ? CblasTrans : CblasNoTrans, tb = g.tb ? CblasTrans : CblasNoTrans;
    for (int b = 0; b < g.batch; ++b) {
        if (g.type == CUDA_R_16F || g.type == CUDA_R_16BF) {
            run16(g, ta, tb, b);
        } else if (g.f64) {
            const double *A = (const double *)g.A + b * g.sa, *B = (const double *)g.B + b * g.sb;
            double *C = (double *)g.C + b * g.sc;
            cblas_dgemm(CblasColMajor, ta, tb, g.m, g.n, g.k, g.alpha, A, g.lda, B, g.ldb, g.beta, C, g.ldc);
        } else {
            const float *A = (const float *)g.A + b * g.sa, *B = (const float *)g.B + b * g.sb;
            float *C = (float *)g.C + b * g.sc;
            std::vector<float> ra, rb;
            if (g.tf32) {
                const size_t na = span(g.ta ? g.k : g.m, g.ta ? g.m : g.k, g.lda, 1);
                const size_t nb = span(g.tb ? g.n : g.k, g.tb ? g.k : g.n, g.ldb, 1);
                ra.assign(A, A + na);
                rb.assign(B, B + nb);
                for (float &v : ra) v = to_tf32(v);
                for (float &v : rb) v = to_tf32(v);
                A = ra.data();
                B = rb.data();
            }
            cblas_sgemm(CblasColMajor, ta, tb, g.m, g.n, g.k, (float)g.alpha, A, g.lda, B, g.ldb, (float)g.beta,
                        C, g.ldc);
        }
    }
}

cublasStatus_t submit(cublasHandle_t h, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                      const void *alpha, const void *A, cudaDataType at, int lda, long long sa, const void *B,
                      cudaDataType bt, int ldb, long long sb, const void *beta, void *C, cudaDataType ct,
                      int ldc, long long sc, int batch, cublasComputeType_t compute) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if ((transa != CUBLAS_OP_N && transa != CUBLAS_OP_T) || (transb != CUBLAS_OP_N && transb != CUBLAS_OP_T))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    const bool half_in = at == CUDA_R_16F || at == CUDA_R_16BF;
    if (at != bt || (at != ct && !(half_in && ct == CUDA_R_32F))) return CUBLAS_STATUS_NOT_SUPPORTED;
    Gemm g;
    g.f64 = at == CUDA_R_64F;
    g.type = at;
    g.c32 = at != ct;
    if (at == CUDA_R_16F || at == CUDA_R_16BF) {
        /* 16-bit storage with f32 accumulation: the scalars are floats. */
        if (compute != CUBLAS_COMPUTE_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
    } else if (at == CUDA_R_32F) {
        if (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_FAST_TF32)
            return CUBLAS_STATUS_NOT_SUPPORTED;
    } else if (at == CUDA_R_64F) {
        if (compute != CUBLAS_COMPUTE_64F) return CUBLAS_STATUS_NOT_SUPPORTED;
    } else {
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    g.tf32 = compute == CUBLAS_COMPUTE_32F_FAST_TF32;
    g.ta = transa == CUBLAS_OP_T;
    g.tb = transb == CUBLAS_OP_T;
    const int a_rows = g.ta ? k : m, b_rows = g.tb ? n : k;
    if (m < 0 || n < 0 || k < 0 || batch < 0 || lda < (a_rows > 1 ? a_rows : 1) ||
        ldb < (b_rows > 1 ? b_rows : 1) || ldc < (m > 1 ? m : 1) || !alpha || !beta)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
    if (h->workspace_bytes == 0 && ptcu_sim_stream_capturing(h->stream)) return CUBLAS_STATUS_NOT_SUPPORTED;
    const size_t es = g.f64 ? 8 : (at == CUDA_R_32F ? 4 : 2), ces = g.c32 ? 4 : es;
    /* Every batch's operands must be device memory of the handle's device. */
    for (int b = 0; b < batch; ++b) {
        const char *pa = (const char *)A + (size_t)(b * sa) * es, *pb = (const char *)B + (size_t)(b * sb) * es;
        const char *pc = (const char *)C + (size_t)(b * sc) * ces;
        if ((k > 0 && (!ptcu_sim_device_range(h->device, pa, span(a_rows, g.ta ? m : k, lda, es)) ||
                       !ptcu_sim_device_range(h->device, pb, span(b_rows, g.tb ? k : n, ldb, es)))) ||
            !ptcu_sim_device_range(h->device, pc, span(m, n, ldc, ces)))
            return CUBLAS_STATUS_INVALID_VALUE;
    }
    g.m = m;
    g.n = n;
    g.k = k;
    g.A = A;
    g.B = B;
    g.C = C;
    g.lda = lda;
    g.ldb = ldb;
    g.ldc = ldc;
    g.sa = sa;
    g.sb = sb;
    g.sc = sc;
    g.batch = batch;
    /* Host pointer mode: the scalars are read at the call. */
    g.alpha = g.f64 ? *(const double *)alpha : *(const float *)alpha;
    g.beta = g.f64 ? *(const double *)beta : *(const float *)beta;
    ptcu_emu::submit(h->stream, [g] { run(g); });
    return CUBLAS_STATUS_SUCCESS;
}

} /* namespace */

cublasStatus_t cublasCreate(cublasHandle_t *handle) {
    if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
    /* PTCU_SIM_FAIL_CUBLAS=1: what cuBLAS says when the device has no memory left for its workspace. */
    const char *fail = getenv("PTCU_SIM_FAIL_CUBLAS");
    if (fail && strcmp(fail, "1") == 0) return CUBLAS_STATUS_ALLOC_FAILED;
    *handle = new cublasContext;
    (*handle)->device = ptcu_sim_current_device();
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->stream = stream;
    handle->workspace_bytes = 0; /* cuBLAS's own pool again */
    return CUBLAS_STATUS_SUCCESS;
}

/* cuBLAS's checks: device memory of the handle's device, 256-byte aligned
 * (the simulated GEMMs need no workspace, so it is only checked). */
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace, size_t bytes) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (bytes == 0) return CUBLAS_STATUS_SUCCESS;
    if (!workspace || (uintptr_t)workspace % 256 != 0 ||
        !ptcu_sim_device_range(handle->device, workspace, bytes))
        return CUBLAS_STATUS_INVALID_VALUE;
    handle->workspace_bytes = bytes;
    return CUBLAS_STATUS_SUCCESS;
}

static const ptcu_sim_code_text<cublasStatus_t> k_statuses[] = {
    PTCU_SIM_CODE(CUBLAS_STATUS_SUCCESS, "success"),
    PTCU_SIM_CODE(CUBLAS_STATUS_NOT_INITIALIZED, "the library was not initialized"),
    PTCU_SIM_CODE(CUBLAS_STATUS_INVALID_VALUE, "an invalid numeric value was used as an argument"),
    PTCU_SIM_CODE(CUBLAS_STATUS_NOT_SUPPORTED, "the functionality requested is not supported"),
    PTCU_SIM_CODE(CUBLAS_STATUS_ALLOC_FAILED, "the resource allocation failed"),
};
static const ptcu_sim_code_text<cublasStatus_t> k_other_status =
    PTCU_SIM_CODE(CUBLAS_STATUS_INTERNAL_ERROR, "an internal operation failed");

const char *cublasGetStatusName(cublasStatus_t s) { return ptcu_sim_text_of(k_statuses, s, k_other_status).name; }

const char *cublasGetStatusString(cublasStatus_t s) { return ptcu_sim_text_of(k_statuses, s, k_other_status).text; }

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType Atype, int lda,
                            const void *B, cudaDataType Btype, int ldb, const void *beta, void *C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
    (void)algo;
    return submit(handle, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0, beta, C, Ctype,
                  ldc, 0, 1, computeType);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k, const void *alpha,
                                          const void *A, cudaDataType Atype, int lda, long long int strideA,
                                          const void *B, cudaDataType Btype, int ldb, long long int strideB,
                                          const void *beta, void *C, cudaDataType Ctype, int ldc,
                                          long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
    (void)algo;
    return submit(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta,
                  C, Ctype, ldc, strideC, batchCount, computeType);
}
