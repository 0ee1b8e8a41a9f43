/* libportable cpu backend — walking strided N-d operands.
 *
 * Element-wise ops see their operands as rows: the innermost dimension is
 * handed to a row kernel (which has its own fast paths for contiguous and
 * broadcast rows), the outer dimensions are walked with an index counter.
 * The core merges dimensions before sending an op (backend.h), so every
 * contiguous tensor arrives as one long row and the common case costs one
 * kernel call. Large ops split the flat
 * element range into one contiguous piece per thread.
 *
 * Two refinements for large operands:
 *  - streaming: when the output is big and contiguous, each row is computed
 *    into a small cache-resident buffer and then written with non-temporal
 *    stores, which skip reading the destination into the cache first (the
 *    store traffic of a plain loop is read + write; this makes it write only);
 *  - tiling: when an operand is transposed relative to the walk (its
 *    second-to-last dimension is the closer one in memory), the last two
 *    dimensions are walked in square tiles so each cache line fetched is used
 *    in full before it is evicted. */
#include <string.h>
#include <unistd.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "internal.h"
#include "portable/half.h"

/* Bytes computed per step into the cache-resident buffer. */
#define PT_CPU_STREAM_CHUNK 8192
/* Tile edge, in elements, for transposed walks. */
#define PT_CPU_TILE_EDGE 64

void pt_cpu_scalar_from_double(double v, pt_cpu_scalar *out) {
    out->f32 = (float)v;
    out->f64 = v;
    out->i32 = pt_sat_i32_f64(v);
    out->i64 = pt_sat_i64_f64(v);
    out->u8 = pt_wrap_u8_f64(v);
    out->f16 = pt_f64_to_f16_bits(v);
    out->bf16 = pt_f64_to_bf16_bits(v);
}

void pt_cpu_iter_init(pt_cpu_iter *it, const pt_operand *out, int nin, const pt_operand *in) {
    /* The core has merged the dimensions (backend.h); a 0-d operand, which it
     * never sends, would be one element. */
    const int nd = out->ndim > 0 ? out->ndim : 1;
    it->nops = 1 + nin;
    it->ndim = nd;
    it->numel = 1;
    for (int d = 0; d < nd; ++d) {
        it->shape[d] = out->ndim > 0 ? out->shape[d] : 1;
        it->numel *= it->shape[d];
    }
    for (int k = 0; k < it->nops; ++k) {
        const pt_operand *x = k == 0 ? out : &in[k - 1];
        it->base[k] = pt_cpu_base(x);
        it->elsize[k] = pt_dtype_table_size(x->dtype);
        for (int d = 0; d < nd; ++d) it->strides[k][d] = x->ndim > 0 ? x->strides[d] : 0;
    }
}

/* ---- Streaming rows ---- */

void pt_cpu_stream_copy(char *dst, const char *src, size_t bytes) {
#if defined(__SSE2__)
    size_t head = (size_t)(-(uintptr_t)dst & 15);
    if (head > bytes) head = bytes;
    memcpy(dst, src, head);
    dst += head;
    src += head;
    bytes -= head;
    size_t body = bytes & ~(size_t)15;
    for (size_t i = 0; i < body; i += 16)
        _mm_stream_si128((__m128i *)(dst + i), _mm_loadu_si128((const __m128i *)(src + i)));
    memcpy(dst + body, src + body, bytes - body);
#else
    memcpy(dst, src, bytes);
#endif
}

void pt_cpu_stream_fence(void) {
#if defined(__SSE2__)
    _mm_sfence(); /* streamed stores are weakly ordered: publish them */
#endif
}

/* One contiguous output row, computed chunk by chunk into tmp and streamed
 * out. Inputs are read before their chunk of the output is written, so an
 * output that aliases an input exactly (AXPY) stays correct. */
