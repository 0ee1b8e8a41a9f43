/* `portable trace summary FILE`: a trace written by libportable
 * (include/portable/trace.h) in four tables: the ops that took the most
 * device time, the host's time spent waiting, copy bandwidth per direction,
 * and per device how much of its queue's span was busy versus idle; and a
 * fifth when the trace has pt_trace_span rows (collectives, DDP buckets,
 * the application's own): their spans per row and name. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_json.h"
#include "trace_summary.h"

#define MAX_NAMES 256
#define MAX_PIDS 64
#define MAX_OPEN 64
#define TOP_OPS 15

typedef struct tally {
    char name[64];
    long count;
    double us;
    double bytes;
} tally;

typedef struct device_row {
    int pid;
    char name[64];
    double first, last, busy; /* queue row: earliest start, latest end, sum of spans */
    long spans;
} device_row;

/* A pt_trace_span row's name. */
typedef struct named_row {
    int pid, tid;
    char name[48];
} named_row;

typedef struct flow_bytes {
    long id;
    double bytes;
    char dir[8];
} flow_bytes;

static tally *tally_of(tally *t, int *n, const char *name) {
    for (int i = 0; i < *n; i++)
        if (!strcmp(t[i].name, name)) return &t[i];
    if (*n == MAX_NAMES) return NULL;
    tally *x = &t[(*n)++];
    memset(x, 0, sizeof *x);
    snprintf(x->name, sizeof x->name, "%s", name);
    return x;
}

static device_row *row_of(device_row *r, int *n, int pid) {
    for (int i = 0; i < *n; i++)
        if (r[i].pid == pid) return &r[i];
    if (*n == MAX_PIDS) return NULL;
    device_row *x = &r[(*n)++];
    memset(x, 0, sizeof *x);
    x->pid = pid;
    x->first = INFINITY;
    x->last = -INFINITY;
    snprintf(x->name, sizeof x->name, "pid %d", pid);
    return x;
}

static int by_time(const void *a, const void *b) {
    const double x = ((const tally *)a)->us, y = ((const tally *)b)->us;
    return (x < y) - (x > y);
}

/* One host row's open spans, to pair each E with its B. */
typedef struct open_span {
    int pid, tid;
    const cJSON *b[MAX_OPEN];
    int depth;
} open_span;

