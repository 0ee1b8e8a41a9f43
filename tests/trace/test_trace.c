/* The trace (include/portable/trace.h) of one MLP training step on the
 * default device (PORTABLE_BACKEND picks it: ctest runs this on cpu, on
 * OpenCL and on the CUDA simulator), read back with cJSON:
 *   - every op the step called is there, by public function and op name;
 *   - every op and copy that was enqueued has its device span, and the
 *     device span lies inside [its enqueue, the next synchronize's end];
 *   - host spans nest (each E closes the innermost B of its row) and every
 *     row's timestamps never go back;
 * spans of the caller's own (pt_trace_span) on their named rows; and the
 * edges: a bad path is an error at pt_trace_begin, a size-capped
 * trace is still valid JSON, and a trace the program never ended
 * (PORTABLE_TRACE) is closed valid at exit. */
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../tools/trace_json.h"
#include "../unit/check.h"

/* ---- Reading a trace ---- */

#define read_trace trace_json_load
#define str_of trace_json_str
#define num_of trace_json_num
#define args_of trace_json_args

#define MAX_ROWS 64
#define MAX_DEPTH 32
#define MAX_FLOWS 4096
/* Chrome timestamps are printed in microseconds with three decimals. */
#define TS_EPS 0.0015

typedef struct row {
    int pid, tid;
    double last_ts;
    int depth;
    const cJSON *open[MAX_DEPTH];
} row;

typedef struct enqueue {
    double ts;       /* the B of the host span that enqueued it */
    int pid;
    bool seen_device;
} enqueue;

/* ---- The step ---- */

static pt_tensor *param(pt_device *d, int64_t rows, int64_t cols) {
    int64_t shape[2] = {rows, cols};
    pt_tensor *w = pt_mul_scalar(pt_randn(d, PT_F32, cols ? 2 : 1, cols ? shape : &rows), 0.3);
    pt_set_requires_grad(w, true);
    return w;
}

/* Counts of the public calls the step makes, compared with the trace. */
enum { N_MATMUL = 2, N_ADD = 2, N_RELU = 1, N_AXPY = 4 };

static double train_step(pt_device *d) {
    pt_manual_seed(7);
    pt_scope sc = pt_scope_begin();
    pt_tensor *w1 = param(d, 4, 16), *b1 = param(d, 16, 0), *w2 = param(d, 16, 3),
              *b2 = param(d, 3, 0);
    int64_t xs[2] = {8, 4}, ts[2] = {8, 3};
    pt_tensor *x = pt_rand(d, PT_F32, 2, xs), *target = pt_rand(d, PT_F32, 2, ts);
    pt_tensor *h = pt_relu(pt_add(pt_matmul(x, w1), b1));
    pt_tensor *y = pt_add(pt_matmul(h, w2), b2);
    pt_tensor *loss = pt_mse_loss(y, target);
    CHECK_OK(pt_backward(loss));
    pt_tensor *params[4] = {w1, b1, w2, b2};
    pt_no_grad_begin();
    for (int i = 0; i < 4; i++) CHECK_OK(pt_axpy_(params[i], -0.1, pt_grad(params[i])));
    pt_no_grad_end();
    double l = pt_item(loss);
    pt_scope_end(sc);
    return l;
}

/* Spans named `name` opened by public function fn: those the caller made
 * (top level on their row) and those inside a "backward" span. */
static void count_ops(const cJSON *events, const char *fn, const char *name, int *top,
                      int *in_backward) {
    *top = *in_backward = 0;
    int depth[MAX_ROWS] = {0}, backward_at[MAX_ROWS], keys[MAX_ROWS], nkeys = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, events) {
        const char *ph = str_of(e, "ph");
        if (strcmp(ph, "B") && strcmp(ph, "E")) continue;
        const int key = (int)num_of(e, "pid") * 1000 + (int)num_of(e, "tid");
        int k = 0;
        while (k < nkeys && keys[k] != key) k++;
        if (k == nkeys) {
            if (nkeys == MAX_ROWS) continue;
            keys[nkeys++] = key;
            backward_at[k] = -1;
        }
        if (!strcmp(ph, "E")) {
            if (depth[k] > 0 && --depth[k] == backward_at[k]) backward_at[k] = -1;
            continue;
        }
        if (!strcmp(str_of(e, "name"), "backward") && backward_at[k] < 0) backward_at[k] = depth[k];
        if (!strcmp(str_of(e, "cat"), "op") && !strcmp(str_of(args_of(e), "fn"), fn) &&
            !strcmp(str_of(e, "name"), name)) {
            if (depth[k] == 0) ++*top;
            else if (backward_at[k] >= 0) ++*in_backward;
        }
        depth[k]++;
    }
}

