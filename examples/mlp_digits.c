/* Training a small neural net on real data, on any device.
 *
 * An MLP (64 -> 256 -> ReLU -> 10) learns to read 8x8 handwritten digits
 * (the UCI digits set, examples/data/digits.csv.gz). The same code runs on
 * the cpu, an OpenCL device or a CUDA GPU: PORTABLE_BACKEND picks the device,
 * the model's parameters are created there at the first forward pass, and
 * every minibatch is copied there (like d2l's Trainer with a GPU).
 *
 *   PORTABLE_BACKEND=cpu    ./mlp_digits
 *   PORTABLE_BACKEND=opencl ./mlp_digits [--data path/to/digits.csv.gz] [--save model.safetensors]
 *   ./mlp_digits [--epochs N] [--loss-log losses.txt] [--graph]
 *
 * --graph captures the training step once per batch shape (the full batch
 * and the short last one: a graph replays only the shapes it captured) and
 * replays it (portable/graph.h): the same batches, the same losses bit for
 * bit, with the host's per-op work done once. The first step runs eagerly,
 * so the lazy parameters and the optimizer's momentum exist before a capture.
 *
 * --loss-log writes every training step's loss ("epoch step loss", %.9g, as
 * cnn_digits does): the Python example (python/examples/mlp_digits.py) writes
 * the same file, and its test compares the two step by step.
 *
 * After training it measures test accuracy, saves the parameters as
 * safetensors (loadable by PyTorch), loads them into a fresh model on the cpu
 * and checks that model predicts exactly the same. Exit status: 0 when the
 * accuracy is >= 95% and the reloaded model agrees, 1 otherwise, 2 for bad
 * usage or missing data, 77 when the device PORTABLE_BACKEND names is not
 * available here (test harnesses count that as a skip). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "digits_cli.h"
#include "digits_data.h"
#include "digits_graph.h"
#include "portable/portable.h"

#define SPLIT_SEED 42      /* the 80/20 split */
#define TRAIN_SEED 0       /* parameter initialisation (Philox: same on every backend) */
#define BATCH 64
#define EPOCHS 15
#define LEARNING_RATE 0.1
#define MOMENTUM 0.9

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int fail(const char *what) {
    fprintf(stderr, "mlp_digits: %s: %s (%s)\n", what, pt_last_error(), pt_status_name(pt_last_status()));
    return 1;
}

/* 64 -> 256 -> ReLU -> 10. The linears are lazy: their input size (64) is
 * taken from the first batch, on that batch's device. */
static pt_module *make_net(void) {
    pt_module *layers[3] = {pt_linear(256), pt_relu_module(), pt_linear(DIGITS_CLASSES)};
    return pt_sequential(3, layers);
}

/* Copies rows [first, first + count) of order to dev as a batch. */
static void batch_to(pt_device *dev, const digits *d, const int *order, int first, int count, float *px,
                     int64_t *lb, pt_tensor **x, pt_tensor **y) {
    digits_gather(d, order, first, count, px, lb);
    int64_t xs[2] = {count, DIGITS_FEATURES}, ys[1] = {count};
    *x = pt_from_data(dev, PT_F32, 2, xs, px);
    *y = pt_from_data(dev, PT_I64, 1, ys, lb);
}

/* --graph's forward pass and loss (digits_graph.h). */
static pt_tensor *batch_loss(void *net, pt_tensor *x, pt_tensor *y) {
    return pt_cross_entropy(pt_module_forward(net, x), y);
}

/* Fraction of d the net classifies correctly, computed on dev. Writes the
 * predictions into pred (d->n entries) when non-NULL. NAN on error. */
static double accuracy(pt_module *net, const digits *d, pt_device *dev, int64_t *pred) {
    pt_scope scope = pt_scope_begin();
    pt_no_grad_begin(); /* evaluation: record nothing */
    int64_t xs[2] = {d->n, DIGITS_FEATURES}, ys[1] = {d->n};
    pt_tensor *x = pt_from_data(dev, PT_F32, 2, xs, d->pixels);
    pt_tensor *y = pt_from_data(dev, PT_I64, 1, ys, d->labels);
    pt_tensor *guess = pt_argmax(pt_module_forward(net, x), 1, false);
    pt_tensor *acc = pt_mean(pt_cast(pt_eq(guess, y), PT_F32), PT_ALL, false);
    double a = pt_item(acc); /* the one wait: the host reads a number */
    if (pred && guess && pt_to_host(guess, pred, (size_t)d->n * sizeof *pred) != PT_OK) a = NAN;
    pt_no_grad_end();
    pt_scope_end(scope);
    return a;
}

