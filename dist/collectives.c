/* The public collectives: argument checks, the header exchange, then one
 * of three paths by the tensor's device: host memory straight to MPI, cuda
 * through NCCL (or CUDA-aware MPI), anything else staged through pinned
 * host memory (staging.c). Non-contiguous tensors go through a contiguous
 * copy on their device and are written back with pt_copy_. */
#include "dist_internal.h"

bool pt__host_device(const pt_device *d) { return d && strncmp(pt_device_name(d), "cpu", 3) == 0; }

static bool is_cuda(const pt_device *d) { return d && strncmp(pt_device_name(d), "cuda", 4) == 0; }

static int64_t numel(const pt_tensor *x) { return pt_tensor_numel(x); }

/* Host address of contiguous cpu tensor c's first element, after its
 * device has finished writing it. */
static void *host_data(const char *fn, pt_tensor *c) {
    void *buf;
    size_t off;
    if (pt_device_synchronize(pt_tensor_device(c)) || pt_tensor_storage(c, &buf, &off)) return NULL;
    if (!buf && numel(c) > 0) pt_set_error(PT_ERR_INTERNAL, fn, "cpu tensor without memory");
    return (char *)buf + off;
}

/* The checks every collective shares: group, tensor, op. */
static pt_status check_common(const char *fn, pt_dist *g, const pt_tensor *x, int op) {
    if (!x) return pt_last_status() ? pt_last_status() : pt_set_error(PT_ERR_INVALID_ARGUMENT, fn, "tensor is NULL");
    if (op < PT_REDUCE_SUM || op > PT_REDUCE_MAX)
        return pt_set_error(PT_ERR_INVALID_ARGUMENT, fn, "op %d is not a pt_reduce_op (SUM, AVG or MAX)", op);
    if (pt__mpi_type(pt_tensor_dtype(x)) == MPI_DATATYPE_NULL)
        return pt_set_error(PT_ERR_DTYPE, fn, "dtype %s has no MPI type", pt_dtype_name(pt_tensor_dtype(x)));
    (void)g;
    return PT_OK;
}

pt_status pt__divide_on_device(pt_dist *g, pt_tensor *c) {
    pt_scope s = pt_scope_begin();
    pt_tensor *n = pt_full(pt_tensor_device(c), pt_tensor_dtype(c), 0, NULL, g->size);
    pt_status st = pt_copy_(c, pt_div(c, n));
    pt_scope_end(s);
    return st;
}

/* MPI on host memory p (count elements), in place, in pieces an int counts. */
static pt_status host_in_place(pt_dist *g, const char *fn, void *p, pt_dtype t, int64_t count, pt_reduce_op op,
                               int root) {
    size_t esize = pt_dtype_size(t);
    for (int64_t done = 0; done < count; done += PT__MPI_MAX_COUNT) {
        int n = (int)(count - done < PT__MPI_MAX_COUNT ? count - done : PT__MPI_MAX_COUNT);
        char *q = (char *)p + (size_t)done * esize;
        int rc = root >= 0 ? MPI_Bcast(q, n, pt__mpi_type(t), root, g->comm)
                           : MPI_Allreduce(MPI_IN_PLACE, q, n, pt__mpi_type(t), pt__mpi_op(op, t), g->comm);
        if (rc != MPI_SUCCESS) return pt__mpi_failed(fn, root >= 0 ? "MPI_Bcast" : "MPI_Allreduce", rc);
    }
    if (root < 0 && op == PT_REDUCE_AVG) pt__divide(p, t, count, g->size);
    return PT_OK;
}