static row *row_of(row *rows, int *nrows, int pid, int tid) {
    for (int i = 0; i < *nrows; i++)
        if (rows[i].pid == pid && rows[i].tid == tid) return &rows[i];
    if (*nrows == MAX_ROWS) return NULL;
    row *r = &rows[(*nrows)++];
    memset(r, 0, sizeof *r);
    r->pid = pid;
    r->tid = tid;
    r->last_ts = -1e300;
    return r;
}

/* A wait for the device: a synchronize, or a blocking read (a d2h copy
 * into unpinned memory waits for the in-order queue before it). */
static bool is_wait(const cJSON *b) {
    if (!strcmp(str_of(b, "name"), "synchronize")) return true;
    return !strcmp(str_of(b, "name"), "copy d2h") &&
           cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(args_of(b), "pinned"));
}

/* The end of the first wait on pid's host rows that began at or after ts
 * (NAN when none). */
static double next_sync_end(const cJSON *events, int pid, double ts) {
    const cJSON *e;
    int depth = 0;
    bool inside = false;
    cJSON_ArrayForEach(e, events) {
        if ((int)num_of(e, "pid") != pid || (int)num_of(e, "tid") < 100) continue;
        const char *ph = str_of(e, "ph");
        if (!strcmp(ph, "B")) {
            if (!inside && is_wait(e) && num_of(e, "ts") >= ts) {
                inside = true;
                depth = 0;
            } else if (inside) {
                depth++;
            }
        } else if (!strcmp(ph, "E") && inside) {
            if (depth == 0) return num_of(e, "ts");
            depth--;
        }
    }
    return NAN;
}

/* What check_timeline counted. */
typedef struct timeline {
    int n_ops, n_enqueued, n_device, n_waits;
} timeline;

/* Rows: host spans nest and close, timestamps never go back on a row.
 * Flows: every device span matches an enqueue on its device and lies inside
 * [its enqueue, the next wait's end]; every enqueue has its device span;
 * no span was clamped to a wait. */
static void check_timeline(const cJSON *events, timeline *t) {
    static row rows[MAX_ROWS];
    static enqueue flows[MAX_FLOWS + 1];
    memset(flows, 0, sizeof flows);
    int nrows = 0, n_ops = 0, n_enqueued = 0, n_device = 0, n_waits = 0, n_clamped = 0, bad_order = 0,
        bad_nesting = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, events) {
        const char *ph = str_of(e, "ph");
        if (!strcmp(ph, "M") || !strcmp(ph, "C")) continue;
        row *r = row_of(rows, &nrows, (int)num_of(e, "pid"), (int)num_of(e, "tid"));
        if (!r) continue;
        const double ts = num_of(e, "ts");
        if (!(ts >= r->last_ts)) bad_order++;
        r->last_ts = ts;
        if (!strcmp(ph, "B")) {
            if (r->depth < MAX_DEPTH) r->open[r->depth] = e;
            r->depth++;
            if (!strcmp(str_of(e, "cat"), "op")) n_ops++;
            if (is_wait(e)) n_waits++;
        } else if (!strcmp(ph, "E")) {
            if (r->depth == 0) bad_nesting++;
            else r->depth--;
        } else if (!strcmp(ph, "s")) {
            const int id = (int)num_of(e, "id");
            CHECK(id > 0 && id <= MAX_FLOWS && r->depth > 0);
            if (id > 0 && id <= MAX_FLOWS && r->depth > 0) {
                flows[id].ts = num_of(r->open[r->depth - 1], "ts");
                flows[id].pid = r->pid;
                n_enqueued++;
            }
        } else if (!strcmp(ph, "X") && !strcmp(str_of(e, "cat"), "device")) {
            n_device++;
            const int id = (int)num_of(args_of(e), "flow");
            if (id <= 0 || id > MAX_FLOWS || flows[id].pid != r->pid) {
                CHECK(!"a device span whose flow matches no enqueue on its device");
                continue;
            }
            flows[id].seen_device = true;
            /* The backend's clock needed no cutting to the wait's end */
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(args_of(e), "clamped"))) n_clamped++;
            const double end = ts + num_of(e, "dur");
            const double sync_end = next_sync_end(events, r->pid, flows[id].ts);
            char what[200];
            snprintf(what, sizeof what, "device span %s [%.3f, %.3f] inside [%.3f, %.3f]",
                     str_of(e, "name"), ts, end, flows[id].ts, sync_end);
            check_report(ts >= flows[id].ts - TS_EPS && end <= sync_end + TS_EPS, __FILE__,
                         __LINE__, what);
        }
    }
    for (int i = 0; i < nrows; i++) CHECK_INT(rows[i].depth, 0);
    CHECK_INT(bad_order, 0);
    CHECK_INT(bad_nesting, 0);
    CHECK_INT(n_device, n_enqueued);
    CHECK_INT(n_clamped, 0);
    int missing = 0;
    for (int i = 1; i <= MAX_FLOWS; i++)
        if (flows[i].pid && !flows[i].seen_device) missing++;
    CHECK_INT(missing, 0);
    *t = (timeline){n_ops, n_enqueued, n_device, n_waits};
}

