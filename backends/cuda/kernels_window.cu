/* libportable CUDA backend — IM2COL, COL2IM and the max pools (backend.h
 * WINDOW). One thread per output element: COL2IM and MAX_UNPOOL2D gather,
 * for their image element, every entry that reaches it, so no two threads
 * write one place and no atomics are needed. f16/bf16: IM2COL moves the
 * stored values as they are, the pools compare them in f32 (a maximum is
 * one of the inputs: stored back exactly), COL2IM and MAX_UNPOOL2D sum
 * them in f32 and round each output once. */
#include "k_common.cuh"

namespace ptcu {

struct WindowGeo {
    int64_t c, h, w, kh, kw, oh, ow;
    int64_t xs[4];
    int64_t sh, sw, ph, pw, dh, dw;
};

template <class T>
__global__ void __launch_bounds__(kThreads) im2col_kernel(const T *x, T *out, WindowGeo g, T pad, int64_t n) {
    PTCU_GRID_STRIDE(e, 0, n) {
        int64_t t = e / g.ow;
        const int64_t ow = e - t * g.ow;
        const int64_t oh = t % g.oh;
        t /= g.oh;
        const int64_t j = t % g.kw;
        t /= g.kw;
        const int64_t i = t % g.kh;
        t /= g.kh;
        const int64_t c = t % g.c, b = t / g.c;
        const int64_t h = oh * g.sh - g.ph + i * g.dh, w = ow * g.sw - g.pw + j * g.dw;
        out[e] = (h >= 0 && h < g.h && w >= 0 && w < g.w)
                     ? x[b * g.xs[0] + c * g.xs[1] + h * g.xs[2] + w * g.xs[3]]
                     : pad;
    }
}

/* Sums in T, values stored as S. */
template <class T, class S>
__global__ void __launch_bounds__(kThreads) col2im_kernel(const S *col, S *out, WindowGeo g, int64_t n) {
    PTCU_GRID_STRIDE(e, 0, n) {
        int64_t t = e / g.w;
        const int64_t w = e - t * g.w;
        const int64_t h = t % g.h, plane = t / g.h;
        const S *cp = col + plane * g.kh * g.kw * g.oh * g.ow;
        T acc = (T)0;
        for (int64_t i = 0; i < g.kh; ++i) {
            const int64_t hh = h + g.ph - i * g.dh;
            if (hh < 0 || hh % g.sh != 0 || hh / g.sh >= g.oh) continue;
            const int64_t oh = hh / g.sh;
            for (int64_t j = 0; j < g.kw; ++j) {
                const int64_t ww = w + g.pw - j * g.dw;
                if (ww < 0 || ww % g.sw != 0 || ww / g.sw >= g.ow) continue;
                acc += widen(cp[((i * g.kw + j) * g.oh + oh) * g.ow + ww / g.sw]);
            }
        }
        out[e] = narrow<S>(acc);
    }
}

/* The window (oh, ow)'s maximum over its taps inside the image, in
 * row-major order: the first maximum, a NaN over any number; *at is h*W + w
 * (-1 and -inf for a window of padding only). */
template <class T, class S>
__device__ __forceinline__ T window_max(const S *xp, const WindowGeo &g, int64_t oh, int64_t ow, int64_t *at) {
    T best = (T)-INFINITY;
    int64_t where = -1;
    for (int64_t i = 0; i < g.kh; ++i) {
        const int64_t h = oh * g.sh - g.ph + i * g.dh;
        if (h < 0 || h >= g.h) continue;
        for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t w = ow * g.sw - g.pw + j * g.dw;
            if (w < 0 || w >= g.w) continue;
            const T v = widen(xp[h * g.xs[2] + w * g.xs[3]]);
            if (where < 0 || v > best || (v != v && best == best)) {
                best = v;
                where = h * g.w + w;
            }
        }
    }
    *at = where;
    return best;
}

/* MAX_POOL2D (INDEX false) or MAX_POOL2D_INDEX: out [N, C, OH, OW]. */
template <class T, class S, bool INDEX, class O>
__global__ void __launch_bounds__(kThreads) max_pool_kernel(const S *x, O *out, WindowGeo g, int64_t n) {
    PTCU_GRID_STRIDE(e, 0, n) {
        const int64_t ow = e % g.ow, t = e / g.ow, oh = t % g.oh, plane = t / g.oh;
        const S *xp = x + (plane / g.c) * g.xs[0] + (plane % g.c) * g.xs[1];
        int64_t at;
        const T best = window_max<T, S>(xp, g, oh, ow, &at);
        if constexpr (INDEX) out[e] = at;
        else out[e] = narrow<S>(best);
    }
}