static void progress(int epoch, int done, int total) {
    if (!isatty(STDOUT_FILENO)) return;
    int width = 30, filled = done * width / total;
    printf("\repoch %2d [", epoch);
    for (int i = 0; i < width; ++i) putchar(i < filled ? '#' : '.');
    printf("] %d/%d", done, total);
    fflush(stdout);
}

/* Trains, evaluates, saves, reloads and compares; writes each step's loss to
 * loss_log unless it is NULL. Returns the exit status. */
static int run(pt_device *dev, const digits *train, const digits *test, int epochs, const char *save_path,
               FILE *loss_log, bool graph) {
    int status = 1;
    digits_graphs graphs = {0};
    pt_module *net = NULL, *reloaded = NULL;
    pt_optimizer *opt = NULL;
    int *order = malloc((size_t)train->n * sizeof *order);
    float *px = malloc((size_t)BATCH * DIGITS_FEATURES * sizeof *px);
    int64_t *lb = malloc(BATCH * sizeof *lb);
    int64_t *pred = malloc((size_t)test->n * sizeof *pred), *pred_cpu = malloc((size_t)test->n * sizeof *pred_cpu);
    char tmp_path[256] = "";
    int steps = (train->n + BATCH - 1) / BATCH;
    pt_tensor **step_losses = loss_log ? calloc((size_t)steps, sizeof *step_losses) : NULL;
    if (!order || !px || !lb || !pred || !pred_cpu || (loss_log && !step_losses)) {
        fprintf(stderr, "mlp_digits: out of host memory\n");
        goto done;
    }

    /* ---- Model: the parameters appear on dev at the first forward ---- */
    printf("training on %s: %d train / %d test images of 8x8 digits, batch %d\n", pt_device_name(dev), train->n,
           test->n, BATCH);
    pt_manual_seed(TRAIN_SEED);
    net = make_net();
    opt = net ? pt_sgd(net, LEARNING_RATE, MOMENTUM, 0.0) : NULL;
    if (!opt) {
        fail("building the model");
        goto done;
    }

    /* ---- Training ---- */
    for (int epoch = 1; epoch <= epochs; ++epoch) {
        digits_permutation(train->n, 1000 + (uint64_t)epoch, order);
        double t0 = now_seconds();
        /* The epoch's loss is summed on the device: reading each step's loss
         * would make the host wait for the device every step. */
        pt_tensor *loss_sum = pt_zeros(dev, PT_F32, 0, NULL);
        for (int step = 0; step < steps; ++step) {
            int first = step * BATCH, count = train->n - first < BATCH ? train->n - first : BATCH;
            pt_scope scope = pt_scope_begin(); /* releases this step's tensors */
            pt_tensor *loss = NULL;
            if (graph && (epoch > 1 || step > 0)) {
                loss = digits_graph_step(&graphs, dev, opt, batch_loss, net, train, order, first, count, px, lb, false);
            } else {
                pt_tensor *x, *y;
                batch_to(dev, train, order, first, count, px, lb, &x, &y);
                loss = pt_cross_entropy(pt_module_forward(net, x), y);
                pt_optimizer_zero_grad(opt);
                if (pt_backward(loss) != PT_OK || pt_optimizer_step(opt) != PT_OK) loss = NULL;
            }
            if (!loss) {
                fail("training step");
                pt_scope_end(scope);
                pt_release(loss_sum);
                goto done;
            }
            pt_no_grad_begin();
            /* loss_sum += count * loss: one in-place kernel a step */
            const pt_status summed = pt_axpy_(loss_sum, (double)count, loss);
            if (loss_log) step_losses[step] = pt_keep(graph ? digits_graph_snapshot(loss) : pt_detach(loss));
            pt_no_grad_end();
            pt_scope_end(scope);
            if (summed != PT_OK) {
                fail("summing the epoch's loss");
                pt_release(loss_sum);
                goto done;
            }
            progress(epoch, step + 1, steps);
        }
        double mean_loss = pt_item(loss_sum) / train->n; /* waits for the device */
        pt_release(loss_sum);
        double dt = now_seconds() - t0;
        if (loss_log && digits_write_losses(loss_log, epoch, step_losses, steps)) {
            fail("writing the loss log");
            goto done;
        }
        if (isnan(mean_loss)) {
            fail("reading the loss");
            goto done;
        }
        printf("%sepoch %2d  loss %.4f  %8.0f samples/s\n", isatty(STDOUT_FILENO) ? "\r" : "", epoch, mean_loss,
               train->n / dt);
    }

    /* ---- Evaluation ---- */
    double acc = accuracy(net, test, dev, pred);
    if (isnan(acc)) {
        fail("evaluation");
        goto done;
    }
    printf("test accuracy on %s: %.2f%% (%d images)\n", pt_device_name(dev), 100 * acc, test->n);

    /* ---- Save, reload on the cpu, compare ---- */
    if (!save_path) {
        snprintf(tmp_path, sizeof tmp_path, "/tmp/mlp_digits_%ld.safetensors", (long)getpid());
        save_path = tmp_path;
    }
    if (pt_save(net, save_path) != PT_OK) {
        fail("saving");
        goto done;
    }
    reloaded = make_net();
    if (!reloaded || pt_load(reloaded, save_path, pt_cpu()) != PT_OK) {
        fail("loading");
        goto done;
    }
    double acc_cpu = accuracy(reloaded, test, pt_cpu(), pred_cpu);
    if (isnan(acc_cpu)) {
        fail("evaluating the reloaded model");
        goto done;
    }
    int differ = 0;
    for (int i = 0; i < test->n; ++i) differ += pred[i] != pred_cpu[i];
    printf("saved to %s; reloaded on cpu: test accuracy %.2f%%, %d of %d predictions differ\n", save_path,
           100 * acc_cpu, differ, test->n);

    status = 0;
    if (acc < 0.95) {
        printf("FAILED: accuracy %.2f%% is below 95%%\n", 100 * acc);
        status = 1;
    }
    if (differ != 0 || acc_cpu != acc) {
        printf("FAILED: the reloaded model does not match the trained one\n");
        status = 1;
    }
done:
    if (tmp_path[0]) remove(tmp_path);
    for (int s = 0; step_losses && s < steps; ++s) pt_release(step_losses[s]);
    digits_graphs_free(&graphs);
    free(step_losses);
    pt_module_free(reloaded);
    pt_optimizer_free(opt); /* before its module */
    pt_module_free(net);
    free(pred);
    free(pred_cpu);
    free(order);
    free(px);
    free(lb);
    return status;
}

