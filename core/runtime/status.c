/* Status names and the thread-local last error.
 *
 * Plugins report through the host API's set_error, which parks the message in
 * a separate thread-local slot; the core then prefixes it with the public
 * function and device (pt__backend_failed) so the user sees one message that
 * names where it happened and why. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

#define PT__MESSAGE_CAP 2048

/* The statuses are thread-locals of their own (a few bytes each); the
 * messages live in a per-thread block on the heap, made at a thread's first
 * error and freed when the thread exits, so that the library's TLS block
 * stays small enough to be dlopen'ed (see PT__HOT_TLS). */
typedef struct error_state {
    char last_message[PT__MESSAGE_CAP];
    char backend_message[PT__MESSAGE_CAP];
    char taken[PT__MESSAGE_CAP]; /* pt__take_backend_message's copy */
} error_state;

static PT__HOT_TLS pt_status last_status = PT_OK;
static PT__HOT_TLS pt_status backend_status = PT_OK;
static PT__HOT_TLS error_state *errors;

/* Said when a thread's error block cannot be allocated (the status is still
 * exact). */
static const char no_room[] = "(no message: out of host memory for this thread's error messages)";

static pthread_key_t errors_key;
static pthread_once_t errors_key_once = PTHREAD_ONCE_INIT;
static bool errors_key_made;

static void errors_at_thread_exit(void *block) {
    errors = NULL;
    free(block);
}

static void make_errors_key(void) {
    errors_key_made = pthread_key_create(&errors_key, errors_at_thread_exit) == 0;
}

/* This thread's message block, made on first use; NULL when out of memory. */
static error_state *thread_errors(void) {
    if (errors) return errors;
    pthread_once(&errors_key_once, make_errors_key);
    error_state *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    /* Without a key the block would outlive the thread: that is the only
     * cost, so it is still used. */
    if (errors_key_made) pthread_setspecific(errors_key, e);
    errors = e;
    return e;
}

const char *pt_status_name(pt_status s) {
    switch (s) {
#define PT__STATUS_NAME(name, message) \
    case name:                        \
        return #name;
        PT_STATUS_TABLE(PT__STATUS_NAME)
#undef PT__STATUS_NAME
    default:
        return "PT_UNKNOWN_STATUS";
    }
}

const char *pt_status_message(pt_status s) {
    switch (s) {
#define PT__STATUS_MESSAGE(name, message) \
    case name:                           \
        return message;
        PT_STATUS_TABLE(PT__STATUS_MESSAGE)
#undef PT__STATUS_MESSAGE
    default:
        return "unknown status";
    }
}

pt_status pt_last_status(void) { return last_status; }

const char *pt_last_error(void) {
    if (errors) return errors->last_message;
    return last_status == PT_OK ? "" : no_room;
}

void pt_clear_error(void) {
    last_status = PT_OK;
    if (errors) errors->last_message[0] = '\0';
}

pt_status pt__error_as(const char *fn) {
    if (last_status == PT_OK) return PT_OK;
    error_state *e = errors;
    size_t n = strlen(fn);
    if (!e || (strncmp(e->last_message, fn, n) == 0 && e->last_message[n] == ':')) return last_status;
    char inner[PT__MESSAGE_CAP];
    memcpy(inner, e->last_message, sizeof inner);
    snprintf(e->last_message, sizeof e->last_message, "%s: %s", fn, inner);
    return last_status;
}

/* Records s and "fn: <message>" as this thread's last error. */
static pt_status set_error_v(pt_status s, const char *fn, const char *fmt, va_list ap) {
    char detail[PT__MESSAGE_CAP];
    vsnprintf(detail, sizeof detail, fmt, ap);
    last_status = s;
    error_state *e = thread_errors();
    if (e) snprintf(e->last_message, sizeof e->last_message, "%s: %s", fn, detail);
    return s;
}

pt_status pt__error(pt_status s, const char *fn, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_error_v(s, fn, fmt, ap);
    va_end(ap);
    return s;
}

/* The public door to the same record, for code built on the library. */
pt_status pt_set_error(pt_status s, const char *fn, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_error_v(s, fn ? fn : "?", fmt, ap);
    va_end(ap);
    return s;
}

pt_status pt__backend_failed(pt_status s, const char *fn, const pt_device *d) {
    error_state *e = errors;
    const char *why = backend_status != PT_OK && e && e->backend_message[0] ? e->backend_message
                                                                          : pt_status_message(s);
    pt__error(s, fn, "%s: %s", pt_device_name(d), why);
    backend_status = PT_OK;
    if (e) e->backend_message[0] = '\0';
    return s;
}

const char *pt__take_backend_message(void) {
    error_state *e = thread_errors();
    backend_status = PT_OK;
    if (!e) return no_room;
    snprintf(e->taken, sizeof e->taken, "%s", e->backend_message[0] ? e->backend_message : "no reason given");
    e->backend_message[0] = '\0';
    return e->taken;
}

static void host_set_error(pt_status s, const char *fmt, ...) {
    backend_status = s;
    error_state *e = thread_errors();
    if (!e) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->backend_message, sizeof e->backend_message, fmt, ap);
    va_end(ap);
}

static void host_log(pt_log_level level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pt__vlog(level, fmt, ap);
    va_end(ap);
}

const pt_host_api *pt__host_api(void) {
    static const pt_host_api api = {
        .struct_size = sizeof(pt_host_api),
        .abi_version = PT_BACKEND_ABI_VERSION,
        .set_error = host_set_error,
        .log = host_log,
        .device_alloc = pt__plugin_device_alloc,
        .device_free = pt__plugin_device_free,
        .env_int = pt_env_int,
        .env_choice = pt_env_choice,
    };
    return &api;
}

char *pt__shape_str(int ndim, const int64_t *shape, char *buf, size_t cap) {
    size_t used = 0;
    used += (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && used < cap; ++i)
        used += (size_t)snprintf(buf + used, cap - used, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (used < cap) snprintf(buf + used, cap - used, "]");
    return buf;
}
