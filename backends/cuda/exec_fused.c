/* libportable CUDA backend — FUSED ops (fused.h): what a chain needs to
 * run as one generated kernel, the plan the source and the parameters share,
 * and the launch. A chain this plugin cannot generate is refused with the
 * reason, and the core replays its ops one by one. */
#include <stdlib.h>
#include <string.h>

#include "fused.h"
#include "portable/ew_math.h"

_Static_assert(PTCU_FUSED_MAX_DIMS == PT_MAX_DIMS, "fused_abi.h's dims are PT_MAX_DIMS");
_Static_assert(sizeof(ptcu_fused_params) <= 4096, "kernel parameters are at most 4 KiB");

/* How step op reads its input in (its shape is op's out's): one element
 * when every dim it spans has stride 0, contiguous when the strides are
 * out's own. */
static ptcu_fused_load_kind load_kind(const pt_op *op, const pt_operand *in) {
    bool one = true, contiguous = true;
    int64_t expect = 1;
    for (int d = op->out.ndim - 1; d >= 0; --d) {
        if (op->out.shape[d] == 1) continue;
        if (in->strides[d] != 0) one = false;
        if (in->strides[d] != expect) contiguous = false;
        expect *= op->out.shape[d];
    }
    return one ? PTCU_LOAD_ONE : contiguous ? PTCU_LOAD_CONTIGUOUS : PTCU_LOAD_STRIDED;
}

/* The plan of op's chain, or the reason it has none. */
static pt_status plan_of(const pt_op *op, ptcu_fused_plan *plan) {
    const pt_fused_chain *c = op->fused;
    if (!c || c->n_steps < 2 || c->n_steps > PTCU_FUSED_MAX_STEPS)
        return ptcu_fail(PT_ERR_UNSUPPORTED, "fused: chains of 2 to %d steps are generated, not %d",
                         PTCU_FUSED_MAX_STEPS, c ? (int)c->n_steps : 0);
    if (c->reduce)
        return ptcu_fail(PT_ERR_UNSUPPORTED, "fused: the generated kernels end without a reduction; the core "
                                             "runs the %s on its own", pt_op_name(c->reduce->kind));
    memset(plan, 0, sizeof *plan);
    for (int k = 0; k < c->n_steps; ++k) {
        const pt_fused_step *s = &c->steps[k];
        const pt_op *sop = &s->op;
        if (sop->kind != PT_OP_COPY && !pt_ew_row_of(sop->kind))
            return ptcu_fail(PT_ERR_UNSUPPORTED, "fused: step %d (%s) has no row in portable/ew_math.h to "
                                                 "generate it from", k, pt_op_name(sop->kind));
        if (pt_op_info_of(sop->kind)->family != PT_OP_FAMILY_ELEMENTWISE)
            return ptcu_fail(PT_ERR_UNSUPPORTED, "fused: step %d (%s) is not element-wise", k, pt_op_name(sop->kind));
        plan->store_of[k] = -1;
        if (s->store) {
            if (plan->n_stores == PTCU_FUSED_MAX_STORES)
                return ptcu_fail(PT_ERR_UNSUPPORTED, "fused: more than %d values stored", PTCU_FUSED_MAX_STORES);
            plan->store_of[k] = (int8_t)plan->n_stores++;
        }
        for (int j = 0; j < PT_OP_MAX_INPUTS; ++j) plan->load_of[k][j] = -1;
        for (int j = 0; j < sop->n_inputs && j < PT_OP_MAX_INPUTS; ++j) {
            const int32_t src = s->src[j];
            if (src >= 0) {
                if (src >= k || c->steps[src].op.out.dtype != sop->in[j].dtype)
                    return ptcu_fail(PT_ERR_INVALID_ARGUMENT, "fused: step %d input %d links to step %d, "
                                     "which is not an earlier step of its dtype", k, j, (int)src);
                continue;
            }
            if (plan->n_loads == PTCU_FUSED_MAX_LOADS)
                return ptcu_fail(PT_ERR_UNSUPPORTED, "fused: more than %d inputs read", PTCU_FUSED_MAX_LOADS);
            ptcu_fused_load *l = &plan->load[plan->n_loads];
            *l = (ptcu_fused_load){.step = (int8_t)k, .input = (int8_t)j,
                                   .kind = (int8_t)load_kind(sop, &sop->in[j]), .ndim = (int8_t)sop->out.ndim};
            if (l->kind == PTCU_LOAD_STRIDED) {
                if (plan->n_strided == PTCU_FUSED_MAX_STRIDED)
                    return ptcu_fail(PT_ERR_UNSUPPORTED, "fused: more than %d strided inputs",
                                     PTCU_FUSED_MAX_STRIDED);
                l->slot = (int8_t)plan->n_strided++;
            }
            plan->load_of[k][j] = (int8_t)plan->n_loads++;
        }
    }
    return PT_OK;
}

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
    return plan_of(op, &plan);
}

static void key_of(const pt_fused_chain *c, const ptcu_fused_plan *plan, ptcu_fused_key *key) {
    memset(key, 0, sizeof *key);
    key->plan = *plan;
    key->n_steps = c->n_steps;
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
    pt_status s = plan_of(op, plan);
    if (s != PT_OK) return s;
    ptcu_fused_key key;
    key_of(op->fused, plan, &key);
    return ptcu_fused_kernel(d, &key, op->fused, k);
}

pt_status ptcu_fused_prepare(int dev, const pt_op *op) {
    ptcu_fused_plan plan;
    pt_status s = plan_of(op, &plan);
    if (s != PT_OK) return s;
    const ptcu_caller_device caller = ptcu_caller_now();
    cudaKernel_t k;
    ptcu_device *d = ptcu_dev(dev);
    s = ptcu_select(d, "fused");
    if (s == PT_OK) s = kernel_of(d, op, &plan, &k);
    ptcu_caller_restore(caller);
    return s;
}

pt_status ptcu_fused(ptcu_device *d, const pt_op *op) {
    ptcu_fused_plan plan;
    cudaKernel_t k;
    pt_status s = kernel_of(d, op, &plan, &k);
    if (s != PT_OK) return s;
    ptcu_fused_params p;
    params_of(op->fused, &plan, &p);
    if (p.numel <= 0) return PT_OK;
    /* Grid-stride: enough blocks to fill every multiprocessor a few times over. */
    int64_t blocks = (p.numel + PTCU_FUSED_THREADS - 1) / PTCU_FUSED_THREADS;
    const int64_t cap = (int64_t)(d->sm_count > 0 ? d->sm_count : 1) * 8;
    if (blocks > cap) blocks = cap;
    void *args[] = {&p};
    const dim3 grid = {(unsigned)blocks, 1, 1}, block = {PTCU_FUSED_THREADS, 1, 1};
    cudaError_t e = cudaLaunchKernel((const void *)k, grid, block, args, 0, ptcu_stream(d));
    if (e != cudaSuccess)
        return ptcu_cuda_error(e, "fused: launching a generated kernel of %d steps", (int)op->fused->n_steps);
    return PT_OK;
}
