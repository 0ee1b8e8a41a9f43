/* libportable cpu backend — EMBEDDING and EMBEDDING_BACKWARD (backend.h
 * INDEX): copying the indexed rows of a table, and the deterministic
 * scatter-add that is its weight gradient.
 *
 * The backward pass sorts the positions by index with a counting sort
 * (stable, so each row's positions stay in ascending order), then splits
 * the table's rows over the team: each row is written by one thread, as
 * 0 + g[first] + g[next] + ... in position order. No atomics, the same bits
 * whatever the team size, and O(V + N D) work: at a GPT's vocabulary
 * (V = 50257, D = 768) the cost is writing the [V, D] result. 16-bit
 * tables are refused for the backward pass (the core sums them in f32 and
 * rounds once); the forward pass moves bits in every float dtype.
 * PORTABLE_CPU_EMBEDDING=composed refuses both kinds and =lookup the
 * backward one, so the cpu runs the core's fallbacks of devices without
 * them (the gather composition, the one-hot product). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int64_t index_at(const pt_operand *ix, int64_t n) {
    const char *b = pt_cpu_base(ix);
    return ix->dtype == PT_I64 ? ((const int64_t *)b)[n * ix->strides[0]]
                               : (int64_t)((const int32_t *)b)[n * ix->strides[0]];
}

static pt_status check(const pt_op *op, bool backward) {
    const pt_dtype t = op->dtype;
    const pt_operand *src = &op->in[0], *ix = &op->in[1], *out = &op->out;
    if (op->n_inputs != 2 || src->ndim != 2 || ix->ndim != 1 || out->ndim != 2)
        return pt_cpu_bad_op(op, "expected a [rows, D] table or gradient, [N] indices and a 2-D output");
    if (ix->dtype != PT_I32 && ix->dtype != PT_I64)
        return pt_cpu_fail(PT_ERR_UNSUPPORTED, "%s not implemented for index dtype %s", pt_op_name(op->kind),
                           pt_dtype_table_name(ix->dtype));
    if (!pt_dtype_is_float(t) || (backward && pt_dtype_is_half(t))) return pt_cpu_unsupported(op, t);
    if (src->dtype != t || out->dtype != t) return pt_cpu_bad_op(op, "value dtype differs");
    const int64_t n = ix->shape[0];
    const bool fits = backward ? src->shape[0] == n && src->shape[1] == out->shape[1]
                               : out->shape[0] == n && src->shape[1] == out->shape[1];
    if (!fits) return pt_cpu_bad_op(op, "operand shapes do not match");
    return PT_OK;
}

/* ---- EMBEDDING: out[n] = weight[index[n]] ---- */

static void rows_piece(void *ctx, int64_t r0, int64_t r1) {
    const pt_op *op = ctx;
    const pt_operand *w = &op->in[0], *ix = &op->in[1];
    const int64_t rows = w->shape[0], d = w->shape[1], ws0 = w->strides[0], ws1 = w->strides[1];
    const size_t es = pt_dtype_table_size(op->dtype);
    const char *wb = pt_cpu_base(w);
    char *ob = pt_cpu_base(&op->out);
    for (int64_t r = r0; r < r1; ++r) {
        const int64_t k = index_at(ix, r);
        char *dst = ob + (size_t)(r * d) * es;
        if (k < 0 || k >= rows) {
            memset(dst, 0, (size_t)d * es); /* zero bits are 0 in every float dtype */
        } else if (ws1 == 1) {
            memcpy(dst, wb + (size_t)(k * ws0) * es, (size_t)d * es);
        } else {
            for (int64_t j = 0; j < d; ++j) memcpy(dst + (size_t)j * es, wb + (size_t)(k * ws0 + j * ws1) * es, es);
        }
    }
}

/* ---- EMBEDDING_BACKWARD: out[v] = sum of g[n] with index[n] == v ---- */

typedef struct sum_job {
    const pt_op *op;
    const int64_t *start; /* [V + 1]: row v's positions are order[start[v] .. start[v + 1]) */
    const int64_t *order; /* positions sorted by index, ascending within each index */
} sum_job;

