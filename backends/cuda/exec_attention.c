/* libportable CUDA backend — the ATTENTION family: ATTENTION and
 * ATTENTION_BACKWARD (backend.h) as tiled kernels (kernels_attention.cu)
 * on the op's stream, so a graph's capture records them like any kernel.
 *
 * Refused (the core then composes attention from products, softmax and
 * reductions): 16-bit dtypes (the core computes them in f32 and sends
 * that), heads wider than PTCU_ATTENTION_MAX_D, and everything while
 * PORTABLE_CUDA_ATTENTION=composed (=fused is the default), which lets
 * benchmarks and tests compare the two paths on one device. */
#include <pthread.h>
#include <string.h>

#include "internal.h"

/* PORTABLE_CUDA_ATTENTION: 0 fused (the default), 1 composed; read once. */
static int path;

static void read_path(void) {
    static const char *const names[] = {"fused", "composed", NULL};
    if (PT_HOST_HAS(ptcu_host, env_choice)) path = ptcu_host->env_choice("PORTABLE_CUDA_ATTENTION", names, 0);
}

static void strides3(const pt_operand *x, int64_t s[3]) {
    for (int i = 0; i < 3; ++i) s[i] = x->shape[i] == 1 ? 0 : x->strides[i];
}

/* An operand the layout wants: [b, h, t, last] with the last stride 1. */
typedef struct want4 {
    const pt_operand *x;
    int64_t t, last;
} want4;

static bool all_fit(const want4 *w, int n, int64_t b, int64_t h) {
    for (int i = 0; i < n; ++i) {
        const pt_operand *x = w[i].x;
        const int64_t want[4] = {b, h, w[i].t, w[i].last};
        if (x->ndim != 4 || memcmp(x->shape, want, sizeof want) != 0) return false;
        if (x->shape[3] > 1 && x->strides[3] != 1) return false;
    }
    return true;
}

pt_status ptcu_attention_supports(const pt_op *op) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, read_path);
    if (path == 1)
        return ptcu_fail(PT_ERR_UNSUPPORTED, "%s: PORTABLE_CUDA_ATTENTION=composed sends it to matmul and softmax",
                         pt_op_name(op->kind));
    if (op->dtype != PT_F32 && op->dtype != PT_F64) return ptcu_unsupported(op);
    const bool backward = op->kind == PT_OP_ATTENTION_BACKWARD;
    if (op->n_inputs != 3 || op->n_extra < (backward ? PT_ATTN_X_GRAD_V + 1 : PT_ATTN_X_LSE + 1))
        return ptcu_fail(PT_ERR_INVALID_ARGUMENT, "%s: the descriptor lacks q, k, v or its extra operands",
                         pt_op_name(op->kind));
    const pt_operand *q = &op->in[0], *k = &op->in[1], *v = &op->in[2];
    if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4)
        return ptcu_fail(PT_ERR_INVALID_ARGUMENT, "%s: q, k and v have %d, %d and %d dims; backend.h's layout is 4-D",
                         pt_op_name(op->kind), q->ndim, k->ndim, v->ndim);
    const int64_t d = q->shape[3], dv = v->shape[3];
    if (d > PTCU_ATTENTION_MAX_D || dv > PTCU_ATTENTION_MAX_D)
        return ptcu_fail(PT_ERR_UNSUPPORTED,
                         "%s: heads of D = %lld and Dv = %lld are wider than the kernels' %d; the core composes them",
                         pt_op_name(op->kind), (long long)d, (long long)dv, PTCU_ATTENTION_MAX_D);
    return PT_OK;
}

