/* libportable OpenCL backend — numbers shared by the host code and the
 * OpenCL C kernels.
 *
 * This file is compiled twice: by the C compiler into the plugin, and, as
 * embedded text, into every OpenCL program. Keeping the operation codes and
 * dtype codes in one place means the host and the kernels cannot disagree.
 * Plain #defines only: it must be valid C11 and OpenCL C 1.2. */
#ifndef PT_OCL_KERNEL_ABI_H
#define PT_OCL_KERNEL_ABI_H

/* Element types, equal to pt_dtype's values (launch_program.c checks this at
 * compile time). The program's own type is chosen with -DPT_DTYPE=<code>. */
#define PT_K_F32 0
#define PT_K_F64 1
#define PT_K_I32 2
#define PT_K_I64 3
#define PT_K_U8 4
#define PT_K_F16 5
#define PT_K_BF16 6

/* reduce */
#define PT_K_SUM 0
#define PT_K_MEAN 1
#define PT_K_MAX 2
#define PT_K_ARGMAX 3

/* reduce's output: the final result (converted to the output dtype) or the
 * first pass of a two-pass reduction (accumulator values + indices). */
#define PT_K_STAGE_FINAL 0
#define PT_K_STAGE_PARTIAL 1

/* arange's arithmetic: integer start/step, or floating point. */
#define PT_K_ARANGE_INT 0
#define PT_K_ARANGE_FLOAT 1

/* attention's flags, equal to backend.h's PT_ATTN_* (exec_attention.c
 * checks), and the longest tile of rows its kernels stream through local
 * memory (the forward kernel keeps a tile's scores in a private row). */
#define PT_K_ATTN_CAUSAL 1
#define PT_K_ATTN_MASK_KEEP 2
#define PT_K_ATTN_MASK_ADD 4
#define PT_K_ATTN_TILE_MAX 64

/* Largest number of dimensions of an element-wise launch (PT_MAX_DIMS). */
#define PT_K_MAX_DIMS 8

#endif