/* The pid of d's track (named after it), or -1. */
static int track_of(const cJSON *events, pt_device *d) {
    int pid = -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, events) {
        if (!strcmp(str_of(e, "ph"), "M") && !strcmp(str_of(e, "name"), "process_name") &&
            !strcmp(str_of(args_of(e), "name"), pt_device_name(d)))
            pid = (int)num_of(e, "pid");
    }
    return pid;
}

/* The tid of the row called name on track pid, or -1. */
static int row_named(const cJSON *events, int pid, const char *name) {
    const cJSON *e;
    cJSON_ArrayForEach(e, events) {
        if (!strcmp(str_of(e, "ph"), "M") && !strcmp(str_of(e, "name"), "thread_name") &&
            (int)num_of(e, "pid") == pid && !strcmp(str_of(args_of(e), "name"), name))
            return (int)num_of(e, "tid");
    }
    return -1;
}

static void check_step_trace(const char *path, pt_device *d) {
    cJSON *root = read_trace(path);
    CHECK_NOT_NULL(root);
    if (!root) return;
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    CHECK(cJSON_IsArray(events));
    const cJSON *other = cJSON_GetObjectItemCaseSensitive(root, "otherData");
    CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(other, "truncated")));

    /* Every public call of the step, by the API's op name. */
    int top, in_backward;
    count_ops(events, "pt_matmul", "matmul", &top, &in_backward);
    CHECK_INT(top, N_MATMUL);
    CHECK(in_backward >= 2); /* the weights' gradients */
    count_ops(events, "pt_add", "add", &top, &in_backward);
    CHECK_INT(top, N_ADD);
    count_ops(events, "pt_relu", "relu", &top, &in_backward);
    CHECK_INT(top, N_RELU);
    count_ops(events, "pt_axpy_", "axpy", &top, &in_backward);
    CHECK_INT(top, N_AXPY);
    count_ops(events, "pt_randn", "rand_normal", &top, &in_backward);
    CHECK_INT(top, 4);
    count_ops(events, "pt_rand", "rand_uniform", &top, &in_backward);
    CHECK_INT(top, 2);

    /* The device's track is named after it. */
    CHECK(track_of(events, d) > 0);

    timeline t;
    check_timeline(events, &t);
    CHECK(t.n_ops >= N_MATMUL + N_ADD + N_RELU + N_AXPY + 6); /* + the loss and backward ops */
    CHECK(t.n_waits >= 1);
    /* Every backend this runs on times its queue: one device span per enqueue. */
    CHECK(t.n_enqueued >= t.n_ops);
    cJSON_Delete(root);
}

static char trace_dir[256];

static void test_step(void) {
    pt_device *d = pt_default_device();
    REQUIRE(d);
    char path[300];
    snprintf(path, sizeof path, "%s/step.json", trace_dir);
    train_step(d); /* kernels compiled and memory cached: the traced step is a steady one */
    CHECK_OK(pt_trace_begin(path));
    CHECK(pt_trace_active());
    double loss = train_step(d);
    CHECK(isfinite(loss));
    CHECK_OK(pt_trace_end());
    CHECK(!pt_trace_active());
    check_step_trace(path, d);
}

