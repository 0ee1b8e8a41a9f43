/* libportable CUDA backend — MATMUL operands as cuBLAS arguments.
 *
 * cuBLAS is column-major; our tensors are row-major views with arbitrary
 * strides. A row-major C[M, N] stored with leading dimension N is, read
 * column-major, C^T[N, M]; and C^T = B^T A^T. So every product is one cuBLAS
 * call with m = N, n = M, k = K whose first operand is B and second is A:
 *
 *   B row-major (ld):    read column-major it is B^T [N x K]  -> op N
 *   B column-major (ld): read column-major it is B   [K x N]  -> op T
 *   A row-major (ld):    read column-major it is A^T [K x M]  -> op N
 *   A column-major (ld): read column-major it is A   [M x K]  -> op T
 *
 * No copy and no explicit transpose for either layout (transposed views from
 * pt_transpose are column-major). Pure C: unit-testable without a GPU. */
#include "internal.h"

ptcu_matrix_layout ptcu_matrix_layout_of(int64_t rows, int64_t cols, int64_t s_row,
                                         int64_t s_col) {
    ptcu_matrix_layout r;
    /* Row-major: unit column stride, rows at least cols apart (cuBLAS wants
     * ld >= the stored column length, here cols). */
    if ((cols == 1 || s_col == 1) && (rows == 1 || s_row >= cols)) {
        r.layout = PTCU_ROW_MAJOR;
        r.ld = rows == 1 ? cols : s_row;
        return r;
    }
    if ((rows == 1 || s_row == 1) && (cols == 1 || s_col >= rows)) {
        r.layout = PTCU_COL_MAJOR;
        r.ld = cols == 1 ? rows : s_col;
        return r;
    }
    r.layout = PTCU_NEEDS_COPY;
    r.ld = 0;
    return r;
}

ptcu_gemm_args ptcu_gemm_args_for(int64_t M, int64_t N, int64_t K, ptcu_matrix_layout a,
                                  ptcu_matrix_layout b) {
    ptcu_gemm_args g;
    g.m = N;
    g.n = M;
    g.k = K;
    g.trans_first = b.layout == PTCU_COL_MAJOR;
    g.ld_first = b.ld;
    g.trans_second = a.layout == PTCU_COL_MAJOR;
    g.ld_second = a.ld;
    g.ld_out = N;
    /* ld must be >= 1 even for degenerate shapes. */
    if (g.ld_first < 1) g.ld_first = 1;
    if (g.ld_second < 1) g.ld_second = 1;
    return g;
}
