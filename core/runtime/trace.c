/* The public trace functions (include/portable/trace.h), PORTABLE_TRACE, and
 * the exit handler that closes a trace the program did not end. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "portable/trace.h"
#include "runtime/trace_internal.h"

atomic_bool pt__trace_on;

/* Serialises begin and end (and the exit handler) against each other. */
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static bool active, exit_handler_set;

static void close_at_exit(void) {
    pthread_mutex_lock(&state_lock);
    if (active) {
        pt__trace_flush_devices(true);
        atomic_store(&pt__trace_on, false);
        active = false;
        if (pt__trace_close("exit") != PT_OK)
            fprintf(stderr, "libportable: %s\n", pt_last_error());
    }
    pthread_mutex_unlock(&state_lock);
}

static pt_status begin(const char *fn, const char *path, size_t max_bytes) {
    if (!path || !*path)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "the trace path is %s; give a file name such as \"trace.json\"",
                         path ? "empty" : "NULL");
    if (max_bytes < 4096)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "max_bytes is %zu; a trace needs at least 4096 bytes", max_bytes);
    pthread_mutex_lock(&state_lock);
    pt_status s = PT_OK;
    if (active) {
        s = pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                      "a trace is already being written; call pt_trace_end() before "
                      "starting another (path given: '%s')",
                      path);
    } else {
        s = pt__trace_open(fn, path, max_bytes);
        if (s == PT_OK) {
            active = true;
            if (!exit_handler_set) exit_handler_set = atexit(close_at_exit) == 0;
            atomic_store(&pt__trace_on, true);
        }
    }
    pthread_mutex_unlock(&state_lock);
    return s;
}

pt_status pt_trace_begin(const char *path) {
    return begin("pt_trace_begin", path, PT_TRACE_DEFAULT_MAX_BYTES);
}

pt_status pt_trace_begin_capped(const char *path, size_t max_bytes) {
    return begin("pt_trace_begin_capped", path, max_bytes);
}

pt_status pt_trace_end(void) {
    pthread_mutex_lock(&state_lock);
    pt_status s;
    if (!active) {
        s = pt__error(PT_ERR_INVALID_ARGUMENT, "pt_trace_end",
                      "no trace is being written; start one with pt_trace_begin(path)");
    } else {
        pt__trace_flush_devices(false);
        atomic_store(&pt__trace_on, false);
        active = false;
        s = pt__trace_close("pt_trace_end");
    }
    pthread_mutex_unlock(&state_lock);
    return s;
}

bool pt_trace_active(void) { return atomic_load(&pt__trace_on); }

/* PORTABLE_TRACE starts a trace as the library loads, before any call, so
 * there is no caller to hand an error to: it goes to stderr. */
__attribute__((constructor)) static void trace_from_environment(void) {
    const char *path = getenv("PORTABLE_TRACE");
    if (!path || !*path) return;
    if (begin("PORTABLE_TRACE", path, PT_TRACE_DEFAULT_MAX_BYTES) != PT_OK)
        fprintf(stderr, "libportable: %s (tracing is off)\n", pt_last_error());
}
