/* Data-parallel training of the digits MLP (or, with --model cnn, the
 * digits CNN of cnn_digits, batch norm included) over MPI, on any backend.
 *
 *   mpirun -np 2 ./build/examples/ddp_digits                  (one machine)
 *   mpirun -np 2 ./build/examples/ddp_digits --model cnn
 *   mpirun -np 8 --hostfile hosts ./build/examples/ddp_digits (several)
 *   PORTABLE_BACKEND=opencl mpirun -np 2 ./build/examples/ddp_digits
 *   mpirun -np 2 ./build/examples/ddp_digits --graph        (MLP only)
 *
 * Each rank trains the same model (rank 0's initial parameters are
 * broadcast) on its shard of each epoch, batch 32 per rank; gradients are
 * averaged across the ranks in buckets during backward (pt_ddp), and each
 * bucket's parameters are stepped as soon as its averages arrive
 * (pt_ddp_step). With N ranks that is the single-process training with
 * batch 32 N (for the MLP; batch norm's statistics are per rank, over 32
 * samples, and its running statistics are rank 0's).
 *
 * --graph: the step as two graphs (portable/graph.h) around its collective,
 * which no graph can hold (MPI moves the gradients through host memory; a
 * capture refuses host reads): forward, loss and backward captured once
 * per batch shape, the gradients averaged eagerly (pt_dist_all_reduce per
 * parameter, the wrapper's bucket hooks off), then the optimizer step
 * captured once and replayed. The gradients exist before the captures
 * (the first step runs eagerly) and are zeroed in place inside them, so
 * every graph reads and writes the same gradient tensors. The losses equal
 * eager DDP's (dist_example_ddp_digits_graph_np2). Exit status:
 * 0 when the test accuracy is >= 95%, 1 otherwise, 2 for bad usage or
 * missing data. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digits_cli.h"
#include "digits_train.h"
#include "portable/dist.h"

#define BATCH_PER_RANK 32
#define EPOCHS 8
#define MAX_PARAMS 16

/* ---- --graph: the step in two graphs, the all-reduce eager between ---- */

typedef struct ddp_graphs {
    struct {
        int rows;
        pt_tensor *x, *y, *loss; /* what the graph reads, and the loss it writes */
        pt_graph *graph;         /* forward, loss, backward */
    } shape[2];
    pt_graph *step;              /* the optimizer step */
    pt_tensor *grads[MAX_PARAMS]; /* the parameters' gradients (references) */
    int n;
} ddp_graphs;

/* Captures what needs capturing: the optimizer step (once), and the
 * forward and backward for batches of rows (once per batch size). The
 * index of that shape's graph, -1 + error on failure. */
static int ddp_graph_for(ddp_graphs *G, pt_device *dev, pt_module *net, pt_optimizer *opt, int rows) {
    if (!G->step) {
        pt_tensor *params[MAX_PARAMS];
        const int n = pt_module_parameters(net, NULL, params, MAX_PARAMS);
        if (n < 0 || n > MAX_PARAMS) return -1;
        for (G->n = 0; G->n < n; ++G->n)
            if (!(G->grads[G->n] = pt_keep(pt_grad(params[G->n])))) return -1; /* made by the eager first step */
        if (pt_graph_capture_begin(dev) != PT_OK) return -1;
        pt_status s = pt_optimizer_step(opt);
        G->step = pt_graph_capture_end(dev);
        if (s != PT_OK || !G->step) return -1;
    }
    for (int i = 0; i < 2; ++i)
        if (G->shape[i].graph && G->shape[i].rows == rows) return i;
    const int i = G->shape[0].graph ? 1 : 0;
    int64_t xs[2] = {rows, DIGITS_FEATURES}, ys[1] = {rows};
    G->shape[i].rows = rows;
    G->shape[i].x = pt_keep(pt_empty(dev, PT_F32, 2, xs));
    G->shape[i].y = pt_keep(pt_empty(dev, PT_I64, 1, ys));
    if (!G->shape[i].x || !G->shape[i].y || pt_graph_capture_begin(dev) != PT_OK) return -1;
    pt_scope scope = pt_scope_begin();
    pt_status s = PT_OK;
    /* zeroed in place (pt_optimizer_zero_grad would drop them and the
     * backward make new ones, which the step graph would not read) */
    for (int k = 0; k < G->n && s == PT_OK; ++k) s = pt_fill_(G->grads[k], 0.0);
    pt_tensor *loss = pt_cross_entropy(pt_module_forward(net, G->shape[i].x), G->shape[i].y);
    if (s == PT_OK) s = pt_backward(loss);
    pt_tensor *kept = pt_keep(loss);
    pt_scope_end(scope);
    G->shape[i].loss = pt_keep(kept); /* past the caller's scope too: it lives as long as the graph */
    G->shape[i].graph = pt_graph_capture_end(dev); /* always ends the capture; NULL says why */
    return s == PT_OK && G->shape[i].graph ? i : -1;
}