#define PT_CPU_EMB_SUM(NAME, T)                                                                     \
    static void NAME(const sum_job *j, int64_t v0, int64_t v1) {                                    \
        const pt_operand *g = &j->op->in[0];                                                        \
        const int64_t d = g->shape[1], gs0 = g->strides[0], gs1 = g->strides[1];                    \
        const T *gb = (const T *)pt_cpu_base(g);                                                    \
        T *ob = (T *)pt_cpu_base(&j->op->out);                                                      \
        for (int64_t v = v0; v < v1; ++v) {                                                         \
            T *row = ob + v * d;                                                                    \
            for (int64_t x = 0; x < d; ++x) row[x] = 0;                                             \
            for (int64_t p = j->start[v]; p < j->start[v + 1]; ++p) {                               \
                const T *gr = gb + j->order[p] * gs0;                                               \
                if (gs1 == 1)                                                                       \
                    for (int64_t x = 0; x < d; ++x) row[x] += gr[x];                                \
                else                                                                                \
                    for (int64_t x = 0; x < d; ++x) row[x] += gr[x * gs1];                          \
            }                                                                                       \
        }                                                                                           \
    }

PT_CPU_EMB_SUM(sum_rows_f32, float)
PT_CPU_EMB_SUM(sum_rows_f64, double)

static void sum_piece(void *ctx, int64_t v0, int64_t v1) {
    const sum_job *j = ctx;
    if (j->op->dtype == PT_F64) sum_rows_f64(j, v0, v1);
    else sum_rows_f32(j, v0, v1);
}

static pt_status backward(const pt_op *op) {
    const pt_operand *ix = &op->in[1];
    const int64_t n = ix->shape[0], rows = op->out.shape[0];
    int64_t *start = calloc((size_t)rows + 2, sizeof(int64_t));
    int64_t *order = malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (!start || !order) {
        free(start);
        free(order);
        return pt_cpu_fail(PT_ERR_OUT_OF_MEMORY, "embedding_backward: no host memory for the sort of %lld indices "
                           "over %lld rows (%lld bytes)", (long long)n, (long long)rows,
                           (long long)((rows + 2 + n) * (int64_t)sizeof(int64_t)));
    }
    /* Counting sort: start[v + 2] counts v, prefix sums make start[v + 1]
     * where v's positions begin, and placing them in ascending n moves it
     * to where they end, which is start[v + 1] as the rows read it. An
     * index outside [0, rows) takes no place: it adds nothing. */
    for (int64_t p = 0; p < n; ++p) {
        const int64_t k = index_at(ix, p);
        if (k >= 0 && k < rows) ++start[k + 2];
    }
    for (int64_t v = 2; v < rows + 2; ++v) start[v] += start[v - 1];
    for (int64_t p = 0; p < n; ++p) {
        const int64_t k = index_at(ix, p);
        if (k >= 0 && k < rows) order[start[k + 1]++] = p;
    }
    const sum_job job = {op, start, order};
    pt_cpu_rows_over_team(rows, op->out.shape[1], sum_piece, (void *)&job);
    free(start);
    free(order);
    return PT_OK;
}

static int path_forced; /* 0 both kinds, 1 none, 2 the lookup only */

static void read_switch(void) {
    static const char *const paths[] = {"kernels", "composed", "lookup", NULL};
    path_forced = PT_HOST_HAS(pt_cpu_host, env_choice) ? pt_cpu_host->env_choice("PORTABLE_CPU_EMBEDDING", paths, 0)
                                                       : 0;
}

pt_status pt_cpu_embedding(const pt_op *op, bool run) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, read_switch);
    const bool bwd = op->kind == PT_OP_EMBEDDING_BACKWARD;
    if (path_forced == 1 || (path_forced == 2 && bwd))
        return pt_cpu_fail(PT_ERR_UNSUPPORTED, "%s: PORTABLE_CPU_EMBEDDING=%s sends it to the core's composition",
                           pt_op_name(op->kind), path_forced == 1 ? "composed" : "lookup");
    pt_status s = check(op, bwd);
    if (s || !run) return s;
    if (bwd) return backward(op);
    pt_cpu_rows_over_team(op->out.shape[0], op->out.shape[1], rows_piece, (void *)op);
    return PT_OK;
}
