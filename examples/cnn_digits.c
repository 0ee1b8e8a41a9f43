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
 *
 * After training it switches to evaluation mode (batch norm uses its running
 * statistics), measures test accuracy, saves parameters and buffers as
 * safetensors under PyTorch's names (loadable into the same
 * torch.nn.Sequential), loads them into a fresh net on the cpu and checks it
 * predicts exactly the same. Exit status: 0 when the accuracy is >= 98% and
 * the reloaded net agrees, 1 otherwise, 2 for bad usage or missing data, 77
 * when the device PORTABLE_BACKEND names is not available here. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "digits_data.h"
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

/* conv -> batch norm -> relu -> pool, twice, then flatten -> linear. */
static pt_module *make_net(void) {
    const pt_conv2d_opts pad1 = {.padding = {1, 1}};
    const pt_pool2d_opts pool2 = {.kernel = {2, 2}};
    pt_module *layers[] = {
        pt_conv2d(16, 3, 3, &pad1, true), pt_batch_norm2d(1e-5, 0.1), pt_relu_module(), pt_max_pool2d(&pool2),
        pt_conv2d(32, 3, 3, &pad1, true), pt_batch_norm2d(1e-5, 0.1), pt_relu_module(), pt_max_pool2d(&pool2),
        pt_flatten(),                     pt_linear(DIGITS_CLASSES),
    };
    return pt_sequential((int)(sizeof layers / sizeof layers[0]), layers);
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
static int run(pt_device *dev, const digits *train, const digits *test, int epochs, const char *save_path) {
    int status = 1;
    pt_module *net = NULL, *reloaded = NULL;
    pt_optimizer *opt = NULL;
    int *order = malloc((size_t)train->n * sizeof *order);
    float *px = malloc((size_t)BATCH * DIGITS_FEATURES * sizeof *px);
    int64_t *lb = malloc(BATCH * sizeof *lb);
    int64_t *pred = malloc((size_t)test->n * sizeof *pred), *pred_cpu = malloc((size_t)test->n * sizeof *pred_cpu);
    char tmp_path[256] = "";
    if (!order || !px || !lb || !pred || !pred_cpu) {
        fprintf(stderr, "cnn_digits: out of host memory\n");
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
    int steps = (train->n + BATCH - 1) / BATCH;
    for (int epoch = 1; epoch <= epochs; ++epoch) {
        digits_permutation(train->n, 1000 + (uint64_t)epoch, order);
        double t0 = now_seconds();
        /* The epoch's loss is summed on the device: reading each step's loss
         * would make the host wait for the device every step. */
        pt_tensor *loss_sum = pt_zeros(dev, PT_F32, 0, NULL);
        for (int step = 0; step < steps; ++step) {
            int first = step * BATCH, count = train->n - first < BATCH ? train->n - first : BATCH;
            pt_scope scope = pt_scope_begin(); /* releases this step's tensors */
            pt_tensor *x, *y;
            batch_to(dev, train, order, first, count, px, lb, &x, &y);
            pt_tensor *loss = pt_cross_entropy(pt_module_forward(net, x), y);
            pt_optimizer_zero_grad(opt);
            if (pt_backward(loss) != PT_OK || pt_optimizer_step(opt) != PT_OK) {
                fail("training step");
                pt_scope_end(scope);
                pt_release(loss_sum);
                goto done;
            }
            pt_no_grad_begin();
            pt_tensor *sum = pt_keep(pt_add(loss_sum, pt_mul_scalar(loss, count)));
            pt_no_grad_end();
            pt_scope_end(scope);
            pt_release(loss_sum);
            loss_sum = sum;
            progress(epoch, step + 1, steps);
        }
        double mean_loss = pt_item(loss_sum) / train->n; /* waits for the device */
        pt_release(loss_sum);
        double dt = now_seconds() - t0;
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
    reloaded = make_net();
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
    if (tmp_path[0]) remove(tmp_path);
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

static void usage(FILE *f, const char *prog) {
    fprintf(f,
            "usage: %s [--data digits.csv.gz] [--save model.safetensors] [--epochs N]\n"
            "  --data PATH    the digits CSV (default: examples/data/digits.csv.gz)\n"
            "  --save PATH    where to save the trained parameters and buffers (safetensors)\n"
            "  --epochs N     training epochs, a whole number >= 1 (default %d)\n"
            "  -h, --help     this text\n"
            "The device is PORTABLE_BACKEND's (auto, cpu, cuda, opencl, optionally :N).\n",
            prog, EPOCHS);
}

int main(int argc, char **argv) {
    const char *data_arg = NULL, *save_path = NULL;
    int epochs = EPOCHS;
    static const struct option options[] = {{"data", required_argument, NULL, 'd'},
                                            {"save", required_argument, NULL, 's'},
                                            {"epochs", required_argument, NULL, 'e'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        char *end = NULL;
        long n;
        switch (opt) {
        case 'd': data_arg = optarg; break;
        case 's': save_path = optarg; break;
        case 'e':
            errno = 0;
            n = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || n < 1 || n > 100000) {
                fprintf(stderr, "%s: --epochs '%s' is not a whole number from 1 to 100000\n", argv[0], optarg);
                usage(stderr, argv[0]);
                return 2;
            }
            epochs = (int)n;
            break;
        case 'h': usage(stdout, argv[0]); return 0;
        default: usage(stderr, argv[0]); return 2; /* getopt_long said what was wrong */
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
        usage(stderr, argv[0]);
        return 2;
    }

    /* ---- Data: host memory, split 80/20 with a fixed seed ---- */
    char path[4096], err[512];
    if (digits_find(data_arg, path, sizeof path) != 0) {
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

    pt_device *dev = pt_default_device();
    int status = dev ? run(dev, &train, &test, epochs, save_path) : (fail("no device"), 77);
    digits_free(&train);
    digits_free(&test);
    return status;
}
