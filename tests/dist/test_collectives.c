/* Every collective x dtype x contiguity of libportable-dist, on the device
 * PORTABLE_BACKEND picks (ctest runs it for cpu and opencl under
 * mpirun -np 2 and -np 4), against a result computed here on the host.
 * The values are small integers (plus .5 for floats), so every sum and
 * average is exact in every dtype: results must match exactly.
 * Also: a shape or dtype that differs between ranks gives every rank a clear
 * error (and the group still works afterwards), and the launcher's
 * environment is read right. Exit 77 when the backend is not available. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "portable/dist.h"
#include "portable/half.h"

static int failures;
static pt_dist *g;
static int rank, world;

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            ++failures;                                                                    \
            fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, __LINE__);            \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fprintf(stderr, " [%s]\n", pt_last_error());                                   \
        }                                                                                  \
    } while (0)

#define R 6
#define C 5
#define N (R * C)

static double value(int r, int k, pt_dtype t) {
    return (double)((k * 7 + r * 3) % 11) + (pt_dtype_is_float(t) ? 0.5 : 0.0);
}

static void to_dtype(const double *v, int n, pt_dtype t, void *out) {
    for (int i = 0; i < n; ++i) switch (t) {
        case PT_F32: ((float *)out)[i] = (float)v[i]; break;
        case PT_F64: ((double *)out)[i] = v[i]; break;
        case PT_I32: ((int32_t *)out)[i] = (int32_t)v[i]; break;
        case PT_I64: ((int64_t *)out)[i] = (int64_t)v[i]; break;
        case PT_F16: ((uint16_t *)out)[i] = pt_f64_to_f16_bits(v[i]); break;
        case PT_BF16: ((uint16_t *)out)[i] = pt_f64_to_bf16_bits(v[i]); break;
        default: ((uint8_t *)out)[i] = (uint8_t)v[i]; break;
        }
}

static double from_dtype(const void *p, int i, pt_dtype t) {
    switch (t) {
    case PT_F32: return ((const float *)p)[i];
    case PT_F64: return ((const double *)p)[i];
    case PT_I32: return ((const int32_t *)p)[i];
    case PT_I64: return (double)((const int64_t *)p)[i];
    case PT_F16: return pt_f16_bits_to_f32(((const uint16_t *)p)[i]);
    case PT_BF16: return pt_bf16_bits_to_f32(((const uint16_t *)p)[i]);
    default: return ((const uint8_t *)p)[i];
    }
}

/* A [lead..., R, C] tensor on dev holding v (logical C order), made either
 * contiguous or as the transpose of a [lead..., C, R] tensor (strided). */
static pt_tensor *make(pt_device *dev, pt_dtype t, int lead, const double *v, bool strided) {
    int blocks = lead ? lead : 1;
    double phys[N * 8] = {0};
    unsigned char buf[8 * N * 8];
    for (int b = 0; b < blocks; ++b)
        for (int i = 0; i < R; ++i)
            for (int j = 0; j < C; ++j)
                phys[b * N + (strided ? j * R + i : i * C + j)] = v[b * N + i * C + j];
    to_dtype(phys, N * blocks, t, buf);
    int64_t shape[3] = {lead, strided ? C : R, strided ? R : C};
    pt_tensor *x = lead ? pt_from_data(dev, t, 3, shape, buf) : pt_from_data(dev, t, 2, shape + 1, buf);
    if (!strided) return x;
    pt_tensor *y = pt_transpose(x, lead ? 1 : 0, lead ? 2 : 1);
    pt_release(x);
    return y;
}

/* x's values (n of them) against want. */
static void expect(const char *what, pt_tensor *x, const double *want, int n, pt_dtype t, bool strided) {
    unsigned char buf[8 * N * 8];
    CHECK(x && pt_to_host(x, buf, sizeof buf) == PT_OK, "%s %s %s: read back", what, pt_dtype_name(t),
          strided ? "strided" : "contiguous");
    unsigned char w[8];
    for (int i = 0; i < n; ++i) /* want, rounded once to the dtype (exact for all but 16-bit averages) */
        if (to_dtype(&want[i], 1, t, w), from_dtype(buf, i, t) != from_dtype(w, 0, t)) {
            CHECK(0, "%s %s %s: element %d is %g, want %g", what, pt_dtype_name(t), strided ? "strided" : "contiguous",
                  i, from_dtype(buf, i, t), want[i]);
            return;
        }
}

