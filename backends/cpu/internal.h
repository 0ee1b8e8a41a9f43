/* libportable cpu backend — declarations shared by the plugin's files.
 *
 * The files follow the backends' one skeleton (docs/backends.md). Calls run
 * this way and form no circle between files (lint_backend_layout):
 * plugin.c (the vtable and pt_backend_entry only) -> exec.c (supports and
 * execute: dispatch by op family) -> exec_<family>*.c -> launch*.c (the
 * OpenMP team, strided loops, synchronize, trace stamps) -> memory.c ->
 * device.c -> errors.c. (device.c also reads what exec files chose at load,
 * the vector-math level and the GEMM library, for the device's platform line.)
 *
 * Symbol prefix: pt_cpu_ (every non-static name). Nothing here is exported
 * (the target builds with hidden visibility); the only public symbol is
 * pt_backend_entry in plugin.c.
 * Float to integer conversions follow portable/numeric_rules.h.
 *
 * Buffers are plain host pointers, so every operand address is
 * (char *)buf + offset and element strides are multiplied by the element
 * size. Execution is immediate: execute() returns when the result is written. */
#ifndef PORTABLE_CPU_INTERNAL_H
#define PORTABLE_CPU_INTERNAL_H

#include <math.h>
#include <stdint.h>

#include "portable/backend.h"
#include "portable/numeric_rules.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- Host API and errors (errors.c) ----
 * Op and dtype names in messages come from the shared tables: pt_op_name
 * (op_table.h) and pt_dtype_table_name (types.h), as do element sizes
 * (pt_dtype_table_size). */

/* The host API handed to pt_backend_entry (NULL before it ran). */
extern const pt_host_api *pt_cpu_host;

/* Records "cpu: <formatted message>" with the host and returns s. */
pt_status pt_cpu_fail(pt_status s, const char *fmt, ...) PT_PRINTF(2, 3);
/* PT_ERR_UNSUPPORTED with "cpu: <op> not implemented for <dtype>". */
pt_status pt_cpu_unsupported(const pt_op *op, pt_dtype t);
/* A descriptor that contradicts backend.h (a core bug): PT_ERR_INTERNAL
 * naming the op and what was wrong. */
pt_status pt_cpu_bad_op(const pt_op *op, const char *what);

/* ---- Devices (device.c) ---- */

pt_status pt_cpu_init(void);
int pt_cpu_device_count(void);
pt_status pt_cpu_device_info(int dev, pt_device_props *out);
pt_status pt_cpu_memory_info(int dev, int64_t *free_bytes, int64_t *total_bytes);

/* ---- Memory and transfers (memory.c) ----
 * Every device is this process's memory: copies are memmove. */

pt_status pt_cpu_alloc(int dev, size_t bytes, void **buf);
void pt_cpu_free(int dev, void *buf);
pt_status pt_cpu_host_alloc(int dev, size_t bytes, void **ptr);
pt_status pt_cpu_copy_h2d(int dev, void *dst, size_t dst_offset, const void *src, size_t bytes,
                          bool async);
pt_status pt_cpu_copy_d2h(int dev, void *dst, const void *src, size_t src_offset, size_t bytes,
                          bool async);
pt_status pt_cpu_copy_d2d(int dev, void *dst, size_t dst_offset, const void *src,
                          size_t src_offset, size_t bytes);
pt_status pt_cpu_copy_peer(int dst_dev, void *dst, size_t dst_offset, int src_dev,
                           const void *src, size_t src_offset, size_t bytes);

/* ---- The queue (launch.c): execution is immediate ---- */

pt_status pt_cpu_synchronize(int dev);
/* Trace stamps: the host's clock when recorded, held in the handle. */
pt_status pt_cpu_stamp_record(int dev, void **stamp);
pt_status pt_cpu_stamp_time(int dev, void *stamp, int64_t *ns);
void pt_cpu_stamp_release(int dev, void *stamp);

/* ---- Threading (launch_threads.c) ---- */

