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

static _Thread_local pt_status last_status = PT_OK;
static _Thread_local char last_message[PT__MESSAGE_CAP];
static _Thread_local pt_status backend_status = PT_OK;
static _Thread_local char backend_message[PT__MESSAGE_CAP];

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
const char *pt_last_error(void) { return last_message; }

void pt_clear_error(void) {
    last_status = PT_OK;
    last_message[0] = '\0';
}

pt_status pt__error(pt_status s, const char *fn, const char *fmt, ...) {
    char detail[PT__MESSAGE_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    last_status = s;
    snprintf(last_message, sizeof last_message, "%s: %s", fn, detail);
    return s;
}

pt_status pt__backend_failed(pt_status s, const char *fn, const pt_device *d) {
    const char *why = backend_status != PT_OK && backend_message[0] ? backend_message
                                                                    : pt_status_message(s);
    pt__error(s, fn, "%s: %s", pt_device_name(d), why);
    backend_status = PT_OK;
    backend_message[0] = '\0';
    return s;
}

const char *pt__take_backend_message(void) {
    static _Thread_local char taken[PT__MESSAGE_CAP];
    snprintf(taken, sizeof taken, "%s", backend_message[0] ? backend_message : "no reason given");
    backend_status = PT_OK;
    backend_message[0] = '\0';
    return taken;
}

static void host_set_error(pt_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(backend_message, sizeof backend_message, fmt, ap);
    va_end(ap);
    backend_status = s;
}

/* PORTABLE_LOG=debug|info|warn; warnings are on by default. */
static pt_log_level log_threshold(void) {
    static int cached = -1;
    if (cached < 0) {
        const char *v = getenv("PORTABLE_LOG");
        cached = PT_LOG_WARN;
        if (v && strcmp(v, "debug") == 0) cached = PT_LOG_DEBUG;
        if (v && strcmp(v, "info") == 0) cached = PT_LOG_INFO;
        if (v && strcmp(v, "off") == 0) cached = PT_LOG_WARN + 1;
    }
    return (pt_log_level)cached;
}

static void host_log(pt_log_level level, const char *fmt, ...) {
    if (level < log_threshold()) return;
    static const char *names[] = {"debug", "info", "warn"};
    char line[PT__MESSAGE_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "portable [%s]: %s\n", names[level], line);
}

const pt_host_api *pt__host_api(void) {
    static const pt_host_api api = {
        .struct_size = sizeof(pt_host_api),
        .abi_version = PT_BACKEND_ABI_VERSION,
        .set_error = host_set_error,
        .log = host_log,
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
