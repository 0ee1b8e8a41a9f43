/* Independent chains of one graph: where a plugin runs consecutive fused
 * chains on disjoint memory as one kernel (the OpenCL plugin's group
 * kernels, backends/opencl/exec_fused_group.c), every replay must equal
 * the eager run bit for bit, and chains that share memory must stay
 * apart. On every backend the values are checked over three rounds of new
 * inputs; with PT_TEST_GROUPS=opencl the plugin's log must also say which
 * graphs ran groups:
 * - an optimizer step over parameters of four sizes (one gradient read
 *   through a transposed view): grouped;
 * - two chains writing disjoint parts of one buffer: grouped;
 * - a chain reading what the chain before it wrote: not grouped;
 * - a chain writing what the chain before it read: not grouped. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "portable/portable.h"

#define MAX_T 12

/* A case's tensors: state (read and written by the step, kept), inputs
 * (copied in before each round) and outputs the step makes. */
typedef struct tensors {
    pt_tensor *state[MAX_T];
    pt_tensor *in[MAX_T];
    pt_tensor *out[MAX_T];
    int n_out;
} tensors;

typedef bool (*step_fn)(tensors *t);

typedef struct group_case {
    const char *name;
    int n_state, n_in;
    int64_t state_n[MAX_T], in_n[MAX_T]; /* element counts, 1-d */
    step_fn step;
    bool grouped; /* the OpenCL plugin must group some of its chains */
} group_case;

/* m = 0.9 m + g; p -= 0.1 m: one parameter's SGD step with momentum, as
 * the optimizer records it (mul_scalar add copy axpy) */
static bool momentum(pt_tensor *p, pt_tensor *m, pt_tensor *g) {
    pt_tensor *v = pt_add(pt_mul_scalar(m, 0.9), g);
    pt_status s = v ? pt_copy_(m, v) : pt_last_status();
    pt_release(v);
    return s == PT_OK && pt_axpy_(p, -0.1, m) == PT_OK;
}

/* parameters of 256, 2560, 10 and 40 elements; the last one's gradient is
 * the transpose of an [8, 5] input, read through its strides */
static bool optimizer(tensors *t) {
    bool ok = true;
    for (int k = 0; k < 3 && ok; ++k) ok = momentum(t->state[2 * k], t->state[2 * k + 1], t->in[k]);
    const int64_t g_shape[2] = {8, 5}, p_shape[2] = {5, 8};
    pt_tensor *g = pt_transpose(pt_reshape(t->in[3], 2, g_shape), 0, 1);
    pt_tensor *p = pt_reshape(t->state[6], 2, p_shape), *m = pt_reshape(t->state[7], 2, p_shape);
    ok = ok && g && p && m && momentum(p, m, g);
    pt_release(g);
    pt_release(p);
    pt_release(m);
    return ok;
}

/* v[0:16] = 2 v[0:16] + x[0:16] and v[16:40] = 3 v[16:40] - x[16:40]:
 * two chains (16 and 24 elements) writing apart in one buffer */
static bool disjoint_parts(tensors *t) {
    static const double scale[2] = {2, 3}, sign[2] = {1, -1};
    static const int64_t at[2] = {0, 16}, len[2] = {16, 24};
    bool ok = true;
    for (int k = 0; k < 2 && ok; ++k) {
        pt_tensor *v = pt_narrow(t->state[0], 0, at[k], len[k]), *x = pt_narrow(t->in[0], 0, at[k], len[k]);
        pt_tensor *r = pt_add(pt_mul_scalar(v, scale[k]), pt_mul_scalar(x, sign[k]));
        ok = r && pt_copy_(v, r) == PT_OK;
        pt_release(r);
        pt_release(v);
        pt_release(x);
    }
    return ok;
}

/* a = 0.5 a + x (10 elements), then y = w + a broadcast over 4 rows: the
 * second chain reads what the first wrote */
static bool reads_written(tensors *t) {
    pt_tensor *a = pt_add(pt_mul_scalar(t->state[0], 0.5), t->in[0]);
    if (!a || pt_copy_(t->state[0], a) != PT_OK) return false;
    pt_release(a);
    const int64_t shape[2] = {4, 10};
    pt_tensor *w = pt_reshape(t->in[1], 2, shape);
    t->out[0] = pt_exp(pt_add(w, t->state[0]));
    pt_release(w);
    t->n_out = 1;
    return t->out[0] != NULL;
}

/* y = 2 v[0:16] + 1 (an output), then v = 3 v + x in place (32
 * elements): the second chain writes what the first read */
static bool writes_read(tensors *t) {
    pt_tensor *head = pt_narrow(t->state[0], 0, 0, 16);
    t->out[0] = pt_add_scalar(pt_mul_scalar(head, 2), 1);
    pt_release(head);
    t->n_out = 1;
    pt_tensor *v = pt_add(pt_mul_scalar(t->state[0], 3), t->in[0]);
    bool ok = t->out[0] && v && pt_copy_(t->state[0], v) == PT_OK;
    pt_release(v);
    return ok;
}

static const group_case cases[] = {
    {"an optimizer step over four parameters", 8, 4, {256, 256, 2560, 2560, 10, 10, 40, 40}, {256, 2560, 10, 40},
     optimizer, true},
    {"two chains writing apart in one buffer", 1, 1, {40}, {40}, disjoint_parts, true},
    {"a chain reading what the one before wrote", 1, 2, {10}, {10, 40}, reads_written, false},
    {"a chain writing what the one before read", 1, 1, {32}, {32}, writes_read, false},
};

/* The plugin's report of a graph's groups (its info log at the first replay). */
static atomic_int n_group_reports, n_graph_reports;

