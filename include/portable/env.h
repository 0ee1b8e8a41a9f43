/** @file
 * libportable — reading settings from the environment.
 *
 * Every PORTABLE_* variable the library, its plugins and libportable-dist
 * read goes through these helpers (plugins reach them through the host API,
 * backend.h), so every one is checked the same way: unset or empty means
 * the default; a value that is not accepted is never taken silently, but
 * logged as a warning (log.h) naming the variable, the value, what is
 * accepted and the default used instead. The README's table lists every
 * variable. Variables whose bad value cannot be guessed around
 * (PORTABLE_BACKEND) are errors at the call that reads them instead. */
#ifndef PORTABLE_ENV_H
#define PORTABLE_ENV_H

#include <stdint.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** name's value as a decimal integer in [lo, hi] (optional sign, no other
 * characters); fallback when unset or empty, and, with a warning, when it
 * is not such an integer. name NULL or lo > hi: fallback, no warning. */
PT_API int64_t pt_env_int(const char *name, int64_t lo, int64_t hi, int64_t fallback);
/** name's value as a finite number (strtod syntax) in [lo, hi], or exactly 0
 * when zero_ok; fallback otherwise, as pt_env_int. */
PT_API double pt_env_double(const char *name, double lo, double hi, int zero_ok, double fallback);
/** The index of name's value in choices (a NULL-terminated list of accepted
 * spellings, compared exactly); fallback when unset or empty, and, with a
 * warning that lists the choices, when it is none of them. name or choices
 * NULL: fallback, no warning. */
PT_API int pt_env_choice(const char *name, const char *const *choices, int fallback);

#ifdef __cplusplus
}
#endif
#endif
