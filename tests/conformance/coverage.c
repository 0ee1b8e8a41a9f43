/* Coverage: after a full run, every (op kind, dtype) pair the core may send
 * a backend (a row of include/portable/op_table.h and each dtype of its
 * dtypes column) must have been handed to a backend by some case, as
 * pt_op_dtypes_reached() counts them. A pair no case reaches is a failure:
 * a new row of the table, or a dtype added to one, then needs cases before
 * the suite passes again (ggml's test-backend-ops checks its ops this way).
 * The count is taken before the backend is asked, so a backend that refuses
 * a pair (a skip) still counts it as reached: coverage is about the suite,
 * the support grid (support.c) about the backend. A pair reached outside
 * the table's dtypes column fails too: the core broke its own table.
 * Three kinds are offered only after other kinds ran: FUSED for a graph's
 * chain of element-wise ops the device ran while capturing, so on a device
 * that refuses a dtype's arithmetic (ADD; COPY for u8 and the 16-bit
 * floats, whose chains are casts around f32 steps) no chain in it forms
 * (the null skeleton refuses every op; rusticl has no f64 arithmetic); and ATTENTION_BACKWARD for the gradient of an ATTENTION the
 * device ran, so where the device refuses ATTENTION the core composes it
 * and differentiates the composition; and EMBEDDING_BACKWARD for the
 * gradient of an EMBEDDING the device ran (refused, the lookup is a gather
 * with gather's gradient); both gradient kinds also need the dtype's
 * arithmetic (ADD), as the loss they differentiate does. Those pairs are
 * skips. */
#include <stdio.h>

#include "conformance.h"

/* The kind whose support a case needs before it can reach k, or k itself. */
static pt_op_kind prerequisite(pt_op_kind k, pt_dtype t) {
    if (pt_op_info_of(k)->family == PT_OP_FAMILY_FUSED)
        return t == PT_U8 || pt_dtype_is_half(t) ? PT_OP_COPY : PT_OP_ADD;
    if (k == PT_OP_ATTENTION_BACKWARD) return PT_OP_ATTENTION;
    if (k == PT_OP_EMBEDDING_BACKWARD) return PT_OP_EMBEDDING;
    return k;
}

/* The dtypes a case can reach kind k in on the device under test. */
static unsigned reachable(pt_op_kind k, unsigned takes) {
    if (prerequisite(k, PT_F32) == k) return takes;
    unsigned can = 0;
    FOR_EACH_DTYPE_IN(t, takes) {
        pt_op_kind needs = prerequisite(k, t);
        /* A gradient kind is reached only by a case that differentiates a
         * loss in t, which takes t's arithmetic too (rusticl looks up f64
         * rows but adds no f64). */
        const bool gradient = k == PT_OP_ATTENTION_BACKWARD || k == PT_OP_EMBEDDING_BACKWARD;
        if (gradient && pt_device_supports(g_dev, needs, t) == PT_OK) needs = PT_OP_ADD;
        if (pt_device_supports(g_dev, needs, t) == PT_OK) can |= PT_DTYPE_BIT(t);
        else {
            char name[96], why[128];
            snprintf(name, sizeof name, "coverage: %s in %s", pt_op_name(k), pt_dtype_table_name(t));
            snprintf(why, sizeof why, "the device runs no %s in this dtype, so the core never sends %s",
                     pt_op_name(needs), pt_op_name(k));
            report_skip(name, why);
        }
    }
    pt_clear_error();
    return can;
}

void check_op_coverage(void) {
    int missing = 0;
    for (pt_op_kind k = (pt_op_kind)0; k < PT_OP_COUNT; k = (pt_op_kind)(k + 1)) {
        unsigned takes = pt_op_info_of(k)->dtypes, reached = pt_op_dtypes_reached(k);
        takes = reachable(k, takes) | (takes & reached);
        FOR_EACH_DTYPE_IN(t, takes & ~reached) {
            report_fail("coverage", "op kind '%s' in %s was reached by no case", pt_op_name(k),
                        pt_dtype_table_name(t));
            ++missing;
        }
        /* the other way round: the core sent a pair its own table rules out */
        FOR_EACH_DTYPE_IN(t, reached & ~takes) {
            report_fail("coverage", "op kind '%s' was sent in %s, which op_table.h says the core never sends",
                        pt_op_name(k), pt_dtype_table_name(t));
            ++missing;
        }
    }
    if (!missing) report_pass("coverage: every op kind of op_table.h in every dtype it takes");
}