static void test_capped(void) {
    pt_device *d = pt_default_device();
    REQUIRE(d);
    char path[300];
    snprintf(path, sizeof path, "%s/capped.json", trace_dir);
    const size_t cap = 8192;
    CHECK_OK(pt_trace_begin_capped(path, cap));
    for (int i = 0; i < 3; i++) train_step(d);
    CHECK_OK(pt_trace_end());
    struct stat st;
    CHECK(stat(path, &st) == 0 && (size_t)st.st_size <= cap);
    cJSON *root = read_trace(path);
    CHECK_NOT_NULL(root);
    const cJSON *other = cJSON_GetObjectItemCaseSensitive(root, "otherData");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(other, "truncated")));
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "traceEvents")) > 10);
    cJSON_Delete(root);
}

static void test_bad_paths(void) {
    CHECK(pt_trace_begin("/nonexistent-folder/sub/trace.json") == PT_ERR_IO);
    CHECK_HAS(pt_last_error(), "pt_trace_begin");
    CHECK_HAS(pt_last_error(), "/nonexistent-folder/sub/trace.json");
    CHECK(!pt_trace_active());
    CHECK(pt_trace_begin(NULL) == PT_ERR_INVALID_ARGUMENT);
    CHECK(pt_trace_begin("") == PT_ERR_INVALID_ARGUMENT);
    CHECK(pt_trace_begin_capped("x.json", 100) == PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "100");
    CHECK(pt_trace_end() == PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "pt_trace_begin");
    char path[300];
    snprintf(path, sizeof path, "%s/twice.json", trace_dir);
    CHECK_OK(pt_trace_begin(path));
    CHECK(pt_trace_begin(path) == PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "pt_trace_end");
    CHECK_OK(pt_trace_end());
}

/* A graph (portable/graph.h) captured and replayed while tracing: the
 * capture is one span on the device's "graphs" row, named
 * "graph N capture (K ops)"; its recorded ops are host spans of cat
 * "record" with no device span (nothing ran); each replay is a span
 * "graph N replay R (L ops)" on the graphs row holding one span per op it
 * ran (L: the graph's kernels, fewer than K where chains were fused) (cat "op", fn "pt_graph_replay"), each with its device span on the
 * queue row, inside [its enqueue, the next wait]. Where the plugin replays
 * the graph itself (graph_launch: OpenCL's command buffers, around the
 * product here), a replay holds no op spans and has one device span,
 * "graph replay", with its flow arrow. */
enum { GRAPH_REPLAYS = 3 };

