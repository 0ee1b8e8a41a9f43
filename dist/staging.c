/* Accelerator tensors (OpenCL, and CUDA without NCCL or CUDA-aware MPI)
 * through host memory. The host side is a pinned block from the core
 * (pt_to_async to the cpu lands in page-locked memory where the backend has
 * it), kept per dtype and reused. All-reduce and broadcast go in chunks
 * through a pipeline: a helper thread copies chunk i+1 down from the device
 * and chunk i-1 back up while this thread has MPI move chunk i, so the
 * device copies hide behind the transfer. Only this thread calls MPI
 * (MPI_THREAD_FUNNELED); only the helper touches the device tensor. */
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

static int64_t chunk_bytes(void) {
    const char *v = getenv("PORTABLE_DIST_CHUNK_BYTES");
    long long b = v ? atoll(v) : 0;
    return b >= 16 ? b : 4 << 20; /* tiny chunks only for tests of the pipeline */
}

typedef struct pipeline {
    pt_tensor *dev_flat, *host_flat; /* the device tensor and its host copy, 1-D */
    char *host;
    size_t esize;
    int64_t n, chunk;
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

/* One chunk down (device -> host) or up (host -> device). */
static pt_status move_chunk(pipeline *p, int i, bool down) {
    pt_scope s = pt_scope_begin();
    int64_t first = (int64_t)i * p->chunk, len = chunk_len(p, i);
    pt_tensor *d = pt_narrow(p->dev_flat, 0, first, len);
    pt_status st;
    if (down) st = d ? pt_to_host(d, p->host + (size_t)first * p->esize, (size_t)len * p->esize) : pt_last_status();
    else st = pt_copy_(d, pt_narrow(p->host_flat, 0, first, len));
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
    int64_t first = (int64_t)i * p->chunk, len = chunk_len(p, i);
    void *q = p->host + (size_t)first * p->esize;
    int rc = root >= 0 ? MPI_Bcast(q, (int)len, pt__mpi_type(t), root, g->comm)
                       : MPI_Allreduce(MPI_IN_PLACE, q, (int)len, pt__mpi_type(t), pt__mpi_op(op, t), g->comm);
    if (rc != MPI_SUCCESS) return pt__mpi_failed(fn, root >= 0 ? "MPI_Bcast" : "MPI_Allreduce", rc);
    if (root < 0 && op == PT_REDUCE_AVG) pt__divide(q, t, len, g->size);
    return PT_OK;
}

pt_status pt__staged_in_place(pt_dist *g, const char *fn, pt_tensor *c, pt_reduce_op op, int root) {
    pt_dtype t = pt_tensor_dtype(c);
    pipeline p = {.esize = pt_dtype_size(t), .n = pt_tensor_numel(c)};
    void *host;
    pt_tensor *stage = pt__stage(g, pt_tensor_device(c), t, p.n, &host);
    if (!stage) return pt_last_status();
    int64_t flat[1] = {p.n};
    p.dev_flat = pt_reshape(c, 1, flat);
    p.host_flat = pt_narrow(stage, 0, 0, p.n);
    if (!p.dev_flat || !p.host_flat) return pt_last_status();
    p.host = host;
    p.chunk = chunk_bytes() / (int64_t)p.esize;
    if (p.chunk > PT__MPI_MAX_COUNT) p.chunk = PT__MPI_MAX_COUNT;
    p.chunks = (int)((p.n + p.chunk - 1) / p.chunk);
    bool is_root = root == g->rank;
    p.downloads = root < 0 || is_root ? p.chunks : 0;
    p.uploads_wanted = root < 0 || !is_root ? p.chunks : 0;
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    pthread_t thread;
    bool threaded = p.chunks > 1 && pthread_create(&thread, NULL, helper, &p) == 0;

    pt_status mpi_status = PT_OK;
    for (int i = 0; i < p.chunks; ++i) {
        if (threaded) {
            pthread_mutex_lock(&p.mu);
            while (p.downloaded <= i && i < p.downloads) pthread_cond_wait(&p.cv, &p.mu);
            pthread_mutex_unlock(&p.mu);
        } else if (i < p.downloads && !p.status) {
            p.status = move_chunk(&p, i, true);
        }
        /* Every rank makes every MPI call even after a failure of its own,
         * so no other rank waits for ever. */
        pt_status s = mpi_chunk(g, fn, &p, t, i, op, root);
        if (s && !mpi_status) mpi_status = s;
        if (threaded) {
            pthread_mutex_lock(&p.mu);
            p.reduced = i + 1;
            pthread_cond_broadcast(&p.cv);
            pthread_mutex_unlock(&p.mu);
        } else if (i < p.uploads_wanted && !p.status && !mpi_status) {
            p.status = move_chunk(&p, i, false);
        }
    }
    if (threaded) pthread_join(thread, NULL);
    pthread_mutex_destroy(&p.mu);
    pthread_cond_destroy(&p.cv);
    if (mpi_status) return mpi_status;
    if (p.status && threaded) return pt_set_error(p.status, fn, "copying through host memory: %s", p.message);
    return p.status;
}
