/* Data-parallel training of the digits MLP (examples/digits_train.h) under
 * mpirun -np 2: each rank trains on its shard with batch B, and every rank
 * also trains a single-process reference with batch B * world on the same
 * samples. After every step: parameters bit-identical on all ranks, and
 * within 1e-5 of the reference. At the end: test accuracy >= 95%. Buckets
 * are capped small (64 KiB) so that the MLP's gradients go in two buckets,
 * the first launched during backward.
 *
 * pt_ddp_step (each bucket stepped as soon as it arrives) is checked
 * against a second wrapped net trained with pt_ddp_sync + one
 * pt_optimizer_step: bit-identical after every step. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digits_train.h"
#include "portable/dist.h"

#define B 32
#define EPOCHS 6
#define TOL 1e-5

static int rank, world, failures;

static pt_module *make_net(pt_device *dev) {
    pt_manual_seed(0);
    pt_module *net = digits_mlp();
    /* one forward so the lazy linears make their parameters */
    pt_no_grad_begin();
    pt_scope s = pt_scope_begin();
    pt_module_forward(net, pt_zeros(dev, PT_F32, 2, (int64_t[]){1, DIGITS_FEATURES}));
    pt_scope_end(s);
    pt_no_grad_end();
    return net;
}

/* Largest |a - b| over the parameters; also whether rank 0 has the same
 * bits as this rank. */
static double compare(pt_module *net, pt_module *ref, bool *same_as_rank0) {
    pt_tensor *a[8], *b[8];
    int n = pt_module_parameters(net, NULL, a, 8);
    pt_module_parameters(ref, NULL, b, 8);
    double worst = 0;
    *same_as_rank0 = true;
    for (int i = 0; i < n; ++i) {
        int64_t k = pt_tensor_numel(a[i]);
        float *x = malloc((size_t)k * 4), *y = malloc((size_t)k * 4), *z = malloc((size_t)k * 4);
        pt_to_host(a[i], x, (size_t)k * 4);
        pt_to_host(b[i], y, (size_t)k * 4);
        memcpy(z, x, (size_t)k * 4);
        MPI_Bcast(z, (int)k, MPI_FLOAT, 0, MPI_COMM_WORLD);
        if (memcmp(x, z, (size_t)k * 4) != 0) *same_as_rank0 = false;
        for (int64_t j = 0; j < k; ++j) worst = fmax(worst, fabs((double)x[j] - y[j]));
        free(x);
        free(y);
        free(z);
    }
    return worst;
}

/* Copies of net's gradients (host floats, one block per parameter). */
static float **grads_of(pt_module *net, int *count) {
    pt_tensor *p[8];
    int n = pt_module_parameters(net, NULL, p, 8);
    float **out = calloc(8, sizeof *out);
    for (int i = 0; i < n; ++i) {
        int64_t k = pt_tensor_numel(p[i]);
        out[i] = calloc((size_t)k, 4);
        pt_tensor *g = pt_grad(p[i]);
        if (g) pt_to_host(g, out[i], (size_t)k * 4);
    }
    *count = n;
    return out;
}

static void free_grads(float **g, int n) {
    for (int i = 0; i < n; ++i) free(g[i]);
    free(g);
}

/* Whether a and b have the same bits (this rank only). */
static bool same_bits(pt_module *a, pt_module *b) {
    pt_tensor *x[8], *y[8];
    int n = pt_module_parameters(a, NULL, x, 8);
    bool same = n == pt_module_parameters(b, NULL, y, 8);
    for (int i = 0; same && i < n; ++i) {
        size_t bytes = (size_t)pt_tensor_numel(x[i]) * 4;
        float *p = malloc(bytes), *q = malloc(bytes);
        same = !pt_to_host(x[i], p, bytes) && !pt_to_host(y[i], q, bytes) && memcmp(p, q, bytes) == 0;
        free(p);
        free(q);
    }
    return same;
}

/* pt_ddp_step's errors: a NULL optimizer, or one of another module,
 * still drain the buckets (the wrapper works afterwards). */