static void test_graph_rows(void) {
    pt_device *d = pt_default_device();
    REQUIRE(d);
    int64_t xs[2] = {8, 4}, ws[2] = {4, 16}, bs[1] = {16};
    pt_manual_seed(5);
    pt_tensor *x = pt_rand(d, PT_F32, 2, xs), *w = pt_rand(d, PT_F32, 2, ws), *b = pt_rand(d, PT_F32, 1, bs);
    pt_scope sc = pt_scope_begin();
    const double eager = pt_item(pt_sum(pt_relu(pt_add(pt_matmul(x, w), b)), PT_ALL, false));
    pt_scope_end(sc);
    char path[300];
    snprintf(path, sizeof path, "%s/graph.json", trace_dir);
    CHECK_OK(pt_trace_begin(path));
    CHECK_OK(pt_graph_capture_begin(d));
    sc = pt_scope_begin();
    pt_tensor *y = pt_keep(pt_sum(pt_relu(pt_add(pt_matmul(x, w), b)), PT_ALL, false));
    pt_scope_end(sc);
    pt_graph *g = pt_graph_capture_end(d);
    REQUIRE(g);
    for (int r = 0; r < GRAPH_REPLAYS; r++) CHECK_OK(pt_graph_replay(g));
    CHECK_DBL(pt_item(y), eager, 0);
    CHECK_OK(pt_trace_end());
    pt_graph_stats st;
    CHECK_OK(pt_graph_info(g, &st));
    const int k = (int)st.ops, launched = (int)st.kernels; /* fewer where chains were fused */
    CHECK(launched <= k);
    pt_graph_free(g);
    pt_release(y);
    pt_release(b);
    pt_release(w);
    pt_release(x);

    cJSON *root = read_trace(path);
    REQUIRE(root);
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents"), *e;
    timeline t;
    check_timeline(events, &t);
    /* A backend that replays a graph by its own means (a CUDA graph, an
     * OpenCL command buffer) runs no ops the core sees: each replay is one
     * device span, "graph replay", with one flow to it. Otherwise each
     * replay holds its launched ops (fewer than the recorded k where chains
     * were fused), as eager ones. */
    int own = 0; /* device spans of replays the plugin launched itself */
    cJSON_ArrayForEach(e, events) {
        if (!strcmp(str_of(e, "ph"), "X") && !strcmp(str_of(e, "cat"), "device") &&
            !strcmp(str_of(e, "name"), "graph replay"))
            own++;
    }
    printf("graph replays launched by the plugin itself: %d of %d\n", own, GRAPH_REPLAYS);
    CHECK(own == 0 || own == GRAPH_REPLAYS);
    const int per_replay = own ? 0 : launched, spans_per_replay = own ? 1 : launched; /* op spans; device spans and flows */
    CHECK_INT(t.n_ops, GRAPH_REPLAYS * per_replay); /* only the replays ran ops */
    const int pid = track_of(events, d), graphs = row_named(events, pid, "graphs");
    CHECK(pid > 0);
    CHECK(graphs >= 2000);
    /* The capture's span, and its number for the replays' names. */
    int n_captures = 0, graph = -1;
    cJSON_ArrayForEach(e, events) {
        if (strcmp(str_of(e, "ph"), "X") || strcmp(str_of(e, "cat"), "graph")) continue;
        n_captures++;
        graph = (int)num_of(args_of(e), "graph");
        char want[64];
        snprintf(want, sizeof want, "graph %d capture (%d ops)", graph, k);
        CHECK_STR(str_of(e, "name"), want);
        CHECK((int)num_of(e, "pid") == pid && (int)num_of(e, "tid") == graphs);
        CHECK_STR(str_of(args_of(e), "status"), "ok");
    }
    CHECK_INT(n_captures, 1);
    /* Recorded ops: on the host row, without flows. Replays: on the graphs
     * row, each holding its kr ops, each of those with a flow. */
    int recorded = 0, replays = 0, depth = 0, in_replay = 0, flows_in_replay = 0, flows_outside = 0,
        op_spans = 0;
    bool in_record = false;
    cJSON_ArrayForEach(e, events) {
        const char *ph = str_of(e, "ph");
        const bool on_graphs = (int)num_of(e, "pid") == pid && (int)num_of(e, "tid") == graphs;
        if (!strcmp(ph, "B") && !strcmp(str_of(e, "cat"), "record")) {
            recorded++;
            in_record = true;
        } else if (!strcmp(ph, "E") && in_record && !on_graphs) {
            in_record = false;
        } else if (!strcmp(ph, "s") && in_record) {
            flows_outside++;
        }
        if (!strcmp(ph, "X") && !strcmp(str_of(e, "cat"), "device") && strncmp(str_of(e, "name"), "copy ", 5))
            op_spans++;
        if (!on_graphs) continue;
        if (!strcmp(ph, "B")) {
            if (depth == 0) {
                char want[64];
                snprintf(want, sizeof want, "graph %d replay %d (%d ops)", graph, ++replays, launched);
                CHECK_STR(str_of(e, "name"), want);
                CHECK_STR(str_of(e, "cat"), "graph");
                CHECK((int)num_of(args_of(e), "ops") == launched);
                in_replay = 0;
            } else {
                CHECK_INT(depth, 1);
                CHECK_STR(str_of(e, "cat"), "op");
                CHECK_STR(str_of(args_of(e), "fn"), "pt_graph_replay");
                in_replay++;
            }
            depth++;
        } else if (!strcmp(ph, "E")) {
            if (--depth == 0) CHECK_INT(in_replay, per_replay);
        } else if (!strcmp(ph, "s")) {
            flows_in_replay++;
        }
    }
    CHECK_INT(recorded, k);
    CHECK_INT(flows_outside, 0);
    CHECK_INT(replays, GRAPH_REPLAYS);
    CHECK_INT(flows_in_replay, GRAPH_REPLAYS * spans_per_replay);
    CHECK_INT(op_spans, GRAPH_REPLAYS * spans_per_replay); /* the device spans besides the read's copy */
    cJSON_Delete(root);
}

