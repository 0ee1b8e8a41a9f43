/* Data-parallel training: rank 0's parameters broadcast at the start, then
 * each backward's gradients averaged over the ranks in size-capped buckets.
 * Buckets are filled in reverse parameter order, the order backward
 * finishes gradients, as PyTorch does. When the last gradient of a bucket
 * is final (the gradient-ready hook, nn.h), the hook packs the bucket into
 * its flat buffer and hands it to the communication, while backward goes on
 * with the layers below.
 *
 * The communication runs on a thread of the wrapper's own that makes
 * blocking MPI_Allreduce calls on a communicator of its own, one bucket after
 * another (what PyTorch's MPI process group and Horovod do): Open MPI has no
 * progress thread, so a non-blocking MPI_Iallreduce only moves while the
 * process is inside MPI, which the backward pass is not; Open MPI's
 * non-blocking all-reduce is also about twice as slow as the blocking one
 * for large buffers (libnbc against coll/tuned). That needs
 * MPI_THREAD_MULTIPLE; with an MPI that lacks it, buckets go out as
 * MPI_Iallreduce and each hook call pokes them with MPI_Test.
 *
 * Buckets are started strictly in index order (a ready bucket waits for the
 * ones before it), so every rank issues the same collectives in the same
 * order even if its hooks fire in another. pt_ddp_sync waits for them one
 * by one, unpacking each while the later ones are still on the wire;
 * pt_ddp_step also steps each bucket's parameters as soon as it has
 * arrived (pt_optimizer_step_params), in the order the buckets finish.
 *
 * Buffers (state-dict entries that take no gradient, such as batch norm's
 * running statistics) are not in any bucket: each rank's forward updates
 * them from its own batch, so pt_ddp_sync broadcasts rank 0's (PyTorch's
 * broadcast_buffers), keeping them identical on every rank after every
 * step. */
#include <pthread.h>
#include <time.h>

#include "dist_internal.h"

typedef struct ddp_param {
    pt_ddp *d;
    pt_tensor *p;        /* borrowed from the module */
    int bucket;
    int64_t offset, numel;
    bool ready;          /* its hook fired since the last sync */
} ddp_param;

typedef struct bucket {
    pt_dtype t;
    pt_device *dev;
    int first, count;    /* d->params[first .. first + count) */
    int64_t numel;
    pt_tensor *flat;     /* the bucket on the parameters' device */
    pt_tensor *host_t;   /* accelerators: pinned host copy (cpu: NULL, flat is host memory) */
    void *host;          /* what MPI reduces */
    int ready;           /* parameters whose gradient is final */
    pt_status pack;      /* packing failed on this rank (it still takes part) */
    bool launched;
    int64_t t_launch;    /* pt_trace_clock_ns when handed over; 0 when no trace is written */
    /* threaded: under d->mu */
    bool done;
    int rc;
    /* fallback: the non-blocking request */
    MPI_Request req;
} bucket;

struct pt_ddp {
    pt_dist *g;
    pt_module *m;
    int n, nb;
    ddp_param *params;   /* in bucket order (reverse of the module's) */
    pt_tensor **tensors; /* params[i].p, for pt_optimizer_step_params on a bucket */
    int nbuf;
    pt_tensor **buffers; /* borrowed: entries without gradients, broadcast from rank 0 at each sync */
    bucket *b;
    bool *handled;       /* per bucket, during a sync: waited for already */
    MPI_Request *reqs;   /* per bucket, fallback: MPI_Waitany's array */
    int next_launch;     /* buckets [0, next_launch) have been handed to MPI */
    bool require_sync;   /* pt_ddp_set_require_sync */
    bool hooks_fired;    /* some hook fired since the last sync */
    /* The communication thread (NULL thread_on: the MPI_Iallreduce fallback). */
    bool thread_on;
    MPI_Comm comm;       /* the thread's own: its collectives never meet the caller's */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t work, finished;
    int queued;          /* buckets [0, queued) handed to the thread, under mu */
    int started;         /* how many the thread has taken, under mu */
    bool stop;
    double overlap;      /* pt_ddp_overlap */
    int64_t row_end;     /* end of the last span on the "ddp buckets" row (written by one thread) */
};

/* ---- trace spans ---- */

