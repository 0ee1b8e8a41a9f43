/* libportable cpu backend — CONV2D and CONV2D_BWD_DATA of 3x3 stride-1
 * layers by Winograd's F(4x4, 3x3) minimal filtering, where oneDNN has no
 * Winograd of its own (AVX2, or ONEDNN_MAX_CPU_ISA capping it) and would
 * run its direct algorithm: exec_conv_onednn.c sends the wide layers here.
 *
 * Each 4x4 output tile comes from a 6x6 input patch d and the filter g as
 * A^T [(G g G^T) . (B^T d B)] A, so the 36 element-wise products over the
 * channels become 36 independent GEMMs: 36 multiply-adds per 16 outputs
 * and channel pair where the direct sum takes 144. The filters are
 * transformed once per call into U[36][out][in]; the tiles are taken in
 * blocks small enough that a block's transformed inputs V[36][in][tiles]
 * and products M[36][out][tiles] stay in L2, one block per thread at a
 * time. Tiles are the fastest axis of V and M so that both transforms run
 * along contiguous rows of tiles (NCHW gives no contiguous channel axis). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "exec_conv.h"
#include "internal.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The 36 planes of U, V and M lie a whole number of 64-byte lines plus
 * one apart: at a multiple of 4 KB (64 channels by 64 tiles is 16 KB) the
 * six rows a transform pass reads or writes, and the filter transform's
 * 36, all fall in one L1 set and evict each other. */
static inline ptrdiff_t plane_floats(int64_t rows, int64_t cols) {
    return (ptrdiff_t)(((rows * cols + 15) & ~(int64_t)15) + 16);
}

/* Output tiles per block: the width (N) of each of its 36 GEMMs. With 64
 * channels in and out a block's V and M take 36 * 64 * 4 bytes per tile
 * each, 590 KB apiece at 64 tiles. */
#define WINO_TILES 64

/* One call: the input x [n, ci, h, w], the output y [n, co, oh, ow] and
 * the padding of x on each side (the same on the far side, as oneDNN
 * takes it: oh = h + 2 ph - 2). */
typedef struct wino_job {
    const float *x;
    float *y;
    const float *u; /* [36][co][ci] */
    int64_t n, ci, h, w, co, oh, ow, ph, pw;
    int64_t tiles_w, tiles_img, tiles;
    float *scratch;    /* per thread: thread_floats each */
    size_t thread_floats;
} wino_job;

/* ---- The filter transform: U = G g G^T, in double (G's sixths and
 * twenty-fourths would otherwise round twice) ---- */

/* U[xi][oc][ic] for the weight w [O, C, 3, 3]: the forward pass filters
 * input channel c into output o with w[o][c]; the backward-data pass
 * filters dY's channel o into dX's c with w[o][c] turned 180 degrees.
 * Vectorised across ic, the contiguous axis of U: one pair at a time, with
 * U's 36 planes a whole page apart, it took 2% of the benchmark. */
