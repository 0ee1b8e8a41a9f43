/* The one parser of environment variables (include/portable/env.h): the
 * core, the plugins (through the host API) and libportable-dist read every
 * PORTABLE_* variable here, so a bad value is always reported the same way:
 * a warning naming the variable, its value, what is accepted and the
 * default used instead. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

/* The value, or NULL when unset or empty (both mean "the default"). */
static const char *value_of(const char *name) {
    const char *v = name ? getenv(name) : NULL;
    return v && *v ? v : NULL;
}

int pt__env_choice_quiet(const char *name, const char *const *choices, int fallback, bool *bad) {
    *bad = false;
    const char *v = value_of(name);
    if (!v || !choices) return fallback;
    for (int i = 0; choices[i]; ++i)
        if (strcmp(v, choices[i]) == 0) return i;
    *bad = true;
    return fallback;
}

void pt__env_warn_choice(const char *name, const char *const *choices, int fallback) {
    char accepted[256] = "";
    size_t used = 0;
    for (int i = 0; choices[i] && used < sizeof accepted; ++i)
        used += (size_t)snprintf(accepted + used, sizeof accepted - used, "%s%s", i ? ", " : "",
                                 choices[i]);
    int n = 0;
    while (choices[n]) ++n;
    const char *v = value_of(name);
    pt_log_message(PT_LOG_WARN, "%s='%.64s' is not understood; accepted: %s; using %s", name, v ? v : "",
           accepted, fallback >= 0 && fallback < n ? choices[fallback] : "the default");
}

int pt_env_choice(const char *name, const char *const *choices, int fallback) {
    bool bad;
    int i = pt__env_choice_quiet(name, choices, fallback, &bad);
    if (bad) pt__env_warn_choice(name, choices, fallback);
    return i;
}

int64_t pt_env_int(const char *name, int64_t lo, int64_t hi, int64_t fallback) {
    const char *v = value_of(name);
    if (!v || lo > hi) return fallback;
    char *end = NULL;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    bool number = end != v && *end == '\0' && errno == 0;
    if (number && n >= lo && n <= hi) return (int64_t)n;
    pt_log_message(PT_LOG_WARN, "%s='%.64s' is %s; accepted: an integer from %" PRId64 " to %" PRId64
           "; using %" PRId64,
           name, v, number ? "out of range" : "not an integer", lo, hi, fallback);
    return fallback;
}

double pt_env_double(const char *name, double lo, double hi, int zero_ok, double fallback) {
    const char *v = value_of(name);
    if (!v || !(lo <= hi)) return fallback;
    char *end = NULL;
    double x = strtod(v, &end);
    bool number = end != v && *end == '\0' && isfinite(x);
    if (number && ((x >= lo && x <= hi) || (zero_ok && x == 0))) return x;
    char range[80];
    if (isinf(hi)) snprintf(range, sizeof range, "a number >= %g", lo);
    else snprintf(range, sizeof range, "a number from %g to %g", lo, hi);
    pt_log_message(PT_LOG_WARN, "%s='%.64s' is %s; accepted: %s%s; using %g", name, v,
                   number ? "out of range" : "not a finite number", zero_ok ? "0 or " : "", range,
                   fallback);
    return fallback;
}
