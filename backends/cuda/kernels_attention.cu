/* libportable CUDA backend — ATTENTION and ATTENTION_BACKWARD (backend.h):
 * softmax(q k^T scale + mask) v in tiles of queries x keys held in shared
 * memory, never the [Tq, Tk] scores.
 *
 * Forward: a block takes `rows` query rows of one (b, h) and walks the keys
 * in tiles of `keys`: the tile's scores go to shared memory (one thread per
 * (row, key) pair), one thread per row updates its running maximum and sum
 * (online softmax: the row's output is rescaled when its maximum grows) and
 * turns the scores into probabilities, then every thread accumulates its
 * (row, column) elements of the output from them. Each row's log-sum-exp
 * is written for the backward pass.
 *
 * Backward (FlashAttention-2's order, as the cpu backend's): delta_i =
 * do_i . o_i per row first; then blocks over key tiles accumulate dk and
 * dv (each block owns its keys' rows) and blocks over query tiles
 * accumulate dq (each owns its rows), both recomputing p_ij = exp(s_ij -
 * lse_i) and ds_ij = p_ij (do_i . v_j - delta_i). No atomics: the same bits
 * at every launch.
 *
 * Tile sizes are chosen at launch from the shared memory a block may have
 * (kernels.h: the device's opt-in limit, capped so two blocks fit an SM),
 * every tile row padded by one element so threads of a warp reading
 * different rows of one column hit different banks. Causal blocks skip the
 * tiles past their diagonal. f32 and f64 (the core computes 16-bit tensors
 * in f32); statistics in the element type, as the cpu kernels keep them. */
#include "k_common.cuh"

