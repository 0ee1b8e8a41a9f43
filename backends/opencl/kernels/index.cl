/* libportable OpenCL kernels — gather and one_hot.
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
