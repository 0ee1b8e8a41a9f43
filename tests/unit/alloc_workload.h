/* A training-like allocation workload whose tensor sizes change every step,
 * shared by tests/unit/test_allocator_varying.c (which asserts on it) and
 * bench/bench_alloc.c (which prints it). Public API only.
 *
 * Persistent parameters (4 layers of 1024 x 1024 f32 weights, their
 * gradients and two optimizer moments: 64 MiB) live throughout. Each step
 * draws a batch size B in 8..64 and a sequence length T in 16..256 and runs a
 * forward pass that keeps per layer an activation (B, T, 1024), an attention
 * score matrix (B, T, T) and a few small tensors (a (B, T) mask, a (B)
 * vector), then a backward pass that frees them in reverse while it makes
 * gradients of the same shapes, each freed after use; then everything of the
 * step is released. Tensors are pt_empty: no memory is touched, so the
 * sizes cost no time. After every allocation and release the allocator's
 * reserved bytes (in_use + cached) are compared with the peak of live bytes
 * (the sum of the tensors' own sizes, counted here) from the first step on,
 * once the parameters exist (the first 4 MiB one alone takes a 20 MiB
 * segment, as PyTorch's allocator would). */
#ifndef PORTABLE_TESTS_ALLOC_WORKLOAD_H
#define PORTABLE_TESTS_ALLOC_WORKLOAD_H

#include <stdint.h>
#include <stdio.h>

#include "portable/portable.h"

#define WL_LAYERS 4
#define WL_HIDDEN 1024

typedef struct wl_result {
    int64_t live, peak_live;      /* bytes of live tensors, as counted here */
    int64_t max_reserved;         /* largest reserved seen */
    double worst_ratio;           /* largest reserved / peak_live seen */
    int worst_step;
    double end_ratio;             /* reserved / peak_live after the last step */
    int failed;                   /* an allocation failed (the error is set) */
} wl_result;

static uint64_t wl_rng = 88172645463325252ull;
static int64_t wl_rand(int64_t lo, int64_t hi) {
    wl_rng ^= wl_rng << 13;
    wl_rng ^= wl_rng >> 7;
    wl_rng ^= wl_rng << 17;
    return lo + (int64_t)(wl_rng % (uint64_t)(hi - lo + 1));
}

static void wl_observe(pt_device *d, wl_result *r, int step) {
    pt_memory_usage u;
    if (pt_memory_stats(d, &u) != PT_OK) {
        r->failed = 1;
        return;
    }
    if (u.reserved > r->max_reserved) r->max_reserved = u.reserved;
    double ratio = r->peak_live ? (double)u.reserved / (double)r->peak_live : 0;
    if (step >= 0 && ratio > r->worst_ratio) { /* from the first step on, parameters made */
        r->worst_ratio = ratio;
        r->worst_step = step;
    }
}

static pt_tensor *wl_new(pt_device *d, wl_result *r, int step, int ndim, const int64_t *shape) {
    pt_tensor *t = pt_empty(d, PT_F32, ndim, shape);
    if (!t) {
        r->failed = 1;
        return NULL;
    }
    int64_t n = 4;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    r->live += n;
    if (r->live > r->peak_live) r->peak_live = r->live;
    wl_observe(d, r, step);
    return t;
}

static void wl_free(pt_device *d, wl_result *r, int step, pt_tensor *t) {
    if (!t) return;
    r->live -= pt_tensor_numel(t) * 4;
    pt_release(t);
    wl_observe(d, r, step);
}

/* Runs `steps` steps on d (which should hold nothing when it starts).
 * peak_before: the peak of live bytes of earlier runs in this process (the
 * allocator's own peak, which its collection goes by, is never reset). */
static wl_result wl_run(pt_device *d, int steps, int64_t peak_before) {
    wl_result r = {0};
    r.peak_live = peak_before;
    wl_rng = 88172645463325252ull;
    enum { PER_LAYER = 4 };
    pt_tensor *params[WL_LAYERS * 4] = {NULL};
    int64_t w[2] = {WL_HIDDEN, WL_HIDDEN};
    for (int i = 0; i < WL_LAYERS * 4 && !r.failed; ++i) params[i] = wl_new(d, &r, -1, 2, w);
    for (int step = 0; step < steps && !r.failed; ++step) {
        int64_t b = wl_rand(8, 64), t = wl_rand(16, 256);
        int64_t act[3] = {b, t, WL_HIDDEN}, att[3] = {b, t, t}, mask[2] = {b, t}, vec[1] = {b};
        pt_tensor *fw[WL_LAYERS * PER_LAYER] = {NULL};
        for (int l = 0; l < WL_LAYERS && !r.failed; ++l) {
            fw[l * PER_LAYER + 0] = wl_new(d, &r, step, 3, act);
            fw[l * PER_LAYER + 1] = wl_new(d, &r, step, 3, att);
            fw[l * PER_LAYER + 2] = wl_new(d, &r, step, 2, mask);
            fw[l * PER_LAYER + 3] = wl_new(d, &r, step, 1, vec);
        }
        pt_tensor *grad = r.failed ? NULL : wl_new(d, &r, step, 3, act);
        for (int l = WL_LAYERS - 1; l >= 0 && !r.failed; --l) {
            pt_tensor *g_att = wl_new(d, &r, step, 3, att);
            pt_tensor *g_act = wl_new(d, &r, step, 3, act);
            wl_free(d, &r, step, fw[l * PER_LAYER + 1]);
            fw[l * PER_LAYER + 1] = NULL;
            wl_free(d, &r, step, g_att);
            wl_free(d, &r, step, grad);
            grad = g_act;
            wl_free(d, &r, step, fw[l * PER_LAYER + 0]);
            fw[l * PER_LAYER + 0] = NULL;
        }
        wl_free(d, &r, step, grad);
        for (int i = WL_LAYERS * PER_LAYER - 1; i >= 0; --i) wl_free(d, &r, step, fw[i]);
    }
    wl_observe(d, &r, steps);
    pt_memory_usage u;
    if (pt_memory_stats(d, &u) == PT_OK && r.peak_live) r.end_ratio = (double)u.reserved / (double)r.peak_live;
    for (int i = 0; i < WL_LAYERS * 4; ++i) wl_free(d, &r, steps, params[i]);
    return r;
}

#endif
