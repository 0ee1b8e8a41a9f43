/* libportable OpenCL backend — PT_OP_MATMUL through CLBlast.
 *
 * backend.h gives each input as [B, M, K] / [B, K, N] with either
 * strides[2] == 1 (row-major, leading dimension strides[1]) or
 * strides[1] == 1 (column-major, leading dimension strides[2]). In CLBlast's
 * row-major layout a column-major matrix is the transpose of a row-major one,
 * so it becomes a transpose flag, never a copy. The batch stride may be 0
 * (one matrix broadcast over the batch). Offsets and strides go to CLBlast in
 * elements. f16 (on devices with cl_khr_fp16 only: ocl_supports) is
 * CLBlastHgemm, whose kernels multiply and accumulate in half precision;
 * elsewhere the core sends f16/bf16 products here as f32. ocl_gemm is the
 * one CLBlast call site, shared with the convolution (exec_conv.c); the f32
 * products exec_matmul_own.c takes run on the plugin's own kernels instead. */
#include <clblast_c.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "portable/half.h"

typedef struct ocl_gemm_side {
    CLBlastTranspose trans;
    size_t ld;
} ocl_gemm_side;

/* rows x cols matrix with element strides (s_row, s_col). */
static bool ocl_gemm_describe(int64_t rows, int64_t cols, int64_t s_row, int64_t s_col,
                              ocl_gemm_side *out) {
    /* A dimension of extent 1 never steps, so its stride is free: pick the
     * leading dimension CLBlast accepts. */
    if (s_col == 1 && (s_row >= cols || rows == 1)) {
        out->trans = CLBlastTransposeNo;
        out->ld = (size_t)(s_row > cols ? s_row : cols);
        return true;
    }
    if (s_row == 1 && (s_col >= rows || cols == 1)) {
        out->trans = CLBlastTransposeYes;
        out->ld = (size_t)(s_col > rows ? s_col : rows);
        return true;
    }
    return false;
}

static const char *ocl_clblast_name(CLBlastStatusCode c) {
    switch (c) {
    case CLBlastNotImplemented: return "CLBlastNotImplemented";
    case CLBlastInvalidMatrixA: return "CLBlastInvalidMatrixA";
    case CLBlastInvalidMatrixB: return "CLBlastInvalidMatrixB";
    case CLBlastInvalidMatrixC: return "CLBlastInvalidMatrixC";
    case CLBlastInvalidDimension: return "CLBlastInvalidDimension";
    case CLBlastInvalidLeadDimA: return "CLBlastInvalidLeadDimA";
    case CLBlastInvalidLeadDimB: return "CLBlastInvalidLeadDimB";
    case CLBlastInvalidLeadDimC: return "CLBlastInvalidLeadDimC";
    case CLBlastInsufficientMemoryA: return "CLBlastInsufficientMemoryA";
    case CLBlastInsufficientMemoryB: return "CLBlastInsufficientMemoryB";
    case CLBlastInsufficientMemoryC: return "CLBlastInsufficientMemoryC";
    case CLBlastInsufficientMemoryTemp: return "CLBlastInsufficientMemoryTemp";
    case CLBlastInvalidBatchCount: return "CLBlastInvalidBatchCount";
    case CLBlastInvalidLocalMemUsage: return "CLBlastInvalidLocalMemUsage";
    case CLBlastNoDoublePrecision: return "CLBlastNoDoublePrecision";
    case CLBlastDatabaseError: return "CLBlastDatabaseError";
    case CLBlastUnknownError: return "CLBlastUnknownError";
    case CLBlastUnexpectedError: return "CLBlastUnexpectedError";
    default: return NULL;
    }
}

static pt_status ocl_clblast_fail(CLBlastStatusCode c, const char *what, const ocl_gemm_call *g, const pt_op *op) {
    char name[64];
    const char *n = ocl_clblast_name(c);
    /* CLBlast's other codes are OpenCL error codes. */
    snprintf(name, sizeof name, "%s", n ? n : ocl_error_name((cl_int)c));
    pt_status s = n ? PT_ERR_BACKEND : ocl_status_of((cl_int)c);
    if (c == CLBlastTempBufferAllocFailure) s = PT_ERR_OUT_OF_MEMORY;
    return ocl_fail(s, "%s: %s (B=%zu, M=%zu, N=%zu, K=%zu) failed: %s", pt_op_name(op->kind), what, g->batch,
                    g->M, g->N, g->K, name);
}

