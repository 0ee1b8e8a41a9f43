/* What the runtime's trace hooks write: host spans (B/E pairs, so nesting
 * and per-row order hold in file order), device spans (X events from the
 * backend's stamps, written when the host next synchronises the device),
 * flow arrows from each enqueue to its execution, and memory counters. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/trace_internal.h"

#define EVENT_CAP 1024
#define MAX_DEVICES 64
/* Stamps held per device until its next synchronize; past this a program
 * that never waits keeps only its host spans (and memory stays bounded). */
#define MAX_PENDING 65536

/* ---- Device work waiting for its stamps to pass ---- */

typedef struct pending_span {
    void *stamp0, *stamp1; /* stamp1 NULL: the work ended by end_ns */
    int64_t enqueued_ns, end_ns;
    uint64_t flow;
    char name[40];
} pending_span;

typedef struct device_queue {
    pt_device *d;
    pending_span *items;
    int n, cap;
} device_queue;

static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static device_queue queues[MAX_DEVICES];
static _Atomic uint64_t driver_allocs;

static void emitf(const char *fmt, ...) PT_PRINTF(1, 2);
static void emitf(const char *fmt, ...) {
    char ev[EVENT_CAP];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(ev, sizeof ev, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof ev) return; /* never cut an event: drop it whole */
    pt__trace_emit(ev, (size_t)n);
}

/* Caller holds pending_lock. */
static device_queue *queue_of_locked(pt_device *d) {
    for (int i = 0; i < MAX_DEVICES; i++) {
        if (queues[i].d == d) return &queues[i];
        if (!queues[i].d) {
            queues[i].d = d;
            return &queues[i];
        }
    }
    return NULL;
}

static void push_pending(pt_device *d, void *s0, void *s1, int64_t enq, int64_t end,
                         uint64_t flow, const char *name) {
    pthread_mutex_lock(&pending_lock);
    device_queue *q = queue_of_locked(d);
    if (q && q->n == q->cap && q->cap < MAX_PENDING) {
        int cap = q->cap ? q->cap * 2 : 256;
        pending_span *grown = realloc(q->items, (size_t)cap * sizeof *grown);
        if (grown) {
            q->items = grown;
            q->cap = cap;
        }
    }
    if (q && q->n < q->cap) {
        pending_span *p = &q->items[q->n++];
        p->stamp0 = s0;
        p->stamp1 = s1;
        p->enqueued_ns = enq;
        p->end_ns = end;
        p->flow = flow;
        snprintf(p->name, sizeof p->name, "%s", name);
        s0 = s1 = NULL;
    }
    pthread_mutex_unlock(&pending_lock);
    if (s0) pt__stamp_release(d, s0);
    if (s1) pt__stamp_release(d, s1);
}

/* Writes the device spans of d's pending work (its queue is drained: the
 * host's wait for it returned at waited_ns) and forgets them. */
static void drain(pt_device *d, bool plugin_gone, int64_t waited_ns) {
    pthread_mutex_lock(&pending_lock);
    device_queue *q = queue_of_locked(d);
    pending_span *items = q ? q->items : NULL;
    int n = q ? q->n : 0;
    if (q) {
        q->items = NULL;
        q->n = q->cap = 0;
    }
    pthread_mutex_unlock(&pending_lock);
    if (!n) {
        free(items);
        return;
    }
    const int pid = pt__trace_pid(d);
    for (int i = 0; i < n && !plugin_gone; i++) {
        pending_span *p = &items[i];
        int64_t t0, t1;
        t1 = p->end_ns;
        if (pt__stamp_time(d, p->stamp0, &t0) == PT_OK &&
            (!p->stamp1 || pt__stamp_time(d, p->stamp1, &t1) == PT_OK)) {
            /* The queue passed stamp0 when the work before was done; an
             * idle queue passed it before this work was even queued. */
            int64_t start = t0 > p->enqueued_ns ? t0 : p->enqueued_ns;
            int64_t end = t1 > start ? t1 : start;
            /* The work was over when the wait returned. A device clock that
             * says otherwise is mapped wrongly (Mesa rusticl stamps markers
             * when it processes a batch, not when the work ran): the span
             * is cut to the wait and marked, so pictures stay causal and
             * the tests can tell. */
            const bool clamped = end > waited_ns;
            if (clamped) {
                end = waited_ns;
                if (start > end) start = end;
            }
            const char *ts = PT__TRACE_TS(start);
            emitf("{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"device\",\"pid\":%d,\"tid\":%d,"
                  "\"ts\":%s,\"dur\":%s,\"args\":{\"flow\":%" PRIu64 "%s}}",
                  p->name, pid, PT__TRACE_QUEUE_TID, ts, PT__TRACE_US(end - start), p->flow,
                  clamped ? ",\"clamped\":true" : "");
            emitf("{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"enqueue\",\"cat\":\"flow\",\"id\":%" PRIu64
                  ",\"pid\":%d,\"tid\":%d,\"ts\":%s}",
                  p->flow, pid, PT__TRACE_QUEUE_TID, ts);
        }
        pt__stamp_release(d, p->stamp0);
        pt__stamp_release(d, p->stamp1);
    }
    free(items);
}

