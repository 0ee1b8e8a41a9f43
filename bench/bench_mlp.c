/* One training epoch of the digits MLP, libportable (cpu backend) against
 * PyTorch on the CPU, in the same run and with the same thread count.
 *
 * The work on both sides: 1438 training images of examples/data/digits.csv.gz,
 * MLP 64 -> 256 -> ReLU -> 10, cross-entropy, SGD (lr 0.1, momentum 0.9),
 * batch 64; each step gathers its minibatch on the host, copies it to the
 * device, runs forward, backward and the update; the epoch's loss is summed
 * on the device and read once. One warm-up epoch, then EPOCHS timed epochs;
 * the table shows the median (and the best).
 *
 *   bench_mlp [--data digits.csv.gz] [--epochs N] [--threads N] [--no-torch]
 *
 * Threads: OMP_NUM_THREADS if set, else the online cores; the cpu backend's
 * OpenMP loops and OpenBLAS use that many, and PyTorch is given the same via
 * torch.set_num_threads. The PyTorch side is bench_mlp_torch.py, run with
 * $PT_PYTHON or /usr/bin/python3; without torch the table has one row. A
 * benchmark prints numbers; it asserts nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "digits_train.h" /* the model and the step, shared with tests/nn/test_training.c */
#include "portable/portable.h"

#ifndef BENCH_TORCH_SCRIPT
#define BENCH_TORCH_SCRIPT "bench_mlp_torch.py"
#endif

#define BATCH DIGITS_BATCH

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One epoch; returns its mean loss (NAN on error). */
static double epoch(pt_device *dev, pt_module *net, pt_optimizer *opt, const digits *tr, uint64_t seed, int *order,
                    float *px, int64_t *lb) {
    digits_permutation(tr->n, seed, order);
    pt_tensor *loss_sum = pt_zeros(dev, PT_F32, 0, NULL);
    for (int first = 0; first < tr->n; first += BATCH) {
        int count = tr->n - first < BATCH ? tr->n - first : BATCH;
        pt_scope scope = pt_scope_begin();
        pt_tensor *loss = digits_batch_loss(dev, net, tr, order, first, count, px, lb);
        if (digits_update(opt, loss) != PT_OK) {
            pt_scope_end(scope);
            pt_release(loss_sum);
            return NAN;
        }
        pt_no_grad_begin();
        pt_tensor *sum = pt_keep(pt_add(loss_sum, pt_mul_scalar(loss, count)));
        pt_no_grad_end();
        pt_scope_end(scope);
        pt_release(loss_sum);
        loss_sum = sum;
    }
    double loss = pt_item(loss_sum) / tr->n;
    pt_release(loss_sum);
    return loss;
}

/* Runs the PyTorch side; fills *seconds and *best, version. 0 on success. */
static int run_torch(const char *data, int threads, int epochs, double *seconds, double *best, char *version,
                     size_t vcap, char *why, size_t wcap) {
    const char *py = getenv("PT_PYTHON") ? getenv("PT_PYTHON") : "/usr/bin/python3";
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=%d '%s' '%s' --data '%s' --threads %d --epochs %d --batch %d 2>&1",
             threads, py, BENCH_TORCH_SCRIPT, data, threads, epochs, BATCH);
    FILE *p = popen(cmd, "r");
    if (!p) {
        snprintf(why, wcap, "cannot run %s", py);
        return -1;
    }
    char line[1024], last[1024] = "";
    while (fgets(line, sizeof line, p))
        if (line[0] != '#') snprintf(last, sizeof last, "%s", line);
    int rc = pclose(p);
    char ver[64];
    int samples, th;
    if (rc != 0 || sscanf(last, "torch %63s epoch_seconds %lf min_seconds %lf samples %d threads %d", ver, seconds,
                          best, &samples, &th) != 5) {
        last[strcspn(last, "\n")] = '\0';
        snprintf(why, wcap, "%s", last[0] ? last : "no output");
        return -1;
    }
    snprintf(version, vcap, "%s", ver);
    return 0;
}

