/* Host cost per op, eager vs a replayed graph: a chain of small (10-element
 * f32) element-wise ops (add, mul, sigmoid, add_scalar, in turn), eager
 * (each op validated, allocated and executed) and captured once then
 * replayed (portable/graph.h: each op straight to the plugin's execute, the
 * intermediates in a planned arena), on the cpu and on the first OpenCL
 * and the first CUDA device where there are. Eager and replay rounds alternate in one run;
 * each round runs the chain many times and then waits for the device, and
 * the best round of each counts; a replay's "queued" figure is its round's
 * time up to that wait (the host's part where the backend queues a whole
 * replay at once: an OpenCL command buffer, a CUDA graph). Prints a
 * markdown table with the ratio and each device's replay path, which the
 * plugins say at PORTABLE_LOG=info (asked for here unless PORTABLE_LOG is
 * set): "CUDA graph", "command buffer", "op by op: <the plugin's reason>",
 * or "op by op (core)" where the plugin has no graph path of its own.
 * No assertions: numbers are for people.
 *
 * With a trace path, the replays are also timed while tracing into it
 * (a span per replay and per op, and the ops' device spans: what a traced
 * replay costs); without one, the replays run with tracing off, where a
 * replay pays one test of a flag for tracing (bench/graph_trace_overhead.sh
 * compares that with a library from before graphs were traced).
 *
 *   bench_graph [rounds] [chain length] [trace.json]
 *   bench_graph --replays N [chain length]
 * The second form only captures the chain on the cpu and replays it N
 * times, for instruction counts (perf stat) of a replay without the rest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "portable/portable.h"

/* ---- The replay path, from the plugins' log messages ---- */

static char replay_path[256];

