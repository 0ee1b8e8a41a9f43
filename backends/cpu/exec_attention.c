/* libportable cpu backend — ATTENTION and ATTENTION_BACKWARD (backend.h
 * ATTENTION): softmax(q k^T scale + mask) v without the [Tq, Tk] scores.
 *
 * Forward: each task is one block of ATTN_ROWS query rows of one (b, h);
 * it walks the keys in blocks of ATTN_KEYS with the online softmax of
 * flash attention (a running maximum and sum per row, the output rows
 * rescaled when the maximum grows), so its memory is the block's scores
 * and output rows, whatever T is. It writes each row's log-sum-exp, from
 * which the backward pass recomputes every probability exactly.
 *
 * Backward (FlashAttention-2's order, without atomics, so results are the
 * same bits at any thread count): delta_i = do_i . o_i per row first; then
 * tasks over key blocks accumulate dk and dv (each task owns its key rows),
 * and tasks over query blocks accumulate dq (each owns its query rows).
 * Both recompute p_ij = exp(s_ij - lse_i) and dp_ij = do_i . v_j, so the
 * pass does about three times the forward's multiply-adds; nothing of
 * size Tq x Tk is ever stored.
 *
 * Causal rows skip the key blocks past their diagonal. Inner loops over D
 * are `omp simd` (vectorised by the compiler); tasks go to the plugin's
 * OpenMP team over (b, h, block). PORTABLE_CPU_ATTENTION=composed refuses
 * both kinds (=fused is the default), so tests can run the core's composed
 * path on the cpu too. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define ATTN_ROWS 32 /* query rows per forward task and per dq task */
#define ATTN_KEYS 64 /* keys per block: the scores of one block fit in L1 */

/* What every task reads: extents, element strides and bases. */
typedef struct attn_args {
    int64_t b, h, tq, tk, d, dv;
    int64_t sq[3], sk[3], sv[3], sm[4], so[3], sdo[3]; /* strides of dims 0..2 (3: the mask's last) */
    const char *q, *k, *v, *mask, *o, *dout;
    char *out, *lse, *gq, *gk, *gv; /* gq, gk, gv: the gradients of q, k, v */
    double scale;
    unsigned flags;
    void *delta; /* backward: do_i . o_i per row, [b * h * tq] */
} attn_args;

static void strides3(const pt_operand *x, int64_t s[3]) {
    for (int i = 0; i < 3; ++i) s[i] = x->shape[i] == 1 ? 0 : x->strides[i];
}

/* Task task's (b, h) and its block [lo, hi) of n rows cut in blocks of size. */
typedef struct attn_block {
    int64_t bh, bb, hh, lo, hi;
} attn_block;

static attn_block block_of(const attn_args *a, int64_t task, int64_t n, int64_t size) {
    const int64_t blocks = (n + size - 1) / size;
    attn_block k = {.bh = task / blocks, .lo = (task % blocks) * size};
    k.bb = k.bh / a->h;
    k.hh = k.bh % a->h;
    k.hi = k.lo + size < n ? k.lo + size : n;
    return k;
}

/* One kernel set per float type. T is the element type; the scores and the
 * running statistics are kept in T (f32 as flash attention keeps them). */
