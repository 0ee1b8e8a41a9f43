/* libportable CUDA backend — state and helpers shared by the host-side C
 * files. Nothing here leaves the plugin (hidden visibility).
 *
 * Symbol prefix: ptcu_ (every non-static name, the kernels' C launchers of
 * kernels.h included).
 *
 * The files follow the backends' one skeleton (docs/backends.md). Calls run
 * down this list and form no circle between files (lint_backend_layout);
 * the one that goes up is admission's probe kernel (device.c ->
 * kernels_probe.cu), which calls nothing back:
 *   plugin.c          entry point and vtable (entries keep the caller's device)
 *   exec.c            supports/execute: dispatch by op family
 *   exec_elementwise.c element-wise and creation ops, strided copies
 *   exec_reduce.c, exec_softmax.c, exec_index.c, exec_window.c  launch records
 *   exec_matmul.c     cuBLAS calls (FP32 by default, TF32 on request)
 *   exec_matmul_plan.c MATMUL operands -> cuBLAS column-major arguments (pure C)
 *   exec_conv.c       the CONV kinds: im2col / col2im + cuBLAS, chunked
 *   exec_attention.c  the ATTENTION kinds: tiled kernels, the backward's delta buffer
 *   kernels_*.cu      the kernels and their C launchers (kernels.h)
 *   launch.c          the stream: synchronize, markers, cuBLAS handle, shutdown
 *   launch_graph.c    graphs captured per op into one CUDA graph, launched per replay
 *   launch_stamps.c   trace stamps; launch_geometry.c iteration spaces (pure C)
 *   memory.c          alloc/free, pinned host memory, copies, scratch
 *   device.c          init (graceful absence), bring-up on first use, device_info
 *   device_arch.c, device_driver_version.c  pure C helpers of admission
 *   errors.c          every error message (CUDA, cuBLAS, unsupported ops, launches)
 */
#ifndef PTCU_INTERNAL_H
#define PTCU_INTERNAL_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <pthread.h>

#include "kernels.h"
#include "portable/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most devices one process drives; more are ignored with a log line. */
#define PTCU_MAX_DEVICES 64

typedef struct ptcu_device {
    int ordinal;                  /* CUDA device number */
    /* Brought up on first use (ptcu_select): the primary context, the kernel
     * image check, the stream, the occupancy figures. A process using one
     * GPU of eight creates one context, not eight. 0: not tried, 1: up,
     * -1: failed (why says why; every later call fails the same way).
     * Read and written with __atomic builtins (this header is C and C++). */
    int up;
    pthread_mutex_t up_lock;
    char why[512];
    cudaStream_t stream;          /* non-blocking: every op and copy of this device */
    int sm_count;
    int cc_major, cc_minor;
    char name[256];
    char pci[32];                 /* "0000:65:00.0" */
    char uuid[48];                /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
    int64_t shared_per_block;     /* cudaDeviceProp.sharedMemPerBlock */
    int64_t shared_optin;         /* cudaDevAttrMaxSharedMemoryPerBlockOptin (>= shared_per_block) */
    int max_threads_per_block;
    int64_t total_memory;
    /* Guards the lazily created cuBLAS handle, the scratch buffer and the
     * peer-access flags. Element-wise launches touch none of them. */
    pthread_mutex_t lock;
    cublasHandle_t blas;          /* NULL until the first MATMUL */
    cudaStream_t blas_stream;     /* the stream blas queues on: stream, or a graph's capture stream */
    bool tf32;                    /* PORTABLE_CUDA_TF32, read when the handle is made */
    void *workspace;              /* cuBLAS's workspace (cublasSetWorkspace) */
    void *workspace_block;        /* its block in the core's caching allocator */
    void *scratch;                /* reduction partials, matmul operand copies */
    void *scratch_block;          /* its block in the core's caching allocator (NULL: cudaMalloc) */
    size_t scratch_bytes;
    bool peer_tried[PTCU_MAX_DEVICES];
    /* Trace stamps (launch_stamps.c): an event recorded on the idle stream
     * and the host time just before, under clock_lock; NULL until the
     * first. A lock of its own: the core reads stamps while it waits for
     * the device, and it waits from inside ops that hold lock (a scratch
     * allocation that collects the cache first). */
    pthread_mutex_t clock_lock;
    cudaEvent_t clock_anchor;
    int64_t clock_anchor_ns;
} ptcu_device;

