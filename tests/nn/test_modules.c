/* Modules and optimizers: lazy linear shape inference and PyTorch's
 * initialisation, state-dict names, pt_module_to between two cpu devices
 * (PORTABLE_CPU_DEVICES=2), forward errors, no-grad mode, exact SGD/Adam
 * updates against host arithmetic, and optimizers driving a loss down. */
#include <string.h>
#include <unistd.h>

#include "nn_test.h"

static pt_device *dev;

static bool host_f32(pt_tensor *t, float *out, int64_t cap) {
    return t && pt_tensor_numel(t) <= cap && pt_to_host(t, out, (size_t)cap * sizeof *out) == PT_OK;
}

/* The first 8 values of t (any shape, >= 8 elements). */
static bool head8(pt_tensor *t, float *out) {
    int64_t n = pt_tensor_numel(t);
    pt_tensor *flat = pt_reshape(t, 1, &n);
    pt_tensor *head = pt_narrow(flat, 0, 0, 8);
    bool ok = host_f32(head, out, 8);
    pt_release(head);
    pt_release(flat);
    return ok;
}

static bool shape_is(pt_tensor *t, int ndim, int64_t a, int64_t b) {
    if (!t || pt_tensor_ndim(t) != ndim) return false;
    const int64_t *s = pt_tensor_shape(t);
    return s[0] == a && (ndim < 2 || s[1] == b);
}

static pt_module *mlp(int hidden, int out) {
    pt_module *layers[3] = {pt_linear(hidden), pt_relu_module(), pt_linear(out)};
    return pt_sequential(3, layers);
}

static void test_lazy_linear(void) {
    pt_module *lin = pt_linear(5);
    const char *names[4];
    pt_tensor *ts[4];
    NN_CHECK(pt_module_parameters(lin, names, ts, 4) == 2, "two parameters");
    NN_CHECK(strcmp(names[0], "weight") == 0 && strcmp(names[1], "bias") == 0, "names %s %s", names[0], names[1]);
    NN_CHECK(ts[0] == NULL && ts[1] == NULL, "not created before the first forward");
    NN_CHECK(pt_save(lin, "/tmp/never_written.safetensors") == PT_ERR_INVALID_ARGUMENT, "saving a lazy module");

    pt_manual_seed(123);
    int64_t xs[2] = {3, 7};
    pt_tensor *x = pt_ones(dev, PT_F32, 2, xs);
    pt_tensor *y = pt_module_forward(lin, x);
    NN_CHECK(shape_is(y, 2, 3, 5), "output [3, 5]");
    pt_module_parameters(lin, names, ts, 4);
    NN_CHECK(shape_is(ts[0], 2, 5, 7) && shape_is(ts[1], 1, 5, 0), "weight [5, 7], bias [5] inferred");
    NN_CHECK(pt_tensor_device(ts[0]) == dev && pt_tensor_dtype(ts[0]) == PT_F32, "created on the input's device");
    NN_CHECK(pt_requires_grad(ts[0]) && pt_requires_grad(ts[1]) && pt_requires_grad(y), "parameters require grad");

    /* torch.nn.Linear's init from the Philox stream: W then b, each
     * (u - 0.5) * 2 / sqrt(in) with u = pt_rand. */
    pt_manual_seed(123);
    int64_t ws[2] = {5, 7}, bs = 5;
    pt_tensor *uw = pt_rand(dev, PT_F32, 2, ws), *ub = pt_rand(dev, PT_F32, 1, &bs);
    float w[35], b[5], u1[35], u2[5];
    bool got = host_f32(ts[0], w, 35) && host_f32(ts[1], b, 5) && host_f32(uw, u1, 35) && host_f32(ub, u2, 5);
    double bound = 1.0 / sqrt(7.0);
    bool exact = got, inside = got;
    for (int i = 0; got && i < 35; ++i) {
        exact = exact && w[i] == (u1[i] - 0.5f) * (float)(2.0 * bound);
        inside = inside && fabs(w[i]) <= bound;
    }
    for (int i = 0; got && i < 5; ++i) exact = exact && b[i] == (u2[i] - 0.5f) * (float)(2.0 * bound);
    NN_CHECK(exact, "weight and bias are (pt_rand - 0.5) * 2/sqrt(in), weight first");
    NN_CHECK(inside, "weights within +-1/sqrt(in)");

    /* y = x W^T + b with x all ones: row sums of W plus b. */
    float yv[15];
    bool right = host_f32(y, yv, 15);
    for (int r = 0; right && r < 3; ++r)
        for (int o = 0; o < 5; ++o) {
            double want = b[o];
            for (int i = 0; i < 7; ++i) want += w[o * 7 + i];
            right = right && fabs(yv[r * 5 + o] - want) < 1e-5;
        }
    NN_CHECK(right, "forward computes x W^T + b");

    int64_t bad[2] = {3, 6};
    pt_tensor *x6 = pt_ones(dev, PT_F32, 2, bad);
    NN_CHECK(pt_module_forward(lin, x6) == NULL && pt_last_status() == PT_ERR_SHAPE, "6 features into a 7-input linear");
    NN_CHECK(strstr(pt_last_error(), "expects 7") != NULL, "message: %s", pt_last_error());
    pt_tensor *xi = pt_cast(x, PT_I32);
    NN_CHECK(pt_module_forward(lin, xi) == NULL && pt_last_status() == PT_ERR_DTYPE, "integer input");

    pt_no_grad_begin();
    pt_tensor *y2 = pt_module_forward(lin, x);
    pt_tensor *s2 = pt_sum(y2, PT_ALL, false);
    NN_CHECK(y2 && !pt_requires_grad(y2), "no-grad forward records nothing");
    NN_CHECK(pt_backward(s2) == PT_ERR_INVALID_ARGUMENT, "so there is nothing to differentiate");
    pt_release(s2);
    pt_no_grad_end();

    pt_tensor *sized_w = NULL;
    pt_module *sized = pt_linear_sized(4, 2);
    pt_module_parameters(sized, NULL, &sized_w, 1);
    NN_CHECK(shape_is(sized_w, 2, 2, 4) && pt_tensor_device(sized_w) == pt_cpu(), "pt_linear_sized: [2, 4] on cpu");
    NN_CHECK(pt_linear(0) == NULL && pt_last_status() == PT_ERR_INVALID_ARGUMENT, "pt_linear(0)");

    pt_release(y2);
    pt_release(xi);
    pt_release(x6);
    pt_release(uw);
    pt_release(ub);
    pt_release(y);
    pt_release(x);
    pt_module_free(sized);
    pt_module_free(lin);
    pt_clear_error();
}

