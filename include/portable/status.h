/** @file
 * libportable — status codes and the thread-local last error.
 *
 * Every public function that can fail either returns a pt_status (PT_OK on
 * success) or returns NULL (handles) / NAN (pt_item). In both cases the
 * calling thread's last error holds the status and a message naming the
 * function, the offending values and the fix. Tensor ops given a NULL input
 * return NULL and keep the first error, so a chain of calls fails once and
 * can be checked at its end. */
#ifndef PORTABLE_STATUS_H
#define PORTABLE_STATUS_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One table, so the enum and its names cannot drift apart. Append only:
 * the numeric values are part of the plugin ABI. */
#define PT_STATUS_TABLE(X)                                                           \
    X(PT_OK, "ok")                                                                   \
    X(PT_ERR_INVALID_ARGUMENT, "invalid argument")                                   \
    X(PT_ERR_SHAPE, "shape mismatch")                                                \
    X(PT_ERR_DTYPE, "dtype mismatch or unsupported dtype")                           \
    X(PT_ERR_DEVICE_MISMATCH, "operands are on different devices")                   \
    X(PT_ERR_NO_DEVICE, "no such device")                                            \
    X(PT_ERR_BACKEND_LOAD, "backend plugin could not be loaded")                     \
    X(PT_ERR_OUT_OF_MEMORY, "out of memory")                                         \
    X(PT_ERR_UNSUPPORTED, "operation not supported by this backend")                 \
    X(PT_ERR_IO, "input/output error")                                               \
    X(PT_ERR_BACKEND, "backend or driver error")                                     \
    X(PT_ERR_INTERNAL, "internal error")

/** What a call came to: PT_OK (0) or the class of its error, one per row of
 * PT_STATUS_TABLE; PT_STATUS_COUNT is their number. Append only. The last
 * error (pt_last_error) holds the message of the failure. */
typedef enum pt_status {
#define PT_STATUS_ENUM_ENTRY(name, message) name,
    PT_STATUS_TABLE(PT_STATUS_ENUM_ENTRY)
#undef PT_STATUS_ENUM_ENTRY
        PT_STATUS_COUNT
} pt_status;

/** "PT_ERR_SHAPE" etc.; "PT_UNKNOWN_STATUS" for values outside the table. */
PT_API const char *pt_status_name(pt_status s);
/** A short description of the status class ("shape mismatch"). */
PT_API const char *pt_status_message(pt_status s);
/** The status of the last failure on this thread (PT_OK if none since the
 * last pt_clear_error). */
PT_API pt_status pt_last_status(void);
/** The message of the last failure on this thread, "" if none. Valid until the
 * next failing call on this thread. */
PT_API const char *pt_last_error(void);
/** Forget the last error on this thread. */
PT_API void pt_clear_error(void);
/** Sets this thread's last error to s with the message "fn: <formatted>" and
 * returns s. For companion libraries built on the public API (libportable-dist)
 * so that their failures read like the core's: one last error per thread. */
PT_API pt_status pt_set_error(pt_status s, const char *fn, const char *fmt, ...) PT_PRINTF(3, 4);

#ifdef __cplusplus
}
#endif
#endif