void pt__trace_flush_devices(bool at_exit) {
    for (int i = 0; i < MAX_DEVICES; i++) {
        pthread_mutex_lock(&pending_lock);
        pt_device *d = queues[i].d;
        const bool waiting = d && queues[i].n > 0;
        pthread_mutex_unlock(&pending_lock);
        if (!d) break;
        if (!waiting) continue;
        const bool gone = d->backend->shut_down;
        /* A synchronize drains d (its hook writes the spans). */
        if (gone || pt__wait_device(at_exit ? "exit" : "pt_trace_end", d) != PT_OK)
            drain(d, gone, pt__trace_now_ns());
    }
}

/* ---- Host spans ---- */

static void begin_span(int pid, int tid, int64_t t, const char *name, const char *cat,
                       const char *args) {
    emitf("{\"ph\":\"B\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%s,"
          "\"args\":{%s}}",
          name, cat, pid, tid, PT__TRACE_TS(t), args);
}

static void end_span(int pid, int tid, pt_status s) {
    if (s == PT_OK)
        emitf("{\"ph\":\"E\",\"pid\":%d,\"tid\":%d,\"ts\":%s}", pid, tid,
              PT__TRACE_TS(pt__trace_now_ns()));
    else
        emitf("{\"ph\":\"E\",\"pid\":%d,\"tid\":%d,\"ts\":%s,\"args\":{\"status\":\"%s\"}}",
              pid, tid, PT__TRACE_TS(pt__trace_now_ns()), pt_status_name(s));
}

static void flow_start(int pid, int tid, uint64_t flow) {
    emitf("{\"ph\":\"s\",\"name\":\"enqueue\",\"cat\":\"flow\",\"id\":%" PRIu64
          ",\"pid\":%d,\"tid\":%d,\"ts\":%s}",
          flow, pid, tid, PT__TRACE_TS(pt__trace_now_ns()));
}

static void memory_counter(pt_device *d, int pid) {
    pt__spin_lock(&d->alloc.lock);
    const int64_t in_use = d->alloc.in_use, cached = d->alloc.cached;
    pt__spin_unlock(&d->alloc.lock);
    emitf("{\"ph\":\"C\",\"name\":\"memory\",\"pid\":%d,\"ts\":%s,"
          "\"args\":{\"in_use\":%" PRId64 ",\"cached\":%" PRId64 "}}",
          pid, PT__TRACE_TS(pt__trace_now_ns()), in_use, cached);
}

/* Appends ",[d0, d1]" for each operand to buf. */
static size_t shape_list(char *buf, size_t cap, const pt_operand *ops, int n) {
    size_t used = 0;
    for (int i = 0; i < n && used < cap; i++) {
        char s[PT_MAX_DIMS * 22 + 4];
        int w = snprintf(buf + used, cap - used, "%s%s", i ? "," : "",
                         pt__shape_str(ops[i].ndim, ops[i].shape, s, sizeof s));
        if (w < 0) break;
        used += (size_t)w;
    }
    return used;
}

/* A host span with one string argument. */
static void span_begin(pt__trace_mark *m, const char *name, const char *cat, const char *key,
                       const char *value, pt_device *d) {
    const int pid = pt__trace_pid(d), tid = pt__trace_host_tid(pid);
    char args[160];
    snprintf(args, sizeof args, "\"%s\":\"%s\"", key, value);
    m->t0 = pt__trace_now_ns();
    m->stamp0 = NULL;
    m->flow = 0;
    begin_span(pid, tid, m->t0, name, cat, args);
}

/* The stamp before the work, where the backend has stamps, and the start
 * of its flow arrow inside the span open on (pid, tid). */
static void stamp_before(pt__trace_mark *m, int pid, int tid, pt_device *d) {
    if (pt__stamps_supported(d) && pt__stamp_record(d, &m->stamp0) == PT_OK) {
        m->flow = pt__trace_next_flow();
        flow_start(pid, tid, m->flow);
    }
}

/* Opens the span of op (cat: "op", or "record" for an op a capture records
 * instead of running) and, when timed and the backend has stamps, queues
 * the stamp before it with the flow arrow's start. */
