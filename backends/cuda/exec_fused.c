/* libportable CUDA backend — FUSED ops (fused.h): a chain's parameters,
 * its compiled kernel (by the plan of exec_fused_plan.c) and the launch. A
 * chain this plugin cannot generate is refused with the reason, and the
 * core replays its ops one by one. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fused.h"

_Static_assert(sizeof(ptcu_fused_params) <= 4096, "kernel parameters are at most 4 KiB");

static void params_of(const pt_fused_chain *c, const ptcu_fused_plan *plan, ptcu_fused_params *p) {
    memset(p, 0, sizeof *p);
    p->numel = c->numel;
    for (int k = 0; k < c->n_steps; ++k) {
        const pt_op *sop = &c->steps[k].op;
        p->scalar[k][0] = sop->scalar;
        p->scalar[k][1] = sop->scalar2;
        if (plan->store_of[k] >= 0) p->store[plan->store_of[k]] = ptcu_operand_ptr(&sop->out);
    }
    for (int n = 0; n < plan->n_loads; ++n) {
        const ptcu_fused_load *l = &plan->load[n];
        const pt_op *sop = &c->steps[l->step].op;
        p->load[n] = ptcu_operand_ptr(&sop->in[l->input]);
        if (l->kind != PTCU_LOAD_STRIDED) continue;
        ptcu_fused_strided *g = &p->strided[l->slot];
        for (int d = 0; d < sop->out.ndim; ++d) {
            g->shape[d] = sop->out.shape[d];
            g->strides[d] = sop->in[l->input].strides[d];
        }
    }
}

pt_status ptcu_fused_supports(const pt_op *op) {
    ptcu_fused_plan plan;
    return ptcu_fused_plan_of(op, &plan);
}

static void key_of(const pt_fused_chain *c, const ptcu_fused_plan *plan, ptcu_fused_key *key) {
    memset(key, 0, sizeof *key);
    key->plan = *plan;
    key->n_steps = c->n_steps;
    key->reduce = c->reduce ? (int32_t)c->reduce->kind : -1;
    key->reduce_out = c->reduce ? (int8_t)c->reduce->out.dtype : -1;
    for (int k = 0; k < c->n_steps; ++k) {
        const pt_op *sop = &c->steps[k].op;
        key->step[k].kind = (int32_t)sop->kind;
        key->step[k].dtype = (int8_t)sop->dtype;
        key->step[k].out = (int8_t)sop->out.dtype;
        for (int j = 0; j < sop->n_inputs && j < PT_OP_MAX_INPUTS; ++j) {
            key->step[k].in[j] = (int8_t)sop->in[j].dtype;
            key->step[k].src[j] = (int8_t)c->steps[k].src[j];
        }
    }
}

/* The plan and the kernel of op on d (d selected). */
static pt_status kernel_of(ptcu_device *d, const pt_op *op, ptcu_fused_plan *plan, cudaKernel_t *k) {
    pt_status s = ptcu_fused_plan_of(op, plan);
    if (s != PT_OK) return s;
    ptcu_fused_key key;
    key_of(op->fused, plan, &key);
    return ptcu_fused_kernel(d, &key, op->fused, k);
}

pt_status ptcu_fused_prepare(int dev, const pt_op *op) {
    ptcu_fused_plan plan;
    pt_status s = ptcu_fused_plan_of(op, &plan);
    if (s != PT_OK) return s;
    const ptcu_caller_device caller = ptcu_caller_now();
    cudaKernel_t k;
    ptcu_device *d = ptcu_dev(dev);
    s = ptcu_select(d, "fused");
    if (s == PT_OK) s = kernel_of(d, op, &plan, &k);
    ptcu_caller_restore(caller);
    return s;
}

/* Launches kernel k over `lanes` threads' work on d's stream (grid-stride:
 * enough blocks to fill every multiprocessor a few times over). */