#define PT_CPU_ATTN_KERNELS(S, T, EXP, LOG)                                                          \
    /* Scores of row i of (bb, hh) against keys [j0, j1) into s[]; -inf where removed. */            \
    static void scores_##S(const attn_args *a, int64_t bb, int64_t hh, int64_t i, int64_t j0,        \
                           int64_t j1, const T *qi, T *s) {                                          \
        const T scale = (T)a->scale;                                                                 \
        const char *mrow = a->mask ? a->mask + (bb * a->sm[0] + hh * a->sm[1] + i * a->sm[2]) *      \
                                                   (int64_t)((a->flags & PT_ATTN_MASK_KEEP) ? 1 : sizeof(T)) \
                                   : NULL;                                                           \
        for (int64_t j = j0; j < j1; ++j) {                                                          \
            if ((a->flags & PT_ATTN_CAUSAL) && j > i) {                                              \
                s[j - j0] = (T)-INFINITY;                                                            \
                continue;                                                                            \
            }                                                                                        \
            const T *kj = (const T *)a->k + bb * a->sk[0] + hh * a->sk[1] + j * a->sk[2];            \
            T dot = 0;                                                                               \
            _Pragma("omp simd reduction(+ : dot)") for (int64_t c = 0; c < a->d; ++c) dot +=        \
                qi[c] * kj[c];                                                                       \
            T x = dot * scale;                                                                       \
            if (a->flags & PT_ATTN_MASK_KEEP) {                                                      \
                if (!((const uint8_t *)mrow)[j * a->sm[3]]) x = (T)-INFINITY;                        \
            } else if (a->flags & PT_ATTN_MASK_ADD) {                                                \
                x += ((const T *)mrow)[j * a->sm[3]];                                                \
            }                                                                                        \
            s[j - j0] = x;                                                                           \
        }                                                                                            \
    }                                                                                                \
                                                                                                     \
    /* The keys row i can see end here: causal rows stop after their diagonal. */                   \
    static int64_t key_end_##S(const attn_args *a, int64_t i) {                                      \
        return (a->flags & PT_ATTN_CAUSAL) && i + 1 < a->tk ? i + 1 : a->tk;                         \
    }                                                                                                \
                                                                                                     \
    static void forward_task_##S(const attn_args *a, int64_t task, T *buf) {                         \
        const attn_block blk = block_of(a, task, a->tq, ATTN_ROWS);                                  \
        const int64_t bh = blk.bh, bb = blk.bb, hh = blk.hh, r0 = blk.lo, r1 = blk.hi;               \
        T *s = buf, *acc = buf + ATTN_KEYS;                                                          \
        for (int64_t i = r0; i < r1; ++i) {                                                          \
            const T *qi = (const T *)a->q + bb * a->sq[0] + hh * a->sq[1] + i * a->sq[2];            \
            T m = (T)-INFINITY, l = 0;                                                               \
            memset(acc, 0, sizeof(T) * (size_t)a->dv);                                               \
            const int64_t end = key_end_##S(a, i);                                                   \
            for (int64_t j0 = 0; j0 < end; j0 += ATTN_KEYS) {                                        \
                const int64_t j1 = j0 + ATTN_KEYS < end ? j0 + ATTN_KEYS : end;                      \
                scores_##S(a, bb, hh, i, j0, j1, qi, s);                                             \
                T mb = m;                                                                            \
                for (int64_t j = 0; j < j1 - j0; ++j) mb = s[j] > mb ? s[j] : mb;                    \
                if (mb == (T)-INFINITY) continue; /* every key so far removed */                     \
                const T alpha = EXP(m - mb);                                                         \
                l *= alpha;                                                                          \
                _Pragma("omp simd") for (int64_t c = 0; c < a->dv; ++c) acc[c] *= alpha;             \
                for (int64_t j = 0; j < j1 - j0; ++j) {                                              \
                    const T p = EXP(s[j] - mb);                                                      \
                    if (p == 0) continue;                                                            \
                    l += p;                                                                          \
                    const T *vj = (const T *)a->v + bb * a->sv[0] + hh * a->sv[1] + (j0 + j) * a->sv[2]; \
                    _Pragma("omp simd") for (int64_t c = 0; c < a->dv; ++c) acc[c] += p * vj[c];     \
                }                                                                                    \
                m = mb;                                                                              \
            }                                                                                        \
            T *oi = (T *)a->out + (bh * a->tq + i) * a->dv;                                          \
            const T inv = l > 0 ? 1 / l : 0;                                                         \
            _Pragma("omp simd") for (int64_t c = 0; c < a->dv; ++c) oi[c] = acc[c] * inv;            \
            ((T *)a->lse)[bh * a->tq + i] = l > 0 ? m + LOG(l) : (T)-INFINITY;                       \
        }                                                                                            \
    }                                                                                                \
                                                                                                     \
    /* p_ij and ds_ij = p_ij (dp_ij - delta_i) for row i and keys [j0, j1) into p[], ds[]. */        \
    static void probs_##S(const attn_args *a, int64_t bb, int64_t hh, int64_t i, int64_t j0,         \
                          int64_t j1, T *p, T *ds) {                                                 \
        const int64_t bh = bb * a->h + hh;                                                           \
        const T *qi = (const T *)a->q + bb * a->sq[0] + hh * a->sq[1] + i * a->sq[2];                \
        const T *doi = (const T *)a->dout + bb * a->sdo[0] + hh * a->sdo[1] + i * a->sdo[2];         \
        const T lse = ((const T *)a->lse)[bh * a->tq + i], delta = ((const T *)a->delta)[bh * a->tq + i]; \
        scores_##S(a, bb, hh, i, j0, j1, qi, p);                                                     \
        for (int64_t j = j0; j < j1; ++j) {                                                          \
            const T e = lse == (T)-INFINITY ? 0 : EXP(p[j - j0] - lse);                              \
            p[j - j0] = e;                                                                           \
            if (e == 0) {                                                                            \
                ds[j - j0] = 0;                                                                      \
                continue;                                                                            \
            }                                                                                        \
            const T *vj = (const T *)a->v + bb * a->sv[0] + hh * a->sv[1] + j * a->sv[2];            \
            T dp = 0;                                                                                \
            _Pragma("omp simd reduction(+ : dp)") for (int64_t c = 0; c < a->dv; ++c) dp +=         \
                doi[c] * vj[c];                                                                      \
            ds[j - j0] = e * (dp - delta);                                                           \
        }                                                                                            \
    }                                                                                                \
                                                                                                     \
    static void delta_rows_##S(const attn_args *a, int64_t bh) {                                     \
        const int64_t bb = bh / a->h, hh = bh % a->h;                                                \
        for (int64_t i = 0; i < a->tq; ++i) {                                                        \
            const T *oi = (const T *)a->o + bb * a->so[0] + hh * a->so[1] + i * a->so[2];            \
            const T *doi = (const T *)a->dout + bb * a->sdo[0] + hh * a->sdo[1] + i * a->sdo[2];     \
            T sum = 0;                                                                               \
            _Pragma("omp simd reduction(+ : sum)") for (int64_t c = 0; c < a->dv; ++c) sum +=       \
                oi[c] * doi[c];                                                                      \
            ((T *)a->delta)[bh * a->tq + i] = sum;                                                   \
        }                                                                                            \
    }                                                                                                \
                                                                                                     \
    /* dk and dv of one block of keys: every query row that sees them. */                            \
    static void kv_task_##S(const attn_args *a, int64_t task, T *buf) {                              \
        const attn_block blk = block_of(a, task, a->tk, ATTN_KEYS);                                  \
        const int64_t bh = blk.bh, bb = blk.bb, hh = blk.hh, j0 = blk.lo, j1 = blk.hi;               \
        T *p = buf, *ds = buf + ATTN_KEYS;                                                           \
        T *dk = (T *)a->gk + (bh * a->tk + j0) * a->d, *dv = (T *)a->gv + (bh * a->tk + j0) * a->dv; \
        memset(dk, 0, sizeof(T) * (size_t)((j1 - j0) * a->d));                                      \
        memset(dv, 0, sizeof(T) * (size_t)((j1 - j0) * a->dv));                                      \
        const T scale = (T)a->scale;                                                                 \
        const int64_t i0 = (a->flags & PT_ATTN_CAUSAL) ? j0 : 0; /* rows before j0 see none */       \
        for (int64_t i = i0; i < a->tq; ++i) {                                                       \
            probs_##S(a, bb, hh, i, j0, j1, p, ds);                                                  \
            const T *qi = (const T *)a->q + bb * a->sq[0] + hh * a->sq[1] + i * a->sq[2];            \
            const T *doi = (const T *)a->dout + bb * a->sdo[0] + hh * a->sdo[1] + i * a->sdo[2];     \
            for (int64_t j = 0; j < j1 - j0; ++j) {                                                  \
                if (p[j] == 0) continue;                                                             \
                const T pj = p[j], dsj = ds[j] * scale;                                              \
                T *dvj = dv + j * a->dv, *dkj = dk + j * a->d;                                       \
                _Pragma("omp simd") for (int64_t c = 0; c < a->dv; ++c) dvj[c] += pj * doi[c];       \
                _Pragma("omp simd") for (int64_t c = 0; c < a->d; ++c) dkj[c] += dsj * qi[c];        \
            }                                                                                        \
        }                                                                                            \
    }                                                                                                \
                                                                                                     \
    /* dq of one block of query rows: every key they see. */                                         \
    static void q_task_##S(const attn_args *a, int64_t task, T *buf) {                               \
        const attn_block blk = block_of(a, task, a->tq, ATTN_ROWS);                                  \
        const int64_t bh = blk.bh, bb = blk.bb, hh = blk.hh, r0 = blk.lo, r1 = blk.hi;               \
        T *p = buf, *ds = buf + ATTN_KEYS;                                                           \
        const T scale = (T)a->scale;                                                                 \
        for (int64_t i = r0; i < r1; ++i) {                                                          \
            T *dqi = (T *)a->gq + (bh * a->tq + i) * a->d;                                           \
            memset(dqi, 0, sizeof(T) * (size_t)a->d);                                                \
            const int64_t end = key_end_##S(a, i);                                                   \
            for (int64_t j0 = 0; j0 < end; j0 += ATTN_KEYS) {                                        \
                const int64_t j1 = j0 + ATTN_KEYS < end ? j0 + ATTN_KEYS : end;                      \
                probs_##S(a, bb, hh, i, j0, j1, p, ds);                                              \
                for (int64_t j = 0; j < j1 - j0; ++j) {                                              \
                    if (ds[j] == 0) continue;                                                        \
                    const T dsj = ds[j] * scale;                                                     \
                    const T *kj = (const T *)a->k + bb * a->sk[0] + hh * a->sk[1] + (j0 + j) * a->sk[2]; \
                    _Pragma("omp simd") for (int64_t c = 0; c < a->d; ++c) dqi[c] += dsj * kj[c];    \
                }                                                                                    \
            }                                                                                        \
        }                                                                                            \
    }

