/* The convolutional-net benchmarks, libportable's side (cpu backend):
 *
 *   bench_cnn epoch [--data digits.csv.gz]   one training epoch of examples/cnn_digits.c's
 *                                            net (batch 64, SGD lr 0.1 momentum 0.9)
 *   bench_cnn conv                           conv2d forward + backward (input, weight and
 *                                            bias gradients) of a [32, 64, 32, 32] input
 *                                            with 64 3x3 filters, padding 1
 *
 * One warm-up, then REPS timed repetitions; prints "seconds <median wall> min
 * <min wall> cpu <median CPU seconds>".
 * bench_cnn.sh runs this and bench_cnn_torch.py alternately, one thread
 * pinned, and prints the table. A benchmark prints numbers; it asserts nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "digits_data.h"
#include "digits_train.h"
#include "portable/portable.h"

#define REPS 5
#define BATCH 64

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* CPU time of the process: on a machine shared with other work, a pinned
 * single-threaded run's wall time includes the time other processes held
 * the core; its CPU time does not. Both are printed. */
static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int fail(const char *what) {
    fprintf(stderr, "bench_cnn: %s: %s\n", what, pt_last_error());
    return 1;
}

static double epoch(pt_device *dev, pt_module *net, pt_optimizer *opt, const digits *tr, uint64_t seed, int *order,
                    float *px, int64_t *lb, double *cpu) {
    digits_permutation(tr->n, seed, order);
    pt_tensor *loss_sum = pt_zeros(dev, PT_F32, 0, NULL);
    const double t0 = now_seconds(), c0 = cpu_seconds();
    for (int first = 0; first < tr->n; first += BATCH) {
        int count = tr->n - first < BATCH ? tr->n - first : BATCH;
        pt_scope scope = pt_scope_begin();
        digits_gather(tr, order, first, count, px, lb);
        int64_t xs[4] = {count, 1, 8, 8}, ys[1] = {count};
        pt_tensor *x = pt_from_data(dev, PT_F32, 4, xs, px), *y = pt_from_data(dev, PT_I64, 1, ys, lb);
        pt_tensor *loss = pt_cross_entropy(pt_module_forward(net, x), y);
        pt_optimizer_zero_grad(opt);
        if (pt_backward(loss) != PT_OK || pt_optimizer_step(opt) != PT_OK) {
            pt_scope_end(scope);
            return -1;
        }
        pt_no_grad_begin();
        pt_tensor *sum = pt_keep(pt_add(loss_sum, pt_mul_scalar(loss, count)));
        pt_no_grad_end();
        pt_scope_end(scope);
        pt_release(loss_sum);
        loss_sum = sum;
    }
    double l = pt_item(loss_sum);
    pt_release(loss_sum);
    *cpu = cpu_seconds() - c0;
    return l != l ? -1 : now_seconds() - t0;
}

static int bench_epoch(const char *data_arg) {
    char path[4096], err[512];
    if (digits_find(data_arg, path, sizeof path) != 0) return fprintf(stderr, "bench_cnn: %s\n", path), 2;
    digits all, train, test;
    if (digits_load(path, &all, err, sizeof err) != 0) return fprintf(stderr, "bench_cnn: %s\n", err), 2;
    if (digits_split(&all, 42, 0.8, &train, &test) != 0) return 2;
    pt_device *dev = pt_cpu();
    pt_manual_seed(0);
    pt_module *net = digits_cnn(true); /* conv -> batch norm -> relu -> pool, twice, then linear */
    pt_optimizer *opt = net ? pt_sgd(net, 0.1, 0.9, 0.0) : NULL;
    int *order = malloc((size_t)train.n * sizeof *order);
    float *px = malloc((size_t)BATCH * DIGITS_FEATURES * sizeof *px);
    int64_t *lb = malloc(BATCH * sizeof *lb);
    if (!opt || !order || !px || !lb) return fail("setup");
    double t[REPS + 1], c[REPS + 1];
    for (int r = 0; r <= REPS; ++r)
        if ((t[r] = epoch(dev, net, opt, &train, 1000 + (uint64_t)r, order, px, lb, &c[r])) < 0) return fail("epoch");
    qsort(t + 1, REPS, sizeof *t, cmp_double);
    qsort(c + 1, REPS, sizeof *c, cmp_double);
    printf("seconds %.6f min %.6f cpu %.6f\n", t[1 + REPS / 2], t[1], c[1 + REPS / 2]);
    pt_optimizer_free(opt);
    pt_module_free(net);
    free(order);
    free(px);
    free(lb);
    digits_free(&all);
    digits_free(&train);
    digits_free(&test);
    return 0;
}

static int bench_conv(void) {
    pt_device *dev = pt_cpu();
    int64_t xs[4] = {32, 64, 32, 32}, ws[4] = {64, 64, 3, 3}, bs = 64;
    pt_manual_seed(1);
    pt_tensor *x = pt_rand(dev, PT_F32, 4, xs), *w = pt_rand(dev, PT_F32, 4, ws), *b = pt_rand(dev, PT_F32, 1, &bs);
    if (!x || !w || !b || pt_set_requires_grad(x, true) || pt_set_requires_grad(w, true) ||
        pt_set_requires_grad(b, true))
        return fail("inputs");
    const pt_conv2d_opts pad1 = {.padding = {1, 1}};
    double t[REPS + 1], c[REPS + 1];
    for (int r = 0; r <= REPS; ++r) {
        pt_scope scope = pt_scope_begin();
        double t0 = now_seconds(), c0 = cpu_seconds();
        pt_tensor *y = pt_f_conv2d(x, w, b, &pad1);
        pt_tensor *loss = pt_sum(y, PT_ALL, false); /* seed gradient of ones, like y.sum().backward() */
        if (pt_backward(loss) != PT_OK) return fail("backward");
        pt_tensor *gx = pt_grad(x);
        if (pt_device_synchronize(dev) != PT_OK) return fail("sync");
        t[r] = now_seconds() - t0;
        c[r] = cpu_seconds() - c0;
        pt_release(gx);
        pt_zero_grad(x);
        pt_zero_grad(w);
        pt_zero_grad(b);
        pt_scope_end(scope);
    }
    qsort(t + 1, REPS, sizeof *t, cmp_double);
    qsort(c + 1, REPS, sizeof *c, cmp_double);
    printf("seconds %.6f min %.6f cpu %.6f\n", t[1 + REPS / 2], t[1], c[1 + REPS / 2]);
    pt_release(x);
    pt_release(w);
    pt_release(b);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "conv") == 0) return bench_conv();
    if (argc >= 2 && strcmp(argv[1], "epoch") == 0)
        return bench_epoch(argc >= 4 && strcmp(argv[2], "--data") == 0 ? argv[3] : NULL);
    fprintf(stderr, "usage: bench_cnn epoch [--data digits.csv.gz] | bench_cnn conv\n");
    return 2;
}
