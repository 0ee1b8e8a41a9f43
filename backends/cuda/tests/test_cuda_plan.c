/* libportable CUDA backend — unit tests of the pure-C planning code, no GPU
 * needed: element-wise iteration spaces (launch_geometry.c: every element of
 * random shapes, strides, permutations and broadcasts must land where the
 * operands put it; the 1-D runs the core's dimension merging produces take
 * the vectorised path) and the row-major -> cuBLAS column-major GEMM mapping
 * (exec_matmul_plan.c: checked against a reference implementation of cuBLAS's
 * gemm semantics and its leading-dimension rules, for row-major,
 * column-major, padded and copy-needing layouts). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

static int failures, checks;
#define CHECK(c) do { ++checks; if (!(c)) { printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); ++failures; } } while (0)

static unsigned long long rng = 88172645463325252ull;
static unsigned rnd(unsigned n) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (unsigned)(rng % n); }

/* offsets of linear index i, decomposed as the strided kernel does */
static void offsets(const ptcu_geometry *g, int nop, int64_t i, int64_t *off) {
    for (int k = 0; k < nop; ++k) off[k] = 0;
    int64_t rem = i;
    for (int d = g->ndim - 1; d >= 0; --d) {
        int64_t c = rem % g->shape[d]; rem /= g->shape[d];
        for (int k = 0; k < nop; ++k) off[k] += c * g->strides[k][d];
    }
}

static void test_geometry(void) {
    for (int trial = 0; trial < 3000; ++trial) {
        pt_operand out, in[3];
        memset(&out, 0, sizeof out); memset(in, 0, sizeof in);
        int nd = (int)rnd(6); /* 0..5 */
        out.ndim = nd;
        int nin = (int)rnd(4);
        for (int d = 0; d < nd; ++d) out.shape[d] = 1 + rnd(4);
        /* out: contiguous, or a permutation / padded strides */
        int style = (int)rnd(3);
        int64_t st = 1;
        for (int d = nd - 1; d >= 0; --d) { out.strides[d] = st; st *= out.shape[d] + (style == 1 ? rnd(2) : 0); }
        if (style == 2 && nd >= 2) { int a = rnd(nd), b = rnd(nd); int64_t t = out.strides[a]; out.strides[a] = out.strides[b]; out.strides[b] = t; }
        for (int k = 0; k < nin; ++k) {
            in[k].ndim = nd;
            memcpy(in[k].shape, out.shape, sizeof out.shape);
            int s2 = (int)rnd(4);
            int64_t s = 1;
            for (int d = nd - 1; d >= 0; --d) {
                bool bc = s2 == 3 || (s2 == 2 && rnd(2));
                in[k].strides[d] = bc ? 0 : s;
                if (!bc) s *= out.shape[d] + (s2 == 1 ? rnd(3) : 0);
            }
        }
        ptcu_ew_launch l; memset(&l, 0, sizeof l);
        ptcu_geometry_build(&out, in, nin, &l);
        int64_t numel = 1;
        for (int d = 0; d < nd; ++d) numel *= out.shape[d];
        CHECK(l.numel == numel);
        CHECK(l.geo.ndim >= 1 && l.geo.ndim <= (nd ? nd : 1));
        const pt_operand *ops[4] = {&out, &in[0], &in[1], &in[2]};
        for (int64_t i = 0; i < numel; ++i) {
            /* reference offsets from the original operands */
            int64_t ref[4] = {0, 0, 0, 0}, rem = i;
            for (int d = nd - 1; d >= 0; --d) {
                int64_t c = rem % out.shape[d]; rem /= out.shape[d];
                for (int k = 0; k <= nin; ++k) ref[k] += c * ops[k]->strides[d];
            }
            int64_t got[4];
            if (l.contiguous) {
                got[0] = i;
                for (int k = 1; k <= nin; ++k) got[k] = l.geo.strides[k][0] == 0 ? 0 : i;
            } else {
                offsets(&l.geo, 1 + nin, i, got);
            }
            for (int k = 0; k <= nin; ++k) if (got[k] != ref[k]) { CHECK(got[k] == ref[k]); i = numel; break; }
        }
    }
    /* Merged operands (the core's pt__coalesce turns a contiguous space of
     * any shape into one 1-D run): unit or broadcast strides take the vector
     * path, any other stride the strided one. */
    const int64_t lengths[3] = {1, 7, 1000};
    for (int t = 0; t < 3; ++t)
        for (int nin = 0; nin <= 3; ++nin)
            for (int odd = -1; odd <= nin; ++odd) { /* operand with stride 2 (-1: none) */
                pt_operand out, in[3];
                memset(&out, 0, sizeof out); memset(in, 0, sizeof in);
                out.ndim = 1; out.shape[0] = lengths[t]; out.strides[0] = odd == 0 ? 2 : 1;
                for (int k = 0; k < nin; ++k) { in[k] = out; in[k].strides[0] = odd == k + 1 ? 2 : k % 2; }
                ptcu_ew_launch l; memset(&l, 0, sizeof l);
                ptcu_geometry_build(&out, in, nin, &l);
                CHECK(l.numel == lengths[t] && l.geo.ndim == 1);
                CHECK(l.contiguous == (odd < 0 || lengths[t] == 1));
            }
    /* a broadcast scalar plus a contiguous [3,5] matrix, merged: 1-D */
    pt_operand o, in2[2]; memset(&o, 0, sizeof o); memset(in2, 0, sizeof in2);
    o.ndim = 1; o.shape[0] = 15; o.strides[0] = 1;
    in2[0] = o; in2[1] = o; in2[1].strides[0] = 0;
    ptcu_ew_launch l; memset(&l, 0, sizeof l);
    ptcu_geometry_build(&o, in2, 2, &l);
    CHECK(l.contiguous && l.geo.ndim == 1 && l.geo.shape[0] == 15 && l.geo.strides[2][0] == 0);
    /* row broadcast [3,5] + [5] (no merging possible) is strided 2-d */
    o.ndim = 2; o.shape[0] = 3; o.shape[1] = 5; o.strides[0] = 5; o.strides[1] = 1;
    in2[0] = o; in2[1] = o; in2[1].strides[0] = 0;
    ptcu_geometry_build(&o, in2, 2, &l);
    CHECK(!l.contiguous && l.geo.ndim == 2);
    /* 0-d */
    o.ndim = 0; ptcu_geometry_build(&o, in2, 0, &l);
    CHECK(l.contiguous && l.numel == 1);
}

