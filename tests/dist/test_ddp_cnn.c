/* Data-parallel training of the digits CNN (examples/digits_train.h's
 * digits_cnn, the cnn_digits architecture) under mpirun -np 2, batch B per
 * rank, gradients in several buckets (a small cap), pt_ddp_step.
 *
 * 1. Without batch norm: after every step the parameters are bit-identical
 *    on all ranks and within 1e-5 of single-process training with batch
 *    B * world on the same samples (each rank also trains that reference).
 * 2. With batch norm: batch statistics are per rank (over B samples, not
 *    B * world), so a step is not the single-process one and only these
 *    hold: after every step the parameters AND the buffers (running
 *    statistics, broadcast from rank 0 at each sync) are bit-identical on
 *    all ranks; the test accuracy in evaluation mode (running statistics)
 *    is >= 95% at the end. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digits_train.h"
#include "portable/dist.h"

#define B 32
#define TOL 1e-5
#define MAXP 32
#define BUCKET_CAP (8 << 10) /* several buckets for this ~30 KB net */

static int rank, world, failures;

static pt_module *make_net(pt_device *dev, bool batch_norm) {
    pt_manual_seed(0);
    pt_module *net = digits_cnn(batch_norm);
    /* One forward in evaluation mode makes the lazy parameters and buffers
     * without touching the running statistics. */
    pt_module_train(net, false);
    pt_no_grad_begin();
    pt_scope s = pt_scope_begin();
    pt_module_forward(net, pt_zeros(dev, PT_F32, 4, (int64_t[]){1, 1, 8, 8}));
    pt_scope_end(s);
    pt_no_grad_end();
    pt_module_train(net, true);
    return net;
}

/* Over every state-dict entry: whether rank 0 has the same bytes as this
 * rank, and (ref non-NULL, f32 entries) the largest |net - ref|. */
