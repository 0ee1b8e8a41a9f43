/* Accelerator tensors (OpenCL, and CUDA without NCCL or CUDA-aware MPI)
 * through host memory. The host side is a pinned block from the core
 * (pt_to_async to the cpu lands in page-locked memory where the backend has
 * it), kept per dtype and reused. Every collective goes in chunks through
 * a pipeline: a helper thread copies chunk i+1 down from the device and
 * chunk i-1 back up while this thread has MPI move chunk i, so the device
 * copies hide behind the transfer. All-reduce and broadcast chunk the
 * tensor itself. All-gather and reduce-scatter chunk each rank's block
 * (elements [i c, (i+1) c) of every rank's block make chunk i) and lay the
 * host buffer out chunk by chunk, [chunk][rank][c], so that each chunk is
 * one ordinary in-place MPI_Allgather / MPI_Reduce_scatter_block on
 * contiguous memory. Only this thread calls MPI
 * (pt_dist_init asks for MPI_THREAD_MULTIPLE for pt_ddp's own thread, which
 * never touches these buffers); only the helper touches the device tensor. */
#include <pthread.h>

#include "dist_internal.h"

pt_tensor *pt__stage(pt_dist *g, pt_device *dev, pt_dtype t, int64_t n, void **host) {
    if ((unsigned)t >= sizeof g->stage / sizeof g->stage[0]) {
        pt_set_error(PT_ERR_DTYPE, "pt_dist", "dtype %d has no staging buffer", (int)t);
        return NULL;
    }
    if (!g->stage[t] || g->stage_elems[t] < n) {
        pt_release(g->stage[t]);
        g->stage[t] = NULL;
        pt_scope s = pt_scope_begin();
        int64_t shape[1] = {n};
        /* The contents copied here are garbage; what matters is the pinned
         * landing block pt_to_async makes. */
        pt_tensor *h = pt_to_async(pt_empty(dev, t, 1, shape), pt_cpu());
        if (h && pt_device_synchronize(dev) == PT_OK) g->stage[t] = pt_retain(h); /* outlives the scope */
        pt_scope_end(s);
        if (!g->stage[t]) return NULL;
        g->stage_elems[t] = n;
    }
    void *buf;
    size_t off;
    if (pt_tensor_storage(g->stage[t], &buf, &off)) return NULL;
    *host = (char *)buf + off;
    return g->stage[t];
}

/* PORTABLE_DIST_CHUNK_BYTES, read once (a bad value is reported once);
 * tiny chunks only for tests of the pipeline. */
static int64_t chunk;
static void read_chunk_bytes(void) {
    chunk = pt_env_int("PORTABLE_DIST_CHUNK_BYTES", 16, (int64_t)1 << 40, 4 << 20);
}

static int64_t chunk_bytes(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, read_chunk_bytes);
    return chunk;
}

typedef enum pipe_kind { PIPE_IN_PLACE, PIPE_GATHER, PIPE_SCATTER } pipe_kind;

typedef struct pipeline {
    pipe_kind kind;
    /* in place: dev_flat is the tensor (1-D); gather: small_flat -> big_flat;
     * scatter: big_flat -> small_flat (device tensors, 1-D, contiguous) */
    pt_tensor *dev_flat, *small_flat, *big_flat;
    pt_tensor *host_flat;            /* the host buffer, 1-D */
    char *host;
    size_t esize;
    int rank, world;
    int64_t n, chunk;                /* n: the tensor's elements (in place) or one rank's block's (stacked) */
    int chunks;
    int downloads, uploads_wanted;   /* how many chunks go down / may come up */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int downloaded, reduced, uploaded; /* progress counters, under mu */
    bool stop;                       /* main gave up waiting (never set today: MPI failures still finish) */
    pt_status status;                /* the helper's first failure */
    char message[512];
} pipeline;

static int64_t chunk_len(const pipeline *p, int i) {
    int64_t first = (int64_t)i * p->chunk;
    return p->n - first < p->chunk ? p->n - first : p->chunk;
}

/* Where chunk i starts in the host buffer, in elements: in place, where
 * it is in the tensor; stacked, after the world blocks of the chunks
 * before it. */
