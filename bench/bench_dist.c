/* libportable-dist benchmarks, run under mpirun -np 2 (bench/results/dist.md):
 *
 * 1. all-reduce (sum, f32, cpu) of 1 KB .. 256 MB through pt_dist_all_reduce
 *    against a direct MPI_Allreduce on the same buffer (the tensor's
 *    memory), and against "MPI+hdr": a header-sized MPI_Allgather then the
 *    MPI_Allreduce, which is what ours does on a cpu tensor. They alternate
 *    round by round (the order rotates); medians of the slowest rank's
 *    times; MPI/ours of the medians and of the bests; "pair" is the median
 *    over rounds of MPI/ours within a round; hdr/ours near 1 says ours costs
 *    nothing beyond its header exchange. "nochk" is ours on a second group
 *    with the header exchange turned off (pt_dist_set_header_check), and
 *    MPI/nochk its ratio to MPI.
 * 2. data-parallel step overlap: an MLP 64 -> H -> (L x H) -> 10 with batch 64
 *    per rank; times forward+backward alone, an all-reduce of all its
 *    gradients alone, and forward+backward+pt_ddp_sync; hidden = the part of
 *    the all-reduce time that the DDP step does not add. Then, with an SGD
 *    update: pt_ddp_sync + pt_optimizer_step against pt_ddp_step, which
 *    steps each bucket as soon as it has arrived.
 *
 *    Run once with the default 25 MB bucket cap and once with a small cap
 *    (several buckets, launched during backward).
 *
 *   mpirun -np 2 ./build/bench/bench_dist [max_bytes] [width] [hidden_layers] [small_cap_bytes] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "portable/dist.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double thread_cpu(void) { /* this thread's CPU time: what the load on the machine does not inflate */
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double slowest(double t) { /* the step takes as long as its slowest rank */
    double m;
    MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Both contenders work on the same buffer (the tensor's own memory), so
 * placement and page state cannot favour either; MPI first in even rounds,
 * ours first in odd ones. Medians (and bests) of the slowest rank's times. */
static void allreduce_table(pt_dist *g, pt_dist *unchecked, size_t max_bytes) {
    enum { MAX_ROUNDS = 40, K = 4 };
    int rank = pt_dist_rank(g);
    if (rank == 0 && max_bytes >= 1024)
        printf("%-10s %11s %11s %11s %11s %9s %9s %9s %9s %9s\n", "bytes", "MPI med us", "ours med", "MPI+hdr med",
               "nochk med", "MPI/ours", "best", "pair", "hdr/ours", "MPI/nochk");
    for (size_t bytes = 1024; bytes <= max_bytes; bytes *= 4) {
        int64_t n = (int64_t)(bytes / 4);
        pt_tensor *x = pt_zeros(pt_cpu(), PT_F32, 1, &n); /* zeros: sums stay finite however many rounds */
        void *mem;
        size_t off;
        pt_tensor_storage(x, &mem, &off);
        float *buf = (float *)((char *)mem + off);
        int rounds = bytes >= (64u << 20) ? 5 : bytes >= (1u << 20) ? 20 : MAX_ROUNDS;
        double t[K][MAX_ROUNDS], pair[MAX_ROUNDS];
        for (int r = 0; r < rounds; ++r) {
            for (int k0 = 0; k0 < K; ++k0) {
                int k = (k0 + r) % K; /* the order rotates round by round */
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = now();
                if (k == 0) MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                if (k == 1) pt_dist_all_reduce(g, x, PT_REDUCE_SUM);
                if (k == 2) { /* what ours does on a cpu tensor, by hand: a header-sized allgather, then MPI */
                    char mine[96] = {0}, all[96 * 64];
                    int size = pt_dist_world_size(g);
                    MPI_Allgather(mine, 96, MPI_BYTE, size <= 64 ? all : NULL, 96, MPI_BYTE, MPI_COMM_WORLD);
                    MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                }
                if (k == 3) pt_dist_all_reduce(unchecked, x, PT_REDUCE_SUM);
                t[k][r] = slowest(now() - t0);
            }
            pair[r] = t[0][r] / t[1][r]; /* MPI and ours within one round, under much the same load */
        }
        double m_pair = median(pair, rounds);
        double m[K];
        for (int k = 0; k < K; ++k) m[k] = median(t[k], rounds); /* sorts: t[k][0] is then the best */
        if (rank == 0)
            printf("%-10zu %11.1f %11.1f %11.1f %11.1f %9.2f %9.2f %9.2f %9.2f %9.2f\n", bytes, 1e6 * m[0], 1e6 * m[1],
                   1e6 * m[2], 1e6 * m[3], m[0] / m[1], t[0][0] / t[1][0], m_pair, m[2] / m[1], m[0] / m[3]);
        pt_release(x);
    }
}

/* 64 -> h -> ... -> h -> 10 with `hidden` linears of h -> h between: the
 * deeper layers' gradients are final while backward still has the
 * shallower ones to compute, which is what overlap needs. */
static pt_module *mlp(int64_t h, int hidden, pt_device *dev) {
    pt_manual_seed(0);
    pt_module *layers[32];
    int n = 0;
    layers[n++] = pt_linear_sized(64, h);
    layers[n++] = pt_relu_module();
    for (int i = 0; i < hidden && n < 28; ++i) {
        layers[n++] = pt_linear_sized(h, h);
        layers[n++] = pt_relu_module();
    }
    layers[n++] = pt_linear_sized(h, 10);
    pt_module *m = pt_sequential(n, layers);
    pt_module_to(m, dev);
    return m;
}

static pt_status fwd_bwd(pt_module *m, pt_tensor *x, pt_tensor *y) {
    pt_scope s = pt_scope_begin();
    pt_module_zero_grad(m);
    pt_status st = pt_backward(pt_cross_entropy(pt_module_forward(m, x), y));
    pt_scope_end(s);
    return st;
}

/* The three contenders alternate round by round; medians of the slowest
 * rank's times. bucket_bytes 0: the 25 MB default. */
static void overlap_table(pt_dist *g, int64_t h, int hidden, size_t bucket_bytes) {
    enum { MAX_ROUNDS = 31 };
    const char *env = getenv("BENCH_DIST_ROUNDS"); /* fewer for big models */
    int rounds = env && atoi(env) > 0 && atoi(env) <= MAX_ROUNDS ? atoi(env) : 15;
    int rank = pt_dist_rank(g);
    pt_device *dev = pt_dist_device(g);
    pt_module *plain = mlp(h, hidden, dev), *wrapped = mlp(h, hidden, dev);
    pt_ddp *ddp = pt_ddp_new(g, wrapped, bucket_bytes);
    if (!ddp) {
        if (rank == 0) fprintf(stderr, "pt_ddp_new: %s\n", pt_last_error());
        return;
    }
    int64_t xs[2] = {64, 64}, ys[1] = {64};
    pt_tensor *x = pt_rand(dev, PT_F32, 2, xs);
    pt_tensor *y = pt_cast(pt_mul_scalar(pt_rand(dev, PT_F32, 1, ys), 9.99), PT_I64);
    int64_t params = 64 * h + h + hidden * (h * h + h) + h * 10 + 10;
    pt_tensor *flat = pt_zeros(dev, PT_F32, 1, &params);
    pt_optimizer *opt = pt_sgd(wrapped, 1e-4, 0.9, 0.0);
    double t[5][MAX_ROUNDS], sync_part[MAX_ROUNDS], cpu[5][MAX_ROUNDS], over[MAX_ROUNDS];
    fwd_bwd(wrapped, x, y), pt_ddp_sync(ddp); /* warm-up */
    for (int r = 0; r < rounds; ++r) {
        for (int k0 = 0; k0 < 5; ++k0) {
            int k = k0 < 3 ? k0 : 3 + (k0 - 3 + r) % 2; /* the two with an update alternate in order */
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = now(), t1 = t0, c0 = thread_cpu();
            if (k == 0) fwd_bwd(plain, x, y), pt_device_synchronize(dev);
            if (k == 1) pt_dist_all_reduce(g, flat, PT_REDUCE_AVG);
            if (k == 2) fwd_bwd(wrapped, x, y), t1 = now(), pt_ddp_sync(ddp), pt_device_synchronize(dev);
            if (k == 3) fwd_bwd(wrapped, x, y), pt_ddp_sync(ddp), pt_optimizer_step(opt), pt_device_synchronize(dev);
            if (k == 4) fwd_bwd(wrapped, x, y), pt_ddp_step(ddp, opt), pt_device_synchronize(dev);
            double mine = now() - t0;
            cpu[k][r] = slowest(thread_cpu() - c0);
            t[k][r] = slowest(mine);
            if (k == 2) sync_part[r] = slowest(mine - (t1 - t0)), over[r] = pt_ddp_overlap(ddp);
        }
    }
    double m[5];
    for (int k = 0; k < 5; ++k) m[k] = median(t[k], rounds);
    double ms = median(sync_part, rounds);
    double mc[5];
    for (int k = 0; k < 5; ++k) mc[k] = median(cpu[k], rounds);
    if (rank == 0) {
        double hid = m[0] + m[1] - m[2];
        printf("MLP 64-%lld-(%d x %lld)-10, %.1f MB of gradients, %d buckets (cap %.1f MB, %s), batch 64/rank on %s, "
               "medians of %d rounds:\n",
               (long long)h, hidden, (long long)h, params * 4 / 1e6, pt_ddp_bucket_count(ddp),
               (bucket_bytes ? bucket_bytes : PT_DDP_DEFAULT_BUCKET_BYTES) / 1048576.0,
               pt_ddp_threaded(ddp) ? "comm thread" : "MPI_Iallreduce", pt_device_name(dev), rounds);
        printf("  forward+backward alone %8.2f ms\n  all-reduce alone       %8.2f ms\n  sum                    %8.2f ms\n"
               "  DDP step (both)        %8.2f ms (of which after backward: %.2f ms)\n",
               1e3 * m[0], 1e3 * m[1], 1e3 * (m[0] + m[1]), 1e3 * m[2], 1e3 * ms);
        printf("  communication hidden   %8.2f ms (%.0f%% of the all-reduce)\n", 1e3 * hid, 100 * hid / m[1]);
        printf("  all-reduced before backward ended: %.0f%% of the gradients (median of rank 0's rounds)\n",
               100 * median(over, rounds));
        printf("  main thread CPU time: forward+backward %.2f ms, all-reduce %.2f ms, DDP step %.2f ms (DDP adds %.2f ms)\n",
               1e3 * mc[0], 1e3 * mc[1], 1e3 * mc[2], 1e3 * (mc[2] - mc[0]));
        printf("  with an SGD update: pt_ddp_sync + pt_optimizer_step %8.2f ms, pt_ddp_step (per bucket) %8.2f ms "
               "(ratio %.2f)\n",
               1e3 * m[3], 1e3 * m[4], m[3] / m[4]);
    }
    pt_optimizer_free(opt);
    pt_ddp_free(ddp);
    pt_release(x);
    pt_release(y);
    pt_release(flat);
    pt_module_free(plain);
    pt_module_free(wrapped);
}

int main(int argc, char **argv) {
    pt_dist *g = pt_dist_init(&argc, &argv);
    if (!g) {
        fprintf(stderr, "%s\n", pt_last_error());
        return 1;
    }
    size_t max_bytes = argc > 1 ? (size_t)atoll(argv[1]) : (256u << 20);
    int64_t h = argc > 2 ? atoll(argv[2]) : 1024;
    if (pt_dist_rank(g) == 0) printf("%d ranks\n", pt_dist_world_size(g));
    pt_dist *unchecked = pt_dist_init(&argc, &argv); /* a second group on the same MPI */
    if (!unchecked || pt_dist_set_header_check(unchecked, false)) {
        fprintf(stderr, "the unchecked group: %s\n", pt_last_error());
        return 1;
    }
    allreduce_table(g, unchecked, max_bytes);
    pt_dist_finalize(unchecked);
    if (h <= 0) { /* all-reduce table only */
        pt_dist_finalize(g);
        return 0;
    }
    int hidden = argc > 3 ? atoi(argv[3]) : 4;
    size_t cap = argc > 4 ? (size_t)atoll(argv[4]) : (1u << 20);
    overlap_table(g, h, hidden, 0);
    overlap_table(g, h, hidden, cap);
    pt_dist_finalize(g);
    return 0;
}
