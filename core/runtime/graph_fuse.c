/* Fusion: a graph's runs of element-wise ops become FUSED ops, one kernel
 * each, where the backend accepts them (backend.h, the FUSED family;
 * docs/graphs.md, "Fusion").
 *
 * A chain is a run of consecutive recorded ops (the capture's order is
 * kept, so every value is computed as the eager run computed it) that:
 * - are ELEMENTWISE (AXPY included: its output is its first input, the
 *   same elements, which a step may write in place) and not patched per
 *   replay (an optimizer's step-dependent scalar lives in its own op);
 * - write a contiguous out of one element count;
 * - read an earlier step's out only exactly (same buffer, offset, dtype,
 *   contiguous), which becomes a src link, never partly or through another
 *   view;
 * - write nothing an earlier step reads from memory, except in place.
 * A step's value is stored unless it is an intermediate (made and released
 * during the capture) that no op after the chain reads. A SUM, MEAN or MAX
 * reading the chain's last value exactly joins the chain as its reduction
 * when the backend takes that too. */
#include <stdlib.h>
#include <string.h>

#include "runtime/graph_internal.h"

static bool is_contiguous(const pt_operand *o) {
    int64_t expect = 1;
    for (int i = o->ndim - 1; i >= 0; --i) {
        if (o->shape[i] != 1 && o->strides[i] != expect) return false;
        expect *= o->shape[i];
    }
    return true;
}

static int64_t numel_of(const pt_operand *o) {
    int64_t n = 1;
    for (int i = 0; i < o->ndim; ++i) n *= o->shape[i];
    return n;
}

/* The bytes an operand's elements span: [*lo, *hi). */
static void span_of(const pt_operand *o, size_t *lo, size_t *hi) {
    int64_t last = 0;
    for (int i = 0; i < o->ndim; ++i) last += (o->shape[i] - 1) * o->strides[i];
    *lo = o->offset;
    *hi = o->offset + (size_t)(last + 1) * pt_dtype_size(o->dtype);
}

static bool overlap(const pt_operand *a, const pt_operand *b) {
    if (a->buf != b->buf) return false;
    size_t alo, ahi, blo, bhi;
    span_of(a, &alo, &ahi);
    span_of(b, &blo, &bhi);
    return alo < bhi && blo < ahi;
}

/* The same elements in the same order: a value read back exactly. */
static bool same_place(const pt_operand *a, const pt_operand *b) {
    return a->buf == b->buf && a->offset == b->offset && a->dtype == b->dtype &&
           numel_of(a) == numel_of(b) && is_contiguous(a) && is_contiguous(b);
}

static bool fusable(const pt_op *op, bool patched) {
    const pt_op_info *info = pt_op_info_of(op->kind);
    return info && info->family == PT_OP_FAMILY_ELEMENTWISE && !patched && is_contiguous(&op->out);
}

/* Whether op can join the chain steps[0..n-1] of numel elements; fills
 * src[] with its links to earlier steps. */
static bool joins(const pt_fused_step *steps, int32_t n, int64_t numel, const pt_op *op, int32_t *src) {
    if (numel_of(&op->out) != numel) return false;
    for (int j = 0; j < PT_OP_MAX_INPUTS; ++j) src[j] = -1;
    for (int j = 0; j < op->n_inputs; ++j) {
        const pt_operand *in = &op->in[j];
        for (int32_t k = n - 1; k >= 0; --k) { /* the latest writer of those bytes */
            if (!overlap(in, &steps[k].op.out)) continue;
            if (!same_place(in, &steps[k].op.out)) return false;
            src[j] = k;
            break;
        }
    }
    /* Its out may not change what an earlier step reads from memory. */
    for (int32_t k = 0; k < n; ++k)
        for (int j = 0; j < steps[k].op.n_inputs; ++j)
            if (steps[k].src[j] < 0 && overlap(&op->out, &steps[k].op.in[j]) &&
                !same_place(&op->out, &steps[k].op.in[j]))
                return false;
    /* Nor partly overwrite an earlier step's value. */
    for (int32_t k = 0; k < n; ++k)
        if (overlap(&op->out, &steps[k].op.out) && !same_place(&op->out, &steps[k].op.out))
            return false;
    return true;
}

/* A reduction reading the chain's last value exactly. A backend writes its
 * outputs while the chain still runs (the cpu one output row at a time), so
 * its out may not lie over anything a step reads or writes: the memory plan
 * lets it reuse what only the eager ops before it read. */
static bool reduces_last(const pt_op *op, const pt_fused_step *steps, int32_t n) {
    if ((op->kind != PT_OP_SUM && op->kind != PT_OP_MEAN && op->kind != PT_OP_MAX) ||
        !same_place(&op->in[0], &steps[n - 1].op.out))
        return false;
    for (int32_t k = 0; k < n; ++k) {
        if (overlap(&op->out, &steps[k].op.out)) return false;
        for (int j = 0; j < steps[k].op.n_inputs; ++j)
            if (steps[k].src[j] < 0 && overlap(&op->out, &steps[k].op.in[j])) return false;
    }
    return true;
}

/* Whether the value the node's out lies in lives on after op index end
 * (an output, or a tensor made before the capture, or read later). */
static bool read_after(const pt__capture *c, int32_t node, int32_t end) {
    const int32_t v = c->nodes[node].value[0];
    if (v < 0) return true;
    const pt__gvalue *x = &c->values[v];
    return !x->freed || x->last > end;
}

/* Offers the backend steps[0..len-1] (ops i.. of in) as one FUSED op in
 * *op, with the reduction that follows them where one does, else without;
 * true when it takes one (fused->chains[fused->n_chains] then describes it). */
