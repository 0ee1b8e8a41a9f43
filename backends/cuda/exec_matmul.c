/* libportable CUDA backend — MATMUL through cuBLAS.
 *
 * out[b] = in0[b] @ in1[b] for b < B, row-major out, inputs row- or
 * column-major with any leading dimension and any batch stride (0:
 * broadcast), as exec_matmul_plan.c maps them: one cublasGemmEx (B == 1) or
 * cublasGemmStridedBatchedEx call on the device's stream, no transposing
 * copies. An operand that is neither layout (a view with stride-0 rows, say)
 * is first copied to a contiguous scratch matrix.
 *
 * Precision. f32 uses CUBLAS_COMPUTE_32F: full FP32 math, exactly as
 * cublasSgemm with the default math mode (cuBLAS does not use TF32 unless
 * asked). Setting the environment variable PORTABLE_CUDA_TF32=1 switches f32
 * products to CUBLAS_COMPUTE_32F_FAST_TF32: tensor cores with 10-bit
 * mantissa inputs and FP32 accumulation, several times faster on Ampere and
 * Hopper, with errors around 1e-3 relative. The variable is read at every
 * call, so a program can switch with setenv() between products. f64 uses
 * CUBLAS_COMPUTE_64F. f16 and bf16 are CUDA_R_16F / CUDA_R_16BF inputs and
 * output with CUBLAS_COMPUTE_32F: tensor cores (CUBLAS_GEMM_DEFAULT picks
 * them for 16-bit inputs since cuBLAS 11; the *_TENSOR_OP algos are
 * deprecated aliases) with f32 accumulation, each result rounded once to
 * the 16-bit type, or (ptcu_gemm_call.out_f32, the convolution's weight
 * gradient) kept in an f32 output.
 *
 * ptcu_gemm is the one cuBLAS call site, shared with the convolution
 * (exec_conv.c), so both follow the same precision policy. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* PORTABLE_CUDA_TF32, parsed again only when its value changes (a program
 * may switch it between products), so a bad value is reported once per
 * value, not once per product. */
static bool tf32_requested(void) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char seen[64] = "\x01"; /* no value looks like this: the first call parses */
    static bool on;
    const char *v = getenv("PORTABLE_CUDA_TF32");
    pthread_mutex_lock(&lock);
    if (strncmp(seen, v ? v : "", sizeof seen) != 0) {
        snprintf(seen, sizeof seen, "%s", v ? v : "");
        /* even index: off, odd: on */
        static const char *const off_on[] = {"0", "1", "false", "true", "off", "on", NULL};
        on = PT_HOST_HAS(ptcu_host, env_choice) &&
             ptcu_host->env_choice("PORTABLE_CUDA_TF32", off_on, 0) % 2 == 1;
    }
    bool result = on;
    pthread_mutex_unlock(&lock);
    return result;
}

static bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

/* A contiguous [batches, rows, cols] copy of x's first `batches` matrices. */
static pt_status copy_operand(ptcu_device *d, const pt_operand *x, int64_t batches, void *dst) {
    pt_operand src = *x;
    src.shape[0] = batches;
    return ptcu_copy_contiguous(d, &src, dst);
}

static size_t align_up(size_t v) { return (v + 255) & ~(size_t)255; }