/* cuBLAS's workspace per device (cublasSetWorkspace): NVIDIA's figure for
 * Hopper, enough for every GEMM algorithm cuBLAS picks there. */
#define PTCU_CUBLAS_WORKSPACE ((size_t)32 << 20)

/* ---- Devices (device.c) ---- */

int ptcu_device_total(void);
/* Device dev of this plugin (0..device_count-1); the core never passes
 * another index. */
ptcu_device *ptcu_dev(int dev);

/* Makes d current on this thread (cudaSetDevice only when it is not),
 * bringing d up first if this is its first use; what names the caller in
 * the error. The vtable entries (plugin.c) put the caller's current
 * device back when they return. */
pt_status ptcu_select(ptcu_device *d, const char *what);

/* The calling thread's current CUDA device, and putting it back (only to a
 * device whose context exists: see device.c). */
typedef struct ptcu_caller_device {
    int ordinal;
    bool known;
} ptcu_caller_device;
ptcu_caller_device ptcu_caller_now(void);
void ptcu_caller_restore(ptcu_caller_device c);

/* The vtable's device members; init finds what is there (graceful absence). */
pt_status ptcu_vt_init(void);
int ptcu_vt_device_count(void);
const char *ptcu_vt_unavailable_reason(void);
pt_status ptcu_vt_device_info(int dev, pt_device_props *out);
/* At shutdown, once every device's queue is torn down (launch.c): no devices. */
void ptcu_devices_forget(void);

/* Whether the kernels compiled for codes (CMake CUDA_ARCHITECTURES words,
 * "80-real 90-real 90-virtual") run on compute capability major.minor;
 * true for lists it cannot judge ("native"). Pure C (device_arch.c). */
bool ptcu_architecture_fits(const char *codes, int major, int minor);

/* The driver version ("580.159.04") in line, the first line of
 * /proc/driver/nvidia/version, into out; false (out empty) when the line
 * holds none or it does not fit cap. Pure C (device_driver_version.c). */
bool ptcu_parse_nvrm_version(const char *line, char *out, size_t cap);

/* ---- Errors (errors.c) ---- */

/* The host API the core gave us at entry. */
extern const pt_host_api *ptcu_host;

/* Records e as the reason for the status returned: PT_ERR_OUT_OF_MEMORY for
 * cudaErrorMemoryAllocation, PT_ERR_UNSUPPORTED for cudaErrorNotSupported,
 * PT_ERR_BACKEND otherwise; the message is "<what>: <cudaGetErrorName>
 * (<cudaGetErrorString>)". Clears the runtime's last (non-sticky) error. */
pt_status ptcu_cuda_error(cudaError_t e, const char *what_fmt, ...) PT_PRINTF(2, 3);
pt_status ptcu_blas_error(cublasStatus_t s, const char *what_fmt, ...) PT_PRINTF(2, 3);
/* Records the formatted message as the reason for s and returns s. */
pt_status ptcu_fail(pt_status s, const char *fmt, ...) PT_PRINTF(2, 3);
/* The message this thread's last failure recorded ("" before any): what a
 * graph's log line quotes when an op could not be captured. */
const char *ptcu_last_failure(void);
/* PT_ERR_UNSUPPORTED naming op's kind and dtypes (or its unknown kind). */
pt_status ptcu_unsupported(const pt_op *op);
/* PT_OK for cudaSuccess; otherwise ptcu_cuda_error naming op's kernel. */
pt_status ptcu_launch_error(cudaError_t e, const pt_op *op);

/* ---- Memory (memory.c) ---- */

/* Device scratch of at least bytes, valid for work queued on d's stream
 * until the next call (callers hold d->lock), from the core's caching
 * allocator: growing hands the old block back without waiting (the
 * allocator reuses it only for work queued later on the same stream). */
pt_status ptcu_scratch(ptcu_device *d, size_t bytes, void **out);

/* The cuBLAS handle of d (launch.c), created on first use, bound to the
 * stream this thread queues d's work on (ptcu_stream), with a
 * PTCU_CUBLAS_WORKSPACE workspace from the caching allocator (callers
 * hold d->lock and have selected d). product (a MATMUL or CONV) is described in the
 * error when the handle cannot be made. */
