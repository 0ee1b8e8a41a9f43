/* The process group: MPI set-up, rank / world size / local rank from MPI,
 * checked against what the launcher (mpirun, srun) put in the environment,
 * and the default device of each local rank. */
#include <errno.h>

#include "dist_internal.h"

/* name's value as a non-negative int into *out (-1 when unset). */
static pt_status env_int(const char *name, int *out) {
    const char *v = getenv(name);
    *out = -1;
    if (!v) return PT_OK;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end || n < 0 || n > 1 << 30)
        return pt_set_error(PT_ERR_INVALID_ARGUMENT, "pt_dist_read_env",
                            "%s=\"%s\" is not a non-negative integer (is the launcher's environment intact?)",
                            name, v);
    *out = (int)n;
    return PT_OK;
}

pt_status pt_dist_read_env(pt_dist_env *out) {
    if (!out) return pt_set_error(PT_ERR_INVALID_ARGUMENT, "pt_dist_read_env", "out is NULL");
    /* Open MPI's mpirun first: under an mpirun inside a SLURM allocation the
     * SLURM variables describe the allocation's job step, not these ranks. */
    static const struct {
        const char *launcher, *rank, *size, *local;
    } launchers[] = {
        {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
        {"srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    };
    for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; ++i) {
        if (!getenv(launchers[i].rank)) continue;
        snprintf(out->launcher, sizeof out->launcher, "%s", launchers[i].launcher);
        pt_status s = env_int(launchers[i].rank, &out->rank);
        if (!s) s = env_int(launchers[i].size, &out->world_size);
        if (!s) s = env_int(launchers[i].local, &out->local_rank);
        if (!s && out->world_size >= 0 && out->rank >= out->world_size)
            s = pt_set_error(PT_ERR_INVALID_ARGUMENT, "pt_dist_read_env", "%s=%d is not below %s=%d",
                             launchers[i].rank, out->rank, launchers[i].size, out->world_size);
        return s;
    }
    snprintf(out->launcher, sizeof out->launcher, "none");
    out->rank = 0;
    out->world_size = 1;
    out->local_rank = 0;
    return PT_OK;
}

/* Rank and size of this process among the group's processes on its machine. */
static pt_status local_ranks(pt_dist *g) {
    MPI_Comm node;
    int rc = MPI_Comm_split_type(g->comm, MPI_COMM_TYPE_SHARED, g->rank, MPI_INFO_NULL, &node);
    if (rc != MPI_SUCCESS) return pt__mpi_failed("pt_dist_init", "MPI_Comm_split_type", rc);
    MPI_Comm_rank(node, &g->local_rank);
    MPI_Comm_size(node, &g->local_size);
    MPI_Comm_free(&node);
    return PT_OK;
}

pt_dist *pt_dist_init(int *argc, char ***argv) {
    static const char fn[] = "pt_dist_init";
    pt_dist_env env;
    if (pt_dist_read_env(&env)) return NULL;
    int inited = 0, rc;
    MPI_Initialized(&inited);
    bool owns = false;
    if (!inited) {
        int provided = 0;
        /* MULTIPLE where the MPI has it: pt_ddp's communication thread
         * runs its all-reduces while this thread may call collectives. */
        rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
        if (rc != MPI_SUCCESS) {
            pt_set_error(PT_ERR_BACKEND, fn, "MPI_Init_thread failed (code %d); start the program with mpirun or srun", rc);
            return NULL;
        }
        owns = true;
    }
    pt_dist *g = calloc(1, sizeof *g);
    if (!g) {
        pt_set_error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
        if (owns) MPI_Finalize();
        return NULL;
    }
    g->owns_mpi = owns;
    MPI_Query_thread(&g->thread_level);
    snprintf(g->launcher, sizeof g->launcher, "%s", env.launcher);
    rc = MPI_Comm_dup(MPI_COMM_WORLD, &g->comm);
    if (rc != MPI_SUCCESS) {
        pt__mpi_failed(fn, "MPI_Comm_dup", rc);
        if (owns) MPI_Finalize();
        free(g);
        return NULL;
    }
    /* Errors come back as codes on our communicator, never as an abort. */
    MPI_Comm_set_errhandler(g->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(g->comm, &g->rank);
    MPI_Comm_size(g->comm, &g->size);
    pt_status s = local_ranks(g);
    if (!s && strcmp(env.launcher, "none") != 0 &&
        (env.rank != g->rank || (env.world_size >= 0 && env.world_size != g->size) ||
         (env.local_rank >= 0 && env.local_rank != g->local_rank)))
        s = pt_set_error(PT_ERR_INTERNAL, fn,
                         "%s says rank %d of %d (local %d) but MPI says rank %d of %d (local %d): was the "
                         "program started by a launcher of another MPI than the one it links?",
                         env.launcher, env.rank, env.world_size, env.local_rank, g->rank, g->size,
                         g->local_rank);
    if (s) {
        pt_dist_finalize(g);
        return NULL;
    }
    return g;
}

void pt_dist_finalize(pt_dist *g) {
    if (!g) return;
    for (size_t i = 0; i < sizeof g->stage / sizeof g->stage[0]; ++i) pt_release(g->stage[i]);
    pt__nccl_free(g->nccl);
    MPI_Comm_free(&g->comm);
    if (g->owns_mpi) MPI_Finalize();
    free(g);
}

int pt_dist_rank(const pt_dist *g) { return g ? g->rank : -1; }
int pt_dist_world_size(const pt_dist *g) { return g ? g->size : -1; }
int pt_dist_local_rank(const pt_dist *g) { return g ? g->local_rank : -1; }
int pt_dist_local_size(const pt_dist *g) { return g ? g->local_size : -1; }
const char *pt_dist_launcher(const pt_dist *g) { return g ? g->launcher : "none"; }

pt_device *pt_dist_device(pt_dist *g) {
    if (!g) {
        pt_set_error(PT_ERR_INVALID_ARGUMENT, "pt_dist_device", "group is NULL");
        return NULL;
    }
    if (g->device) return g->device;
    int gpus = pt_device_count("cuda");
    if (gpus > 0) {
        if (g->local_size > gpus && g->local_rank == 0)
            pt_log_message(PT_LOG_WARN, "portable-dist: %d processes on this machine share %d GPUs", g->local_size, gpus);
        char name[32];
        snprintf(name, sizeof name, "cuda:%d", g->local_rank % gpus);
        g->device = pt_device_get(name);
    } else {
        g->device = pt_default_device();
    }
    return g->device;
}
