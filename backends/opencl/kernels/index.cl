/* libportable OpenCL kernels — gather, one_hot and the embedding gradient
 * (the embedding lookup itself is a gather: exec_index.c).
 *
 * Index tensors are i32 or i64 whatever the program's type, so they arrive as
 * bytes plus a flag. Out-of-range indices write 0 and never read outside x:
 * the device cannot report an error without the host waiting for it. */

static inline long pt_load_index(__global const uchar *p, long k, int is_i64) {
    return is_i64 ? ((__global const long *)p)[k] : (long)((__global const int *)p)[k];
}

/* out[o][j][i] (contiguous) = x[o][index[o][j][i]][i] */
__kernel void gather(__global T *out, long oo, __global const T *x, long xo, long xs_o,
                     long xs_r, long xs_i, long r_in, __global const uchar *index, long ixo,
                     int idx_i64, long is_o, long is_r, long is_i, long r_idx, long inner,
                     long n) {
    PT_FOR_EACH(e, n) {
        long t = e / inner;
        long i = e - t * inner;
        long o = t / r_idx;
        long j = t - o * r_idx;
        long v = pt_load_index(index, ixo + o * is_o + j * is_r + i * is_i, idx_i64);
        out[oo + e] = (v >= 0 && v < r_in) ? x[xo + o * xs_o + v * xs_r + i * xs_i] : (T)0;
    }
}

/* out[row][c] (contiguous [n, count]) = labels[row] == c */
__kernel void one_hot(__global T *out, long oo, __global const uchar *labels, long lo, long ls,
                      int lab_i64, long count, long n) {
    PT_FOR_EACH(e, n) {
        long row = e / count;
        long c = e - row * count;
#if PT_DTYPE == PT_K_F16
        const T one = (T)0x3c00; /* 1.0 */
#elif PT_DTYPE == PT_K_BF16
        const T one = (T)0x3f80;
#else
        const T one = (T)1;
#endif
        out[oo + e] = pt_load_index(labels, lo + row * ls, lab_i64) == c ? one : (T)0;
    }
}

/* The embedding gradient, a scatter-add without atomics so its sums are the
 * same bits run to run: embedding_links gives each position p whether it is
 * its index's first occurrence (first[p]) and the next position with its
 * index (next[p], -1 for none), scanning the n indices (O(n^2) reads in
 * all, about 17M at n = 4096: less than what sorting on the device would
 * cost in launches at a batch's few thousand tokens); embedding_sum then
 * walks each first position's chain in increasing position for one column
 * per work-item (O(n d) additions) over rows embedding_zero cleared. An
 * index outside [0, rows) links nowhere and adds nothing. */
__kernel void embedding_links(__global long *scratch, long so, __global const uchar *index, long ixo, int idx_i64,
                              long is, long n, long rows) {
    PT_FOR_EACH(p, n) {
        const long v = pt_load_index(index, ixo + p * is, idx_i64);
        long f = 0, nx = -1;
        if (v >= 0 && v < rows) {
            f = 1;
            for (long q = 0; q < p && f; ++q) f = pt_load_index(index, ixo + q * is, idx_i64) != v;
            for (long q = p + 1; q < n && nx < 0; ++q)
                if (pt_load_index(index, ixo + q * is, idx_i64) == v) nx = q;
        }
        scratch[so + p] = f;
        scratch[so + n + p] = nx;
    }
}

__kernel void embedding_sum(__global T *out, long oo, __global const T *g, long go, long gs0, long gs1,
                            __global const long *scratch, long so, __global const uchar *index, long ixo,
                            int idx_i64, long is, long n, long d) {
    PT_FOR_EACH(e, n * d) {
        const long p = e / d, x = e - p * d;
        if (scratch[so + p]) {
            T acc = (T)0;
            for (long q = p; q >= 0; q = scratch[so + n + q]) acc += g[go + q * gs0 + x * gs1];
            out[oo + pt_load_index(index, ixo + p * is, idx_i64) * d + x] = acc;
        }
    }
}

__kernel void embedding_zero(__global T *out, long oo, long n) {
    PT_FOR_EACH(e, n) { out[oo + e] = (T)0; }
}
