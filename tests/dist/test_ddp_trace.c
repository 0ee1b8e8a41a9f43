/* The trace of DDP steps under mpirun -np 2: each rank writes its own file
 * (pt_trace_begin with its rank in the name, or PORTABLE_TRACE with %r in
 * it), trains a small MLP for STEPS
 * steps with buckets capped small (several buckets), and calls the
 * collectives by hand; then reads its file back with cJSON and checks:
 *   - the collectives are spans on a row "collectives" of their own on the
 *     device's track, with name, dtype, bytes, rank and wait_us;
 *   - each bucket of each step is a span on a row "ddp buckets" of its own,
 *     each bucket once per step (in index order with the communication
 *     thread), whose params and bytes add up to the module's;
 *   - on each of those rows the spans close in order and never overlap;
 *   - an application's own span (pt_trace_span) sits on a row of its own
 *     beside them. (tests/trace checks pt_trace_span's edges.)
 * PT_DDP_TRACE_DIR names the folder for the files. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "portable/dist.h"
#include "portable/portable.h"

#define STEPS 3
#define BATCH 8
#define BUCKET_BYTES 32768

static int rank, failures;

#define CHECK(cond, ...)                                                                                 \
    do {                                                                                                 \
        if (!(cond)) {                                                                                   \
            failures++;                                                                                  \
            fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__);                               \
            fprintf(stderr, __VA_ARGS__);                                                                \
            fprintf(stderr, "\n");                                                                       \
        }                                                                                                \
    } while (0)

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = '\0';
    fclose(f);
    return s;
}

static const char *str_of(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static double num_of(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The tid of the row called name on track pid; -1 when there is none. */
static int row_tid(const cJSON *events, int pid, const char *name) {
    const cJSON *e;
    cJSON_ArrayForEach(e, events) {
        if (!strcmp(str_of(e, "ph"), "M") && !strcmp(str_of(e, "name"), "thread_name") &&
            (int)num_of(e, "pid") == pid && !strcmp(str_of(cJSON_GetObjectItem(e, "args"), "name"), name))
            return (int)num_of(e, "tid");
    }
    return -1;
}

/* The complete spans on (pid, tid), in file order, into out (cap); their
 * count. Checks that each begins no earlier than the one before ended:
 * the row closes its spans in order and they never overlap. */
static int spans_on(const cJSON *events, int pid, int tid, const char *row, const cJSON **out, int cap) {
    int n = 0;
    double last_end = -INFINITY;
    const cJSON *e;
    cJSON_ArrayForEach(e, events) {
        if (strcmp(str_of(e, "ph"), "X") || (int)num_of(e, "pid") != pid || (int)num_of(e, "tid") != tid) continue;
        const double ts = num_of(e, "ts"), dur = num_of(e, "dur");
        CHECK(dur >= 0, "%s: span %s has duration %g", row, str_of(e, "name"), dur);
        /* ts and dur are microseconds with three decimals: allow their rounding */
        CHECK(ts >= last_end - 0.002, "%s: span %d (%s) begins at %.3f, before the one before ended (%.3f)", row,
              n, str_of(e, "name"), ts, last_end);
        last_end = ts + dur;
        if (n < cap) out[n] = e;
        n++;
    }
    return n;
}

