/* The convolutional-net layers as modules: lazy shapes, PyTorch's state-dict
 * names with batch norm's buffers, train/eval switching over a tree,
 * buffers kept out of autograd and optimizers but moved, saved and loaded,
 * dropout's mask identical for the same seed, and the layers' errors. */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "nn_test.h"

static pt_device *dev;

static pt_module *small_cnn(void) {
    const pt_conv2d_opts pad1 = {.padding = {1, 1}};
    const pt_pool2d_opts pool2 = {.kernel = {2, 2}};
    pt_module *layers[] = {pt_conv2d(4, 3, 3, &pad1, true), pt_batch_norm2d(1e-5, 0.1), pt_relu_module(),
                           pt_max_pool2d(&pool2),           pt_dropout(0.5),            pt_flatten(),
                           pt_linear(3)};
    return pt_sequential((int)(sizeof layers / sizeof layers[0]), layers);
}

static pt_tensor *images(int64_t n) {
    int64_t s[4] = {n, 2, 6, 6};
    return pt_rand(dev, PT_F32, 4, s);
}

static void test_names_and_lazy_shapes(void) {
    pt_module *net = small_cnn();
    const char *names[16];
    pt_tensor *ts[16];
    NN_CHECK(pt_module_parameters(net, names, ts, 16) == 9, "conv 2 + batch norm 5 + linear 2 entries");
    static const char *want[9] = {"0.weight",       "0.bias",        "1.weight",
                                  "1.bias",         "1.running_mean", "1.running_var",
                                  "1.num_batches_tracked", "6.weight", "6.bias"};
    for (int i = 0; i < 9; ++i) NN_CHECK(strcmp(names[i], want[i]) == 0, "name %d: %s, want %s", i, names[i], want[i]);
    NN_CHECK(pt_save(net, "/tmp/never_written.safetensors") == PT_ERR_INVALID_ARGUMENT &&
                 strstr(pt_last_error(), "lazy conv2d"),
             "saving before the first forward names the lazy layer: %s", pt_last_error());
    pt_clear_error();
    pt_tensor *x = images(5);
    pt_tensor *y = pt_module_forward(net, x);
    NN_CHECK(y && pt_tensor_ndim(y) == 2 && pt_tensor_shape(y)[0] == 5 && pt_tensor_shape(y)[1] == 3, "output [5, 3]");
    pt_module_parameters(net, names, ts, 16);
    NN_CHECK(ts[0] && pt_tensor_shape(ts[0])[0] == 4 && pt_tensor_shape(ts[0])[1] == 2, "conv weight [4, 2, 3, 3]");
    NN_CHECK(ts[4] && pt_tensor_numel(ts[4]) == 4 && !pt_requires_grad(ts[4]), "running_mean [4], no grad");
    NN_CHECK(ts[6] && pt_tensor_dtype(ts[6]) == PT_I64 && pt_tensor_ndim(ts[6]) == 0 && pt_item(ts[6]) == 1.0,
             "num_batches_tracked is a 0-D i64 counting one batch");
    NN_CHECK(pt_requires_grad(ts[2]) && pt_requires_grad(ts[3]), "batch norm weight and bias require grad");
    pt_release(x);
    pt_release(y);
    pt_module_free(net);
}

/* Training updates the running statistics, evaluation uses them and leaves
 * them alone; dropout is the identity in evaluation. */
