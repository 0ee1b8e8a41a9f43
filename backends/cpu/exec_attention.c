/* libportable cpu backend — ATTENTION and ATTENTION_BACKWARD (backend.h
 * ATTENTION): softmax(q k^T scale + mask) v without the [Tq, Tk] scores.
 *
 * Every step is a matrix product of blocks (exec_matmul_gemm.c: OpenBLAS,
 * or oneDNN's sgemm where the plugin chose it), ATTN_ROWS query rows by
 * ATTN_KEYS keys, so the multiply-adds run in BLAS's register-blocked
 * kernels and only the softmax's element-wise work is ours (its exp
 * vectorised by vecmath.h).
 *
 * Forward: each task is one block of query rows of one (b, h); it walks
 * the key blocks with the online softmax of flash attention: S = Q K^T
 * scale (+ mask), a running maximum and sum per row, the output block
 * rescaled when a maximum grows, then O += P V. Its memory is one block of
 * scores and one of output rows, whatever T is. It writes each row's
 * log-sum-exp, from which the backward pass recomputes every probability
 * exactly.
 *
 * Backward (FlashAttention-2's order): delta_i = do_i . o_i per row first;
 * then each task takes a fixed set of key blocks of one (b, h) and, for
 * each, walks the query blocks that see it: P = exp(S - lse),
 * dV += P^T dO, dP = dO V^T, dS = P (dP - delta) scale, dK += dS^T Q and
 * dQ += dS K. Each task owns its key rows of dk and dv. dq rows are shared
 * by every task of the head, so without atomics: a head with one task
 * adds into dq directly; otherwise each task adds into its own copy of the
 * head's dq, and a last pass sums the copies in task order. How many tasks
 * a head gets depends on the shape only (ATTN_TASKS), so the results are
 * the same bits at any thread count. Nothing of size Tq x Tk is stored; the
 * copies are at most about ATTN_TASKS times dq.
 *
 * Causal rows skip the key blocks past their diagonal, and key blocks the
 * query blocks before theirs. PORTABLE_CPU_ATTENTION=composed refuses both
 * kinds (=fused is the default), so tests can run the core's composed path
 * on the cpu too. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "vecmath.h"

/* Blocks: a block of scores (16 KiB in f32) with its operand blocks stays
 * in L2. Blocks of 32 to 128 rows and keys ran within 5% of each other at
 * T = 1024 on a Zen core (bench/bench_attention.sh, one thread); causal
 * attention computes the diagonal blocks whole, so larger ones waste more
 * at short T (128 was 10% slower at T = 256). */
#define ATTN_ROWS 64 /* query rows per block */
#define ATTN_KEYS 64 /* keys per block */
/* Backward: a head has ceil(ATTN_TASKS / heads) tasks (at most one per key
 * block), enough to share out across a few cores when heads are few. */
#define ATTN_TASKS 16

/* What every task reads: extents, element strides and bases. */
typedef struct attn_args {
    int64_t b, h, tq, tk, d, dv;
    int64_t sq[3], sk[3], sv[3], sm[4], so[3], sdo[3]; /* strides of dims 0..2 (3: the mask's last) */
    const char *q, *k, *v, *mask, *o, *dout;
    char *out, *lse, *gq, *gk, *gv; /* gq, gk, gv: the gradients of q, k, v */
    double scale;
    unsigned flags;
    void *delta;         /* backward: do_i . o_i per row, [b * h * tq] */
    void *dq_copies;     /* backward with chunks > 1: [chunks, b * h, tq, d] */
    int64_t chunks;      /* backward tasks per head */
} attn_args;

static void strides3(const pt_operand *x, int64_t s[3]) {
    for (int i = 0; i < 3; ++i) s[i] = x->shape[i] == 1 ? 0 : x->strides[i];
}

static int64_t min64(int64_t x, int64_t y) { return x < y ? x : y; }

/* What a task of head bh needs first, whichever pass it is in: its (b, h)
 * and the element offsets of that head in each strided operand. */
typedef struct attn_head {
    int64_t bh, bb, hh, q, k, v, dout, mask;
} attn_head;

static attn_head head_of(const attn_args *a, int64_t bh) {
    attn_head h = {.bh = bh, .bb = bh / a->h, .hh = bh % a->h};
    h.q = h.bb * a->sq[0] + h.hh * a->sq[1];
    h.k = h.bb * a->sk[0] + h.hh * a->sk[1];
    h.v = h.bb * a->sv[0] + h.hh * a->sv[1];
    h.dout = h.bb * a->sdo[0] + h.hh * a->sdo[1];
    h.mask = h.bb * a->sm[0] + h.hh * a->sm[1];
    return h;
}