static void on_log(pt_log_level level, const char *message, void *user) {
    (void)user;
    if (strstr(message, "group kernel")) atomic_fetch_add(&n_group_reports, 1);
    if (strstr(message, "a graph of ")) atomic_fetch_add(&n_graph_reports, 1);
    else if (level >= PT_LOG_WARN) fprintf(stderr, "portable: %s\n", message);
}

/* Deterministic values for tensor k of a case in round r. */
static void fill(float *v, int64_t n, int k, int r) {
    for (int64_t i = 0; i < n; ++i) v[i] = (float)((i * 37 + k * 11 + r * 101) % 97) / 23.0f - 2.0f;
}

static pt_tensor *made(pt_device *d, int64_t n, int k, int r) {
    float *v = malloc((size_t)n * sizeof *v);
    if (!v) return NULL;
    fill(v, n, k, r);
    pt_tensor *t = pt_from_data(d, PT_F32, 1, &n, v);
    free(v);
    return t;
}

static bool set(pt_tensor *x, int64_t n, int k, int r) {
    pt_tensor *h = made(pt_cpu(), n, k, r);
    bool ok = h && pt_copy_(x, h) == PT_OK;
    pt_release(h);
    return ok;
}

/* Whether a and b hold the same bits (n floats each). */
static bool same(const char *what, int k, pt_tensor *a, pt_tensor *b, int64_t n) {
    float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    bool ok = x && y && pt_to_host(a, x, (size_t)n * sizeof *x) == PT_OK &&
              pt_to_host(b, y, (size_t)n * sizeof *y) == PT_OK;
    for (int64_t i = 0; ok && i < n; ++i)
        if (memcmp(&x[i], &y[i], sizeof x[i]) != 0) {
            printf("  %s %d, element %lld: replayed %.9g, eagerly %.9g\n", what, k, (long long)i, x[i], y[i]);
            ok = false;
        }
    free(x);
    free(y);
    return ok;
}

static void release_tensors(tensors *t) {
    for (int k = 0; k < MAX_T; ++k) {
        pt_release(t->state[k]);
        pt_release(t->in[k]);
        pt_release(t->out[k]);
    }
    memset(t, 0, sizeof *t);
}

static void run_case(pt_device *d, const group_case *c, bool check_groups) {
    tensors e = {0}, g = {0};
    for (int k = 0; k < c->n_state; ++k) {
        e.state[k] = made(d, c->state_n[k], k, -1);
        g.state[k] = made(d, c->state_n[k], k, -1);
    }
    for (int k = 0; k < c->n_in; ++k) {
        e.in[k] = pt_zeros(d, PT_F32, 1, &c->in_n[k]);
        g.in[k] = pt_zeros(d, PT_F32, 1, &c->in_n[k]);
    }
    atomic_store(&n_group_reports, 0);
    atomic_store(&n_graph_reports, 0);
    pt_scope scope = pt_scope_begin();
    CHECK_OK(pt_graph_capture_begin(d));
    const bool recorded = c->step(&g);
    for (int k = 0; k < g.n_out; ++k) g.out[k] = pt_keep(g.out[k]);
    pt_scope_end(scope);
    pt_graph *graph = pt_graph_capture_end(d);
    CHECK(recorded);
    CHECK_NOT_NULL(graph);
    if (!graph || !recorded) {
        printf("%s: %s\n", c->name, pt_last_error());
        pt_graph_free(graph);
        release_tensors(&e);
        release_tensors(&g);
        return;
    }
    bool all_same = true;
    for (int r = 0; r < 3; ++r) {
        for (int k = 0; k < c->n_in; ++k) {
            CHECK(set(e.in[k], c->in_n[k], 100 + k, r));
            CHECK(set(g.in[k], c->in_n[k], 100 + k, r));
        }
        CHECK_OK(pt_graph_replay(graph));
        scope = pt_scope_begin();
        for (int k = 0; k < MAX_T; ++k) {
            pt_release(e.out[k]);
            e.out[k] = NULL;
        }
        CHECK(c->step(&e));
        for (int k = 0; k < e.n_out; ++k) e.out[k] = pt_keep(e.out[k]);
        pt_scope_end(scope);
        for (int k = 0; k < c->n_state; ++k) all_same = same("state", k, g.state[k], e.state[k], c->state_n[k]) && all_same;
        for (int k = 0; k < g.n_out; ++k)
            all_same = same("output", k, g.out[k], e.out[k], pt_tensor_numel(g.out[k])) && all_same;
    }
    CHECK(all_same);
    pt_graph_stats st;
    CHECK_OK(pt_graph_info(graph, &st));
    const int groups = atomic_load(&n_group_reports);
    printf("%s: %lld ops, %lld kernels after fusion; %s; replays equal the eager runs: %s\n", c->name,
           (long long)st.ops, (long long)st.kernels,
           atomic_load(&n_graph_reports) == 0 ? "the plugin did not say how it replays"
           : groups                           ? "the plugin ran some chains as group kernels"
                                              : "no group kernel",
           all_same ? "yes" : "no");
    if (check_groups) CHECK_INT(groups > 0, c->grouped);
    pt_graph_free(graph);
    release_tensors(&e);
    release_tensors(&g);
}

int main(void) {
    pt_set_log_handler(on_log, NULL);
    pt_device *d = pt_default_device();
    if (!d) {
        printf("skip: %s\n", pt_last_error());
        return 77;
    }
    /* the groups are checked where the device is PoCL's or Intel's CPU runtime or a GPU: any OpenCL device */
    const char *want = getenv("PT_TEST_GROUPS");
    const bool check_groups = want && !strcmp(want, "opencl") && !strncmp(pt_device_name(d), "opencl", 6);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) run_case(d, &cases[k], check_groups);
    return check_summary();
}
