/* Graphs (portable/graph.h) on the device PORTABLE_BACKEND picks: a
 * captured training step replays the bits eager training computes (SGD with
 * momentum and Adam, dropout drawing fresh numbers, one graph per batch
 * shape); so does a graph of the other op families (element-wise, strided,
 * broadcast, casts, reductions, softmax), which the OpenCL plugin replays
 * as one command buffer where it can and the CUDA plugin as one CUDA graph
 * (PT_TEST_GRAPH_PATHS checks that it did, or did not); random ops replay the eager draws; each refusal fails the call
 * that was refused and the capture with a message naming the function and
 * the fix, and the next capture starts clean; another thread's eager work
 * during a capture, and during replays, is unaffected; NULL and
 * wrong-device arguments are statuses. Exit 77 when the device is not
 * available here. `test_graph --threads` runs only the case with two
 * threads (for ThreadSanitizer: graph_threads_cpu). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "check.h"

#define FEATURES 8
#define CLASSES 4
#define SAMPLES 11 /* batches of 4, 4 and 3: two shapes */
#define BATCH 4
#define EPOCHS 3

static pt_device *dev;

/* ---- Training, eager and replayed ---- */

static pt_module *make_net(void) {
    pt_module *layers[4] = {pt_linear_sized(FEATURES, 16), pt_relu_module(), pt_dropout(0.25),
                            pt_linear_sized(16, CLASSES)};
    return pt_sequential(4, layers);
}

static pt_optimizer *make_opt(pt_module *net, bool adam) {
    return adam ? pt_adam(net, 0.01, 0.9, 0.999, 1e-8, 0.0) : pt_sgd(net, 0.1, 0.9, 1e-4);
}

/* Sample i of epoch e, in the order the epoch visits them. */
static void sample(int e, int i, float *x, int64_t *y) {
    int k = (i * 5 + e * 3) % SAMPLES;
    for (int j = 0; j < FEATURES; ++j) x[j] = (float)sin(0.7 * k + 0.3 * j);
    *y = (k * 7 + 1) % CLASSES;
}

static void batch(int e, int first, int count, float *x, int64_t *y) {
    for (int i = 0; i < count; ++i) sample(e, first + i, x + i * FEATURES, y + i);
}

/* One eager step on a fresh batch; the loss. */
static double eager_step(pt_module *net, pt_optimizer *opt, const float *hx, const int64_t *hy, int count) {
    pt_scope scope = pt_scope_begin();
    int64_t xs[2] = {count, FEATURES}, ys[1] = {count};
    pt_tensor *x = pt_from_data(dev, PT_F32, 2, xs, hx), *y = pt_from_data(dev, PT_I64, 1, ys, hy);
    pt_tensor *loss = pt_cross_entropy(pt_module_forward(net, x), y);
    pt_optimizer_zero_grad(opt);
    double v = NAN;
    if (pt_backward(loss) == PT_OK && pt_optimizer_step(opt) == PT_OK) v = pt_item(loss);
    pt_scope_end(scope);
    return v;
}

/* A graph of the step for one batch shape, with the input tensors it reads
 * and the loss it writes. */
typedef struct step_graph {
    int count;
    pt_tensor *x, *y, *loss;
    pt_graph *g;
} step_graph;

static step_graph *graph_for(step_graph *gs, int count, pt_module *net, pt_optimizer *opt) {
    for (int i = 0; i < 2; ++i)
        if (gs[i].g && gs[i].count == count) return &gs[i];
    step_graph *s = gs[0].g ? &gs[1] : &gs[0];
    int64_t xs[2] = {count, FEATURES}, ys[1] = {count};
    s->count = count;
    s->x = pt_zeros(dev, PT_F32, 2, xs);
    s->y = pt_zeros(dev, PT_I64, 1, ys);
    CHECK_OK(pt_graph_capture_begin(dev));
    pt_scope scope = pt_scope_begin();
    pt_tensor *loss = pt_cross_entropy(pt_module_forward(net, s->x), s->y);
    pt_optimizer_zero_grad(opt);
    CHECK_OK(pt_backward(loss));
    CHECK_OK(pt_optimizer_step(opt));
    s->loss = pt_keep(loss);
    pt_scope_end(scope);
    s->g = pt_graph_capture_end(dev);
    CHECK_NOT_NULL(s->g);
    return s;
}

/* Copies the batch into the graph's inputs and replays; the loss. */
static double graph_step(step_graph *gs, pt_module *net, pt_optimizer *opt, const float *hx, const int64_t *hy,
                         int count) {
    step_graph *s = graph_for(gs, count, net, opt);
    if (!s->g) return NAN;
    int64_t xs[2] = {count, FEATURES}, ys[1] = {count};
    pt_scope scope = pt_scope_begin();
    CHECK_OK(pt_copy_(s->x, pt_from_data(pt_cpu(), PT_F32, 2, xs, hx)));
    CHECK_OK(pt_copy_(s->y, pt_from_data(pt_cpu(), PT_I64, 1, ys, hy)));
    pt_scope_end(scope);
    CHECK_OK(pt_graph_replay(s->g));
    return pt_item(s->loss);
}

/* Trains a fresh net; losses[] gets every step's loss, params the final
 * parameters' bytes. The first step is eager in both modes (the warm-up
 * that makes the optimizer's state before a capture). */