/* Bucket i's span on its device's "ddp buckets" row, written when it has
 * completed, by the thread that moved it (the communication thread) or saw
 * it finish (the fallback's MPI_Waitany). It runs from when the bucket's
 * communication began (t_comm) to now; a bucket handed over while the one
 * before was still moving begins where that one ended, so the row's spans
 * never overlap, and queued_us says how long it waited since it was
 * launched. t_met: when the ranks had all reached it (0: not known). */
static void trace_bucket(pt_ddp *d, int i, int64_t t_comm, int64_t t_met, int rc) {
    bucket *b = &d->b[i];
    const int64_t end = pt_trace_clock_ns();
    int64_t begin = t_comm > d->row_end ? t_comm : d->row_end;
    if (begin > end) begin = end;
    d->row_end = end;
    char name[32], args[400];
    snprintf(name, sizeof name, "bucket %d", i);
    int n = snprintf(args, sizeof args,
                     "\"bucket\":%d,\"params\":%d,\"bytes\":%lld,\"dtype\":\"%s\",\"rank\":%d,"
                     "\"thread\":\"%s\",\"queued_us\":%.3f",
                     i, b->count, (long long)(b->numel * (int64_t)pt_dtype_size(b->t)), pt_dtype_name(b->t),
                     d->g->rank, d->thread_on ? "communication" : "main", (double)(begin - b->t_launch) / 1e3);
    if (t_met) n += snprintf(args + n, sizeof args - (size_t)n, ",\"wait_us\":%.3f", (double)(t_met - t_comm) / 1e3);
    if (rc != MPI_SUCCESS) snprintf(args + n, sizeof args - (size_t)n, ",\"status\":\"MPI error %d\"", rc);
    pt__dist_trace_span(b->dev, "ddp buckets", name, begin, end, args);
}

/* ---- the communication thread ---- */

/* Waits, mostly asleep, until every rank has reached the same bucket: an
 * MPI_Ibarrier tested with a growing nap in between. A rank that gets
 * there first would otherwise spin inside MPI_Allreduce (Open MPI polls)
 * on the core its own backward pass needs. */
static int wait_for_peers(MPI_Comm comm) {
    MPI_Request r;
    int rc = MPI_Ibarrier(comm, &r), flag = 0;
    long nap_ns = 5000;
    while (rc == MPI_SUCCESS) {
        rc = MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS || flag) break;
        nanosleep(&(struct timespec){0, nap_ns}, NULL);
        if (nap_ns < 200000) nap_ns *= 2;
    }
    return rc;
}