/* All-reduce (root < 0) or broadcast (root >= 0) of x in place. */
static pt_status in_place(pt_dist *g, const char *fn, pt_tensor *x, pt_reduce_op op, int root) {
    pt_scope scope = pt_scope_begin();
    pt_tensor *c = pt_contiguous(x);
    pt_device *dev = pt_tensor_device(x);
    pt_dtype t = pt_tensor_dtype(x);
    pt_status s = c ? PT_OK : pt_last_status();
    if (!s && numel(c) > 0) {
        if (pt__host_device(dev)) {
            void *p = host_data(fn, c);
            s = p ? host_in_place(g, fn, p, t, numel(c), op, root) : pt_last_status();
        } else if (is_cuda(dev) && pt__nccl_usable(g, dev)) {
            s = pt__nccl_collective(g, fn, root >= 0 ? PT__COLL_BROADCAST : PT__COLL_ALL_REDUCE, c, c, op, root);
        } else if (is_cuda(dev) && pt__mpi_cuda_aware()) {
            void *p = host_data(fn, c); /* a device pointer here: MPI takes it */
            s = p ? host_in_place(g, fn, p, t, numel(c), op == PT_REDUCE_AVG ? PT_REDUCE_SUM : op, root)
                  : pt_last_status();
            if (!s && root < 0 && op == PT_REDUCE_AVG) s = pt__divide_on_device(g, c);
        } else {
            s = pt__staged_in_place(g, fn, c, op, root);
        }
    }
    if (!s && c != x) s = pt_copy_(x, c);
    pt_scope_end(scope);
    return s;
}

void pt__dist_trace_collective(pt_dist *g, const char *fn, const pt_tensor *x, int64_t t0, int64_t t_met,
                               pt_status s) {
    const int64_t t1 = pt_trace_clock_ns();
    /* Not pt_dist_device(g) without a tensor: choosing the device could
     * fail and set an error for a call that worked. */
    pt_device *dev = x ? pt_tensor_device(x) : g->device ? g->device : pt_cpu();
    if (!dev) return;
    char args[320];
    int n = snprintf(args, sizeof args, "\"fn\":\"%s\",\"rank\":%d,\"world\":%d,\"wait_us\":%.3f", fn, g->rank,
                     g->size, (double)(t_met - t0) / 1e3);
    if (x)
        n += snprintf(args + n, sizeof args - (size_t)n, ",\"dtype\":\"%s\",\"bytes\":%lld",
                      pt_dtype_name(pt_tensor_dtype(x)),
                      (long long)(numel(x) * (int64_t)pt_dtype_size(pt_tensor_dtype(x))));
    if (s) snprintf(args + n, sizeof args - (size_t)n, ",\"status\":\"%s\"", pt_status_name(s));
    pt__dist_trace_span(dev, "collectives", fn + strlen("pt_dist_"), t0, t1, args);
}

void pt__dist_trace_span(pt_device *dev, const char *row, const char *name, int64_t t0, int64_t t1,
                         const char *args) {
    /* The span is a record of the call, not part of it: its failure (the
     * trace's row names used up) must neither turn a call that worked into
     * an error nor replace the message of one that failed. */
    const pt_status keep = pt_last_status();
    char message[512] = "";
    if (keep) snprintf(message, sizeof message, "%s", pt_last_error());
    if (pt_trace_span(dev, row, name, t0, t1, args) == PT_OK) return;
    pt_clear_error();
    if (!keep) return;
    char *colon = strstr(message, ": "); /* the message is "fn: detail" */
    if (colon) *colon = '\0';
    pt_set_error(keep, message, "%s", colon ? colon + 2 : "");
}

pt_status pt_dist_all_reduce(pt_dist *g, pt_tensor *x, pt_reduce_op op) {
    static const char fn[] = "pt_dist_all_reduce";
    if (!g) return pt_set_error(PT_ERR_INVALID_ARGUMENT, fn, "group is NULL");
    const int64_t t0 = pt__dist_trace_start();
    pt_status s = pt__check_header(g, fn, PT__COLL_ALL_REDUCE, x, op, -1, check_common(fn, g, x, op));
    const int64_t met = t0 ? pt_trace_clock_ns() : 0;
    /* the copies run pt_contiguous and pt_copy_: their errors are this call's */
    if (!s) s = in_place(g, fn, x, op, -1) ? pt__dist_error_as(fn) : PT_OK;
    if (t0) pt__dist_trace_collective(g, fn, x, t0, met, s);
    return s;
}