static int train(bool adam, bool graphs, double *losses, float *params, int cap, pt_graph_stats *stats) {
    pt_manual_seed(3);
    pt_module *net = make_net();
    CHECK_OK(pt_module_to(net, dev));
    pt_optimizer *opt = make_opt(net, adam);
    step_graph gs[2] = {{0}};
    float hx[BATCH * FEATURES];
    int64_t hy[BATCH];
    int n = 0;
    for (int e = 0; e < EPOCHS; ++e) {
        for (int first = 0; first < SAMPLES; first += BATCH) {
            int count = SAMPLES - first < BATCH ? SAMPLES - first : BATCH;
            batch(e, first, count, hx, hy);
            bool eager = !graphs || n == 0;
            losses[n++] = eager ? eager_step(net, opt, hx, hy, count) : graph_step(gs, net, opt, hx, hy, count);
        }
    }
    if (stats && gs[0].g) CHECK_OK(pt_graph_info(gs[0].g, stats));
    pt_tensor *ps[8];
    int np = pt_module_parameters(net, NULL, ps, 8), at = 0;
    for (int i = 0; i < np; ++i) {
        int64_t k = pt_tensor_numel(ps[i]);
        if (at + k <= cap) CHECK_OK(pt_to_host(ps[i], params + at, (size_t)k * sizeof(float)));
        at += (int)k;

    }
    for (int i = 0; i < 2; ++i) {
        pt_graph_free(gs[i].g);
        pt_release(gs[i].x);
        pt_release(gs[i].y);
        pt_release(gs[i].loss);
    }
    pt_optimizer_free(opt);
    pt_module_free(net);
    return at;
}

static void test_training(bool adam) {
    enum { STEPS = EPOCHS * 3, CAP = 512 };
    double eager[STEPS], replayed[STEPS];
    static float pe[CAP], pg[CAP];
    pt_graph_stats st = {0};
    int ne = train(adam, false, eager, pe, CAP, NULL);
    int ng = train(adam, true, replayed, pg, CAP, &st);
    CHECK_INT(ne, ng);
    CHECK(ne <= CAP);
    for (int i = 0; i < STEPS; ++i) {
        char what[200];
        snprintf(what, sizeof what, "%s step %d: replayed loss %.9g == eager %.9g", adam ? "adam" : "sgd", i,
                 replayed[i], eager[i]);
        check_report(!isnan(eager[i]) && memcmp(&eager[i], &replayed[i], sizeof(double)) == 0, __FILE__, __LINE__,
                     what);
    }
    check_report(ne == ng && memcmp(pe, pg, (size_t)ne * sizeof(float)) == 0, __FILE__, __LINE__,
                 adam ? "adam: parameters after replays == eager bit for bit"
                      : "sgd: parameters after replays == eager bit for bit");
    /* the graph of the full batches */
    CHECK(st.ops > 10);
    /* an optimizer step's element-wise runs become fused chains where the
     * device runs them (and still equal the eager step bit for bit, above) */
    CHECK(st.kernels <= st.ops);
    if (pt_device_supports(dev, PT_OP_FUSED, PT_F32) == PT_OK) CHECK(st.kernels < st.ops);
    pt_clear_error();
    CHECK(st.intermediates > 0);
    CHECK(st.outputs > 0);
    CHECK_INT(st.random_ops, 1); /* the dropout mask */
    CHECK(st.bytes_planned > 0);
    CHECK(st.bytes_planned <= st.bytes_eager_peak);
    CHECK(st.replays >= 2);
    printf("%s step graph: %lld ops, %lld intermediates in %lld bytes (eager peak %lld), %lld outputs\n",
           adam ? "adam" : "sgd", (long long)st.ops, (long long)st.intermediates, (long long)st.bytes_planned,
           (long long)st.bytes_eager_peak, (long long)st.outputs);
}

/* ---- Random ops ---- */

static bool same_bits(pt_tensor *a, pt_tensor *b, int64_t n) {
    float *x = calloc((size_t)n, sizeof *x), *y = calloc((size_t)n, sizeof *y);
    bool same = a && b && pt_to_host(a, x, (size_t)n * sizeof *x) == PT_OK &&
                pt_to_host(b, y, (size_t)n * sizeof *y) == PT_OK && memcmp(x, y, (size_t)n * sizeof *x) == 0;
    free(x);
    free(y);
    return same;
}

static void test_random(void) {
    int64_t n1[1] = {1000}, n2[2] = {5, 37};
    pt_manual_seed(11);
    pt_tensor *e1 = pt_rand(dev, PT_F32, 1, n1), *e2 = pt_randn(dev, PT_F32, 2, n2);
    pt_tensor *e3 = pt_rand(dev, PT_F32, 1, n1), *e4 = pt_randn(dev, PT_F32, 2, n2);
    pt_tensor *e5 = pt_rand(dev, PT_F32, 1, n1);
    pt_manual_seed(11);
    CHECK_OK(pt_graph_capture_begin(dev));
    pt_tensor *a = pt_rand(dev, PT_F32, 1, n1), *b = pt_mul_scalar(pt_randn(dev, PT_F32, 2, n2), 1.0);
    pt_graph *g = pt_graph_capture_end(dev);
    REQUIRE(g);
    CHECK_OK(pt_graph_replay(g));
    CHECK(same_bits(a, e1, 1000));
    CHECK(same_bits(b, e2, 185));
    CHECK_OK(pt_graph_replay(g)); /* fresh numbers: the next eager draws */
    CHECK(same_bits(a, e3, 1000));
    CHECK(same_bits(b, e4, 185));
    pt_tensor *after = pt_rand(dev, PT_F32, 1, n1); /* eager after replays continues the sequence */
    CHECK(same_bits(after, e5, 1000));
    pt_graph_stats st;
    CHECK_OK(pt_graph_info(g, &st));
    CHECK_INT(st.random_ops, 2);
    CHECK_INT(st.replays, 2);
    pt_graph_free(g);
    pt_tensor *all[] = {e1, e2, e3, e4, e5, a, b, after};
    for (size_t i = 0; i < sizeof all / sizeof *all; ++i) pt_release(all[i]);
}

/* ---- Refusals ---- */

enum refusal { READ_ITEM, READ_TO_HOST, UPLOAD, SYNCHRONIZE, OTHER_DEVICE, OPTIMIZER_FIRST_STEP };

/* A device other than dev, or NULL. */
static pt_device *other_device(void) {
    if (dev != pt_cpu()) return pt_cpu();
    pt_device *d = pt_device_get("cpu:1");
    pt_clear_error();
    return d;
}