static void test_train_eval(void) {
    pt_module *net = small_cnn();
    pt_tensor *x = images(4);
    pt_tensor *y0 = pt_module_forward(net, x); /* creates, and updates the stats once */
    pt_tensor *rm = pt_module_parameter(net, "1.running_mean");
    double before[4], after[4];
    NN_CHECK(nn_to_doubles(rm, before, 4) == 0, "read running_mean");
    NN_CHECK(pt_module_is_training(net), "a new module trains");
    NN_CHECK(pt_module_train(net, false) == PT_OK && !pt_module_is_training(net), "eval mode");
    pt_tensor *e1 = pt_module_forward(net, x), *e2 = pt_module_forward(net, x);
    NN_CHECK(nn_to_doubles(rm, after, 4) == 0 && memcmp(before, after, sizeof before) == 0,
             "evaluation leaves the running statistics alone");
    double a[12], b[12];
    NN_CHECK(nn_to_doubles(e1, a, 12) == 0 && nn_to_doubles(e2, b, 12) == 0 && memcmp(a, b, sizeof a) == 0,
             "evaluation is deterministic (no dropout)");
    NN_CHECK(pt_module_train(net, true) == PT_OK, "back to training");
    pt_tensor *y1 = pt_module_forward(net, x);
    NN_CHECK(nn_to_doubles(rm, after, 4) == 0 && memcmp(before, after, sizeof before) != 0,
             "training updates the running statistics");
    NN_CHECK(pt_module_train(NULL, true) == PT_ERR_INVALID_ARGUMENT, "NULL module");
    pt_clear_error();
    pt_tensor *all[] = {x, y0, e1, e2, y1};
    for (size_t i = 0; i < 5; ++i) pt_release(all[i]);
    pt_module_free(net);
}

/* Buffers never meet the optimizer: after a step they are what the forward
 * made them, while the parameters moved. Then save, load into a fresh net,
 * and compare evaluation outputs exactly. */
static void test_buffers_optimizer_and_files(void) {
    pt_module *net = small_cnn();
    pt_optimizer *opt = net ? pt_sgd(net, 0.1, 0.9, 0.0) : NULL;
    pt_tensor *x = images(6);
    int64_t n = 6;
    static const int64_t lab[6] = {0, 1, 2, 0, 1, 2};
    pt_tensor *labels = pt_from_data(dev, PT_I64, 1, &n, lab);
    pt_tensor *logits = pt_module_forward(net, x), *loss = pt_cross_entropy(logits, labels);
    double rv[4], rv_after[4], w0[4], w1[4];
    pt_tensor *rvt = pt_module_parameter(net, "1.running_var"), *w = pt_module_parameter(net, "1.weight");
    NN_CHECK(nn_to_doubles(rvt, rv, 4) == 0 && nn_to_doubles(w, w0, 4) == 0, "read buffers");
    NN_CHECK(pt_backward(loss) == PT_OK && pt_optimizer_step(opt) == PT_OK, "a training step: %s", pt_last_error());
    NN_CHECK(nn_to_doubles(rvt, rv_after, 4) == 0 && memcmp(rv, rv_after, sizeof rv) == 0,
             "the optimizer did not touch running_var");
    NN_CHECK(nn_to_doubles(w, w1, 4) == 0 && memcmp(w0, w1, sizeof w0) != 0, "the optimizer moved batch norm's weight");
    NN_CHECK(pt_grad(rvt) == NULL, "no gradient for a buffer");

    char path[128];
    snprintf(path, sizeof path, "/tmp/test_cnn_layers_%ld.safetensors", (long)getpid());
    NN_CHECK(pt_save(net, path) == PT_OK, "save: %s", pt_last_error());
    pt_module *copy = small_cnn();
    NN_CHECK(pt_load(copy, path, dev) == PT_OK, "load into a lazy net: %s", pt_last_error());
    pt_module_train(net, false);
    pt_module_train(copy, false);
    pt_tensor *a = pt_module_forward(net, x), *b = pt_module_forward(copy, x);
    double va[18], vb[18];
    NN_CHECK(nn_to_doubles(a, va, 18) == 0 && nn_to_doubles(b, vb, 18) == 0 && memcmp(va, vb, sizeof va) == 0,
             "the reloaded net gives the same outputs");
    pt_tensor *nb = pt_module_parameter(copy, "1.num_batches_tracked");
    NN_CHECK(nb && pt_tensor_dtype(nb) == PT_I64 && pt_item(nb) == 1.0 && !pt_requires_grad(nb),
             "num_batches_tracked loaded as i64 without grad");
    remove(path);
    pt_release(a);
    pt_release(b);
    pt_release(loss);
    pt_release(logits);
    pt_release(labels);
    pt_release(x);
    pt_optimizer_free(opt);
    pt_module_free(net);
    pt_module_free(copy);
}