/* One step on rows [first, first + rows) of order: the shape's graph
 * replayed, the gradients averaged over the ranks, the step graph
 * replayed. The loss (borrowed: the next replay rewrites it), NULL + error. */
static pt_tensor *ddp_graph_step(ddp_graphs *G, pt_dist *g, pt_device *dev, pt_module *net, pt_optimizer *opt,
                                 const digits *d, const int *order, int first, int rows, float *px, int64_t *lb) {
    int i = ddp_graph_for(G, dev, net, opt, rows);
    if (i < 0) return NULL;
    digits_gather(d, order, first, rows, px, lb);
    int64_t xs[2] = {rows, DIGITS_FEATURES}, ys[1] = {rows};
    if (pt_copy_(G->shape[i].x, pt_from_data(pt_cpu(), PT_F32, 2, xs, px)) != PT_OK ||
        pt_copy_(G->shape[i].y, pt_from_data(pt_cpu(), PT_I64, 1, ys, lb)) != PT_OK ||
        pt_graph_replay(G->shape[i].graph) != PT_OK)
        return NULL;
    for (int k = 0; k < G->n; ++k)
        if (pt_dist_all_reduce(g, G->grads[k], PT_REDUCE_AVG) != PT_OK) return NULL;
    return pt_graph_replay(G->step) == PT_OK ? G->shape[i].loss : NULL;
}

static void ddp_graphs_free(ddp_graphs *G) {
    pt_graph_free(G->step);
    for (int k = 0; k < G->n; ++k) pt_release(G->grads[k]);
    for (int i = 0; i < 2; ++i) {
        pt_graph_free(G->shape[i].graph);
        pt_release(G->shape[i].x);
        pt_release(G->shape[i].y);
        pt_release(G->shape[i].loss);
    }
    memset(G, 0, sizeof *G);
}

/* The input shape of n images: rows of 64 pixels (MLP) or 1x8x8 images (CNN). */
static int input_shape(bool cnn, int64_t n, int64_t *shape) {
    if (!cnn) {
        shape[0] = n;
        shape[1] = DIGITS_FEATURES;
        return 2;
    }
    shape[0] = n;
    shape[1] = 1;
    shape[2] = shape[3] = 8;
    return 4;
}

static double accuracy(pt_module *net, const digits *d, pt_device *dev, bool cnn) {
    pt_scope s = pt_scope_begin();
    pt_no_grad_begin();
    pt_module_train(net, false); /* batch norm: the running statistics */
    int64_t shape[4];
    int nd = input_shape(cnn, d->n, shape);
    pt_tensor *x = pt_from_data(dev, PT_F32, nd, shape, d->pixels);
    pt_tensor *y = pt_from_data(dev, PT_I64, 1, (int64_t[]){d->n}, d->labels);
    pt_tensor *hits = pt_eq(pt_argmax(pt_module_forward(net, x), 1, false), y);
    double a = pt_item(pt_mean(pt_cast(hits, PT_F32), PT_ALL, false));
    pt_no_grad_end();
    pt_scope_end(s);
    return a;
}