static void refused(enum refusal what, const char *fn) {
    int64_t n[1] = {4};
    pt_tensor *x = pt_full(dev, PT_F32, 1, n, 2.0);
    pt_device *other = other_device();
    pt_tensor *far = other ? pt_full(other, PT_F32, 1, n, 1.0) : NULL;
    pt_module *net = pt_linear_sized(4, 2);
    pt_module_to(net, dev);
    pt_optimizer *opt = pt_sgd(net, 0.1, 0.9, 0.0);
    if (what == OTHER_DEVICE && !other) {
        printf("skip: no second device for the other-device refusal\n");
        goto done;
    }
    pt_clear_error();
    CHECK_OK(pt_graph_capture_begin(dev));
    pt_tensor *y = pt_add(x, x);
    float host[4];
    switch (what) {
    case READ_ITEM: CHECK(isnan(pt_item(pt_sum(y, PT_ALL, false)))); break;
    case READ_TO_HOST: CHECK(pt_to_host(y, host, sizeof host) != PT_OK); break;
    case UPLOAD: CHECK(pt_from_data(dev, PT_F32, 1, n, host) == NULL); break;
    case SYNCHRONIZE: CHECK(pt_device_synchronize(dev) != PT_OK); break;
    case OTHER_DEVICE: CHECK(pt_add(far, far) == NULL); break;
    case OPTIMIZER_FIRST_STEP: {
        pt_tensor *out = pt_module_forward(net, pt_reshape(y, 2, (int64_t[]){1, 4}));
        CHECK_OK(pt_backward(pt_sum(out, PT_ALL, false)));
        CHECK(pt_optimizer_step(opt) != PT_OK);
        break;
    }
    }
    /* the refused call's own message: the function, why, the fix */
    CHECK_HAS(pt_last_error(), fn);
    CHECK_HAS(pt_last_error(), "pt_graph_capture_begin");
    /* later ops of the capture say it was refused */
    CHECK(pt_add(x, x) == NULL);
    CHECK_HAS(pt_last_error(), "refused earlier");
    pt_graph *g = pt_graph_capture_end(dev);
    CHECK(g == NULL);
    CHECK_HAS(pt_last_error(), "pt_graph_capture_end");
    CHECK_HAS(pt_last_error(), fn);
    pt_graph_free(g);
    /* the capture ended: the next one starts clean */
    CHECK_OK(pt_graph_capture_begin(dev));
    pt_tensor *z = pt_mul(x, x);
    g = pt_graph_capture_end(dev);
    CHECK_NOT_NULL(g);
    CHECK_OK(pt_graph_replay(g));
    double v[4] = {0};
    CHECK(check_read(z, v, 4) && v[0] == 4.0 && v[3] == 4.0);
    pt_graph_free(g);
    pt_release(z);
    pt_release(y);
done:
    pt_clear_error();
    pt_optimizer_free(opt);
    pt_module_free(net);
    pt_release(far);
    pt_release(x);
}

/* A backend that refuses the op (the null skeleton refuses every one),
 * where the null plugin is on the plugin path. */
static void refused_by_backend(void) {
    pt_device *null_dev = pt_device_get("null");
    if (!null_dev) {
        pt_clear_error();
        printf("skip: the null plugin is not on the plugin path\n");
        return;
    }
    int64_t n[1] = {4};
    CHECK_OK(pt_graph_capture_begin(null_dev));
    CHECK(pt_zeros(null_dev, PT_F32, 1, n) == NULL);
    CHECK_HAS(pt_last_error(), "pt_zeros");
    pt_graph *g = pt_graph_capture_end(null_dev);
    CHECK(g == NULL);
    CHECK_HAS(pt_last_error(), "pt_graph_capture_end");
    CHECK_HAS(pt_last_error(), "pt_zeros");
    pt_clear_error();
}

/* ---- Another thread's eager work during a capture ---- */

static atomic_int phase;

static void wait_phase(int p) {
    while (atomic_load(&phase) < p) sched_yield();
}

#define OVERLAP_ROUNDS 50

static void *eager_worker(void *arg) {
    double *out = arg;
    wait_phase(1);
    int64_t n[1] = {16};
    pt_scope scope = pt_scope_begin();
    pt_tensor *a = pt_full(dev, PT_F32, 1, n, 3.0);
    out[0] = pt_item(pt_sum(pt_add(a, a), PT_ALL, false)); /* runs and reads at once */
    pt_manual_seed(5);
    pt_tensor *r = pt_rand(dev, PT_F32, 1, n);
    out[1] = r ? pt_item(pt_sum(r, PT_ALL, false)) : NAN;
    pt_scope_end(scope);
    atomic_store(&phase, 2);
    /* Then eager work on the same device while the other thread replays:
     * allocations, frees and ops interleaved with the replays' ops. */
    wait_phase(3);
    out[2] = 0;
    for (int i = 0; i < OVERLAP_ROUNDS; ++i) {
        pt_scope s = pt_scope_begin();
        pt_tensor *b = pt_full(dev, PT_F32, 1, n, (double)i), *c = pt_full(dev, PT_F32, 1, n, 2.0);
        out[2] += pt_item(pt_sum(pt_mul(b, c), PT_ALL, false)); /* 32 i */
        pt_scope_end(s);
    }
    return NULL;
}