pt_status ptcu_blas(ptcu_device *d, cublasHandle_t *out, const pt_op *product);
/* Moves d's cuBLAS handle (if made) to stream, setting its workspace again
 * (cublasSetStream drops it); callers hold d->lock. */
cublasStatus_t ptcu_blas_follow(ptcu_device *d, cudaStream_t stream);

/* bytes of d's memory for one op's own use (a convolution's columns), from
 * the core's caching allocator (cudaMalloc without one): *ptr, and *block
 * for ptcu_temp_free. Work queued before the free may still use it. */
pt_status ptcu_temp_alloc(ptcu_device *d, size_t bytes, void **ptr, void **block);
void ptcu_temp_free(ptcu_device *d, void *ptr, void *block);

/* At shutdown, after the cuBLAS handle is destroyed and d's stream has
 * drained: hands the scratch and the workspace back to whoever gave them
 * (the core's caching allocator, or cudaFree). */
void ptcu_scratch_release(ptcu_device *d);

/* ---- Graph recording (memory.c keeps the state, launch_graph.c sets it) ---- */

/* Device memory a graph's op uses at every replay (scratch, temporaries):
 * blocks from device_alloc, given back at ptcu_held_release. */
typedef struct ptcu_held_block {
    void *ptr, *block;
} ptcu_held_block;
typedef struct ptcu_held {
    ptcu_held_block *blocks;
    int n, cap;
} ptcu_held;

/* From now on, this thread's kernels for d go to stream (a capture) and the
 * memory its ops take for themselves goes into held; d NULL ends it. */
void ptcu_record_into(const ptcu_device *d, cudaStream_t stream, ptcu_held *held);
/* The stream this thread queues d's work on: d->stream, or the capture
 * stream while it records for d. Every kernel and copy of an op goes there. */
cudaStream_t ptcu_stream(const ptcu_device *d);
/* Gives h's blocks back (work queued before may still use them: the
 * caching allocator hands them out only to work queued after). */
void ptcu_held_release(ptcu_device *d, ptcu_held *h);

/* ---- Graphs as CUDA graphs (launch_graph.c) ----
 * Each op of a graph is captured alone (stream capture on the graph's own
 * stream, so other threads' eager work on the device's stream stays out)
 * into a child graph; the children form one chain, instantiated once and
 * launched on the device's stream. An op whose scalars change between
 * replays is captured again and its child swapped in the executable graph
 * (cudaGraphExecChildGraphNodeSetParams). */

typedef struct ptcu_graph_op {
    cudaGraphNode_t node;         /* its child in the chain; NULL: it queued nothing */
    ptcu_held held;               /* device memory its kernels use at every replay */
} ptcu_graph_op;

typedef struct ptcu_graph {
    cudaStream_t stream;          /* the capture stream (nothing runs on it) */
    cudaGraph_t graph;            /* the chain of children */
    cudaGraphExec_t exec;         /* NULL until ptcu_graph_finish */
    cudaGraphNode_t last;         /* the chain's end */
    int32_t n_ops;
    size_t n_nodes;               /* kernels and copies in all children */
    ptcu_graph_op *ops;
    bool per_op;                  /* an update was refused: replays run op by op since */
} ptcu_graph;

/* An empty graph of n_ops ops on d (selected). */
pt_status ptcu_graph_new(ptcu_device *d, int32_t n_ops, ptcu_graph **out);
/* Starts capturing this thread's work for d into a new child whose memory
 * goes to held; ptcu_record_end ends it, given what running the op
 * returned, with the child (NULL when it queued nothing) and its size. A
 * failure is the reason the capture cannot be used (ptcu_last_failure). */
pt_status ptcu_record_begin(ptcu_device *d, ptcu_graph *g, ptcu_held *held);
pt_status ptcu_record_end(ptcu_device *d, ptcu_graph *g, pt_status ran, cudaGraph_t *child, size_t *n_nodes);
/* Appends op i's child (taking it) to the chain; then, once every op is
 * in, instantiates the chain. */
