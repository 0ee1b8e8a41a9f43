/* --graph for the digits trainers (mlp_digits, cnn_digits): the training
 * step (forward, loss, zero_grad, backward, optimizer step) captured once per
 * batch shape and replayed (portable/graph.h). A graph replays only the
 * shape it captured, so the full batch and the short last one get a graph
 * each, and the replays train on exactly the batches eager training does.
 * Capture after one eager step: the lazy parameters and the optimizer's
 * state must exist before a capture. */
#ifndef PORTABLE_EXAMPLES_DIGITS_GRAPH_H
#define PORTABLE_EXAMPLES_DIGITS_GRAPH_H

#include "digits_data.h"
#include "portable/portable.h"

/* The trainer's forward pass and loss on a batch (x, y): a 0-D tensor that
 * pt_backward can start from, NULL + error on failure. */
typedef pt_tensor *(*digits_loss_fn)(void *ctx, pt_tensor *x, pt_tensor *y);

/* The graphs of one training run: zero-initialise, free with
 * digits_graphs_free. */
typedef struct digits_graphs {
    struct {
        int count;                /* batch rows */
        pt_tensor *x, *y, *loss;  /* what the graph reads, and the loss it writes */
        pt_graph *graph;
    } shape[2];
} digits_graphs;

/* One replayed step on rows [first, first + count) of order: captures the
 * graph of that batch size the first time it comes (nothing runs while
 * capturing), copies the batch into the graph's inputs (through px and lb;
 * as images [count, 1, 8, 8] when image, else rows [count, 64]) and
 * enqueues the step. Returns the graph's loss tensor (borrowed: the next
 * replay rewrites it), NULL + error on failure. Call inside a scope. */
pt_tensor *digits_graph_step(digits_graphs *g, pt_device *dev, pt_optimizer *opt, digits_loss_fn loss, void *ctx,
                             const digits *d, const int *order, int first, int count, float *px, int64_t *lb,
                             bool image);

/* The loss's value now, as a new tensor (for a log read after the epoch). */
pt_tensor *digits_graph_snapshot(pt_tensor *loss);

void digits_graphs_free(digits_graphs *g);

#endif