pt_status pt_dist_broadcast(pt_dist *g, pt_tensor *x, int root) {
    static const char fn[] = "pt_dist_broadcast";
    if (!g) return pt_set_error(PT_ERR_INVALID_ARGUMENT, fn, "group is NULL");
    pt_status local = check_common(fn, g, x, PT_REDUCE_SUM);
    if (!local && (root < 0 || root >= g->size))
        local = pt_set_error(PT_ERR_INVALID_ARGUMENT, fn, "root %d is not a rank of this group (0..%d)", root,
                             g->size - 1);
    const int64_t t0 = pt__dist_trace_start();
    pt_status s = pt__check_header(g, fn, PT__COLL_BROADCAST, x, PT_REDUCE_SUM, root, local);
    const int64_t met = t0 ? pt_trace_clock_ns() : 0;
    /* the copies run pt_contiguous and pt_copy_: their errors are this call's */
    if (!s) s = in_place(g, fn, x, PT_REDUCE_SUM, root) ? pt__dist_error_as(fn) : PT_OK;
    if (t0) pt__dist_trace_collective(g, fn, x, t0, met, s);
    return s;
}

/* out must be [world, ...in] (gather) or in must be [world, ...out]
 * (scatter), same dtype and device. */
static pt_status check_stacked(const char *fn, pt_dist *g, const pt_tensor *big, const pt_tensor *small,
                               const char *big_name, const char *small_name) {
    if (!big || !small) return pt_set_error(PT_ERR_INVALID_ARGUMENT, fn, "%s or %s is NULL", big_name, small_name);
    char a[200], b[200];
    pt_tensor_describe(big, a, sizeof a);
    pt_tensor_describe(small, b, sizeof b);
    if (pt_tensor_dtype(big) != pt_tensor_dtype(small))
        return pt_set_error(PT_ERR_DTYPE, fn, "%s is %s but %s is %s: give both the same dtype", big_name, a,
                            small_name, b);
    if (pt_tensor_device(big) != pt_tensor_device(small))
        return pt_set_error(PT_ERR_DEVICE_MISMATCH, fn, "%s is %s but %s is %s: put both on one device", big_name,
                            a, small_name, b);
    int nd = pt_tensor_ndim(small);
    bool ok = pt_tensor_ndim(big) == nd + 1 && pt_tensor_shape(big)[0] == g->size;
    for (int i = 0; ok && i < nd; ++i) ok = pt_tensor_shape(big)[i + 1] == pt_tensor_shape(small)[i];
    if (!ok)
        return pt_set_error(PT_ERR_SHAPE, fn, "%s is %s but must be [%d (world size), ...%s's shape] (%s is %s)",
                            big_name, a, g->size, small_name, small_name, b);
    if (nd + 1 > PT_MAX_DIMS)
        return pt_set_error(PT_ERR_SHAPE, fn, "%s has %d dims; at most %d", small_name, nd, PT_MAX_DIMS - 1);
    if (numel(small) > PT__MPI_MAX_COUNT)
        return pt_set_error(PT_ERR_UNSUPPORTED, fn, "%s has %lld elements; at most %lld per rank", small_name,
                            (long long)numel(small), (long long)PT__MPI_MAX_COUNT);
    return PT_OK;
}

/* Gather (gather true: in -> out) or reduce-scatter (in -> out) on host
 * memory; big is the [world, ...] buffer. */
static pt_status host_stacked(pt_dist *g, const char *fn, bool gather, void *big, void *small, pt_dtype t, int n,
                              pt_reduce_op op) {
    int rc = gather ? MPI_Allgather(small, n, pt__mpi_type(t), big, n, pt__mpi_type(t), g->comm)
                    : MPI_Reduce_scatter_block(big, small, n, pt__mpi_type(t), pt__mpi_op(op, t), g->comm);
    if (rc != MPI_SUCCESS) return pt__mpi_failed(fn, gather ? "MPI_Allgather" : "MPI_Reduce_scatter_block", rc);
    if (!gather && op == PT_REDUCE_AVG) pt__divide(small, t, n, g->size);
    return PT_OK;
}

/* The host path (cpu tensors, or staged copies of device tensors). */
static pt_status stacked_on_host(pt_dist *g, const char *fn, bool gather, pt_tensor *big, pt_tensor *small,
                                 pt_reduce_op op) {
    pt_dtype t = pt_tensor_dtype(small);
    int n = (int)numel(small);
    pt_device *dev = pt_tensor_device(small);
    if (pt__host_device(dev)) {
        pt_tensor *cb = pt_contiguous(big), *cs = pt_contiguous(small);
        void *pb = cb ? host_data(fn, cb) : NULL, *ps = cs ? host_data(fn, cs) : NULL;
        if (!pb || !ps) return pt_last_status();
        pt_status s = host_stacked(g, fn, gather, pb, ps, t, n, op);
        pt_tensor *written = gather ? big : small, *copy = gather ? cb : cs;
        if (!s && copy != written) s = pt_copy_(written, copy);
        return s;
    }
    return pt__staged_stacked(g, fn, gather, big, small, op);
}

