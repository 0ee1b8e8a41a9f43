/* libportable OpenCL kernels — scaled dot-product attention (backend.h
 * ATTENTION, ATTENTION_BACKWARD) without the [Tq, Tk] scores in memory.
 *
 * Compiled only into the attention programs (launch_attention_program.c),
 * which define PT_ATTN_DMAX: the largest D or Dv they take, the length of
 * each work-item's private rows, one program per power of two so a short
 * head does not pay for 256 registers. The per-dtype programs embed this
 * text too and skip it.
 *
 * Geometry, in every kernel: one work-item per row it owns (a query row in
 * attn_forward and attn_backward_q, a key row in attn_backward_kv), a
 * work-group per block of local-size rows of one (b, h): group g is block
 * g % blocks of bh = g / blocks. The rows of the other side stream through
 * local memory in tiles of `tile` rows that the whole group loads, so each
 * is read from global memory once per block, not once per row. The host
 * picks the local size and the tile from the device's limits
 * (exec_attention.c).
 *
 * Forward: the online softmax of flash attention per query row: a running
 * maximum m and sum l, the output row rescaled by exp(m_old - m_new) when a
 * tile raises the maximum; it writes o and lse = m + log(l) (-inf for a row
 * that keeps no key, whose output is 0).
 *
 * Backward, FlashAttention-2's split without atomics: attn_backward_kv
 * gives each work-item a key row and sums dk and dv over every query row
 * that sees it; attn_backward_q gives each a query row and sums dq over its
 * keys. Both recompute p = exp(s - lse) and ds = p (do . v - delta) from
 * the saved lse, with delta = do . o per query row computed where it is
 * needed (each tile of attn_backward_kv, each row of attn_backward_q) rather
 * than kept in a buffer.
 *
 * Operands (host: exec_attention.c): buffers, then `off` the inputs'
 * element offsets (s0 q, s1 k, s2 v, s3 mask, s4 lse, which the forward
 * kernel writes, s5 o, s6 do), `oo` the outputs' (o, dq or dk; dv), the
 * strides of dims b, h, t in s0..s2 of a long4 per operand (the mask's key
 * stride in s3; 0 on broadcast dims), `dims` (s0 H, s1 Tq, s2 Tk, s3 D,
 * s4 Dv, s5 blocks per (b, h)). Outputs are contiguous. */
#ifdef PT_ATTN_DMAX

/* a . b over n elements, a private row and b a row of a local tile, in
 * four running sums: the prelude's FP_CONTRACT OFF and OpenCL's strict
 * float rules forbid the compiler to reorder one sum, which left the
 * products scalar (PoCL); four of them vectorise. */
#if PT_DTYPE == PT_K_F64
typedef double4 pt_attn_t4;
#else
typedef float4 pt_attn_t4;
#endif
static inline T pt_attn_dot(const T *a, __local const T *b, long n) {
    pt_attn_t4 s4 = 0;
    long c = 0;
    for (; c + 4 <= n; c += 4) s4 += vload4(0, a + c) * vload4(0, b + c);
    T s = (s4.x + s4.y) + (s4.z + s4.w);
    for (; c < n; ++c) s += a[c] * b[c];
    return s;
}

/* The score of (b, h, i, j) from the dot product of its query and key rows:
 * scaled, with the mask at mpos applied; -inf for a removed key. */
static inline T pt_attn_masked(T dot, T scale, int flags, __global const uchar *mask, long mpos) {
    T x = dot * scale;
    if (flags & PT_K_ATTN_MASK_KEEP) {
        if (!mask[mpos]) x = -INFINITY;
    } else if (flags & PT_K_ATTN_MASK_ADD) {
        x += ((__global const T *)mask)[mpos];
    }
    return x;
}

/* Rows [t0, t0 + n) of x (row stride st, base at element base) into the
 * local tile dst, w elements each, by the whole group: neighbouring
 * work-items read neighbouring elements of a row. */
static inline void pt_attn_load(__local T *dst, __global const T *x, long base, long st, long t0,
                                int n, long w) {
    const long L = (long)get_local_size(0);
    for (int r = 0; r < n; ++r)
        for (long c = (long)get_local_id(0); c < w; c += L) dst[r * w + c] = x[base + (t0 + r) * st + c];
}