/* One kernel set per float type; GEMM is pt_cpu_gemm_<S>, VEXP the
 * vectorised exp over an array. Scores and running statistics are kept in
 * T (f32, as flash attention keeps them). */
#define PT_CPU_ATTN_KERNELS(S, T, VEXP, LOG)                                                         \
    /* Rows [r0, r1) of n elements, row stride rs, as BLAS reads them: in place when rows are at   \
     * least n apart (*ld = rs), else copied into pack (*ld = n). */                                 \
    static const T *rows_##S(const T *base, int64_t rs, int64_t r0, int64_t r1, int64_t n, T *pack,   \
                             int64_t *ld) {                                                          \
        const T *p = base + r0 * rs;                                                                 \
        if (r1 - r0 == 1 || (rs >= n && rs > 0)) {                                                   \
            *ld = r1 - r0 == 1 ? (n > 0 ? n : 1) : rs;                                               \
            return p;                                                                                \
        }                                                                                            \
        for (int64_t r = r0; r < r1; ++r) memcpy(pack + (r - r0) * n, base + r * rs, sizeof(T) * (size_t)n); \
        *ld = n;                                                                                     \
        return pack;                                                                                 \
    }                                                                                                \
                                                                                                     \
    /* s[r][c] (row stride ATTN_KEYS) = q_i . k_j scale (+ mask) for i = i0 + r in [i0, i1) and     \
     * j = j0 + c in [j0, j1); -inf where the causal flag or the mask removes (i, j). */             \
    static void scores_##S(const attn_args *a, const attn_head *h, const T *qb, int64_t ldq,         \
                           const T *kb, int64_t ldk, int64_t i0, int64_t i1, int64_t j0, int64_t j1, \
                           T *s) {                                                                   \
        pt_cpu_gemm_##S(false, true, i1 - i0, j1 - j0, a->d, (T)a->scale, qb, ldq, kb, ldk, 0, s,    \
                        ATTN_KEYS);                                                                  \
        const bool keep = (a->flags & PT_ATTN_MASK_KEEP) != 0, add = (a->flags & PT_ATTN_MASK_ADD) != 0; \
        for (int64_t i = i0; i < i1; ++i) {                                                          \
            T *row = s + (i - i0) * ATTN_KEYS;                                                       \
            const int64_t m = h->mask + i * a->sm[2];                                                \
            if (keep) {                                                                              \
                const uint8_t *mk = (const uint8_t *)a->mask + m;                                    \
                for (int64_t j = j0; j < j1; ++j)                                                    \
                    if (!mk[j * a->sm[3]]) row[j - j0] = (T)-INFINITY;                               \
            } else if (add) {                                                                        \
                const T *mk = (const T *)a->mask + m;                                                \
                for (int64_t j = j0; j < j1; ++j) row[j - j0] += mk[j * a->sm[3]];                   \
            }                                                                                        \
            if (a->flags & PT_ATTN_CAUSAL)                                                           \
                for (int64_t j = i + 1 > j0 ? i + 1 : j0; j < j1; ++j) row[j - j0] = (T)-INFINITY;   \
        }                                                                                            \
    }                                                                                                \
                                                                                                     \
    /* Query rows [r0, r1) of one head; buf: scores, output block, max and sum per row, packs. */   \
    static void forward_task_##S(const attn_args *a, int64_t task, T *buf) {                         \
        const int64_t blocks = (a->tq + ATTN_ROWS - 1) / ATTN_ROWS;                                  \
        const attn_head h = head_of(a, task / blocks);                                               \
        const int64_t r0 = (task % blocks) * ATTN_ROWS, r1 = min64(r0 + ATTN_ROWS, a->tq), nr = r1 - r0; \
        T *s = buf, *acc = s + ATTN_ROWS * ATTN_KEYS, *m = acc + ATTN_ROWS * a->dv, *l = m + ATTN_ROWS; \
        T *qpack = l + ATTN_ROWS, *kpack = qpack + ATTN_ROWS * a->d, *vpack = kpack + ATTN_KEYS * a->d; \
        int64_t ldq, ldk, ldv;                                                                       \
        const T *qb = rows_##S((const T *)a->q + h.q, a->sq[2], r0, r1, a->d, qpack, &ldq);         \
        memset(acc, 0, sizeof(T) * (size_t)(nr * a->dv));                                            \
        for (int64_t r = 0; r < nr; ++r) m[r] = (T)-INFINITY, l[r] = 0;                              \
        /* Causal: the block's last row sees keys up to itself. */                                   \
        const int64_t end = (a->flags & PT_ATTN_CAUSAL) ? min64(r1, a->tk) : a->tk;                  \
        for (int64_t j0 = 0; j0 < end; j0 += ATTN_KEYS) {                                            \
            const int64_t j1 = min64(j0 + ATTN_KEYS, end), nk = j1 - j0;                             \
            const T *kb = rows_##S((const T *)a->k + h.k, a->sk[2], j0, j1, a->d, kpack, &ldk);      \
            const T *vb = rows_##S((const T *)a->v + h.v, a->sv[2], j0, j1, a->dv, vpack, &ldv);     \
            scores_##S(a, &h, qb, ldq, kb, ldk, r0, r1, j0, j1, s);                                  \
            for (int64_t r = 0; r < nr; ++r) {                                                       \
                T *row = s + r * ATTN_KEYS, mb = m[r];                                               \
                for (int64_t c = 0; c < nk; ++c) mb = row[c] > mb ? row[c] : mb;                     \
                if (mb == (T)-INFINITY) { /* every key so far removed: nothing to add */             \
                    memset(row, 0, sizeof(T) * (size_t)nk);                                          \
                    continue;                                                                        \
                }                                                                                    \
                _Pragma("omp simd") for (int64_t c = 0; c < nk; ++c) row[c] -= mb;                   \
                VEXP(nk, row, row);                                                                  \
                T sum = 0;                                                                           \
                _Pragma("omp simd reduction(+ : sum)") for (int64_t c = 0; c < nk; ++c) sum += row[c]; \
                if (mb > m[r]) { /* a larger maximum: rescale what the row has so far */             \
                    const T alpha = (T)exp((double)(m[r] - mb));                                     \
                    l[r] *= alpha;                                                                   \
                    T *ar = acc + r * a->dv;                                                         \
                    _Pragma("omp simd") for (int64_t c = 0; c < a->dv; ++c) ar[c] *= alpha;          \
                    m[r] = mb;                                                                       \
                }                                                                                    \
                l[r] += sum;                                                                         \
            }                                                                                        \
            pt_cpu_gemm_##S(false, false, nr, a->dv, nk, 1, s, ATTN_KEYS, vb, ldv, 1, acc, a->dv);   \
        }                                                                                            \
        for (int64_t r = 0; r < nr; ++r) {                                                           \
            const int64_t i = h.bh * a->tq + r0 + r;                                                 \
            T *oi = (T *)a->out + i * a->dv, *ar = acc + r * a->dv;                                  \
            const T inv = l[r] > 0 ? 1 / l[r] : 0;                                                   \
            _Pragma("omp simd") for (int64_t c = 0; c < a->dv; ++c) oi[c] = ar[c] * inv;             \
            ((T *)a->lse)[i] = l[r] > 0 ? m[r] + LOG(l[r]) : (T)-INFINITY;                           \
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
    /* Scores of query rows [i0, i1) against one key block turned into dS in place, p beside it:   \
     * p = exp(s - lse_i), ds = p (dp - delta_i) scale with dp = do_i . v_j. */                      \
    static void grad_scores_##S(const attn_args *a, const attn_head *h, int64_t i0, int64_t i1,     \
                                int64_t nk, const T *dob, int64_t lddo, const T *vb, int64_t ldv,    \
                                T *p, T *ds) {                                                       \
        const T *lse = (const T *)a->lse + h->bh * a->tq, *delta = (const T *)a->delta + h->bh * a->tq; \
        for (int64_t i = i0; i < i1; ++i) {                                                          \
            T *row = p + (i - i0) * ATTN_KEYS;                                                       \
            if (lse[i] == (T)-INFINITY) { /* a row with no key: no probability, no gradient */       \
                memset(row, 0, sizeof(T) * (size_t)nk);                                              \
                continue;                                                                            \
            }                                                                                        \
            _Pragma("omp simd") for (int64_t c = 0; c < nk; ++c) row[c] -= lse[i];                   \
            VEXP(nk, row, row);                                                                      \
        }                                                                                            \
        pt_cpu_gemm_##S(false, true, i1 - i0, nk, a->dv, 1, dob, lddo, vb, ldv, 0, ds, ATTN_KEYS);   \
        const T scale = (T)a->scale;                                                                 \
        for (int64_t i = i0; i < i1; ++i) {                                                          \
            const T *pr = p + (i - i0) * ATTN_KEYS, di = delta[i];                                   \
            T *dr = ds + (i - i0) * ATTN_KEYS;                                                       \
            _Pragma("omp simd") for (int64_t c = 0; c < nk; ++c) dr[c] = pr[c] * (dr[c] - di) * scale; \
        }                                                                                            \
    }                                                                                                \
                                                                                                     \
    /* Key blocks chunk, chunk + chunks, ... of one head: their dk and dv rows, and their part of   \
     * the head's dq (into dq itself, or into the chunk's copy). */                                  \
    static void kv_task_##S(const attn_args *a, int64_t task, T *buf) {                              \
        const attn_head h = head_of(a, task / a->chunks);                                            \
        const int64_t chunk = task % a->chunks, keys = (a->tk + ATTN_KEYS - 1) / ATTN_KEYS;          \
        T *p = buf, *ds = p + ATTN_ROWS * ATTN_KEYS, *qpack = ds + ATTN_ROWS * ATTN_KEYS;            \
        T *dopack = qpack + ATTN_ROWS * a->d, *kpack = dopack + ATTN_ROWS * a->dv, *vpack = kpack + ATTN_KEYS * a->d; \
        const int64_t heads = a->b * a->h, dq_rows = a->chunks == 1 ? h.bh : chunk * heads + h.bh;   \
        T *dq = (T *)(a->chunks == 1 ? (void *)a->gq : a->dq_copies) + dq_rows * a->tq * a->d;      \
        memset(dq, 0, sizeof(T) * (size_t)(a->tq * a->d));                                           \
        for (int64_t kb_i = chunk; kb_i < keys; kb_i += a->chunks) {                                 \
            const int64_t j0 = kb_i * ATTN_KEYS, j1 = min64(j0 + ATTN_KEYS, a->tk), nk = j1 - j0;    \
            T *dk = (T *)a->gk + (h.bh * a->tk + j0) * a->d, *dv = (T *)a->gv + (h.bh * a->tk + j0) * a->dv; \
            memset(dk, 0, sizeof(T) * (size_t)(nk * a->d));                                          \
            memset(dv, 0, sizeof(T) * (size_t)(nk * a->dv));                                         \
            int64_t ldk, ldv, ldq, lddo;                                                             \
            const T *kb = rows_##S((const T *)a->k + h.k, a->sk[2], j0, j1, a->d, kpack, &ldk);      \
            const T *vb = rows_##S((const T *)a->v + h.v, a->sv[2], j0, j1, a->dv, vpack, &ldv);     \
            /* Causal: rows before j0 see none of these keys. */                                     \
            const int64_t first = (a->flags & PT_ATTN_CAUSAL) ? j0 / ATTN_ROWS * ATTN_ROWS : 0;      \
            for (int64_t i0 = first; i0 < a->tq; i0 += ATTN_ROWS) {                                  \
                const int64_t i1 = min64(i0 + ATTN_ROWS, a->tq), nr = i1 - i0;                       \
                const T *qb = rows_##S((const T *)a->q + h.q, a->sq[2], i0, i1, a->d, qpack, &ldq);  \
                const T *dob = rows_##S((const T *)a->dout + h.dout, a->sdo[2], i0, i1, a->dv, dopack, &lddo); \
                scores_##S(a, &h, qb, ldq, kb, ldk, i0, i1, j0, j1, p);                              \
                grad_scores_##S(a, &h, i0, i1, nk, dob, lddo, vb, ldv, p, ds);                       \
                pt_cpu_gemm_##S(true, false, nk, a->dv, nr, 1, p, ATTN_KEYS, dob, lddo, 1, dv, a->dv); \
                pt_cpu_gemm_##S(true, false, nk, a->d, nr, 1, ds, ATTN_KEYS, qb, ldq, 1, dk, a->d);  \
                pt_cpu_gemm_##S(false, false, nr, a->d, nk, 1, ds, ATTN_KEYS, kb, ldk, 1, dq + i0 * a->d, a->d); \
            }                                                                                        \
        }                                                                                            \
    }                                                                                                \
                                                                                                     \
    /* dq rows [r0, r1) of one head: the chunks' copies summed in chunk order. */                    \
    static void dq_sum_task_##S(const attn_args *a, int64_t task) {                                  \
        const int64_t blocks = (a->tq + ATTN_ROWS - 1) / ATTN_ROWS, heads = a->b * a->h;             \
        const int64_t bh = task / blocks, r0 = (task % blocks) * ATTN_ROWS;                          \
        const int64_t n = (min64(r0 + ATTN_ROWS, a->tq) - r0) * a->d, at = (bh * a->tq + r0) * a->d; \
        T *dq = (T *)a->gq + at;                                                                     \
        const T *copy = (const T *)a->dq_copies + at;                                                \
        memcpy(dq, copy, sizeof(T) * (size_t)n);                                                     \
        for (int64_t c = 1; c < a->chunks; ++c) {                                                    \
            const T *cc = copy + c * heads * a->tq * a->d;                                           \
            _Pragma("omp simd") for (int64_t e = 0; e < n; ++e) dq[e] += cc[e];                      \
        }                                                                                            \
    }

