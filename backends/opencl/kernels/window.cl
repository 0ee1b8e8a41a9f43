/* libportable OpenCL kernels — im2col, col2im and the max pools (backend.h WINDOW).
 *
 * All are gathers, one work item per output element (on CPU devices the
 * _rows forms: one per row of outputs): col2im sums, for its image
 * element, the column entries of every window tap that reads it, so no two
 * items write one place and no atomics are needed. */

/* Row r of im2col's output (everything but ow): the image row h it reads
 * (maybe in the padding), its tap column j, channel c and image b. */
typedef struct pt_im2col_row {
    long h, j, c, b;
} pt_im2col_row;

static inline pt_im2col_row im2col_row(long r, long C, long KH, long KW, long OH, long sh, long ph, long dh) {
    pt_im2col_row q;
    long t = r / OH;
    const long oh = r - t * OH;
    q.j = t % KW;
    t /= KW;
    const long i = t % KH;
    t /= KH;
    q.c = t % C;
    q.b = t / C;
    q.h = oh * sh - ph + i * dh;
    return q;
}

/* out [N, C, KH, KW, OH, OW] contiguous from x [N, C, H, W] (any strides). */
__kernel void im2col(__global T *out, long oo, __global const T *x, long xo, long xs_n, long xs_c,
                     long xs_h, long xs_w, long C, long H, long W, long KH, long KW, long OH,
                     long OW, long sh, long sw, long ph, long pw, long dh, long dw, T pad, long n) {
    PT_FOR_EACH(e, n) {
        const long t = e / OW, ow = e - t * OW;
        const pt_im2col_row q = im2col_row(t, C, KH, KW, OH, sh, ph, dh);
        const long w = ow * sw - pw + q.j * dw;
        out[oo + e] = (q.h >= 0 && q.h < H && w >= 0 && w < W)
                          ? x[xo + q.b * xs_n + q.c * xs_c + q.h * xs_h + w * xs_w]
                          : pad;
    }
}

/* im2col on CPU devices (the host's choice): one work item per `rows`
 * consecutive rows of OW outputs (1, or OH: a whole plane of one tap of one
 * channel), its coordinates divided out once. One work item per element
 * pays six 64-bit divisions each, which keep PoCL's work-item loop scalar:
 * the digits CNN's convolutions spent two thirds of their time here, 4x
 * more than one row an item. Where rows are 4 or 8 elements (the digits'
 * 4x4 and 8x8 images), a plane an item halves what is left. The same
 * arguments and rows; n still counts elements. */