/* The block of rows a group owns: its (b, h) and first row. */
typedef struct pt_attn_block {
    long b, h, r0;
} pt_attn_block;

static inline pt_attn_block pt_attn_block_of(long8 dims) {
    const long g = (long)get_group_id(0), blocks = dims.s5;
    const long bh = g / blocks, b = bh / dims.s0;
    pt_attn_block k = {b, bh - b * dims.s0, (g - bh * blocks) * (long)get_local_size(0)};
    return k;
}

/* How many keys the rows [r0, r1) of a block see: causal rows stop at
 * their diagonal. */
static inline long pt_attn_key_end(int flags, long r1, long tk) {
    return (flags & PT_K_ATTN_CAUSAL) ? min(r1, tk) : tk;
}

/* What a query-row work-item of attn_forward and attn_backward_q knows:
 * its row i, whether it is one (the last block has spare work-items), the
 * keys its group walks and the keys it sees itself, and where its (b, h)'s
 * keys, values and mask row start. */
typedef struct pt_attn_qrow {
    pt_attn_block blk;
    long i, end, mine, kb, vb, mb;
    bool live;
} pt_attn_qrow;

static inline pt_attn_qrow pt_attn_qrow_of(long8 dims, long8 off, long4 sk, long4 sv, long4 sm, int flags) {
    pt_attn_qrow r;
    const long tq = dims.s1, tk = dims.s2;
    r.blk = pt_attn_block_of(dims);
    r.i = r.blk.r0 + (long)get_local_id(0);
    r.live = r.i < tq;
    r.end = pt_attn_key_end(flags, min(r.blk.r0 + (long)get_local_size(0), tq), tk);
    r.mine = r.live ? pt_attn_key_end(flags, r.i + 1, tk) : 0;
    r.kb = off.s1 + r.blk.b * sk.s0 + r.blk.h * sk.s1;
    r.vb = off.s2 + r.blk.b * sv.s0 + r.blk.h * sv.s1;
    r.mb = off.s3 + r.blk.b * sm.s0 + r.blk.h * sm.s1 + r.i * sm.s2;
    return r;
}

__kernel void attn_forward(__global const T *q, __global const T *k, __global const T *v,
                           __global const uchar *mask, __global T *out, __global T *lse, long8 off, long2 oo,
                           long4 sq, long4 sk, long4 sv, long4 sm, long8 dims, T scale, int flags,
                           int tile, __local T *kt, __local T *vt) {
    const long tq = dims.s1, D = dims.s3, dv = dims.s4;
    const pt_attn_qrow me = pt_attn_qrow_of(dims, off, sk, sv, sm, flags);
    const pt_attn_block blk = me.blk;
    const long i = me.i, end = me.end, mine = me.mine, kb = me.kb, vb = me.vb, mb = me.mb;
    const bool live = me.live;
    T qi[PT_ATTN_DMAX], acc[PT_ATTN_DMAX], s[PT_K_ATTN_TILE_MAX];
    for (long c = 0; c < D; ++c) qi[c] = live ? q[off.s0 + blk.b * sq.s0 + blk.h * sq.s1 + i * sq.s2 + c] : 0;
    for (long c = 0; c < dv; ++c) acc[c] = 0;
    T m = -INFINITY, l = 0;
    for (long j0 = 0; j0 < end; j0 += tile) {
        const int n = (int)min((long)tile, end - j0);
        barrier(CLK_LOCAL_MEM_FENCE); /* the last tile's readers are done */
        pt_attn_load(kt, k, kb, sk.s2, j0, n, D);
        pt_attn_load(vt, v, vb, sv.s2, j0, n, dv);
        barrier(CLK_LOCAL_MEM_FENCE);
        const int seen = (int)clamp(mine - j0, 0L, (long)n);
        T top = m;
        for (int jj = 0; jj < seen; ++jj) {
            const T dot = pt_attn_dot(qi, kt + jj * D, D);
            s[jj] = pt_attn_masked(dot, scale, flags, mask, mb + (j0 + jj) * sm.s3);
            top = s[jj] > top ? s[jj] : top;
        }
        if (top == -INFINITY) continue; /* every key so far removed */
        const T alpha = exp(m - top);
        l *= alpha;
        for (long c = 0; c < dv; ++c) acc[c] *= alpha;
        for (int jj = 0; jj < seen; ++jj) {
            const T p = exp(s[jj] - top);
            if (p == 0) continue;
            l += p;
            for (long c = 0; c < dv; ++c) acc[c] += p * vt[jj * dv + c];
        }
        m = top;
    }
    if (!live) return;
    const long row = (blk.b * dims.s0 + blk.h) * tq + i;
    const T inv = l > 0 ? 1 / l : 0;
    for (long c = 0; c < dv; ++c) out[oo.s0 + row * dv + c] = acc[c] * inv;
    lse[off.s4 + row] = l > 0 ? m + log(l) : -INFINITY;
}

