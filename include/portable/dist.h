/** @file
 * libportable-dist — training on many processes and machines over MPI
 * (and NCCL for CUDA tensors). A separate library, libportable-dist.so,
 * built when Open MPI's development files are present; the core
 * (libportable.so) does not depend on MPI. See docs/distributed.md.
 *
 *   mpirun -np 4 ./train              (one machine)
 *   mpirun -np 8 --hostfile hosts ./train
 *   srun -n 8 ./train                 (SLURM, with Open MPI's PMIx support)
 *
 * Conventions are the core's: functions returning pt_status give PT_OK or
 * the error's status with the thread's last error set (pt_last_error), naming
 * the function, the values and the fix. MPI errors come back as statuses
 * (the library's communicator uses MPI_ERRORS_RETURN), never an abort.
 * Every collective is called by every rank of the group, in the same order,
 * from the thread that called pt_dist_init (MPI_THREAD_FUNNELED). */
#ifndef PORTABLE_DIST_H
#define PORTABLE_DIST_H

#include "nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @name Process group */
/** @{ */

/** A process group: opaque, made by pt_dist_init, freed by pt_dist_finalize. */
typedef struct pt_dist pt_dist;

/** What the launcher told this process through its environment, before MPI is
 * asked: Open MPI's mpirun (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK), SLURM's
 * srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID), or neither ("none":
 * rank 0 of 1). Fields are -1 when the launcher does not say. */
typedef struct pt_dist_env {
    char launcher[16]; /**< "mpirun", "srun" or "none" */
    int rank;          /**< this process's index, 0..world_size-1 */
    int world_size;    /**< number of processes */
    int local_rank;    /**< index among the processes on this machine */
} pt_dist_env;

/** Reads the launcher's variables. PT_ERR_INVALID_ARGUMENT for NULL out, or
 * a variable that is not a non-negative integer (named with its value). */
PT_API pt_status pt_dist_read_env(pt_dist_env *out);

/** Joins the process group of every process the launcher started: initialises
 * MPI (MPI_Init_thread, FUNNELED) unless the application already did, and
 * works on a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN. argc/argv
 * may be NULL. Checks that MPI's rank and size agree with the launcher's
 * variables (PT_ERR_INTERNAL naming both when they do not). NULL + error on
 * failure. Free with pt_dist_finalize. */
PT_API pt_dist *pt_dist_init(int *argc, char ***argv);
/** Frees the group; finalises MPI when pt_dist_init initialised it. NULL is
 * fine. */
PT_API void pt_dist_finalize(pt_dist *g);

PT_API int pt_dist_rank(const pt_dist *g);        /**< 0..world_size-1; -1 for NULL */
PT_API int pt_dist_world_size(const pt_dist *g);  /**< -1 for NULL */
/** This process's index among the group's processes on its machine
 * (from MPI's shared-memory split, checked against the
 * launcher's local rank where it gives one). */
PT_API int pt_dist_local_rank(const pt_dist *g);
/** Number of the group's processes on this machine; -1 for NULL. */
PT_API int pt_dist_local_size(const pt_dist *g);
/** "mpirun", "srun" or "none" (see pt_dist_env). */
PT_API const char *pt_dist_launcher(const pt_dist *g);
/** The device this process should train on: `cuda:<local rank>` where CUDA has
 * devices (local rank modulo their number, with a warning, when there are
 * more processes than GPUs on the machine), else pt_default_device()
 * (PORTABLE_BACKEND). NULL + error when that device is absent. */
PT_API pt_device *pt_dist_device(pt_dist *g);

/** @} */
/** @name Collectives
 *
 * On tensors of any backend and dtype, contiguous or not (a non-contiguous
 * tensor goes through a contiguous copy on its device). cpu tensors go to
 * MPI directly; cuda tensors through NCCL when libnccl.so.2 can be loaded
 * (PORTABLE_DIST_NCCL=0 turns that off), else through CUDA-aware MPI where
 * Open MPI reports it; every other device's tensors are staged through
 * pinned host memory in chunks, the device copies of one chunk overlapping
 * the transfer of the next.
 *
 * Before each collective the ranks exchange a small header (collective,
 * dtype, shape, op, root): a rank whose tensor differs from rank 0's makes
 * every rank return PT_ERR_SHAPE (or PT_ERR_DTYPE) with a message naming
 * both ranks' tensors; no rank enters the collective, so nothing hangs. */
