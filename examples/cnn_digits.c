/* Training a small convolutional net on real data, on any device.
 *
 * A LeNet-style net reads the UCI 8x8 digits (examples/data/digits.csv.gz) as
 * 1x8x8 images:
 *
 *   conv 3x3 (16, pad 1) -> batch norm -> relu -> max pool 2   [16, 4, 4]
 *   conv 3x3 (32, pad 1) -> batch norm -> relu -> max pool 2   [32, 2, 2]
 *   flatten -> linear 10
 *
 * Every layer is lazy (LazyConv2d, LazyBatchNorm2d, LazyLinear): sizes come
 * from the first batch, on that batch's device, so the same code runs on the
 * cpu, an OpenCL device or a CUDA GPU (PORTABLE_BACKEND picks it).
 *
 *   PORTABLE_BACKEND=cpu    ./cnn_digits
 *   PORTABLE_BACKEND=opencl ./cnn_digits [--data digits.csv.gz] [--save model.safetensors] [--epochs N]
 *   ./cnn_digits --dtype bf16 [--loss-log losses.txt] [--graph]
 *
 * --graph captures the training step once per batch shape and replays it
 * (examples/digits_graph.h, portable/graph.h): the same batches and losses,
 * the host's per-op work done once; the first step runs eagerly, so the
 * lazy layers and the optimizer's momentum exist before a capture.
 *
 * --dtype bf16 (or f16) trains in mixed precision, like torch.autocast: the
 * parameters stay f32 master weights (what SGD updates and what is saved),
 * and every layer computes in the 16-bit type (pt_module_set_compute_dtype);
 * the logits are cast back to f32 for the loss. --loss-log writes every
 * training step's loss ("epoch step loss", %.9g), which is how the tests
 * compare the loss curves of the backends.
 *
 * After training it switches to evaluation mode (batch norm uses its running
 * statistics), measures test accuracy, saves parameters and buffers as
 * safetensors under PyTorch's names (loadable into the same
 * torch.nn.Sequential), loads them into a fresh net on the cpu and checks it
 * predicts exactly the same. Exit status: 0 when the accuracy is >= 98% and
 * the reloaded net agrees, 1 otherwise, 2 for bad usage or missing data, 77
 * when the device PORTABLE_BACKEND names is not available here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "digits_cli.h"
#include "digits_data.h"
#include "digits_graph.h"
#include "digits_train.h"
#include "portable/portable.h"

#define SPLIT_SEED 42      /* the 80/20 split */
#define TRAIN_SEED 0       /* parameter initialisation (Philox: same on every backend) */
#define BATCH 64
#define EPOCHS 8
#define LEARNING_RATE 0.1
#define MOMENTUM 0.9

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int fail(const char *what) {
    fprintf(stderr, "cnn_digits: %s: %s (%s)\n", what, pt_last_error(), pt_status_name(pt_last_status()));
    return 1;
}

/* Copies rows [first, first + count) of order to dev as a batch. */
static void batch_to(pt_device *dev, const digits *d, const int *order, int first, int count, float *px,
                     int64_t *lb, pt_tensor **x, pt_tensor **y) {
    digits_gather(d, order, first, count, px, lb);
    int64_t xs[4] = {count, 1, 8, 8}, ys[1] = {count}; /* the 64 pixels as a 1x8x8 image */
    *x = pt_from_data(dev, PT_F32, 4, xs, px);
    *y = pt_from_data(dev, PT_I64, 1, ys, lb);
}

/* Fraction of d the net classifies correctly, computed on dev. Writes the
 * predictions into pred (d->n entries) when non-NULL. NAN on error. */
