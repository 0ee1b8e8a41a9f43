/** @file
 * libportable — tracing: what the host and the devices did, as a Chrome
 * trace-event JSON file (open it in https://ui.perfetto.dev or
 * chrome://tracing, or summarise it with `portable trace summary FILE`).
 *
 * One process track per device, with a row per host thread that called the
 * library ("host") and one for the device's queue ("queue"):
 *   - host spans per op (its name as the API spells it: "add", "matmul";
 *     args: the public function, dtype, shapes, device), per copy
 *     (direction h2d/d2h/d2d/peer, bytes, pinned), per allocation (bytes,
 *     whether the driver was called or the cache served it) and per
 *     synchronise (why: the public function that waited);
 *   - device spans per op and copy from the backend's own clock (OpenCL
 *     profiling events, CUDA events, host timestamps on cpu), with a flow
 *     arrow from each enqueue to its execution; a backend without device
 *     timing has an empty queue row;
 *   - a "graphs" row per thread that captured or replayed a graph
 *     (portable/graph.h): a span per capture ("graph N capture (K ops)")
 *     and per replay ("graph N replay R (K ops)"), the replay's ops as
 *     spans inside it, with their device spans on the queue row as eager
 *     ops have; an op a capture records (runs nothing) is a host span of
 *     cat "record";
 *   - counters: memory in use and cached per device.
 * Device spans are written when the host next synchronises that device (or
 * at pt_trace_end), so a program that never waits shows only host spans.
 *
 * The environment variable PORTABLE_TRACE=path.json starts a trace when the
 * library loads (a path that cannot be opened is reported on stderr); in
 * it, %r becomes the rank an MPI or SLURM launcher gave the process (0
 * without one) and %p the process id, so each process of a job writes a
 * file of its own. The
 * file is written as the program runs and closed, valid, by pt_trace_end or
 * at normal process exit. It stops growing at its size cap: later events
 * are dropped and the file says "truncated": true, still valid JSON.
 *
 * Off, tracing costs one predictable branch per op, copy and allocation;
 * on, see docs/tracing.md for the measured cost per op. */
#ifndef PORTABLE_TRACE_H
#define PORTABLE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "export.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The size cap pt_trace_begin uses: 256 MiB (about two million ops). */
#define PT_TRACE_DEFAULT_MAX_BYTES ((size_t)256 << 20)

/** Starts writing a trace to path (created or truncated), capped at
 * PT_TRACE_DEFAULT_MAX_BYTES. Errors: PT_ERR_INVALID_ARGUMENT for a NULL or
 * empty path or while another trace is being written (end it first);
 * PT_ERR_IO when path cannot be opened for writing (the message names the
 * path and the system's reason). Nothing is traced after a failure. */
PT_API pt_status pt_trace_begin(const char *path);
/** pt_trace_begin with a size cap of max_bytes (at least 4096: PT_ERR_INVALID_ARGUMENT below). */
PT_API pt_status pt_trace_begin_capped(const char *path, size_t max_bytes);
/** Waits for every device that has device spans pending, writes them, and
 * closes the file. PT_ERR_INVALID_ARGUMENT when no trace is being written;
 * PT_ERR_IO when writing or closing the file failed (a full disk, say). */
PT_API pt_status pt_trace_end(void);
/** Whether a trace is being written. One load and branch: guard the
 * formatting of a pt_trace_span's arguments with it. */
PT_API bool pt_trace_active(void);

/** The trace's clock, in nanoseconds: CLOCK_MONOTONIC, the clock every span
 * in the file is on, so begin_ns and end_ns of pt_trace_span come from it.
 * Works whether or not a trace is being written. */
PT_API int64_t pt_trace_clock_ns(void);

/** Writes one span of the caller's own making: name from begin_ns to end_ns
 * (pt_trace_clock_ns values) on the row called row of device d's process
 * track, below its "host" and "queue" rows. Each distinct row name gets a
 * row ("thread") of its own, shared by every thread that writes to it, so
 * spans on one row should not overlap: keep a row per sequence of work (a
 * communication thread, a pipeline stage). libportable-dist writes its
 * collectives on "collectives" and DDP buckets on "ddp buckets".
 *
 * args_json is NULL or the members of a JSON object, written as given into
 * the span's "args", e.g. "\"bucket\":3,\"bytes\":4096" (at most 2048
 * bytes; it is checked for balanced quotes, brackets and braces, not
 * parsed). name (at most 63 bytes) and row (at most 47) must not contain
 * '"', '\\' or control characters. Nothing is copied or retained; the span
 * is appended to the file before the call returns (dropped past the size
 * cap), from any thread.
 *
 * The arguments are checked whether or not a trace is being written (a
 * wrong call shows without one); with none, it then returns PT_OK and
 * writes nothing, so guard the call with pt_trace_active() where its cost
 * matters. Errors: PT_ERR_INVALID_ARGUMENT for a NULL d, name or row, a
 * name or row that is empty, too long or holds a forbidden character,
 * end_ns before begin_ns, args_json too long or unbalanced, or, while
 * tracing, more than 32 distinct row names in one trace. */
PT_API pt_status pt_trace_span(pt_device *d, const char *row, const char *name, int64_t begin_ns,
                               int64_t end_ns, const char *args_json);

#ifdef __cplusplus
}
#endif
#endif