/** @{ */
/** How pt_dist_all_reduce and pt_dist_reduce_scatter combine the ranks'
 * tensors. */
typedef enum pt_reduce_op {
    PT_REDUCE_SUM = 0, /**< element-wise sum */
    PT_REDUCE_AVG, /**< sum / world size; integer dtypes truncate towards zero */
    PT_REDUCE_MAX  /**< element-wise maximum */
} pt_reduce_op;

/** Turns the header exchange before each collective off (on false) or back
 * on. It costs one small MPI_Allgather per collective: a few microseconds,
 * but also one more rendezvous of all ranks, which on a loaded machine is
 * one more chance for a rank to be descheduled (bench/results/dist.md). Off,
 * a collective is the bare MPI call (plus, for accelerator tensors, its
 * staging), like PyTorch's default; but nothing then checks that the ranks
 * agree: a shape, dtype, op or root that differs between ranks, or a rank
 * that rejects its own arguments and returns early, is MPI's to detect, and
 * may make the other ranks wait for ever or read past the smaller buffer.
 * Turn it off only around collectives known to match (e.g. after the
 * first, checked, iterations of a training loop). Collective: every rank
 * calls it with the same value (PT_ERR_INVALID_ARGUMENT on every rank, and
 * no change, when they differ; also for a NULL group). pt_ddp's buckets never
 * go through the exchange; pt_ddp_new's broadcasts do (made while it is on,
 * they check the layout once). */
PT_API pt_status pt_dist_set_header_check(pt_dist *g, bool on);

/** x = op over ranks of x, in place. Waits for the result. */
PT_API pt_status pt_dist_all_reduce(pt_dist *g, pt_tensor *x, pt_reduce_op op);
/** x = root's x on every rank, in place. Waits. */
PT_API pt_status pt_dist_broadcast(pt_dist *g, pt_tensor *x, int root);
/** out = every rank's in stacked along a new first dim: out [world, ...in's
 * shape], same dtype and device as in. Waits. */
PT_API pt_status pt_dist_all_gather(pt_dist *g, pt_tensor *out, pt_tensor *in);
/** in [world, ...out's shape]: out = op over ranks of in[rank], same dtype and
 * device. Waits. */
PT_API pt_status pt_dist_reduce_scatter(pt_dist *g, pt_tensor *out, pt_tensor *in, pt_reduce_op op);
/** Waits until every rank has called it. */
PT_API pt_status pt_dist_barrier(pt_dist *g);

/** @} */
/** @name Data-parallel training
 *
 * Like torch.nn.parallel.DistributedDataParallel: every rank holds the same
 * module; pt_ddp_new broadcasts rank 0's parameters to all ranks; during each
 * pt_backward the gradients are averaged over the ranks in buckets of at most
 * bucket_bytes: the gradient-ready hook (nn.h) of a bucket's last parameter
 * packs it and hands it to the communication while backward goes on, so
 * the all-reduces hide behind the rest of the backward pass. The
 * communication runs on a thread of the wrapper's own (blocking
 * MPI_Allreduce on its own communicator) when MPI gives
 * MPI_THREAD_MULTIPLE (pt_dist_init asks for it), else as MPI_Iallreduce
 * poked by every hook call. pt_ddp_step waits for the buckets one by one,
 * in the order they finish, writes each one's averages into its
 * parameters' gradients and steps those parameters at once
 * (pt_optimizer_step_params) while later buckets are still moving. Buckets
 * hold parameters in reverse order (the order backward finishes them), one
 * dtype and device each, and are started in that order on every rank.
 * Buffers (state-dict entries without gradients: batch norm's running
 * statistics) are in no bucket; each sync broadcasts rank 0's to every
 * rank (PyTorch's broadcast_buffers), so they too are identical on every
 * rank after every step. */
/** @{ */
/** A data-parallel wrapper of a module: opaque, made by pt_ddp_new, freed by
 * pt_ddp_free. */
typedef struct pt_ddp pt_ddp;

/** The bucket size pt_ddp_new uses for 0: 25 MiB, PyTorch DDP's default. */
#define PT_DDP_DEFAULT_BUCKET_BYTES (25u << 20)