PT_CPU_ATTN_KERNELS(f32, float, expf, logf)
PT_CPU_ATTN_KERNELS(f64, double, exp, log)

typedef enum attn_pass { PASS_FORWARD, PASS_DELTA, PASS_KV, PASS_Q } attn_pass;

static void run_task(const attn_args *a, pt_dtype t, attn_pass pass, int64_t task, void *buf) {
    if (t == PT_F32) {
        switch (pass) {
        case PASS_FORWARD: forward_task_f32(a, task, buf); break;
        case PASS_DELTA: delta_rows_f32(a, task); break;
        case PASS_KV: kv_task_f32(a, task, buf); break;
        case PASS_Q: q_task_f32(a, task, buf); break;
        }
    } else {
        switch (pass) {
        case PASS_FORWARD: forward_task_f64(a, task, buf); break;
        case PASS_DELTA: delta_rows_f64(a, task); break;
        case PASS_KV: kv_task_f64(a, task, buf); break;
        case PASS_Q: q_task_f64(a, task, buf); break;
        }
    }
}

/* Runs tasks [0, n) of a pass, each thread with its own scratch of
 * per_thread bytes; one thread below the grain (multiply-adds in all).
 * False when scratch could not be had. */
static bool run_pass(const attn_args *a, pt_dtype t, attn_pass pass, int64_t n, size_t per_thread, double work) {
    const int threads = pt_cpu_max_threads();
    const bool parallel = threads > 1 && n > 1 && work >= (double)PT_CPU_GRAIN_SOFTMAX;
    bool ok = true;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) if (parallel) reduction(&& : ok)