static void test_names_and_ownership(void) {
    pt_module *inner[2] = {pt_linear(3), pt_relu_module()};
    pt_module *nested = pt_sequential(2, inner);
    pt_module *outer_parts[3] = {pt_linear(4), nested, pt_linear(2)};
    pt_module *net = pt_sequential(3, outer_parts);
    const char *names[8];
    int n = pt_module_parameters(net, names, NULL, 8);
    NN_CHECK(n == 6, "6 parameters, got %d", n);
    const char *want[6] = {"0.weight", "0.bias", "1.0.weight", "1.0.bias", "2.weight", "2.bias"};
    bool same = n == 6;
    for (int i = 0; same && i < 6; ++i) same = strcmp(names[i], want[i]) == 0;
    NN_CHECK(same, "state-dict names (%s, %s, %s, ...)", names[0], names[1], names[2]);
    NN_CHECK(pt_module_parameters(net, names, NULL, 2) == 6, "count beyond cap");

    pt_module_free(nested);
    NN_CHECK(pt_last_status() == PT_ERR_INVALID_ARGUMENT, "freeing a child directly is refused");
    pt_module *again[1] = {nested};
    NN_CHECK(pt_sequential(1, again) == NULL, "a module cannot have two owners");
    NN_CHECK(pt_module_parameter(net, "3.weight") == NULL && pt_last_status() == PT_ERR_INVALID_ARGUMENT,
             "unknown parameter name");

    /* A failed constructor inside the list: NULL out, the others freed
     * (LeakSanitizer would report them otherwise), the first error kept. */
    pt_clear_error();
    pt_module *with_null[3] = {pt_linear(4), pt_linear(-1), pt_relu_module()};
    NN_CHECK(pt_sequential(3, with_null) == NULL, "NULL entry fails");
    NN_CHECK(strstr(pt_last_error(), "pt_linear") != NULL, "keeps the constructor's error: %s", pt_last_error());

    pt_module *empty = pt_sequential(0, NULL);
    const float v = 2;
    int64_t one = 1;
    pt_tensor *x = pt_from_data(dev, PT_F32, 1, &one, &v);
    pt_tensor *y = pt_module_forward(empty, x);
    NN_CHECK(y == x, "empty sequential is the identity");
    pt_release(y);
    pt_release(x);
    pt_module_free(empty);
    pt_module_free(net);
    pt_clear_error();
}