static void test_other_thread(void) {
    int64_t n[1] = {16};
    pt_tensor *x = pt_full(dev, PT_F32, 1, n, 1.5);
    pt_manual_seed(5);
    pt_tensor *r = pt_rand(dev, PT_F32, 1, n);
    double want_r = pt_item(pt_sum(r, PT_ALL, false));
    double got[3] = {NAN, NAN, NAN};
    pthread_t t;
    atomic_store(&phase, 0);
    if (pthread_create(&t, NULL, eager_worker, got) != 0) {
        CHECK(!"pthread_create");
        return;
    }
    CHECK_OK(pt_graph_capture_begin(dev));
    pt_tensor *y = pt_mul(x, x);
    atomic_store(&phase, 1); /* the worker's eager ops run while this capture is open */
    wait_phase(2);
    pt_tensor *z = pt_add(y, x);
    pt_graph *g = pt_graph_capture_end(dev);
    CHECK_NOT_NULL(g);
    /* replays while the worker's eager ops run */
    atomic_store(&phase, 3);
    int good = 0;
    for (int i = 0; g && i < OVERLAP_ROUNDS; ++i) {
        double v[16] = {0};
        good += pt_graph_replay(g) == PT_OK && check_read(z, v, 16) && v[0] == 3.75 && v[15] == 3.75;
    }
    pthread_join(t, NULL);
    CHECK_DBL(got[0], 96.0, 0);
    CHECK(got[1] == want_r);
    CHECK_DBL(got[2], 32.0 * OVERLAP_ROUNDS * (OVERLAP_ROUNDS - 1) / 2, 0);
    CHECK_INT(good, OVERLAP_ROUNDS);
    pt_graph_free(g);
    pt_release(z);
    pt_release(y);
    pt_release(r);
    pt_release(x);
}

/* ---- Large intermediates ----
 * Blocks over 1 MiB come from the allocator's large pool, whose freed
 * blocks merge at once (their records go): the capture must not look at a
 * released block again. Values checked after two replays. */

static void test_large_intermediates(void) {
    int64_t n[1] = {400000}; /* 1.6 MB of f32 */
    pt_tensor *x = pt_full(dev, PT_F32, 1, n, 2.0);
    CHECK_OK(pt_graph_capture_begin(dev));
    pt_scope scope = pt_scope_begin();
    pt_tensor *a = pt_add(x, x);          /* 4 */
    pt_tensor *b = pt_mul(a, a);          /* 16 */
    pt_release(a);
    pt_tensor *c = pt_add_scalar(b, 1.0); /* 17 */
    pt_release(b);
    pt_tensor *d = pt_mul(c, x);          /* 34 */
    pt_tensor *out = pt_keep(pt_sum(d, PT_ALL, false));
    pt_scope_end(scope);
    pt_graph *g = pt_graph_capture_end(dev);
    REQUIRE(g);
    pt_graph_stats st;
    CHECK_OK(pt_graph_info(g, &st));
    CHECK(st.intermediates >= 4);
    CHECK(st.bytes_planned <= st.bytes_eager_peak);
    for (int r = 0; r < 2; ++r) {
        CHECK_OK(pt_graph_replay(g));
        CHECK_DBL(pt_item(out), 34.0 * 400000, 0);
    }
    pt_graph_free(g);
    pt_release(out);
    pt_release(x);
}

/* ---- Tensors made before the capture, released while the graph lives ----
 * The graph keeps the memory of every tensor made before the capture that
 * its ops read or write (views included), so releasing those tensors hands
 * the memory to no one: the replays go on writing memory nobody else sees.
 * Tensors made after the release in the same size would get the released
 * blocks back from the cache if the graph had not kept them; they must keep
 * their values through the replays. Under ASan with
 * PORTABLE_NO_MEMORY_CACHING (graph_cpu_nocache), every release is the
 * driver's free, so a replay into freed memory is a report, and a
 * reference the graph forgets to drop is a leak. */

static bool all_equal(pt_tensor *t, int64_t n, double want) {
    double *v = calloc((size_t)n, sizeof *v);
    bool ok = v && check_read(t, v, n);
    for (int64_t i = 0; ok && i < n; ++i) ok = v[i] == want;
    free(v);
    return ok;
}

static void test_released_inputs(void) {
    enum { N = 1000 };
    int64_t n[1] = {N};
    pt_memory_usage before, after;
    CHECK_OK(pt_memory_stats(dev, &before));
    pt_tensor *x = pt_full(dev, PT_F32, 1, n, 2.0), *w = pt_full(dev, PT_F32, 1, n, 3.0);
    pt_tensor *acc = pt_zeros(dev, PT_F32, 1, n), *head = pt_narrow(x, 0, 0, N / 2);
    CHECK_OK(pt_graph_capture_begin(dev));
    pt_scope scope = pt_scope_begin();
    pt_tensor *y = pt_keep(pt_add(pt_mul(x, w), x));  /* 8: reads x and w */
    CHECK_OK(pt_axpy_(acc, 1.0, y));                    /* writes acc: += 8 per replay */
    pt_tensor *s = pt_keep(pt_sum(head, PT_ALL, false)); /* reads x through a view */
    pt_scope_end(scope);
    pt_graph *g = pt_graph_capture_end(dev);
    REQUIRE(g);
    pt_release(head);
    pt_release(x);
    pt_release(w);
    pt_release(acc);
    pt_tensor *fresh[4];
    for (int i = 0; i < 4; ++i) fresh[i] = pt_full(dev, PT_F32, 1, n, -1.0);
    for (int r = 0; r < 3; ++r) CHECK_OK(pt_graph_replay(g));
    CHECK(all_equal(y, N, 8.0));
    CHECK_DBL(pt_item(s), 2.0 * N / 2, 0);
    for (int i = 0; i < 4; ++i) check_report(all_equal(fresh[i], N, -1.0), __FILE__, __LINE__,
                                             "a tensor made after the release keeps its values");
    pt_graph_stats st;
    CHECK_OK(pt_graph_info(g, &st));
    CHECK_INT(st.replays, 3);
    pt_graph_free(g);
    pt_release(y);
    pt_release(s);
    for (int i = 0; i < 4; ++i) pt_release(fresh[i]);
    /* The graph gave back what it kept: the memory in use is what it was. */
    CHECK_OK(pt_memory_stats(dev, &after));
    CHECK_INT(after.in_use, before.in_use);
}

