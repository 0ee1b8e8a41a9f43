/* libportable CUDA backend — the one parameter of every kernel generated
 * for a fused chain (exec_fused_source.c), as the host fills it
 * (exec_fused.c) and the generated source reads it. C and C++ (NVRTC, the
 * simulator's host compiler): it includes only <stdint.h>.
 *
 * Everything that changes between two graphs of one structure is here, not
 * in the source: the element count, the addresses, the strides of strided
 * inputs and the scalars, so a replay with new values reuses the compiled
 * kernel. The limits keep the struct under CUDA's 4 KiB of kernel
 * parameters; supports() refuses a chain past them. */
#ifndef PTCU_FUSED_ABI_H
#define PTCU_FUSED_ABI_H

#include <stdint.h>

#define PTCU_FUSED_MAX_STEPS 32   /* steps of one chain */
#define PTCU_FUSED_MAX_LOADS 16   /* inputs read from memory */
#define PTCU_FUSED_MAX_STORES 16  /* values written to memory */
#define PTCU_FUSED_MAX_STRIDED 6  /* of the loads, those neither contiguous nor one broadcast element */
#define PTCU_FUSED_MAX_DIMS 8     /* PT_MAX_DIMS (exec_fused.c checks they agree) */
#define PTCU_FUSED_THREADS 256    /* threads per block */

/* A strided input: the step's shape (its out's, which is contiguous) and
 * the input's strides in elements (0 on broadcast dims). */
typedef struct ptcu_fused_strided {
    int64_t shape[PTCU_FUSED_MAX_DIMS];
    int64_t strides[PTCU_FUSED_MAX_DIMS];
} ptcu_fused_strided;

/* A chain whose last value is reduced (SUM, MEAN, MAX over the middle
 * axis of [outer, r, inner], the value being contiguous): thread lane q
 * of outer * parts * inner lanes, q = (o * parts + t) * inner + i, folds
 * the elements (o, j, i) with j = t, t + parts, ... into one accumulator
 * (adjacent lanes read adjacent elements). With parts == 1 a lane's
 * accumulator is output q's value, written to out as the output dtype;
 * otherwise out holds the [outer, parts, inner] accumulators and the
 * plugin's eager reduction finishes them. */
typedef struct ptcu_fused_reduction {
    int64_t outer, r, inner, parts;
    int64_t count; /* MEAN's divisor: r */
    void *out;
} ptcu_fused_reduction;

typedef struct ptcu_fused_params {
    int64_t numel;
    const void *load[PTCU_FUSED_MAX_LOADS];      /* element [0, ..., 0] of each input read */
    void *store[PTCU_FUSED_MAX_STORES];          /* element 0 of each value written */
    double scalar[PTCU_FUSED_MAX_STEPS][2];      /* each step's scalar and scalar2, as in pt_op */
    ptcu_fused_strided strided[PTCU_FUSED_MAX_STRIDED];
    ptcu_fused_reduction reduce; /* a chain with a reduction only */
} ptcu_fused_params;

#if defined(__cplusplus) && defined(PTCU_FUSED_KERNEL)
/* For the generated kernels only (their source defines PTCU_FUSED_KERNEL). */
/* The offset of element i of a strided input of nd dims (nd is the
 * chain's structure, so it is a template argument). */
template <int ND> __device__ __forceinline__ int64_t ptcu_fused_offset(int64_t i, const ptcu_fused_strided &g) {
    int64_t off = 0;
#pragma unroll
    for (int d = ND - 1; d >= 0; --d) {
        const int64_t c = i % g.shape[d];
        i /= g.shape[d];
        off += c * g.strides[d];
    }
    return off;
}

/* A value as its step rounded it: on the GPU an empty asm the compiler
 * cannot see through, so no multiply of one step is contracted into the
 * next step's add (an FMA rounds once where the eager ops round twice). */
template <class V> __device__ __forceinline__ void ptcu_fused_rounded(V &) {}
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ void ptcu_fused_rounded(float &v) { asm volatile("" : "+f"(v)); }
__device__ __forceinline__ void ptcu_fused_rounded(double &v) { asm volatile("" : "+d"(v)); }
#endif
#endif

#endif