int pt_tool_trace_summary(const char *path, FILE *out) {
    cJSON *root = trace_json_load(path);
    const cJSON *events = root ? cJSON_GetObjectItemCaseSensitive(root, "traceEvents") : NULL;
    if (!cJSON_IsArray(events)) {
        fprintf(stderr,
                "portable trace summary: '%s' cannot be read or is not a trace (no traceEvents "
                "array); write one with PORTABLE_TRACE=file.json\n",
                path);
        cJSON_Delete(root);
        return 1;
    }
    static tally ops[MAX_NAMES], waits[MAX_NAMES], copies[8];
    static device_row devs[MAX_PIDS];
    static open_span rows[MAX_PIDS];
    static tally spans[MAX_NAMES];
    static named_row span_rows[MAX_NAMES];
    int n_spans = 0, n_span_rows = 0;
    int n_ops = 0, n_waits = 0, n_copies = 0, n_devs = 0, n_rows = 0;
    size_t n_flows = 0, cap_flows = 0;
    flow_bytes *flows = NULL;
    const cJSON *e;
    cJSON_ArrayForEach(e, events) {
        const char *ph = trace_json_str(e, "ph");
        const int pid = (int)trace_json_num(e, "pid"), tid = (int)trace_json_num(e, "tid");
        if (!strcmp(ph, "M")) {
            device_row *r = !strcmp(trace_json_str(e, "name"), "process_name")
                                ? row_of(devs, &n_devs, pid)
                                : NULL;
            if (r) snprintf(r->name, sizeof r->name, "%s", trace_json_str(trace_json_args(e), "name"));
            if (!strcmp(trace_json_str(e, "name"), "thread_name") && n_span_rows < MAX_NAMES) {
                named_row *w = &span_rows[n_span_rows++];
                w->pid = pid;
                w->tid = tid;
                snprintf(w->name, sizeof w->name, "%s", trace_json_str(trace_json_args(e), "name"));
            }
            continue;
        }
        open_span *o = NULL;
        if (!strcmp(ph, "B") || !strcmp(ph, "E") || !strcmp(ph, "s")) {
            for (int i = 0; i < n_rows && !o; i++)
                if (rows[i].pid == pid && rows[i].tid == tid) o = &rows[i];
            if (!o && n_rows < MAX_PIDS) {
                o = &rows[n_rows++];
                o->pid = pid;
                o->tid = tid;
                o->depth = 0;
            }
            if (!o) continue;
        }
        if (!strcmp(ph, "B")) {
            if (o->depth < MAX_OPEN) o->b[o->depth] = e;
            o->depth++;
        } else if (!strcmp(ph, "E") && o->depth > 0) {
            o->depth--;
            const cJSON *b = o->depth < MAX_OPEN ? o->b[o->depth] : NULL;
            if (!b) continue;
            const double us = trace_json_num(e, "ts") - trace_json_num(b, "ts");
            if (!strcmp(trace_json_str(b, "name"), "synchronize")) {
                char why[80];
                snprintf(why, sizeof why, "synchronize (%s)",
                         trace_json_str(trace_json_args(b), "why"));
                tally *t = tally_of(waits, &n_waits, why);
                if (t) t->count++, t->us += us;
            } else if (!strcmp(trace_json_str(b, "cat"), "copy") &&
                       cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(trace_json_args(b), "pinned")) &&
                       !strcmp(trace_json_str(b, "name"), "copy d2h")) {
                tally *t = tally_of(waits, &n_waits, "blocking read (copy d2h)");
                if (t) t->count++, t->us += us;
            }
        } else if (!strcmp(ph, "s") && o->depth > 0 && o->depth <= MAX_OPEN) {
            const cJSON *b = o->b[o->depth - 1];
            if (strcmp(trace_json_str(b, "cat"), "copy")) continue;
            if (n_flows == cap_flows) {
                cap_flows = cap_flows ? 2 * cap_flows : 1024;
                flow_bytes *g = realloc(flows, cap_flows * sizeof *g);
                if (!g) break;
                flows = g;
            }
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(b, "args");
            flow_bytes *f = &flows[n_flows++];
            f->id = (long)trace_json_num(e, "id");
            f->bytes = trace_json_num(args, "bytes");
            snprintf(f->dir, sizeof f->dir, "%s", trace_json_str(args, "direction"));
        } else if (!strcmp(ph, "X") && !strcmp(trace_json_str(e, "cat"), "user")) {
            const char *row = "?";
            for (int i = 0; i < n_span_rows; i++)
                if (span_rows[i].pid == pid && span_rows[i].tid == tid) row = span_rows[i].name;
            char key[128];
            snprintf(key, sizeof key, "%s | %s", row, trace_json_str(e, "name"));
            tally *t = tally_of(spans, &n_spans, key);
            const double bytes = trace_json_num(trace_json_args(e), "bytes");
            if (t) t->count++, t->us += trace_json_num(e, "dur"), t->bytes += isnan(bytes) ? 0 : bytes;
        } else if (!strcmp(ph, "X") && !strcmp(trace_json_str(e, "cat"), "device")) {
            /* Other complete events are pt_trace_span's (collectives, DDP
             * buckets): not the device's queue, so not its busy time. */
            const double ts = trace_json_num(e, "ts"), dur = trace_json_num(e, "dur");
            device_row *r = row_of(devs, &n_devs, pid);
            if (r) {
                if (ts < r->first) r->first = ts;
                if (ts + dur > r->last) r->last = ts + dur;
                r->busy += dur;
                r->spans++;
            }
            const char *name = trace_json_str(e, "name");
            if (!strncmp(name, "copy ", 5)) {
                const long id = (long)trace_json_num(trace_json_args(e), "flow");
                for (size_t i = n_flows; i-- > 0;) {
                    if (flows[i].id != id) continue;
                    tally *t = tally_of(copies, &n_copies, flows[i].dir);
                    if (t) t->count++, t->us += dur, t->bytes += flows[i].bytes;
                    break;
                }
            } else {
                tally *t = tally_of(ops, &n_ops, name);
                if (t) t->count++, t->us += dur;
            }
        }
    }
    free(flows);
    const cJSON *other = cJSON_GetObjectItemCaseSensitive(root, "otherData");
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(other, "truncated")))
        fprintf(out, "note: the trace reached its size cap; events after it are missing\n\n");

    double total = 0;
    for (int i = 0; i < n_ops; i++) total += ops[i].us;
    qsort(ops, (size_t)n_ops, sizeof *ops, by_time);
    fprintf(out, "## Top ops by device time\n\n"
                 "| op | calls | device ms | mean us | share |\n|---|---:|---:|---:|---:|\n");
    for (int i = 0; i < n_ops && i < TOP_OPS; i++)
        fprintf(out, "| %s | %ld | %.3f | %.2f | %.1f %% |\n", ops[i].name, ops[i].count,
                ops[i].us / 1e3, ops[i].us / (double)ops[i].count,
                total > 0 ? 100 * ops[i].us / total : 0);
    if (!n_ops) fprintf(out, "| (no device spans: the backend has no device timing) | | | | |\n");

    fprintf(out, "\n## Host time spent waiting\n\n| why | waits | ms |\n|---|---:|---:|\n");
    for (int i = 0; i < n_waits; i++)
        fprintf(out, "| %s | %ld | %.3f |\n", waits[i].name, waits[i].count, waits[i].us / 1e3);
    if (!n_waits) fprintf(out, "| (none) | 0 | 0 |\n");

    fprintf(out, "\n## Copy bandwidth (device time)\n\n"
                 "| direction | copies | MB | ms | GB/s |\n|---|---:|---:|---:|---:|\n");
    for (int i = 0; i < n_copies; i++)
        fprintf(out, "| %s | %ld | %.3f | %.3f | %.2f |\n", copies[i].name, copies[i].count,
                copies[i].bytes / 1e6, copies[i].us / 1e3,
                copies[i].us > 0 ? copies[i].bytes / (copies[i].us * 1e3) : 0.0);
    if (!n_copies) fprintf(out, "| (none) | 0 | 0 | 0 | |\n");

    fprintf(out, "\n## Device queues: busy vs idle\n\n"
                 "| device | spans | first to last ms | busy ms | idle (gap) ms | busy |\n"
                 "|---|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < n_devs; i++) {
        const device_row *r = &devs[i];
        if (!r->spans) continue;
        const double span = r->last - r->first;
        fprintf(out, "| %s | %ld | %.3f | %.3f | %.3f | %.1f %% |\n", r->name, r->spans, span / 1e3,
                r->busy / 1e3, (span - r->busy) / 1e3, span > 0 ? 100 * r->busy / span : 100.0);
    }
    if (n_spans) {
        fprintf(out, "\n## Spans on rows of their own (collectives, DDP buckets, pt_trace_span)\n\n"
                     "| row | span | count | ms | MB |\n|---|---|---:|---:|---:|\n");
        for (int i = 0; i < n_spans; i++)
            fprintf(out, "| %s | %ld | %.3f | %.3f |\n", spans[i].name, spans[i].count, spans[i].us / 1e3,
                    spans[i].bytes / 1e6);
    }
    cJSON_Delete(root);
    return 0;
}