/* p and ds (times scale) of query row i and key row j from the score x,
 * the row's lse and delta and dp = do_i . v_j; false where p is 0. */
static inline bool pt_attn_grads(T x, T lse_i, T delta, T dp, T scale, T *p, T *ds) {
    if (lse_i == -INFINITY) return false;
    *p = exp(x - lse_i);
    if (*p == 0) return false;
    *ds = *p * (dp - delta) * scale;
    return true;
}

/* dk and dv: a work-item per key row j, summing over every query row that
 * sees it (causal: rows from the block's first key on), tiles of query
 * rows, their do rows and their lse and delta in local memory. */
__kernel void attn_backward_kv(__global const T *q, __global const T *k, __global const T *v,
                               __global const uchar *mask, __global const T *lse,
                               __global const T *o, __global const T *dout, __global T *gk,
                               __global T *gv, long8 off, long2 oo, long4 sq, long4 sk, long4 sv, long4 sm,
                               long4 so, long4 sdo, long8 dims, T scale, int flags, int tile,
                               __local T *qt, __local T *dot_t, __local T *rt) {
    const long tq = dims.s1, tk = dims.s2, D = dims.s3, dv = dims.s4;
    const int lid = (int)get_local_id(0), L = (int)get_local_size(0);
    const pt_attn_block blk = pt_attn_block_of(dims);
    const long j = blk.r0 + lid, bh = blk.b * dims.s0 + blk.h;
    const bool live = j < tk;
    const long qb = off.s0 + blk.b * sq.s0 + blk.h * sq.s1, db = off.s6 + blk.b * sdo.s0 + blk.h * sdo.s1;
    const long ob = off.s5 + blk.b * so.s0 + blk.h * so.s1;
    const long mb = off.s3 + blk.b * sm.s0 + blk.h * sm.s1 + j * sm.s3;
    T kj[PT_ATTN_DMAX], vj[PT_ATTN_DMAX], dk[PT_ATTN_DMAX], dvj[PT_ATTN_DMAX];
    for (long c = 0; c < D; ++c) {
        kj[c] = live ? k[off.s1 + blk.b * sk.s0 + blk.h * sk.s1 + j * sk.s2 + c] : 0;
        dk[c] = 0;
    }
    for (long c = 0; c < dv; ++c) {
        vj[c] = live ? v[off.s2 + blk.b * sv.s0 + blk.h * sv.s1 + j * sv.s2 + c] : 0;
        dvj[c] = 0;
    }
    /* Rows before the block's first key see none of its keys. */
    for (long i0 = (flags & PT_K_ATTN_CAUSAL) ? blk.r0 : 0; i0 < tq; i0 += tile) {
        const int n = (int)min((long)tile, tq - i0);
        barrier(CLK_LOCAL_MEM_FENCE);
        pt_attn_load(qt, q, qb, sq.s2, i0, n, D);
        pt_attn_load(dot_t, dout, db, sdo.s2, i0, n, dv);
        for (int r = lid; r < n; r += L) { /* lse and delta of each row of the tile */
            T sum = 0;
            for (long c = 0; c < dv; ++c) sum += o[ob + (i0 + r) * so.s2 + c] * dout[db + (i0 + r) * sdo.s2 + c];
            rt[r] = lse[off.s4 + bh * tq + i0 + r];
            rt[tile + r] = sum;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (!live) continue;
        const int r_first = (flags & PT_K_ATTN_CAUSAL) ? (int)clamp(j - i0, 0L, (long)n) : 0;
        for (int r = r_first; r < n; ++r) {
            const T dot = pt_attn_dot(kj, qt + r * D, D);
            const T x = pt_attn_masked(dot, scale, flags, mask, mb + (i0 + r) * sm.s2);
            if (x == -INFINITY) continue;
            const T dp = pt_attn_dot(vj, dot_t + r * dv, dv);
            T p, ds;
            if (!pt_attn_grads(x, rt[r], rt[tile + r], dp, scale, &p, &ds)) continue;
            for (long c = 0; c < dv; ++c) dvj[c] += p * dot_t[r * dv + c];
            for (long c = 0; c < D; ++c) dk[c] += ds * qt[r * D + c];
        }
    }
    if (!live) return;
    for (long c = 0; c < D; ++c) gk[oo.s0 + (bh * tk + j) * D + c] = dk[c];
    for (long c = 0; c < dv; ++c) gv[oo.s1 + (bh * tk + j) * dv + c] = dvj[c];
}

/* dq: a work-item per query row, summing over the keys it sees, tiles of
 * key and value rows in local memory. */
__kernel void attn_backward_q(__global const T *q, __global const T *k, __global const T *v,
                              __global const uchar *mask, __global const T *lse,
                              __global const T *o, __global const T *dout, __global T *gq,
                              long8 off, long2 oo, long4 sq, long4 sk, long4 sv, long4 sm, long4 so,
                              long4 sdo, long8 dims, T scale, int flags, int tile, __local T *kt,
                              __local T *vt) {
    const long tq = dims.s1, D = dims.s3, dv = dims.s4;
    const pt_attn_qrow me = pt_attn_qrow_of(dims, off, sk, sv, sm, flags);
    const pt_attn_block blk = me.blk;
    const long i = me.i, end = me.end, mine = me.mine, kb = me.kb, vb = me.vb, mb = me.mb;
    const long bh = blk.b * dims.s0 + blk.h;
    const bool live = me.live;
    T qi[PT_ATTN_DMAX], doi[PT_ATTN_DMAX], dq[PT_ATTN_DMAX];
    const long qrow = off.s0 + blk.b * sq.s0 + blk.h * sq.s1 + i * sq.s2;
    const long drow = off.s6 + blk.b * sdo.s0 + blk.h * sdo.s1 + i * sdo.s2;
    const long orow = off.s5 + blk.b * so.s0 + blk.h * so.s1 + i * so.s2;
    T delta = 0;
    for (long c = 0; c < D; ++c) {
        qi[c] = live ? q[qrow + c] : 0;
        dq[c] = 0;
    }
    for (long c = 0; c < dv; ++c) {
        doi[c] = live ? dout[drow + c] : 0;
        delta += live ? o[orow + c] * doi[c] : 0;
    }
    const T lse_i = live ? lse[off.s4 + bh * tq + i] : -INFINITY;
    for (long j0 = 0; j0 < end; j0 += tile) {
        const int n = (int)min((long)tile, end - j0);
        barrier(CLK_LOCAL_MEM_FENCE);
        pt_attn_load(kt, k, kb, sk.s2, j0, n, D);
        pt_attn_load(vt, v, vb, sv.s2, j0, n, dv);
        barrier(CLK_LOCAL_MEM_FENCE);
        const int seen = (int)clamp(mine - j0, 0L, (long)n);
        for (int jj = 0; jj < seen; ++jj) {
            const T dot = pt_attn_dot(qi, kt + jj * D, D);
            const T x = pt_attn_masked(dot, scale, flags, mask, mb + (j0 + jj) * sm.s3);
            if (x == -INFINITY) continue;
            const T dp = pt_attn_dot(doi, vt + jj * dv, dv);
            T p, ds;
            if (!pt_attn_grads(x, lse_i, delta, dp, scale, &p, &ds)) continue;
            for (long c = 0; c < D; ++c) dq[c] += ds * kt[jj * D + c];
        }
    }
    if (!live) return;
    for (long c = 0; c < D; ++c) gq[oo.s0 + (bh * tq + i) * D + c] = dq[c];
}

#endif