pt_status ptcu_graph_append(ptcu_graph *g, int32_t i, cudaGraph_t child, size_t n_nodes);
pt_status ptcu_graph_finish(ptcu_graph *g);
/* Swaps op i's child for child (taken) with its memory fresh (taken; the
 * old goes back in queue order); PT_ERR_UNSUPPORTED when CUDA refuses. */
pt_status ptcu_graph_update(ptcu_device *d, ptcu_graph *g, int32_t i, cudaGraph_t child, size_t n_nodes,
                            ptcu_held *fresh);
/* Queues one replay on d's stream. */
pt_status ptcu_graph_enqueue(ptcu_device *d, ptcu_graph *g);
/* The vtable's graph_destroy (d selected by the caller). */
void ptcu_graph_free(ptcu_device *d, ptcu_graph *g);

/* ---- Element-wise geometry (launch_geometry.c, pure C) ---- */

/* Builds l->geo, l->numel and l->contiguous from the operands' common shape
 * (out.ndim, out.shape) and each operand's strides, as they are: the core
 * sends element-wise operands with their dimensions already merged
 * (backend.h). */
void ptcu_geometry_build(const pt_operand *out, const pt_operand *in, int n_inputs,
                         ptcu_ew_launch *l);

/* ---- MATMUL planning (exec_matmul_plan.c, pure C) ---- */

typedef enum ptcu_layout {
    PTCU_ROW_MAJOR,               /* element (i, j) at i * ld + j */
    PTCU_COL_MAJOR,               /* element (i, j) at i + j * ld */
    PTCU_NEEDS_COPY               /* neither: make a contiguous row-major copy first */
} ptcu_layout;

typedef struct ptcu_matrix_layout {
    ptcu_layout layout;
    int64_t ld;
} ptcu_matrix_layout;

/* How a rows x cols matrix with element strides (s_row, s_col) can be handed
 * to BLAS. A dim of extent 1 ignores its stride. */
ptcu_matrix_layout ptcu_matrix_layout_of(int64_t rows, int64_t cols, int64_t s_row, int64_t s_col);

/* The cuBLAS (column-major) call computing row-major C[M, N] = A[M, K] B[K, N]
 * as C^T = B^T A^T: cuBLAS's first operand is B, its second A. */
typedef struct ptcu_gemm_args {
    bool trans_first, trans_second;     /* CUBLAS_OP_T when true */
    int64_t m, n, k;                    /* cuBLAS m = N, n = M, k = K */
    int64_t ld_first, ld_second, ld_out;
} ptcu_gemm_args;

/* a and b must not be PTCU_NEEDS_COPY. */
ptcu_gemm_args ptcu_gemm_args_for(int64_t M, int64_t N, int64_t K, ptcu_matrix_layout a,
                                  ptcu_matrix_layout b);

/* One cuBLAS product, row-major c[M, N] = a[M, K] b[K, N] (+ c when
 * accumulate) for batch matrices sa, sb, sc elements apart, a and b in the
 * given layouts (not PTCU_NEEDS_COPY), c with leading dimension N. dtype is
 * the inputs'; c is of it, or f32 when out_f32 (16-bit inputs only). */
typedef struct ptcu_gemm_call {
    pt_dtype dtype;
    bool out_f32, accumulate;
    int64_t batch, M, N, K;
    const void *a, *b;
    void *c;
    ptcu_matrix_layout la, lb;
    int64_t sa, sb, sc;
} ptcu_gemm_call;

/* ---- Ops (exec*.c) ---- */

/* Device address of operand o's element [0, ..., 0]. */
static inline void *ptcu_operand_ptr(const pt_operand *o) { return (char *)o->buf + o->offset; }

pt_status ptcu_supports(const pt_op *op);
pt_status ptcu_execute(ptcu_device *d, const pt_op *op);
/* A supported CREATION or ELEMENTWISE op, d selected. */
/* ---- Op families (exec_<family>*.c) ---- */

pt_status ptcu_elementwise(ptcu_device *d, const pt_op *op);
pt_status ptcu_reduce(ptcu_device *d, const pt_op *op);
pt_status ptcu_softmax(ptcu_device *d, const pt_op *op);
pt_status ptcu_index(ptcu_device *d, const pt_op *op);
pt_status ptcu_matmul(ptcu_device *d, const pt_op *op);
/* c's product on d's stream (caller holds d->lock, d selected); op (the
 * MATMUL or CONV being run) names the call in errors. */