/* A program that set PORTABLE_TRACE and never called pt_trace_end. */
static void traced_child(void) {
    pt_device *d = pt_default_device();
    if (d) train_step(d);
    exit(check_failed ? 1 : 0); /* exit handlers close the trace */
}

static void test_closed_at_exit(void) {
    char path[300], env[320];
    snprintf(path, sizeof path, "%s/at_exit.json", trace_dir);
    snprintf(env, sizeof env, "PORTABLE_TRACE=%s", path);
    /* The variable is read as the library loads: run the child through exec. */
    pid_t pid = fork();
    if (pid == 0) {
        putenv(env);
        execl("/proc/self/exe", "test_trace", "--child", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    pt_device *d = pt_default_device();
    REQUIRE(d);
    check_step_trace(path, d);
}

/* pt_trace_span: a span of the caller's own lands on its named row with
 * the times and args given; a row name is one row per track; bad
 * arguments are errors, and with no trace nothing is even looked at. */
static void test_spans(void) {
    pt_device *d = pt_default_device();
    REQUIRE(d);
    /* no trace: checked all the same, and nothing is written */
    CHECK_OK(pt_trace_span(d, "loader", "before", 1, 2, NULL));
    CHECK(pt_trace_span(d, "loader", "before", 2, 1, NULL) == PT_ERR_INVALID_ARGUMENT);
    char path[300];
    snprintf(path, sizeof path, "%s/spans.json", trace_dir);
    CHECK_OK(pt_trace_begin(path));
    const int64_t t0 = pt_trace_clock_ns();
    CHECK_OK(pt_trace_span(d, "loader", "load batch", t0, t0 + 1234567, "\"batch\":8,\"files\":[\"a\",\"b\"]"));
    CHECK_OK(pt_trace_span(d, "loader", "decode", t0 + 2000000, t0 + 2000500, NULL));
    CHECK(pt_trace_span(NULL, "loader", "x", 0, 1, NULL) == PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "pt_trace_span: d ");
    CHECK(pt_trace_span(d, "load\"er", "x", 0, 1, NULL) == PT_ERR_INVALID_ARGUMENT);
    CHECK(pt_trace_span(d, "loader", "", 0, 1, NULL) == PT_ERR_INVALID_ARGUMENT);
    CHECK(pt_trace_span(d, "loader", "x\n", 0, 1, NULL) == PT_ERR_INVALID_ARGUMENT);
    CHECK(pt_trace_span(d, "loader", "x", 2, 1, NULL) == PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "before it begins");
    CHECK(pt_trace_span(d, "loader", "x", 0, 1, "\"a\":[1,2") == PT_ERR_INVALID_ARGUMENT);
    CHECK(pt_trace_span(d, "loader", "x", 0, 1, "\"a\":\"1}") == PT_ERR_INVALID_ARGUMENT);
    CHECK(pt_trace_span(d, "loader", "x", 0, 1, "\"a\":1}") == PT_ERR_INVALID_ARGUMENT);
    /* 32 row names in all: "loader" and 31 more, then a 33rd is refused */
    for (int i = 1; i < 32; i++) {
        char row[16];
        snprintf(row, sizeof row, "row %d", i);
        CHECK_OK(pt_trace_span(d, row, "x", t0, t0, NULL));
    }
    CHECK(pt_trace_span(d, "one too many", "x", t0, t0, NULL) == PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "one too many");
    CHECK_OK(pt_trace_span(d, "row 31", "again", t0, t0 + 1, NULL)); /* a known row still works */
    CHECK_OK(pt_trace_end());

    cJSON *root = read_trace(path);
    REQUIRE(root);
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents"), *e;
    int loader_tid = -1, named = 0, spans = 0;
    const cJSON *load = NULL, *decode = NULL;
    cJSON_ArrayForEach(e, events) {
        if (!strcmp(str_of(e, "name"), "thread_name") && !strcmp(str_of(args_of(e), "name"), "loader")) {
            loader_tid = (int)num_of(e, "tid");
            named++;
        }
        if (strcmp(str_of(e, "ph"), "X") || strcmp(str_of(e, "cat"), "user")) continue;
        spans++;
        if (!strcmp(str_of(e, "name"), "load batch")) load = e;
        if (!strcmp(str_of(e, "name"), "decode")) decode = e;
    }
    CHECK(named == 1);      /* one row, named once */
    CHECK(loader_tid >= 1000); /* after the host (100 and up) and queue (1) rows */
    CHECK(spans == 2 + 31 + 1);
    REQUIRE(load);
    REQUIRE(decode);
    CHECK((int)num_of(load, "tid") == loader_tid && (int)num_of(decode, "tid") == loader_tid);
    CHECK(fabs(num_of(load, "dur") - 1234.567) < 1e-9);
    CHECK(fabs(num_of(decode, "ts") - num_of(load, "ts") - 2000.0) < TS_EPS);
    CHECK(num_of(args_of(load), "batch") == 8);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(args_of(load), "files")) == 2);
    cJSON_Delete(root);
}