/* Work below which a loop stays on the calling thread. Splitting pays only
 * when the serial time is well above what starting the OpenMP team costs:
 * about 1 us with its threads still spinning, tens of us once they sleep
 * (as they have between the ops of a training step), plus the cache lines
 * that move between cores. Measured on a 2-core AMD EPYC VM (Zen 3): one
 * thread adds 1M floats in about 110 us, SLEEF's exp takes about 0.3 ns an
 * element and tanh about 1 ns, a double-accumulated sum 0.25 ns, OpenBLAS
 * sgemm about 35 G multiply-adds/s; two threads first beat one at about
 * 32K elements for add with a spinning team, so these grains keep roughly
 * 30-60 us of serial work, where even a sleeping team's wake-up is repaid. */
#define PT_CPU_GRAIN_CHEAP 262144  /* memory-bound loops: add, copy, fill, where, gather */
#define PT_CPU_GRAIN_COSTLY 65536  /* exp, log, pow, tanh, sigmoid, sin, cos, integer div */
#define PT_CPU_GRAIN_REDUCE 131072 /* sum, mean, max, argmax: input elements */
#define PT_CPU_GRAIN_SOFTMAX 32768 /* softmax, log_softmax: elements (exp and two passes) */
#define PT_CPU_GRAIN_GEMM 2097152  /* matmul: multiply-adds (M * N * K * batches) */

/* The team size: OMP_NUM_THREADS (omp_get_max_threads) capped by the cores
 * this process may run on (its affinity mask), since threads beyond them
 * only take turns, and under an address-space limit by the threads that
 * could be started (launch_threads.c: libgomp exits when it cannot make one). */
int pt_cpu_max_threads(void);
/* Whether the process runs under a finite RLIMIT_AS (ulimit -v). */
bool pt_cpu_address_space_limited(void);

/* Runs piece(ctx, begin, end) over [0, n): on this thread below grain,
 * else split across the OpenMP team in pieces starting on multiples of
 * align (a power of two; 64 elements keeps threads off each other's cache
 * lines of a contiguous output and a Philox block inside one piece).
 * launch_strided.c */
typedef void (*pt_cpu_piece_fn)(void *ctx, int64_t begin, int64_t end);
void pt_cpu_parallel_ranges(int64_t n, int64_t grain, int64_t align, pt_cpu_piece_fn piece,
                            void *ctx);
/* Rows [0, rows) of width elements each, split over the team; on this
 * thread while they hold fewer than a cheap op's grain of elements.
 * exec_index.c */
void pt_cpu_rows_over_team(int64_t rows, int64_t width, pt_cpu_piece_fn piece, void *ctx);
/* Outputs at least this large are written with streaming stores: smaller
 * ones are likely to be read again while still in cache. */
#define PT_CPU_STREAM_MIN_BYTES ((int64_t)16 << 20)
/* Copies bytes from a cache-resident buffer to dst with non-temporal
 * stores where dst is 16-byte aligned (no read of dst into the cache);
 * pt_cpu_stream_fence publishes them. launch_strided.c */
void pt_cpu_stream_copy(char *dst, const char *src, size_t bytes);
void pt_cpu_stream_fence(void);

/* Address of element [0, ..., 0] of an operand. */
static inline char *pt_cpu_base(const pt_operand *x) { return (char *)x->buf + x->offset; }

/* Whether o holds exactly n elements, contiguous in C order (extent-1 dims
 * may have any stride). */
static inline bool pt_cpu_dense_with(const pt_operand *o, int64_t n) {
    int64_t expect = 1;
    for (int d = o->ndim; d-- > 0;) {
        if (o->shape[d] > 1 && o->strides[d] != expect) return false;
        expect *= o->shape[d];
    }
    return expect == n;
}

/* ---- Strided N-d iteration (launch_strided.c) ---- */

#define PT_CPU_MAX_OPERANDS (1 + PT_OP_MAX_INPUTS)