/* ---- Whether replays took the backend's own path ----
 * The OpenCL and CUDA plugins say at PORTABLE_LOG=info whether a graph
 * replays as one command buffer, one list of pre-bound kernels or one CUDA
 * graph, as command buffers (kernel lists) around the ops OpenCL queues one
 * at a time (products), or op by op (and why). PT_TEST_GRAPH_PATHS=pocl
 * fails the run when the device is PoCL's and no graph took the first path
 * (and the graph of products below the second); =pocl-command-buffers
 * also when those were not command buffers (PORTABLE_OPENCL_GRAPHS=
 * command-buffers, where PoCL has cl_khr_command_buffer); =cuda fails it
 * when no graph replayed as a CUDA graph or any replayed op by op by the
 * plugin's choice (every graph here can be captured); =none fails it when
 * any graph took the backend's own path (PORTABLE_OPENCL_GRAPHS=off,
 * PORTABLE_CUDA_GRAPHS=off). */

static atomic_int n_whole_graphs, n_segmented_graphs, n_op_by_op_graphs, n_command_buffer_graphs;

static void count_graph_paths(pt_log_level level, const char *message, void *user) {
    (void)user;
    if (strstr(message, "replays as one command buffer") || strstr(message, " command buffers ("))
        atomic_fetch_add(&n_command_buffer_graphs, 1);
    if (strstr(message, "replays as one command buffer") || strstr(message, "replays as one kernel list") ||
        strstr(message, "replays as one CUDA graph"))
        atomic_fetch_add(&n_whole_graphs, 1);
    else if (strstr(message, " command buffers (") || strstr(message, " kernel lists ("))
        atomic_fetch_add(&n_segmented_graphs, 1);
    else if (strstr(message, "replays op by op")) atomic_fetch_add(&n_op_by_op_graphs, 1);
    else if (level >= PT_LOG_WARN) fprintf(stderr, "portable: %s\n", message);
}

/* Whether PT_TEST_GRAPH_PATHS asks for PoCL's own paths and the device is
 * PoCL's (with cl_khr_command_buffer where command buffers are asked for). */
static bool pocl_paths_expected(void) {
    const char *want = getenv("PT_TEST_GRAPH_PATHS");
    if (!want || strncmp(want, "pocl", 4) != 0) return false;
    pt_device_props p;
    if (pt_device_info(dev, &p) != PT_OK || !strstr(p.platform, "Portable Computing Language")) return false;
    return strcmp(want, "pocl-command-buffers") != 0 || strstr(p.extensions, "cl_khr_command_buffer");
}

static void check_graph_paths(const char *want) {
    int own = atomic_load(&n_whole_graphs), seg = atomic_load(&n_segmented_graphs),
        per_op = atomic_load(&n_op_by_op_graphs), cb = atomic_load(&n_command_buffer_graphs);
    printf("graphs replayed as one command buffer, kernel list or CUDA graph: %d, as command buffers or kernel "
           "lists around ops queued one at a time: %d, op by op by the plugin's choice: %d (as command buffers: "
           "%d)\n",
           own, seg, per_op, cb);
    if (!want) return;
    if (!strcmp(want, "none")) {
        check_report(own + seg == 0, __FILE__, __LINE__, "no graph replays by the plugin's own path");
        return;
    }
    if (!strcmp(want, "cuda")) {
        check_report(own > 0, __FILE__, __LINE__,
                     "graphs replay as CUDA graphs (run at PORTABLE_LOG=info so the plugin says which)");
        check_report(per_op == 0, __FILE__, __LINE__, "no graph replays op by op on cuda");
        return;
    }
    if (!pocl_paths_expected()) {
        printf("no own graph path expected on %s\n", pt_device_name(dev));
        return;
    }
    check_report(own > 0, __FILE__, __LINE__,
                 "PoCL: graphs replay by the plugin's own path (run at PORTABLE_LOG=info so the plugin says which)");
    if (!strcmp(want, "pocl-command-buffers"))
        check_report(cb == own + seg, __FILE__, __LINE__,
                     "PORTABLE_OPENCL_GRAPHS=command-buffers: every graph the plugin replays is command buffers");
}

/* ---- Replays equal eager runs, bit for bit, beyond training ----
 * Ops of every family a backend may record into one launch sequence (an
 * OpenCL command buffer): element-wise kernels in their contiguous and
 * strided forms, broadcasts, scalars, casts, where, reductions (one and two
 * passes, alone and after the chains they may be fused with), softmax, max
 * and argmax, gather, one_hot, a max pool; the
 * results of two replays, with the input changed between them, against the
 * same ops run eagerly. */

enum { MIX_OUTS = 17 };

static void mix_ops(pt_tensor *x, pt_tensor *b, pt_tensor *big, pt_tensor **out) {
    pt_scope scope = pt_scope_begin();
    pt_tensor *y1 = pt_add(x, b);                                                  /* broadcast */
    pt_tensor *y2 = pt_mul(pt_transpose(x, 0, 1), pt_transpose(y1, 0, 1));         /* strided */
    out[0] = pt_keep(pt_mul_scalar(pt_sigmoid(y2), 0.37));
    out[1] = pt_keep(pt_sum(y2, 1, false));
    out[2] = pt_keep(pt_mean(pt_mul(big, big), PT_ALL, false)); /* two passes */
    out[3] = pt_keep(pt_softmax(y1, 1));
    out[4] = pt_keep(pt_log_softmax(y1, 0));
    out[5] = pt_keep(pt_max(y1, 0, false));
    out[6] = pt_keep(pt_argmax(y1, 1, false));
    out[7] = pt_keep(pt_where(pt_gt(x, b), x, y1));
    out[8] = pt_keep(pt_cast(pt_mul_scalar(y1, 10.0), PT_I32));
    out[9] = pt_keep(pt_clamp(pt_add_scalar(y2, -0.25), -0.5, 0.5));
    out[10] = pt_keep(pt_sum(big, 0, false));
    pt_tensor *idx = pt_argmax(y2, 1, true); /* i64 [C, 1] */
    out[11] = pt_keep(pt_gather(y2, 1, idx));
    out[12] = pt_keep(pt_one_hot(idx, 40, PT_F32));
    const pt_window2d w = {{3, 2}, {2, 1}, {1, 0}, {1, 1}};
    int64_t img[4] = {1, 1, 37, 53};
    out[13] = pt_keep(pt_max_pool2d_window(pt_reshape(y1, 4, img), &w));
    /* chains whose last value only a reduction reads: backends that fuse
     * the reduction (cpu, opencl) keep the eager reduce kernel's order */
    out[14] = pt_keep(pt_sum(pt_add_scalar(pt_mul(pt_exp(pt_mul_scalar(x, 0.5)), b), -1.0), 0, false));
    out[15] = pt_keep(pt_mean(pt_add_scalar(pt_mul(big, big), -1.0), PT_ALL, false)); /* two passes */
    out[16] = pt_keep(pt_max(pt_tanh(pt_add(x, b)), 1, false));
    pt_scope_end(scope);
}

