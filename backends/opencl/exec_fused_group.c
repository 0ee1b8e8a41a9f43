/* libportable OpenCL backend — which consecutive FUSED ops of a recorded
 * graph run as one group kernel (launch_fused_group.c writes it), and its
 * launch.
 *
 * The chains of a group run at once, so each must leave the others'
 * memory alone: none may write bytes another reads from memory or writes.
 * Chains that pass are consecutive in the graph's order, so running them
 * together changes no value any of them reads. Chains with a reduction
 * stay alone (their kernel is reduce.cl's).
 *
 * On CPU devices a group's items are bounds-checked, as a chain's
 * fused_tail is, where a lone chain's whole groups run fused_whole without
 * the test: a little slower an element (below), which a launch's
 * hand-over outweighs only for small chains, so only chains up to
 * OCL_GROUP_CPU_MAX_ELEMENTS join there. GPUs group any size. */
#include <string.h>

#include "internal.h"

/* Elements a chain may have to join a group on a CPU device. Measured on
 * PoCL 3.1 (2-core Xeon, AVX-512): mlp_digits' SGD step, chains of 16,384,
 * 256, 2,560 and 10 floats, took 5.3 us as one group, against 3.6, 1.6,
 * 3.3 and 0.5 us as four kernels (0.28 against 0.22 ns an element for the
 * largest), each after a hand-over of 4 to 5 us. */
#define OCL_GROUP_CPU_MAX_ELEMENTS 65536

/* The bytes an operand's elements span, in its buffer. */
typedef struct ocl_span {
    const void *buf;
    size_t lo, hi;
} ocl_span;

static ocl_span ocl_span_of(const pt_operand *x) {
    size_t last = 0;
    for (int i = 0; i < x->ndim; ++i) last += (size_t)(x->shape[i] - 1) * (size_t)x->strides[i];
    return (ocl_span){x->buf, x->offset, x->offset + (last + 1) * pt_dtype_table_size(x->dtype)};
}

static bool ocl_spans_meet(ocl_span a, ocl_span b) { return a.buf == b.buf && a.lo < b.hi && b.lo < a.hi; }

/* Whether chain c reads (from memory) or writes anything in span w; reads
 * count only with reads set. */
static bool ocl_chain_touches(const pt_fused_chain *c, ocl_span w, bool reads) {
    for (int32_t k = 0; k < c->n_steps; ++k) {
        const pt_fused_step *st = &c->steps[k];
        if (st->store && ocl_spans_meet(ocl_span_of(&st->op.out), w)) return true;
        for (int j = 0; reads && j < st->op.n_inputs; ++j)
            if (st->src[j] < 0 && ocl_spans_meet(ocl_span_of(&st->op.in[j]), w)) return true;
    }
    return false;
}

/* Whether chains a and b may run at once: neither writes what the other
 * reads or writes. */
static bool ocl_chains_apart(const pt_fused_chain *a, const pt_fused_chain *b) {
    for (int32_t k = 0; k < a->n_steps; ++k)
        if (a->steps[k].store && ocl_chain_touches(b, ocl_span_of(&a->steps[k].op.out), true)) return false;
    for (int32_t k = 0; k < b->n_steps; ++k)
        if (b->steps[k].store && ocl_chain_touches(a, ocl_span_of(&b->steps[k].op.out), true)) return false;
    return true;
}

static bool ocl_joins_groups(const ocl_device *d, const pt_op *op) {
    const pt_fused_chain *c = op->fused;
    if (op->kind != PT_OP_FUSED || !c || c->reduce || c->numel < 1 || c->n_steps < 1) return false;
    return !d->cpu_forms || c->numel <= OCL_GROUP_CPU_MAX_ELEMENTS;
}

int ocl_fused_group_len(ocl_device *d, const pt_op *ops, int n) {
    if (n < 2 || !ocl_joins_groups(d, &ops[0])) return 1;
    const pt_fused_chain *parts[OCL_FUSED_MAX_PARTS] = {ops[0].fused};
    int len = 1;
    while (len < n && len < OCL_FUSED_MAX_PARTS && ocl_joins_groups(d, &ops[len])) {
        const pt_fused_chain *c = ops[len].fused;
        bool apart = true;
        for (int k = 0; k < len && apart; ++k) apart = ocl_chains_apart(parts[k], c);
        if (!apart) break;
        parts[len] = c;
        char why[512];
        if (ocl_fused_group_generate(d, parts, len + 1, NULL, NULL, NULL, NULL, why, sizeof why) != PT_OK) break;
        ++len;
    }
    return len;
}

pt_status ocl_fused_group(ocl_device *d, const pt_op *ops, int n) {
    const pt_fused_chain *parts[OCL_FUSED_MAX_PARTS];
    if (n < 2 || n > OCL_FUSED_MAX_PARTS)
        return ocl_fail(PT_ERR_INTERNAL, "a group of %d chains (2 to %d)", n, OCL_FUSED_MAX_PARTS);
    for (int k = 0; k < n; ++k) parts[k] = ops[k].fused;
    ocl_fused_kernel *fk = NULL;
    pt_status s = ocl_fused_kernels_of(d, parts, n, &fk);
    if (s != PT_OK) return s;
    ocl_fused_value vals[OCL_REC_MAX_ARGS];
    ocl_arg args[OCL_REC_MAX_ARGS];
    for (int i = 0; s == PT_OK && i < fk->n_args; ++i)
        s = ocl_fused_arg_value(&fk->args[i], parts, &vals[i], &args[i]);
    if (s != PT_OK) return s;
    /* whole work-groups for each chain, in order (the kernel's deal) */
    const size_t local = fk->wg < 256 ? fk->wg : 256;
    size_t global = 0;
    for (int k = 0; k < n; ++k) global += ((size_t)parts[k]->numel + local - 1) / local * local;
    if ((s = ocl_set_args(d, fk->group, "fused_group", fk->n_args, args)) != PT_OK) return s;
    return ocl_enqueue_at(d, fk->group, "fused_group", 0, global, local);
}