static void row_streamed(const pt_cpu_iter *it, pt_cpu_row_fn fn, int64_t n, char *const *p,
                         const int64_t *st, const pt_cpu_scalar *sc) {
    _Alignas(64) char tmp[PT_CPU_STREAM_CHUNK];
    const int64_t es0 = (int64_t)it->elsize[0];
    const int64_t chunk = PT_CPU_STREAM_CHUNK / es0;
    char *q[PT_CPU_MAX_OPERANDS];
    for (int k = 1; k < it->nops; ++k) q[k] = p[k];
    q[0] = tmp;
    char *out = p[0];
    for (int64_t i = 0; i < n; i += chunk) {
        int64_t m = n - i < chunk ? n - i : chunk;
        fn(m, q, st, sc);
        pt_cpu_stream_copy(out, tmp, (size_t)(m * es0));
        out += m * es0;
        for (int k = 1; k < it->nops; ++k) q[k] += m * st[k] * (int64_t)it->elsize[k];
    }
    pt_cpu_stream_fence();
}

static void call_row(const pt_cpu_iter *it, pt_cpu_row_fn fn, int64_t n, char *const *p,
                     const int64_t *st, const pt_cpu_scalar *sc, bool stream) {
    if (stream && st[0] == 1 && n * (int64_t)it->elsize[0] >= 2 * PT_CPU_STREAM_CHUNK)
        row_streamed(it, fn, n, p, st, sc);
    else
        fn(n, p, st, sc);
}

/* ---- Row walk over a flat element range ---- */

void pt_cpu_iter_index(const pt_cpu_iter *it, int64_t flat, int64_t *idx) {
    for (int d = it->ndim - 1; d >= 0; --d) {
        idx[d] = flat % it->shape[d];
        flat /= it->shape[d];
    }
}

char *pt_cpu_iter_at(const pt_cpu_iter *it, int k, const int64_t *idx) {
    int64_t off = 0;
    for (int d = 0; d < it->ndim; ++d) off += idx[d] * it->strides[k][d];
    return it->base[k] + off * (int64_t)it->elsize[k];
}

void pt_cpu_iter_walk(const pt_cpu_iter *it, char *const *start, int64_t begin, int64_t end,
                      pt_cpu_row_fn fn, const pt_cpu_scalar *sc, bool stream) {
    const int nd = it->ndim, last = nd - 1, nops = it->nops;
    int64_t idx[PT_MAX_DIMS];
    pt_cpu_iter_index(it, begin, idx);
    int64_t inner_st[PT_CPU_MAX_OPERANDS];
    for (int k = 0; k < nops; ++k) inner_st[k] = it->strides[k][last];

    /* The operands' row starts move by their strides as the index does,
     * rather than being recomputed from every dim per row: rows can be a
     * few elements long (pooling windows), where that was a third of the
     * time. */
    char *p[PT_CPU_MAX_OPERANDS];
    int64_t es[PT_CPU_MAX_OPERANDS];
    for (int k = 0; k < nops; ++k) {
        es[k] = (int64_t)it->elsize[k];
        p[k] = start[k];
    }
    int64_t pos = begin;
    while (pos < end) {
        if (last > 0 && idx[last] == 0 && end - pos >= it->shape[last]) {
            /* Whole rows down the second-to-last dim: the walk of a
             * broadcast over short rows (a bias or a per-channel scale over
             * 4x4 to 8x8 planes), where carrying the index after every row
             * cost more than the row. The pointers step in a tight loop and
             * the index is carried once the dim wraps. */
            const int d1 = last - 1;
            const int64_t n = it->shape[last];
            int64_t rows = it->shape[d1] - idx[d1], step[PT_CPU_MAX_OPERANDS];
            if (rows > (end - pos) / n) rows = (end - pos) / n;
            for (int k = 0; k < nops; ++k) step[k] = it->strides[k][d1] * es[k];
            for (int64_t r = 0; r < rows; ++r) {
                call_row(it, fn, n, p, inner_st, sc, stream);
                for (int k = 0; k < nops; ++k) p[k] += step[k];
            }
            pos += rows * n;
            idx[d1] += rows;
            for (int d = d1; d > 0 && idx[d] == it->shape[d]; --d) {
                idx[d] = 0;
                ++idx[d - 1];
                for (int k = 0; k < nops; ++k)
                    p[k] += (it->strides[k][d - 1] - it->shape[d] * it->strides[k][d]) * es[k];
            }
            continue;
        }
        int64_t len = it->shape[last] - idx[last];
        if (len > end - pos) len = end - pos;
        call_row(it, fn, len, p, inner_st, sc, stream);
        pos += len;
        idx[last] += len;
        for (int k = 0; k < nops; ++k) p[k] += len * inner_st[k] * es[k];
        for (int d = last; d > 0 && idx[d] == it->shape[d]; --d) {
            idx[d] = 0;
            ++idx[d - 1];
            for (int k = 0; k < nops; ++k)
                p[k] += (it->strides[k][d - 1] - it->shape[d] * it->strides[k][d]) * es[k];
        }
    }
}

