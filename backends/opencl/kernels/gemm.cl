/* libportable OpenCL kernels — f32 products for CPU devices (PT_OP_MATMUL
 * and the convolution's GEMMs, exec_matmul_own.c decides which).
 *
 * Compiled only into the product program (launch_gemm_program.c), which
 * defines PT_GEMM_PROGRAM and the tile sizes; the per-dtype programs embed this text too and
 * skip it.
 *
 * Why: on a CPU device (PoCL, Intel's CPU runtime) CLBlast's direct kernels
 * leave most of the vector units idle: on a 2-core AVX2 EPYC under PoCL 3.1
 * they ran a [64, 64] @ [64, 256] product at 9.5 GFLOP/s and a 512-cube at
 * 12.8; these explicit 8-wide vectors ran them at 22-33 and 23-32. A CPU
 * device runs a work-item's code on one core, so each work-item keeps a
 * tile of C in vector registers and reads its operands straight from
 * memory (the caches do what local memory does on a GPU). The vectors are
 * GEMM_V floats: 8, or 16 on a device whose native float vector is 16
 * wide (PoCL on an AVX-512 CPU compiles 8-float vectors to 256-bit
 * registers; 16-float ones to 512-bit, which on a 2-core AVX-512 Xeon ran
 * both forms of the [64, 64] @ [64, 256] product in about half the time).
 *
 * C[b] is row-major [M, N] (leading dimension N) at element offset co +
 * b * c_batch; A[b] is [M, K] and B[b] is [K, N] with any element strides
 * (a_row, a_col), (b_row, b_col) and batch strides (0: one matrix for every
 * b). acc != 0 adds the product to C (one rounding more), else C is
 * overwritten. sums > 1 (with one matrix of tiles, c_batch 0) makes C the
 * sum of the products of matrices 0 .. sums-1 of A and B, each added as
 * it is made, in order: the bits of sums launches that accumulate, in one
 * (a convolution's weight gradient sums its images so, and 64 launches of
 * a tiny product cost PoCL more than their work). The launch is 1-D (as
 * graphs record them): `items` tiles,
 * tile t being column block t % nj of row block (t / nj) % ni of matrix
 * t / (nj * ni); global ids past `items` do nothing.
 *
 * Two forms, by which operand is contiguous along the vector:
 *   gemm_rows, B's rows contiguous (b_col == 1): a work-item owns 4 rows x
 *     GEMM_V columns of C: for each k, one vector load of B's row k and four
 *     broadcasts of A's column k (A may have any strides).
 *   gemm_dots, A's rows and B's columns contiguous (a_col == 1, b_row == 1,
 *     the x @ W^T of a linear layer): a work-item owns 2 rows x 4 columns
 *     (4 x 4 at 16 floats), each a dot product of two contiguous rows in
 *     GEMM_V lanes, summed at the end.
 * Tiles that stick out of C compute with clamped indices (rows and
 * columns that exist) and store only what lies inside; columns of gemm_rows
 * that do not fill a vector run scalar with the general strides. */
#ifdef PT_GEMM_PROGRAM

/* GEMM_ROWS_R x GEMM_ROWS_C and GEMM_DOTS_R x GEMM_DOTS_C, the tiles,
 * come from the host (launch_gemm_program.c's table), which counts the
 * launch's tiles with the same numbers. */

/* The loops over a tile's rows and columns run unrolled: their trip counts
 * are the tile's constants, and only unrolled loops let the compiler keep
 * the accumulator arrays in vector registers. PoCL 3.1 marks every loop of
 * a program "do not unroll" unless the source asks; left so, the arrays
 * stayed on the stack, a load and a store around every FMA, and a
 * [64, 64] @ [64, 256] product ran at 19-22 GFLOP/s on a 2-core Zen 4
 * (AVX2) where the unrolled loops run it at 38-49. A loop that stops at
 * the edge of C runs its full count and skips, so it unrolls too. */
#define PT_GEMM_UNROLL _Pragma("unroll")

/* The vector of GEMM_V floats (8 or 16, from the host) and its loads and
 * stores. */
#define GEMM_CAT2(a, b) a##b
#define GEMM_CAT(a, b) GEMM_CAT2(a, b)
#define gemm_vec GEMM_CAT(float, GEMM_V)
#define gemm_vload GEMM_CAT(vload, GEMM_V)
#define gemm_vstore GEMM_CAT(vstore, GEMM_V)

static inline void gemm_store(__global float *c, float v, int acc) { *c = acc ? *c + v : v; }

/* Tile t of an R x W tiling of [M, N] matrices: its first row *i0 and
 * column *j0; returns its matrix. */
static inline long gemm_tile(long t, int M, int N, int R, int W, int *i0, int *j0) {
    const int nj = (N + W - 1) / W, ni = (M + R - 1) / R;
    *j0 = (int)(t % nj) * W;
    *i0 = (int)((t / nj) % ni) * R;
    return t / ((long)nj * ni);
}

/* A kernel's start: its tile (global id t, rows i0.., columns j0.. of
 * matrix m) and that matrix's A, B and C; ids past the last tile return. */
