/* The header exchange before each collective: every rank sends (kind, dtype,
 * shape, op, root) to every other (one small MPI_Allgather), and every rank
 * checks them all against rank 0's. A mismatch is found by all ranks from
 * the same data, so all of them return the same error and none enters the
 * collective (which would otherwise hang or corrupt memory). */
#include "dist_internal.h"

typedef struct header {
    int32_t kind, dtype, ndim, op, root;
    int32_t failed; /* this rank's own arguments were bad */
    int32_t cuda;   /* the tensor is a cuda one: NCCL's path, which every rank must take */
    int32_t pad;
    int64_t shape[PT_MAX_DIMS];
} header;

static const char *kind_name(int32_t k) {
    switch (k) {
    case PT__COLL_ALL_REDUCE: return "all_reduce";
    case PT__COLL_BROADCAST: return "broadcast";
    case PT__COLL_ALL_GATHER: return "all_gather";
    case PT__COLL_REDUCE_SCATTER: return "reduce_scatter";
    case PT__COLL_DDP_LAYOUT: return "ddp layout";
    case PT__COLL_BARRIER: return "barrier";
    case PT__COLL_SET_CHECK: return "set_header_check";
    case PT__COLL_DDP_NEW: return "ddp_new";
    default: return "?";
    }
}

pt_status pt_dist_set_header_check(pt_dist *g, bool on) {
    static const char fn[] = "pt_dist_set_header_check";
    if (!g) return pt_set_error(PT_ERR_INVALID_ARGUMENT, fn, "group is NULL");
    pt_status s = pt__check_header_no_tensor(g, fn, PT__COLL_SET_CHECK);
    if (s) return s;
    /* Collective: every rank must choose the same, else one would wait in
     * a header exchange that the others skip. max(on) and max(-on) in one
     * call give the largest and the smallest choice. */
    int mine[2] = {on, -(int)on}, all[2];
    int rc = MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MAX, g->comm);
    if (rc != MPI_SUCCESS) return pt__mpi_failed(fn, "MPI_Allreduce", rc);
    if (all[0] != -all[1])
        return pt_set_error(PT_ERR_INVALID_ARGUMENT, fn,
                            "ranks disagree: some passed true, others false (this is rank %d, which passed %s): "
                            "every rank must pass the same; the setting is unchanged",
                            g->rank, on ? "true" : "false");
    g->skip_header = !on;
    return PT_OK;
}

/* "f32[2, 3]" */
static void describe(const header *h, char *buf, size_t cap) {
    size_t used = (size_t)snprintf(buf, cap, "%s[", pt_dtype_name((pt_dtype)h->dtype));
    for (int i = 0; i < h->ndim && i < PT_MAX_DIMS && used < cap; ++i)
        used += (size_t)snprintf(buf + used, cap - used, i ? ", %lld" : "%lld", (long long)h->shape[i]);
    if (used < cap) snprintf(buf + used, cap - used, "]");
}

static bool same_shape(const header *a, const header *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; ++i)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

static bool takes_tensor(pt__coll_kind kind) {
    return kind != PT__COLL_BARRIER && kind != PT__COLL_SET_CHECK && kind != PT__COLL_DDP_NEW;
}

pt_status pt__check_header_no_tensor(pt_dist *g, const char *fn, pt__coll_kind kind) {
    return pt__check_header(g, fn, kind, NULL, 0, -1, PT_OK);
}

pt_status pt__dist_error_as(const char *fn) {
    pt_status s = pt_last_status();
    const char *msg = pt_last_error();
    size_t n = strlen(fn);
    if (s == PT_OK || (strncmp(msg, fn, n) == 0 && msg[n] == ':')) return s;
    char inner[2048];
    snprintf(inner, sizeof inner, "%s", msg);
    return pt_set_error(s, fn, "%s", inner);
}

pt_status pt__check_header(pt_dist *g, const char *fn, pt__coll_kind kind, const pt_tensor *x, int op, int root,
                           pt_status local) {
    const bool tensor = takes_tensor(kind);
    if (g->skip_header) /* trusted: see pt_dist_set_header_check */
        return local ? local : (x || !tensor ? PT_OK : pt_last_status());
    header mine = {.kind = kind, .op = op, .root = root, .failed = local != PT_OK || (tensor && !x)};
    if (!mine.failed && tensor) {
        mine.dtype = pt_tensor_dtype(x);
        mine.ndim = pt_tensor_ndim(x);
        const int64_t *shape = pt_tensor_shape(x);
        for (int i = 0; i < mine.ndim; ++i) mine.shape[i] = shape[i];
        mine.cuda = strncmp(pt_device_name(pt_tensor_device(x)), "cuda", 4) == 0;
    }
    header *all = malloc((size_t)g->size * sizeof *all);
    if (!all) return pt_set_error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for %d headers", g->size);
    int rc = MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, g->comm);
    if (rc != MPI_SUCCESS) {
        free(all);
        return pt__mpi_failed(fn, "MPI_Allgather (header exchange)", rc);
    }
    /* A rank whose own arguments were bad keeps its own message; the others
     * say which rank it was. */
    for (int r = 0; r < g->size; ++r) {
        if (!all[r].failed) continue;
        free(all);
        if (r == g->rank || mine.failed) return local ? local : pt_last_status();
        return pt_set_error(PT_ERR_INVALID_ARGUMENT, fn,
                            "rank %d rejected its own arguments (its error message says why); no rank "
                            "entered the %s",
                            r, kind_name(kind));
    }
    /* The first rank that differs from rank 0; this rank itself if it does. */
    const header *ref = &all[0];
    int bad = -1;
    for (int r = 1; r < g->size && bad < 0; ++r) {
        const header *h = &all[r];
        if (h->kind != ref->kind || h->op != ref->op || h->root != ref->root || h->dtype != ref->dtype || h->cuda != ref->cuda ||
            !same_shape(h, ref))
            bad = r;
    }
    if (bad > 0 && memcmp(&mine, ref, sizeof mine) != 0) bad = g->rank;
    pt_status s = PT_OK;
    if (bad > 0) {
        const header *h = &all[bad];
        char a[200], b[200];
        describe(h, a, sizeof a);
        describe(ref, b, sizeof b);
        if (h->kind != ref->kind)
            s = pt_set_error(PT_ERR_INVALID_ARGUMENT, fn,
                             "rank %d called %s while rank 0 called %s: every rank must call the same "
                             "collectives in the same order",
                             bad, kind_name(h->kind), kind_name(ref->kind));
        else if (h->cuda != ref->cuda)
            s = pt_set_error(PT_ERR_DEVICE_MISMATCH, fn,
                             "rank %d's tensor is %s a cuda device but rank 0's is %s: put the tensors of "
                             "every rank on the same kind of device",
                             bad, h->cuda ? "on" : "not on", ref->cuda ? "on" : "not on");
        else if (h->root != ref->root || h->op != ref->op)
            s = pt_set_error(PT_ERR_INVALID_ARGUMENT, fn,
                             "rank %d passed root %d / op %d but rank 0 passed root %d / op %d: every rank "
                             "must pass the same root and op",
                             bad, h->root, h->op, ref->root, ref->op);
        else
            s = pt_set_error(h->dtype != ref->dtype ? PT_ERR_DTYPE : PT_ERR_SHAPE, fn,
                             "rank %d has %s but rank 0 has %s (this is rank %d): every rank must pass a "
                             "tensor of the same shape and dtype",
                             bad, a, b, g->rank);
    }
    free(all);
    return s;
}