static void *comm_main(void *arg) {
    pt_ddp *d = arg;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (!d->stop && d->started == d->queued) pthread_cond_wait(&d->work, &d->mu);
        if (d->started == d->queued) break; /* stop, and nothing left to move */
        const int i = d->started++;
        bucket *b = &d->b[i];
        pthread_mutex_unlock(&d->mu);
        const int64_t t_comm = b->t_launch ? pt_trace_clock_ns() : 0;
        int rc = wait_for_peers(d->comm);
        const int64_t t_met = t_comm ? pt_trace_clock_ns() : 0;
        if (rc == MPI_SUCCESS)
            rc = MPI_Allreduce(MPI_IN_PLACE, b->host, (int)b->numel, pt__mpi_type(b->t), pt__mpi_op(PT_REDUCE_SUM, b->t), d->comm);
        if (rc == MPI_SUCCESS) pt__divide(b->host, b->t, b->numel, d->g->size); /* off the main thread */
        if (t_comm) trace_bucket(d, i, t_comm, t_met, rc);
        pthread_mutex_lock(&d->mu);
        b->rc = rc;
        b->done = true;
        pthread_cond_broadcast(&d->finished);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

/* ---- packing and starting buckets ---- */

/* Copies the bucket's gradients into its flat buffer (zeros for a parameter
 * without one) and, for accelerators, down into its pinned host block. */
static pt_status pack(pt_ddp *d, bucket *b) {
    pt_scope s = pt_scope_begin();
    pt_status st = PT_OK;
    for (int i = b->first; !st && i < b->first + b->count; ++i) {
        ddp_param *q = &d->params[i];
        pt_tensor *dst = pt_narrow(b->flat, 0, q->offset, q->numel);
        pt_tensor *g = pt_grad(q->p);
        int64_t flat[1] = {q->numel};
        st = g ? pt_copy_(dst, pt_reshape(g, 1, flat)) : pt_fill_(dst, 0.0);
    }
    if (!st) {
        if (b->host_t) st = pt_to_host(b->flat, b->host, (size_t)b->numel * pt_dtype_size(b->t));
        else st = pt_device_synchronize(b->dev);
    }
    pt_scope_end(s);
    return st;
}

/* Hands bucket b to MPI. Started even after a local packing failure: the
 * other ranks' all-reduce needs this rank's part (its gradients are then
 * wrong, and sync says so). */
static void start(pt_ddp *d, bucket *b) {
    b->launched = true;
    b->t_launch = pt__dist_trace_start();
    if (d->thread_on) {
        pthread_mutex_lock(&d->mu);
        b->done = false;
        d->queued = (int)(b - d->b) + 1;
        pthread_cond_signal(&d->work);
        pthread_mutex_unlock(&d->mu);
    } else {
        b->rc = MPI_Iallreduce(MPI_IN_PLACE, b->host, (int)b->numel, pt__mpi_type(b->t), pt__mpi_op(PT_REDUCE_SUM, b->t), d->g->comm,
                               &b->req);
    }
}

/* Starts, in index order, every bucket from next_launch on whose
 * gradients are all final (all of them when force). */
static void start_ready(pt_ddp *d, bool force) {
    while (d->next_launch < d->nb) {
        bucket *b = &d->b[d->next_launch];
        if (!force && b->ready < b->count) break;
        if (force && b->ready < b->count) b->pack = pack(d, b); /* not packed by a hook */
        start(d, b);
        d->next_launch++;
    }
}

/* Fallback only: lets MPI move the requests in flight (Open MPI progresses
 * non-blocking collectives inside MPI calls only). */
static void poke(pt_ddp *d) {
    for (int i = 0; i < d->next_launch; ++i) {
        int done;
        if (d->b[i].req != MPI_REQUEST_NULL) MPI_Test(&d->b[i].req, &done, MPI_STATUS_IGNORE);
    }
}

static pt_status grad_ready(pt_tensor *leaf, void *user) {
    static const char fn[] = "pt_backward (pt_ddp hook)";
    (void)leaf;
    ddp_param *q = user;
    pt_ddp *d = q->d;
    if (!d->require_sync) {
        if (d->hooks_fired)
            return pt_set_error(PT_ERR_INVALID_ARGUMENT, fn,
                                "a backward without sync (pt_ddp_set_require_sync false) while the buckets of "
                                "the last backward are still unsynced: call pt_ddp_sync first");
        return PT_OK; /* gradients accumulate locally; the next synced backward averages the sum */
    }
    if (q->ready)
        return pt_set_error(PT_ERR_INVALID_ARGUMENT, fn,
                            "a second backward before pt_ddp_sync: call pt_ddp_sync (or pt_ddp_step) after "
                            "every backward, or accumulate gradients over several backwards by running all "
                            "but the last with pt_ddp_set_require_sync(d, false)");
    q->ready = true;
    d->hooks_fired = true;
    bucket *b = &d->b[q->bucket];
    pt_status s = PT_OK;
    if (++b->ready == b->count) {
        s = b->pack = pack(d, b);
        start_ready(d, false);
    }
    if (!d->thread_on) poke(d);
    return s;
}

/* ---- waiting ---- */

/* The next bucket to finish among those not yet handled (handled[i]
 * false), waiting for one when none has; its all-reduce's MPI result in
 * *rc (the average is in place on the host side). Threaded: the thread
 * finishes them in index order. Fallback: MPI_Waitany, which lets MPI move
 * all of them while waiting. -1 when every bucket has been handled. */
static int next_finished(pt_ddp *d, const bool *handled, int *rc) {
    int found = -1;
    if (d->thread_on) {
        pthread_mutex_lock(&d->mu);
        for (;;) {
            bool left = false;
            for (int i = 0; i < d->nb && found < 0; ++i) {
                if (handled[i]) continue;
                left = true;
                if (d->b[i].done) found = i;
            }
            if (found >= 0 || !left) break;
            pthread_cond_wait(&d->finished, &d->mu);
        }
        if (found >= 0) *rc = d->b[found].rc;
        pthread_mutex_unlock(&d->mu);
        return found;
    }
    /* An MPI_Iallreduce that failed to start has nothing to wait for. */
    for (int i = 0; i < d->nb; ++i)
        if (!handled[i] && d->b[i].rc != MPI_SUCCESS) {
            *rc = d->b[i].rc;
            return i;
        }
    bool left = false;
    for (int i = 0; i < d->nb; ++i) {
        d->reqs[i] = handled[i] ? MPI_REQUEST_NULL : d->b[i].req;
        left = left || !handled[i];
    }
    if (!left) return -1;
    *rc = MPI_Waitany(d->nb, d->reqs, &found, MPI_STATUS_IGNORE);
    if (found == MPI_UNDEFINED) { /* cannot happen: an unhandled bucket's request is live */
        found = -1;
        for (int i = 0; i < d->nb && found < 0; ++i)
            if (!handled[i]) found = i;
    } else {
        d->b[found].req = MPI_REQUEST_NULL;
    }
    if (found >= 0 && *rc == MPI_SUCCESS) pt__divide(d->b[found].host, d->b[found].t, d->b[found].numel, d->g->size);
    return found;
}

/* Writes bucket b's averages into its parameters' gradients. */
static pt_status unpack(pt_ddp *d, bucket *b) {
    pt_scope s = pt_scope_begin();
    pt_status st = PT_OK;
    if (b->host_t) st = pt_copy_(b->flat, pt_narrow(b->host_t, 0, 0, b->numel));
    for (int k = b->first; !st && k < b->first + b->count; ++k) {
        ddp_param *q = &d->params[k];
        pt_tensor *g = pt_grad(q->p);
        if (g)
            st = pt_copy_(g, pt_reshape(pt_narrow(b->flat, 0, q->offset, q->numel), pt_tensor_ndim(q->p),
                                        pt_tensor_shape(q->p)));
    }
    pt_scope_end(s);
    return st;
}

/* The share of the gradients whose all-reduce has already finished (what
 * backward hid), for pt_ddp_overlap. */
static double finished_share(pt_ddp *d) {
    int64_t done = 0, total = 0;
    for (int i = 0; i < d->nb; ++i) {
        bucket *b = &d->b[i];
        bool finished = false;
        if (b->launched && d->thread_on) {
            pthread_mutex_lock(&d->mu);
            finished = b->done;
            pthread_mutex_unlock(&d->mu);
        } else if (b->launched && b->req != MPI_REQUEST_NULL) {
            int flag = 0;
            MPI_Request_get_status(b->req, &flag, MPI_STATUS_IGNORE);
            finished = flag;
        }
        done += finished ? b->numel : 0;
        total += b->numel;
    }
    return total ? (double)done / (double)total : 0;
}

/* rank 0's buffers to every rank (on the group's communicator; the
 * buckets use the thread's own, or are non-blocking). */
static pt_status broadcast_buffers(pt_ddp *d) {
    pt_status st = PT_OK;
    for (int i = 0; i < d->nbuf; ++i) {
        pt_status s = pt_dist_broadcast(d->g, d->buffers[i], 0);
        if (s && !st) st = s;
    }
    return st;
}

/* pt_ddp_sync (opt NULL) and pt_ddp_step: every bucket is waited for, in
 * the order they finish, so that no rank leaves one behind; with an
 * optimizer, each bucket's parameters are stepped as soon as its averages
 * are in their gradients, while later buckets are still moving. After the
 * first failure nothing more is stepped (the buckets stepped before it
 * stay stepped), but the waiting goes on. */
static pt_status sync_and_step(pt_ddp *d, pt_optimizer *opt) {
    d->overlap = finished_share(d);
    start_ready(d, true);
    pt_status st = broadcast_buffers(d); /* moves while the last buckets do */
    bool *handled = d->handled;
    for (int i = 0; i < d->nb; ++i) handled[i] = false;
    for (int k = 0; k < d->nb; ++k) {
        int rc = MPI_SUCCESS;
        int i = next_finished(d, handled, &rc);
        if (i < 0) break;
        handled[i] = true;
        bucket *b = &d->b[i];
        b->launched = false;
        if (!d->thread_on && b->t_launch) trace_bucket(d, i, b->t_launch, 0, rc);
        pt_status s = rc != MPI_SUCCESS
                          ? pt__mpi_failed(opt ? "pt_ddp_step" : "pt_ddp_sync",
                                           d->thread_on ? "MPI_Allreduce" : "MPI_Iallreduce", rc)
                          : b->pack;
        if (!s) s = unpack(d, b);
        if (!s && !st && opt) s = pt_optimizer_step_params(opt, d->tensors + b->first, b->count);
        if (s && !st) st = s;
        b->ready = 0;
        b->pack = PT_OK;
    }
    for (int i = 0; i < d->n; ++i) d->params[i].ready = false;
    d->next_launch = 0;
    if (d->thread_on) { /* every bucket is done: the thread is idle */
        pthread_mutex_lock(&d->mu);
        d->queued = d->started = 0;
        pthread_mutex_unlock(&d->mu);
    }
    d->hooks_fired = false;
    return st;
}

pt_status pt_ddp_sync(pt_ddp *d) {
    if (!d) return pt_set_error(PT_ERR_INVALID_ARGUMENT, "pt_ddp_sync", "wrapper is NULL");
    return sync_and_step(d, NULL) ? pt__dist_error_as("pt_ddp_sync") : PT_OK;
}

pt_status pt_ddp_step(pt_ddp *d, pt_optimizer *opt) {
    static const char fn[] = "pt_ddp_step";
    if (!d) return pt_set_error(PT_ERR_INVALID_ARGUMENT, fn, "wrapper is NULL");
    if (!opt) {
        /* Still synced, so the other ranks' buckets are not left waiting. */
        sync_and_step(d, NULL);
        return pt_set_error(PT_ERR_INVALID_ARGUMENT, fn, "optimizer is NULL (the gradients were synced, not applied)");
    }
    return sync_and_step(d, opt) ? pt__dist_error_as(fn) : PT_OK;
}

pt_status pt_ddp_set_require_sync(pt_ddp *d, bool on) {
    static const char fn[] = "pt_ddp_set_require_sync";
    if (!d) return pt_set_error(PT_ERR_INVALID_ARGUMENT, fn, "wrapper is NULL");
    if (!on && d->hooks_fired)
        return pt_set_error(PT_ERR_INVALID_ARGUMENT, fn,
                            "a synced backward ran and pt_ddp_sync has not: call pt_ddp_sync before turning "
                            "sync off");
    d->require_sync = on;
    return PT_OK;
}

/* ---- set-up ---- */

/* Broadcasts rank 0's parameters after checking every rank has as many
 * (each broadcast's header exchange checks shapes and dtypes). */
static pt_status broadcast_params(pt_dist *g, pt_tensor **ps, int n) {
    static const char fn[] = "pt_ddp_new";
    int *counts = malloc((size_t)g->size * sizeof *counts);
    if (!counts) return pt_set_error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    pt_status named = pt__check_header_no_tensor(g, fn, PT__COLL_DDP_NEW);
    if (named) {
        free(counts);
        return named;
    }
    int rc = MPI_Allgather(&n, 1, MPI_INT, counts, 1, MPI_INT, g->comm);
    pt_status s = rc == MPI_SUCCESS ? PT_OK : pt__mpi_failed(fn, "MPI_Allgather", rc);
    for (int r = 1; !s && r < g->size; ++r)
        if (counts[r] != counts[0])
            s = pt_set_error(PT_ERR_SHAPE, fn, "rank %d's module has %d parameters but rank 0's has %d (this is rank %d)",
                             r, counts[r], counts[0], g->rank);
    free(counts);
    for (int i = 0; !s && i < n; ++i) s = pt_dist_broadcast(g, ps[i], 0);
    return s ? pt__dist_error_as(fn) : PT_OK;
}

/* Splits the parameters (already in reverse order) into buckets and makes
 * their buffers. */
static pt_status make_buckets(pt_ddp *d, size_t cap) {
    static const char fn[] = "pt_ddp_new";
    d->b = calloc((size_t)d->n + 1, sizeof *d->b);
    if (!d->b) return pt_set_error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    for (int i = 0; i < d->n; ++i) {
        ddp_param *q = &d->params[i];
        bucket *b = d->nb ? &d->b[d->nb - 1] : NULL;
        size_t esize = pt_dtype_size(pt_tensor_dtype(q->p));
        if (!b || b->t != pt_tensor_dtype(q->p) || b->dev != pt_tensor_device(q->p) ||
            (size_t)(b->numel + q->numel) * esize > cap) {
            b = &d->b[d->nb++];
            *b = (bucket){.t = pt_tensor_dtype(q->p), .dev = pt_tensor_device(q->p), .first = i, .req = MPI_REQUEST_NULL};
        }
        q->bucket = (int)(b - d->b);
        q->offset = b->numel;
        b->numel += q->numel;
        b->count++;
    }
    /* The buffers are the wrapper's own: made in a scope of ours and
     * retained, so a scope of the caller's does not release them. */
    pt_scope scope = pt_scope_begin();
    pt_status s = PT_OK;
    for (int i = 0; !s && i < d->nb; ++i) {
        bucket *b = &d->b[i];
        if (b->numel > PT__MPI_MAX_COUNT) {
            s = pt_set_error(PT_ERR_UNSUPPORTED, fn, "bucket %d has %lld elements, more than one MPI call takes", i,
                             (long long)b->numel);
            break;
        }
        int64_t shape[1] = {b->numel};
        b->flat = pt_retain(pt_zeros(b->dev, b->t, 1, shape));
        if (!b->flat) {
            s = pt_last_status();
            break;
        }
        pt_tensor *host_side = b->flat;
        if (!pt__host_device(b->dev)) {
            b->host_t = pt_retain(pt_to_async(b->flat, pt_cpu())); /* a pinned block of the bucket's size */
            if (!b->host_t || pt_device_synchronize(b->dev)) {
                s = pt_last_status();
                break;
            }
            host_side = b->host_t;
        }
        void *buf;
        size_t off;
        s = pt_tensor_storage(host_side, &buf, &off);
        b->host = (char *)buf + off;
    }
    pt_scope_end(scope);
    return s;
}

/* The communication thread, where MPI allows it (PORTABLE_DIST_DDP_THREAD=0
 * forces the MPI_Iallreduce fallback, for its tests). Collective: every
 * rank must agree, else their all-reduces would go on different
 * communicators. */
static pt_status start_thread(pt_ddp *d) {
    static const char fn[] = "pt_ddp_new";
    static const char *const off_on[] = {"0", "1", NULL};
    int want = d->g->thread_level == MPI_THREAD_MULTIPLE &&
               pt_env_choice("PORTABLE_DIST_DDP_THREAD", off_on, 1) == 1,
        all = 0;
    int rc = MPI_Allreduce(&want, &all, 1, MPI_INT, MPI_MIN, d->g->comm);
    if (rc != MPI_SUCCESS) return pt__mpi_failed(fn, "MPI_Allreduce", rc);
    if (!all) return PT_OK;
    rc = MPI_Comm_dup(d->g->comm, &d->comm);
    if (rc != MPI_SUCCESS) return pt__mpi_failed(fn, "MPI_Comm_dup", rc);
    MPI_Comm_set_errhandler(d->comm, MPI_ERRORS_RETURN);
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->work, NULL);
    pthread_cond_init(&d->finished, NULL);
    int e = pthread_create(&d->thread, NULL, comm_main, d);
    if (e) {
        MPI_Comm_free(&d->comm);
        return pt_set_error(PT_ERR_BACKEND, fn, "pthread_create failed for the communication thread (error %d)", e);
    }
    d->thread_on = true;
    return PT_OK;
}