/* MAX_UNPOOL2D: out [N, C, H, W]; each element sums, in increasing (oh, ow)
 * order (taps descending), the windows that contain it and chose it. */
template <class T, class S>
__global__ void __launch_bounds__(kThreads) max_unpool_kernel(const S *gr, const int64_t *index, S *out,
                                                              WindowGeo g, int64_t n) {
    PTCU_GRID_STRIDE(e, 0, n) {
        const int64_t hw = e % (g.h * g.w), plane = e / (g.h * g.w), h = hw / g.w, w = hw % g.w;
        const S *gp = gr + plane * g.oh * g.ow;
        const int64_t *ip = index + plane * g.oh * g.ow;
        T acc = (T)0;
        for (int64_t i = g.kh - 1; i >= 0; --i) {
            const int64_t hh = h + g.ph - i * g.dh;
            if (hh < 0 || hh % g.sh != 0 || hh / g.sh >= g.oh) continue;
            const int64_t oh = hh / g.sh;
            for (int64_t j = g.kw - 1; j >= 0; --j) {
                const int64_t ww = w + g.pw - j * g.dw;
                if (ww < 0 || ww % g.sw != 0 || ww / g.sw >= g.ow) continue;
                const int64_t k = oh * g.ow + ww / g.sw;
                if (ip[k] == hw) acc += widen(gp[k]);
            }
        }
        out[e] = narrow<S>(acc);
    }
}

template <class T, class S> static cudaError_t window_typed(const ptcu_window_launch *l, cudaStream_t s) {
    WindowGeo g;
    g.c = l->c;
    g.h = l->h;
    g.w = l->w;
    g.kh = l->kh;
    g.kw = l->kw;
    g.oh = l->oh;
    g.ow = l->ow;
    for (int k = 0; k < 4; ++k) g.xs[k] = l->xs[k];
    g.sh = l->window[0];
    g.sw = l->window[1];
    g.ph = l->window[2];
    g.pw = l->window[3];
    g.dh = l->window[4];
    g.dw = l->window[5];
    const dim3 grid_pool = grid_for(l->n * l->c * l->oh * l->ow, blocks_per_sms(l->sm_count, 32));
    if (l->kind == PT_OP_MAX_POOL2D)
        return launch_kernel(max_pool_kernel<T, S, false, S>, grid_pool, s, (const S *)l->in, (S *)l->out, g,
                             l->n * l->c * l->oh * l->ow);
    if (l->kind == PT_OP_MAX_POOL2D_INDEX)
        return launch_kernel(max_pool_kernel<T, S, true, int64_t>, grid_pool, s, (const S *)l->in,
                             (int64_t *)l->out, g, l->n * l->c * l->oh * l->ow);
    if (l->kind == PT_OP_MAX_UNPOOL2D) {
        const int64_t n = l->n * l->c * l->h * l->w;
        return launch_kernel(max_unpool_kernel<T, S>, grid_for(n, blocks_per_sms(l->sm_count, 32)), s,
                             (const S *)l->in, (const int64_t *)l->index, (S *)l->out, g, n);
    }
    if (l->kind == PT_OP_IM2COL) {
        const int64_t n = l->n * l->c * l->kh * l->kw * l->oh * l->ow;
        return launch_kernel(im2col_kernel<S>, grid_for(n, blocks_per_sms(l->sm_count, 32)), s, (const S *)l->in,
                             (S *)l->out, g, from_double<S>(l->pad), n);
    }
    const int64_t n = l->n * l->c * l->h * l->w;
    return launch_kernel(col2im_kernel<T, S>, grid_for(n, blocks_per_sms(l->sm_count, 32)), s, (const S *)l->in,
                         (S *)l->out, g, n);
}

} /* namespace ptcu */

extern "C" cudaError_t ptcu_launch_window(const ptcu_window_launch *l, cudaStream_t stream) {
    using namespace ptcu;
    if (l->dtype == PT_F32) return window_typed<float, float>(l, stream);
    if (l->dtype == PT_F64) return window_typed<double, double>(l, stream);
    if (l->dtype == PT_F16) return window_typed<float, f16>(l, stream);
    if (l->dtype == PT_BF16) return window_typed<float, bf16>(l, stream);
    return cudaErrorNotSupported;
}