#endif
    {
        void *buf = per_thread ? malloc(per_thread) : NULL;
        if (per_thread && !buf) {
            ok = false;
        } else {
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
            for (int64_t task = 0; task < n; ++task) run_task(a, t, pass, task, buf);
        }
        free(buf);
    }
    (void)parallel;
    return ok;
}

static bool composed_forced;

static void read_switch(void) {
    static const char *const paths[] = {"fused", "composed", NULL};
    composed_forced = PT_HOST_HAS(pt_cpu_host, env_choice) &&
                      pt_cpu_host->env_choice("PORTABLE_CPU_ATTENTION", paths, 0) == 1;
}

static bool shape4(const pt_operand *x, int64_t b, int64_t h, int64_t t, int64_t d) {
    return x->ndim == 4 && x->shape[0] == b && x->shape[1] == h && x->shape[2] == t && x->shape[3] == d &&
           (x->shape[3] == 1 || x->strides[3] == 1);
}

pt_status pt_cpu_attention(const pt_op *op, bool run) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, read_switch);
    if (composed_forced)
        return pt_cpu_fail(PT_ERR_UNSUPPORTED, "%s: PORTABLE_CPU_ATTENTION=composed sends it to matmul and softmax",
                           pt_op_name(op->kind));
    const pt_dtype t = op->dtype;
    if (t != PT_F32 && t != PT_F64) return pt_cpu_unsupported(op, t);
    const bool backward = op->kind == PT_OP_ATTENTION_BACKWARD;
    if (op->n_inputs != 3 || op->n_extra < (backward ? PT_ATTN_X_GRAD_V + 1 : PT_ATTN_X_LSE + 1))
        return pt_cpu_bad_op(op, "attention takes q, k, v and its extra operands");
    const pt_operand *q = &op->in[0], *k = &op->in[1], *v = &op->in[2];
    if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4) return pt_cpu_bad_op(op, "q, k and v must be 4-D");
    attn_args a = {.b = q->shape[0], .h = q->shape[1], .tq = q->shape[2], .tk = k->shape[2], .d = q->shape[3],
                   .dv = v->shape[3], .scale = op->scalar, .flags = op->flags};
    const pt_operand *mask = &op->extra[PT_ATTN_X_MASK], *lse = &op->extra[PT_ATTN_X_LSE];
    bool ok = shape4(q, a.b, a.h, a.tq, a.d) && shape4(k, a.b, a.h, a.tk, a.d) && shape4(v, a.b, a.h, a.tk, a.dv) &&
              shape4(&op->out, a.b, a.h, a.tq, backward ? a.d : a.dv) && lse->ndim == 3;
    const bool masked = (a.flags & (PT_ATTN_MASK_KEEP | PT_ATTN_MASK_ADD)) != 0;
    if (masked) ok = ok && mask->ndim == 4 && mask->dtype == (a.flags & PT_ATTN_MASK_KEEP ? PT_U8 : t);
    if (backward)
        ok = ok && shape4(&op->extra[PT_ATTN_X_OUT], a.b, a.h, a.tq, a.dv) &&
             shape4(&op->extra[PT_ATTN_X_GRAD_OUT], a.b, a.h, a.tq, a.dv) &&
             shape4(&op->extra[PT_ATTN_X_GRAD_K], a.b, a.h, a.tk, a.d) &&
             shape4(&op->extra[PT_ATTN_X_GRAD_V], a.b, a.h, a.tk, a.dv);
    if (!ok) return pt_cpu_bad_op(op, "operands do not match backend.h's ATTENTION layout");
    if (!run) return PT_OK;

    strides3(q, a.sq);
    strides3(k, a.sk);
    strides3(v, a.sv);
    a.q = pt_cpu_base(q);
    a.k = pt_cpu_base(k);
    a.v = pt_cpu_base(v);
    a.lse = pt_cpu_base(lse);
    if (masked) {
        for (int i = 0; i < 4; ++i) a.sm[i] = mask->shape[i] == 1 ? 0 : mask->strides[i];
        a.mask = pt_cpu_base(mask);
    }
    const size_t el = t == PT_F32 ? sizeof(float) : sizeof(double);
    const int64_t bh = a.b * a.h, rows = (a.tq + ATTN_ROWS - 1) / ATTN_ROWS, keys = (a.tk + ATTN_KEYS - 1) / ATTN_KEYS;
    const double pairs = (double)bh * (double)a.tq * (double)a.tk * (double)(a.d + a.dv);
    if (!backward) {
        a.out = pt_cpu_base(&op->out);
        if (!run_pass(&a, t, PASS_FORWARD, bh * rows, el * (size_t)(ATTN_KEYS + a.dv), pairs))
            return pt_cpu_fail(PT_ERR_OUT_OF_MEMORY, "%s: out of host memory for scratch", pt_op_name(op->kind));
        return PT_OK;
    }
    strides3(&op->extra[PT_ATTN_X_OUT], a.so);
    strides3(&op->extra[PT_ATTN_X_GRAD_OUT], a.sdo);
    a.o = pt_cpu_base(&op->extra[PT_ATTN_X_OUT]);
    a.dout = pt_cpu_base(&op->extra[PT_ATTN_X_GRAD_OUT]);
    a.gq = pt_cpu_base(&op->out);
    a.gk = pt_cpu_base(&op->extra[PT_ATTN_X_GRAD_K]);
    a.gv = pt_cpu_base(&op->extra[PT_ATTN_X_GRAD_V]);
    a.delta = malloc(el * (size_t)(bh * a.tq));
    bool done = a.delta && run_pass(&a, t, PASS_DELTA, bh, 0, (double)bh * (double)a.tq * (double)a.dv) &&
                run_pass(&a, t, PASS_KV, bh * keys, el * 2 * ATTN_KEYS, 2 * pairs) &&
                run_pass(&a, t, PASS_Q, bh * rows, el * 2 * ATTN_KEYS, 2 * pairs);
    free(a.delta);
    return done ? PT_OK
                : pt_cpu_fail(PT_ERR_OUT_OF_MEMORY, "%s: out of host memory for scratch", pt_op_name(op->kind));
}