/* The bytes of t in a new host buffer (*bytes of them), or NULL. */
static unsigned char *host_bytes(pt_tensor *t, size_t *bytes) {
    *bytes = (size_t)pt_tensor_numel(t) * pt_dtype_size(pt_tensor_dtype(t));
    unsigned char *h = malloc(*bytes + 1);
    if (h && pt_to_host(t, h, *bytes) != PT_OK) {
        free(h);
        h = NULL;
    }
    return h;
}

static bool same_bytes(pt_tensor *a, pt_tensor *b) {
    size_t na = 0, nb = 0;
    unsigned char *ha = host_bytes(a, &na), *hb = host_bytes(b, &nb);
    bool same = ha && hb && na == nb && memcmp(ha, hb, na) == 0;
    free(ha);
    free(hb);
    return same;
}

/* x's values for round r. */
static void mix_input(float *hx, int n, int r) {
    for (int i = 0; i < n; ++i) hx[i] = (float)sin(0.37 * i + r) * (1.0f + 0.01f * (float)(i % 7));
}

static void test_replay_matches_eager(void) {
    enum { R = 37, C = 53, BIG = 100003 };
    int64_t xs[2] = {R, C};
    static float hx[R * C];
    pt_scope scope = pt_scope_begin();
    pt_tensor *x = pt_zeros(dev, PT_F32, 2, xs);
    pt_tensor *b = pt_mul_scalar(pt_arange(dev, PT_F32, 0, C, 1), 0.01);
    pt_tensor *big = pt_mul_scalar(pt_arange(dev, PT_F32, 0, BIG, 1), 1e-3);
    pt_tensor *replayed[MIX_OUTS];
    mix_input(hx, R * C, 0);
    CHECK_OK(pt_copy_(x, pt_from_data(pt_cpu(), PT_F32, 2, xs, hx)));
    CHECK_OK(pt_graph_capture_begin(dev));
    mix_ops(x, b, big, replayed);
    pt_graph *g = pt_graph_capture_end(dev);
    REQUIRE(g);
    for (int r = 0; r < 2; ++r) {
        mix_input(hx, R * C, r);
        CHECK_OK(pt_copy_(x, pt_from_data(pt_cpu(), PT_F32, 2, xs, hx)));
        CHECK_OK(pt_graph_replay(g));
        pt_tensor *eager[MIX_OUTS];
        mix_ops(x, b, big, eager);
        for (int i = 0; i < MIX_OUTS; ++i) {
            char what[120];
            snprintf(what, sizeof what, "round %d, output %d: replayed == eager bit for bit", r, i);
            check_report(same_bytes(replayed[i], eager[i]), __FILE__, __LINE__, what);
            pt_release(eager[i]);
        }
    }
    pt_graph_free(g);
    for (int i = 0; i < MIX_OUTS; ++i) pt_release(replayed[i]);
    pt_scope_end(scope);
}

/* ---- A chain longer than a backend fuses at once ----
 * 80 element-wise ops in a row, more steps than the OpenCL plugin puts in
 * one kernel (32): the chain is offered again in parts the backend takes,
 * so it still runs as a few fused kernels, and the replay equals the eager
 * ops bit for bit (each step rounds once, in the same order). */
enum { LONG_CHAIN_OPS = 80 };

/* x + b, times 0.999, LONG_CHAIN_OPS / 2 times: the chain's value, kept. */
static pt_tensor *long_chain(pt_tensor *x, pt_tensor *b) {
    pt_scope scope = pt_scope_begin();
    pt_tensor *y = x;
    for (int i = 0; i < LONG_CHAIN_OPS / 2; ++i) y = pt_mul_scalar(pt_add(y, b), 0.999);
    y = pt_keep(y);
    pt_scope_end(scope);
    return y;
}

static void test_long_chain(void) {
    enum { N = 1000 };
    pt_scope scope = pt_scope_begin();
    pt_tensor *x = pt_mul_scalar(pt_arange(dev, PT_F32, 0, N, 1), 1e-3);
    pt_tensor *b = pt_mul_scalar(pt_arange(dev, PT_F32, 0, N, 1), -2e-4);
    REQUIRE(x);
    REQUIRE(b);
    CHECK_OK(pt_graph_capture_begin(dev));
    pt_tensor *y = long_chain(x, b);
    pt_graph *g = pt_graph_capture_end(dev);
    REQUIRE(g);
    pt_graph_stats st = {0};
    CHECK_OK(pt_graph_info(g, &st));
    CHECK_OK(pt_graph_replay(g));
    pt_tensor *e = long_chain(x, b);
    check_report(same_bytes(y, e), __FILE__, __LINE__, "a chain of 80 ops: replayed == eager bit for bit");
    if (pt_device_supports(dev, PT_OP_FUSED, PT_F32) == PT_OK) {
        char what[160];
        snprintf(what, sizeof what, "a chain of %lld ops runs as %lld kernels (at most 8)", (long long)st.ops,
                 (long long)st.kernels);
        check_report(st.kernels <= 8, __FILE__, __LINE__, what);
    }
    pt_clear_error();
    pt_graph_free(g);
    pt_release(y);
    pt_release(e);
    pt_scope_end(scope);
}