/* The operands against backend.h's layout, into l; false when they differ. */
static bool read_operands(const pt_op *op, ptcu_attention_launch *l) {
    const pt_operand *q = &op->in[0], *k = &op->in[1], *v = &op->in[2];
    const pt_operand *mask = &op->extra[PT_ATTN_X_MASK], *lse = &op->extra[PT_ATTN_X_LSE];
    if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4) return false;
    l->backward = op->kind == PT_OP_ATTENTION_BACKWARD;
    l->dtype = op->dtype;
    l->b = q->shape[0];
    l->h = q->shape[1];
    l->tq = q->shape[2];
    l->tk = k->shape[2];
    l->d = q->shape[3];
    l->dv = v->shape[3];
    l->flags = op->flags;
    l->scale = op->scalar;
    const want4 w[] = {{q, l->tq, l->d},
                       {k, l->tk, l->d},
                       {v, l->tk, l->dv},
                       {&op->out, l->tq, l->backward ? l->d : l->dv},
                       {&op->extra[PT_ATTN_X_OUT], l->tq, l->dv},
                       {&op->extra[PT_ATTN_X_GRAD_OUT], l->tq, l->dv},
                       {&op->extra[PT_ATTN_X_GRAD_K], l->tk, l->d},
                       {&op->extra[PT_ATTN_X_GRAD_V], l->tk, l->dv}};
    bool ok = all_fit(w, l->backward ? 8 : 4, l->b, l->h) && lse->ndim == 3 && lse->buf;
    const bool masked = (l->flags & (PT_ATTN_MASK_KEEP | PT_ATTN_MASK_ADD)) != 0;
    if (masked)
        ok = ok && mask->buf && mask->ndim == 4 && mask->dtype == (l->flags & PT_ATTN_MASK_KEEP ? PT_U8 : l->dtype);
    if (!ok) return false;
    l->q = ptcu_operand_ptr(q);
    l->k = ptcu_operand_ptr(k);
    l->v = ptcu_operand_ptr(v);
    strides3(q, l->sq);
    strides3(k, l->sk);
    strides3(v, l->sv);
    if (masked) {
        l->mask = ptcu_operand_ptr(mask);
        for (int i = 0; i < 4; ++i) l->sm[i] = mask->shape[i] == 1 ? 0 : mask->strides[i];
    }
    l->out = ptcu_operand_ptr(&op->out);
    l->lse = ptcu_operand_ptr(lse);
    if (l->backward) {
        l->o = ptcu_operand_ptr(&op->extra[PT_ATTN_X_OUT]);
        l->dout = ptcu_operand_ptr(&op->extra[PT_ATTN_X_GRAD_OUT]);
        strides3(&op->extra[PT_ATTN_X_OUT], l->so);
        strides3(&op->extra[PT_ATTN_X_GRAD_OUT], l->sdo);
        l->dk = ptcu_operand_ptr(&op->extra[PT_ATTN_X_GRAD_K]);
        l->dv_out = ptcu_operand_ptr(&op->extra[PT_ATTN_X_GRAD_V]);
    }
    return true;
}

pt_status ptcu_attention(ptcu_device *d, const pt_op *op) {
    ptcu_attention_launch l;
    memset(&l, 0, sizeof l);
    if (!read_operands(op, &l))
        return ptcu_fail(PT_ERR_INVALID_ARGUMENT, "%s: operands do not match backend.h's ATTENTION layout",
                         pt_op_name(op->kind));
    l.shared_default = d->shared_per_block;
    l.shared_limit = d->shared_optin;
    l.sm_count = d->sm_count;
    if (!l.backward) return ptcu_launch_error(ptcu_launch_attention(&l, ptcu_stream(d)), op);
    /* delta (do . o per row) lives for the three kernels only; in a
     * capture it is the graph's (memory.c's held lists) */
    void *block = NULL;
    const size_t el = l.dtype == PT_F64 ? sizeof(double) : sizeof(float);
    pt_status s = ptcu_temp_alloc(d, el * (size_t)(l.b * l.h * l.tq), &l.delta, &block);
    if (s != PT_OK) return s;
    s = ptcu_launch_error(ptcu_launch_attention(&l, ptcu_stream(d)), op);
    ptcu_temp_free(d, l.delta, block);
    return s;
}
