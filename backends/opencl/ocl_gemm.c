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
 * elsewhere the core sends f16/bf16 products here as f32. */
#include <clblast_c.h>
#include <stdio.h>

#include "ocl_internal.h"
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

static pt_status ocl_clblast_fail(CLBlastStatusCode c, const char *what, const pt_op *op) {
    char name[64];
    const char *n = ocl_clblast_name(c);
    /* CLBlast's other codes are OpenCL error codes. */
    snprintf(name, sizeof name, "%s", n ? n : ocl_error_name((cl_int)c));
    pt_status s = n ? PT_ERR_BACKEND : ocl_status_of((cl_int)c);
    if (c == CLBlastTempBufferAllocFailure) s = PT_ERR_OUT_OF_MEMORY;
    return ocl_fail(s, "%s (B=%lld, M=%lld, N=%lld, K=%lld) failed: %s", what,
                    (long long)op->out.shape[0], (long long)op->out.shape[1],
                    (long long)op->out.shape[2], (long long)op->in[0].shape[2], name);
}

pt_status ocl_matmul(ocl_device *d, const pt_op *op) {
    const pt_operand *a = &op->in[0], *b = &op->in[1], *c = &op->out;
    size_t B = (size_t)c->shape[0], M = (size_t)c->shape[1], N = (size_t)c->shape[2];
    size_t K = (size_t)a->shape[2];
    ocl_gemm_side sa, sb;
    if (!ocl_gemm_describe(a->shape[1], a->shape[2], a->strides[1], a->strides[2], &sa) ||
        !ocl_gemm_describe(b->shape[1], b->shape[2], b->strides[1], b->strides[2], &sb))
        return ocl_fail(PT_ERR_INTERNAL,
                        "MATMUL operand strides [%lld, %lld] / [%lld, %lld] are neither row- "
                        "nor column-major",
                        (long long)a->strides[1], (long long)a->strides[2],
                        (long long)b->strides[1], (long long)b->strides[2]);
    cl_long ao = 0, bo = 0, co = 0;
    pt_status s;
    if ((s = ocl_elem_offset(a, &ao)) != PT_OK || (s = ocl_elem_offset(b, &bo)) != PT_OK ||
        (s = ocl_elem_offset(c, &co)) != PT_OK)
        return s;
    cl_mem am = (cl_mem)a->buf, bm = (cl_mem)b->buf, cm = (cl_mem)c->buf;
    size_t a_stride = (size_t)a->strides[0], b_stride = (size_t)b->strides[0], c_stride = M * N;
    CLBlastStatusCode st;
    const char *what;
    /* CLBlast<P>gemm for one product, CLBlast<P>gemmStridedBatched for B. */
    /* alpha = 1 and beta = 0 in each precision (cl_half: the bits). */
    const cl_half one_h = pt_f32_to_f16_bits(1.0f), zero_h = 0;
#define OCL_CLBLAST_GEMM(P, ONE, ZERO)                                                           \
    (B == 1 ? (what = "CLBlast" #P "gemm",                                                       \
               CLBlast##P##gemm(CLBlastLayoutRowMajor, sa.trans, sb.trans, M, N, K, ONE, am,     \
                                (size_t)ao, sa.ld, bm, (size_t)bo, sb.ld, ZERO, cm, (size_t)co,  \
                                N, &d->queue, NULL))                                             \
            : (what = "CLBlast" #P "gemmStridedBatched",                                         \
               CLBlast##P##gemmStridedBatched(                                                   \
                   CLBlastLayoutRowMajor, sa.trans, sb.trans, M, N, K, ONE, am, (size_t)ao,      \
                   sa.ld, a_stride, bm, (size_t)bo, sb.ld, b_stride, ZERO, cm, (size_t)co, N,    \
                   c_stride, B, &d->queue, NULL)))
    if (c->dtype == PT_F16)
        st = OCL_CLBLAST_GEMM(H, one_h, zero_h);
    else if (op->dtype == PT_F64 || c->dtype == PT_F64)
        st = OCL_CLBLAST_GEMM(D, 1.0, 0.0);
    else
        st = OCL_CLBLAST_GEMM(S, 1.0f, 0.0f);
#undef OCL_CLBLAST_GEMM
    if (st != CLBlastSuccess) return ocl_clblast_fail(st, what, op);
    return PT_OK;
}