/* ---- A graph with products ----
 * CLBlast queues its GEMM kernels itself, so the OpenCL plugin cannot record
 * a product into a command buffer: it records the runs of ops between the
 * products and queues the products between those buffers at each replay
 * (on PoCL, PT_TEST_GRAPH_PATHS=pocl checks that this graph took that
 * path). A forward and backward of a small layer with a bias and relu, a
 * product with a transposed operand, a softmax and reductions after it: two
 * replays, the input changed between them, equal the eager ops bit for bit. */

enum { PROD_OUTS = 5 };

static void product_ops(pt_tensor *x, pt_tensor *w, pt_tensor *b, pt_tensor *w2, pt_tensor **out) {
    pt_scope scope = pt_scope_begin();
    pt_tensor *h = pt_relu(pt_add(pt_matmul(x, w), b));         /* product, then recorded ops */
    pt_tensor *z = pt_matmul(h, pt_transpose(w2, 0, 1));         /* column-major operand */
    out[0] = pt_keep(pt_softmax(z, 1));
    out[1] = pt_keep(pt_sum(h, 0, false));
    out[2] = pt_keep(pt_mul_scalar(pt_sigmoid(z), 0.5));
    out[3] = pt_keep(pt_matmul(pt_transpose(x, 0, 1), h));       /* a weight gradient's shape */
    out[4] = pt_keep(pt_mean(pt_mul(z, z), PT_ALL, false));
    pt_scope_end(scope);
}

static void test_products_replay(void) {
    enum { R = 24, K = 37, N = 19, M = 11 };
    int64_t xs[2] = {R, K}, ws[2] = {K, N}, w2s[2] = {M, N};
    static float hx[R * K];
    pt_scope scope = pt_scope_begin();
    pt_tensor *x = pt_zeros(dev, PT_F32, 2, xs);
    pt_tensor *w = pt_reshape(pt_mul_scalar(pt_sin(pt_arange(dev, PT_F32, 0, K * N, 1)), 0.2), 2, ws);
    pt_tensor *b = pt_mul_scalar(pt_arange(dev, PT_F32, 0, N, 1), -0.01);
    pt_tensor *w2 = pt_reshape(pt_mul_scalar(pt_cos(pt_arange(dev, PT_F32, 0, M * N, 1)), 0.3), 2, w2s);
    pt_tensor *replayed[PROD_OUTS];
    const int segmented_before = atomic_load(&n_segmented_graphs), whole_before = atomic_load(&n_whole_graphs);
    CHECK_OK(pt_graph_capture_begin(dev));
    product_ops(x, w, b, w2, replayed);
    pt_graph *g = pt_graph_capture_end(dev);
    REQUIRE(g);
    for (int r = 0; r < 2; ++r) {
        mix_input(hx, R * K, r + 5);
        CHECK_OK(pt_copy_(x, pt_from_data(pt_cpu(), PT_F32, 2, xs, hx)));
        CHECK_OK(pt_graph_replay(g));
        pt_tensor *eager[PROD_OUTS];
        product_ops(x, w, b, w2, eager);
        for (int i = 0; i < PROD_OUTS; ++i) {
            char what[120];
            snprintf(what, sizeof what, "products, round %d, output %d: replayed == eager bit for bit", r, i);
            check_report(same_bytes(replayed[i], eager[i]), __FILE__, __LINE__, what);
            pt_release(eager[i]);
        }
    }
    /* PoCL (a CPU device) runs these f32 products on the plugin's own
     * kernels, which record like any other; on CLBlast they are queued
     * between the recorded runs. */
    const char *gemm = getenv("PORTABLE_OPENCL_GEMM");
    if (pocl_paths_expected() && gemm && !strcmp(gemm, "clblast"))
        check_report(atomic_load(&n_segmented_graphs) == segmented_before + 1, __FILE__, __LINE__,
                     "PoCL, products on CLBlast: the graph replays as command buffers or kernel lists around them");
    else if (pocl_paths_expected())
        check_report(atomic_load(&n_whole_graphs) == whole_before + 1, __FILE__, __LINE__,
                     "PoCL, products on the plugin's kernels: the graph replays as one command buffer or kernel list");
    pt_graph_free(g);
    for (int i = 0; i < PROD_OUTS; ++i) pt_release(replayed[i]);
    pt_scope_end(scope);
}

/* A step without a product (layer norm, mean squared error): SGD's graph
 * holds only ops a command buffer records; Adam's step-dependent scalars
 * change at every replay, so the OpenCL plugin replays its command-buffer
 * graph op by op. Either way, the losses and parameters equal eager
 * training's bit for bit. */