static double accuracy(pt_module *net, const digits *d, pt_device *dev, int64_t *pred) {
    pt_scope scope = pt_scope_begin();
    pt_no_grad_begin(); /* evaluation: record nothing */
    int64_t xs[4] = {d->n, 1, 8, 8}, ys[1] = {d->n};
    pt_tensor *x = pt_from_data(dev, PT_F32, 4, xs, d->pixels);
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

/* Trains, evaluates, saves, reloads and compares. Returns the exit status. */
/* The options run() takes beyond the data. */
typedef struct run_opts {
    int epochs;
    const char *save_path; /* NULL: a temporary file */
    pt_dtype compute;      /* PT_F32, or a 16-bit type with f32 master weights */
    FILE *loss_log;        /* NULL: no per-step losses */
    bool graph;            /* --graph: the step captured per batch shape and replayed */
} run_opts;

/* The net's mode for this run: mixed precision when the compute dtype is
 * not the parameters' f32. */
static pt_module *make_net_for(const run_opts *o) {
    pt_module *net = digits_cnn(true); /* conv -> batch norm -> relu -> pool, twice, then linear */
    if (net && o->compute != PT_F32 && pt_module_set_compute_dtype(net, o->compute) != PT_OK) {
        pt_module_free(net);
        return NULL;
    }
    return net;
}

/* The forward pass and the loss of a step. */
typedef struct step_ctx {
    pt_module *net;
    pt_dtype compute;
} step_ctx;

static pt_tensor *batch_loss(void *ctx, pt_tensor *x, pt_tensor *y) {
    const step_ctx *c = ctx;
    pt_tensor *logits = pt_module_forward(c->net, x);
    if (c->compute != PT_F32) logits = pt_cast(logits, PT_F32); /* the loss in f32, as under autocast */
    return pt_cross_entropy(logits, y);
}

static int run(pt_device *dev, const digits *train, const digits *test, const run_opts *o) {
    const char *save_path = o->save_path;
    int status = 1;
    digits_graphs graphs = {0};
    pt_module *net = NULL, *reloaded = NULL;
    pt_optimizer *opt = NULL;
    int *order = malloc((size_t)train->n * sizeof *order);
    float *px = malloc((size_t)BATCH * DIGITS_FEATURES * sizeof *px);
    int64_t *lb = malloc(BATCH * sizeof *lb);
    int64_t *pred = malloc((size_t)test->n * sizeof *pred), *pred_cpu = malloc((size_t)test->n * sizeof *pred_cpu);
    int steps = (train->n + BATCH - 1) / BATCH;
    pt_tensor **step_losses = calloc((size_t)steps, sizeof *step_losses);
    char tmp_path[256] = "";
    if (!order || !px || !lb || !pred || !pred_cpu || !step_losses) {
        fprintf(stderr, "cnn_digits: out of host memory\n");
        goto done;
    }

    /* ---- Model: the parameters appear on dev at the first forward ---- */
    printf("training on %s: %d train / %d test images of 8x8 digits, batch %d, %s%s\n", pt_device_name(dev),
           train->n, test->n, BATCH, pt_dtype_name(o->compute), o->compute == PT_F32 ? "" : " compute, f32 master weights");
    pt_manual_seed(TRAIN_SEED);
    net = make_net_for(o);
    opt = net ? pt_sgd(net, LEARNING_RATE, MOMENTUM, 0.0) : NULL;
    if (!opt) {
        fail("building the model");
        goto done;
    }

    /* ---- Training ---- */
    for (int epoch = 1; epoch <= o->epochs; ++epoch) {
        digits_permutation(train->n, 1000 + (uint64_t)epoch, order);
        double t0 = now_seconds();
        /* The epoch's loss is summed on the device: reading each step's loss
         * would make the host wait for the device every step. */
        pt_tensor *loss_sum = pt_zeros(dev, PT_F32, 0, NULL);
        for (int step = 0; step < steps; ++step) {
            int first = step * BATCH, count = train->n - first < BATCH ? train->n - first : BATCH;
            pt_scope scope = pt_scope_begin(); /* releases this step's tensors */
            step_ctx ctx = {net, o->compute};
            pt_tensor *loss = NULL;
            if (o->graph && (epoch > 1 || step > 0)) { /* the first step eagerly: lazy state first */
                loss = digits_graph_step(&graphs, dev, opt, batch_loss, &ctx, train, order, first, count, px, lb, true);
            } else {
                pt_tensor *x, *y;
                batch_to(dev, train, order, first, count, px, lb, &x, &y);
                loss = batch_loss(&ctx, x, y);
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
            if (o->loss_log) step_losses[step] = pt_keep(o->graph ? digits_graph_snapshot(loss) : pt_detach(loss));
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
        if (o->loss_log && digits_write_losses(o->loss_log, epoch, step_losses, steps)) {
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

    /* ---- Evaluation: batch norm switches to its running statistics ---- */
    pt_module_train(net, false);
    double acc = accuracy(net, test, dev, pred);
    if (isnan(acc)) {
        fail("evaluation");
        goto done;
    }
    printf("test accuracy on %s: %.2f%% (%d images)\n", pt_device_name(dev), 100 * acc, test->n);

    /* ---- Save, reload on the cpu, compare ---- */
    if (!save_path) {
        snprintf(tmp_path, sizeof tmp_path, "/tmp/cnn_digits_%ld.safetensors", (long)getpid());
        save_path = tmp_path;
    }
    if (pt_save(net, save_path) != PT_OK) {
        fail("saving");
        goto done;
    }
    reloaded = make_net_for(o); /* the same compute dtype, so the same predictions */
    if (!reloaded || pt_module_train(reloaded, false) != PT_OK || pt_load(reloaded, save_path, pt_cpu()) != PT_OK) {
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
    if (acc < 0.98) {
        printf("FAILED: accuracy %.2f%% is below 98%%\n", 100 * acc);
        status = 1;
    }
    if (differ != 0 || acc_cpu != acc) {
        printf("FAILED: the reloaded model does not match the trained one\n");
        status = 1;
    }
done:
    digits_graphs_free(&graphs);
    if (tmp_path[0]) remove(tmp_path);
    for (int s = 0; step_losses && s < steps; ++s) pt_release(step_losses[s]);
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
    static const digits_cli_spec spec = {"", "where to save the trained parameters and buffers (safetensors)",
                                         "The device is PORTABLE_BACKEND's (auto, cpu, cuda, opencl, optionally :N)."};
    digits_cli args = {.epochs = EPOCHS, .precision = true, .logs_losses = true, .graphs = true};
    int parsed = digits_cli_parse(argc, argv, &spec, &args);
    if (parsed) return parsed == 1 ? 0 : 2;

    /* ---- Data: host memory, split 80/20 with a fixed seed ---- */
    char path[4096], err[512];
    if (digits_find(args.data, path, sizeof path) != 0) {
        fprintf(stderr, "cnn_digits: %s\n", path);
        return 2;
    }
    digits all, train, test;
    if (digits_load(path, &all, err, sizeof err) != 0) {
        fprintf(stderr, "cnn_digits: %s\n", err);
        return 2;
    }
    int split = digits_split(&all, SPLIT_SEED, 0.8, &train, &test);
    digits_free(&all);
    if (split != 0) {
        fprintf(stderr, "cnn_digits: out of memory\n");
        return 2;
    }

    run_opts o = {.epochs = args.epochs, .save_path = args.save, .compute = PT_F32, .graph = args.graph};
    if (args.dtype) o.compute = !strcmp(args.dtype, "bf16") ? PT_BF16 : !strcmp(args.dtype, "f16") ? PT_F16 : PT_F32;
    if (args.loss_log && !(o.loss_log = fopen(args.loss_log, "w"))) {
        fprintf(stderr, "cnn_digits: cannot write the loss log %s\n", args.loss_log);
        digits_free(&train);
        digits_free(&test);
        return 2;
    }
    pt_device *dev = pt_default_device();
    int status = dev ? run(dev, &train, &test, &o) : (fail("no device"), 77);
    if (o.loss_log && fclose(o.loss_log) != 0 && status == 0) {
        fprintf(stderr, "cnn_digits: writing the loss log %s failed\n", args.loss_log);
        status = 1;
    }
    digits_free(&train);
    digits_free(&test);
    return status;
}
