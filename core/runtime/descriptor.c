/* Op descriptors in the form backend.h promises: element-wise operands with
 * their dimensions merged, so no backend merges dimensions itself. */
#include <pthread.h>
#include <string.h>

#include "runtime/runtime.h"

void pt__coalesce(pt_op *op) {
    const int nops = 1 + op->n_inputs;
    pt_operand *o[1 + PT_OP_MAX_INPUTS];
    o[0] = &op->out;
    for (int k = 1; k < nops; ++k) o[k] = &op->in[k - 1];
    const int nd = op->out.ndim;
    /* Writing dim n never overtakes reading dim d (n <= d), so in place. */
    int n = 0;
    for (int d = 0; d < nd; ++d) {
        int64_t len = op->out.shape[d];
        if (len == 1) continue;
        bool fuse = n > 0;
        for (int k = 0; fuse && k < nops; ++k)
            if (o[k]->strides[n - 1] != o[k]->strides[d] * len) fuse = false;
        if (fuse) {
            for (int k = 0; k < nops; ++k) {
                o[k]->shape[n - 1] *= len;
                o[k]->strides[n - 1] = o[k]->strides[d];
            }
        } else {
            for (int k = 0; k < nops; ++k) {
                o[k]->shape[n] = len;
                o[k]->strides[n] = o[k]->strides[d];
            }
            ++n;
        }
    }
    if (n == 0) { /* one element (a 0-D tensor or all extents 1) */
        for (int k = 0; k < nops; ++k) {
            o[k]->shape[0] = 1;
            o[k]->strides[0] = 1;
        }
        n = 1;
    }
    for (int k = 0; k < nops; ++k) o[k]->ndim = n;
}

/* One operand of ndim dims of extent 1, contiguous, at offset 0. */
static void probe_operand(pt_operand *o, pt_dtype t, int ndim) {
    memset(o, 0, sizeof *o);
    o->dtype = t;
    o->ndim = ndim;
    for (int i = 0; i < ndim; ++i) {
        o->shape[i] = 1;
        o->strides[i] = 1;
    }
}

/* The FUSED probes, one chain per dtype, made once (immutable after: the
 * probe ops of every thread point at them; thread-local copies would take
 * static TLS that a dlopen'd libportable may not get). */
static pt_fused_step probe_steps[PT_DTYPE_COUNT][2];
static pt_fused_chain probe_chains[PT_DTYPE_COUNT];
static pthread_once_t probe_chains_once = PTHREAD_ONCE_INIT;

static void make_probe_chains(void) {
    for (int t = 0; t < PT_DTYPE_COUNT; ++t) {
        for (int k = 0; k < 2; ++k) {
            pt_fused_step *s = &probe_steps[t][k];
            pt__probe_op(PT_OP_COPY, (pt_dtype)t, &s->op);
            s->src[0] = k - 1;
            s->src[1] = s->src[2] = -1;
            s->store = k == 1;
        }
        probe_chains[t] = (pt_fused_chain){.n_steps = 2, .steps = probe_steps[t], .numel = 1};
    }
}

void pt__probe_op(pt_op_kind kind, pt_dtype t, pt_op *op) {
    const pt_op_info *info = pt_op_info_of(kind);
    memset(op, 0, sizeof *op);
    op->kind = kind;
    op->dtype = t;
    op->n_inputs = info->arity;
    const pt_dtype out_t = pt_op_result_dtype(kind, t);
    switch (info->family) {
    case PT_OP_FAMILY_CREATION:
        probe_operand(&op->out, t, 1);
        break;
    case PT_OP_FAMILY_ELEMENTWISE:
        probe_operand(&op->out, out_t, 1);
        for (int i = 0; i < info->arity; ++i) probe_operand(&op->in[i], t, 1);
        if (kind == PT_OP_WHERE) op->in[0].dtype = PT_U8;
        break;
    case PT_OP_FAMILY_REDUCE:
        probe_operand(&op->in[0], t, 3);
        probe_operand(&op->out, out_t, 2);
        break;
    case PT_OP_FAMILY_SOFTMAX:
    case PT_OP_FAMILY_MATMUL:
        for (int i = 0; i < info->arity; ++i) probe_operand(&op->in[i], t, 3);
        probe_operand(&op->out, out_t, 3);
        break;
    case PT_OP_FAMILY_INDEX:
        if (kind == PT_OP_ONE_HOT) {
            probe_operand(&op->in[0], PT_I64, 1);
            probe_operand(&op->out, out_t, 2);
            op->count = 1;
        } else if (kind == PT_OP_EMBEDDING || kind == PT_OP_EMBEDDING_BACKWARD) {
            /* one row of one element, looked up (or summed) once */
            probe_operand(&op->in[0], t, 2);
            probe_operand(&op->in[1], PT_I64, 1);
            probe_operand(&op->out, out_t, 2);
            if (kind == PT_OP_EMBEDDING_BACKWARD) {
                op->n_extra = 1;
                probe_operand(&op->extra[PT_EMB_X_SCRATCH], PT_I64, 2);
                op->extra[PT_EMB_X_SCRATCH].shape[0] = 2;
            }
        } else {
            probe_operand(&op->in[0], t, 3);
            probe_operand(&op->in[1], PT_I64, 3);
            probe_operand(&op->out, out_t, 3);
        }
        break;
    case PT_OP_FAMILY_WINDOW: /* a 1x1 window over a 1x1 image */
        if (kind == PT_OP_IM2COL || kind == PT_OP_COL2IM) {
            probe_operand(&op->in[0], t, kind == PT_OP_IM2COL ? 4 : 6);
            probe_operand(&op->out, out_t, kind == PT_OP_IM2COL ? 6 : 4);
        } else { /* the max pools: images and windows are all 4-D */
            probe_operand(&op->in[0], t, 4);
            if (kind == PT_OP_MAX_UNPOOL2D) probe_operand(&op->in[1], PT_I64, 4);
            probe_operand(&op->out, out_t, 4);
            op->kernel[0] = op->kernel[1] = 1;
        }
        op->window[0] = op->window[1] = op->window[4] = op->window[5] = 1;
        break;
    case PT_OP_FAMILY_CONV: /* a 1x1 kernel over a 1x1 image of one channel */
        probe_operand(&op->in[0], t, 4);
        probe_operand(&op->in[1], t, 4);
        probe_operand(&op->out, out_t, 4);
        op->window[0] = op->window[1] = op->window[4] = op->window[5] = 1;
        op->count = 1;
        break;
    case PT_OP_FAMILY_NORM: /* the statistics of one value of one channel */
        probe_operand(&op->in[0], t, 3);
        probe_operand(&op->out, out_t, 2);
        op->out.shape[0] = 2;
        break;
    case PT_OP_FAMILY_FUSED: { /* two copies of one element, the second reading the first */
        pthread_once(&probe_chains_once, make_probe_chains);
        op->fused = &probe_chains[t];
        op->out = probe_steps[t][1].op.out;
        break;
    }
    case PT_OP_FAMILY_ATTENTION: /* one query, one key, one feature, no mask */
        for (int i = 0; i < info->arity; ++i) probe_operand(&op->in[i], t, 4);
        probe_operand(&op->out, out_t, 4);
        op->n_extra = PT_OP_MAX_EXTRA;
        probe_operand(&op->extra[PT_ATTN_X_LSE], t, 3);
        if (kind == PT_OP_ATTENTION_BACKWARD)
            for (int i = PT_ATTN_X_OUT; i <= PT_ATTN_X_GRAD_V; ++i) probe_operand(&op->extra[i], t, 4);
        op->scalar = 1.0;
        break;
    }
}