static void note_paths(pt_log_level level, const char *message, void *user) {
    (void)user;
    const char *why = strstr(message, "replays op by op");
    if (strstr(message, "replays as one CUDA graph")) snprintf(replay_path, sizeof replay_path, "CUDA graph");
    else if (strstr(message, "replays as one command buffer")) snprintf(replay_path, sizeof replay_path, "command buffer");
    else if (strstr(message, "replays as one kernel list")) snprintf(replay_path, sizeof replay_path, "pre-bound kernels");
    else if (why) snprintf(replay_path, sizeof replay_path, "op by op%s", why + strlen("replays op by op"));
    else if (level >= PT_LOG_WARN) fprintf(stderr, "portable [warn]: %s\n", message);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The chain on x: n ops, the result a new reference (the intermediates
 * released by the caller's scope). */
static pt_tensor *chain(pt_tensor *x, pt_tensor *b, int n) {
    for (int k = 0; k < n; ++k) {
        switch (k % 4) {
        case 0: x = pt_add(x, b); break;
        case 1: x = pt_mul(x, b); break;
        case 2: x = pt_sigmoid(x); break;
        default: x = pt_add_scalar(x, 0.5); break;
        }
    }
    return x;
}

/* Seconds per op of iters eager chains. */
static double time_eager(pt_device *d, pt_tensor *x, pt_tensor *b, int n, int iters) {
    double t0 = now();
    for (int i = 0; i < iters; ++i) {
        pt_scope s = pt_scope_begin();
        chain(x, b, n);
        pt_scope_end(s);
    }
    pt_device_synchronize(d);
    return (now() - t0) / ((double)iters * n);
}

/* Seconds per op of iters replays; *queued (unless NULL) the part before
 * the wait for the device: the host's own cost where a replay only queues
 * (an OpenCL command buffer, a CUDA graph). */
static double time_replay(pt_device *d, pt_graph *g, int n, int iters, double *queued) {
    double t0 = now();
    for (int i = 0; i < iters; ++i) pt_graph_replay(g);
    double t1 = now();
    pt_device_synchronize(d);
    if (queued) *queued = (t1 - t0) / ((double)iters * n);
    return (now() - t0) / ((double)iters * n);
}

/* Seconds per op of replays while tracing into path (best of rounds; each
 * round fewer replays: a traced op writes about 1 KiB), or -1. */
static double time_traced(pt_device *d, pt_graph *g, int n, int iters, int rounds, const char *path) {
    double best = -1;
    for (int r = 0; r < rounds; ++r) {
        if (pt_trace_begin(path) != PT_OK) {
            fprintf(stderr, "bench_graph: %s\n", pt_last_error());
            return -1;
        }
        double t = time_replay(d, g, n, iters, NULL);
        pt_trace_end();
        if (best < 0 || t < best) best = t;
    }
    return best;
}

/* The chain of n ops on fresh 10-element x and b, captured on d: the graph,
 * or NULL (x, b and the chain's result y are the caller's either way). */
static pt_graph *capture_chain(pt_device *d, int n, pt_tensor **x, pt_tensor **b, pt_tensor **y) {
    int64_t shape[1] = {10};
    *x = pt_rand(d, PT_F32, 1, shape);
    *b = pt_rand(d, PT_F32, 1, shape);
    *y = NULL;
    if (!*x || !*b || pt_graph_capture_begin(d) != PT_OK) return NULL;
    pt_scope s = pt_scope_begin();
    *y = pt_keep(chain(*x, *b, n));
    pt_scope_end(s);
    return pt_graph_capture_end(d);
}

static int bench(pt_device *d, int rounds, int n, const char *trace) {
    pt_tensor *x, *b, *y;
    pt_graph *g = capture_chain(d, n, &x, &b, &y);
    if (!g) {
        fprintf(stderr, "bench_graph: %s\n", pt_last_error());
        return 1;
    }
    const int iters = d != pt_cpu() ? 200 : 2000;
    snprintf(replay_path, sizeof replay_path, "op by op (core)"); /* until a plugin says otherwise */
    time_eager(d, x, b, n, iters / 10); /* warm: kernels built, blocks cached */
    time_replay(d, g, n, iters / 10, NULL);
    double best_e = 1e30, best_r = 1e30, best_q = 1e30;
    for (int r = 0; r < rounds; ++r) {
        double q, e = time_eager(d, x, b, n, iters), p = time_replay(d, g, n, iters, &q);
        if (e < best_e) best_e = e;
        if (p < best_r) best_r = p;
        if (q < best_q) best_q = q;
    }
    const double traced = trace ? time_traced(d, g, n, iters / 20 + 1, rounds, trace) : -1;
    char traced_us[32] = "";
    if (traced >= 0) snprintf(traced_us, sizeof traced_us, " %.2f |", traced * 1e6);
    pt_graph_stats st;
    pt_graph_info(g, &st);
    /* '|' would end the cell */
    for (char *c = replay_path; *c; ++c)
        if (*c == '|') *c = '/';
    printf("| %s | %d | %.3f | %.4f | %.4f | %.2fx | %lld B (eager peak %lld B) | %s |%s\n", pt_device_name(d), n,
           best_e * 1e6, best_r * 1e6, best_q * 1e6, best_e / best_r, (long long)st.bytes_planned,
           (long long)st.bytes_eager_peak, replay_path, traced_us);
    pt_graph_free(g);
    pt_release(y);
    pt_release(x);
    pt_release(b);
    return 0;
}

/* The chain captured on the cpu and replayed count times. */
static int replays_only(int count, int n) {
    pt_device *d = pt_cpu();
    pt_tensor *x, *b, *y;
    pt_graph *g = capture_chain(d, n, &x, &b, &y);
    if (!g) return 1;
    for (int i = 0; i < count; ++i) pt_graph_replay(g);
    pt_device_synchronize(d);
    pt_graph_free(g);
    pt_release(y);
    pt_release(x);
    pt_release(b);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 2 && !strcmp(argv[1], "--replays")) return replays_only(atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 64);
    int rounds = argc > 1 ? atoi(argv[1]) : 5, n = argc > 2 ? atoi(argv[2]) : 64;
    const char *trace = argc > 3 ? argv[3] : NULL;
    if (rounds < 1) rounds = 1;
    if (n < 1) n = 1;
    setenv("PORTABLE_LOG", "info", 0); /* before the library's first message: read once */
    pt_set_log_handler(note_paths, NULL);
    printf("| device | chain (ops) | eager µs/op | replay µs/op | replay queued µs/op | eager / replay | arena | replay path |%s\n",
           trace ? " traced replay µs/op |" : "");
    printf("|---|---:|---:|---:|---:|---:|---|---|%s\n", trace ? "---:|" : "");
    int rc = bench(pt_cpu(), rounds, n, trace);
    static const char *const accelerators[] = {"opencl", "cuda"};
    for (int k = 0; k < 2; ++k) {
        pt_clear_error(); /* what is printed below is this lookup's reason, not an earlier one */
        pt_device *d = pt_device_count(accelerators[k]) > 0 ? pt_device_get(accelerators[k]) : NULL;
        if (d) rc |= bench(d, rounds, n, trace);
        else printf("| %s | (no device%s%s) | | | | | | |\n", accelerators[k], pt_last_error()[0] ? ": " : "",
                    pt_last_error());
    }
    return rc;
}