/* Scalar parameters converted once to every dtype, so a kernel reads its own
 * type without converting per element. */
typedef struct pt_cpu_scalar {
    float f32;
    double f64;
    int32_t i32;
    int64_t i64;
    uint8_t u8;
    uint16_t f16, bf16; /* bit patterns, rounded once from the double */
} pt_cpu_scalar;

void pt_cpu_scalar_from_double(double v, pt_cpu_scalar *out);

/* A row kernel processes n elements along the innermost dimension:
 * p[0] is the output, p[1..] the inputs, each already at the row start;
 * st[k] is operand k's stride in elements along the row (0: broadcast).
 * sc points at the op's scalars: the element-wise rows read sc[0] (scalar)
 * and sc[1] (scalar2, CLAMP's upper bound), so their callers pass two. */
typedef void (*pt_cpu_row_fn)(int64_t n, char *const *p, const int64_t *st,
                              const pt_cpu_scalar *sc);

/* The operands of an element-wise op as the core sends them: dimensions
 * already merged (backend.h), so a contiguous tensor of any shape is one row. */
typedef struct pt_cpu_iter {
    int ndim;                                          /* >= 1 */
    int nops;                                          /* out + inputs */
    int64_t shape[PT_MAX_DIMS];
    int64_t strides[PT_CPU_MAX_OPERANDS][PT_MAX_DIMS]; /* elements */
    char *base[PT_CPU_MAX_OPERANDS];
    size_t elsize[PT_CPU_MAX_OPERANDS];
    int64_t numel;
} pt_cpu_iter;

/* out and in[0..nin-1] must share out's shape (backend.h element-wise rule). */
void pt_cpu_iter_init(pt_cpu_iter *it, const pt_operand *out, int nin, const pt_operand *in);
/* Calls fn over every row; splits the element range across threads when
 * numel >= grain. */
void pt_cpu_iter_run(const pt_cpu_iter *it, pt_cpu_row_fn fn, const pt_cpu_scalar *sc,
                     int64_t grain);
/* The index of flat element `flat` of it's shape, dim by dim. */
void pt_cpu_iter_index(const pt_cpu_iter *it, int64_t flat, int64_t *idx);
/* The address of operand k's element at index idx: it->base[k] moved along
 * its strides. */
char *pt_cpu_iter_at(const pt_cpu_iter *it, int k, const int64_t *idx);
/* Calls fn over the rows of flat elements [begin, end) in C order, with the
 * operands' addresses of element begin in start (it->base unused): the row
 * walk of pt_cpu_iter_run, for callers that place operands themselves (a
 * fused chain's values live in per-block scratch). */
void pt_cpu_iter_walk(const pt_cpu_iter *it, char *const *start, int64_t begin, int64_t end,
                      pt_cpu_row_fn fn, const pt_cpu_scalar *sc, bool stream);

/* ---- Execution (exec.c): supports and execute, by op family ---- */

pt_status pt_cpu_supports(int dev, const pt_op *op);
pt_status pt_cpu_execute(int dev, const pt_op *op);

/* ---- Op families (exec_<family>*.c) ----
 * Each checks the descriptor (the core validated it; these checks only keep
 * the plugin in bounds and name unsupported dtypes), picks its kernel and,
 * when run is true, executes it. With run false it stops after the checks:
 * that is supports(). A failure has already called set_error. */

pt_status pt_cpu_elementwise(const pt_op *op, bool run); /* exec_elementwise.c: ADD..AXPY */
pt_status pt_cpu_copy(const pt_op *op, bool run);        /* exec_elementwise_copy.c: COPY, any pair */
/* The checks of the two above and the row kernel each would run (with the
 * op's scalars and its parallel grain): what a fused chain calls per step,
 * so every step rounds exactly as its eager kernel does. */
pt_status pt_cpu_elementwise_row(const pt_op *op, pt_cpu_row_fn *row, pt_cpu_scalar sc[2],
                                 int64_t *grain);
