/* libportable OpenCL kernels — im2col, col2im and the max pools (backend.h WINDOW).
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

/* im2col on CPU devices (the host's choice): one work item per row of OW
 * outputs, its coordinates divided out once. One work item per element
 * pays six 64-bit divisions each, which keep PoCL's work-item loop scalar:
 * the digits CNN's convolutions spent two thirds of their time here, 4x
 * more than this form. The same arguments; n still counts elements. */
__kernel void im2col_rows(__global T *out, long oo, __global const T *x, long xo, long xs_n, long xs_c,
                          long xs_h, long xs_w, long C, long H, long W, long KH, long KW, long OH,
                          long OW, long sh, long sw, long ph, long pw, long dh, long dw, T pad, long n) {
    const long r = (long)get_global_id(0);
    if (r >= n / OW) return;
    long t = r / OH;
    const long oh = r - t * OH;
    const long j = t % KW;
    t /= KW;
    const long i = t % KH;
    t /= KH;
    const long c = t % C, b = t / C;
    const long h = oh * sh - ph + i * dh;
    __global T *o = out + oo + r * OW;
    const bool inside = h >= 0 && h < H;
    __global const T *xr = x + xo + b * xs_n + c * xs_c + (inside ? h : 0) * xs_h;
    for (long ow = 0; ow < OW; ++ow) {
        const long w = ow * sw - pw + j * dw;
        o[ow] = (inside && w >= 0 && w < W) ? xr[w * xs_w] : pad;
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

/* Max pooling (MAX_POOL2D, MAX_POOL2D_INDEX): one work item per window of x
 * [N, C, H, W] (any strides), its taps inside the image in row-major order;
 * the first maximum wins, a NaN over any number. *at: h*W + w (-1 and the
 * lowest value for a window of padding only). */
static T window_max(__global const T *xp, long xs_h, long xs_w, long H, long W, long KH, long KW,
                    long oh, long ow, long sh, long sw, long ph, long pw, long dh, long dw,
                    long *at) {
    T best = (T)PT_ACC_LOWEST;
    long where = -1;
    for (long i = 0; i < KH; ++i) {
        const long h = oh * sh - ph + i * dh;
        if (h < 0 || h >= H) continue;
        for (long j = 0; j < KW; ++j) {
            const long w = ow * sw - pw + j * dw;
            if (w < 0 || w >= W) continue;
            const T v = xp[h * xs_h + w * xs_w];
            if (where < 0 || v > best || (PT_ISNAN(v) && !PT_ISNAN(best))) {
                best = v;
                where = h * W + w;
            }
        }
    }
    *at = where;
    return best;
}

#define PT_POOL_WINDOW_INDEX                                                                     \
    const long ow = e % OW, t = e / OW, oh = t % OH, plane = t / OH;                             \
    __global const T *xp = x + xo + (plane / C) * xs_n + (plane % C) * xs_c;                     \
    long at

/* out [N, C, OH, OW] contiguous: each window's maximum. */
__kernel void max_pool2d(__global T *out, long oo, __global const T *x, long xo, long xs_n, long xs_c,
                         long xs_h, long xs_w, long C, long H, long W, long KH, long KW, long OH,
                         long OW, long sh, long sw, long ph, long pw, long dh, long dw, long n) {
    PT_FOR_EACH(e, n) {
        PT_POOL_WINDOW_INDEX;
        out[oo + e] = window_max(xp, xs_h, xs_w, H, W, KH, KW, oh, ow, sh, sw, ph, pw, dh, dw, &at);
    }
}

/* out PT_I64 [N, C, OH, OW] contiguous: where each window's maximum is. */
__kernel void max_pool2d_index(__global long *out, long oo, __global const T *x, long xo, long xs_n,
                               long xs_c, long xs_h, long xs_w, long C, long H, long W, long KH,
                               long KW, long OH, long OW, long sh, long sw, long ph, long pw, long dh,
                               long dw, long n) {
    PT_FOR_EACH(e, n) {
        PT_POOL_WINDOW_INDEX;
        (void)window_max(xp, xs_h, xs_w, H, W, KH, KW, oh, ow, sh, sw, ph, pw, dh, dw, &at);
        out[oo + e] = at;
    }
}

/* The max pools on CPU devices (the host's choice; see im2col_rows): one
 * work item per row of OW windows, the row's plane and oh divided out
 * once. The same arguments; n counts windows. */
#define PT_POOL_ROW                                                                              \
    const long r = (long)get_global_id(0);                                                       \
    if (r >= n / OW) return;                                                                     \
    const long plane = r / OH, oh = r - plane * OH;                                              \
    __global const T *xp = x + xo + (plane / C) * xs_n + (plane % C) * xs_c;                     \
    long at

__kernel void max_pool2d_rows(__global T *out, long oo, __global const T *x, long xo, long xs_n, long xs_c,
                              long xs_h, long xs_w, long C, long H, long W, long KH, long KW, long OH,
                              long OW, long sh, long sw, long ph, long pw, long dh, long dw, long n) {
    PT_POOL_ROW;
    for (long ow = 0; ow < OW; ++ow)
        out[oo + r * OW + ow] = window_max(xp, xs_h, xs_w, H, W, KH, KW, oh, ow, sh, sw, ph, pw, dh, dw, &at);
}

__kernel void max_pool2d_index_rows(__global long *out, long oo, __global const T *x, long xo, long xs_n,
                                    long xs_c, long xs_h, long xs_w, long C, long H, long W, long KH,
                                    long KW, long OH, long OW, long sh, long sw, long ph, long pw, long dh,
                                    long dw, long n) {
    PT_POOL_ROW;
    for (long ow = 0; ow < OW; ++ow) {
        (void)window_max(xp, xs_h, xs_w, H, W, KH, KW, oh, ow, sh, sw, ph, pw, dh, dw, &at);
        out[oo + r * OW + ow] = at;
    }
}

/* MAX_UNPOOL2D: out [N, C, H, W] contiguous; g and index [N, C, OH, OW]
 * contiguous. Each image element gathers the windows that contain it and
 * chose it, in increasing (oh, ow) order (taps i, j descending), the order
 * the cpu backend's scatter adds them in. */
__kernel void max_unpool2d(__global T *out, long oo, __global const T *g, long go, long H, long W,
                           long KH, long KW, long OH, long OW, long sh, long sw, long ph, long pw,
                           long dh, long dw, __global const long *index, long io, long n) {
    PT_FOR_EACH(e, n) {
        const long hw = e % (H * W), plane = e / (H * W), h = hw / W, w = hw % W;
        __global const T *gp = g + go + plane * OH * OW;
        __global const long *ip = index + io + plane * OH * OW;
        T acc = (T)0;
        for (long i = KH - 1; i >= 0; --i) {
            const long hh = h + ph - i * dh;
            if (hh < 0 || hh % sh != 0 || hh / sh >= OH) continue;
            const long oh = hh / sh;
            for (long j = KW - 1; j >= 0; --j) {
                const long ww = w + pw - j * dw;
                if (ww < 0 || ww % sw != 0 || ww / sw >= OW) continue;
                const long k = oh * OW + ww / sw;
                if (ip[k] == hw) acc += gp[k];
            }
        }
        out[oo + e] = acc;
    }
}

/* max_unpool2d on CPU devices: one work item per image row of W elements,
 * the window rows that can hold it (the taps i) found once per row. The
 * same sums in the same order; the same arguments, n counting elements. */
__kernel void max_unpool2d_rows(__global T *out, long oo, __global const T *g, long go, long H, long W,
                                long KH, long KW, long OH, long OW, long sh, long sw, long ph, long pw,
                                long dh, long dw, __global const long *index, long io, long n) {
    const long r = (long)get_global_id(0);
    if (r >= n / W) return;
    const long plane = r / H, h = r - plane * H;
    __global const T *gp = g + go + plane * OH * OW;
    __global const long *ip = index + io + plane * OH * OW;
    for (long w = 0; w < W; ++w) {
        const long hw = h * W + w;
        T acc = (T)0;
        for (long i = KH - 1; i >= 0; --i) {
            const long hh = h + ph - i * dh;
            if (hh < 0 || hh % sh != 0 || hh / sh >= OH) continue;
            const long oh = hh / sh;
            for (long j = KW - 1; j >= 0; --j) {
                const long ww = w + pw - j * dw;
                if (ww < 0 || ww % sw != 0 || ww / sw >= OW) continue;
                const long k = oh * OW + ww / sw;
                if (ip[k] == hw) acc += gp[k];
            }
        }
        out[oo + r * W + w] = acc;
    }
}