static void test_module_to(void) {
    pt_device *cpu1 = pt_device_get("cpu:1");
    if (!cpu1) {
        printf("note: no cpu:1 (set PORTABLE_CPU_DEVICES=2): skipping pt_module_to checks\n");
        pt_clear_error();
        return;
    }
    pt_device *cpu0 = pt_device_get("cpu:0");
    pt_manual_seed(7);
    pt_module *net = mlp(8, 3);
    int64_t xs[2] = {4, 5};
    pt_tensor *x0 = pt_rand(cpu0, PT_F32, 2, xs);
    pt_tensor *y0 = pt_module_forward(net, x0);
    pt_tensor *l = pt_sum(y0, PT_ALL, false);
    pt_backward(l);
    float before[8], after[8];
    pt_tensor *w = pt_module_parameter(net, "0.weight");
    head8(w, before);

    NN_CHECK(pt_module_to(net, cpu1) == PT_OK, "move to cpu:1");
    pt_tensor *ts[4];
    pt_module_parameters(net, NULL, ts, 4);
    bool all_there = true;
    for (int i = 0; i < 4; ++i) all_there = all_there && pt_tensor_device(ts[i]) == cpu1 && pt_requires_grad(ts[i]);
    NN_CHECK(all_there, "every parameter now names cpu:1 and still requires grad");
    pt_tensor *g = pt_grad(ts[0]);
    NN_CHECK(g && pt_tensor_device(g) == cpu1, "the gradient moved too");
    pt_release(g);
    head8(ts[0], after);
    NN_CHECK(memcmp(before, after, sizeof before) == 0, "values unchanged by the move");

    NN_CHECK(pt_module_forward(net, x0) == NULL && pt_last_status() == PT_ERR_DEVICE_MISMATCH,
             "input on cpu:0 with the model on cpu:1");
    NN_CHECK(strstr(pt_last_error(), "cpu:1") && strstr(pt_last_error(), "pt_module_to"), "message: %s",
             pt_last_error());
    pt_tensor *x1 = pt_to(x0, cpu1);
    pt_tensor *y1 = pt_module_forward(net, x1);
    NN_CHECK(y1 && pt_tensor_device(y1) == cpu1, "forward on cpu:1");

    /* The optimizer's state follows the parameters. */
    pt_optimizer *opt = pt_sgd(net, 0.01, 0.9, 0.0);
    pt_module_to(net, cpu0);
    pt_tensor *y2 = pt_module_forward(net, x0);
    pt_tensor *l2 = pt_sum(y2, PT_ALL, false);
    pt_optimizer_zero_grad(opt);
    NN_CHECK(pt_backward(l2) == PT_OK && pt_optimizer_step(opt) == PT_OK, "step on cpu:0");
    pt_module_to(net, cpu1);
    pt_tensor *y3 = pt_module_forward(net, x1);
    pt_tensor *l3 = pt_sum(y3, PT_ALL, false);
    pt_optimizer_zero_grad(opt);
    NN_CHECK(pt_backward(l3) == PT_OK && pt_optimizer_step(opt) == PT_OK, "step after moving to cpu:1: %s",
             pt_last_error());

    /* A lazy module moved before its first forward creates its parameters there. */
    pt_module *lazy = pt_linear(2);
    pt_module_to(lazy, cpu1);
    pt_tensor *y4 = pt_module_forward(lazy, x1);
    pt_tensor *lw = NULL;
    pt_module_parameters(lazy, NULL, &lw, 1);
    NN_CHECK(y4 && lw && pt_tensor_device(lw) == cpu1, "lazy parameters created on cpu:1");

    /* pt_load's map_location: a file saved from cpu:0 lands on cpu:1. */
    char path[64];
    snprintf(path, sizeof path, "/tmp/test_modules_%ld.safetensors", (long)getpid());
    pt_module *fresh = mlp(8, 3);
    NN_CHECK(pt_save(net, path) == PT_OK && pt_load(fresh, path, cpu1) == PT_OK, "save, load onto cpu:1");
    pt_tensor *fw = NULL;
    pt_module_parameters(fresh, NULL, &fw, 1);
    NN_CHECK(fw && pt_tensor_device(fw) == cpu1 && pt_requires_grad(fw), "loaded parameters live on cpu:1");
    remove(path);
    pt_module_free(fresh);

    pt_release(y4);
    pt_module_free(lazy);
    pt_release(l3);
    pt_release(y3);
    pt_release(l2);
    pt_release(y2);
    pt_optimizer_free(opt);
    pt_release(y1);
    pt_release(x1);
    pt_release(l);
    pt_release(y0);
    pt_release(x0);
    pt_module_free(net);
    pt_clear_error();
}