/* A plugin's op may allocate its scratch from the core while it holds its
 * device's lock (the convolution's columns, reduction partials, product
 * operand copies); with a garbage-collection ratio of 1 and cached memory
 * that allocation waits for the device first, and while tracing that wait
 * reads the device's stamps. The stamps take a lock of their own, or this
 * thread would wait for itself: the alarm turns such a hang into a failure
 * that says so. */
static void deadlock_alarm(int sig) {
    (void)sig;
    static const char msg[] = "FAIL: an op that allocates scratch while tracing did not return in 120 s "
                              "(the plugin's stamp read waits for a lock its op holds)\n";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(1);
    _exit(1);
}

static void test_scratch_while_tracing(void) {
    pt_device *d = pt_default_device();
    REQUIRE(d);
    char path[300];
    snprintf(path, sizeof path, "%s/scratch.json", trace_dir);
    CHECK_OK(pt_empty_cache(d));
    CHECK_OK(pt_set_memory_gc(d, 1));
    signal(SIGALRM, deadlock_alarm);
    alarm(120);
    CHECK_OK(pt_trace_begin(path));
    pt_scope sc = pt_scope_begin();
    pt_manual_seed(11);
    /* cached memory: a released tensor's block */
    int64_t small[1] = {4096};
    pt_release(pt_zeros(d, PT_F32, 1, small));
    /* then ops whose scratch needs new segments, each larger than the peak so far */
    int64_t xs[4] = {4, 8, 40, 40}, ws[4] = {8, 8, 3, 3}, big[1] = {1 << 21};
    pt_tensor *x = pt_randn(d, PT_F32, 4, xs), *w = pt_randn(d, PT_F32, 4, ws);
    pt_tensor *y = pt_f_conv2d(x, w, NULL, NULL);
    CHECK_NOT_NULL(y);
    pt_tensor *v = pt_rand(d, PT_F32, 1, big);
    pt_tensor *total = pt_sum(v, PT_ALL, false);
    CHECK_NOT_NULL(total);
    int64_t ms[2] = {512, 384};
    pt_tensor *m = pt_randn(d, PT_F32, 2, ms);
    pt_tensor *prod = pt_matmul(pt_transpose(m, 0, 1), m);
    CHECK_NOT_NULL(prod);
    /* a broadcast operand (a zero stride) that cuBLAS cannot read as it is: copied into scratch */
    int64_t col[2] = {4096, 1}, wide[2] = {4096, 1024}, rhs[2] = {1024, 8};
    pt_tensor *spread = pt_matmul(pt_expand(pt_randn(d, PT_F32, 2, col), 2, wide), pt_randn(d, PT_F32, 2, rhs));
    CHECK_NOT_NULL(spread);
    const double t = total ? pt_item(total) : NAN;
    CHECK(isfinite(t) && t > 0);
    CHECK_OK(pt_device_synchronize(d));
    pt_scope_end(sc);
    CHECK_OK(pt_trace_end());
    alarm(0);
    signal(SIGALRM, SIG_DFL);
    CHECK_OK(pt_set_memory_gc(d, 1.5));
    cJSON *root = read_trace(path);
    CHECK_NOT_NULL(root);
    cJSON_Delete(root);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--child")) traced_child();
    pt_device *d = pt_default_device();
    if (!d) {
        printf("skip: no device: %s\n", pt_last_error());
        return 77;
    }
    const char *dir = getenv("PT_TRACE_TEST_DIR");
    snprintf(trace_dir, sizeof trace_dir, "%s", dir ? dir : ".");
    test_bad_paths();
    test_step();
    test_capped();
    test_spans();
    test_graph_rows();
    test_scratch_while_tracing();
    test_closed_at_exit();
    return check_summary();
}