__kernel void im2col_rows(__global T *out, long oo, __global const T *x, long xo, long xs_n, long xs_c,
                          long xs_h, long xs_w, long C, long H, long W, long KH, long KW, long OH,
                          long OW, long sh, long sw, long ph, long pw, long dh, long dw, T pad, long n,
                          long rows) {
    const long r0 = (long)get_global_id(0) * rows;
    if (r0 >= n / OW) return;
    const pt_im2col_row q = im2col_row(r0, C, KH, KW, OH, sh, ph, dh);
    __global const T *xp = x + xo + q.b * xs_n + q.c * xs_c;
    long h = q.h; /* the rows of an item lie in one plane: each next row is sh image rows down */
    for (long r = r0; r < r0 + rows; ++r, h += sh) {
        __global T *o = out + oo + r * OW;
        const bool inside = h >= 0 && h < H;
        __global const T *xr = xp + (inside ? h : 0) * xs_h;
        for (long ow = 0; ow < OW; ++ow) {
            const long w = ow * sw - pw + q.j * dw;
            o[ow] = (inside && w >= 0 && w < W) ? xr[w * xs_w] : pad;
        }
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
        if (sh == 1 && sw == 1) {
            /* stride 1 (most convolutions): the window rows and columns are
             * the image's shifted, with no divisions (the general loop below
             * divides four times a tap); the same taps in the same order */
            for (long i = 0; i < KH; ++i) {
                const long oh = h + ph - i * dh;
                if (oh < 0 || oh >= OH) continue;
                for (long j = 0; j < KW; ++j) {
                    const long ow = w + pw - j * dw;
                    if (ow >= 0 && ow < OW) acc += cp[((i * KW + j) * OH + oh) * OW + ow];
                }
            }
        } else {
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

/* A row of 2x2 windows at stride 2 (no padding or dilation, rows of the
 * image contiguous), the common pool, without window_max's loops and
 * branches: the same four taps in the same order and the same rule (the
 * first maximum wins, a NaN over any number), each compare a select, so
 * PoCL vectorises across the work items. [64, 16, 8, 8]'s indices took
 * 149 us with window_max, 25 us so (an add of the same size: 20). b and a
 * are the best value and its index; store writes one of them for ow. */
#define PT_TAKE(v, i)                                                                            \
    {                                                                                            \
        const T v_ = (v);                                                                        \
        const bool t_ = v_ > b || (PT_ISNAN(v_) && !PT_ISNAN(b));                                \
        b = t_ ? v_ : b;                                                                         \
        a = t_ ? (i) : a;                                                                        \
    }
#define PT_POOL_2X2(store)                                                                      \
    if (KH == 2 && KW == 2 && sh == 2 && sw == 2 && ph == 0 && pw == 0 && dh == 1 && dw == 1 &&  \
        xs_w == 1 && 2 * OH <= H && 2 * OW <= W) {                                               \
        __global const T *p0 = xp + 2 * oh * xs_h, *p1 = p0 + xs_h;                                \
        const long base = 2 * oh * W;                                                            \
        for (long ow = 0; ow < OW; ++ow) {                                                       \
            T b = p0[2 * ow];                                                                    \
            long a = base + 2 * ow;                                                              \
            PT_TAKE(p0[2 * ow + 1], base + 2 * ow + 1);                                          \
            PT_TAKE(p1[2 * ow], base + W + 2 * ow);                                              \
            PT_TAKE(p1[2 * ow + 1], base + W + 2 * ow + 1);                                      \
            store;                                                                               \
        }                                                                                        \
        return;                                                                                  \
    }

__kernel void max_pool2d_rows(__global T *out, long oo, __global const T *x, long xo, long xs_n, long xs_c,
                              long xs_h, long xs_w, long C, long H, long W, long KH, long KW, long OH,
                              long OW, long sh, long sw, long ph, long pw, long dh, long dw, long n) {
    PT_POOL_ROW;
    PT_POOL_2X2(out[oo + r * OW + ow] = b)
    for (long ow = 0; ow < OW; ++ow)
        out[oo + r * OW + ow] = window_max(xp, xs_h, xs_w, H, W, KH, KW, oh, ow, sh, sw, ph, pw, dh, dw, &at);
}

__kernel void max_pool2d_index_rows(__global long *out, long oo, __global const T *x, long xo, long xs_n,
                                    long xs_c, long xs_h, long xs_w, long C, long H, long W, long KH,
                                    long KW, long OH, long OW, long sh, long sw, long ph, long pw, long dh,
                                    long dw, long n) {
    PT_POOL_ROW;
    PT_POOL_2X2(out[oo + r * OW + ow] = a)
    for (long ow = 0; ow < OW; ++ow) {
        (void)window_max(xp, xs_h, xs_w, H, W, KH, KW, oh, ow, sh, sw, ph, pw, dh, dw, &at);
        out[oo + r * OW + ow] = at;
    }
}

/* MAX_UNPOOL2D: out [N, C, H, W] contiguous; g and index [N, C, OH, OW]
 * contiguous. Each image element gathers the windows that contain it and
 * chose it, in increasing (oh, ow) order (taps i, j descending), the order
 * the cpu backend's scatter adds them in. unpool_at is element (h, w) of
 * the plane whose g and index start at gp and ip. */
static T unpool_at(__global const T *gp, __global const long *ip, long h, long w, long W, long KH, long KW,
                   long OH, long OW, long sh, long sw, long ph, long pw, long dh, long dw) {
    const long hw = h * W + w;
    /* Windows that tile the image (the stride is the window, no padding or
     * dilation, as a 2x2 pool at stride 2): the one window holding (h, w),
     * where the loop below would try each tap with its divisions. 0 + g, as
     * the loop adds, so a -0 gradient comes out +0 there too. */
    if (KH == sh && KW == sw && ph == 0 && pw == 0 && dh == 1 && dw == 1) {
        const long oh = h / sh, ow = w / sw;
        if (oh >= OH || ow >= OW) return (T)0;
        const long k = oh * OW + ow;
        return ip[k] == hw ? (T)0 + gp[k] : (T)0;
    }
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
    return acc;
}

__kernel void max_unpool2d(__global T *out, long oo, __global const T *g, long go, long H, long W,
                           long KH, long KW, long OH, long OW, long sh, long sw, long ph, long pw,
                           long dh, long dw, __global const long *index, long io, long n) {
    PT_FOR_EACH(e, n) {
        const long hw = e % (H * W), plane = e / (H * W), h = hw / W, w = hw % W;
        out[oo + e] = unpool_at(g + go + plane * OH * OW, index + io + plane * OH * OW, h, w, W, KH, KW, OH, OW,
                                sh, sw, ph, pw, dh, dw);
    }
}

/* max_unpool2d on CPU devices: one work item per image row of W elements,
 * its plane and row divided out once. The same arguments, n counting
 * elements. */
__kernel void max_unpool2d_rows(__global T *out, long oo, __global const T *g, long go, long H, long W,
                                long KH, long KW, long OH, long OW, long sh, long sw, long ph, long pw,
                                long dh, long dw, __global const long *index, long io, long n) {
    const long r = (long)get_global_id(0);
    if (r >= n / W) return;
    const long plane = r / H, h = r - plane * H;
    __global const T *gp = g + go + plane * OH * OW;
    __global const long *ip = index + io + plane * OH * OW;
    /* 2x2 windows at stride 2 (no padding or dilation): unpool_at's tiled
     * case for the row, its divisions made once and its test a select, so
     * PoCL vectorises across the work items (the same value, 0 + g where
     * the window chose the element, else 0). */
    if (KH == 2 && KW == 2 && sh == 2 && sw == 2 && ph == 0 && pw == 0 && dh == 1 && dw == 1) {
        const long oh = h / 2, hw0 = h * W;
        if (oh >= OH) {
            for (long w = 0; w < W; ++w) out[oo + r * W + w] = (T)0;
            return;
        }
        for (long w = 0; w < W; ++w) {
            const long k = oh * OW + w / 2;
            const bool inside = w / 2 < OW;
            const long kk = inside ? k : 0;
            out[oo + r * W + w] = inside && ip[kk] == hw0 + w ? (T)0 + gp[kk] : (T)0;
        }
        return;
    }
    for (long w = 0; w < W; ++w)
        out[oo + r * W + w] = unpool_at(gp, ip, h, w, W, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw);
}