pt_status pt_cpu_copy_row(const pt_op *op, pt_cpu_row_fn *row);
pt_status pt_cpu_creation(const pt_op *op, bool run);    /* exec_creation.c: FILL, ARANGE */
pt_status pt_cpu_random(const pt_op *op, bool run);      /* exec_creation_random.c: RAND_* */
pt_status pt_cpu_reduce(const pt_op *op, bool run);      /* exec_reduce.c: SUM, MEAN, MAX, ARGMAX */
/* Writes elements [begin, begin + n) of a reduction's input, in the C order
 * of its contiguous [outer, r, inner], to dst. */
typedef void (*pt_cpu_fill_fn)(void *ctx, int64_t begin, int64_t n, char *dst);
/* The same reduction with its input made by fill (a fused chain's last
 * value, never stored) in pieces of at most pt_cpu_reduce_region(op)
 * elements a thread, reduced in the eager kernel's order: the same bits. */
pt_status pt_cpu_reduce_filled(const pt_op *op, pt_cpu_fill_fn fill, void *ctx, bool run);
int64_t pt_cpu_reduce_region(const pt_op *op);
/* exec_fused.c: FUSED, a graph's element-wise chain run block by block */
pt_status pt_cpu_fused(const pt_op *op, bool run);
pt_status pt_cpu_softmax(const pt_op *op, bool run);     /* exec_softmax.c: SOFTMAX, LOG_SOFTMAX */
pt_status pt_cpu_matmul(const pt_op *op, bool run);      /* exec_matmul.c: MATMUL */
/* Makes OpenBLAS single-threaded: matmul threads it through the OpenMP team
 * instead (exec_matmul.c), so two pools never spin against each other. */
void pt_cpu_blas_init(void);
/* Which library runs f32 products (exec_matmul_choice.c): oneDNN's sgemm when
 * OpenBLAS chose kernels older than the CPU (or PORTABLE_CPU_GEMM=onednn),
 * else OpenBLAS. Chosen once, at plugin load; the note is for the device's
 * platform line ("" when OpenBLAS runs them). */
extern bool pt_cpu_gemm_onednn;
void pt_cpu_gemm_choose(void);
const char *pt_cpu_gemm_note(void);
/* C = alpha op(A) op(B) + beta C, row-major, through oneDNN on the calling
 * thread; false when oneDNN refused. */
bool pt_cpu_onednn_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                         int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
/* exec_matmul_gemm.c: C = alpha op(A) op(B) + beta C, row-major, on the
 * calling thread (oneDNN or OpenBLAS as chosen above for f32, OpenBLAS for
 * f64, a loop without BLAS); ld* are leading dimensions in elements. M or N
 * 0: nothing. */
void pt_cpu_gemm_f32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                     const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
void pt_cpu_gemm_f64(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double *A, int64_t lda,
                     const double *B, int64_t ldb, double beta, double *C, int64_t ldc);
pt_status pt_cpu_index_op(const pt_op *op, bool run);    /* exec_index.c: GATHER, ONE_HOT */
pt_status pt_cpu_embedding(const pt_op *op, bool run);   /* exec_index_embedding.c: EMBEDDING, EMBEDDING_BACKWARD */
pt_status pt_cpu_window(const pt_op *op, bool run);      /* exec_window.c: IM2COL, COL2IM */
pt_status pt_cpu_max_pool(const pt_op *op, bool run);    /* exec_window_pool.c: MAX_POOL2D, _INDEX, MAX_UNPOOL2D */
/* exec_conv.c: CONV2D, CONV2D_BWD_DATA, CONV2D_BWD_WEIGHT (oneDNN; scratch from
 * device dev's allocator) */
pt_status pt_cpu_conv(int dev, const pt_op *op, bool run);
pt_status pt_cpu_channel_stats(const pt_op *op, bool run); /* exec_norm.c: CHANNEL_STATS */
pt_status pt_cpu_attention(const pt_op *op, bool run); /* exec_attention.c: ATTENTION, ATTENTION_BACKWARD */

#endif