/* Runs fn over flat elements [begin, end) in C order. */
static void iter_range(const pt_cpu_iter *it, pt_cpu_row_fn fn, const pt_cpu_scalar *sc,
                       int64_t begin, int64_t end, bool stream) {
    int64_t idx[PT_MAX_DIMS];
    pt_cpu_iter_index(it, begin, idx);
    char *p[PT_CPU_MAX_OPERANDS];
    for (int k = 0; k < it->nops; ++k) p[k] = pt_cpu_iter_at(it, k, idx);
    pt_cpu_iter_walk(it, p, begin, end, fn, sc, stream);
}

/* ---- Tiled walk of the last two dimensions ---- */

/* True when some operand is closer in memory along the second-to-last dim
 * than along the last: walking rows would touch a new cache line per
 * element for it. */
static bool wants_tiles(const pt_cpu_iter *it) {
    if (it->ndim < 2) return false;
    const int a = it->ndim - 2, b = it->ndim - 1;
    if (it->shape[a] < 16 || it->shape[b] < 16) return false;
    for (int k = 0; k < it->nops; ++k) {
        int64_t sa = it->strides[k][a], sb = it->strides[k][b];
        if (sa != 0 && sa < sb) return true;
    }
    return false;
}

/* Tiles [t0, t1) in (outer index, tile row, tile column) order. */
static void iter_tiles(const pt_cpu_iter *it, pt_cpu_row_fn fn, const pt_cpu_scalar *sc,
                       int64_t t0, int64_t t1) {
    const int nd = it->ndim, a = nd - 2, b = nd - 1, nops = it->nops;
    const int64_t R = it->shape[a], C = it->shape[b];
    const int64_t tr = (R + PT_CPU_TILE_EDGE - 1) / PT_CPU_TILE_EDGE;
    const int64_t tc = (C + PT_CPU_TILE_EDGE - 1) / PT_CPU_TILE_EDGE;
    int64_t inner_st[PT_CPU_MAX_OPERANDS];
    for (int k = 0; k < nops; ++k) inner_st[k] = it->strides[k][b];
    for (int64_t t = t0; t < t1; ++t) {
        int64_t c0 = (t % tc) * PT_CPU_TILE_EDGE, r0 = (t / tc % tr) * PT_CPU_TILE_EDGE;
        int64_t outer = t / (tc * tr);
        int64_t c1 = c0 + PT_CPU_TILE_EDGE < C ? c0 + PT_CPU_TILE_EDGE : C;
        int64_t r1 = r0 + PT_CPU_TILE_EDGE < R ? r0 + PT_CPU_TILE_EDGE : R;
        int64_t off[PT_CPU_MAX_OPERANDS];
        for (int k = 0; k < nops; ++k) off[k] = r0 * it->strides[k][a] + c0 * it->strides[k][b];
        for (int d = a - 1; d >= 0; --d) {
            int64_t i = outer % it->shape[d];
            outer /= it->shape[d];
            for (int k = 0; k < nops; ++k) off[k] += i * it->strides[k][d];
        }
        for (int64_t r = r0; r < r1; ++r) {
            char *p[PT_CPU_MAX_OPERANDS];
            for (int k = 0; k < nops; ++k) {
                int64_t e = off[k] + (r - r0) * it->strides[k][a];
                p[k] = it->base[k] + e * (int64_t)it->elsize[k];
            }
            fn(c1 - c0, p, inner_st, sc);
        }
    }
}

typedef struct tiles_ctx {
    const pt_cpu_iter *it;
    pt_cpu_row_fn fn;
    const pt_cpu_scalar *sc;
} tiles_ctx;