int main(int argc, char **argv) {
    /* Parsed before MPI starts, so --help needs no launcher. */
    static const digits_cli_spec spec = {
        "mpirun -np N ", NULL, "Each rank's device is cuda:<local rank> where there are GPUs, else PORTABLE_BACKEND's."};
    digits_cli args = {.epochs = EPOCHS, .models = "mlp|cnn", .graphs = true};
    int parsed = digits_cli_parse(argc, argv, &spec, &args);
    if (parsed) return parsed == 1 ? 0 : 2;
    if (args.graph && args.model && strcmp(args.model, "cnn") == 0) {
        /* Batch norm's running statistics are broadcast by pt_ddp_sync, which the graphs' step goes without. */
        fprintf(stderr, "ddp_digits: --graph trains the MLP only (the CNN's batch norm buffers are synced by "
                        "pt_ddp_sync, which the replayed step does not call)\n");
        return 2;
    }
    pt_dist *g = pt_dist_init(&argc, &argv);
    if (!g) {
        fprintf(stderr, "ddp_digits: %s\n", pt_last_error());
        return 1;
    }
    int rank = pt_dist_rank(g), world = pt_dist_world_size(g);
    pt_device *dev = pt_dist_device(g); /* cuda:<local rank> where there are GPUs */
    char path[4096], err[512];
    digits all, train, test;
    if (!dev || digits_find(args.data, path, sizeof path) ||
        digits_load(path, &all, err, sizeof err) || digits_split(&all, 42, 0.8, &train, &test)) {
        fprintf(stderr, "ddp_digits: rank %d: %s %s\n", rank, dev ? path : pt_last_error(), err);
        pt_dist_finalize(g);
        return 2;
    }
    digits_free(&all);
    if (rank == 0)
        printf("%s on %d ranks (%s), rank 0 on %s, batch %d per rank\n", args.model ? args.model : "mlp", world,
               pt_dist_launcher(g), pt_device_name(dev), BATCH_PER_RANK);

    /* The model's lazy parameters appear at a first forward; pt_ddp_new
     * then gives every rank rank 0's values. */
    pt_manual_seed((uint64_t)rank); /* different on purpose: the broadcast makes them equal */
    bool cnn = args.model && strcmp(args.model, "cnn") == 0;
    pt_module *net = cnn ? digits_cnn(true) : digits_mlp();
    int64_t one[4];
    int nd = input_shape(cnn, 1, one);
    pt_module_train(net, false); /* the first forward leaves batch norm's running statistics alone */
    pt_no_grad_begin();
    pt_scope s0 = pt_scope_begin();
    pt_module_forward(net, pt_zeros(dev, PT_F32, nd, one));
    pt_scope_end(s0);
    pt_no_grad_end();
    pt_module_train(net, true);
    pt_ddp *ddp = pt_ddp_new(g, net, 0);
    pt_optimizer *opt = digits_sgd(net);
    if (!ddp || !opt) {
        fprintf(stderr, "ddp_digits: rank %d: %s\n", rank, pt_last_error());
        return 1;
    }

    int64_t count = pt_dist_shard(g, train.n, 0, NULL, 0);
    int64_t *mine64 = malloc((size_t)count * sizeof *mine64);
    int *mine = malloc((size_t)count * sizeof *mine);
    float px[BATCH_PER_RANK * DIGITS_FEATURES];
    int64_t lb[BATCH_PER_RANK];
    int status = 0;
    ddp_graphs graphs;
    memset(&graphs, 0, sizeof graphs);
    bool eager_step = true; /* --graph: the first step, which makes the gradients and the optimizer's state */
    for (int epoch = 1; epoch <= args.epochs && !status; ++epoch) {
        pt_dist_shard(g, train.n, 1000 + (uint64_t)epoch, mine64, count); /* same seed on every rank */
        for (int64_t k = 0; k < count; ++k) mine[k] = (int)mine64[k];
        pt_tensor *loss_sum = pt_zeros(dev, PT_F32, 0, NULL);
        for (int64_t first = 0; first < count; first += BATCH_PER_RANK) {
            int rows = (int)(count - first < BATCH_PER_RANK ? count - first : BATCH_PER_RANK);
            pt_scope s = pt_scope_begin();
            pt_tensor *loss = NULL;
            if (eager_step) {
                loss = cnn ? digits_image_batch_loss(dev, net, &train, mine, (int)first, rows, px, lb)
                           : digits_batch_loss(dev, net, &train, mine, (int)first, rows, px, lb);
                if (pt_optimizer_zero_grad(opt) || pt_backward(loss) || pt_ddp_step(ddp, opt)) status = 1;
                /* --graph from the second step on: the hooks' buckets off, the graphs average instead */
                if (args.graph && !status && pt_ddp_set_require_sync(ddp, false) == PT_OK) eager_step = false;
            } else if (!(loss = ddp_graph_step(&graphs, g, dev, net, opt, &train, mine, (int)first, rows, px, lb))) {
                status = 1;
            }
            if (status) fprintf(stderr, "ddp_digits: rank %d: %s\n", rank, pt_last_error());
            pt_no_grad_begin();
            pt_tensor *sum = pt_keep(pt_add(loss_sum, pt_mul_scalar(loss, rows)));
            pt_no_grad_end();
            pt_scope_end(s);
            pt_release(loss_sum);
            loss_sum = sum;
            if (status) break;
        }
        /* the mean loss over every rank's samples */
        pt_dist_all_reduce(g, loss_sum, PT_REDUCE_SUM);
        double loss = pt_item(loss_sum) / (double)(count * world);
        pt_release(loss_sum);
        if (rank == 0) printf("epoch %d  loss %.4f\n", epoch, loss);
    }
    if (rank == 0 && graphs.step) {
        pt_graph_stats fb, st;
        pt_graph_info(graphs.shape[0].graph, &fb);
        pt_graph_info(graphs.step, &st);
        printf("--graph: forward+backward replayed from %d graph(s) (%lld ops for a full batch), the optimizer "
               "step from one (%lld ops), the gradients all-reduced eagerly between them\n",
               graphs.shape[1].graph ? 2 : 1, (long long)fb.ops, (long long)st.ops);
    }
    double acc = accuracy(net, &test, dev, cnn);
    if (rank == 0) printf("test accuracy %.2f%% (%d images)\n", 100 * acc, test.n);
    if (!status && acc < 0.95) status = 1;
    ddp_graphs_free(&graphs);
    pt_optimizer_free(opt);
    pt_ddp_free(ddp);
    pt_module_free(net);
    free(mine64);
    free(mine);
    digits_free(&train);
    digits_free(&test);
    pt_dist_finalize(g);
    return status;
}