static void op_begin(pt__trace_mark *m, int pid, int tid, const char *fn, pt_device *d, const pt_op *op,
                     const char *cat, bool timed) {
    /* Shapes as the core built them, before the backend call merges dims. */
    char in[512] = "", out[PT_MAX_DIMS * 22 + 4], args[800];
    shape_list(in, sizeof in, op->in, op->n_inputs);
    shape_list(out, sizeof out, &op->out, 1);
    snprintf(args, sizeof args,
             "\"fn\":\"%s\",\"dtype\":\"%s\",\"device\":\"%s\",\"out\":%s,\"in\":[%s]", fn,
             pt_dtype_table_name(op->dtype), d->name, out, in);
    m->t0 = pt__trace_now_ns();
    begin_span(pid, tid, m->t0, pt_op_name(op->kind), cat, args);
    m->stamp0 = NULL;
    m->flow = 0;
    if (timed) stamp_before(m, pid, tid, d);
}

/* The stamp after the work, which ended with status s: the pair pending,
 * as device span name, until the device's next wait. */
static void stamp_after(pt__trace_mark *m, pt_device *d, const char *name, pt_status s) {
    void *s1 = NULL;
    if (!m->stamp0) return;
    if (s == PT_OK && pt__stamp_record(d, &s1) == PT_OK)
        push_pending(d, m->stamp0, s1, m->t0, 0, m->flow, name);
    else
        pt__stamp_release(d, m->stamp0);
}

/* Closes what op_begin opened, after the op ran with status s. */
static void op_end(pt__trace_mark *m, int pid, int tid, pt_device *d, const char *name, pt_status s) {
    stamp_after(m, d, name, s);
    end_span(pid, tid, s);
}

pt_status pt__trace_execute(const char *fn, pt_device *d, pt_op *op) {
    const int pid = pt__trace_pid(d), tid = pt__trace_host_tid(pid);
    /* An op a capture records runs nothing on the device: no stamps. */
    const bool recorded = pt__capture_now && pt__capture_device() == d;
    pt__trace_mark m;
    op_begin(&m, pid, tid, fn, d, op, recorded ? "record" : "op", !recorded);
    pt_status s = pt__execute_untraced(fn, d, op);
    op_end(&m, pid, tid, d, pt_op_name(op->kind), s);
    return s;
}

/* ---- Graphs ---- */

void pt__trace_capture(pt_device *d, int64_t begin_ns, int64_t graph, int32_t n_ops, pt_status s) {
    const int pid = pt__trace_pid(d), tid = pt__trace_graph_tid(pid);
    const int64_t end = pt__trace_now_ns();
    /* A capture that began before the trace shows from the trace's start. */
    const int64_t begin = begin_ns > pt__trace_origin_ns() ? begin_ns : pt__trace_origin_ns();
    emitf("{\"ph\":\"X\",\"name\":\"graph %" PRId64 " capture (%d ops)\",\"cat\":\"graph\","
          "\"pid\":%d,\"tid\":%d,\"ts\":%s,\"dur\":%s,\"args\":{\"fn\":\"pt_graph_capture_end\","
          "\"graph\":%" PRId64 ",\"ops\":%d,\"device\":\"%s\",\"status\":\"%s\"}}",
          graph, (int)n_ops, pid, tid, PT__TRACE_TS(begin), PT__TRACE_US(end > begin ? end - begin : 0),
          graph, (int)n_ops, d->name, s == PT_OK ? "ok" : pt_status_name(s));
}

pt_status pt__trace_replay(pt_device *d, void **inst, const pt_op *ops, int32_t n_ops,
                           const int32_t *changed, int32_t n_changed, int64_t graph, int64_t replay) {
    const int pid = pt__trace_pid(d), tid = pt__trace_graph_tid(pid);
    char name[64], args[200];
    snprintf(name, sizeof name, "graph %" PRId64 " replay %" PRId64 " (%d ops)", graph, replay,
             (int)n_ops);
    snprintf(args, sizeof args,
             "\"fn\":\"pt_graph_replay\",\"graph\":%" PRId64 ",\"replay\":%" PRId64
             ",\"ops\":%d,\"device\":\"%s\"",
             graph, replay, (int)n_ops, d->name);
    begin_span(pid, tid, pt__trace_now_ns(), name, "graph", args);
    bool own = false;
    pt_status s = pt__graph_prepare_call(d, inst, ops, n_ops, &own);
    if (s == PT_OK && own) {
        /* The plugin's own launch: one pair of stamps around the whole graph. */
        pt__trace_mark m = {pt__trace_now_ns(), NULL, 0};
        stamp_before(&m, pid, tid, d);
        s = pt__graph_launch_call(d, inst, ops, n_ops, changed, n_changed);
        stamp_after(&m, d, "graph replay", s);
    } else {
        for (int32_t i = 0; s == PT_OK && i < n_ops; ++i) {
            pt__trace_mark m;
            op_begin(&m, pid, tid, "pt_graph_replay", d, &ops[i], "op", true);
            s = pt__graph_execute_call(d, ops, i, n_ops);
            op_end(&m, pid, tid, d, pt_op_name(ops[i].kind), s);
        }
    }
    end_span(pid, tid, s);
    return s;
}