int main(int argc, char **argv) {
    const char *data_arg = NULL;
    int epochs = 5, threads = 0;
    bool torch = true;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--data") == 0 && i + 1 < argc) data_arg = argv[++i];
        else if (strcmp(argv[i], "--epochs") == 0 && i + 1 < argc) epochs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--no-torch") == 0) torch = false;
        else {
            fprintf(stderr, "usage: %s [--data digits.csv.gz] [--epochs N] [--threads N] [--no-torch]\n", argv[0]);
            return 2;
        }
    }
    if (epochs < 1) epochs = 1;
    if (threads <= 0) threads = getenv("OMP_NUM_THREADS") ? atoi(getenv("OMP_NUM_THREADS")) : 0;
    if (threads <= 0) threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (threads <= 0) threads = 1;
    /* The cpu backend reads this when it loads, so set it before the first call. */
    char thread_env[32];
    snprintf(thread_env, sizeof thread_env, "%d", threads);
    setenv("OMP_NUM_THREADS", thread_env, 1);
    setenv("OPENBLAS_NUM_THREADS", thread_env, 0);

    char path[4096], err[512];
    if (digits_find(data_arg, path, sizeof path) != 0) {
        fprintf(stderr, "bench_mlp: %s\n", path);
        return 2;
    }
    digits all, tr, te;
    if (digits_load(path, &all, err, sizeof err) != 0 || digits_split(&all, 42, 0.8, &tr, &te) != 0) {
        fprintf(stderr, "bench_mlp: %s\n", err);
        return 2;
    }
    digits_free(&all);

    pt_device *cpu = pt_cpu();
    if (!cpu) {
        fprintf(stderr, "bench_mlp: no cpu device: %s\n", pt_last_error());
        return 1;
    }
    pt_manual_seed(0);
    pt_module *net = digits_mlp();
    pt_optimizer *opt = digits_sgd(net);
    int *order = malloc((size_t)tr.n * sizeof *order);
    float *px = malloc((size_t)BATCH * DIGITS_FEATURES * sizeof *px);
    int64_t *lb = malloc(BATCH * sizeof *lb);
    double *times = malloc((size_t)epochs * sizeof *times);
    if (!opt || !order || !px || !lb || !times) {
        fprintf(stderr, "bench_mlp: setup failed: %s\n", pt_last_error());
        return 1;
    }
    double loss = epoch(cpu, net, opt, &tr, 1000, order, px, lb); /* warm-up: creates parameters, fills caches */
    for (int e = 0; e < epochs && !isnan(loss); ++e) {
        double t0 = now_seconds();
        loss = epoch(cpu, net, opt, &tr, 1001 + (uint64_t)e, order, px, lb);
        times[e] = now_seconds() - t0;
    }
    if (isnan(loss)) {
        fprintf(stderr, "bench_mlp: training failed: %s\n", pt_last_error());
        return 1;
    }
    qsort(times, (size_t)epochs, sizeof *times, cmp_double);
    double ours = times[epochs / 2], ours_best = times[0];

    double theirs = NAN, theirs_best = NAN;
    char version[64] = "", why[512] = "skipped (--no-torch)";
    bool have_torch = torch && run_torch(path, threads, epochs, &theirs, &theirs_best, version, sizeof version, why,
                                         sizeof why) == 0;

    printf("MLP 64-256-10 on digits: one epoch = %d samples in %d steps of batch %d, SGD momentum, %d thread%s\n",
           tr.n, (tr.n + BATCH - 1) / BATCH, BATCH, threads, threads == 1 ? "" : "s");
    printf("median of %d epochs after one warm-up epoch (last loss %.4f)\n\n", epochs, loss);
    printf("%-24s %12s %12s %14s\n", "", "epoch (ms)", "best (ms)", "samples/s");
    printf("%-24s %12.2f %12.2f %14.0f\n", "libportable (cpu)", 1e3 * ours, 1e3 * ours_best, tr.n / ours);
    if (have_torch) {
        char name[96];
        snprintf(name, sizeof name, "PyTorch %s (cpu)", version);
        printf("%-24s %12.2f %12.2f %14.0f\n", name, 1e3 * theirs, 1e3 * theirs_best, tr.n / theirs);
        printf("\nratio PyTorch / libportable epoch time: %.2fx (%s)\n", theirs / ours,
               theirs > ours ? "libportable is faster" : "PyTorch is faster");
    } else {
        printf("%-24s %s\n", "PyTorch (cpu)", why);
    }

    pt_optimizer_free(opt);
    pt_module_free(net);
    free(order);
    free(px);
    free(lb);
    free(times);
    digits_free(&tr);
    digits_free(&te);
    return 0;
}