static bool offer_chain(const pt__capture *c, pt_device *d, const pt_op *in, int32_t n, int32_t i, int32_t len,
                        pt_fused_step *steps, pt__gfused *fused, pt_op *op) {
    const int32_t end = i + len - 1;
    const bool reduce = end + 1 < n && reduces_last(&in[end + 1], steps, len);
    pt_fused_chain *chain = &fused->chains[fused->n_chains];
    /* one step alone is offered only with its reduction: fused, it saves the
     * reduction's kernel; without, there is nothing to fuse */
    for (int with_reduce = reduce; with_reduce >= (len < 2 ? 1 : 0); --with_reduce) {
        const int32_t last_use = end + with_reduce;
        for (int32_t k = 0; k < len; ++k) steps[k].store = read_after(c, i + k, last_use);
        if (!with_reduce) steps[len - 1].store = true; /* the chain's result */
        *chain = (pt_fused_chain){.n_steps = len, .steps = steps, .numel = numel_of(&steps[0].op.out)};
        memset(op, 0, sizeof *op);
        op->kind = PT_OP_FUSED;
        op->dtype = steps[len - 1].op.dtype;
        op->fused = chain;
        if (with_reduce) {
            fused->reduces[fused->n_chains] = in[end + 1];
            chain->reduce = &fused->reduces[fused->n_chains];
            op->out = in[end + 1].out;
        } else {
            for (int32_t k = len - 1; k >= 0; --k)
                if (steps[k].store) {
                    op->out = steps[k].op.out;
                    break;
                }
        }
        pt__note_reached(op);
        if (pt__supports_call("pt_graph_capture_end", d, op) == PT_OK) return true;
        (void)pt__take_backend_message();
    }
    return false;
}

bool pt__graph_fusion_on(void) {
    static const char *const choices[] = {"on", "off", NULL};
    return pt_env_choice("PORTABLE_GRAPH_FUSION", choices, 0) != 1;
}

pt_status pt__graph_fuse(pt__capture *c, pt_device *d, pt_op **ops, int32_t *n_ops, const bool *patched,
                         int32_t *new_index, pt__gfused *fused) {
    const int32_t n = *n_ops;
    for (int32_t i = 0; i < n; ++i) new_index[i] = i;
    if (n < 2 || !pt__graph_fusion_on()) return PT_OK;
    pt_op *in = *ops;
    pt_op *out = malloc((size_t)n * sizeof *out);
    /* at most n / 2 chains, each taking two ops or more (two steps, or one and its reduction) */
    fused->steps = malloc((size_t)n * sizeof *fused->steps);
    fused->chains = malloc(((size_t)n / 2 + 1) * sizeof *fused->chains);
    fused->reduces = malloc(((size_t)n / 2 + 1) * sizeof *fused->reduces);
    if (!out || !fused->steps || !fused->chains || !fused->reduces) {
        free(out);
        return pt__error(PT_ERR_OUT_OF_MEMORY, "pt_graph_capture_end", "out of host memory for fusion");
    }
    int32_t m = 0, used = 0;
    for (int32_t i = 0; i < n;) {
        if (!fusable(&in[i], patched[i])) {
            new_index[i] = m;
            out[m++] = in[i++];
            continue;
        }
        pt_fused_step *steps = &fused->steps[used];
        const int64_t numel = numel_of(&in[i].out);
        int32_t len = 0;
        for (int32_t j = i; j < n && fusable(&in[j], patched[j]); ++j) {
            int32_t src[PT_OP_MAX_INPUTS];
            if (!joins(steps, len, numel, &in[j], src)) break;
            steps[len] = (pt_fused_step){.op = in[j]};
            memcpy(steps[len].src, src, sizeof src);
            ++len;
        }
        if (len < 2 && !(len == 1 && offer_chain(c, d, in, n, i, 1, steps, fused, &out[m]))) {
            new_index[i] = m;
            out[m++] = in[i++];
            continue;
        }
        if (len < 2) { /* one step and its reduction, taken */
            new_index[i] = new_index[i + 1] = m++;
            ++fused->n_chains;
            used += 1;
            i += 2;
            continue;
        }
        /* A chain the backend refuses whole (longer than it fuses, say):
         * the longest first part it takes, found by bisection, becomes one
         * kernel, and what follows is looked at afresh. */
        bool taken = offer_chain(c, d, in, n, i, len, steps, fused, &out[m]);
        if (!taken) {
            int32_t lo = 1, hi = len; /* lo: taken (or 1), hi: refused */
            while (hi - lo > 1) {
                const int32_t mid = lo + (hi - lo) / 2;
                if (offer_chain(c, d, in, n, i, mid, steps, fused, &out[m])) lo = mid;
                else hi = mid;
            }
            len = lo;
            taken = len >= 2 && offer_chain(c, d, in, n, i, len, steps, fused, &out[m]);
        }
        if (taken) {
            const int32_t last_use = i + len - 1 + (fused->chains[fused->n_chains].reduce != NULL);
            for (int32_t k = 0; k <= last_use - i; ++k) new_index[i + k] = m;
            ++m;
            ++fused->n_chains;
            used += len;
            i = last_use + 1;
        } else {
            new_index[i] = m;
            out[m++] = in[i++];
        }
    }
    /* The chains point into fused->steps, which is never moved again. */
    free(in);
    *ops = out;
    *n_ops = m;
    return PT_OK;
}

void pt__graph_fused_free(pt__gfused *fused) {
    free(fused->steps);
    free(fused->chains);
    free(fused->reduces);
    *fused = (pt__gfused){0};
}