void pt__trace_note_driver_alloc(void) { atomic_fetch_add(&driver_allocs, 1); }

pt__block *pt__trace_alloc(pt_device *d, size_t bytes, const char *fn) {
    const int pid = pt__trace_pid(d), tid = pt__trace_host_tid(pid);
    char args[200];
    snprintf(args, sizeof args, "\"fn\":\"%s\",\"bytes\":%zu", fn, bytes);
    begin_span(pid, tid, pt__trace_now_ns(), "alloc", "memory", args);
    const uint64_t before = atomic_load(&driver_allocs);
    pt__block *b = pt__alloc_untraced(d, bytes, fn);
    /* Another thread's driver call in between reads as ours: tracing
     * programs are rarely allocating from two threads at the same instant. */
    const bool driver = atomic_load(&driver_allocs) != before;
    emitf("{\"ph\":\"E\",\"pid\":%d,\"tid\":%d,\"ts\":%s,\"args\":{\"source\":\"%s\"%s}}", pid,
          tid, PT__TRACE_TS(pt__trace_now_ns()), driver ? "driver" : "cache",
          b ? "" : ",\"status\":\"failed\"");
    memory_counter(d, pid);
    return b;
}

void pt__trace_free(pt_device *d, pt__block *b) {
    pt__free_untraced(d, b);
    memory_counter(d, pt__trace_pid(d));
}

void pt__trace_copy_begin(pt__trace_mark *m, const char *fn, pt_device *d, const char *dir,
                          size_t bytes, bool pinned) {
    const int pid = pt__trace_pid(d), tid = pt__trace_host_tid(pid);
    char name[40], args[200];
    snprintf(name, sizeof name, "copy %s", dir);
    snprintf(args, sizeof args, "\"fn\":\"%s\",\"direction\":\"%s\",\"bytes\":%zu,\"pinned\":%s",
             fn, dir, bytes, pinned ? "true" : "false");
    m->t0 = pt__trace_now_ns();
    begin_span(pid, tid, m->t0, name, "copy", args);
    m->stamp0 = NULL;
    m->flow = 0;
    stamp_before(m, pid, tid, d);
}

void pt__trace_copy_end(pt__trace_mark *m, pt_device *d, const char *dir, bool blocking,
                        pt_status s) {
    const int64_t done = pt__trace_now_ns();
    const int pid = pt__trace_pid(d), tid = pt__trace_host_tid(pid);
    if (m->stamp0) {
        void *s1 = NULL;
        char name[40];
        snprintf(name, sizeof name, "copy %s", dir);
        /* A blocking copy is over when the call returns: a stamp queued
         * now would pass only later, so its end is the host's clock. */
        if (s == PT_OK && blocking)
            push_pending(d, m->stamp0, NULL, m->t0, done, m->flow, name);
        else if (s == PT_OK && pt__stamp_record(d, &s1) == PT_OK)
            push_pending(d, m->stamp0, s1, m->t0, 0, m->flow, name);
        else
            pt__stamp_release(d, m->stamp0);
    }
    end_span(pid, tid, s);
    /* A blocking read waits for the in-order queue: a wait like synchronize. */
    if (s == PT_OK && blocking && !strcmp(dir, "d2h")) drain(d, false, done);
}

void pt__trace_sync_begin(pt__trace_mark *m, const char *fn, pt_device *d) {
    span_begin(m, "synchronize", "wait", "why", fn, d);
}

void pt__trace_sync_end(pt__trace_mark *m, pt_device *d, pt_status s) {
    const int64_t waited = pt__trace_now_ns();
    pt__trace_region_end(m, d, s);
    if (s == PT_OK) drain(d, false, waited);
}

void pt__trace_region_begin(pt__trace_mark *m, const char *name, const char *fn, pt_device *d) {
    span_begin(m, name, "region", "fn", fn, d);
}

void pt__trace_region_end(pt__trace_mark *m, pt_device *d, pt_status s) {
    (void)m;
    const int pid = pt__trace_pid(d);
    end_span(pid, pt__trace_host_tid(pid), s);
}