/* cuBLAS semantics, column-major */
static void ref_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double *A, int64_t lda,
                     const double *B, int64_t ldb, double *C, int64_t ldc) {
    for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < m; ++i) {
            double s = 0;
            for (int64_t l = 0; l < k; ++l) {
                double a = ta ? A[l + i * lda] : A[i + l * lda];
                double b = tb ? B[j + l * ldb] : B[l + j * ldb];
                s += a * b;
            }
            C[i + j * ldc] = s;
        }
}

/* strides of an R x C matrix in one of several layouts inside a buffer */
static void layout(int kind, int64_t R, int64_t C, int64_t *sr, int64_t *sc, int64_t *size) {
    switch (kind) {
    case 0: *sr = C; *sc = 1; *size = R * C; break;              /* row-major */
    case 1: *sr = C + 3; *sc = 1; *size = R * (C + 3); break;    /* row-major padded */
    case 2: *sr = 1; *sc = R; *size = R * C; break;              /* col-major (transposed view) */
    case 3: *sr = 1; *sc = R + 2; *size = (R + 2) * C; break;    /* col-major padded */
    case 4: *sr = 2 * C; *sc = 2; *size = 2 * R * C; break;      /* every other element: needs copy */
    default: *sr = 0; *sc = 1; *size = C; break;                 /* broadcast rows: needs copy unless R == 1 */
    }
}

