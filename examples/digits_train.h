/* One training step of the digits MLP (64 -> 256 -> ReLU -> 10,
 * cross-entropy, SGD lr 0.1 momentum 0.9, batch 64), shared by
 * tests/nn/test_training.c and bench/bench_mlp.c so that the test checks and
 * the benchmark times the same code.
 *
 * examples/mlp_digits.c does not use this file on purpose: it is a user's
 * first example and writes the same model and step out in full with the
 * public API. Keep the two, and bench/bench_mlp_torch.py, in step (model,
 * optimizer settings, batch size). */
#ifndef PORTABLE_EXAMPLES_DIGITS_TRAIN_H
#define PORTABLE_EXAMPLES_DIGITS_TRAIN_H

#include "digits_data.h"
#include "portable/portable.h"

#define DIGITS_BATCH 64

/* 64 -> 256 -> ReLU -> 10. The linears are lazy: their parameters are made
 * at the first forward, on that batch's device. NULL + error on failure. */
pt_module *digits_mlp(void);

/* SGD with momentum as the example uses it (lr 0.1, momentum 0.9, no weight
 * decay). NULL for a NULL net. Free it before the net. */
pt_optimizer *digits_sgd(pt_module *net);

/* Forward half of a step: copies rows order[first .. first + count) of d to
 * dev, through the host buffers px and lb (DIGITS_BATCH rows each), and
 * returns net's mean cross-entropy on them: a 0-D tensor recorded for
 * pt_backward. Call it inside a pt_scope: the loss and the batch tensors are
 * left to that scope. NULL + error on failure. */
pt_tensor *digits_batch_loss(pt_device *dev, pt_module *net, const digits *d, const int *order, int first,
                             int count, float *px, int64_t *lb);

/* Update half: zero the gradients, backward from loss, optimizer step.
 * Queued on the device, not waited for. The first failing call's status. */
pt_status digits_update(pt_optimizer *opt, pt_tensor *loss);

/* The digits CNN of examples/cnn_digits.c, for the data-parallel test and
 * example: conv 3x3 (16, pad 1) -> [batch norm] -> relu -> max pool 2, the
 * same with 32 channels, flatten -> linear 10. Without batch_norm the net
 * has no buffers and a rank's step does not depend on how the batch is
 * split across ranks. Lazy layers: parameters appear at the first forward.
 * The net of cnn_digits (with batch norm), ddp_digits --model cnn and
 * bench_cnn. */
pt_module *digits_cnn(bool batch_norm);

/* digits_batch_loss for the CNN: the rows as [count, 1, 8, 8] images. */
pt_tensor *digits_image_batch_loss(pt_device *dev, pt_module *net, const digits *d, const int *order, int first,
                                   int count, float *px, int64_t *lb);

#endif