static int64_t host_first(const pipeline *p, int i) {
    return (int64_t)i * p->chunk * (p->kind == PIPE_IN_PLACE ? 1 : p->world);
}

/* Elements [dev_first, +len) of device tensor d down to host elements
 * [host_first, +len), or back up. */
static pt_status move(pipeline *p, pt_tensor *d, int64_t dev_first, int64_t host_first, int64_t len, bool down) {
    pt_tensor *v = pt_narrow(d, 0, dev_first, len);
    if (!v) return pt_last_status();
    if (down) return pt_to_host(v, p->host + (size_t)host_first * p->esize, (size_t)len * p->esize);
    return pt_copy_(v, pt_narrow(p->host_flat, 0, host_first, len));
}

/* One chunk down (device -> host) or up (host -> device). */
static pt_status move_chunk(pipeline *p, int i, bool down) {
    pt_scope s = pt_scope_begin();
    int64_t first = (int64_t)i * p->chunk, len = chunk_len(p, i), at = host_first(p, i);
    pt_status st = PT_OK;
    if (p->kind == PIPE_IN_PLACE) {
        st = move(p, p->dev_flat, first, at, len, down);
    } else if (p->kind == PIPE_GATHER ? down : !down) { /* this rank's own piece: [rank] of the chunk, or its result at [0] */
        st = move(p, p->small_flat, first, at + (p->kind == PIPE_GATHER ? (int64_t)p->rank * len : 0), len, down);
    } else { /* every rank's piece of the chunk: up after a gather, down before a reduce-scatter */
        for (int r = 0; r < p->world && !st; ++r) st = move(p, p->big_flat, (int64_t)r * p->n + first, at + (int64_t)r * len, len, down);
    }
    pt_scope_end(s);
    return st;
}

static void *helper(void *arg) {
    pipeline *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        bool up = p->uploaded < p->uploads_wanted && p->uploaded < p->reduced;
        bool down = p->downloaded < p->downloads;
        if (!up && !down) {
            if (p->uploaded >= p->uploads_wanted || p->stop) break;
            pthread_cond_wait(&p->cv, &p->mu);
            continue;
        }
        int i = up ? p->uploaded : p->downloaded;
        pthread_mutex_unlock(&p->mu);
        /* After a failure keep counting (so MPI on the other ranks is not
         * left waiting for this one), but stop touching the device. */
        pt_status s = p->status ? p->status : move_chunk(p, i, !up);
        pthread_mutex_lock(&p->mu);
        if (s && !p->status) {
            p->status = s;
            snprintf(p->message, sizeof p->message, "%s", pt_last_error());
        }
        if (up) ++p->uploaded;
        else ++p->downloaded;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* MPI on chunk i of the host copy. */
static pt_status mpi_chunk(pt_dist *g, const char *fn, pipeline *p, pt_dtype t, int i, pt_reduce_op op, int root) {
    int len = (int)chunk_len(p, i);
    void *q = p->host + (size_t)host_first(p, i) * p->esize;
    MPI_Datatype mt = pt__mpi_type(t);
    int rc;
    const char *call;
    if (p->kind == PIPE_GATHER) {
        call = "MPI_Allgather";
        rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, q, len, mt, g->comm);
    } else if (p->kind == PIPE_SCATTER) {
        call = "MPI_Reduce_scatter_block";
        rc = MPI_Reduce_scatter_block(MPI_IN_PLACE, q, len, mt, pt__mpi_op(op, t), g->comm);
    } else if (root >= 0) {
        call = "MPI_Bcast";
        rc = MPI_Bcast(q, len, mt, root, g->comm);
    } else {
        call = "MPI_Allreduce";
        rc = MPI_Allreduce(MPI_IN_PLACE, q, len, mt, pt__mpi_op(op, t), g->comm);
    }
    if (rc != MPI_SUCCESS) return pt__mpi_failed(fn, call, rc);
    if (p->kind != PIPE_GATHER && root < 0 && op == PT_REDUCE_AVG) pt__divide(q, t, len, g->size);
    return PT_OK;
}

/* Runs p (set up but for its chunking) through MPI: chunk i's copies on the
 * helper thread while MPI moves the chunk next to it. */
