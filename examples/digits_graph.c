/* The digits trainers' --graph (digits_graph.h). */
#include "digits_graph.h"

/* The graph for batches of count rows, captured the first time. */
static int graph_for(digits_graphs *g, pt_device *dev, pt_optimizer *opt, digits_loss_fn loss_fn, void *ctx,
                     int count, bool image) {
    for (int i = 0; i < 2; ++i)
        if (g->shape[i].graph && g->shape[i].count == count) return i;
    const int i = g->shape[0].graph ? 1 : 0;
    int64_t xs[4] = {count, 1, 8, 8}, rows[2] = {count, DIGITS_FEATURES}, ys[1] = {count};
    g->shape[i].count = count;
    /* kept out of the caller's scope: they live as long as the graph */
    g->shape[i].x = pt_keep(image ? pt_empty(dev, PT_F32, 4, xs) : pt_empty(dev, PT_F32, 2, rows));
    g->shape[i].y = pt_keep(pt_empty(dev, PT_I64, 1, ys));
    if (!g->shape[i].x || !g->shape[i].y || pt_graph_capture_begin(dev) != PT_OK) return -1;
    pt_scope scope = pt_scope_begin();
    pt_tensor *loss = loss_fn(ctx, g->shape[i].x, g->shape[i].y);
    pt_optimizer_zero_grad(opt);
    pt_status s = pt_backward(loss);
    if (s == PT_OK) s = pt_optimizer_step(opt);
    pt_tensor *kept = pt_keep(loss);
    pt_scope_end(scope);
    g->shape[i].loss = pt_keep(kept);
    g->shape[i].graph = pt_graph_capture_end(dev); /* always ends the capture; NULL says why */
    return s == PT_OK && g->shape[i].graph ? i : -1;
}

pt_tensor *digits_graph_step(digits_graphs *g, pt_device *dev, pt_optimizer *opt, digits_loss_fn loss, void *ctx,
                             const digits *d, const int *order, int first, int count, float *px, int64_t *lb,
                             bool image) {
    int i = graph_for(g, dev, opt, loss, ctx, count, image);
    if (i < 0) return NULL;
    digits_gather(d, order, first, count, px, lb);
    pt_tensor *x = g->shape[i].x;
    int64_t ys[1] = {count};
    if (pt_copy_(x, pt_from_data(pt_cpu(), PT_F32, pt_tensor_ndim(x), pt_tensor_shape(x), px)) != PT_OK ||
        pt_copy_(g->shape[i].y, pt_from_data(pt_cpu(), PT_I64, 1, ys, lb)) != PT_OK ||
        pt_graph_replay(g->shape[i].graph) != PT_OK)
        return NULL;
    return g->shape[i].loss;
}

pt_tensor *digits_graph_snapshot(pt_tensor *loss) {
    pt_tensor *copy = pt_empty(pt_tensor_device(loss), pt_tensor_dtype(loss), 0, NULL);
    if (copy && pt_copy_(copy, loss) != PT_OK) {
        pt_release(copy);
        return NULL;
    }
    return copy;
}

void digits_graphs_free(digits_graphs *g) {
    for (int i = 0; i < 2; ++i) {
        pt_graph_free(g->shape[i].graph);
        pt_release(g->shape[i].x);
        pt_release(g->shape[i].y);
        pt_release(g->shape[i].loss);
        g->shape[i].graph = NULL;
        g->shape[i].x = g->shape[i].y = g->shape[i].loss = NULL;
    }
}
