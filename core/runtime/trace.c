/* The public trace functions (include/portable/trace.h), PORTABLE_TRACE, and
 * the exit handler that closes a trace the program did not end. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

bool pt_trace_active(void) { return pt__tracing(); }

/* The rank a launcher gave this process (Open MPI, MPICH/PMI, PMIx,
 * SLURM), read from the environment before MPI is even initialised; "0"
 * outside a launcher. Only digits (at most 9) go into the path: anything
 * else there could name another folder. */
static const char *launcher_rank(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        size_t n = v ? strspn(v, "0123456789") : 0;
        if (n > 0 && n <= 9 && !v[n]) return v;
    }
    return "0";
}

/* PORTABLE_TRACE's path with %r replaced by the launcher's rank and %p by
 * the process id, so the processes of one job started with one environment
 * write a file each instead of all truncating the same one. */
static void expand_path(const char *in, char *out, size_t cap) {
    size_t n = 0;
    for (; *in && n + 1 < cap; in++) {
        char pid[24];
        const char *sub = NULL;
        if (in[0] == '%' && in[1] == 'r') sub = launcher_rank();
        if (in[0] == '%' && in[1] == 'p') {
            snprintf(pid, sizeof pid, "%ld", (long)getpid());
            sub = pid;
        }
        if (!sub) {
            out[n++] = *in;
            continue;
        }
        in++;
        for (; *sub && n + 1 < cap; sub++) out[n++] = *sub;
    }
    out[n] = '\0';
}

/* PORTABLE_TRACE starts a trace as the library loads, before any call, so
 * there is no caller to hand an error to: it goes to stderr. */
__attribute__((constructor)) static void trace_from_environment(void) {
    const char *env = getenv("PORTABLE_TRACE");
    if (!env || !*env) return;
    char path[4096];
    expand_path(env, path, sizeof path);
    if (begin("PORTABLE_TRACE", path, PT_TRACE_DEFAULT_MAX_BYTES) != PT_OK)
        fprintf(stderr, "libportable: %s (tracing is off)\n", pt_last_error());
}

int64_t pt_trace_clock_ns(void) { return pt__trace_now_ns(); }

#define SPAN_ARGS_MAX 2048

/* Whether s is a name the file can hold unescaped: 1..max bytes, none of
 * them '"', '\\' or a control character. */
static bool plain_name(const char *s, size_t max) {
    size_t n = 0;
    for (; s[n]; n++)
        if (s[n] == '"' || s[n] == '\\' || (unsigned char)s[n] < 0x20 || n >= max) return false;
    return n > 0;
}

/* A cheap guard against arguments that would break the whole file (an
 * unclosed string or bracket), not a JSON parser. */
static bool balanced(const char *s) {
    int depth = 0;
    bool in_string = false;
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c < 0x20) return false;
        if (in_string) {
            if (c == '\\') {
                if (!s[1]) return false;
                s++;
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (--depth < 0) return false;
        }
    }
    return depth == 0 && !in_string;
}

pt_status pt_trace_span(pt_device *d, const char *row, const char *name, int64_t begin_ns,
                        int64_t end_ns, const char *args_json) {
    static const char fn[] = "pt_trace_span";
    /* Checked with or without a trace, so a wrong call shows before the
     * one run that traces; callers skip the whole call with
     * pt_trace_active() when the cost matters. */
    if (!d) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "d (the device) is NULL");
    if (!row || !plain_name(row, 47))
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "row is %s; give 1 to 47 bytes without '\"', '\\' or control characters",
                         row ? "empty, too long or holds a forbidden character" : "NULL");
    if (!name || !plain_name(name, 63))
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "name is %s; give 1 to 63 bytes without '\"', '\\' or control characters",
                         name ? "empty, too long or holds a forbidden character" : "NULL");
    if (end_ns < begin_ns)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "span '%s' ends (%lld ns) before it begins (%lld ns)", name,
                         (long long)end_ns, (long long)begin_ns);
    if (args_json && (strlen(args_json) > SPAN_ARGS_MAX || !balanced(args_json)))
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "args_json of span '%s' is longer than %d bytes or has an unclosed "
                         "string, bracket or brace; give the members of a JSON object, "
                         "e.g. \"\\\"bytes\\\":4096\"",
                         name, SPAN_ARGS_MAX);
    if (!pt__tracing()) return PT_OK;
    const int pid = pt__trace_pid(d), tid = pt__trace_row_tid(pid, row);
    if (tid < 0)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "row '%s' would be the 33rd row name of this trace; reuse a row", row);
    char ev[SPAN_ARGS_MAX + 320];
    const int n = snprintf(ev, sizeof ev,
                           "{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"user\",\"pid\":%d,\"tid\":%d,"
                           "\"ts\":%s,\"dur\":%s,\"args\":{%s}}",
                           name, pid, tid, PT__TRACE_TS(begin_ns), PT__TRACE_US(end_ns - begin_ns),
                           args_json ? args_json : "");
    if (n > 0 && (size_t)n < sizeof ev) pt__trace_emit(ev, (size_t)n);
    return PT_OK;
}
