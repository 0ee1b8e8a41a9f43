/* libportable OpenCL kernels — im2col and col2im (backend.h WINDOW).
 *
 * Both are gathers, one work item per output element: col2im sums, for its
 * image element, the column entries of every window tap that reads it, so no
 * two items write one place and no atomics are needed. */

/* out [N, C, KH, KW, OH, OW] contiguous from x [N, C, H, W] (any strides). */
__kernel void im2col(__global T *out, long oo, __global const T *x, long xo, long xs_n, long xs_c,
                     long xs_h, long xs_w, long C, long H, long W, long KH, long KW, long OH,
                     long OW, long sh, long sw, long ph, long pw, long dh, long dw, T pad, long n) {
    PT_FOR_EACH(e, n) {
        long t = e / OW;
        const long ow = e - t * OW;
        const long oh = t % OH;
        t /= OH;
        const long j = t % KW;
        t /= KW;
        const long i = t % KH;
        t /= KH;
        const long c = t % C, b = t / C;
        const long h = oh * sh - ph + i * dh, w = ow * sw - pw + j * dw;
        out[oo + e] = (h >= 0 && h < H && w >= 0 && w < W)
                          ? x[xo + b * xs_n + c * xs_c + h * xs_h + w * xs_w]
                          : pad;
    }
}

/* out [N, C, H, W] contiguous from col [N, C, KH, KW, OH, OW] contiguous. */
__kernel void col2im(__global T *out, long oo, __global const T *col, long co, long H, long W,
                     long KH, long KW, long OH, long OW, long sh, long sw, long ph, long pw, long dh,
                     long dw, long n) {
    PT_FOR_EACH(e, n) {
        long t = e / W;
        const long w = e - t * W;
        const long h = t % H, plane = t / H;
        __global const T *cp = col + co + plane * KH * KW * OH * OW;
        T acc = (T)0;
        for (long i = 0; i < KH; ++i) {
            const long hh = h + ph - i * dh;
            if (hh < 0 || hh % sh != 0 || hh / sh >= OH) continue;
            const long oh = hh / sh;
            for (long j = 0; j < KW; ++j) {
                const long ww = w + pw - j * dw;
                if (ww < 0 || ww % sw != 0 || ww / sw >= OW) continue;
                acc += cp[((i * KW + j) * OH + oh) * OW + ww / sw];
            }
        }
        out[oo + e] = acc;
    }
}
