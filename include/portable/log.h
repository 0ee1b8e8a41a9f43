/** @file
 * libportable — diagnostics: where the library's messages go.
 *
 * The library and its plugins report what is worth knowing but is no error
 * (a bad environment variable, a driver quirk, a fallback taken) as log
 * messages. By default they go to stderr as "portable [warn]: <message>";
 * pt_set_log_handler routes them into an application's own log, as
 * ggml_log_set does. PORTABLE_LOG (debug, info, warn (default) or off)
 * decides which levels are delivered, to the handler or to stderr. */
#ifndef PORTABLE_LOG_H
#define PORTABLE_LOG_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Severity of a diagnostic; PORTABLE_LOG picks the lowest delivered.
 * Append only: the values are part of the plugin ABI. */
typedef enum pt_log_level { PT_LOG_DEBUG = 0, PT_LOG_INFO, PT_LOG_WARN } pt_log_level;

/** Receives one message: no "portable [level]:" prefix and no trailing
 * newline; message is valid only during the call. It may be called from
 * any thread the library or a plugin runs on, also concurrently, so it must
 * be thread-safe; it must not call back into libportable. */
typedef void (*pt_log_fn)(pt_log_level level, const char *message, void *user);

/** Sends every later message to fn(level, message, user) instead of stderr;
 * fn NULL goes back to stderr. Takes effect for all threads at once; a
 * message being delivered while the handler changes goes to either. Never
 * fails. */
PT_API void pt_set_log_handler(pt_log_fn fn, void *user);
/** Emits a message through the current handler (or stderr) when PORTABLE_LOG
 * lets its level through: for companion libraries built on the public API
 * (libportable-dist) and for applications that want their messages on the
 * same path. fmt NULL or a level outside the enum emits nothing. */
PT_API void pt_log_message(pt_log_level level, const char *fmt, ...) PT_PRINTF(2, 3);

#ifdef __cplusplus
}
#endif
#endif