int main(int argc, char **argv) {
    static const digits_cli_spec spec = {"", "where to save the trained parameters (safetensors)",
                                         "The device is PORTABLE_BACKEND's (auto, cpu, cuda, opencl, optionally :N)."};
    digits_cli args = {.epochs = EPOCHS, .logs_losses = true, .graphs = true};
    int parsed = digits_cli_parse(argc, argv, &spec, &args);
    if (parsed) return parsed == 1 ? 0 : 2;

    /* ---- Data: host memory, split 80/20 with a fixed seed ---- */
    char path[4096], err[512];
    if (digits_find(args.data, path, sizeof path) != 0) {
        fprintf(stderr, "mlp_digits: %s\n", path);
        return 2;
    }
    digits all, train, test;
    if (digits_load(path, &all, err, sizeof err) != 0) {
        fprintf(stderr, "mlp_digits: %s\n", err);
        return 2;
    }
    int split = digits_split(&all, SPLIT_SEED, 0.8, &train, &test);
    digits_free(&all);
    if (split != 0) {
        fprintf(stderr, "mlp_digits: out of memory\n");
        return 2;
    }

    FILE *loss_log = NULL;
    if (args.loss_log && !(loss_log = fopen(args.loss_log, "w"))) {
        fprintf(stderr, "mlp_digits: cannot write the loss log %s\n", args.loss_log);
        digits_free(&train);
        digits_free(&test);
        return 2;
    }
    pt_device *dev = pt_default_device();
    int status = dev ? run(dev, &train, &test, args.epochs, args.save, loss_log, args.graph) : (fail("no device"), 77);
    if (loss_log && fclose(loss_log) != 0 && status == 0) {
        fprintf(stderr, "mlp_digits: writing the loss log %s failed\n", args.loss_log);
        status = 1;
    }
    digits_free(&train);
    digits_free(&test);
    return status;
}
