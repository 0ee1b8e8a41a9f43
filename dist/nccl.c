/* CUDA tensors through NCCL, loaded at run time with dlopen("libnccl.so.2")
 * like the backend plugins (on GPU machines it comes with PyTorch's NCCL
 * wheel), so neither the build nor machines without GPUs need it.
 *
 * NOT TESTED HERE: the machine this was written on has no GPU and no NCCL.
 * It follows the NCCL 2 API (nccl.h): ncclGetUniqueId on rank 0, the id
 * broadcast over MPI, ncclCommInitRank after cudaSetDevice. Ordering with
 * the cuda plugin's own stream is kept simple and safe: wait for the
 * tensor's device (pt_device_synchronize), run NCCL on a stream of our own,
 * wait for that stream. Averages are a NCCL sum then a division on the
 * device, the same arithmetic as the MPI paths. PORTABLE_DIST_NCCL=0 turns
 * the path off. */
#include <dlfcn.h>

#include "dist_internal.h"

#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

bool pt__mpi_cuda_aware(void) {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    return MPIX_Query_cuda_support() == 1;
#else
    return false;
#endif
}

/* The slice of nccl.h and cuda_runtime_api.h used here (stable ABI). */
typedef struct { char internal[128]; } nccl_unique_id; /* NCCL_UNIQUE_ID_BYTES */
typedef void *nccl_comm;
typedef void *cuda_stream;
enum { NCCL_SUCCESS = 0, NCCL_SUM = 0, NCCL_MAX = 2 };
enum { NCCL_UINT8 = 1, NCCL_INT32 = 2, NCCL_INT64 = 4, NCCL_FLOAT16 = 6, NCCL_FLOAT32 = 7, NCCL_FLOAT64 = 8, NCCL_BFLOAT16 = 9 };
enum { CUDA_STREAM_NON_BLOCKING = 1 };

struct pt__nccl {
    void *lib, *cudart;
    int (*get_unique_id)(nccl_unique_id *);
    int (*comm_init_rank)(nccl_comm *, int, nccl_unique_id, int);
    int (*comm_destroy)(nccl_comm);
    const char *(*error_string)(int);
    int (*all_reduce)(const void *, void *, size_t, int, int, nccl_comm, cuda_stream);
    int (*broadcast)(const void *, void *, size_t, int, int, nccl_comm, cuda_stream);
    int (*all_gather)(const void *, void *, size_t, int, nccl_comm, cuda_stream);
    int (*reduce_scatter)(const void *, void *, size_t, int, int, nccl_comm, cuda_stream);
    int (*set_device)(int);
    int (*stream_create)(cuda_stream *, unsigned);
    int (*stream_sync)(cuda_stream);
    int (*stream_destroy)(cuda_stream);
    nccl_comm comm;
    cuda_stream stream;
    pt_device *device; /* the one device the communicator is bound to */
};

void pt__nccl_free(pt__nccl *n) {
    if (!n) return;
    if (n->comm) n->comm_destroy(n->comm);
    if (n->stream) n->stream_destroy(n->stream);
    if (n->lib) dlclose(n->lib);
    if (n->cudart) dlclose(n->cudart);
    free(n);
}

