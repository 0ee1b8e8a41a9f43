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
 *   - counters: memory in use and cached per device.
 * Device spans are written when the host next synchronises that device (or
 * at pt_trace_end), so a program that never waits shows only host spans.
 *
 * The environment variable PORTABLE_TRACE=path.json starts a trace when the
 * library loads (a path that cannot be opened is reported on stderr). The
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
/** Whether a trace is being written. */
PT_API bool pt_trace_active(void);

#ifdef __cplusplus
}
#endif
#endif