static void check_step_errors(pt_ddp *ddp, pt_module *net, pt_optimizer *opt, pt_optimizer *foreign, pt_device *dev,
                              const digits *train, const int *shard, float *px, int64_t *lb) {
    pt_scope s = pt_scope_begin();
    pt_optimizer_zero_grad(opt);
    pt_status st = pt_backward(digits_batch_loss(dev, net, train, shard, 0, B, px, lb));
    pt_status e = st ? st : pt_ddp_step(ddp, NULL);
    if (e != PT_ERR_INVALID_ARGUMENT || !strstr(pt_last_error(), "pt_ddp_step") ||
        !strstr(pt_last_error(), "optimizer is NULL")) {
        fprintf(stderr, "rank %d: FAIL pt_ddp_step(NULL optimizer): status %d, '%s'\n", rank, (int)e, pt_last_error());
        ++failures;
    }
    pt_optimizer_zero_grad(opt);
    st = pt_backward(digits_batch_loss(dev, net, train, shard, 0, B, px, lb));
    e = st ? st : pt_ddp_step(ddp, foreign);
    if (e != PT_ERR_INVALID_ARGUMENT || !strstr(pt_last_error(), "not a parameter of the optimizer's module")) {
        fprintf(stderr, "rank %d: FAIL pt_ddp_step(another module's optimizer): status %d, '%s'\n", rank, (int)e,
                pt_last_error());
        ++failures;
    }
    if (pt_ddp_step(NULL, opt) != PT_ERR_INVALID_ARGUMENT) {
        fprintf(stderr, "rank %d: FAIL pt_ddp_step(NULL wrapper) accepted\n", rank);
        ++failures;
    }
    pt_optimizer_zero_grad(opt);
    st = pt_backward(digits_batch_loss(dev, net, train, shard, 0, B, px, lb));
    if (!st) st = pt_ddp_step(ddp, opt);
    if (st) {
        fprintf(stderr, "rank %d: FAIL backward + step after the errors: %s\n", rank, pt_last_error());
        ++failures;
    }
    pt_optimizer_zero_grad(opt);
    pt_scope_end(s);
}

/* Gradient accumulation and its errors, on batches a and b of this rank's
 * shard:
 * - two backwards, the first with sync off, then pt_ddp_sync: each gradient
 *   is the rank average of the local sums, which is checked against doing
 *   the same by hand (sync off for both, then pt_dist_all_reduce AVG);
 * - a second synced backward before pt_ddp_sync fails with a message and
 *   the wrapper works again after pt_ddp_sync;
 * - turning sync off between a synced backward and its sync fails. */
