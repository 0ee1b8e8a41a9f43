/* libportable-dist internals shared by the sources in dist/. Nothing here is exported.
 *
 * The library is built on the core's public API only (portable.h), plus
 * MPI and, at run time, NCCL. */
#ifndef PORTABLE_DIST_INTERNAL_H
#define PORTABLE_DIST_INTERNAL_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "portable/dist.h"
#include "portable/portable.h"

typedef struct pt__nccl pt__nccl; /* nccl.c: one communicator per group, made at first use */

struct pt_dist {
    MPI_Comm comm;        /* duplicate of MPI_COMM_WORLD, MPI_ERRORS_RETURN */
    int rank, size, local_rank, local_size;
    char launcher[16];
    bool owns_mpi;        /* pt_dist_init called MPI_Init_thread */
    int thread_level;     /* MPI_Query_thread: MPI_THREAD_MULTIPLE lets pt_ddp use its own thread */
    bool skip_header;     /* pt_dist_set_header_check(g, false): no exchange before collectives */
    pt_device *device;    /* pt_dist_device's answer, once found */
    pt__nccl *nccl;       /* NULL until a cuda tensor needs it */
    bool nccl_tried;
    /* Pinned host staging per dtype for accelerator tensors: a cpu tensor
     * from pt_to_async (pinned where the backend has it), reused and grown. */
    pt_tensor *stage[8];
    int64_t stage_elems[8];
};

/* ---- mpi_util.c ---- */
/* MPI datatype of a dtype (MPI_DATATYPE_NULL for an unknown one). */
MPI_Datatype pt__mpi_type(pt_dtype t);
/* MPI_SUM or MPI_MAX for op (AVG sums; the caller divides). */
MPI_Op pt__mpi_op(pt_reduce_op op, pt_dtype t);
/* f16/bf16 (mpi_half.c): 16-bit types and ops that reduce in f32. */
MPI_Datatype pt__mpi_half_type(pt_dtype t);
MPI_Op pt__mpi_half_op(pt_reduce_op op);
void pt__divide_half(uint16_t *p, bool bf16, int64_t count, int n);
/* Turns an MPI error code into PT_ERR_BACKEND with MPI's text. */
pt_status pt__mpi_failed(const char *fn, const char *call, int code);
/* x[i] /= n for count elements of dtype t at p (AVG after a SUM). */
void pt__divide(void *p, pt_dtype t, int64_t count, int n);
/* The largest element count one MPI call takes (its count is an int). */
#define PT__MPI_MAX_COUNT ((int64_t)1 << 30)

/* ---- header.c ---- */
typedef enum pt__coll_kind {
    PT__COLL_ALL_REDUCE = 1,
    PT__COLL_BROADCAST,
    PT__COLL_ALL_GATHER,
    PT__COLL_REDUCE_SCATTER,
    PT__COLL_DDP_LAYOUT,
    PT__COLL_BARRIER,    /* no tensor */
    PT__COLL_SET_CHECK,  /* pt_dist_set_header_check; no tensor */
    PT__COLL_DDP_NEW     /* pt_ddp_new's parameter count; no tensor */
} pt__coll_kind;
/* Exchanges (kind, dtype, shape, op, root) among all ranks and checks every
 * rank matches rank 0. On a mismatch every rank returns PT_ERR_SHAPE /
 * PT_ERR_DTYPE / PT_ERR_INVALID_ARGUMENT naming both ranks' values. local is
 * this rank's own verdict on its arguments (checked before the exchange):
 * when it is not PT_OK (x may then be NULL) every rank fails, this one with
 * its own message, the others naming it. */
pt_status pt__check_header(pt_dist *g, const char *fn, pt__coll_kind kind, const pt_tensor *x, int op,
                           int root, pt_status local);
/* The same for a collective that takes no tensor (barrier and the set-up
 * calls): every collective names itself in the exchange, so a rank in a
 * barrier and another in an all-reduce both fail instead of waiting for
 * ever. */
pt_status pt__check_header_no_tensor(pt_dist *g, const char *fn, pt__coll_kind kind);
/* After a public function failed inside public function fn (a DDP step's
 * pt_copy_, pt_ddp_new's pt_dist_broadcast): makes the last error read
 * "fn: <the inner message>", keeping its status, which it returns. */
pt_status pt__dist_error_as(const char *fn);
/* c /= world size on c's device (integers truncate), for device-side sums. */
pt_status pt__divide_on_device(pt_dist *g, pt_tensor *c);
/* Whether d's memory is host memory (the cpu backend). */
bool pt__host_device(const pt_device *d);

/* ---- staging.c: accelerator tensors through pinned host memory ---- */
/* The host staging buffer for at least n elements of dtype t owned by
 * device dev (pinned when dev's backend can pin), as a cpu tensor and its
 * address. NULL + error. */
pt_tensor *pt__stage(pt_dist *g, pt_device *dev, pt_dtype t, int64_t n, void **host);
/* All-reduce (op) or broadcast (root >= 0, op ignored) of a contiguous
 * accelerator tensor c in place, through the staging buffer, in chunks: a
 * helper thread copies chunk i+1 down and chunk i-1 up while MPI moves
 * chunk i. */
pt_status pt__staged_in_place(pt_dist *g, const char *fn, pt_tensor *c, pt_reduce_op op, int root);
/* All-gather (gather: small -> big) or reduce-scatter (big -> small) of
 * accelerator tensors through the staging buffer, in chunks of each rank's
 * block, pipelined the same way; big is [world, ...small]. Non-contiguous
 * tensors go through contiguous copies on their device. */
pt_status pt__staged_stacked(pt_dist *g, const char *fn, bool gather, pt_tensor *big, pt_tensor *small,
                             pt_reduce_op op);

/* ---- collectives.c: trace spans (pt_trace_span) ---- */
/* Whether a trace is being written: then the time now, else 0. The one
 * branch a collective pays when tracing is off. */
static inline int64_t pt__dist_trace_start(void) { return pt_trace_active() ? pt_trace_clock_ns() : 0; }
/* The span of collective fn (begun at t0, ranks met at t_met: the header
 * exchange, or the barrier itself, is where a rank waits for the others)
 * on the "collectives" row of x's device (without x: the group's device
 * once pt_dist_device chose it, else the cpu). */
void pt__dist_trace_collective(pt_dist *g, const char *fn, const pt_tensor *x, int64_t t0, int64_t t_met,
                               pt_status s);
/* pt_trace_span that leaves the last error as it was. */
void pt__dist_trace_span(pt_device *dev, const char *row, const char *name, int64_t t0, int64_t t1,
                         const char *args);

/* ---- nccl.c ---- */
/* Whether cuda tensors of g can go through NCCL (loads it at first call;
 * false when libnccl.so.2 or libcudart are absent or PORTABLE_DIST_NCCL=0). */
bool pt__nccl_usable(pt_dist *g, pt_device *dev);
/* The collectives on contiguous cuda tensors. kind as in header.c. */
pt_status pt__nccl_collective(pt_dist *g, const char *fn, pt__coll_kind kind, pt_tensor *out,
                              pt_tensor *in, pt_reduce_op op, int root);
void pt__nccl_free(pt__nccl *n);
/* Whether Open MPI says it takes CUDA device pointers. */
bool pt__mpi_cuda_aware(void);

#endif
