/* The runtime's trace hooks (include/portable/trace.h). Every hook sits
 * behind pt__tracing(), one predictable branch when no trace is written;
 * the hook bodies live in trace_hooks.c, the file and its JSON in
 * trace_writer.c, the public functions in trace.c. */
#ifndef PORTABLE_CORE_TRACE_INTERNAL_H
#define PORTABLE_CORE_TRACE_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/runtime.h"

extern atomic_bool pt__trace_on;

static inline bool pt__tracing(void) {
    return __builtin_expect(atomic_load_explicit(&pt__trace_on, memory_order_relaxed), 0);
}

/* ---- Hooks (trace_hooks.c) ---- */

/* pt__execute while tracing: a host span around the untraced call, with
 * device stamps before and after the op when the backend has them. */
pt_status pt__trace_execute(const char *fn, pt_device *d, pt_op *op);
/* pt__alloc / pt__free while tracing: a span (bytes, cache hit or driver
 * call) and the device's memory counters. */
pt__block *pt__trace_alloc(pt_device *d, size_t bytes, const char *fn);
void pt__trace_free(pt_device *d, pt__block *b);
/* Called by pt__alloc_call: the allocation in flight went to the driver. */
void pt__trace_note_driver_alloc(void);

/* A copy or a synchronize: begin before the backend call, end after it. */
typedef struct pt__trace_mark {
    int64_t t0;
    void *stamp0;
    uint64_t flow;
} pt__trace_mark;
void pt__trace_copy_begin(pt__trace_mark *m, const char *fn, pt_device *d, const char *dir,
                          size_t bytes, bool pinned);
/* blocking: the copy is complete when the backend call returns. */
void pt__trace_copy_end(pt__trace_mark *m, pt_device *d, const char *dir, bool blocking,
                        pt_status s);
void pt__trace_sync_begin(pt__trace_mark *m, const char *fn, pt_device *d);
/* Ends the span and writes the device spans d's completed queue now allows. */
void pt__trace_sync_end(pt__trace_mark *m, pt_device *d, pt_status s);
/* A span of the caller's making around many calls ("backward"). */
void pt__trace_region_begin(pt__trace_mark *m, const char *name, const char *fn, pt_device *d);
void pt__trace_region_end(pt__trace_mark *m, pt_device *d, pt_status s);
/* A capture on d that began at begin_ns and ended now (s: PT_OK, or why
 * no graph came of it): one span on this thread's graphs row. */
void pt__trace_capture(pt_device *d, int64_t begin_ns, int64_t graph, int32_t n_ops, pt_status s);
/* pt_graph_replay while tracing: the replay's span on this thread's graphs
 * row, holding a span per op with device stamps around each, as eager ops
 * have (one pair around the whole launch when the plugin replays the graph
 * itself). replay counts from 1. */
pt_status pt__trace_replay(pt_device *d, void **inst, const pt_op *ops, int32_t n_ops,
                           const int32_t *changed, int32_t n_changed, int64_t graph, int64_t replay);
/* pt_trace_end and process exit: waits for each device with pending device
 * spans (unless its backend was shut down) and writes them; then forgets
 * every pending stamp. */
void pt__trace_flush_devices(bool at_exit);

/* The untraced bodies the hooks wrap. */
pt_status pt__execute_untraced(const char *fn, pt_device *d, pt_op *op);
pt__block *pt__alloc_untraced(pt_device *d, size_t bytes, const char *fn);
void pt__free_untraced(pt_device *d, pt__block *b);

/* Device stamps (backend_calls.c; the backend.h default: none). */
bool pt__stamps_supported(const pt_device *d);
pt_status pt__stamp_record(pt_device *d, void **stamp);
pt_status pt__stamp_time(pt_device *d, void *stamp, int64_t *ns);
void pt__stamp_release(pt_device *d, void *stamp);

/* ---- The file (trace_writer.c) ---- */

/* CLOCK_MONOTONIC in nanoseconds: the trace's clock and the one backends
 * map their device times to. */
int64_t pt__trace_now_ns(void);
pt_status pt__trace_open(const char *fn, const char *path, size_t max_bytes);
/* Closes the file: PT_OK or PT_ERR_IO (naming fn) when a write failed. */
pt_status pt__trace_close(const char *fn);
/* The process track of d (its metadata written on first use), and the row
 * of the calling thread on it. */
int pt__trace_pid(const pt_device *d);
int pt__trace_host_tid(int pid);
#define PT__TRACE_QUEUE_TID 1
/* The calling thread's graphs row on track pid (named "graphs", or
 * "graphs thread N", on first use): its captures and replays. Its numbers
 * come after the host rows (100 and up) and pt_trace_span's (1000 and up),
 * so a program would need 1900 threads for a host row to meet them. */
int pt__trace_graph_tid(int pid);
#define PT__TRACE_GRAPH_TID_BASE 2000
/* The row ("thread") called row on track pid (named on first use there),
 * for pt_trace_span; -1 when the trace already has its 32 row names. row
 * holds no character JSON would need escaped. */
int pt__trace_row_tid(int pid, const char *row);
/* Appends one event (a JSON object without the separating comma); drops it
 * once the size cap is reached. */
void pt__trace_emit(const char *event, size_t len);
/* When the trace began (ns). */
int64_t pt__trace_origin_ns(void);
/* ns as microseconds with three decimals ("12.345"), into buf (>= 24
 * bytes), without floating point: printf's %f was half of a traced tiny
 * op's cost. */
char *pt__trace_format_us(int64_t ns, char *buf);
/* Chrome's "ts" (microseconds since the trace began) and "dur". */
#define PT__TRACE_TS(ns) pt__trace_format_us((ns)-pt__trace_origin_ns(), (char[24]){0})
#define PT__TRACE_US(ns) pt__trace_format_us((ns), (char[24]){0})
/* A process-unique id for a flow arrow. */
uint64_t pt__trace_next_flow(void);
#endif