static double compare(pt_module *net, pt_module *ref, bool *same_as_rank0) {
    pt_tensor *a[MAXP], *b[MAXP];
    int n = pt_module_parameters(net, NULL, a, MAXP);
    if (ref) pt_module_parameters(ref, NULL, b, MAXP);
    double worst = 0;
    *same_as_rank0 = true;
    for (int i = 0; i < n; ++i) {
        int64_t k = pt_tensor_numel(a[i]);
        size_t bytes = (size_t)k * pt_dtype_size(pt_tensor_dtype(a[i]));
        char *x = malloc(bytes), *z = malloc(bytes);
        pt_to_host(a[i], x, bytes);
        memcpy(z, x, bytes);
        MPI_Bcast(z, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        if (memcmp(x, z, bytes) != 0) *same_as_rank0 = false;
        if (ref && pt_tensor_dtype(a[i]) == PT_F32) {
            float *y = malloc(bytes);
            pt_to_host(b[i], y, bytes);
            for (int64_t j = 0; j < k; ++j) worst = fmax(worst, fabs((double)((float *)x)[j] - y[j]));
            free(y);
        }
        free(x);
        free(z);
    }
    return worst;
}

static double accuracy(pt_module *net, const digits *d, pt_device *dev) {
    pt_scope s = pt_scope_begin();
    pt_no_grad_begin();
    pt_module_train(net, false);
    pt_tensor *x = pt_from_data(dev, PT_F32, 4, (int64_t[]){d->n, 1, 8, 8}, d->pixels);
    pt_tensor *y = pt_from_data(dev, PT_I64, 1, (int64_t[]){d->n}, d->labels);
    double a = pt_item(pt_mean(pt_cast(pt_eq(pt_argmax(pt_module_forward(net, x), 1, false), y), PT_F32), PT_ALL, false));
    pt_module_train(net, true);
    pt_no_grad_end();
    pt_scope_end(s);
    return a;
}

/* Trains for epochs; with_ref: also the single-process reference, checked
 * every step. Returns the test accuracy. */
static double train(pt_dist *g, pt_device *dev, const digits *tr, const digits *te, bool batch_norm, int epochs,
                    bool with_ref) {
    const char *what = batch_norm ? "cnn with batch norm" : "cnn without batch norm";
    pt_module *net = make_net(dev, batch_norm), *ref = with_ref ? make_net(dev, batch_norm) : NULL;
    pt_ddp *ddp = pt_ddp_new(g, net, BUCKET_CAP);
    pt_optimizer *opt = digits_sgd(net), *ref_opt = with_ref ? digits_sgd(ref) : NULL;
    if (!ddp || !opt || (with_ref && !ref_opt)) {
        fprintf(stderr, "rank %d: FAIL %s set-up: %s\n", rank, what, pt_last_error());
        ++failures;
        return 0;
    }
    if (pt_ddp_bucket_count(ddp) < 3) {
        fprintf(stderr, "rank %d: FAIL %s: %d buckets, want several\n", rank, what, pt_ddp_bucket_count(ddp));
        ++failures;
    }
    int n = tr->n;
    int64_t count = pt_dist_shard(g, n, 0, NULL, 0);
    int64_t *shard64 = malloc((size_t)count * 8), *perm = malloc((size_t)n * 8);
    int *shard = malloc((size_t)count * sizeof *shard), *ref_order = malloc((size_t)count * world * sizeof *ref_order);
    float *px = malloc((size_t)B * world * DIGITS_FEATURES * sizeof *px);
    int64_t *lb = malloc((size_t)B * world * sizeof *lb);
    double worst = 0;
    int steps = 0;
    for (int epoch = 0; epoch < epochs && !failures; ++epoch) {
        pt_dist_shard(g, n, 1000 + (uint64_t)epoch, shard64, count);
        pt_dist_permutation(n, 1000 + (uint64_t)epoch, perm);
        for (int64_t k = 0; k < count; ++k) shard[k] = (int)shard64[k];
        for (int64_t k = 0; k < count * world; ++k) ref_order[k] = (int)perm[k % n];
        for (int64_t first = 0; first < count && !failures; first += B) {
            int rows = (int)(count - first < B ? count - first : B);
            pt_scope s = pt_scope_begin();
            pt_status st = pt_optimizer_zero_grad(opt);
            if (!st) st = pt_backward(digits_image_batch_loss(dev, net, tr, shard, (int)first, rows, px, lb));
            if (!st) st = pt_ddp_step(ddp, opt);
            if (!st && with_ref)
                st = digits_update(ref_opt, digits_image_batch_loss(dev, ref, tr, ref_order, (int)first * world,
                                                                    rows * world, px, lb));
            pt_scope_end(s);
            if (st) {
                fprintf(stderr, "rank %d: FAIL %s step: %s\n", rank, what, pt_last_error());
                ++failures;
                break;
            }
            bool same;
            double diff = compare(net, ref, &same);
            worst = fmax(worst, diff);
            ++steps;
            if (!same) {
                fprintf(stderr, "rank %d: FAIL %s: parameters or buffers differ from rank 0's after step %d\n", rank,
                        what, steps);
                ++failures;
            }
            if (with_ref && !(diff <= TOL)) {
                fprintf(stderr, "rank %d: FAIL %s step %d: %g from the single-process batch-%d run (tolerance %g)\n",
                        rank, what, steps, diff, B * world, TOL);
                ++failures;
            }
        }
    }
    double acc = accuracy(net, te, dev);
    if (rank == 0)
        printf("%s: %d steps on %d ranks, batch %d each, %d buckets: parameters%s bit-identical across ranks; "
               "max |ddp - single-process batch %d| = %.3g%s; test accuracy %.2f%%\n",
               what, steps, world, B, pt_ddp_bucket_count(ddp), batch_norm ? " and buffers" : "", B * world, worst,
               with_ref ? "" : " (not compared: batch statistics are per rank)", 100 * acc);
    pt_optimizer_free(opt);
    pt_optimizer_free(ref_opt);
    pt_ddp_free(ddp);
    pt_module_free(net);
    pt_module_free(ref);
    free(shard64);
    free(perm);
    free(shard);
    free(ref_order);
    free(px);
    free(lb);
    return acc;
}

int main(int argc, char **argv) {
    pt_dist *g = pt_dist_init(&argc, &argv);
    if (!g) {
        fprintf(stderr, "%s\n", pt_last_error());
        return 1;
    }
    rank = pt_dist_rank(g);
    world = pt_dist_world_size(g);
    pt_device *dev = pt_dist_device(g);
    char path[4096], err[512];
    digits all, tr, te;
    if (!dev || digits_find(NULL, path, sizeof path) || digits_load(path, &all, err, sizeof err) ||
        digits_split(&all, 42, 0.8, &tr, &te)) {
        fprintf(stderr, "rank %d: set-up failed: %s %s\n", rank, path, pt_last_error());
        pt_dist_finalize(g);
        return 1;
    }
    digits_free(&all);
    train(g, dev, &tr, &te, false, 4, true);
    double acc = failures ? 0 : train(g, dev, &tr, &te, true, 5, false);
    if (!failures && !(acc >= 0.95)) {
        fprintf(stderr, "rank %d: FAIL cnn with batch norm: test accuracy %.4f < 0.95\n", rank, acc);
        ++failures;
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("%s\n", total ? "FAILED" : "ok");
    digits_free(&tr);
    digits_free(&te);
    pt_dist_finalize(g);
    return total ? 1 : 0;
}