pt_status ocl_gemm(ocl_device *d, const ocl_gemm_call *g, const pt_op *op) {
    if (ocl_gemm_own_takes(d, g)) return ocl_gemm_own(d, g);
    ocl_gemm_side sa, sb;
    if (!ocl_gemm_describe((int64_t)g->M, (int64_t)g->K, g->a_row, g->a_col, &sa) ||
        !ocl_gemm_describe((int64_t)g->K, (int64_t)g->N, g->b_row, g->b_col, &sb))
        return ocl_fail(PT_ERR_INTERNAL,
                        "%s: GEMM operand strides [%lld, %lld] / [%lld, %lld] are neither row- nor column-major",
                        pt_op_name(op->kind), (long long)g->a_row, (long long)g->a_col, (long long)g->b_row,
                        (long long)g->b_col);
    const size_t B = g->batch, M = g->M, N = g->N, K = g->K;
    cl_mem am = g->a, bm = g->b, cm = g->c;
    CLBlastStatusCode st;
    const char *what;
    /* CLBlast<P>gemm for one product, CLBlast<P>gemmStridedBatched for B. */
    /* alpha = 1 and beta = 0 (1 to accumulate) in each precision (cl_half: the bits). */
    const cl_half one_h = pt_f32_to_f16_bits(1.0f), beta_h = g->accumulate ? one_h : 0;
    const double beta = g->accumulate ? 1.0 : 0.0;
#define OCL_CLBLAST_GEMM(P, ONE, BETA)                                                                         \
    (B == 1 ? (what = "CLBlast" #P "gemm",                                                                     \
               CLBlast##P##gemm(CLBlastLayoutRowMajor, sa.trans, sb.trans, M, N, K, ONE, am, g->ao, sa.ld, bm, \
                                g->bo, sb.ld, BETA, cm, g->co, N, &d->queue, NULL))                            \
            : (what = "CLBlast" #P "gemmStridedBatched",                                                       \
               CLBlast##P##gemmStridedBatched(CLBlastLayoutRowMajor, sa.trans, sb.trans, M, N, K, ONE, am,     \
                                              g->ao, sa.ld, g->a_stride, bm, g->bo, sb.ld, g->b_stride, BETA,  \
                                              cm, g->co, N, g->c_stride, B, &d->queue, NULL)))
    if (g->dtype == PT_F16)
        st = OCL_CLBLAST_GEMM(H, one_h, beta_h);
    else if (g->dtype == PT_F64)
        st = OCL_CLBLAST_GEMM(D, 1.0, beta);
    else
        st = OCL_CLBLAST_GEMM(S, 1.0f, (float)beta);
#undef OCL_CLBLAST_GEMM
    if (st != CLBlastSuccess) return ocl_clblast_fail(st, what, g, op);
    return PT_OK;
}

pt_status ocl_matmul_call(const pt_op *op, ocl_gemm_call *g) {
    const pt_operand *a = &op->in[0], *b = &op->in[1], *c = &op->out;
    cl_long ao = 0, bo = 0, co = 0;
    pt_status s;
    if ((s = ocl_elem_offset(a, &ao)) != PT_OK || (s = ocl_elem_offset(b, &bo)) != PT_OK ||
        (s = ocl_elem_offset(c, &co)) != PT_OK)
        return s;
    memset(g, 0, sizeof *g);
    g->dtype = c->dtype == PT_F16 ? PT_F16 : (op->dtype == PT_F64 || c->dtype == PT_F64) ? PT_F64 : PT_F32;
    g->batch = (size_t)c->shape[0];
    g->M = (size_t)c->shape[1];
    g->N = (size_t)c->shape[2];
    g->K = (size_t)a->shape[2];
    g->a = (cl_mem)a->buf;
    g->b = (cl_mem)b->buf;
    g->c = (cl_mem)c->buf;
    g->ao = (size_t)ao;
    g->bo = (size_t)bo;
    g->co = (size_t)co;
    g->a_row = a->strides[1];
    g->a_col = a->strides[2];
    g->b_row = b->strides[1];
    g->b_col = b->strides[2];
    g->a_stride = (size_t)a->strides[0];
    g->b_stride = (size_t)b->strides[0];
    g->c_stride = g->M * g->N;
    return PT_OK;
}

pt_status ocl_matmul(ocl_device *d, const pt_op *op) {
    ocl_gemm_call g;
    pt_status s = ocl_matmul_call(op, &g);
    return s == PT_OK ? ocl_gemm(d, &g, op) : s;
}