static pt_status stacked(pt_dist *g, const char *fn, bool gather, pt_tensor *big, pt_tensor *small, pt_reduce_op op) {
    pt_scope scope = pt_scope_begin();
    pt_status s = PT_OK;
    pt_device *dev = pt_tensor_device(small);
    if (numel(small) == 0) {
        /* nothing to move */
    } else if (pt__host_device(dev) || !is_cuda(dev) || !pt__nccl_usable(g, dev)) {
        s = stacked_on_host(g, fn, gather, big, small, op);
    } else {
        pt_tensor *cb = pt_contiguous(big), *cs = pt_contiguous(small);
        s = cb && cs ? pt__nccl_collective(g, fn, gather ? PT__COLL_ALL_GATHER : PT__COLL_REDUCE_SCATTER,
                                           gather ? cb : cs, gather ? cs : cb, op, -1)
                     : pt_last_status();
        pt_tensor *written = gather ? big : small, *copy = gather ? cb : cs;
        if (!s && copy != written) s = pt_copy_(written, copy);
    }
    pt_scope_end(scope);
    return s;
}

pt_status pt_dist_all_gather(pt_dist *g, pt_tensor *out, pt_tensor *in) {
    static const char fn[] = "pt_dist_all_gather";
    if (!g) return pt_set_error(PT_ERR_INVALID_ARGUMENT, fn, "group is NULL");
    pt_status local = check_common(fn, g, in, PT_REDUCE_SUM);
    if (!local) local = check_stacked(fn, g, out, in, "out", "in");
    const int64_t t0 = pt__dist_trace_start();
    pt_status s = pt__check_header(g, fn, PT__COLL_ALL_GATHER, in, PT_REDUCE_SUM, -1, local);
    const int64_t met = t0 ? pt_trace_clock_ns() : 0;
    /* the copies run pt_contiguous and pt_copy_: their errors are this call's */
    if (!s) s = stacked(g, fn, true, out, in, PT_REDUCE_SUM) ? pt__dist_error_as(fn) : PT_OK;
    if (t0) pt__dist_trace_collective(g, fn, local ? NULL : out, t0, met, s);
    return s;
}

pt_status pt_dist_reduce_scatter(pt_dist *g, pt_tensor *out, pt_tensor *in, pt_reduce_op op) {
    static const char fn[] = "pt_dist_reduce_scatter";
    if (!g) return pt_set_error(PT_ERR_INVALID_ARGUMENT, fn, "group is NULL");
    pt_status local = check_common(fn, g, in, op);
    if (!local) local = check_stacked(fn, g, in, out, "in", "out");
    const int64_t t0 = pt__dist_trace_start();
    pt_status s = pt__check_header(g, fn, PT__COLL_REDUCE_SCATTER, in, op, -1, local);
    const int64_t met = t0 ? pt_trace_clock_ns() : 0;
    /* the copies run pt_contiguous and pt_copy_: their errors are this call's */
    if (!s) s = stacked(g, fn, false, in, out, op) ? pt__dist_error_as(fn) : PT_OK;
    if (t0) pt__dist_trace_collective(g, fn, local ? NULL : in, t0, met, s);
    return s;
}

pt_status pt_dist_barrier(pt_dist *g) {
    static const char fn[] = "pt_dist_barrier";
    if (!g) return pt_set_error(PT_ERR_INVALID_ARGUMENT, fn, "group is NULL");
    const int64_t t0 = pt__dist_trace_start();
    pt_status s = pt__check_header_no_tensor(g, fn, PT__COLL_BARRIER);
    if (!s) {
        int rc = MPI_Barrier(g->comm);
        s = rc == MPI_SUCCESS ? PT_OK : pt__mpi_failed(fn, "MPI_Barrier", rc);
    }
    if (t0) pt__dist_trace_collective(g, fn, NULL, t0, pt_trace_clock_ns(), s); /* all of it is waiting */
    return s;
}