int main(int argc, char **argv) {
    const char *dir = getenv("PT_DDP_TRACE_DIR");
    pt_dist *g = pt_dist_init(&argc, &argv);
    rank = pt_dist_rank(g); /* -1 without a group, in the message below */
    const int world = pt_dist_world_size(g);
    pt_device *dev = g ? pt_dist_device(g) : NULL;
    if (!dev) {
        fprintf(stderr, "rank %d: no group or device: %s\n", rank, pt_last_error());
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/ddp_trace_rank%d.json", dir && *dir ? dir : ".", rank);

    /* With PORTABLE_TRACE=<dir>/ddp_trace_rank%r.json the trace began as the
     * library loaded, into the same file name; else this rank starts it. */
    const bool from_env = pt_trace_active();
    if (!from_env) CHECK(pt_trace_begin(path) == PT_OK, "pt_trace_begin(%s): %s", path, pt_last_error());
    const int64_t t_app = pt_trace_clock_ns();
    CHECK(pt_trace_span(dev, "app", "data loading", t_app, t_app + 1234567, "\"batch\":8,\"files\":[\"a\",\"b\"]") ==
              PT_OK,
          "pt_trace_span: %s", pt_last_error());
    pt_manual_seed(7);
    pt_module *net = pt_sequential(5, (pt_module *[]){pt_linear_sized(64, 128), pt_relu_module(),
                                                       pt_linear_sized(128, 64), pt_relu_module(),
                                                       pt_linear_sized(64, 10)});
    pt_module_to(net, dev);
    pt_tensor *params[8];
    const int n_params = pt_module_parameters(net, NULL, params, 8);
    int64_t param_bytes = 0;
    for (int i = 0; i < n_params; ++i) param_bytes += pt_tensor_numel(params[i]) * 4;
    pt_ddp *ddp = pt_ddp_new(g, net, BUCKET_BYTES);
    CHECK(ddp != NULL, "pt_ddp_new: %s", pt_last_error());
    if (!ddp) return 1;
    const int nb = pt_ddp_bucket_count(ddp);
    if (nb > 64) return 1;
    CHECK(nb >= 3, "%d buckets for %lld bytes capped at %d", nb, (long long)param_bytes, BUCKET_BYTES);
    int bucket_params[64] = {0};
    for (int i = 0; i < nb && i < 64; ++i) bucket_params[i] = pt_ddp_bucket_size(ddp, i);
    pt_optimizer *opt = pt_sgd(net, 0.01, 0.9, 0);

    for (int step = 0; step < STEPS; ++step) {
        pt_scope s = pt_scope_begin();
        pt_manual_seed(100 + (uint64_t)step * 2 + (uint64_t)rank);
        pt_tensor *x = pt_randn(dev, PT_F32, 2, (int64_t[]){BATCH, 64});
        pt_tensor *y = pt_randn(dev, PT_F32, 2, (int64_t[]){BATCH, 10});
        CHECK(pt_backward(pt_mse_loss(pt_module_forward(net, x), y)) == PT_OK, "backward: %s", pt_last_error());
        CHECK(pt_ddp_step(ddp, opt) == PT_OK, "pt_ddp_step: %s", pt_last_error());
        pt_scope_end(s);
    }

    /* The collectives by hand, one of each kind with known sizes. */
    pt_scope s = pt_scope_begin();
    pt_tensor *v = pt_full(dev, PT_F32, 1, (int64_t[]){7}, rank + 1.0);
    CHECK(pt_dist_all_reduce(g, v, PT_REDUCE_SUM) == PT_OK, "all_reduce: %s", pt_last_error());
    CHECK(fabs(pt_item(pt_sum(v, PT_ALL, false)) - 7.0 * world * (world + 1) / 2) < 1e-4, "all_reduce value");
    pt_tensor *w = pt_full(dev, PT_I64, 1, (int64_t[]){3}, rank);
    CHECK(pt_dist_broadcast(g, w, 0) == PT_OK, "broadcast: %s", pt_last_error());
    pt_tensor *big = pt_empty(dev, PT_F32, 2, (int64_t[]){world, 5});
    CHECK(pt_dist_all_gather(g, big, pt_ones(dev, PT_F32, 1, (int64_t[]){5})) == PT_OK, "all_gather: %s",
          pt_last_error());
    CHECK(pt_dist_barrier(g) == PT_OK, "barrier: %s", pt_last_error());
    pt_scope_end(s);

    const bool threaded = pt_ddp_threaded(ddp);
    pt_ddp_free(ddp);
    pt_optimizer_free(opt);
    pt_module_free(net);
    CHECK(pt_trace_end() == PT_OK, "pt_trace_end: %s", pt_last_error());

    /* ---- read it back ---- */
    char *text = read_all(path);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    CHECK(root != NULL, "%s is not valid JSON", path);
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    int pid = -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, events) {
        if (!strcmp(str_of(e, "name"), "process_name") &&
            !strcmp(str_of(cJSON_GetObjectItem(e, "args"), "name"), pt_device_name(dev)))
            pid = (int)num_of(e, "pid");
    }
    CHECK(pid > 0, "no process track for %s", pt_device_name(dev));
    const int coll = row_tid(events, pid, "collectives"), buckets = row_tid(events, pid, "ddp buckets"),
              app = row_tid(events, pid, "app"), queue = row_tid(events, pid, "queue"),
              host = row_tid(events, pid, "host");
    CHECK(coll >= 0 && buckets >= 0 && app >= 0, "rows: collectives %d, ddp buckets %d, app %d", coll, buckets,
          app);
    CHECK(coll != buckets && coll != app && buckets != app && coll != queue && coll != host &&
              buckets != queue && buckets != host,
          "rows share a tid: collectives %d, ddp buckets %d, app %d, queue %d, host %d", coll, buckets, app, queue,
          host);

    /* the application's span, as given */
    const cJSON *a[4];
    CHECK(spans_on(events, pid, app, "app", a, 4) == 1, "not one span on row app");
    if (!failures) {
        CHECK(!strcmp(str_of(a[0], "name"), "data loading"), "app span is %s", str_of(a[0], "name"));
        CHECK(fabs(num_of(a[0], "dur") - 1234.567) < 1e-6, "app span lasts %.3f us, not 1234.567",
              num_of(a[0], "dur"));
        const cJSON *args = cJSON_GetObjectItem(a[0], "args");
        CHECK(num_of(args, "batch") == 8 && cJSON_GetArraySize(cJSON_GetObjectItem(args, "files")) == 2,
              "app span's args lost");
    }

    /* buckets: each once per step, adding up to the module */
    const cJSON *bs[64];
    const int n_b = spans_on(events, pid, buckets, "ddp buckets", bs, 64);
    CHECK(n_b == STEPS * nb, "%d bucket spans for %d steps of %d buckets", n_b, STEPS, nb);
    for (int step = 0; step < STEPS && n_b == STEPS * nb; ++step) {
        int params_seen = 0;
        int64_t bytes_seen = 0;
        bool seen[64] = {false};
        for (int k = 0; k < nb; ++k) {
            /* The communication thread finishes them in index order; the
             * fallback's MPI_Waitany in whatever order MPI does. */
            const cJSON *sp = bs[step * nb + k], *args = cJSON_GetObjectItem(sp, "args");
            const int i = (int)num_of(args, "bucket");
            CHECK(i >= 0 && i < nb && !seen[i], "step %d: span %d is of bucket %d (twice, or out of range)", step,
                  k, i);
            if (i < 0 || i >= nb || seen[i]) continue;
            seen[i] = true;
            CHECK(!threaded || i == k, "step %d: span %d is bucket %d; the thread moves them in index order", step,
                  k, i);
            char want[32];
            snprintf(want, sizeof want, "bucket %d", i);
            CHECK(!strcmp(str_of(sp, "name"), want), "step %d: span %s has bucket arg %d", step,
                  str_of(sp, "name"), i);
            CHECK((int)num_of(args, "params") == bucket_params[i], "step %d: bucket %d has %g params, not %d",
                  step, i, num_of(args, "params"), bucket_params[i]);
            CHECK((int)num_of(args, "rank") == rank, "bucket span of rank %g in rank %d's file",
                  num_of(args, "rank"), rank);
            CHECK(!strcmp(str_of(args, "dtype"), "f32"), "bucket dtype %s", str_of(args, "dtype"));
            CHECK(!strcmp(str_of(args, "thread"), threaded ? "communication" : "main"), "bucket thread %s",
                  str_of(args, "thread"));
            CHECK(num_of(args, "queued_us") >= 0, "queued_us %g", num_of(args, "queued_us"));
            CHECK(!threaded || num_of(args, "wait_us") >= 0, "wait_us %g", num_of(args, "wait_us"));
            CHECK(!cJSON_GetObjectItem(args, "status"), "bucket %d failed: %s", i, str_of(args, "status"));
            params_seen += (int)num_of(args, "params");
            bytes_seen += (int64_t)num_of(args, "bytes");
        }
        CHECK(params_seen == n_params && bytes_seen == param_bytes,
              "step %d: buckets hold %d params, %lld bytes; the module %d, %lld", step, params_seen,
              (long long)bytes_seen, n_params, (long long)param_bytes);
    }

    /* collectives: pt_ddp_new's broadcasts of the parameters, then ours */
    const cJSON *cs[64];
    const int n_c = spans_on(events, pid, coll, "collectives", cs, 64);
    CHECK(n_c == n_params + 4, "%d collective spans; want %d broadcasts + 4", n_c, n_params);
    if (n_c == n_params + 4) {
        static const char *const names[] = {"all_reduce", "broadcast", "all_gather", "barrier"};
        static const char *const dtypes[] = {"f32", "i64", "f32", ""};
        const double bytes[] = {28, 24, 20.0 * world, NAN};
        for (int i = 0; i < n_params; ++i)
            CHECK(!strcmp(str_of(cs[i], "name"), "broadcast"), "collective %d is %s", i, str_of(cs[i], "name"));
        for (int k = 0; k < 4; ++k) {
            const cJSON *sp = cs[n_params + k], *args = cJSON_GetObjectItem(sp, "args");
            CHECK(!strcmp(str_of(sp, "name"), names[k]), "collective is %s, not %s", str_of(sp, "name"),
                  names[k]);
            CHECK(!strcmp(str_of(args, "dtype"), dtypes[k]), "%s dtype '%s'", names[k], str_of(args, "dtype"));
            CHECK(k == 3 ? !cJSON_GetObjectItem(args, "bytes") : num_of(args, "bytes") == bytes[k],
                  "%s: bytes %g", names[k], num_of(args, "bytes"));
            CHECK((int)num_of(args, "rank") == rank && (int)num_of(args, "world") == world, "%s: rank %g of %g",
                  names[k], num_of(args, "rank"), num_of(args, "world"));
            CHECK(num_of(args, "wait_us") >= 0 && num_of(args, "wait_us") <= num_of(sp, "dur") + 0.002,
                  "%s: waited %g us of %g", names[k], num_of(args, "wait_us"), num_of(sp, "dur"));
        }
    }
    cJSON_Delete(root);
    free(text);

    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("ddp trace (%d ranks, %d buckets, %s, %s): %s\n", world, nb, threaded ? "threaded" : "non-blocking",
               from_env ? "PORTABLE_TRACE" : "pt_trace_begin", all ? "FAILED" : "ok");
    pt_dist_finalize(g);
    return all ? 1 : 0;
}