static void tiles_range(void *ctx, int64_t begin, int64_t end) {
    const tiles_ctx *c = ctx;
    iter_tiles(c->it, c->fn, c->sc, begin, end);
}

static void run_tiled(const pt_cpu_iter *it, pt_cpu_row_fn fn, const pt_cpu_scalar *sc,
                      bool parallel) {
    const int nd = it->ndim;
    int64_t tiles = ((it->shape[nd - 2] + PT_CPU_TILE_EDGE - 1) / PT_CPU_TILE_EDGE) *
                    ((it->shape[nd - 1] + PT_CPU_TILE_EDGE - 1) / PT_CPU_TILE_EDGE);
    for (int d = 0; d < nd - 2; ++d) tiles *= it->shape[d];
    tiles_ctx ctx = {it, fn, sc};
    pt_cpu_parallel_ranges(tiles, parallel ? 2 : INT64_MAX, 1, tiles_range, &ctx);
}

/* Runs piece over [0, n) split into one range per thread of a team of
 * `threads`, each range starting on a multiple of align (a power of two). */
static void split_ranges(int64_t n, int threads, int64_t align, pt_cpu_piece_fn piece,
                         void *ctx) {
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
    {
#ifdef _OPENMP
        int tid = omp_get_thread_num(), nt = omp_get_num_threads();
#else
        int tid = 0, nt = 1;
        (void)threads;
#endif
        int64_t chunk = ((n + nt - 1) / nt + align - 1) & ~(align - 1);
        int64_t b = (int64_t)tid * chunk, e = b + chunk < n ? b + chunk : n;
        if (b < e) piece(ctx, b, e);
    }
}

typedef struct range_ctx {
    const pt_cpu_iter *it;
    pt_cpu_row_fn fn;
    const pt_cpu_scalar *sc;
    bool stream;
} range_ctx;

static void range_piece(void *ctx, int64_t begin, int64_t end) {
    const range_ctx *c = ctx;
    iter_range(c->it, c->fn, c->sc, begin, end, c->stream);
}

void pt_cpu_iter_run(const pt_cpu_iter *it, pt_cpu_row_fn fn, const pt_cpu_scalar *sc,
                     int64_t grain) {
    const int64_t total = it->numel;
    if (it->ndim == 1 && total < grain) { /* the common small case: one direct call */
        char *p[PT_CPU_MAX_OPERANDS];
        int64_t st[PT_CPU_MAX_OPERANDS];
        for (int k = 0; k < it->nops; ++k) {
            p[k] = it->base[k];
            st[k] = it->strides[k][0];
        }
        fn(total, p, st, sc);
        return;
    }
    int threads = pt_cpu_max_threads();
    const bool parallel = total >= grain && threads > 1;
    if (wants_tiles(it)) {
        run_tiled(it, fn, sc, parallel);
        return;
    }
    const bool stream = total * (int64_t)it->elsize[0] >= PT_CPU_STREAM_MIN_BYTES;
    if (!parallel) {
        iter_range(it, fn, sc, 0, total, stream);
        return;
    }
    int64_t max_pieces = total / (grain / 2 > 0 ? grain / 2 : 1); /* >= grain/2 a thread */
    if (threads > max_pieces) threads = (int)max_pieces;
    if (threads < 1) threads = 1;
    /* Piece boundaries on multiples of 64 elements, so threads writing a
     * contiguous output never share a cache line. */
    range_ctx ctx = {it, fn, sc, stream};
    split_ranges(total, threads, 64, range_piece, &ctx);
}

void pt_cpu_parallel_ranges(int64_t n, int64_t grain, int64_t align, pt_cpu_piece_fn piece,
                            void *ctx) {
    if (n < grain || pt_cpu_max_threads() <= 1) {
        piece(ctx, 0, n);
        return;
    }
    int threads = pt_cpu_max_threads();
    const int64_t max_pieces = n / (grain / 2 > 0 ? grain / 2 : 1); /* >= grain/2 a thread */
    if (threads > max_pieces) threads = max_pieces > 1 ? (int)max_pieces : 1;
    if (threads <= 1) {
        piece(ctx, 0, n);
        return;
    }
    split_ranges(n, threads, align, piece, ctx);
}