static void *open_first(const char *const *names) {
    for (; *names; ++names) {
        void *h = dlopen(*names, RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
    }
    return NULL;
}

/* Loads both libraries and every symbol; NULL when anything is missing. */
static pt__nccl *load(void) {
    static const char *const nccl_names[] = {"libnccl.so.2", NULL};
    static const char *const cudart_names[] = {"libcudart.so", "libcudart.so.12", "libcudart.so.11.0", NULL};
    pt__nccl *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->lib = open_first(nccl_names);
    n->cudart = n->lib ? open_first(cudart_names) : NULL;
    bool ok = n->lib && n->cudart;
    void *lib_nccl = n->lib, *lib_cuda = n->cudart;
#define SYM(field, handle, name) ok = ok && (*(void **)&n->field = dlsym(handle, name)) != NULL
    SYM(get_unique_id, lib_nccl, "ncclGetUniqueId");
    SYM(comm_init_rank, lib_nccl, "ncclCommInitRank");
    SYM(comm_destroy, lib_nccl, "ncclCommDestroy");
    SYM(error_string, lib_nccl, "ncclGetErrorString");
    SYM(all_reduce, lib_nccl, "ncclAllReduce");
    SYM(broadcast, lib_nccl, "ncclBroadcast");
    SYM(all_gather, lib_nccl, "ncclAllGather");
    SYM(reduce_scatter, lib_nccl, "ncclReduceScatter");
    SYM(set_device, lib_cuda, "cudaSetDevice");
    SYM(stream_create, lib_cuda, "cudaStreamCreateWithFlags");
    SYM(stream_sync, lib_cuda, "cudaStreamSynchronize");
    SYM(stream_destroy, lib_cuda, "cudaStreamDestroy");
#undef SYM
    if (!ok) {
        pt__nccl_free(n);
        return NULL;
    }
    return n;
}

static int cuda_index(const pt_device *d) {
    const char *colon = strchr(pt_device_name(d), ':');
    return colon ? atoi(colon + 1) : 0;
}

/* Every rank must agree on whether NCCL is used: the one that decides
 * differently would call NCCL while the others call MPI. So the choice is
 * made together (MPI_Allreduce of "loaded here") at the first cuda tensor. */
bool pt__nccl_usable(pt_dist *g, pt_device *dev) {
    if (!g->nccl_tried) {
        g->nccl_tried = true;
        static const char *const off_on[] = {"0", "1", NULL};
        pt__nccl *n = pt_env_choice("PORTABLE_DIST_NCCL", off_on, 1) == 0 ? NULL : load();
        int here = n != NULL, all = 0;
        if (MPI_Allreduce(&here, &all, 1, MPI_INT, MPI_MIN, g->comm) != MPI_SUCCESS) all = 0;
        nccl_unique_id id;
        memset(&id, 0, sizeof id);
        int ok = all;
        if (all) {
            ok = n->set_device(cuda_index(dev)) == 0 && n->stream_create(&n->stream, CUDA_STREAM_NON_BLOCKING) == 0;
            if (ok && g->rank == 0) ok = n->get_unique_id(&id) == NCCL_SUCCESS;
            int all_ok = 0;
            MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, g->comm);
            ok = all_ok && MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, g->comm) == MPI_SUCCESS;
            if (ok) ok = n->comm_init_rank(&n->comm, g->size, id, g->rank) == NCCL_SUCCESS;
            MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, g->comm);
            ok = all_ok;
        }
        if (ok) {
            n->device = dev;
            g->nccl = n;
        } else {
            if (n && all) pt_log_message(PT_LOG_WARN, "portable-dist: NCCL loaded but its set-up failed; using MPI");
            pt__nccl_free(n);
        }
    }
    return g->nccl && g->nccl->device == dev;
}

static int nccl_type(pt_dtype t) {
    switch (t) {
    case PT_F32: return NCCL_FLOAT32;
    case PT_F64: return NCCL_FLOAT64;
    case PT_I32: return NCCL_INT32;
    case PT_I64: return NCCL_INT64;
    case PT_F16: return NCCL_FLOAT16;
    case PT_BF16: return NCCL_BFLOAT16;
    default: return NCCL_UINT8;
    }
}

static void *device_ptr(pt_tensor *x) {
    void *buf = NULL;
    size_t off = 0;
    pt_tensor_storage(x, &buf, &off);
    return (char *)buf + off;
}

pt_status pt__nccl_collective(pt_dist *g, const char *fn, pt__coll_kind kind, pt_tensor *out, pt_tensor *in,
                              pt_reduce_op op, int root) {
    pt__nccl *n = g->nccl;
    pt_status s = pt_device_synchronize(pt_tensor_device(in));
    if (s) return s;
    int t = nccl_type(pt_tensor_dtype(in)), nop = op == PT_REDUCE_MAX ? NCCL_MAX : NCCL_SUM;
    size_t count = (size_t)pt_tensor_numel(kind == PT__COLL_ALL_GATHER ? in : out);
    int rc;
    switch (kind) {
    case PT__COLL_ALL_REDUCE: rc = n->all_reduce(device_ptr(in), device_ptr(out), count, t, nop, n->comm, n->stream); break;
    case PT__COLL_BROADCAST: rc = n->broadcast(device_ptr(in), device_ptr(out), count, t, root, n->comm, n->stream); break;
    case PT__COLL_ALL_GATHER: rc = n->all_gather(device_ptr(in), device_ptr(out), count, t, n->comm, n->stream); break;
    case PT__COLL_REDUCE_SCATTER:
        rc = n->reduce_scatter(device_ptr(in), device_ptr(out), count, t, nop, n->comm, n->stream);
        break;
    default: return pt_set_error(PT_ERR_INTERNAL, fn, "collective %d has no NCCL call", (int)kind);
    }
    if (rc != NCCL_SUCCESS) return pt_set_error(PT_ERR_BACKEND, fn, "NCCL: %s", n->error_string(rc));
    if (n->stream_sync(n->stream) != 0) return pt_set_error(PT_ERR_BACKEND, fn, "cudaStreamSynchronize failed after NCCL");
    if (op == PT_REDUCE_AVG && (kind == PT__COLL_ALL_REDUCE || kind == PT__COLL_REDUCE_SCATTER))
        return pt__divide_on_device(g, out);
    return PT_OK;
}