pt_ddp *pt_ddp_new(pt_dist *g, pt_module *m, size_t bucket_bytes) {
    static const char fn[] = "pt_ddp_new";
    if (!g || !m) {
        pt_set_error(PT_ERR_INVALID_ARGUMENT, fn, "%s is NULL", g ? "module" : "group");
        return NULL;
    }
    if (bucket_bytes == 0) bucket_bytes = PT_DDP_DEFAULT_BUCKET_BYTES;
    int n = pt_module_parameters(m, NULL, NULL, 0);
    if (n < 0) return NULL;
    pt_ddp *d = calloc(1, sizeof *d);
    const char **names = calloc((size_t)n + 1, sizeof *names);
    pt_tensor **ps = calloc((size_t)n + 1, sizeof *ps);
    if (d) {
        d->params = calloc((size_t)n + 1, sizeof *d->params);
        d->tensors = calloc((size_t)n + 1, sizeof *d->tensors);
        d->buffers = calloc((size_t)n + 1, sizeof *d->buffers);
    }
    pt_status s = d && names && ps && d->params && d->tensors && d->buffers ? PT_OK : pt_set_error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    if (!s) {
        d->g = g;
        d->m = m;
        d->n = n;
        d->require_sync = true;
        d->comm = MPI_COMM_NULL;
        pt_module_parameters(m, names, ps, n);
        for (int i = 0; !s && i < n; ++i)
            if (!ps[i])
                s = pt_set_error(PT_ERR_INVALID_ARGUMENT, fn,
                                 "parameter %s does not exist yet (a lazy linear makes it at its first forward): "
                                 "run one forward pass before pt_ddp_new",
                                 names[i]);
    }
    /* Every rank takes part in the broadcast, also one whose module is bad,
     * so that no rank waits for ever: a bad rank sends a count of -1. */
    if (d && d->params) {
        pt_status b = broadcast_params(g, ps, s ? -1 : n);
        if (!s) s = b;
    }
    /* Entries that take gradients go in buckets, in reverse order; the
     * others are buffers. */
    if (!s) d->n = 0;
    for (int i = n - 1; !s && i >= 0; --i) {
        if (!pt_requires_grad(ps[i])) {
            d->buffers[d->nbuf++] = ps[i];
            continue;
        }
        ddp_param *q = &d->params[d->n];
        q->d = d;
        q->p = d->tensors[d->n++] = ps[i];
        q->numel = pt_tensor_numel(q->p);
    }
    if (!s) s = make_buckets(d, bucket_bytes);
    if (!s) {
        d->handled = calloc((size_t)d->nb + 1, sizeof *d->handled);
        d->reqs = calloc((size_t)d->nb + 1, sizeof *d->reqs);
        if (!d->handled || !d->reqs) s = pt_set_error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    }
    if (!s) s = start_thread(d);
    for (int i = 0; !s && i < d->n; ++i) s = pt_set_grad_ready_hook(d->params[i].p, grad_ready, &d->params[i]);
    free(names);
    free(ps);
    if (s) {
        pt__dist_error_as(fn);
        pt_ddp_free(d);
        return NULL;
    }
    return d;
}

