/* libportable CUDA backend — FUSED chains (backend.h, the FUSED family) run
 * as one kernel generated at run time:
 *   exec_fused_plan.c    the plan: which inputs are loaded how, which
 *                        values stored, the reduction after the chain
 *   exec_fused.c         supports/execute: the parameters, the launch
 *   exec_fused_source.c  the kernel's CUDA C++ text, built from the rows of
 *                        portable/ew_math.h and the conversions of k_values.cuh
 *   launch_fused.c       compiled kernels cached per (architecture, source)
 *                        in memory, loaded with cudaLibraryLoadData
 *   launch_nvrtc.c       the compiler: NVRTC, loaded with dlopen (the
 *                        simulator links sim/sim_compile.cpp instead, which
 *                        runs the host C++ compiler on the same text)
 * Host C only; the generated source sees fused_abi.h. */
#ifndef PTCU_FUSED_H
#define PTCU_FUSED_H

#include "fused_abi.h"
#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How each external input of a chain is read. */
typedef enum ptcu_fused_load_kind {
    PTCU_LOAD_CONTIGUOUS, /* element i */
    PTCU_LOAD_ONE,        /* element 0 for every i (one element, broadcast) */
    PTCU_LOAD_STRIDED     /* through the step's shape and the input's strides */
} ptcu_fused_load_kind;

typedef struct ptcu_fused_load {
    int8_t step, input, kind, slot; /* slot: its ptcu_fused_strided for PTCU_LOAD_STRIDED */
    int8_t ndim;
} ptcu_fused_load;

/* What the source and the parameters agree on. */
typedef struct ptcu_fused_plan {
    int n_loads, n_stores, n_strided;
    int8_t load_of[PTCU_FUSED_MAX_STEPS][PT_OP_MAX_INPUTS]; /* -1: a src link */
    int8_t store_of[PTCU_FUSED_MAX_STEPS];                  /* -1: not stored */
    ptcu_fused_load load[PTCU_FUSED_MAX_LOADS];
} ptcu_fused_plan;

/* Everything a chain's generated source depends on (each step's kind, its
 * dtypes and links, and the plan), zeroed padding included, so compiled
 * kernels are found by comparing bytes, not by writing the text again. */
typedef struct ptcu_fused_key {
    ptcu_fused_plan plan;
    int32_t n_steps;
    int32_t reduce;     /* the reduction's pt_op_kind after the chain, or -1 */
    int8_t reduce_out;  /* its output dtype, or -1 */
    struct {
        int32_t kind;
        int8_t dtype, out, in[PT_OP_MAX_INPUTS], src[PT_OP_MAX_INPUTS];
    } step[PTCU_FUSED_MAX_STEPS];
} ptcu_fused_key;

/* ---- exec_fused_plan.c ---- */

/* The plan of FUSED op's kernel, or the reason (recorded) it has none. */
pt_status ptcu_fused_plan_of(const pt_op *op, ptcu_fused_plan *plan);

/* ---- exec_fused.c ---- */

/* Whether FUSED op's chain can be generated (reason recorded if not);
 * exec.c has checked each step as an eager op first. */
pt_status ptcu_fused_supports(const pt_op *op);
/* The plan, then the kernel compiled and loaded for device dev,
 * so that a compiler's failure is a refusal, not a failed replay. */
pt_status ptcu_fused_prepare(int dev, const pt_op *op);
/* Runs a supported FUSED op on d's stream (d selected). */
pt_status ptcu_fused(ptcu_device *d, const pt_op *op);

/* ---- exec_fused_source.c ---- */

/* The kernel `ptcu_fused_kernel` for chain c as planned, malloc'd text
 * (NULL: out of host memory). */
char *ptcu_fused_source(const pt_fused_chain *c, const ptcu_fused_plan *plan);

/* ---- launch_fused.c ---- */

/* The kernel of chain c (planned as key says) on d: found by key, else
 * its source written, compiled for d's architecture and loaded; the reason
 * recorded on failure. */
pt_status ptcu_fused_kernel(ptcu_device *d, const ptcu_fused_key *key, const pt_fused_chain *c, cudaKernel_t *out);
/* At shutdown: unloads every library. */
void ptcu_fused_forget(void);

/* ---- launch_nvrtc.c (sim/sim_compile.cpp in the simulator) ---- */

/* The headers the source includes, by the name it includes them under. */
typedef struct ptcu_source {
    const char *name, *text;
} ptcu_source;
extern const ptcu_source ptcu_sources[];
extern const int ptcu_n_sources;

/* Compiles source for compute capability major.minor into an image for
 * cudaLibraryLoadData: *image (malloc'd) of *size bytes; the reason
 * recorded on failure (PT_ERR_UNSUPPORTED when there is no compiler). */
pt_status ptcu_compile(const char *source, int major, int minor, void **image, size_t *size);
/* What besides the source decides the image (compiler, version, options),
 * for the cache's key. */
const char *ptcu_compiler_identity(void);

#ifdef __cplusplus
}
#endif
#endif