#define GEMM_TILE(R, W)                                                                  \
    const long t = get_global_id(0);                                                     \
    if (t >= items) return;                                                              \
    int i0, j0;                                                                          \
    const long m = gemm_tile(t, M, N, (R), (W), &i0, &j0);                               \
    __global float *C = c + co + m * c_batch;                                            \
    for (int img = 0; img < sums; ++img) {                                               \
        __global const float *A = a + ao + (m + img) * a_batch, *B = b + bo + (m + img) * b_batch; \
        const int acc = acc0 || img > 0;

/* The end of GEMM_TILE's loop over the summed matrices. */
#define GEMM_TILE_END }

__kernel void gemm_rows(__global const float *a, long ao, long a_row, long a_col, long a_batch,
                        __global const float *b, long bo, long b_row, long b_col, long b_batch,
                        __global float *c, long co, long c_batch, int M, int N, int K, int acc0,
                        int sums, long items) {
    GEMM_TILE(GEMM_ROWS_R, GEMM_ROWS_C)
    long arow[GEMM_ROWS_R];
    PT_GEMM_UNROLL
    for (int r = 0; r < GEMM_ROWS_R; ++r) arow[r] = (long)min(i0 + r, M - 1) * a_row;
    if (j0 + GEMM_ROWS_C <= N && b_col == 1) {
        gemm_vec s[GEMM_ROWS_R];
        PT_GEMM_UNROLL
        for (int r = 0; r < GEMM_ROWS_R; ++r) s[r] = (gemm_vec)(0.0f);
        for (int k = 0; k < K; ++k) {
            const gemm_vec bk = gemm_vload(0, B + k * b_row + j0);
            const long ak = k * a_col;
            PT_GEMM_UNROLL
            for (int r = 0; r < GEMM_ROWS_R; ++r) s[r] = fma((gemm_vec)(A[arow[r] + ak]), bk, s[r]);
        }
        PT_GEMM_UNROLL
        for (int r = 0; r < GEMM_ROWS_R; ++r) {
            if (i0 + r >= M) break;
            __global float *row = C + (long)(i0 + r) * N + j0;
            gemm_vstore(acc ? gemm_vload(0, row) + s[r] : s[r], 0, row);
        }
        continue;
    }
    for (int r = 0; r < GEMM_ROWS_R && i0 + r < M; ++r)
        for (int j = j0; j < j0 + GEMM_ROWS_C && j < N; ++j) {
            float s = 0.0f;
            for (int k = 0; k < K; ++k) s = fma(A[(long)(i0 + r) * a_row + k * a_col], B[k * b_row + j * b_col], s);
            gemm_store(C + (long)(i0 + r) * N + j, s, acc);
        }
    GEMM_TILE_END
}

/* The sum of v's lanes, pairwise. */
static inline float gemm_lanes(gemm_vec v) {
#if GEMM_V == 16
    const float8 o = v.lo + v.hi;
    const float4 h = o.lo + o.hi;
#else
    const float4 h = v.lo + v.hi;
#endif
    const float2 q = h.lo + h.hi;
    return q.x + q.y;
}

__kernel void gemm_dots(__global const float *a, long ao, long a_row, long a_batch,
                        __global const float *b, long bo, long b_col, long b_batch,
                        __global float *c, long co, long c_batch, int M, int N, int K, int acc0,
                        int sums, long items) {
    GEMM_TILE(GEMM_DOTS_R, GEMM_DOTS_C)
    __global const float *ar[GEMM_DOTS_R], *bc[GEMM_DOTS_C];
    PT_GEMM_UNROLL
    for (int r = 0; r < GEMM_DOTS_R; ++r) ar[r] = A + (long)min(i0 + r, M - 1) * a_row;
    PT_GEMM_UNROLL
    for (int q = 0; q < GEMM_DOTS_C; ++q) bc[q] = B + (long)min(j0 + q, N - 1) * b_col;
    gemm_vec s[GEMM_DOTS_R][GEMM_DOTS_C];
    PT_GEMM_UNROLL
    for (int r = 0; r < GEMM_DOTS_R; ++r)
        PT_GEMM_UNROLL
        for (int q = 0; q < GEMM_DOTS_C; ++q) s[r][q] = (gemm_vec)(0.0f);
    const int kv = K / GEMM_V * GEMM_V;
    for (int k = 0; k < kv; k += GEMM_V) {
        gemm_vec av[GEMM_DOTS_R];
        PT_GEMM_UNROLL
        for (int r = 0; r < GEMM_DOTS_R; ++r) av[r] = gemm_vload(0, ar[r] + k);
        PT_GEMM_UNROLL
        for (int q = 0; q < GEMM_DOTS_C; ++q) {
            const gemm_vec bv = gemm_vload(0, bc[q] + k);
            PT_GEMM_UNROLL
            for (int r = 0; r < GEMM_DOTS_R; ++r) s[r][q] = fma(av[r], bv, s[r][q]);
        }
    }
    PT_GEMM_UNROLL
    for (int r = 0; r < GEMM_DOTS_R; ++r)
        PT_GEMM_UNROLL
        for (int q = 0; q < GEMM_DOTS_C; ++q) {
            if (i0 + r >= M || j0 + q >= N) continue;
            float v = gemm_lanes(s[r][q]);
            for (int k = kv; k < K; ++k) v = fma(ar[r][k], bc[q][k], v);
            gemm_store(C + (long)(i0 + r) * N + j0 + q, v, acc);
        }
    GEMM_TILE_END
}

#endif