int pt_ddp_bucket_count(const pt_ddp *d) { return d ? d->nb : -1; }
int pt_ddp_bucket_size(const pt_ddp *d, int b) { return d && b >= 0 && b < d->nb ? d->b[b].count : -1; }
bool pt_ddp_threaded(const pt_ddp *d) { return d && d->thread_on; }
double pt_ddp_overlap(const pt_ddp *d) { return d ? d->overlap : -1; }

void pt_ddp_free(pt_ddp *d) {
    if (!d) return;
    for (int i = 0; d->params && i < d->n; ++i)
        if (d->params[i].p) pt_set_grad_ready_hook(d->params[i].p, NULL, NULL);
    if (d->thread_on) {
        /* The thread finishes what was handed to it (the other ranks wait
         * for this rank's part), then ends. */
        pthread_mutex_lock(&d->mu);
        d->stop = true;
        pthread_cond_signal(&d->work);
        pthread_mutex_unlock(&d->mu);
        pthread_join(d->thread, NULL);
        pthread_cond_destroy(&d->work);
        pthread_cond_destroy(&d->finished);
        pthread_mutex_destroy(&d->mu);
        MPI_Comm_free(&d->comm);
    }
    for (int i = 0; d->b && i < d->nb; ++i) {
        if (!d->thread_on && d->b[i].req != MPI_REQUEST_NULL) MPI_Wait(&d->b[i].req, MPI_STATUS_IGNORE);
        pt_release(d->b[i].flat);
        pt_release(d->b[i].host_t);
    }
    free(d->b);
    free(d->handled);
    free(d->reqs);
    free(d->tensors);
    free(d->buffers);
    free(d->params);
    free(d);
}
