/* libportable OpenCL backend — groups of fused chains: consecutive FUSED
 * ops of a recorded graph that touch disjoint memory run as one kernel,
 * "fused_group", instead of one kernel each.
 *
 * An optimizer step is the case it serves: each parameter's update is a
 * chain of its own element count (the core fuses only ops of one count),
 * and a step of a small model is mostly such chains, each a kernel launch
 * and, on CPU devices, a hand-over between kernels of a few microseconds
 * that no recording removes (PoCL 3.1: 4.5 to 5 us each). Run together,
 * the chains pay that once.
 *
 * The kernel's work-groups are dealt out to the chains in order, whole
 * groups to each (part p takes ceil(n_p / w) of them), so a work-group
 * runs one chain's body and its branch is the same for all its items;
 * each item then runs that chain's element i, bounds-checked, exactly as
 * the chain's own fused_tail runs it: the same steps in the same order,
 * so the same bits. The chains' steps are numbered one after another
 * (launch_fused_source.c's base), so their names never meet. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

void ocl_fused_group_signature(const pt_fused_chain *const *parts, int n, ocl_fused_sig *sig) {
    memset(sig, 0, sizeof *sig); /* b[0] 0: no lone chain has 0 steps */
    sig->b[1] = (unsigned char)n;
    int len = 2;
    for (int p = 0; p < n; ++p) {
        ocl_fused_sig one;
        ocl_fused_signature(parts[p], &one);
        if (len + one.len > (int)sizeof sig->b) break; /* ocl_fused_group_generate refuses such a group */
        memcpy(&sig->b[len], one.b, (size_t)one.len);
        len += one.len;
    }
    sig->len = len;
}

pt_status ocl_fused_group_generate(const ocl_device *d, const pt_fused_chain *const *parts, int n, char **text,
                                   pt_dtype *t, ocl_fused_arg *args, int *n_args, char *why, size_t cap) {
    if (n < 2 || n > OCL_FUSED_MAX_PARTS) {
        snprintf(why, cap, "a group of %d chains (this plugin groups 2 to %d)", n, OCL_FUSED_MAX_PARTS);
        return PT_ERR_UNSUPPORTED;
    }
    pt_dtype arith = PT_F32;
    bool fixed = false;
    int steps = 0;
    for (int p = 0; p < n; ++p) {
        pt_dtype a = PT_F32;
        bool typed = false;
        char part_why[400];
        if (parts[p]->reduce) {
            snprintf(why, cap, "chain %d of the group ends in a reduction (those run alone)", p);
            return PT_ERR_UNSUPPORTED;
        }
        pt_status s = ocl_fused_check(d, parts[p], &a, &typed, part_why, sizeof part_why);
        if (s != PT_OK) {
            snprintf(why, cap, "chain %d of the group: %s", p, part_why);
            return s;
        }
        if (typed && fixed && a != arith) {
            snprintf(why, cap, "the group's chains compute in %s and %s: a generated program has one "
                     "arithmetic type", pt_dtype_table_name(arith), pt_dtype_table_name(a));
            return PT_ERR_UNSUPPORTED;
        }
        if (typed) {
            arith = a;
            fixed = true;
        }
        steps += (int)parts[p]->n_steps;
    }
    if (steps > OCL_FUSED_MAX_STEPS) {
        snprintf(why, cap, "a group of %d steps in all (this plugin groups at most %d)", steps, OCL_FUSED_MAX_STEPS);
        return PT_ERR_UNSUPPORTED;
    }
    const bool on = text != NULL;
    ocl_fused_text x = {.fn = {.off = !on}, .params = {.off = !on}, .body = {.off = !on}, .args = args};
    pt_text kernel = {.off = !on};
    if (on) ocl_fused_prelude(&x, steps);
    pt_text_put(&kernel, "    const long g = (long)get_group_id(0), w = (long)get_local_size(0);\n"
                         "    const long lid = (long)get_local_id(0);\n"
                         "    long first = 0, groups;\n");
    for (int p = 0, base = 0; p < n; base += (int)parts[p]->n_steps, ++p) {
        free(x.body.s);
        x.body = (pt_text){.off = !on};
        ocl_fused_emit(parts[p], p, base, &x);
        ocl_fused_plan_add(&x, OCL_FA_N, p, 0, 0, sizeof(cl_long));
        pt_text_put(&x.params, ", long n%d", p);
        pt_text_put(&kernel,
                    "    groups = (n%d + w - 1) / w;\n"
                    "    if (g < first + groups) {\n"
                    "        const long i = (g - first) * w + lid;\n"
                    "        if (i >= n%d) return;\n%s"
                    "        return;\n"
                    "    }\n"
                    "    first += groups;\n",
                    p, p, x.body.s ? x.body.s : "");
        if (x.body.failed) kernel.failed = true;
    }
    pt_status s = ocl_fused_limits(&x, false, why, cap);
    if (s != PT_OK || !on) {
        free(kernel.s);
        ocl_fused_text_free(&x);
        return s;
    }
    pt_text_put(&x.fn, "#define PT_FUSED_AT(nd, sh, st) pt_locate(i, nd, sh, st, st, st, st).o\n"
                       "__kernel void fused_group(%s) {\n%s}\n",
                x.params.s ? x.params.s + 2 : "", kernel.s ? kernel.s : "");
    const bool failed = kernel.failed;
    free(kernel.s);
    return ocl_fused_text_done(&x, failed, arith, text, t, n_args, why, cap);
}
