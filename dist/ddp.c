/* Data-parallel training: rank 0's parameters broadcast at the start, then
 * each backward's gradients averaged over the ranks in size-capped buckets.
 * A bucket's MPI_Iallreduce starts from the gradient-ready hook (nn.h) of
 * the last of its parameters to finish, while backward goes on with the
 * layers below; pt_ddp_sync waits for them. Buckets are filled in reverse
 * parameter order, the order backward finishes gradients, as PyTorch does. */
#include "dist_internal.h"

typedef struct ddp_param {
    pt_ddp *d;
    pt_tensor *p;        /* borrowed from the module */
    int bucket;
    int64_t offset, numel;
} ddp_param;

typedef struct bucket {
    pt_dtype t;
    pt_device *dev;
    int first, count;    /* d->params[first .. first + count) */
    int64_t numel;
    pt_tensor *flat;     /* the bucket on the parameters' device */
    pt_tensor *host_t;   /* accelerators: pinned host copy (cpu: NULL, flat is host memory) */
    void *host;          /* what MPI reduces */
    int ready;
    bool launched;
    MPI_Request req;
} bucket;

struct pt_ddp {
    pt_dist *g;
    pt_module *m;
    int n, nb;
    ddp_param *params;   /* in bucket order (reverse of the module's) */
    bucket *b;
};

static pt_status launch(pt_ddp *d, bucket *b) {
    static const char fn[] = "pt_ddp (bucket launch)";
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
    /* Launched even after a local failure: the other ranks' all-reduce
     * needs this rank's part (its gradients are then wrong, and sync says so). */
    int rc = MPI_Iallreduce(MPI_IN_PLACE, b->host, (int)b->numel, pt__mpi_type(b->t), pt__mpi_op(PT_REDUCE_SUM, b->t), d->g->comm, &b->req);
    b->launched = true;
    if (rc != MPI_SUCCESS && !st) st = pt__mpi_failed(fn, "MPI_Iallreduce", rc);
    return st;
}

/* Lets MPI move the buckets in flight (Open MPI progresses non-blocking
 * collectives inside MPI calls). */
static void progress(pt_ddp *d) {
    for (int i = 0; i < d->nb; ++i) {
        int done;
        if (d->b[i].launched && d->b[i].req != MPI_REQUEST_NULL) MPI_Test(&d->b[i].req, &done, MPI_STATUS_IGNORE);
    }
}

static pt_status grad_ready(pt_tensor *leaf, void *user) {
    (void)leaf;
    ddp_param *q = user;
    pt_ddp *d = q->d;
    bucket *b = &d->b[q->bucket];
    if (b->launched)
        return pt_set_error(PT_ERR_INVALID_ARGUMENT, "pt_backward (pt_ddp hook)",
                            "a second backward before pt_ddp_sync: call pt_ddp_sync (or pt_ddp_step) after "
                            "every backward; accumulating gradients over several backwards is not supported");
    pt_status s = ++b->ready == b->count ? launch(d, b) : PT_OK;
    progress(d);
    return s;
}

pt_status pt_ddp_sync(pt_ddp *d) {
    static const char fn[] = "pt_ddp_sync";
    if (!d) return pt_set_error(PT_ERR_INVALID_ARGUMENT, fn, "wrapper is NULL");
    pt_status st = PT_OK;
    for (int i = 0; i < d->nb; ++i) {
        bucket *b = &d->b[i];
        if (!b->launched) {
            pt_status s = launch(d, b);
            if (s && !st) st = s;
        }
    }
    for (int i = 0; i < d->nb; ++i) {
        bucket *b = &d->b[i];
        int rc = MPI_Wait(&b->req, MPI_STATUS_IGNORE);
        b->launched = false;
        b->ready = 0;
        if (rc != MPI_SUCCESS && !st) st = pt__mpi_failed(fn, "MPI_Wait", rc);
        if (st) continue;
        pt__divide(b->host, b->t, b->numel, d->g->size);
        pt_scope s = pt_scope_begin();
        if (b->host_t) st = pt_copy_(b->flat, pt_narrow(b->host_t, 0, 0, b->numel));
        for (int k = b->first; !st && k < b->first + b->count; ++k) {
            ddp_param *q = &d->params[k];
            pt_tensor *g = pt_grad(q->p);
            if (g)
                st = pt_copy_(g, pt_reshape(pt_narrow(b->flat, 0, q->offset, q->numel), pt_tensor_ndim(q->p),
                                            pt_tensor_shape(q->p)));
        }
        pt_scope_end(s);
    }
    return st;
}

pt_status pt_ddp_step(pt_ddp *d, pt_optimizer *opt) {
    pt_status s = pt_ddp_sync(d);
    return s ? s : pt_optimizer_step(opt);
}

/* Broadcasts rank 0's parameters after checking every rank has as many
 * (each broadcast's header exchange checks shapes and dtypes). */
static pt_status broadcast_params(pt_dist *g, pt_tensor **ps, int n) {
    static const char fn[] = "pt_ddp_new";
    int *counts = malloc((size_t)g->size * sizeof *counts);
    if (!counts) return pt_set_error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    int rc = MPI_Allgather(&n, 1, MPI_INT, counts, 1, MPI_INT, g->comm);
    pt_status s = rc == MPI_SUCCESS ? PT_OK : pt__mpi_failed(fn, "MPI_Allgather", rc);
    for (int r = 1; !s && r < g->size; ++r)
        if (counts[r] != counts[0])
            s = pt_set_error(PT_ERR_SHAPE, fn, "rank %d's module has %d parameters but rank 0's has %d (this is rank %d)",
                             r, counts[r], counts[0], g->rank);
    free(counts);
    for (int i = 0; !s && i < n; ++i) s = pt_dist_broadcast(g, ps[i], 0);
    return s;
}

/* Splits the parameters (already in reverse order) into buckets and makes
 * their buffers. */
static pt_status make_buckets(pt_ddp *d, size_t cap) {
    static const char fn[] = "pt_ddp_new";
    d->b = calloc((size_t)d->n, sizeof *d->b);
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
    if (d) d->params = calloc((size_t)n + 1, sizeof *d->params);
    pt_status s = d && names && ps && d->params ? PT_OK : pt_set_error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    if (!s) {
        d->g = g;
        d->m = m;
        d->n = n;
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
    for (int i = 0; !s && i < n; ++i) {
        ddp_param *q = &d->params[i];
        q->d = d;
        q->p = ps[n - 1 - i];
        q->numel = pt_tensor_numel(q->p);
    }
    if (!s) s = make_buckets(d, bucket_bytes);
    for (int i = 0; !s && i < n; ++i) s = pt_set_grad_ready_hook(d->params[i].p, grad_ready, &d->params[i]);
    free(names);
    free(ps);
    if (s) {
        pt_ddp_free(d);
        return NULL;
    }
    return d;
}

int pt_ddp_bucket_count(const pt_ddp *d) { return d ? d->nb : -1; }
int pt_ddp_bucket_size(const pt_ddp *d, int b) { return d && b >= 0 && b < d->nb ? d->b[b].count : -1; }

void pt_ddp_free(pt_ddp *d) {
    if (!d) return;
    for (int i = 0; d->params && i < d->n; ++i)
        if (d->params[i].p) pt_set_grad_ready_hook(d->params[i].p, NULL, NULL);
    for (int i = 0; d->b && i < d->nb; ++i) {
        if (d->b[i].launched) MPI_Wait(&d->b[i].req, MPI_STATUS_IGNORE);
        pt_release(d->b[i].flat);
        pt_release(d->b[i].host_t);
    }
    free(d->b);
    free(d->params);
    free(d);
}