/* One linear, one sample, loss = sum(y): dL/dW = x (per row), dL/db = 1. */
static void test_exact_updates(void) {
    pt_module *lin = pt_linear_sized(2, 1);
    const float xv[2] = {0.5f, -1.0f};
    int64_t xs[2] = {1, 2};
    pt_tensor *x = pt_from_data(pt_cpu(), PT_F32, 2, xs, xv);
    pt_tensor *w = pt_module_parameter(lin, "weight"), *b = pt_module_parameter(lin, "bias");
    float w0[2], b0[1], w1[2], b1[1];
    host_f32(w, w0, 2);
    host_f32(b, b0, 1);
    const double lr = 0.1, mom = 0.5, wd = 0.01;
    pt_optimizer *sgd = pt_sgd(lin, lr, mom, wd);
    for (int step = 0; step < 2; ++step) {
        pt_tensor *y = pt_module_forward(lin, x);
        pt_tensor *l = pt_sum(y, PT_ALL, false);
        pt_optimizer_zero_grad(sgd);
        pt_backward(l);
        pt_optimizer_step(sgd);
        pt_release(l);
        pt_release(y);
    }
    host_f32(w, w1, 2);
    host_f32(b, b1, 1);
    /* torch.optim.SGD by hand: d = g + wd p; buf = d, then mom buf + d. */
    double pw[2] = {w0[0], w0[1]}, pb = b0[0], bufw[2], bufb = 0;
    for (int step = 0; step < 2; ++step) {
        for (int i = 0; i < 2; ++i) {
            double d = xv[i] + wd * pw[i];
            bufw[i] = step == 0 ? d : mom * bufw[i] + d;
            pw[i] -= lr * bufw[i];
        }
        double d = 1.0 + wd * pb;
        bufb = step == 0 ? d : mom * bufb + d;
        pb -= lr * bufb;
    }
    NN_CHECK(fabs(w1[0] - pw[0]) < 1e-6 && fabs(w1[1] - pw[1]) < 1e-6 && fabs(b1[0] - pb) < 1e-6,
             "SGD momentum + weight decay: got (%g %g %g), want (%g %g %g)", w1[0], w1[1], b1[0], pw[0], pw[1], pb);
    pt_optimizer_free(sgd);

    /* Adam, two steps, from the current values. */
    const double b1c = 0.9, b2c = 0.999, eps = 1e-8, alr = 0.01;
    pt_optimizer *adam = pt_adam(lin, alr, b1c, b2c, eps, 0.0);
    double aw[2] = {w1[0], w1[1]}, ab = b1[0], m[3] = {0}, v[3] = {0};
    for (int step = 1; step <= 2; ++step) {
        pt_tensor *y = pt_module_forward(lin, x);
        pt_tensor *l = pt_sum(y, PT_ALL, false);
        pt_optimizer_zero_grad(adam);
        pt_backward(l);
        pt_optimizer_step(adam);
        pt_release(l);
        pt_release(y);
        double g[3] = {xv[0], xv[1], 1.0}, *p[3] = {&aw[0], &aw[1], &ab};
        for (int i = 0; i < 3; ++i) {
            m[i] = b1c * m[i] + (1 - b1c) * g[i];
            v[i] = b2c * v[i] + (1 - b2c) * g[i] * g[i];
            double mh = m[i] / (1 - pow(b1c, step)), vh = v[i] / (1 - pow(b2c, step));
            *p[i] -= alr * mh / (sqrt(vh) + eps);
        }
    }
    host_f32(w, w1, 2);
    host_f32(b, b1, 1);
    NN_CHECK(fabs(w1[0] - aw[0]) < 1e-6 && fabs(w1[1] - aw[1]) < 1e-6 && fabs(b1[0] - ab) < 1e-6,
             "Adam: got (%g %g %g), want (%g %g %g)", w1[0], w1[1], b1[0], aw[0], aw[1], ab);
    pt_optimizer_free(adam);

    NN_CHECK(pt_sgd(lin, 0, 0, 0) == NULL && pt_last_status() == PT_ERR_INVALID_ARGUMENT, "lr 0 refused");
    NN_CHECK(pt_adam(lin, 1e-3, 1.0, 0.999, 1e-8, 0) == NULL, "beta1 = 1 refused");
    pt_release(x);
    pt_module_free(lin);
    pt_clear_error();
}