namespace ptcu {

/* Shared memory the planner aims at: two blocks per SM on an H100 (227
 * KiB), 64 x 64 forward tiles of D = 64 in f32. */
constexpr int64_t kAttnSharedTarget = 96 * 1024;
constexpr int kAttnMaxTile = 64;

template <class T> __device__ __forceinline__ T neg_inf() { return (T)-INFINITY; }

/* Rows [r0, r0 + n) of one (b, h)'s [T, width] operand at base (rows s_row
 * apart, columns contiguous) into tile (pitch width + 1). */
template <class T>
__device__ void load_rows(T *tile, const T *base, int64_t s_row, int64_t r0, int n, int width) {
    for (int e = threadIdx.x; e < n * width; e += blockDim.x) {
        const int r = e / width, c = e % width;
        tile[r * (width + 1) + c] = base[(r0 + r) * s_row + c];
    }
}

/* acc[a][c] += sum over m < n of w[a * wa + m * wm] * x[m][c], for a < na
 * and c < width (acc and x of pitch width + 1), a thread per element of
 * acc: the products of the tiles. */
template <class T>
__device__ void accumulate(T *acc, int na, int width, const T *w, int wa, int wm, int n, const T *x) {
    const int pitch = width + 1;
    for (int e = threadIdx.x; e < na * width; e += blockDim.x) {
        const int a = e / width, c = e % width;
        T sum = acc[a * pitch + c];
        for (int m = 0; m < n; ++m) sum += w[a * wa + m * wm] * x[m * pitch + c];
        acc[a * pitch + c] = sum;
    }
}

/* n rows of tile (pitch width + 1) times mul into contiguous dst. */
template <class T> __device__ void store_rows(T *dst, const T *tile, int n, int width, T mul) {
    for (int e = threadIdx.x; e < n * width; e += blockDim.x) dst[e] = tile[(e / width) * (width + 1) + e % width] * mul;
}

template <class T> __device__ void fill(T *p, int n, T value) {
    for (int e = threadIdx.x; e < n; e += blockDim.x) p[e] = value;
}

template <class T> __device__ __forceinline__ T dot(const T *a, const T *b, int n) {
    T s = 0;
    for (int x = 0; x < n; ++x) s += a[x] * b[x];
    return s;
}

/* Score of query i against key j (global indices) from their dot product:
 * scaled, the mask applied; -inf where the key is removed. */
template <class T>
__device__ T masked_score(const ptcu_attention_launch &l, int64_t bb, int64_t hh, int64_t i, int64_t j, T dotv) {
    if ((l.flags & PT_ATTN_CAUSAL) && j > i) return neg_inf<T>();
    T x = dotv * (T)l.scale;
    const int64_t at = bb * l.sm[0] + hh * l.sm[1] + i * l.sm[2] + j * l.sm[3];
    if (l.flags & PT_ATTN_MASK_KEEP) {
        if (!((const uint8_t *)l.mask)[at]) x = neg_inf<T>();
    } else if (l.flags & PT_ATTN_MASK_ADD) {
        x += ((const T *)l.mask)[at];
    }
    return x;
}

/* The keys query rows [r0, r0 + rows) can see end here. */
__device__ __forceinline__ int64_t key_end(const ptcu_attention_launch &l, int64_t r0, int rows) {
    return (l.flags & PT_ATTN_CAUSAL) && r0 + rows < l.tk ? r0 + rows : l.tk;
}

/* Tile blk of every (b, h)'s n rows cut in tiles of size: its (b, h), its
 * first row and how many rows it has. */
struct TileOf {
    int64_t bh, bb, hh, first;
    int count;
};
__device__ __forceinline__ TileOf tile_of(const ptcu_attention_launch &l, int64_t blk, int64_t n, int size) {
    const int64_t per = (n + size - 1) / size;
    TileOf t;
    t.bh = blk / per;
    t.bb = t.bh / l.h;
    t.hh = t.bh % l.h;
    t.first = (blk % per) * size;
    t.count = (int)(n - t.first < size ? n - t.first : size);
    return t;
}
/* How many tiles of size n rows of every (b, h) make. */
__device__ __forceinline__ int64_t tiles(const ptcu_attention_launch &l, int64_t n, int size) {
    return l.b * l.h * ((n + size - 1) / size);
}

/* Keys [j0, j0 + keys) of tile t's (b, h): k into ks, v into vs. */
template <class T>
__device__ void load_keys(const ptcu_attention_launch &l, const TileOf &t, int64_t j0, int keys, T *ks, T *vs) {
    load_rows(ks, (const T *)l.k + t.bb * l.sk[0] + t.hh * l.sk[1], l.sk[2], j0, keys, (int)l.d);
    load_rows(vs, (const T *)l.v + t.bb * l.sv[0] + t.hh * l.sv[1], l.sv[2], j0, keys, (int)l.dv);
}

/* Query rows [r0, r0 + rows) of tile t's (b, h) for the backward pass: q
 * into qs, do into dos, their lse and delta into lses, dels. */
template <class T>
__device__ void load_queries(const ptcu_attention_launch &l, const TileOf &t, int64_t r0, int rows, T *qs, T *dos,
                             T *lses, T *dels) {
    load_rows(qs, (const T *)l.q + t.bb * l.sq[0] + t.hh * l.sq[1], l.sq[2], r0, rows, (int)l.d);
    load_rows(dos, (const T *)l.dout + t.bb * l.sdo[0] + t.hh * l.sdo[1], l.sdo[2], r0, rows, (int)l.dv);
    for (int r = threadIdx.x; r < rows; r += blockDim.x) {
        lses[r] = ((const T *)l.lse)[t.bh * l.tq + r0 + r];
        dels[r] = ((const T *)l.delta)[t.bh * l.tq + r0 + r];
    }
}

template <class T> __global__ void __launch_bounds__(kThreads) attn_forward_kernel(const ptcu_attention_launch l,
                                                                                  int bq, int bk) {
    PTCU_DYNAMIC_SHARED(T, smem);
    const int D = (int)l.d, DV = (int)l.dv, pd = D + 1, pv = DV + 1, ps = bk + 1;
    T *qs = smem, *ks = qs + bq * pd, *vs = ks + bk * pd, *ss = vs + bk * pv, *os = ss + bq * ps;
    T *mrow = os + bq * pv, *lrow = mrow + bq;
    for (int64_t blk = blockIdx.x; blk < tiles(l, l.tq, bq); blk += gridDim.x) {
        const TileOf t = tile_of(l, blk, l.tq, bq);
        const int64_t r0 = t.first;
        const int rows = t.count;
        __syncthreads(); /* the previous tile's readers are done */
        load_rows(qs, (const T *)l.q + t.bb * l.sq[0] + t.hh * l.sq[1], l.sq[2], r0, rows, D);
        fill(os, bq * pv, (T)0);
        fill(mrow, bq, neg_inf<T>());
        fill(lrow, bq, (T)0);
        const int64_t end = key_end(l, r0, rows);
        for (int64_t j0 = 0; j0 < end; j0 += bk) {
            const int keys = (int)(end - j0 < bk ? end - j0 : bk);
            __syncthreads(); /* the previous key tile's readers are done */
            load_keys(l, t, j0, keys, ks, vs);
            __syncthreads();
            for (int e = threadIdx.x; e < rows * keys; e += blockDim.x) {
                const int r = e / keys, c = e % keys;
                ss[r * ps + c] = masked_score(l, t.bb, t.hh, r0 + r, j0 + c, dot(qs + r * pd, ks + c * pd, D));
            }
            __syncthreads();
            for (int r = threadIdx.x; r < rows; r += blockDim.x) { /* online softmax, a thread per row */
                T *srow = ss + r * ps;
                T mb = mrow[r];
                for (int c = 0; c < keys; ++c) mb = srow[c] > mb ? srow[c] : mb;
                if (mb == neg_inf<T>()) { /* every key so far removed */
                    for (int c = 0; c < keys; ++c) srow[c] = 0;
                    continue;
                }
                const T alpha = exp_t<T>(mrow[r] - mb);
                for (int c = 0; c < DV; ++c) os[r * pv + c] *= alpha;
                T sum = 0;
                for (int c = 0; c < keys; ++c) {
                    const T p = exp_t<T>(srow[c] - mb);
                    srow[c] = p;
                    sum += p;
                }
                lrow[r] = lrow[r] * alpha + sum;
                mrow[r] = mb;
            }
            __syncthreads();
            accumulate(os, rows, DV, ss, ps, 1, keys, vs);
        }
        __syncthreads();
        T *out = (T *)l.out + (t.bh * l.tq + r0) * DV;
        for (int e = threadIdx.x; e < rows * DV; e += blockDim.x) {
            const int r = e / DV, c = e % DV;
            out[r * DV + c] = lrow[r] > 0 ? os[r * pv + c] / lrow[r] : (T)0;
        }
        T *lse = (T *)l.lse + t.bh * l.tq + r0;
        for (int r = threadIdx.x; r < rows; r += blockDim.x)
            lse[r] = lrow[r] > 0 ? mrow[r] + log_t<T>(lrow[r]) : neg_inf<T>();
    }
}

/* delta_i = do_i . o_i, a thread per row. */
template <class T> __global__ void __launch_bounds__(kThreads) attn_delta_kernel(const ptcu_attention_launch l) {
    const int64_t n = l.b * l.h * l.tq;
    PTCU_GRID_STRIDE(row, 0, n) {
        const int64_t i = row % l.tq, bh = row / l.tq, bb = bh / l.h, hh = bh % l.h;
        const T *o = (const T *)l.o + bb * l.so[0] + hh * l.so[1] + i * l.so[2];
        const T *g = (const T *)l.dout + bb * l.sdo[0] + hh * l.sdo[1] + i * l.sdo[2];
        ((T *)l.delta)[row] = dot(o, g, (int)l.dv);
    }
}

/* p_ij and ds_ij of a tile's pairs into p (may be NULL) and ds (pitch
 * bk + 1): rows [0, rows) of qs/dos at global r0, keys [0, keys) of ks/vs
 * at global j0, the rows' lse and delta in lses, dels. */
template <class T>
__device__ void tile_probs(const ptcu_attention_launch &l, const TileOf &t, int64_t r0, int rows, int64_t j0,
                           int keys, int bk, const T *qs, const T *dos, const T *ks, const T *vs, const T *lses,
                           const T *dels, T *p, T *ds) {
    const int D = (int)l.d, DV = (int)l.dv, pd = D + 1, pv = DV + 1, ps = bk + 1;
    for (int e = threadIdx.x; e < rows * keys; e += blockDim.x) {
        const int r = e / keys, c = e % keys;
        T pr = 0, d = 0;
        if (lses[r] != neg_inf<T>()) {
            const T s = masked_score(l, t.bb, t.hh, r0 + r, j0 + c, dot(qs + r * pd, ks + c * pd, D));
            pr = exp_t<T>(s - lses[r]);
            if (pr != 0) d = pr * (dot(dos + r * pv, vs + c * pv, DV) - dels[r]);
        }
        if (p) p[r * ps + c] = pr;
        ds[r * ps + c] = d;
    }
}

/* dk and dv of one tile of keys: every query row that sees them. */
template <class T> __global__ void __launch_bounds__(kThreads) attn_kv_kernel(const ptcu_attention_launch l,
                                                                             int bq, int bk) {
    PTCU_DYNAMIC_SHARED(T, smem);
    const int D = (int)l.d, DV = (int)l.dv, pd = D + 1, pv = DV + 1, ps = bk + 1;
    T *ks = smem, *vs = ks + bk * pd, *dks = vs + bk * pv, *dvs = dks + bk * pd;
    T *qs = dvs + bk * pv, *dos = qs + bq * pd, *p = dos + bq * pv, *ds = p + bq * ps;
    T *lses = ds + bq * ps, *dels = lses + bq;
    for (int64_t blk = blockIdx.x; blk < tiles(l, l.tk, bk); blk += gridDim.x) {
        const TileOf t = tile_of(l, blk, l.tk, bk);
        const int64_t j0 = t.first;
        const int keys = t.count;
        __syncthreads();
        load_keys(l, t, j0, keys, ks, vs);
        fill(dks, bk * pd, (T)0);
        fill(dvs, bk * pv, (T)0);
        /* causal: rows before j0 see none of these keys */
        const int64_t first = (l.flags & PT_ATTN_CAUSAL) ? (j0 / bq) * bq : 0;
        for (int64_t r0 = first; r0 < l.tq; r0 += bq) {
            const int rows = (int)(l.tq - r0 < bq ? l.tq - r0 : bq);
            __syncthreads();
            load_queries(l, t, r0, rows, qs, dos, lses, dels);
            __syncthreads();
            tile_probs(l, t, r0, rows, j0, keys, bk, qs, dos, ks, vs, lses, dels, p, ds);
            __syncthreads();
            accumulate(dvs, keys, DV, p, 1, ps, rows, dos);
            accumulate(dks, keys, D, ds, 1, ps, rows, qs);
        }
        __syncthreads();
        store_rows((T *)l.dk + (t.bh * l.tk + j0) * D, dks, keys, D, (T)l.scale);
        store_rows((T *)l.dv_out + (t.bh * l.tk + j0) * DV, dvs, keys, DV, (T)1);
    }
}

/* dq of one tile of query rows: every key they see. */
template <class T> __global__ void __launch_bounds__(kThreads) attn_q_kernel(const ptcu_attention_launch l,
                                                                            int bq, int bk) {
    PTCU_DYNAMIC_SHARED(T, smem);
    const int D = (int)l.d, DV = (int)l.dv, pd = D + 1, pv = DV + 1, ps = bk + 1;
    T *qs = smem, *dos = qs + bq * pd, *dqs = dos + bq * pv, *ks = dqs + bq * pd, *vs = ks + bk * pd;
    T *ds = vs + bk * pv, *lses = ds + bq * ps, *dels = lses + bq;
    for (int64_t blk = blockIdx.x; blk < tiles(l, l.tq, bq); blk += gridDim.x) {
        const TileOf t = tile_of(l, blk, l.tq, bq);
        const int64_t r0 = t.first;
        const int rows = t.count;
        __syncthreads();
        load_queries(l, t, r0, rows, qs, dos, lses, dels);
        fill(dqs, bq * pd, (T)0);
        const int64_t end = key_end(l, r0, rows);
        for (int64_t j0 = 0; j0 < end; j0 += bk) {
            const int keys = (int)(end - j0 < bk ? end - j0 : bk);
            __syncthreads();
            load_keys(l, t, j0, keys, ks, vs);
            __syncthreads();
            tile_probs<T>(l, t, r0, rows, j0, keys, bk, qs, dos, ks, vs, lses, dels, nullptr, ds);
            __syncthreads();
            accumulate(dqs, rows, D, ds, ps, 1, keys, ks);
        }
        __syncthreads();
        store_rows((T *)l.out + (t.bh * l.tq + r0) * D, dqs, rows, D, (T)l.scale);
    }
}

/* ---- Launching ---- */

enum AttnKernel { kForward, kKeys, kQueries };

/* Shared bytes of kernel `which` with tiles of bq rows and bk keys. */
template <class T> static int64_t shared_bytes(AttnKernel which, const ptcu_attention_launch *l, int64_t bq,
                                               int64_t bk) {
    const int64_t pd = l->d + 1, pv = l->dv + 1, ps = bk + 1;
    int64_t n = 0;
    switch (which) {
    case kForward: n = bq * pd + bk * pd + bk * pv + bq * ps + bq * pv + 2 * bq; break;
    case kKeys: n = 2 * bk * pd + 2 * bk * pv + bq * pd + bq * pv + 2 * bq * ps + 2 * bq; break;
    case kQueries: n = 2 * bq * pd + bq * pv + bk * pd + bk * pv + bq * ps + 2 * bq; break;
    }
    return n * (int64_t)sizeof(T);
}

/* The largest tiles (powers of two up to kAttnMaxTile, the two sides
 * halved in turn) whose shared memory fits limit; false when none does. */
template <class T> static bool plan_tiles(AttnKernel which, const ptcu_attention_launch *l, int64_t limit,
                                          int *bq, int *bk, int64_t *bytes) {
    int64_t r = kAttnMaxTile, k = kAttnMaxTile;
    while (shared_bytes<T>(which, l, r, k) > limit) {
        if (k >= r && k > 1) k /= 2;
        else if (r > 1) r /= 2;
        else return false;
    }
    *bq = (int)r;
    *bk = (int)k;
    *bytes = shared_bytes<T>(which, l, r, k);
    return true;
}

/* Plans and launches one tiled kernel over `tiles` blocks' worth of work. */
template <class T>
static cudaError_t launch_tiled(void (*kernel)(ptcu_attention_launch, int, int), AttnKernel which,
                                const ptcu_attention_launch *l, cudaStream_t s) {
    const int64_t limit = l->shared_limit < kAttnSharedTarget ? l->shared_limit : kAttnSharedTarget;
    int bq = 0, bk = 0;
    int64_t bytes = 0;
    if (!plan_tiles<T>(which, l, limit > l->shared_default ? limit : l->shared_default, &bq, &bk, &bytes))
        return cudaErrorNotSupported;
    if (bytes > l->shared_default) { /* beyond the default a kernel must ask (each device, each time: cheap) */
        cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
        if (e != cudaSuccess) return e;
    }
    const int64_t side = which == kKeys ? (l->tk + bk - 1) / bk : (l->tq + bq - 1) / bq;
    const int64_t tiles = l->b * l->h * side;
    /* Enough blocks for several waves; each loops over the tiles past the grid. */
    const int64_t cap = blocks_per_sms(l->sm_count, 32);
    const unsigned grid = (unsigned)(tiles < cap ? tiles : cap);
    PTCU_LAUNCH_SHARED(kernel, grid, kThreads, (size_t)bytes, s)(*l, bq, bk);
    return cudaGetLastError();
}

template <class T> static cudaError_t attention_typed(const ptcu_attention_launch *l, cudaStream_t s) {
    if (!l->backward) return launch_tiled<T>(attn_forward_kernel<T>, kForward, l, s);
    const int64_t rows = l->b * l->h * l->tq;
    cudaError_t e = launch_kernel(attn_delta_kernel<T>, grid_for(rows, full_wave(attn_delta_kernel<T>, l->sm_count)),
                                  s, *l);
    if (e == cudaSuccess) e = launch_tiled<T>(attn_kv_kernel<T>, kKeys, l, s);
    if (e == cudaSuccess) e = launch_tiled<T>(attn_q_kernel<T>, kQueries, l, s);
    return e;
}

} /* namespace ptcu */

extern "C" cudaError_t ptcu_launch_attention(const ptcu_attention_launch *l, cudaStream_t stream) {
    using namespace ptcu;
    if (l->d < 1 || l->dv < 1 || l->d > PTCU_ATTENTION_MAX_D || l->dv > PTCU_ATTENTION_MAX_D)
        return cudaErrorNotSupported;
    switch (l->dtype) {
    case PT_F32: return attention_typed<float>(l, stream);
    case PT_F64: return attention_typed<double>(l, stream);
    default: return cudaErrorNotSupported;
    }
}