static void test_gemm(void) {
    for (int trial = 0; trial < 4000; ++trial) {
        int64_t M = 1 + rnd(5), N = 1 + rnd(5), K = 1 + rnd(5);
        int ka = (int)rnd(6), kb = (int)rnd(6);
        int64_t sar, sac, na, sbr, sbc, nb;
        layout(ka, M, K, &sar, &sac, &na);
        layout(kb, K, N, &sbr, &sbc, &nb);
        double *A = calloc((size_t)na + 8, sizeof(double)), *B = calloc((size_t)nb + 8, sizeof(double));
        for (int64_t i = 0; i < na + 8; ++i) A[i] = (double)((int)rnd(19) - 9);
        for (int64_t i = 0; i < nb + 8; ++i) B[i] = (double)((int)rnd(19) - 9);
        double Cref[64], C[64];
        for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
                double s = 0;
                for (int64_t l = 0; l < K; ++l) s += A[i * sar + l * sac] * B[l * sbr + j * sbc];
                Cref[i * N + j] = s;
            }
        ptcu_matrix_layout la = ptcu_matrix_layout_of(M, K, sar, sac);
        ptcu_matrix_layout lb = ptcu_matrix_layout_of(K, N, sbr, sbc);
        double Ac[64], Bc[64];
        const double *pa = A, *pb = B;
        if (la.layout == PTCU_NEEDS_COPY) {
            CHECK(ka >= 4);
            for (int64_t i = 0; i < M; ++i) for (int64_t l = 0; l < K; ++l) Ac[i * K + l] = A[i * sar + l * sac];
            pa = Ac; la.layout = PTCU_ROW_MAJOR; la.ld = K;
        }
        if (lb.layout == PTCU_NEEDS_COPY) {
            CHECK(kb >= 4);
            for (int64_t l = 0; l < K; ++l) for (int64_t j = 0; j < N; ++j) Bc[l * N + j] = B[l * sbr + j * sbc];
            pb = Bc; lb.layout = PTCU_ROW_MAJOR; lb.ld = N;
        }
        if (ka < 4) CHECK(la.layout != PTCU_NEEDS_COPY);
        ptcu_gemm_args g = ptcu_gemm_args_for(M, N, K, la, lb);
        CHECK(g.m == N && g.n == M && g.k == K && g.ld_out == N);
        /* cuBLAS's own argument checks */
        CHECK(g.ld_first >= (g.trans_first ? K : N));
        CHECK(g.ld_second >= (g.trans_second ? M : K));
        for (int i = 0; i < 64; ++i) C[i] = 1e300;
        ref_gemm(g.trans_first, g.trans_second, g.m, g.n, g.k, pb, g.ld_first, pa, g.ld_second, C, g.ld_out);
        for (int64_t i = 0; i < M * N; ++i) if (C[i] != Cref[i]) { CHECK(C[i] == Cref[i]); printf("  M%lld N%lld K%lld ka%d kb%d\n", (long long)M, (long long)N, (long long)K, ka, kb); break; }
        free(A); free(B);
    }
}

/* Admission without a context: which GPUs the default build's kernels run on. */
static void test_architectures(void) {
    const char *dflt = "80-real 90-real 90-virtual";
    CHECK(ptcu_architecture_fits(dflt, 8, 0));   /* A100: sm_80 SASS */
    CHECK(ptcu_architecture_fits(dflt, 8, 6));   /* RTX 30xx: sm_80 SASS runs on 8.6 */
    CHECK(ptcu_architecture_fits(dflt, 8, 9));   /* L4, RTX 40xx */
    CHECK(ptcu_architecture_fits(dflt, 9, 0));   /* H100/H200 */
    CHECK(ptcu_architecture_fits(dflt, 10, 0));  /* B200: compute_90 PTX, JIT-compiled */
    CHECK(ptcu_architecture_fits(dflt, 12, 0));
    CHECK(!ptcu_architecture_fits(dflt, 7, 5));  /* Turing: no code for it */
    CHECK(!ptcu_architecture_fits("80-real;90-real", 10, 0)); /* SASS only: no newer major */
    CHECK(!ptcu_architecture_fits("90-real", 8, 9));
    CHECK(ptcu_architecture_fits("75", 7, 5) && ptcu_architecture_fits("75", 8, 0));
    CHECK(!ptcu_architecture_fits("80-virtual", 7, 5));
    CHECK(ptcu_architecture_fits("native", 7, 5)); /* cannot judge: the probe at first use decides */
    CHECK(ptcu_architecture_fits("all-major", 5, 0));
}

static void test_driver_version(void) {
    char v[32];
    CHECK(ptcu_parse_nvrm_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n",
                                  v, sizeof v) && strcmp(v, "535.104.05") == 0);
    /* The open kernel module's line has "for x86_64" between: seen on an H100 */
    CHECK(ptcu_parse_nvrm_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
                                  "(dvs-builder@U22-I3-AF03-09-1)  Thu Jul 10 19:58:58 UTC 2025\n",
                                  v, sizeof v) && strcmp(v, "580.159.04") == 0);
    CHECK(!ptcu_parse_nvrm_version("NVRM version: NVIDIA UNIX Kernel Module for x86_64\n", v, sizeof v) && v[0] == '\0');
    CHECK(!ptcu_parse_nvrm_version("something else 1.2\n", v, sizeof v));
    CHECK(!ptcu_parse_nvrm_version(NULL, v, sizeof v));
    CHECK(!ptcu_parse_nvrm_version("Kernel Module 580.159.04", v, 4)); /* does not fit */
}

int main(void) {
    test_geometry();
    test_gemm();
    test_architectures();
    test_driver_version();
    printf("%d checks; %d passed, %d failed\n", checks, checks - failures, failures);
    return failures ? 1 : 0;
}