static void test_dtype(pt_device *dev, pt_dtype t, bool strided) {
    double mine[N], want[N * 8], all[8][N];
    for (int r = 0; r < world; ++r)
        for (int k = 0; k < N; ++k) all[r][k] = value(r, k, t);
    memcpy(mine, all[rank], sizeof mine);

    static const char *op_names[] = {"all_reduce sum", "all_reduce avg", "all_reduce max"};
    for (int op = PT_REDUCE_SUM; op <= PT_REDUCE_MAX; ++op) {
        for (int k = 0; k < N; ++k) {
            double s = 0, m = -1;
            for (int r = 0; r < world; ++r) {
                s += all[r][k];
                m = fmax(m, all[r][k]);
            }
            /* u8 wraps modulo 256, integers truncate the average */
            want[k] = op == PT_REDUCE_MAX ? m : op == PT_REDUCE_SUM ? s : pt_dtype_is_float(t) ? s / world : trunc(s / world);
        }
        pt_tensor *x = make(dev, t, 0, mine, strided);
        CHECK(pt_dist_all_reduce(g, x, (pt_reduce_op)op) == PT_OK, "%s %s", op_names[op], pt_dtype_name(t));
        expect(op_names[op], x, want, N, t, strided);
        pt_release(x);
    }

    pt_tensor *x = make(dev, t, 0, mine, strided);
    CHECK(pt_dist_broadcast(g, x, world - 1) == PT_OK, "broadcast %s", pt_dtype_name(t));
    expect("broadcast", x, all[world - 1], N, t, strided);
    pt_release(x);

    /* all_gather: out [world, R, C] */
    for (int r = 0; r < world; ++r) memcpy(want + r * N, all[r], sizeof all[r]);
    double zeros[N * 8] = {0};
    pt_tensor *in = make(dev, t, 0, mine, strided), *out = make(dev, t, world, zeros, strided);
    CHECK(pt_dist_all_gather(g, out, in) == PT_OK, "all_gather %s", pt_dtype_name(t));
    expect("all_gather", out, want, N * world, t, strided);
    pt_release(in);
    pt_release(out);

    /* reduce_scatter: in [world, R, C] with block b = value(rank, b * N + k) */
    double block_in[N * 8];
    for (int b = 0; b < world; ++b)
        for (int k = 0; k < N; ++k) block_in[b * N + k] = value(rank, b * N + k, t);
    for (int op = PT_REDUCE_SUM; op <= PT_REDUCE_MAX; ++op) {
        for (int k = 0; k < N; ++k) {
            double s = 0, m = -1;
            for (int r = 0; r < world; ++r) {
                s += value(r, rank * N + k, t);
                m = fmax(m, value(r, rank * N + k, t));
            }
            want[k] = op == PT_REDUCE_MAX ? m : op == PT_REDUCE_SUM ? s : pt_dtype_is_float(t) ? s / world : trunc(s / world);
        }
        in = make(dev, t, world, block_in, strided);
        out = make(dev, t, 0, zeros, strided);
        CHECK(pt_dist_reduce_scatter(g, out, in, (pt_reduce_op)op) == PT_OK, "reduce_scatter %d %s", op, pt_dtype_name(t));
        expect("reduce_scatter", out, want, N, t, strided);
        pt_release(in);
        pt_release(out);
    }
}

/* Rank 1 passes another shape (then another dtype): every rank fails, with
 * both shapes named, and nobody hangs. */