static void filters(const float *w, float *u, int64_t co, int64_t ci, bool adjoint) {
    static const double G[6][3] = {{1.0 / 4, 0, 0},
                                   {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                   {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                   {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                   {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                   {0, 0, 1}};
    const ptrdiff_t plane = plane_floats(co, ci);
    for (int64_t oc = 0; oc < co; ++oc) {
        float *uo = u + oc * ci;
#pragma omp simd
        for (int64_t ic = 0; ic < ci; ++ic) {
            /* the forward filter w[oc][ic]; the adjoint's is w[ic][oc] (w is
             * [ci, co, 3, 3] there: dY's channels were its outputs), turned */
            const float *s = adjoint ? w + (ic * co + oc) * 9 : w + (oc * ci + ic) * 9;
            double g[9];
            for (int k = 0; k < 9; ++k) g[k] = s[adjoint ? 8 - k : k];
            double t[6][3];
            for (int i = 0; i < 6; ++i)
                for (int k = 0; k < 3; ++k) t[i][k] = G[i][0] * g[k] + G[i][1] * g[3 + k] + G[i][2] * g[6 + k];
            for (int i = 0; i < 6; ++i)
                for (int k = 0; k < 6; ++k)
                    uo[(i * 6 + k) * plane + ic] =
                        (float)(t[i][0] * G[k][0] + t[i][1] * G[k][1] + t[i][2] * G[k][2]);
        }
    }
}

/* ---- The input transform B^T d B and the output transform A^T m A, each
 * as two passes of a 1-D transform over six rows of nt tiles ---- */

/* out_k = (B^T in)_k for k < 6, with in_i at in + i * is, out_k at
 * out + k * os, each nt contiguous tiles. */
static inline void bt6(const float *restrict in, ptrdiff_t is, float *restrict out, ptrdiff_t os, int64_t nt) {
#pragma omp simd
    for (int64_t t = 0; t < nt; ++t) {
        const float d0 = in[t], d1 = in[is + t], d2 = in[2 * is + t], d3 = in[3 * is + t], d4 = in[4 * is + t],
                    d5 = in[5 * is + t];
        out[t] = 4 * d0 - 5 * d2 + d4;
        out[os + t] = -4 * (d1 + d2) + d3 + d4;
        out[2 * os + t] = 4 * (d1 - d2) - d3 + d4;
        out[3 * os + t] = 2 * (d3 - d1) - d2 + d4;
        out[4 * os + t] = 2 * (d1 - d3) - d2 + d4;
        out[5 * os + t] = 4 * d1 - 5 * d3 + d5;
    }
}

/* out_k = (A^T in)_k for k < 4. */
static inline void at6(const float *restrict in, ptrdiff_t is, float *restrict out, ptrdiff_t os, int64_t nt) {
#pragma omp simd
    for (int64_t t = 0; t < nt; ++t) {
        const float m0 = in[t], m1 = in[is + t], m2 = in[2 * is + t], m3 = in[3 * is + t], m4 = in[4 * is + t],
                    m5 = in[5 * is + t];
        const float s12 = m1 + m2, d12 = m1 - m2, s34 = m3 + m4, d34 = m3 - m4;
        out[t] = m0 + s12 + s34;
        out[os + t] = d12 + 2 * d34;
        out[2 * os + t] = s12 + 4 * s34;
        out[3 * os + t] = d12 + 8 * d34 + m5;
    }
}

/* A run of a block's tiles along one tile row: tiles tb .. tb + ns - 1 of
 * the block are the row's tiles tx0 .. tx0 + ns - 1 of tile row ty of
 * image img. Patches of neighbouring tiles overlap and lie side by side in
 * the image rows, so a run is gathered and scattered a row at a time. */
typedef struct tile_run {
    int64_t tb, ns, img, ty, tx0;
} tile_run;

/* Row buffer floats: a run's 4 ns + 2 columns, with room for the vector
 * loads of deinterleave's last group */
#define WINO_ROW (4 * WINO_TILES + 16)

/* out[k * T + t] = rb[4 t + k] for k < 6, t < ns: the six columns of
 * each tile's patch row into six rows of tiles. rb holds 4 ns + 2 floats
 * and may be read up to WINO_ROW. */
static void deinterleave(const float *restrict rb, float *restrict out, ptrdiff_t T, int64_t ns) {
    int64_t t = 0;
#if defined(__SSE2__)
    /* Four tiles at a time: a 4x4 transpose gives columns 0-3 of their
     * patches, and one of the next four floats columns 4 and 5. */
    for (; t + 4 <= ns; t += 4) {
        __m128 a = _mm_loadu_ps(rb + 4 * t), b = _mm_loadu_ps(rb + 4 * t + 4), c = _mm_loadu_ps(rb + 4 * t + 8),
               d = _mm_loadu_ps(rb + 4 * t + 12), e = _mm_loadu_ps(rb + 4 * t + 16);
        __m128 b2 = b, c2 = c, d2 = d, e2 = e;
        _MM_TRANSPOSE4_PS(a, b, c, d);
        _MM_TRANSPOSE4_PS(b2, c2, d2, e2);
        _mm_storeu_ps(out + t, a);
        _mm_storeu_ps(out + T + t, b);
        _mm_storeu_ps(out + 2 * T + t, c);
        _mm_storeu_ps(out + 3 * T + t, d);
        _mm_storeu_ps(out + 4 * T + t, b2);
        _mm_storeu_ps(out + 5 * T + t, c2);
    }
#endif
    for (; t < ns; ++t)
        for (int k = 0; k < 6; ++k) out[k * T + t] = rb[4 * t + k];
}

/* dst[4 t + s] = in[s * T + t] for s < 4, t < ns: the inverse for four
 * columns of output tiles. */
static void interleave(const float *restrict in, ptrdiff_t T, float *restrict dst, int64_t ns) {
    int64_t t = 0;
#if defined(__SSE2__)
    for (; t + 4 <= ns; t += 4) {
        __m128 a = _mm_loadu_ps(in + t), b = _mm_loadu_ps(in + T + t), c = _mm_loadu_ps(in + 2 * T + t),
               d = _mm_loadu_ps(in + 3 * T + t);
        _MM_TRANSPOSE4_PS(a, b, c, d);
        _mm_storeu_ps(dst + 4 * t, a);
        _mm_storeu_ps(dst + 4 * t + 4, b);
        _mm_storeu_ps(dst + 4 * t + 8, c);
        _mm_storeu_ps(dst + 4 * t + 12, d);
    }
#endif
    for (; t < ns; ++t)
        for (int s = 0; s < 4; ++s) dst[4 * t + s] = in[s * T + t];
}

/* d[36][T]: the 6x6 patches of channel c of run's tiles, at its columns,
 * zero outside the image; each patch row goes through rb, padded. */
static void gather(const wino_job *j, const tile_run *run, int64_t c, float *restrict d, float *restrict rb) {
    const ptrdiff_t T = WINO_TILES;
    const int64_t r0 = 4 * run->ty - j->ph, c0 = 4 * run->tx0 - j->pw, ncols = 4 * run->ns + 2;
    const int64_t lo = c0 < 0 ? -c0 : 0, hi = j->w - c0 < ncols ? j->w - c0 : ncols;
    const float *plane = j->x + (run->img * j->ci + c) * j->h * j->w;
    for (int64_t i = 0; i < 6; ++i) {
        float *out = d + i * 6 * T + run->tb;
        const int64_t r = r0 + i;
        if (r < 0 || r >= j->h) {
            for (int k = 0; k < 6; ++k) memset(out + k * T, 0, (size_t)run->ns * sizeof *out);
            continue;
        }
        /* inline, not memcpy: a row of a run is a few dozen floats, where the
         * library call's own cost was a third of the copy's */
        const float *src = plane + r * j->w + (c0 + lo); /* column c0 + lo: in the row */
        int64_t k = 0;
        for (; k < lo; ++k) rb[k] = 0.0f;
#if defined(__SSE2__)
        for (; k + 4 <= hi; k += 4) _mm_storeu_ps(rb + k, _mm_loadu_ps(src + k - lo));
#endif
        for (; k < hi; ++k) rb[k] = src[k - lo];
        for (; k < ncols; ++k) rb[k] = 0.0f;
        deinterleave(rb, out, T, run->ns);
    }
}

/* Channel o of run's tiles from y4[16][T] into y, cropped to the image at
 * the right and bottom edges (through rb where a tile is cut). */
static void scatter(const wino_job *j, const tile_run *run, int64_t o, const float *restrict y4,
                    float *restrict rb) {
    const ptrdiff_t T = WINO_TILES;
    const int64_t r0 = 4 * run->ty, c0 = 4 * run->tx0;
    const int64_t rows = j->oh - r0 < 4 ? j->oh - r0 : 4;
    const int64_t cols = j->ow - c0 < 4 * run->ns ? j->ow - c0 : 4 * run->ns;
    float *dst = j->y + ((run->img * j->co + o) * j->oh + r0) * j->ow + c0;
    for (int64_t r = 0; r < rows; ++r, dst += j->ow) {
        const float *in = y4 + r * 4 * T + run->tb;
        if (cols == 4 * run->ns) {
            interleave(in, T, dst, run->ns);
        } else {
            interleave(in, T, rb, run->ns);
            memcpy(dst, rb, (size_t)cols * sizeof *dst);
        }
    }
}

/* One block of nt tiles starting at tile t0, with this thread's scratch. */
static void run_block(const wino_job *j, int64_t t0, int64_t nt, float *scratch) {
    const ptrdiff_t T = WINO_TILES;
    const ptrdiff_t vs = plane_floats(j->ci, T), ms = plane_floats(j->co, T); /* one xi's V, M */
    float *v = scratch, *m = v + 36 * vs, *d = m + 36 * ms, *tmp = d + 36 * T, *rb = tmp + 36 * T;
    tile_run runs[WINO_TILES];
    int64_t nruns = 0;
    for (int64_t t = 0; t < nt;) {
        const int64_t q = t0 + t, in_img = q % j->tiles_img, tx = in_img % j->tiles_w;
        const int64_t ns = j->tiles_w - tx < nt - t ? j->tiles_w - tx : nt - t;
        runs[nruns++] = (tile_run){t, ns, q / j->tiles_img, in_img / j->tiles_w, tx};
        t += ns;
    }
    for (int64_t c = 0; c < j->ci; ++c) {
        for (int64_t k = 0; k < nruns; ++k) gather(j, &runs[k], c, d, rb);
        for (int k = 0; k < 6; ++k) bt6(d + k * T, 6 * T, tmp + k * T, 6 * T, nt); /* B^T d: columns */
        for (int r = 0; r < 6; ++r) bt6(tmp + r * 6 * T, T, v + r * 6 * vs + c * T, vs, nt); /* (B^T d) B: rows */
    }
    for (int xi = 0; xi < 36; ++xi)
        pt_cpu_gemm_f32(false, false, j->co, nt, j->ci, 1.0f, j->u + xi * plane_floats(j->co, j->ci), j->ci,
                        v + xi * vs, T, 0.0f, m + xi * ms, T);
    float *y4 = d; /* [16][T]: the gathered patches are spent */
    for (int64_t o = 0; o < j->co; ++o) {
        for (int k = 0; k < 6; ++k) at6(m + k * ms + o * T, 6 * ms, tmp + k * T, 6 * T, nt); /* A^T m */
        for (int r = 0; r < 4; ++r) at6(tmp + r * 6 * T, T, y4 + r * 4 * T, T, nt);           /* (A^T m) A */
        for (int64_t k = 0; k < nruns; ++k) scatter(j, &runs[k], o, y4, rb);
    }
}

/* Whether o is a contiguous 4-D NCHW operand of f32 with no empty dim. */
static bool contiguous4(const pt_operand *o) {
    if (o->ndim != 4 || o->dtype != PT_F32) return false;
    int64_t n = 1;
    for (int k = 0; k < 4; ++k) {
        if (o->shape[k] < 1) return false;
        n *= o->shape[k];
    }
    return pt_cpu_dense_with(o, n);
}

bool pt_cpu_conv_winograd_fits(const pt_op *op) {
    if (op->kind != PT_OP_CONV2D && op->kind != PT_OP_CONV2D_BWD_DATA) return false;
    if (op->dtype != PT_F32 || op->n_inputs != 2 || op->count != 1) return false;
    if (!contiguous4(&op->in[0]) || !contiguous4(&op->in[1]) || !contiguous4(&op->out)) return false;
    const int64_t *win = op->window;
    if (win[0] != 1 || win[1] != 1 || win[4] != 1 || win[5] != 1) return false;
    if (win[2] < 0 || win[2] > 2 || win[3] < 0 || win[3] > 2) return false;
    const bool adjoint = op->kind == PT_OP_CONV2D_BWD_DATA;
    const int64_t *x = adjoint ? op->out.shape : op->in[0].shape, *w = op->in[1].shape;
    const int64_t *y = adjoint ? op->in[0].shape : op->out.shape;
    if (w[2] != 3 || w[3] != 3 || w[1] != x[1] || w[0] != y[1] || x[0] != y[0]) return false;
    /* stride 1: each output row is one input row, padding on both sides */
    return y[2] == x[2] + 2 * win[2] - 2 && y[3] == x[3] + 2 * win[3] - 2 && y[2] >= 1 && y[3] >= 1;
}

pt_status pt_cpu_conv_winograd(int dev, const pt_op *op, int threads) {
    if (!pt_cpu_conv_winograd_fits(op))
        return pt_cpu_bad_op(op, "the Winograd path takes f32 3x3 stride-1 convolutions, contiguous");
    const bool adjoint = op->kind == PT_OP_CONV2D_BWD_DATA;
    const pt_operand *xo = &op->in[0], *yo = &op->out; /* x, or dY for the adjoint */
    /* The adjoint convolves dY, padded by 2 - p, with the turned filters */
    wino_job j = {.x = (const float *)pt_cpu_base(xo), .y = (float *)pt_cpu_base(yo),
                  .n = xo->shape[0], .ci = xo->shape[1], .h = xo->shape[2], .w = xo->shape[3],
                  .co = yo->shape[1], .oh = yo->shape[2], .ow = yo->shape[3],
                  .ph = adjoint ? 2 - op->window[2] : op->window[2],
                  .pw = adjoint ? 2 - op->window[3] : op->window[3]};
    j.tiles_w = (j.ow + 3) / 4;
    j.tiles_img = ((j.oh + 3) / 4) * j.tiles_w;
    j.tiles = j.n * j.tiles_img;
    const int64_t blocks = (j.tiles + WINO_TILES - 1) / WINO_TILES;
    if (threads > blocks) threads = (int)blocks;
    if (threads < 1) threads = 1;
    /* Scratch: U, then each thread's V, M, the patches and one pass's rows.
     * Each piece a whole number of 64-byte lines (16 floats). */
    const size_t u_floats = (size_t)36 * (size_t)plane_floats(j.co, j.ci);
    j.thread_floats = (size_t)36 * (size_t)(plane_floats(j.ci, WINO_TILES) + plane_floats(j.co, WINO_TILES)) +
                      (size_t)(36 + 36) * WINO_TILES + WINO_ROW;
    const size_t bytes = (u_floats + j.thread_floats * (size_t)threads) * sizeof(float);
    void *buf = NULL, *block = NULL;
    size_t off = 0;
    pt_status s = pt_cpu_host->device_alloc("cpu", dev, bytes, &buf, &off, &block);
    if (s != PT_OK) return s;
    float *u = (float *)((char *)buf + off);
    j.u = u;
    j.scratch = u + u_floats;
    filters((const float *)pt_cpu_base(&op->in[1]), u, j.co, j.ci, adjoint);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(threads)
#endif
    for (int64_t b = 0; b < blocks; ++b) {
#ifdef _OPENMP
        const int tid = omp_get_thread_num();
#else
        const int tid = 0;
#endif
        const int64_t t0 = b * WINO_TILES, nt = j.tiles - t0 < WINO_TILES ? j.tiles - t0 : WINO_TILES;
        run_block(&j, t0, nt, j.scratch + j.thread_floats * (size_t)tid);
    }
    pt_cpu_host->device_free("cpu", dev, block);
    return PT_OK;
}