pt_status ptcu_gemm(ptcu_device *d, const ptcu_gemm_call *c, const pt_op *op);
/* A supported WINDOW op, d selected. */
pt_status ptcu_window(ptcu_device *d, const pt_op *op);
/* An ATTENTION-family descriptor's reason for refusal (ptcu_fail
 * recorded), or PT_OK (exec_attention.c). */
pt_status ptcu_attention_supports(const pt_op *op);
/* A supported ATTENTION or ATTENTION_BACKWARD op, d selected. */
pt_status ptcu_attention(ptcu_device *d, const pt_op *op);
/* A CONV descriptor's reason for refusal (ptcu_fail recorded), or PT_OK:
 * the shapes backend.h allows, in cuBLAS's 32-bit sizes. */
pt_status ptcu_conv_supports(const pt_op *op);
/* A supported CONV op, d selected. */
pt_status ptcu_conv(ptcu_device *d, const pt_op *op);
/* Queues a strided copy of operand src into dst (contiguous, same dtype). */
pt_status ptcu_copy_contiguous(ptcu_device *d, const pt_operand *src, void *dst);

/* ---- vtable members (memory.c, launch.c, exec.c; see backend.h) ---- */

/* Tears down every device's cuBLAS handle, scratch, stamps and stream. */
void ptcu_vt_shutdown(void);

pt_status ptcu_vt_alloc(int dev, size_t bytes, void **buf);
void ptcu_vt_free(int dev, void *buf);
pt_status ptcu_vt_memory_info(int dev, int64_t *free_bytes, int64_t *total_bytes);
pt_status ptcu_vt_host_alloc(int dev, size_t bytes, void **ptr);
void ptcu_vt_host_free(int dev, void *ptr);
pt_status ptcu_vt_copy_h2d(int dev, void *dst, size_t dst_offset, const void *src, size_t bytes,
                           bool async);
pt_status ptcu_vt_copy_d2h(int dev, void *dst, const void *src, size_t src_offset, size_t bytes,
                           bool async);
pt_status ptcu_vt_copy_d2d(int dev, void *dst, size_t dst_offset, const void *src, size_t src_offset,
                           size_t bytes);
pt_status ptcu_vt_copy_peer(int dst_dev, void *dst, size_t dst_offset, int src_dev, const void *src,
                            size_t src_offset, size_t bytes);
pt_status ptcu_vt_synchronize(int dev);
/* A new event of the given flags recorded on d's stream (d selected). */
pt_status ptcu_record_event(ptcu_device *d, unsigned flags, const char *what, cudaEvent_t *out);
pt_status ptcu_vt_marker_record(int dev, void **marker);
bool ptcu_vt_marker_passed(int dev, void *marker);
void ptcu_vt_marker_release(int dev, void *marker);
/* Trace stamps (launch_stamps.c): timing events mapped to the host clock. */
pt_status ptcu_vt_stamp_record(int dev, void **stamp);
pt_status ptcu_vt_stamp_time(int dev, void *stamp, int64_t *ns);
void ptcu_vt_stamp_release(int dev, void *stamp);
pt_status ptcu_vt_supports(int dev, const pt_op *op);
pt_status ptcu_vt_execute(int dev, const pt_op *op);
/* Graph replay as CUDA graphs (exec.c over launch_graph.c), unless
 * PORTABLE_CUDA_GRAPHS=off or an op cannot be captured. */
pt_status ptcu_vt_graph_instantiate(int dev, const pt_op *ops, int32_t n_ops, void **graph);
pt_status ptcu_vt_graph_launch(int dev, void *graph, const pt_op *ops, int32_t n_ops, const int32_t *changed,
                               int32_t n_changed);
void ptcu_vt_graph_destroy(int dev, void *graph);

/* The [outer, r, inner] view of a reduce or softmax operand. */
static inline ptcu_axis_view ptcu_axis_view_of(const pt_operand *x) {
    const ptcu_axis_view v = {x->shape[0], x->shape[1], x->shape[2], x->strides[0], x->strides[1], x->strides[2]};
    return v;
}

#ifdef __cplusplus
}
#endif
#endif