static void check_accumulation(pt_dist *g, pt_ddp *ddp, pt_module *net, pt_optimizer *opt, pt_device *dev,
                               const digits *train, const int *shard, float *px, int64_t *lb) {
    pt_scope s = pt_scope_begin();
    int n;
    /* By hand. */
    pt_status st = pt_optimizer_zero_grad(opt);
    if (!st) st = pt_ddp_set_require_sync(ddp, false);
    if (!st) st = pt_backward(digits_batch_loss(dev, net, train, shard, 0, B, px, lb));
    if (!st) st = pt_backward(digits_batch_loss(dev, net, train, shard, B, B, px, lb));
    pt_tensor *p[8];
    int np = pt_module_parameters(net, NULL, p, 8);
    for (int i = 0; !st && i < np; ++i) st = pt_dist_all_reduce(g, pt_grad(p[i]), PT_REDUCE_AVG);
    float **want = grads_of(net, &n);
    /* Through the wrapper. */
    if (!st) st = pt_optimizer_zero_grad(opt);
    if (!st) st = pt_backward(digits_batch_loss(dev, net, train, shard, 0, B, px, lb));
    if (!st) st = pt_ddp_set_require_sync(ddp, true);
    if (!st) st = pt_backward(digits_batch_loss(dev, net, train, shard, B, B, px, lb));
    if (!st) st = pt_ddp_sync(ddp);
    if (st) {
        fprintf(stderr, "rank %d: FAIL accumulation: %s\n", rank, pt_last_error());
        ++failures;
    }
    float **got = grads_of(net, &n);
    double worst = 0;
    for (int i = 0; i < n; ++i)
        for (int64_t j = 0; j < pt_tensor_numel(p[i]); ++j) worst = fmax(worst, fabs((double)got[i][j] - want[i][j]));
    if (!(worst <= 1e-6)) {
        fprintf(stderr, "rank %d: FAIL accumulated ddp gradients differ from the hand-made average by %g\n", rank,
                worst);
        ++failures;
    }
    free_grads(want, n);
    free_grads(got, n);

    /* Two synced backwards: the second one's first hook refuses. */
    pt_optimizer_zero_grad(opt);
    st = pt_backward(digits_batch_loss(dev, net, train, shard, 0, B, px, lb));
    pt_status second = st ? st : pt_backward(digits_batch_loss(dev, net, train, shard, B, B, px, lb));
    if (second != PT_ERR_INVALID_ARGUMENT || !strstr(pt_last_error(), "second backward before pt_ddp_sync") ||
        !strstr(pt_last_error(), "pt_ddp_set_require_sync")) {
        fprintf(stderr, "rank %d: FAIL second backward: status %d, '%s'\n", rank, (int)second, pt_last_error());
        ++failures;
    }
    pt_status off = pt_ddp_set_require_sync(ddp, false);
    if (off != PT_ERR_INVALID_ARGUMENT || !strstr(pt_last_error(), "pt_ddp_set_require_sync")) {
        fprintf(stderr, "rank %d: FAIL sync off before pt_ddp_sync: status %d, '%s'\n", rank, (int)off,
                pt_last_error());
        ++failures;
    }
    if (pt_ddp_sync(ddp) || pt_ddp_set_require_sync(NULL, true) != PT_ERR_INVALID_ARGUMENT) {
        fprintf(stderr, "rank %d: FAIL sync after the refused backward / NULL wrapper: %s\n", rank, pt_last_error());
        ++failures;
    }
    /* The wrapper works again. */
    pt_optimizer_zero_grad(opt);
    st = pt_backward(digits_batch_loss(dev, net, train, shard, 0, B, px, lb));
    if (!st) st = pt_ddp_sync(ddp);
    if (st) {
        fprintf(stderr, "rank %d: FAIL backward + sync after the errors: %s\n", rank, pt_last_error());
        ++failures;
    }
    pt_optimizer_zero_grad(opt);
    pt_scope_end(s);
}