static void test_mismatch(pt_device *dev) {
    int64_t shape[2] = {2, rank == 1 ? 4 : 3};
    pt_tensor *x = pt_zeros(dev, PT_F32, 2, shape);
    pt_status s = pt_dist_all_reduce(g, x, PT_REDUCE_SUM);
    CHECK(s == PT_ERR_SHAPE, "shape mismatch gave %s", pt_status_name(s));
    CHECK(strstr(pt_last_error(), "rank 1 has f32[2, 4]") && strstr(pt_last_error(), "rank 0 has f32[2, 3]"),
          "shape mismatch message names both shapes");
    pt_release(x);
    x = pt_zeros(dev, rank == 1 ? PT_I32 : PT_F32, 1, shape);
    s = pt_dist_broadcast(g, x, 0);
    CHECK(s == PT_ERR_DTYPE && strstr(pt_last_error(), "i32[2]") && strstr(pt_last_error(), "f32[2]"),
          "dtype mismatch gave %s", pt_status_name(s));
    pt_release(x);
    /* a bad argument on one rank only: that rank's own message, the others name it */
    x = pt_zeros(dev, PT_F32, 1, shape);
    s = pt_dist_broadcast(g, x, rank == 0 ? world : 0);
    CHECK(s == PT_ERR_INVALID_ARGUMENT, "bad root on rank 0 gave %s", pt_status_name(s));
    CHECK(strstr(pt_last_error(), rank == 0 ? "root" : "rank 0 rejected"), "bad root message");
    /* rank 0 all-reduces while the others wait in a barrier: the barrier
     * takes part in the header exchange, so every rank fails (ctest's
     * timeout catches a hang) */
    s = rank == 0 ? pt_dist_all_reduce(g, x, PT_REDUCE_SUM) : pt_dist_barrier(g);
    CHECK(s == PT_ERR_INVALID_ARGUMENT, "all_reduce against barrier gave %s", pt_status_name(s));
    CHECK(strncmp(pt_last_error(), rank == 0 ? "pt_dist_all_reduce: " : "pt_dist_barrier: ", rank == 0 ? 20 : 17) == 0 &&
              strstr(pt_last_error(), "called barrier while rank 0 called all_reduce"),
          "all_reduce against barrier: %s", pt_last_error());
    CHECK(pt_dist_barrier(g) == PT_OK, "barrier on every rank");
    /* the group still works */
    pt_fill_(x, 1.0);
    pt_tensor *first = pt_narrow(x, 0, 0, 1);
    CHECK(pt_dist_all_reduce(g, x, PT_REDUCE_SUM) == PT_OK && pt_item(first) == world, "all_reduce after the errors");
    pt_release(first);
    pt_release(x);
    CHECK(pt_dist_all_reduce(g, NULL, PT_REDUCE_SUM) != PT_OK, "NULL tensor");
    CHECK(pt_dist_all_reduce(NULL, NULL, PT_REDUCE_SUM) == PT_ERR_INVALID_ARGUMENT, "NULL group");
}

/* pt_dist_set_header_check: off, the collectives still give the right
 * results; ranks that disagree all get an error and nothing changes (a
 * mismatch is still caught afterwards). */
static void test_header_check(pt_device *dev) {
    pt_status s = pt_dist_set_header_check(g, rank != 0);
    CHECK(s == PT_ERR_INVALID_ARGUMENT && strstr(pt_last_error(), "ranks disagree"), "disagreeing ranks gave %s",
          pt_status_name(s));
    int64_t shape[1] = {rank == 1 ? 4 : 3};
    pt_tensor *x = pt_zeros(dev, PT_F32, 1, shape);
    s = pt_dist_all_reduce(g, x, PT_REDUCE_SUM);
    CHECK(s == PT_ERR_SHAPE, "the check is still on after the refused change: %s", pt_status_name(s));
    pt_release(x);
    CHECK(pt_dist_set_header_check(g, false) == PT_OK, "check off");
    test_dtype(dev, PT_F32, false);
    test_dtype(dev, PT_F32, true);
    CHECK(pt_dist_set_header_check(g, true) == PT_OK, "check back on");
    CHECK(pt_dist_set_header_check(NULL, true) == PT_ERR_INVALID_ARGUMENT, "NULL group");
}