pt_status ptcu_gemm(ptcu_device *d, const ptcu_gemm_call *c, const pt_op *op) {
    if (!fits_int(c->batch) || !fits_int(c->M) || !fits_int(c->N) || !fits_int(c->K) || !fits_int(c->la.ld) ||
        !fits_int(c->lb.ld))
        return ptcu_fail(PT_ERR_UNSUPPORTED, "%s: a GEMM [%lld x %lld] x [%lld x %lld] x %lld batches exceeds "
                         "cuBLAS's 32-bit sizes", pt_op_name(op->kind), (long long)c->M, (long long)c->K,
                         (long long)c->K, (long long)c->N, (long long)c->batch);
    const ptcu_gemm_args g = ptcu_gemm_args_for(c->M, c->N, c->K, c->la, c->lb);
    cublasHandle_t h;
    pt_status s;
    if ((s = ptcu_blas(d, &h, op)) != PT_OK) return s;
    const pt_dtype dtype = c->dtype;
    const bool f64 = dtype == PT_F64;
    const cublasOperation_t ta = g.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = g.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cudaDataType_t dt = f64 ? CUDA_R_64F
                              : dtype == PT_F16  ? CUDA_R_16F
                              : dtype == PT_BF16 ? CUDA_R_16BF
                                                 : CUDA_R_32F;
    const cudaDataType_t ct = c->out_f32 ? CUDA_R_32F : dt;
    /* TF32 is an f32-input mode; 16-bit inputs already go to the tensor cores. */
    const bool tf32 = dtype == PT_F32 && tf32_requested();
    const cublasComputeType_t comp = f64 ? CUBLAS_COMPUTE_64F
                                     : tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                            : CUBLAS_COMPUTE_32F;
    const float alpha_f = 1.0f, beta_f = c->accumulate ? 1.0f : 0.0f;
    const double alpha_d = 1.0, beta_d = c->accumulate ? 1.0 : 0.0;
    const void *alpha = f64 ? (const void *)&alpha_d : (const void *)&alpha_f;
    const void *beta = f64 ? (const void *)&beta_d : (const void *)&beta_f;
    cublasStatus_t st;
    if (c->batch == 1) {
        st = cublasGemmEx(h, ta, tb, (int)g.m, (int)g.n, (int)g.k, alpha, c->b, dt, (int)g.ld_first, c->a, dt,
                          (int)g.ld_second, beta, c->c, ct, (int)g.ld_out, comp, CUBLAS_GEMM_DEFAULT);
    } else {
        st = cublasGemmStridedBatchedEx(h, ta, tb, (int)g.m, (int)g.n, (int)g.k, alpha, c->b, dt, (int)g.ld_first,
                                        (long long)c->sb, c->a, dt, (int)g.ld_second, (long long)c->sa, beta, c->c,
                                        ct, (int)g.ld_out, (long long)c->sc, (int)c->batch, comp,
                                        CUBLAS_GEMM_DEFAULT);
    }
    if (st != CUBLAS_STATUS_SUCCESS)
        return ptcu_blas_error(st, "%s: %s [%lld x %lld] @ [%lld x %lld] x %lld (%s%s%s)", pt_op_name(op->kind),
                               c->batch == 1 ? "cublasGemmEx" : "cublasGemmStridedBatchedEx", (long long)c->M,
                               (long long)c->K, (long long)c->K, (long long)c->N, (long long)c->batch,
                               pt_dtype_table_name(dtype), c->out_f32 ? " into f32" : "", tf32 ? ", TF32" : "");
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return ptcu_cuda_error(e, "%s: after cuBLAS", pt_op_name(op->kind));
    return PT_OK;
}

static pt_status matmul_locked(ptcu_device *d, const pt_op *op) {
    const pt_operand *A = &op->in[0], *B = &op->in[1], *C = &op->out;
    const int64_t batch = C->shape[0], M = C->shape[1], N = C->shape[2], K = A->shape[2];
    const size_t es = pt_dtype_table_size(op->out.dtype);
    if (!fits_int(batch) || !fits_int(M) || !fits_int(N) || !fits_int(K)) {
        return ptcu_fail(PT_ERR_UNSUPPORTED,
                         "MATMUL [%lld x %lld x %lld] x %lld batches exceeds cuBLAS's 32-bit sizes",
                         (long long)M, (long long)K, (long long)N, (long long)batch);
    }
    ptcu_gemm_call g;
    memset(&g, 0, sizeof g);
    g.dtype = op->out.dtype;
    g.batch = batch;
    g.M = M;
    g.N = N;
    g.K = K;
    g.a = ptcu_operand_ptr(A);
    g.b = ptcu_operand_ptr(B);
    g.c = ptcu_operand_ptr(C);
    g.sa = A->strides[0];
    g.sb = B->strides[0];
    g.sc = M * N;
    g.la = ptcu_matrix_layout_of(M, K, A->strides[1], A->strides[2]);
    g.lb = ptcu_matrix_layout_of(K, N, B->strides[1], B->strides[2]);
    const bool copy_a = g.la.layout == PTCU_NEEDS_COPY || !fits_int(g.la.ld);
    const bool copy_b = g.lb.layout == PTCU_NEEDS_COPY || !fits_int(g.lb.ld);
    pt_status s;
    if (copy_a || copy_b) {
        const int64_t ba = (g.sa == 0 || batch == 1) ? 1 : batch;
        const int64_t bb = (g.sb == 0 || batch == 1) ? 1 : batch;
        const size_t bytes_a = copy_a ? align_up((size_t)(ba * M * K) * es) : 0;
        const size_t bytes_b = copy_b ? align_up((size_t)(bb * K * N) * es) : 0;
        void *scratch = NULL;
        if ((s = ptcu_scratch(d, bytes_a + bytes_b, &scratch)) != PT_OK) return s;
        if (copy_a) {
            if ((s = copy_operand(d, A, ba, scratch)) != PT_OK) return s;
            g.a = scratch;
            g.sa = ba == 1 ? 0 : M * K;
            g.la.layout = PTCU_ROW_MAJOR;
            g.la.ld = K;
        }
        if (copy_b) {
            void *dst = (char *)scratch + bytes_a;
            if ((s = copy_operand(d, B, bb, dst)) != PT_OK) return s;
            g.b = dst;
            g.sb = bb == 1 ? 0 : K * N;
            g.lb.layout = PTCU_ROW_MAJOR;
            g.lb.ld = N;
        }
    }
    return ptcu_gemm(d, &g, op);
}

pt_status ptcu_matmul(ptcu_device *d, const pt_op *op) {
    /* The cuBLAS handle and the scratch buffer are per device: one op at a time. */
    pthread_mutex_lock(&d->lock);
    pt_status s = matmul_locked(d, op);
    pthread_mutex_unlock(&d->lock);
    return s;
}
