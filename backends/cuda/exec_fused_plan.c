/* libportable CUDA backend — the plan of a FUSED op's kernel (fused.h):
 * which inputs are loaded and how, which values are stored, and whether the
 * reduction after the chain can end the kernel; or the reason a chain has
 * no kernel. Host C with no CUDA call, so the NVRTC test
 * (tests/test_fused_nvrtc.c) plans chains as the plugin does. */
#include <string.h>

#include "fused.h"
#include "portable/ew_math.h"

_Static_assert(PTCU_FUSED_MAX_DIMS == PT_MAX_DIMS, "fused_abi.h's dims are PT_MAX_DIMS");

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

/* Whether the reduction after chain c can end its kernel: a SUM, MEAN or
 * MAX (MEAN of floats) of the chain's last value, which the core links
 * exactly, so it is [outer, r, inner] contiguous. */
static pt_status reduction_of(const pt_fused_chain *c) {
    const pt_op *red = c->reduce;
    const pt_operand *x = &red->in[0];
    const pt_dtype last = c->steps[c->n_steps - 1].op.out.dtype;
    if (red->kind != PT_OP_SUM && red->kind != PT_OP_MEAN && red->kind != PT_OP_MAX)
        return ptcu_fail(PT_ERR_UNSUPPORTED, "fused: %s after the chain (a sum, mean or max ends a fused kernel)",
                         pt_op_name(red->kind));
    if (x->dtype != last)
        return ptcu_fail(PT_ERR_INVALID_ARGUMENT, "fused: the %s reads %s, the chain's last value is %s",
                         pt_op_name(red->kind), pt_dtype_table_name(x->dtype), pt_dtype_table_name(last));
    if ((red->kind != PT_OP_MAX && x->dtype == PT_U8) || (red->kind == PT_OP_MEAN && !pt_dtype_is_float(x->dtype)))
        return ptcu_fail(PT_ERR_UNSUPPORTED, "fused: no %s of %s", pt_op_name(red->kind), pt_dtype_table_name(x->dtype));
    const int64_t outer = x->shape[0], r = x->shape[1], inner = x->shape[2];
    const bool dense = (inner == 1 || x->strides[2] == 1) && (r == 1 || x->strides[1] == inner) &&
                       (outer == 1 || x->strides[0] == r * inner);
    if (x->ndim != 3 || !dense || outer * r * inner != c->numel)
        return ptcu_fail(PT_ERR_INVALID_ARGUMENT, "fused: the %s's input [%lld, %lld, %lld] is not the chain's "
                         "%lld contiguous values", pt_op_name(red->kind), (long long)outer, (long long)r,
                         (long long)inner, (long long)c->numel);
    return PT_OK;
}

/* The plan of op's chain, or the reason it has none. */
pt_status ptcu_fused_plan_of(const pt_op *op, ptcu_fused_plan *plan) {
    const pt_fused_chain *c = op->fused;
    /* one step is a chain only in front of a reduction (the core offers it so) */
    if (!c || c->n_steps < (c->reduce ? 1 : 2) || c->n_steps > PTCU_FUSED_MAX_STEPS)
        return ptcu_fail(PT_ERR_UNSUPPORTED, "fused: chains of 2 to %d steps (1 before a reduction) are "
                         "generated, not %d", PTCU_FUSED_MAX_STEPS, c ? (int)c->n_steps : 0);
    if (c->reduce) {
        pt_status s = reduction_of(c);
        if (s != PT_OK) return s;
    }
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