/* The same seed gives the same mask, and about p of the elements drop. */
static void test_dropout_mask(void) {
    int64_t s[1] = {4000};
    pt_tensor *x = pt_ones(dev, PT_F32, 1, s);
    pt_manual_seed(11);
    pt_tensor *a = pt_f_dropout(x, 0.25, true);
    pt_manual_seed(11);
    pt_tensor *b = pt_f_dropout(x, 0.25, true);
    static float va[4000], vb[4000];
    NN_CHECK(a && b && pt_to_host(a, va, sizeof va) == PT_OK && pt_to_host(b, vb, sizeof vb) == PT_OK, "dropout ran");
    int dropped = 0, bad = 0;
    for (int i = 0; i < 4000; ++i) {
        dropped += va[i] == 0.0f;
        bad += va[i] != vb[i] || (va[i] != 0.0f && fabsf(va[i] - 1.0f / 0.75f) > 1e-6f);
    }
    NN_CHECK(bad == 0, "same mask for the same seed, kept elements scaled by 1/(1-p) (%d differ)", bad);
    NN_CHECK(dropped > 850 && dropped < 1150, "about a quarter dropped: %d of 4000", dropped);
    pt_tensor *c = pt_f_dropout(x, 0.25, false);
    NN_CHECK(c == x, "not training: x itself");
    NN_CHECK(!pt_f_dropout(x, 1.5, true) && pt_last_status() == PT_ERR_INVALID_ARGUMENT &&
                 strstr(pt_last_error(), "1.5"),
             "p outside [0, 1] is named: %s", pt_last_error());
    pt_clear_error();
    pt_release(a);
    pt_release(b);
    pt_release(c);
    pt_release(x);
}

static void test_layer_errors(void) {
    NN_CHECK(!pt_conv2d(0, 3, 3, NULL, true) && pt_last_status() == PT_ERR_INVALID_ARGUMENT, "0 out channels");
    pt_clear_error();
    const pt_pool2d_opts bad = {.kernel = {2, 2}, .padding = {3, 3}};
    NN_CHECK(!pt_max_pool2d(&bad) && strstr(pt_last_error(), "half the kernel"), "pool padding: %s", pt_last_error());
    pt_clear_error();
    NN_CHECK(!pt_batch_norm2d(1e-5, 2.0) && strstr(pt_last_error(), "momentum 2"), "momentum: %s", pt_last_error());
    pt_clear_error();
    pt_module *conv = pt_conv2d(4, 3, 3, &(pt_conv2d_opts){.groups = 2}, false);
    int64_t s[4] = {1, 3, 5, 5};
    pt_tensor *x = pt_ones(dev, PT_F32, 4, s);
    NN_CHECK(!pt_module_forward(conv, x) && strstr(pt_last_error(), "3 input channels") &&
                 strstr(pt_last_error(), "groups 2"),
             "3 channels into groups 2: %s", pt_last_error());
    pt_clear_error();
    int64_t s2[2] = {5, 5};
    pt_tensor *flat = pt_ones(dev, PT_F32, 2, s2);
    NN_CHECK(!pt_module_forward(conv, flat) && strstr(pt_last_error(), "[N, C, H, W]"), "2-D input: %s",
             pt_last_error());
    pt_clear_error();
    pt_module *bn = pt_batch_norm2d(1e-5, 0.1);
    int64_t one[4] = {1, 2, 1, 1};
    pt_tensor *single = pt_ones(dev, PT_F32, 4, one);
    NN_CHECK(!pt_module_forward(bn, single) && strstr(pt_last_error(), "more than one value per channel"),
             "a one-value batch in training: %s", pt_last_error());
    pt_clear_error();
    pt_release(x);
    pt_release(flat);
    pt_release(single);
    pt_module_free(conv);
    pt_module_free(bn);
}

int main(void) {
    nn_begin();
    dev = nn_device_or_skip();
    printf("cnn layers on %s\n", pt_device_name(dev));
    test_names_and_lazy_shapes();
    test_train_eval();
    test_buffers_optimizer_and_files();
    test_dropout_mask();
    test_layer_errors();
    return nn_finish();
}