static void vexp_f32(int64_t n, float *o, const float *x) { pt_cpu_vm.f32[PT_CPU_VM_EXP](n, o, x); }
static void vexp_f64(int64_t n, double *o, const double *x) { pt_cpu_vm.f64[PT_CPU_VM_EXP](n, o, x); }

PT_CPU_ATTN_KERNELS(f32, float, vexp_f32, logf)
PT_CPU_ATTN_KERNELS(f64, double, vexp_f64, log)

typedef enum attn_pass { PASS_FORWARD, PASS_DELTA, PASS_KV, PASS_DQ_SUM } attn_pass;

static void run_task(const attn_args *a, pt_dtype t, attn_pass pass, int64_t task, void *buf) {
    if (t == PT_F32) {
        switch (pass) {
        case PASS_FORWARD: forward_task_f32(a, task, buf); break;
        case PASS_DELTA: delta_rows_f32(a, task); break;
        case PASS_KV: kv_task_f32(a, task, buf); break;
        case PASS_DQ_SUM: dq_sum_task_f32(a, task); break;
        }
    } else {
        switch (pass) {
        case PASS_FORWARD: forward_task_f64(a, task, buf); break;
        case PASS_DELTA: delta_rows_f64(a, task); break;
        case PASS_KV: kv_task_f64(a, task, buf); break;
        case PASS_DQ_SUM: dq_sum_task_f64(a, task); break;
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
    /* Each thread's operand packs (used only for rows BLAS cannot read in place). */
    const size_t packs = (size_t)(ATTN_ROWS * (a.d + a.dv) + ATTN_KEYS * (a.d + a.dv));
    if (!backward) {
        a.out = pt_cpu_base(&op->out);
        const size_t scratch = (size_t)(ATTN_ROWS * ATTN_KEYS + ATTN_ROWS * a.dv + 2 * ATTN_ROWS) + packs;
        if (!run_pass(&a, t, PASS_FORWARD, bh * rows, el * scratch, pairs))
            return pt_cpu_fail(PT_ERR_OUT_OF_MEMORY, "%s: out of host memory for %zu bytes of scratch a thread",
                               pt_op_name(op->kind), el * scratch);
        return PT_OK;
    }
    strides3(&op->extra[PT_ATTN_X_OUT], a.so);
    strides3(&op->extra[PT_ATTN_X_GRAD_OUT], a.sdo);
    a.o = pt_cpu_base(&op->extra[PT_ATTN_X_OUT]);
    a.dout = pt_cpu_base(&op->extra[PT_ATTN_X_GRAD_OUT]);
    a.gq = pt_cpu_base(&op->out);
    a.gk = pt_cpu_base(&op->extra[PT_ATTN_X_GRAD_K]);
    a.gv = pt_cpu_base(&op->extra[PT_ATTN_X_GRAD_V]);
    a.chunks = bh >= ATTN_TASKS ? 1 : min64((ATTN_TASKS + bh - 1) / bh, keys);
    if (a.chunks < 1) a.chunks = 1;
    const size_t copies = a.chunks > 1 ? el * (size_t)(a.chunks * bh * a.tq * a.d) : 0;
    a.delta = malloc(el * (size_t)(bh * a.tq) + 1);
    a.dq_copies = copies ? malloc(copies) : NULL;
    const size_t scratch = el * ((size_t)(2 * ATTN_ROWS * ATTN_KEYS) + packs);
    bool done = a.delta && (!copies || a.dq_copies) &&
                run_pass(&a, t, PASS_DELTA, bh, 0, (double)bh * (double)a.tq * (double)a.dv) &&
                run_pass(&a, t, PASS_KV, bh * a.chunks, scratch, 2.5 * pairs);
    if (done && copies)
        done = run_pass(&a, t, PASS_DQ_SUM, bh * rows, 0, (double)(a.chunks * bh * a.tq * a.d));
    free(a.delta);
    free(a.dq_copies);
    return done ? PT_OK
                : pt_cpu_fail(PT_ERR_OUT_OF_MEMORY,
                              "%s: out of host memory for the backward pass's scratch (%zu bytes of dq copies, "
                              "%zu a thread)",
                              pt_op_name(op->kind), copies, scratch);
}