/* Regression: y = x . (1, -2, 3) + 0.5; both optimizers cut the MSE 100x. */
static void test_optimizers_learn(void) {
    for (int which = 0; which < 2; ++which) {
        pt_manual_seed(99);
        pt_module *net = pt_linear(1);
        pt_optimizer *opt = which == 0 ? pt_sgd(net, 0.1, 0.9, 0.0) : pt_adam(net, 0.05, 0.9, 0.999, 1e-8, 0.0);
        int64_t xs[2] = {32, 3};
        pt_tensor *x = pt_randn(dev, PT_F32, 2, xs);
        const float wt[3] = {1, -2, 3};
        int64_t ws[2] = {3, 1};
        pt_tensor *wtrue = pt_from_data(dev, PT_F32, 2, ws, wt);
        pt_tensor *xw = pt_matmul(x, wtrue);
        pt_tensor *target = pt_add_scalar(xw, 0.5);
        double first = NAN, last = NAN;
        for (int step = 0; step < 100; ++step) {
            pt_scope s = pt_scope_begin();
            pt_tensor *loss = pt_mse_loss(pt_module_forward(net, x), target);
            pt_optimizer_zero_grad(opt);
            pt_backward(loss);
            pt_optimizer_step(opt);
            double v = pt_item(loss);
            if (step == 0) first = v;
            last = v;
            pt_scope_end(s);
        }
        NN_CHECK(last < first / 100, "%s: MSE %g -> %g", which == 0 ? "SGD" : "Adam", first, last);
        pt_release(target);
        pt_release(xw);
        pt_release(wtrue);
        pt_release(x);
        pt_optimizer_free(opt);
        pt_module_free(net);
    }
    int64_t three = 3, four = 4;
    pt_tensor *z3 = pt_zeros(dev, PT_F32, 1, &three), *z4 = pt_zeros(dev, PT_F32, 1, &four);
    NN_CHECK(pt_mse_loss(z3, z4) == NULL && pt_last_status() == PT_ERR_SHAPE, "mse of different shapes");
    pt_release(z3);
    pt_release(z4);
    int64_t ls[2] = {2, 3}, n2 = 2;
    pt_tensor *logits = pt_zeros(dev, PT_F32, 2, ls), *fl = pt_zeros(dev, PT_F32, 1, &n2);
    NN_CHECK(pt_cross_entropy(logits, fl) == NULL && pt_last_status() == PT_ERR_DTYPE, "float labels refused");
    pt_release(logits);
    pt_release(fl);
    pt_clear_error();
}

int main(void) {
    nn_begin();
    dev = nn_device_or_skip();
    printf("modules on %s\n", pt_device_name(dev));
    test_lazy_linear();
    test_names_and_ownership();
    test_module_to();
    test_exact_updates();
    test_optimizers_learn();
    return nn_finish();
}
