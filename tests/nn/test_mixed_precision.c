/* Mixed precision (pt_module_set_compute_dtype): a 16-bit-compute net keeps
 * f32 parameters and buffers, returns 16-bit activations, gets f32
 * gradients that match the same net computed in f32 within the 16-bit
 * type's tolerance, trains and saves f32 masters that a plain f32 net
 * loads bit for bit; the f32 compute dtype is bit-for-bit the
 * plain net; lazy layers make f32 masters from 16-bit inputs; bad
 * arguments are errors that say what to do. */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "nn_test.h"

static pt_device *dev;

/* conv -> batch norm -> relu -> pool -> flatten -> linear, like cnn_digits. */
static pt_module *small_cnn(void) {
    const pt_conv2d_opts pad1 = {.padding = {1, 1}};
    const pt_pool2d_opts pool2 = {.kernel = {2, 2}};
    pt_module *layers[] = {pt_conv2d(6, 3, 3, &pad1, true), pt_batch_norm2d(1e-5, 0.1), pt_relu_module(),
                           pt_max_pool2d(&pool2), pt_flatten(), pt_linear(5)};
    return pt_sequential((int)(sizeof layers / sizeof layers[0]), layers);
}

#define MAXN 2048

/* ||a - b|| / ||b|| over n values. */
static double rel_norm_diff(const double *a, const double *b, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; ++i) {
        num += (a[i] - b[i]) * (a[i] - b[i]);
        den += b[i] * b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* The same seeded net and batch, once in f32 and once computing in `t`:
 * parameters, buffers and gradients compared entry by entry. u is t's unit
 * roundoff; a handful of roundings per value (input, weights, GEMM result,
 * batch norm output, linear result) keeps the gradients' relative error
 * near 2-3 u in norm (measured: bf16 2.4 u, f16 2.6 u on cpu), checked
 * against 8 u. */
static void test_cnn_against_f32(pt_dtype t, double u) {
    const char *tn = pt_dtype_name(t);
    pt_module *nets[2];
    pt_tensor *losses[2] = {NULL, NULL}, *outs[2] = {NULL, NULL};
    int64_t xs[4] = {8, 2, 6, 6}, ys[1] = {8};
    int64_t labels[8] = {0, 1, 2, 3, 4, 0, 1, 2};
    pt_manual_seed(7);
    pt_tensor *x = pt_rand(dev, PT_F32, 4, xs); /* the same input for both */
    pt_tensor *y = pt_from_data(dev, PT_I64, 1, ys, labels);
    for (int k = 0; k < 2; ++k) {
        pt_manual_seed(11); /* the same initial weights */
        nets[k] = small_cnn();
        if (k == 1) NN_CHECK(pt_module_set_compute_dtype(nets[k], t) == PT_OK, "set compute dtype %s", tn);
        outs[k] = pt_module_forward(nets[k], x);
        pt_tensor *logits = k ? pt_cast(outs[k], PT_F32) : pt_retain(outs[k]);
        losses[k] = pt_cross_entropy(logits, y);
        pt_release(logits);
        NN_CHECK(losses[k] && pt_backward(losses[k]) == PT_OK, "backward (%s)", k ? tn : "f32");
    }
    NN_CHECK(outs[1] && pt_tensor_dtype(outs[1]) == t, "the %s-compute net's output is %s", tn, tn);
    double l32 = pt_item(losses[0]), l16 = pt_item(losses[1]);
    NN_CHECK(fabs(l16 - l32) <= 4 * u * fabs(l32), "loss %s %.6g vs f32 %.6g", tn, l16, l32);

    const char *names[2][16];
    pt_tensor *ps[2][16];
    int n = pt_module_parameters(nets[0], names[0], ps[0], 16);
    NN_CHECK(n == 9 && pt_module_parameters(nets[1], names[1], ps[1], 16) == n, "9 state-dict entries");
    static double a[MAXN], b[MAXN];
    double worst = 0, weight_grad_scale = 0; /* the largest |gradient| of the conv weight (state-dict entry 0) */
    for (int i = 0; i < n && i < 16; ++i) {
        pt_tensor *p32 = ps[0][i], *p16 = ps[1][i];
        bool count = !strcmp(names[0][i], "1.num_batches_tracked");
        pt_dtype want = count ? PT_I64 : PT_F32;
        NN_CHECK(p16 && pt_tensor_dtype(p16) == want, "%s of the %s-compute net stays %s, is %s", names[1][i], tn,
                 pt_dtype_name(want), p16 ? pt_dtype_name(pt_tensor_dtype(p16)) : "NULL");
        if (count || !p16 || !p32) continue;
        int64_t numel = pt_tensor_numel(p32);
        if (numel > MAXN) continue;
        if (!pt_requires_grad(p32)) { /* a running statistic: f32, from 16-bit conv outputs */
            NN_CHECK(nn_to_doubles(p16, a, numel) == 0 && nn_to_doubles(p32, b, numel) == 0, "read %s", names[0][i]);
            double d = rel_norm_diff(a, b, numel);
            NN_CHECK(d <= 8 * u, "%s (%s compute) within 8u of f32: %.3g", names[0][i], tn, d);
            continue;
        }
        pt_tensor *g32 = pt_grad(p32), *g16 = pt_grad(p16);
        NN_CHECK(g16 && pt_tensor_dtype(g16) == PT_F32, "gradient of %s is f32 under %s compute", names[1][i], tn);
        if (!g16 || !g32) continue;
        NN_CHECK(nn_to_doubles(g16, a, numel) == 0 && nn_to_doubles(g32, b, numel) == 0, "read grads of %s",
                 names[0][i]);
        if (!strcmp(names[0][i], "0.bias")) {
            /* The conv bias before batch norm has no effect on the output:
             * its exact gradient is 0 and both runs give rounding noise, so
             * the noise is measured against the conv weight's gradient. */
            double noise = 0;
            for (int64_t j = 0; j < numel; ++j) noise = fmax(noise, fmax(fabs(a[j]), fabs(b[j])));
            NN_CHECK(noise <= 16 * u * weight_grad_scale, "conv bias grad (%s compute) is noise: %.3g vs %.3g",
                     tn, noise, weight_grad_scale);
        } else {
            double d = rel_norm_diff(a, b, numel);
            if (d > worst) worst = d;
            printf("  %s: %.3g\n", names[0][i], d);
            NN_CHECK(d <= 8 * u, "grad of %s (%s compute) within 8u = %.3g of f32: %.3g", names[0][i], tn, 8 * u,
                     d);
        }
        if (!strcmp(names[0][i], "0.weight"))
            for (int64_t j = 0; j < numel; ++j) weight_grad_scale = fmax(weight_grad_scale, fabs(b[j]));
        pt_release(g32);
        pt_release(g16);
    }
    printf("%s compute: loss %.7g vs f32 %.7g, worst gradient relative difference %.3g (u = %.3g)\n", tn, l16, l32,
           worst, u);

    /* A step updates the f32 masters in place: they stay f32. */
    pt_optimizer *opt = pt_sgd(nets[1], 0.1, 0.9, 0.0);
    NN_CHECK(opt && pt_optimizer_step(opt) == PT_OK, "SGD step on the %s-compute net", tn);
    pt_tensor *w = pt_module_parameter(nets[1], "0.weight");
    NN_CHECK(w && pt_tensor_dtype(w) == PT_F32, "conv weight still f32 after the step");
    pt_optimizer_free(opt);

    /* What is saved is the f32 masters: a plain f32 net loads them as they are. */
    char path[64];
    snprintf(path, sizeof path, "/tmp/pt_mixed_%s_%d.safetensors", tn, (int)getpid());
    pt_module *plain = small_cnn();
    NN_CHECK(pt_save(nets[1], path) == PT_OK && plain && pt_load(plain, path, dev) == PT_OK, "save %s-compute net, "
             "load into an f32 net", tn);
    pt_tensor *lw = pt_module_parameter(plain, "0.weight"), *rm = pt_module_parameter(plain, "1.running_mean");
    NN_CHECK(lw && rm && pt_tensor_dtype(lw) == PT_F32 && pt_tensor_dtype(rm) == PT_F32, "loaded as f32");
    double same = -1;
    if (lw && w && pt_tensor_numel(lw) <= MAXN) {
        nn_to_doubles(lw, a, pt_tensor_numel(lw));
        nn_to_doubles(w, b, pt_tensor_numel(w));
        same = memcmp(a, b, (size_t)pt_tensor_numel(w) * sizeof a[0]) == 0;
    }
    NN_CHECK(same == 1, "the loaded conv weight is the master, bit for bit");
    remove(path);
    pt_module_free(plain);

    /* Evaluation mode uses the f32 running statistics and still returns t. */
    pt_module_train(nets[1], false);
    pt_tensor *e = pt_module_forward(nets[1], x);
    NN_CHECK(e && pt_tensor_dtype(e) == t, "eval output %s", tn);
    pt_release(e);

    for (int k = 0; k < 2; ++k) {
        pt_release(losses[k]);
        pt_release(outs[k]);
        pt_module_free(nets[k]);
    }
    pt_release(x);
    pt_release(y);
}

/* Compute dtype f32 on an f32 net: every cast is skipped, the outputs are
 * the plain net's bit for bit. */
static void test_f32_compute_is_plain(void) {
    int64_t xs[4] = {4, 1, 5, 5};
    pt_manual_seed(3);
    pt_tensor *x = pt_rand(dev, PT_F32, 4, xs);
    static double a[64], b[64];
    pt_tensor *out[2];
    for (int k = 0; k < 2; ++k) {
        pt_manual_seed(5);
        pt_module *net = small_cnn();
        if (k) pt_module_set_compute_dtype(net, PT_F32);
        out[k] = pt_module_forward(net, x);
        pt_module_free(net);
    }
    NN_CHECK(out[0] && out[1] && pt_tensor_dtype(out[1]) == PT_F32 && nn_to_doubles(out[0], a, 20) == 0 &&
                 nn_to_doubles(out[1], b, 20) == 0 && memcmp(a, b, 20 * sizeof a[0]) == 0,
             "f32 compute gives the plain net's outputs");
    pt_release(out[0]);
    pt_release(out[1]);
    pt_release(x);
}

/* A lazy linear seeing a bf16 input: bf16 parameters when plain (as
 * before), f32 masters under a compute dtype; a sized linear (f32, cpu)
 * moved to dev takes bf16 input under bf16 compute. */
static void test_lazy_masters_and_linear(void) {
    int64_t xs[2] = {3, 4};
    pt_tensor *x32 = pt_rand(dev, PT_F32, 2, xs);
    pt_tensor *x16 = pt_cast(x32, PT_BF16);
    pt_module *plain = pt_linear(2), *mixed = pt_linear(2);
    pt_module_set_compute_dtype(mixed, PT_BF16);
    pt_tensor *yp = pt_module_forward(plain, x16), *ym = pt_module_forward(mixed, x16);
    pt_tensor *wp = pt_module_parameter(plain, "weight"), *wm = pt_module_parameter(mixed, "weight");
    NN_CHECK(wp && pt_tensor_dtype(wp) == PT_BF16, "a plain lazy linear follows its bf16 input");
    NN_CHECK(wm && pt_tensor_dtype(wm) == PT_F32, "under bf16 compute the lazy linear makes f32 masters");
    NN_CHECK(ym && pt_tensor_dtype(ym) == PT_BF16, "and computes in bf16");
    pt_release(yp);
    pt_release(ym);
    pt_module_free(plain);
    pt_module_free(mixed);

    pt_module *sized = pt_linear_sized(4, 2);
    NN_CHECK(pt_module_to(sized, dev) == PT_OK && pt_module_set_compute_dtype(sized, PT_BF16) == PT_OK,
             "sized linear to the device, bf16 compute");
    pt_tensor *y = pt_module_forward(sized, x32);
    pt_tensor *s = pt_sum(pt_cast(y, PT_F32), PT_ALL, false);
    NN_CHECK(s && pt_backward(s) == PT_OK, "backward through the bf16 linear");
    pt_tensor *g = pt_grad(pt_module_parameter(sized, "bias"));
    double gb[2] = {0, 0};
    NN_CHECK(g && pt_tensor_dtype(g) == PT_F32 && nn_to_doubles(g, gb, 2) == 0 && gb[0] == 3 && gb[1] == 3,
             "bias gradient f32 and exact (3 rows): %g %g", gb[0], gb[1]);
    pt_release(g);
    pt_release(s);
    pt_release(y);
    pt_module_free(sized);
    pt_release(x16);
    pt_release(x32);
}

/* Layer norm under bf16 compute: statistics in f32, bf16 out, f32 grads
 * close to the f32 layer's. */
static void test_layer_norm(void) {
    const int64_t shape[1] = {16}, xs[2] = {4, 16};
    pt_tensor *x = pt_rand(dev, PT_F32, 2, xs);
    pt_tensor *w16 = pt_cast(x, PT_BF16); /* a rounded copy as the second input */
    static double a[16], b[16];
    pt_tensor *g[2] = {NULL, NULL}, *out[2] = {NULL, NULL};
    for (int k = 0; k < 2; ++k) {
        pt_module *ln = pt_layer_norm(1, shape, 1e-5);
        NN_CHECK(ln && pt_module_to(ln, dev) == PT_OK, "layer norm to the device");
        if (k) pt_module_set_compute_dtype(ln, PT_BF16);
        out[k] = pt_module_forward(ln, k ? w16 : x);
        /* weights that make the weight gradient non-trivial */
        pt_tensor *s = pt_sum(pt_mul(pt_cast(out[k], PT_F32), x), PT_ALL, false);
        NN_CHECK(s && pt_backward(s) == PT_OK, "layer norm backward");
        g[k] = pt_grad(pt_module_parameter(ln, "weight"));
        pt_release(s);
        pt_module_free(ln);
    }
    NN_CHECK(out[1] && pt_tensor_dtype(out[1]) == PT_BF16, "bf16 layer norm output");
    NN_CHECK(g[1] && pt_tensor_dtype(g[1]) == PT_F32, "f32 weight gradient");
    if (g[0] && g[1] && !nn_to_doubles(g[1], a, 16) && !nn_to_doubles(g[0], b, 16)) {
        double d = rel_norm_diff(a, b, 16);
        NN_CHECK(d <= 16 * 0x1p-8, "layer norm weight grad within 16u of f32: %.3g", d);
    }
    for (int k = 0; k < 2; ++k) {
        pt_release(g[k]);
        pt_release(out[k]);
    }
    pt_release(w16);
    pt_release(x);
}

static void test_errors(void) {
    pt_module *net = small_cnn();
    NN_CHECK(pt_module_set_compute_dtype(NULL, PT_BF16) == PT_ERR_INVALID_ARGUMENT &&
                 strstr(pt_last_error(), "pt_module_set_compute_dtype"),
             "NULL module: %s", pt_last_error());
    NN_CHECK(pt_module_set_compute_dtype(net, PT_I32) == PT_ERR_DTYPE && strstr(pt_last_error(), "i32") &&
                 strstr(pt_last_error(), "bf16"),
             "an integer compute dtype is refused, naming it and the choices: %s", pt_last_error());
    NN_CHECK(pt_module_set_compute_dtype(net, (pt_dtype)99) != PT_OK, "a dtype outside the table");
    pt_clear_error();
    pt_module_free(net);
}

/* Skips (77) when this device cannot hold 16-bit tensors at all. */
static void require_16bit(void) {
    int64_t one = 1;
    pt_tensor *z = pt_zeros(dev, PT_F32, 1, &one);
    pt_tensor *h = pt_cast(z, PT_BF16), *f = pt_cast(z, PT_F16);
    bool ok = h && f;
    if (!ok) printf("SKIP: %s cannot hold 16-bit tensors: %s\n", pt_device_name(dev), pt_last_error());
    pt_release(h);
    pt_release(f);
    pt_release(z);
    if (!ok) exit(NN_SKIP);
}

/* Runs one test inside a scope, which releases the temporaries the nested
 * calls make. */
static void scoped(void (*test)(void)) {
    pt_scope s = pt_scope_begin();
    test();
    pt_scope_end(s);
}

static void test_bf16(void) { test_cnn_against_f32(PT_BF16, 0x1p-8); }
static void test_f16(void) { test_cnn_against_f32(PT_F16, 0x1p-11); }

int main(void) {
    nn_begin();
    dev = nn_device_or_skip();
    printf("mixed precision on %s\n", pt_device_name(dev));
    require_16bit();
    scoped(test_bf16);
    scoped(test_f16);
    scoped(test_f32_compute_is_plain);
    scoped(test_lazy_masters_and_linear);
    scoped(test_layer_norm);
    scoped(test_errors);
    return nn_finish();
}