static void test_norm_training(bool adam) {
    enum { N = 6, STEPS = 5 };
    int64_t shape[1] = {FEATURES}, xs[2] = {N, FEATURES};
    static float hx[N * FEATURES], ht[N * FEATURES];
    for (int i = 0; i < N * FEATURES; ++i) {
        hx[i] = (float)sin(0.3 * i);
        ht[i] = (float)cos(0.2 * i);
    }
    double losses[2][STEPS];
    float params[2][2 * FEATURES];
    for (int graphs = 0; graphs < 2; ++graphs) {
        pt_scope scope = pt_scope_begin();
        pt_module *net = pt_layer_norm(1, shape, 1e-5);
        pt_tensor *x = pt_from_data(dev, PT_F32, 2, xs, hx), *t = pt_from_data(dev, PT_F32, 2, xs, ht);
        CHECK_OK(pt_module_to(net, dev));
        pt_optimizer *opt = make_opt(net, adam);
        pt_graph *g = NULL;
        pt_tensor *kept = NULL;
        for (int step = 0; step < STEPS; ++step) {
            if (graphs && step > 0) { /* step 0: the eager warm-up that makes the state */
                if (!g) {
                    CHECK_OK(pt_graph_capture_begin(dev));
                    pt_scope inner = pt_scope_begin();
                    pt_tensor *loss = pt_mse_loss(pt_module_forward(net, x), t);
                    pt_optimizer_zero_grad(opt);
                    CHECK_OK(pt_backward(loss));
                    CHECK_OK(pt_optimizer_step(opt));
                    kept = pt_keep(loss);
                    pt_scope_end(inner);
                    g = pt_graph_capture_end(dev);
                    REQUIRE(g);
                }
                CHECK_OK(pt_graph_replay(g));
                losses[graphs][step] = pt_item(kept);
                continue;
            }
            pt_scope inner = pt_scope_begin();
            pt_tensor *loss = pt_mse_loss(pt_module_forward(net, x), t);
            pt_optimizer_zero_grad(opt);
            CHECK_OK(pt_backward(loss));
            CHECK_OK(pt_optimizer_step(opt));
            losses[graphs][step] = pt_item(loss);
            pt_scope_end(inner);
        }
        pt_tensor *ps[2] = {NULL, NULL};
        CHECK_INT(pt_module_parameters(net, NULL, ps, 2), 2);
        for (int i = 0; i < 2 && ps[1]; ++i) CHECK_OK(pt_to_host(ps[i], params[graphs] + i * FEATURES, sizeof(float) * FEATURES));
        pt_graph_free(g);
        pt_release(kept);
        pt_optimizer_free(opt);
        pt_module_free(net);
        pt_scope_end(scope);
    }
    for (int step = 0; step < STEPS; ++step) {
        char what[160];
        snprintf(what, sizeof what, "layer norm, %s, step %d: replayed loss %.9g == eager %.9g", adam ? "adam" : "sgd",
                 step, losses[1][step], losses[0][step]);
        check_report(memcmp(&losses[0][step], &losses[1][step], sizeof(double)) == 0, __FILE__, __LINE__, what);
    }
    check_report(memcmp(params[0], params[1], sizeof params[0]) == 0, __FILE__, __LINE__,
                 adam ? "layer norm, adam: parameters after replays == eager bit for bit"
                      : "layer norm, sgd: parameters after replays == eager bit for bit");
}

/* ---- Arguments ---- */

static void test_arguments(void) {
    pt_graph_stats st;
    CHECK(pt_graph_capture_begin(NULL) == PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "pt_graph_capture_begin");
    CHECK(pt_graph_capture_end(dev) == NULL); /* not capturing */
    CHECK_LAST(PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "pt_graph_capture_begin");
    CHECK(pt_graph_replay(NULL) == PT_ERR_INVALID_ARGUMENT);
    CHECK(pt_graph_info(NULL, &st) == PT_ERR_INVALID_ARGUMENT);
    pt_graph_free(NULL);
    /* nested, wrong device, empty */
    int64_t n[1] = {3};
    pt_tensor *x = pt_full(dev, PT_F32, 1, n, 1.0);
    CHECK_OK(pt_graph_capture_begin(dev));
    CHECK(pt_graph_capture_begin(dev) == PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "already captures");
    CHECK(pt_graph_capture_end(NULL) == NULL);
    CHECK_LAST(PT_ERR_INVALID_ARGUMENT);
    pt_device *other = other_device();
    if (other) {
        CHECK(pt_graph_capture_end(other) == NULL);
        CHECK_HAS(pt_last_error(), "the capture goes on");
    }
    pt_tensor *y = pt_add(x, x); /* still capturing */
    pt_graph *g = pt_graph_capture_end(dev);
    REQUIRE(g);
    CHECK(pt_graph_info(g, NULL) == PT_ERR_INVALID_ARGUMENT);
    CHECK_OK(pt_graph_capture_begin(dev));
    CHECK(pt_graph_replay(g) == PT_ERR_INVALID_ARGUMENT); /* no replay inside a capture */
    CHECK(pt_graph_capture_end(dev) == NULL);             /* that refusal invalidated it */
    CHECK_OK(pt_graph_capture_begin(dev));
    CHECK(pt_graph_capture_end(dev) == NULL); /* nothing recorded */
    CHECK_HAS(pt_last_error(), "nothing to replay");
    /* the graph's output outlives its tensor handle: replay after release */
    pt_release(y);
    CHECK_OK(pt_graph_replay(g));
    CHECK_OK(pt_device_synchronize(dev));
    pt_graph_free(g);
    pt_release(x);
    pt_clear_error();
}

int main(int argc, char **argv) {
    dev = pt_default_device();
    if (!dev) {
        printf("skip: %s\n", pt_last_error());
        return 77;
    }
    printf("graphs on %s\n", pt_device_name(dev));
    if (argc > 1 && !strcmp(argv[1], "--threads")) { /* the ThreadSanitizer run's case */
        pt_scope scope = pt_scope_begin(); /* as below: what the checks leave over */
        test_other_thread();
        pt_scope_end(scope);
        return check_summary();
    }
    const char *want_paths = getenv("PT_TEST_GRAPH_PATHS");
    if (want_paths) pt_set_log_handler(count_graph_paths, NULL);
    test_arguments();
    /* scopes release what the checks leave over */
    pt_scope scope = pt_scope_begin();
    test_replay_matches_eager();
    test_long_chain();
    test_products_replay();
    test_norm_training(false);
    test_norm_training(true);
    test_random();
    test_large_intermediates();
    test_released_inputs();
    test_training(false);
    test_training(true);
    refused(READ_ITEM, "pt_item");
    refused(READ_TO_HOST, "pt_to_host");
    refused(UPLOAD, "pt_from_data");
    refused(SYNCHRONIZE, "pt_device_synchronize");
    refused(OTHER_DEVICE, "pt_add");
    refused(OPTIMIZER_FIRST_STEP, "pt_optimizer_step");
    refused_by_backend();
    test_other_thread();
    pt_scope_end(scope);
    check_graph_paths(want_paths);
    return check_summary();
}