static void test_env(void) {
    CHECK(strcmp(pt_dist_launcher(g), "mpirun") == 0, "launcher %s", pt_dist_launcher(g));
    CHECK(pt_dist_local_rank(g) == rank && pt_dist_local_size(g) == world, "local rank %d of %d",
          pt_dist_local_rank(g), pt_dist_local_size(g));
    /* SLURM's variables, as srun sets them, once mpirun's are out of the way */
    char *saved = strdup(getenv("OMPI_COMM_WORLD_RANK"));
    unsetenv("OMPI_COMM_WORLD_RANK");
    setenv("SLURM_PROCID", "5", 1);
    setenv("SLURM_NTASKS", "8", 1);
    setenv("SLURM_LOCALID", "1", 1);
    pt_dist_env env;
    CHECK(pt_dist_read_env(&env) == PT_OK && strcmp(env.launcher, "srun") == 0 && env.rank == 5 &&
              env.world_size == 8 && env.local_rank == 1,
          "srun environment: %s %d %d %d", env.launcher, env.rank, env.world_size, env.local_rank);
    setenv("SLURM_PROCID", "five", 1);
    CHECK(pt_dist_read_env(&env) == PT_ERR_INVALID_ARGUMENT && strstr(pt_last_error(), "SLURM_PROCID=\"five\""),
          "bad SLURM_PROCID");
    setenv("SLURM_PROCID", "9", 1);
    CHECK(pt_dist_read_env(&env) == PT_ERR_INVALID_ARGUMENT, "rank above world size");
    unsetenv("SLURM_PROCID");
    unsetenv("SLURM_NTASKS");
    unsetenv("SLURM_LOCALID");
    setenv("OMPI_COMM_WORLD_RANK", saved, 1);
    free(saved);
    CHECK(pt_dist_read_env(&env) == PT_OK && env.rank == rank && env.world_size == world, "mpirun environment");
    /* the shard helper: ranks together cover the permutation */
    int64_t mine[16], perm[30];
    int64_t count = pt_dist_shard(g, 30, 7, mine, 16);
    pt_dist_permutation(30, 7, perm);
    CHECK(count == (30 + world - 1) / world, "shard count %lld", (long long)count);
    for (int64_t k = 0; k < count && k < 16; ++k)
        CHECK(mine[k] == perm[(k * world + rank) % 30], "shard entry %lld", (long long)k);
    CHECK(pt_dist_shard(g, 0, 7, mine, 16) == -1, "shard of nothing");
}

int main(int argc, char **argv) {
    g = pt_dist_init(&argc, &argv);
    if (!g) {
        fprintf(stderr, "pt_dist_init: %s\n", pt_last_error());
        return 1;
    }
    rank = pt_dist_rank(g);
    world = pt_dist_world_size(g);
    pt_device *dev = pt_default_device();
    int here = dev != NULL, everywhere = 0;
    /* every rank skips together */
    pt_dist_barrier(g);
    if (!dev) fprintf(stderr, "rank %d: no device: %s\n", rank, pt_last_error());
    pt_tensor *flag = pt_full(pt_cpu(), PT_I32, 0, NULL, here);
    pt_dist_all_reduce(g, flag, PT_REDUCE_MAX);
    everywhere = (int)pt_item(flag);
    pt_release(flag);
    if (!everywhere || world < 2 || world > 8) {
        pt_dist_finalize(g);
        return 77;
    }
    for (int t = 0; t < PT_DTYPE_COUNT; ++t) {
        if (pt_device_supports(dev, PT_OP_COPY, (pt_dtype)t) != PT_OK) continue; /* fp64 on some OpenCL devices */
        test_dtype(dev, (pt_dtype)t, false);
        test_dtype(dev, (pt_dtype)t, true);
    }
    test_mismatch(dev);
    test_header_check(dev);
    test_env();
    int all_failures = 0;
    MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("collectives on %s, %d ranks: %d failures\n", pt_device_name(dev), world, all_failures);
    pt_dist_finalize(g);
    return all_failures ? 1 : 0;
}