static pt_status run(pt_dist *g, const char *fn, pipeline *p, pt_dtype t, pt_reduce_op op, int root) {
    p->chunk = chunk_bytes() / (int64_t)p->esize;
    if (p->chunk < 1) p->chunk = 1;
    if (p->chunk > PT__MPI_MAX_COUNT) p->chunk = PT__MPI_MAX_COUNT;
    p->chunks = (int)((p->n + p->chunk - 1) / p->chunk);
    bool is_root = root == g->rank;
    p->downloads = root < 0 || is_root ? p->chunks : 0;
    p->uploads_wanted = root < 0 || !is_root ? p->chunks : 0;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    pthread_t thread;
    bool threaded = p->chunks > 1 && pthread_create(&thread, NULL, helper, p) == 0;

    pt_status mpi_status = PT_OK;
    for (int i = 0; i < p->chunks; ++i) {
        if (threaded) {
            pthread_mutex_lock(&p->mu);
            while (p->downloaded <= i && i < p->downloads) pthread_cond_wait(&p->cv, &p->mu);
            pthread_mutex_unlock(&p->mu);
        } else if (i < p->downloads && !p->status) {
            p->status = move_chunk(p, i, true);
        }
        /* Every rank makes every MPI call even after a failure of its own,
         * so no other rank waits for ever. */
        pt_status s = mpi_chunk(g, fn, p, t, i, op, root);
        if (s && !mpi_status) mpi_status = s;
        if (threaded) {
            pthread_mutex_lock(&p->mu);
            p->reduced = i + 1;
            pthread_cond_broadcast(&p->cv);
            pthread_mutex_unlock(&p->mu);
        } else if (i < p->uploads_wanted && !p->status && !mpi_status) {
            p->status = move_chunk(p, i, false);
        }
    }
    if (threaded) pthread_join(thread, NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    if (mpi_status) return mpi_status;
    if (p->status && threaded) return pt_set_error(p->status, fn, "copying through host memory: %s", p->message);
    return p->status;
}

pt_status pt__staged_in_place(pt_dist *g, const char *fn, pt_tensor *c, pt_reduce_op op, int root) {
    pt_dtype t = pt_tensor_dtype(c);
    pipeline p = {.kind = PIPE_IN_PLACE, .esize = pt_dtype_size(t), .n = pt_tensor_numel(c), .rank = g->rank,
                  .world = g->size};
    void *host;
    pt_tensor *stage = pt__stage(g, pt_tensor_device(c), t, p.n, &host);
    if (!stage) return pt_last_status();
    int64_t flat[1] = {p.n};
    p.dev_flat = pt_reshape(c, 1, flat);
    p.host_flat = pt_narrow(stage, 0, 0, p.n);
    if (!p.dev_flat || !p.host_flat) return pt_last_status();
    p.host = host;
    return run(g, fn, &p, t, op, root);
}

pt_status pt__staged_stacked(pt_dist *g, const char *fn, bool gather, pt_tensor *big, pt_tensor *small,
                             pt_reduce_op op) {
    pt_dtype t = pt_tensor_dtype(small);
    pipeline p = {.kind = gather ? PIPE_GATHER : PIPE_SCATTER, .esize = pt_dtype_size(t), .n = pt_tensor_numel(small),
                  .rank = g->rank, .world = g->size};
    void *host;
    pt_tensor *stage = pt__stage(g, pt_tensor_device(small), t, p.n * g->size, &host);
    if (!stage) return pt_last_status();
    int64_t n_small[1] = {p.n}, n_big[1] = {p.n * g->size};
    pt_tensor *cb = pt_contiguous(big), *cs = pt_contiguous(small);
    p.big_flat = cb ? pt_reshape(cb, 1, n_big) : NULL;
    p.small_flat = cs ? pt_reshape(cs, 1, n_small) : NULL;
    p.host_flat = pt_narrow(stage, 0, 0, p.n * g->size);
    if (!p.big_flat || !p.small_flat || !p.host_flat) return pt_last_status();
    p.host = host;
    pt_status s = run(g, fn, &p, t, op, -1);
    /* the written tensor, when it was not contiguous: from its contiguous copy */
    pt_tensor *written = gather ? big : small, *copy = gather ? cb : cs;
    if (!s && copy != written) s = pt_copy_(written, copy);
    return s;
}