static double accuracy(pt_module *net, const digits *d, pt_device *dev) {
    pt_scope s = pt_scope_begin();
    pt_no_grad_begin();
    pt_tensor *x = pt_from_data(dev, PT_F32, 2, (int64_t[]){d->n, DIGITS_FEATURES}, d->pixels);
    pt_tensor *y = pt_from_data(dev, PT_I64, 1, (int64_t[]){d->n}, d->labels);
    double a = pt_item(pt_mean(pt_cast(pt_eq(pt_argmax(pt_module_forward(net, x), 1, false), y), PT_F32), PT_ALL, false));
    pt_no_grad_end();
    pt_scope_end(s);
    return a;
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
    digits all, train, test;
    if (!dev || digits_find(NULL, path, sizeof path) || digits_load(path, &all, err, sizeof err) ||
        digits_split(&all, 42, 0.8, &train, &test)) {
        fprintf(stderr, "rank %d: set-up failed: %s %s\n", rank, path, pt_last_error());
        pt_dist_finalize(g);
        return 1;
    }
    digits_free(&all);

    pt_module *net = make_net(dev), *ref = make_net(dev), *net2 = make_net(dev);
    pt_ddp *ddp = pt_ddp_new(g, net, 64 << 10), *ddp2 = pt_ddp_new(g, net2, 64 << 10);
    pt_optimizer *opt = digits_sgd(net), *ref_opt = digits_sgd(ref), *opt2 = digits_sgd(net2);
    if (!ddp || !ddp2 || !opt || !ref_opt || !opt2) {
        fprintf(stderr, "rank %d: %s\n", rank, pt_last_error());
        return 1;
    }
    if (pt_ddp_bucket_count(ddp) != 2 || pt_ddp_bucket_size(ddp, 0) != 3 || pt_ddp_bucket_size(ddp, 1) != 1) {
        fprintf(stderr, "rank %d: FAIL buckets %d (%d, %d), want 2 (3, 1)\n", rank, pt_ddp_bucket_count(ddp),
                pt_ddp_bucket_size(ddp, 0), pt_ddp_bucket_size(ddp, 1));
        ++failures;
    }

    int n = train.n;
    int64_t count = pt_dist_shard(g, n, 0, NULL, 0);
    int64_t *shard64 = malloc((size_t)count * 8), *perm = malloc((size_t)n * 8);
    int *shard = malloc((size_t)count * sizeof *shard), *ref_order = malloc((size_t)count * world * sizeof *ref_order);
    float px[B * 8 * DIGITS_FEATURES];
    int64_t lb[B * 8];
    double worst = 0;
    int steps_done = 0;
    for (int epoch = 0; epoch < EPOCHS && !failures; ++epoch) {
        pt_dist_shard(g, n, 1000 + (uint64_t)epoch, shard64, count);
        pt_dist_permutation(n, 1000 + (uint64_t)epoch, perm);
        for (int64_t k = 0; k < count; ++k) shard[k] = (int)shard64[k];
        for (int64_t k = 0; k < count * world; ++k) ref_order[k] = (int)perm[k % n]; /* the padded order */
        for (int64_t first = 0; first < count && !failures; first += B) {
            int rows = (int)(count - first < B ? count - first : B);
            pt_scope s = pt_scope_begin();
            pt_tensor *loss = digits_batch_loss(dev, net, &train, shard, (int)first, rows, px, lb);
            pt_status st = pt_optimizer_zero_grad(opt);
            if (!st) st = pt_backward(loss);
            if (!st) st = pt_ddp_step(ddp, opt);
            /* The same step as sync + one full optimizer step. */
            pt_tensor *loss2 = st ? NULL : digits_batch_loss(dev, net2, &train, shard, (int)first, rows, px, lb);
            if (!st) st = pt_optimizer_zero_grad(opt2);
            if (!st) st = pt_backward(loss2);
            if (!st) st = pt_ddp_sync(ddp2);
            if (!st) st = pt_optimizer_step(opt2);
            pt_tensor *ref_loss =
                digits_batch_loss(dev, ref, &train, ref_order, (int)first * world, rows * world, px, lb);
            if (!st) st = digits_update(ref_opt, ref_loss);
            pt_scope_end(s);
            if (st) {
                fprintf(stderr, "rank %d: FAIL step: %s\n", rank, pt_last_error());
                ++failures;
                break;
            }
            bool same;
            double diff = compare(net, ref, &same);
            worst = fmax(worst, diff);
            ++steps_done;
            if (!same) {
                fprintf(stderr, "rank %d: FAIL parameters differ from rank 0's after step %d\n", rank, steps_done);
                ++failures;
            }
            if (!same_bits(net, net2)) {
                fprintf(stderr, "rank %d: FAIL pt_ddp_step differs from pt_ddp_sync + pt_optimizer_step after step %d\n",
                        rank, steps_done);
                ++failures;
            }
            if (diff > TOL) {
                fprintf(stderr, "rank %d: FAIL step %d: %g from the single-process batch-%d run (tolerance %g)\n",
                        rank, steps_done, diff, B * world, TOL);
                ++failures;
            }
        }
    }
    double acc = accuracy(net, &test, dev);
    if (!failures) check_accumulation(g, ddp, net, opt, dev, &train, shard, px, lb);
    if (!failures) check_step_errors(ddp, net, opt, ref_opt, dev, &train, shard, px, lb);
    if (!(acc >= 0.95)) {
        fprintf(stderr, "rank %d: FAIL accuracy %.4f < 0.95\n", rank, acc);
        ++failures;
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("ddp on %s (%s), %d ranks, batch %d each: %d steps, params bit-identical across ranks, max |ddp - "
               "single-process batch %d| = %.3g, test accuracy %.2f%%: %s\n",
               pt_device_name(dev), pt_ddp_threaded(ddp) ? "comm thread" : "MPI_Iallreduce", world, B, steps_done, B * world, worst, 100 * acc, total ? "FAILED" : "ok");
    pt_optimizer_free(opt);
    pt_optimizer_free(ref_opt);
    pt_optimizer_free(opt2);
    pt_ddp_free(ddp);
    pt_ddp_free(ddp2);
    pt_module_free(net2);
    pt_module_free(net);
    pt_module_free(ref);
    free(shard64);
    free(perm);
    free(shard);
    free(ref_order);
    digits_free(&train);
    digits_free(&test);
    pt_dist_finalize(g);
    return total ? 1 : 0;
}
