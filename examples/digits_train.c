/* The digits MLP training step; see digits_train.h. */
#include "digits_train.h"

pt_module *digits_mlp(void) {
    pt_module *layers[3] = {pt_linear(256), pt_relu_module(), pt_linear(DIGITS_CLASSES)};
    return pt_sequential(3, layers);
}

pt_optimizer *digits_sgd(pt_module *net) { return net ? pt_sgd(net, 0.1, 0.9, 0.0) : NULL; }

pt_tensor *digits_batch_loss(pt_device *dev, pt_module *net, const digits *d, const int *order, int first,
                             int count, float *px, int64_t *lb) {
    digits_gather(d, order, first, count, px, lb);
    int64_t xs[2] = {count, DIGITS_FEATURES}, ys[1] = {count};
    pt_tensor *x = pt_from_data(dev, PT_F32, 2, xs, px);
    pt_tensor *y = pt_from_data(dev, PT_I64, 1, ys, lb);
    return pt_cross_entropy(pt_module_forward(net, x), y);
}

pt_status digits_update(pt_optimizer *opt, pt_tensor *loss) {
    pt_status s = pt_optimizer_zero_grad(opt);
    if (s == PT_OK) s = pt_backward(loss);
    if (s == PT_OK) s = pt_optimizer_step(opt);
    return s;
}

pt_module *digits_cnn(bool batch_norm) {
    const pt_conv2d_opts pad1 = {.padding = {1, 1}};
    const pt_pool2d_opts pool2 = {.kernel = {2, 2}};
    pt_module *layers[10];
    int n = 0;
    for (int64_t channels = 16; channels <= 32; channels *= 2) {
        layers[n++] = pt_conv2d(channels, 3, 3, &pad1, true);
        if (batch_norm) layers[n++] = pt_batch_norm2d(1e-5, 0.1);
        layers[n++] = pt_relu_module();
        layers[n++] = pt_max_pool2d(&pool2);
    }
    layers[n++] = pt_flatten();
    layers[n++] = pt_linear(DIGITS_CLASSES);
    return pt_sequential(n, layers);
}

pt_tensor *digits_image_batch_loss(pt_device *dev, pt_module *net, const digits *d, const int *order, int first,
                                   int count, float *px, int64_t *lb) {
    digits_gather(d, order, first, count, px, lb);
    int64_t xs[4] = {count, 1, 8, 8}, ys[1] = {count}; /* the 64 pixels as a 1x8x8 image */
    pt_tensor *x = pt_from_data(dev, PT_F32, 4, xs, px);
    pt_tensor *y = pt_from_data(dev, PT_I64, 1, ys, lb);
    return pt_cross_entropy(pt_module_forward(net, x), y);
}