static pt_status launch(ptcu_device *d, cudaKernel_t k, ptcu_fused_params *p, int64_t lanes, const pt_op *op) {
    int64_t blocks = (lanes + PTCU_FUSED_THREADS - 1) / PTCU_FUSED_THREADS;
    const int64_t cap = (int64_t)(d->sm_count > 0 ? d->sm_count : 1) * 8;
    if (blocks > cap) blocks = cap;
    void *args[] = {p};
    const dim3 grid = {(unsigned)blocks, 1, 1}, block = {PTCU_FUSED_THREADS, 1, 1};
    cudaError_t e = cudaLaunchKernel((const void *)k, grid, block, args, 0, ptcu_stream(d));
    if (e != cudaSuccess)
        return ptcu_cuda_error(e, "fused: launching a generated kernel of %d steps", (int)op->fused->n_steps);
    return PT_OK;
}

/* How many lanes share each output of a reduction over [outer, r, inner]:
 * one while the outputs alone fill the GPU (or r is short), else enough
 * to fill it, each lane folding 16 elements or more. */
static int64_t parts_of(const ptcu_device *d, int64_t outer, int64_t r, int64_t inner) {
    const int64_t outputs = outer * inner, full = (int64_t)(d->sm_count > 0 ? d->sm_count : 1) * 2048;
    if (outputs >= full || r < 32) return 1;
    int64_t parts = (full + outputs - 1) / outputs;
    if (parts > r / 16) parts = r / 16;
    return parts > 1 ? parts : 1;
}

/* A chain ending in a reduction: the generated kernel folds the chain's
 * values into lanes; with several lanes per output, their accumulators go
 * to device scratch and the eager reduction (kernels_reduce.cu) finishes
 * them, scratch of its own after theirs where it splits them again. */
static pt_status fused_reduce(ptcu_device *d, cudaKernel_t k, ptcu_fused_params *p, const pt_op *op) {
    const pt_op *red = op->fused->reduce;
    ptcu_fused_reduction *rd = &p->reduce;
    rd->outer = red->in[0].shape[0];
    rd->r = red->in[0].shape[1];
    rd->inner = red->in[0].shape[2];
    rd->count = rd->r;
    rd->parts = parts_of(d, rd->outer, rd->r, rd->inner);
    rd->out = ptcu_operand_ptr(&red->out);
    const int64_t lanes = rd->outer * rd->parts * rd->inner;
    if (lanes <= 0) return PT_OK;
    if (rd->parts == 1) return launch(d, k, p, lanes, op);
    ptcu_reduce_launch l;
    memset(&l, 0, sizeof l);
    l.kind = red->kind;
    l.in_dtype = red->in[0].dtype;
    l.out_dtype = red->out.dtype;
    l.out = rd->out;
    l.x = (ptcu_axis_view){rd->outer, rd->parts, rd->inner, rd->parts * rd->inner, rd->inner, 1};
    l.sm_count = d->sm_count;
    l.partials = true;
    l.count = rd->count;
    const size_t mine = ((size_t)lanes * ptcu_reduce_acc_bytes(red->kind, l.in_dtype) + 255) / 256 * 256;
    const size_t theirs = ptcu_reduce_scratch_bytes(&l);
    void *scratch = NULL;
    pthread_mutex_lock(&d->lock);
    pt_status s = ptcu_scratch(d, mine + theirs, &scratch);
    if (s == PT_OK) {
        rd->out = scratch;
        l.in = scratch;
        l.scratch = theirs ? (char *)scratch + mine : NULL;
        s = launch(d, k, p, lanes, op);
    }
    if (s == PT_OK) s = ptcu_launch_error(ptcu_launch_reduce(&l, ptcu_stream(d)), red);
    pthread_mutex_unlock(&d->lock);
    return s;
}

pt_status ptcu_fused(ptcu_device *d, const pt_op *op) {
    ptcu_fused_plan plan;
    cudaKernel_t k;
    pt_status s = kernel_of(d, op, &plan, &k);
    if (s != PT_OK) return s;
    ptcu_fused_params p;
    params_of(op->fused, &plan, &p);
    if (op->fused->reduce) return fused_reduce(d, k, &p, op);
    if (p.numel <= 0) return PT_OK;
    return launch(d, k, &p, p.numel, op);
}