/** Wraps m (borrowed: it must outlive the wrapper; do not move it with
 * pt_module_to afterwards). Its parameters must exist (run one forward pass
 * first for lazy linears) and agree in number, shapes and dtypes on every
 * rank (PT_ERR_SHAPE naming both ranks otherwise). bucket_bytes 0 means
 * PT_DDP_DEFAULT_BUCKET_BYTES. Waits for the broadcast. NULL + error. */
PT_API pt_ddp *pt_ddp_new(pt_dist *g, pt_module *m, size_t bucket_bytes);
/** Waits for every bucket of the last backward, in start order, and writes
 * each one's rank average into its parameters' gradients as soon as it has
 * arrived, while later buckets are still moving (it starts those whose
 * gradients never became ready: a parameter without a gradient contributes
 * zeros and is left without one), and broadcasts rank 0's buffers. Call it
 * after pt_backward, before the update. A second synced backward before pt_ddp_sync makes that backward
 * return PT_ERR_INVALID_ARGUMENT: accumulate with pt_ddp_set_require_sync. */
PT_API pt_status pt_ddp_sync(pt_ddp *d);
/** pt_ddp_sync and pt_optimizer_step(opt) in one, bucket by bucket: each
 * bucket's parameters are stepped as soon as its averages have arrived, in
 * the order the buckets finish, while the later ones are still moving. The
 * result is bit for bit that of pt_ddp_sync then pt_optimizer_step (opt
 * must be an optimizer of the wrapped module). Every bucket is waited for
 * even after an error (so no rank is left waiting); nothing is stepped
 * after the first error, and the buckets stepped before it stay stepped.
 * PT_ERR_INVALID_ARGUMENT for a NULL wrapper or optimizer (a NULL
 * optimizer still syncs). */
PT_API pt_status pt_ddp_step(pt_ddp *d, pt_optimizer *opt);
/** Gradient accumulation (PyTorch's no_sync): with on false, backwards
 * only add into the local gradients; the next backward with it true again
 * averages the accumulated sums (turn it back on before the last backward
 * of the group, then pt_ddp_sync). PT_ERR_INVALID_ARGUMENT for NULL, or
 * for turning it off between a synced backward and its pt_ddp_sync. */
PT_API pt_status pt_ddp_set_require_sync(pt_ddp *d, bool on);
/** Whether the wrapper moves buckets on its own thread (false: the
 * MPI_Iallreduce fallback, or d NULL). */
PT_API bool pt_ddp_threaded(const pt_ddp *d);
/** The fraction (0..1) of the gradient elements whose all-reduce had
 * already finished when the last pt_ddp_sync was called, i.e. the part of
 * the communication that the backward pass hid (for tuning the bucket
 * size; -1 for NULL). */
PT_API double pt_ddp_overlap(const pt_ddp *d);
/** Number of buckets, and the parameters in bucket b (for tests and tuning;
 * -1 out of range). */
PT_API int pt_ddp_bucket_count(const pt_ddp *d);
/** Number of parameters in bucket b; -1 for NULL or b out of range. */
PT_API int pt_ddp_bucket_size(const pt_ddp *d, int b);
/** Removes the hooks and frees the buckets (not the module). NULL is fine. */
PT_API void pt_ddp_free(pt_ddp *d);

/** @} */
/** @name Sharded data
 *
 * This rank's sample indices for one epoch, like torch's DistributedSampler:
 * a permutation of 0..n-1 from seed (the same on every rank: pass the same
 * seed, e.g. base + epoch), padded by wrapping around to a multiple of the
 * world size, and rank r takes entries r, r + world, r + 2 world, ... So the
 * k-th samples of all ranks together are entries k*world .. k*world+world-1
 * of the permutation, and step s with batch B per rank covers the same
 * samples as single-process step s with batch B*world. Writes
 * min(count, cap) indices to out and returns count = ceil(n / world);
 * -1 + PT_ERR_INVALID_ARGUMENT for n < 1, a NULL group, or NULL out with
 * cap > 0. */
/** @{ */
/** This rank's indices for one epoch (the paragraph above). */
PT_API int64_t pt_dist_shard(const pt_dist *g, int64_t n, uint64_t seed, int64_t *out, int64_t cap);
/** The permutation itself (n entries), for a single-process reference run. */
PT_API pt_status pt_dist_permutation(int64_t n, uint64_t seed, int64_t *out);

/** @} */
#ifdef __cplusplus
}
#endif
#endif
