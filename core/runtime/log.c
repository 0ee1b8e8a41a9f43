/* Where diagnostics go (include/portable/log.h): the core's and the
 * plugins' messages (host API log member) pass the PORTABLE_LOG threshold,
 * then reach the application's handler or stderr. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include "runtime/runtime.h"

static pthread_mutex_t handler_lock = PTHREAD_MUTEX_INITIALIZER;
static pt_log_fn handler;
static void *handler_user;

void pt_set_log_handler(pt_log_fn fn, void *user) {
    pthread_mutex_lock(&handler_lock);
    handler = fn;
    handler_user = user;
    pthread_mutex_unlock(&handler_lock);
}

/* PORTABLE_LOG, read once. Its own bad value is reported after the read,
 * through the threshold just set (a warning from inside the read would
 * wait for the read to finish). */
static const char *const log_levels[] = {"debug", "info", "warn", "off", NULL};
static int threshold = PT_LOG_WARN;
static bool log_value_bad;
static atomic_bool log_value_reported;
static pthread_once_t threshold_once = PTHREAD_ONCE_INIT;

static void read_threshold(void) {
    threshold = pt__env_choice_quiet("PORTABLE_LOG", log_levels, PT_LOG_WARN, &log_value_bad);
}

void pt__log_init(void) {
    pthread_once(&threshold_once, read_threshold);
    if (log_value_bad && !atomic_exchange(&log_value_reported, true))
        pt__env_warn_choice("PORTABLE_LOG", log_levels, PT_LOG_WARN);
}

void pt__vlog(pt_log_level level, const char *fmt, va_list ap) {
    pt__log_init();
    if (!fmt || (unsigned)level > PT_LOG_WARN || (int)level < threshold) return;
    static const char *const names[] = {"debug", "info", "warn"};
    char line[2048]; /* as long as an error message */
    vsnprintf(line, sizeof line, fmt, ap);
    pthread_mutex_lock(&handler_lock);
    pt_log_fn fn = handler;
    void *user = handler_user;
    pthread_mutex_unlock(&handler_lock);
    if (fn) fn(level, line, user);
    else fprintf(stderr, "portable [%s]: %s\n", names[level], line);
}

void pt_log_message(pt_log_level level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pt__vlog(level, fmt, ap);
    va_end(ap);
}
