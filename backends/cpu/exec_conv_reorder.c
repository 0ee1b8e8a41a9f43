/* libportable cpu backend — the activations' copies between the core's
 * NCHW layout and the channel-blocked nChw16c / nChw8c layouts oneDNN's
 * convolutions work in (exec_conv_onednn.c).
 *
 * oneDNN has reorders for these, but on the Zen 4 VMs the cpu plugin is
 * checked on its jit:blk reorder of a [32, 64, 32, 32] activation took 1.8
 * ms on one thread and 1.2 ms on two (2026-12-02), a quarter of a
 * Winograd convolution's time and the part of it that did not scale; the
 * loops here take 0.7 and 0.4-0.6 ms (memcpy of the same bytes: 0.4-0.5).
 * A block of channels (n, b) is blk consecutive planes in NCHW and one
 * stretch of blk * H * W floats in the blocked layout, at the same offset. */
#include "exec_conv.h"
#include "internal.h"

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

typedef struct {
    const float *src;
    float *dst;
    int64_t pixels; /* H * W */
    int blk;                  /* 16 or 8 */
    bool to_blocked;
} reorder_job;

/* Pixels a step: each of four planes then gets a whole 64-byte line read
 * or written before the next four, so only four strided streams are open
 * at once (the planes are often 4 KiB apart, one L1 set). */
#define PIXELS_A_STEP 16

/* One block of blk channels: blk planes of hw pixels (plain) to hw rows of
 * blk channels (blocked), or back. SSE moves 4x4 tiles through a register
 * transpose; other CPUs (and the last pixels) go element by element. */
static inline void block_row(const float *restrict src, float *restrict dst, int64_t hw, const int blk,
                             const bool to_blocked) {
    int64_t p0 = 0;
#if defined(__SSE__)
    for (; p0 + PIXELS_A_STEP <= hw; p0 += PIXELS_A_STEP)
        for (int c = 0; c < blk; c += 4)
            for (int64_t p = p0; p < p0 + PIXELS_A_STEP; p += 4) {
                const float *s = to_blocked ? src + c * hw + p : src + p * blk + c;
                float *d = to_blocked ? dst + p * blk + c : dst + c * hw + p;
                const int64_t in = to_blocked ? hw : blk, out = to_blocked ? blk : hw;
                __m128 r0 = _mm_loadu_ps(s), r1 = _mm_loadu_ps(s + in), r2 = _mm_loadu_ps(s + 2 * in),
                       r3 = _mm_loadu_ps(s + 3 * in);
                _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
                _mm_storeu_ps(d, r0);
                _mm_storeu_ps(d + out, r1);
                _mm_storeu_ps(d + 2 * out, r2);
                _mm_storeu_ps(d + 3 * out, r3);
            }
#endif
    for (int64_t p = p0; p < hw; ++p)
        for (int c = 0; c < blk; ++c) {
            if (to_blocked) dst[p * blk + c] = src[c * hw + p];
            else dst[c * hw + p] = src[p * blk + c];
        }
}

/* Rows of the team's work are blocks of channels (n, b): the same offset
 * in either layout. Widths and directions as constants, so each is
 * compiled for its own. */
static void reorder_piece(void *ctx, int64_t begin, int64_t end) {
    const reorder_job *j = ctx;
    const int64_t hw = j->pixels;
    for (int64_t r = begin; r < end; ++r) {
        const size_t at = (size_t)r * (size_t)j->blk * (size_t)hw;
        if (j->blk == 16 && j->to_blocked) block_row(j->src + at, j->dst + at, hw, 16, true);
        else if (j->blk == 16) block_row(j->src + at, j->dst + at, hw, 16, false);
        else if (j->to_blocked) block_row(j->src + at, j->dst + at, hw, 8, true);
        else block_row(j->src + at, j->dst + at, hw, 8, false);
    }
}

void pt_cpu_reorder_channel_blocks(const float *src, float *dst, int64_t batch, int64_t channels, int64_t pixels,
                                   int blk, bool to_blocked) {
    reorder_job j = {src, dst, pixels, blk, to_blocked};
    pt_cpu_rows_over_team(batch * (channels / blk), (int64_t)blk * pixels, reorder_piece, &j);
}
