/* libportable OpenCL backend — a fused chain's kernels: generated
 * (launch_fused_source.c) and built the first time a chain of their
 * structure runs on a device, through the disk cache (launch_program.c,
 * keyed by the SHA-256 of the source), then kept on the device by
 * structure, so a replay finds them with a comparison of bytes and no
 * text work. Buffers, offsets, strides and scalars are kernel arguments:
 * a chain whose scalars change between replays is never rebuilt. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* The embedded sources a chain's program starts with (launch_sources.c),
 * in their order: the prelude, the shared numbers, the conversions, T and
 * the layout walk, the ew_math.h helpers. */
static const char *const ocl_fused_prefix[] = {"prelude.cl", "kernel_abi.h", "numeric_rules.h",
                                               "half.h", "common.cl", "ew_math.h"};
#define OCL_FUSED_N_PREFIX ((int)(sizeof ocl_fused_prefix / sizeof ocl_fused_prefix[0]))
/* Then the chain's text, then (a chain with a reduction) reduce.cl. */

/* Creates kernel name of p and lowers *wg to its work-group limit. */
static pt_status ocl_fused_kernel_of(ocl_device *d, cl_program p, const char *name, cl_kernel *k,
                                     size_t *wg) {
    size_t kwg = 0;
    pt_status s = ocl_kernel_create(d, p, name, "a fused chain's program", k, &kwg);
    if (s == PT_OK && kwg < *wg) *wg = kwg;
    return s;
}

static pt_status ocl_fused_build(ocl_device *d, const pt_fused_chain *const *parts, int n_parts,
                                 ocl_fused_kernel *fk) {
    const pt_fused_chain *c = parts[0];
    const bool group = n_parts > 1;
    char why[512] = "";
    char *text = NULL;
    pt_dtype t = PT_F32;
    pt_status s = group ? ocl_fused_group_generate(d, parts, n_parts, &text, &t, fk->args, &fk->n_args, why, sizeof why)
                        : ocl_fused_generate(d, c, &text, &t, fk->args, &fk->n_args, why, sizeof why);
    if (s != PT_OK) return ocl_fail(s, "fused %s: %s", group ? "group" : "chain", why);
    const char *texts[OCL_FUSED_N_PREFIX + 2];
    int n = ocl_embedded_texts(OCL_FUSED_N_PREFIX, ocl_fused_prefix, texts);
    if (n != OCL_FUSED_N_PREFIX) {
        free(text);
        return ocl_fail(PT_ERR_INTERNAL, "fused chain: %d of the %d sources it needs are embedded "
                        "(CMakeLists.txt's PT_OCL_KERNEL_SOURCES)", n, OCL_FUSED_N_PREFIX);
    }
    texts[n++] = text;
    /* a reduction after the chain: reduce.cl's kernels, loading through the text's chain;
     * exec_reduce.c runs reduce_serial where ocl_blocked_rows (cpu_forms) says */
    static const char *const reduce_cl[] = {"reduce.cl"};
    if (c->reduce && ocl_embedded_texts(1, reduce_cl, &texts[n]) != 1) {
        free(text);
        return ocl_fail(PT_ERR_INTERNAL, "fused chain: reduce.cl is not embedded (CMakeLists.txt's "
                        "PT_OCL_KERNEL_SOURCES)");
    }
    if (c->reduce) ++n;
    s = ocl_program_build(d, group ? "fused group kernel" : c->reduce ? "fused chain and reduction kernels"
                                                                      : "fused chain kernels",
                          t, n, texts, &fk->program);
    free(text);
    fk->wg = d->max_work_group;
    if (group) return s == PT_OK ? ocl_fused_kernel_of(d, fk->program, "fused_group", &fk->group, &fk->wg) : s;
    if (c->reduce) {
        if (s == PT_OK)
            s = ocl_fused_kernel_of(d, fk->program, d->cpu_forms ? "reduce_serial" : "reduce", &fk->reduce,
                                    &fk->wg);
        return s;
    }
    if (s == PT_OK) s = ocl_fused_kernel_of(d, fk->program, "fused_whole", &fk->whole, &fk->wg);
    if (s == PT_OK) s = ocl_fused_kernel_of(d, fk->program, "fused_tail", &fk->tail, &fk->wg);
    int nd = 0;
    if (s == PT_OK && ocl_fused_strided_inner(c, &nd) > 0)
        s = ocl_fused_kernel_of(d, fk->program, "fused_rows", &fk->rows, &fk->wg);
    return s;
}

static void ocl_fused_free(ocl_fused_kernel *fk, bool cl_calls) {
    if (cl_calls) {
        if (fk->whole) clReleaseKernel(fk->whole);
        if (fk->tail) clReleaseKernel(fk->tail);
        if (fk->rows) clReleaseKernel(fk->rows);
        if (fk->group) clReleaseKernel(fk->group);
        if (fk->reduce) clReleaseKernel(fk->reduce);
        if (fk->program) clReleaseProgram(fk->program);
    }
    free(fk);
}

pt_status ocl_fused_kernels_of(ocl_device *d, const pt_fused_chain *const *parts, int n_parts,
                               ocl_fused_kernel **out) {
    ocl_fused_sig sig;
    if (n_parts > 1) ocl_fused_group_signature(parts, n_parts, &sig);
    else ocl_fused_signature(parts[0], &sig);
    for (ocl_fused_kernel *fk = d->fused; fk; fk = fk->next)
        if (fk->sig.len == sig.len && !memcmp(fk->sig.b, sig.b, (size_t)sig.len)) {
            *out = fk;
            return PT_OK;
        }
    ocl_fused_kernel *fk = calloc(1, sizeof *fk);
    if (!fk) return ocl_fail(PT_ERR_OUT_OF_MEMORY, "out of host memory for a fused chain's kernels");
    fk->sig = sig;
    pt_status s = ocl_fused_build(d, parts, n_parts, fk);
    if (s != PT_OK) {
        ocl_fused_free(fk, true);
        return s;
    }
    fk->next = d->fused;
    d->fused = fk;
    *out = fk;
    return PT_OK;
}

pt_status ocl_fused_kernels(ocl_device *d, const pt_fused_chain *c, ocl_fused_kernel **out) {
    return ocl_fused_kernels_of(d, &c, 1, out);
}

void ocl_fused_release(ocl_device *d, bool cl_calls) {
    while (d->fused) {
        ocl_fused_kernel *next = d->fused->next;
        ocl_fused_free(d->fused, cl_calls);
        d->fused = next;
    }
}
