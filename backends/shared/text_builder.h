/* libportable plugins — a growing text for generated kernel source (the
 * OpenCL and CUDA plugins write fused chains' kernels with it).
 *
 * pt_text_put appends printf-style; a text with `off` set takes nothing
 * (a dry run that only checks a chain can be written), and one that ran
 * out of memory or failed to format stops growing and keeps `failed` set,
 * so callers check once at the end. Header-only: each plugin is its own
 * shared object and carries its own copy. */
#ifndef PORTABLE_PLUGIN_TEXT_BUILDER_H
#define PORTABLE_PLUGIN_TEXT_BUILDER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "portable/export.h"

typedef struct pt_text {
    char *s; /* NUL-terminated once anything was put; NULL before */
    size_t len, cap;
    bool off, failed;
} pt_text;

static inline void pt_text_put(pt_text *t, const char *fmt, ...) PT_PRINTF(2, 3);
static inline void pt_text_put(pt_text *t, const char *fmt, ...) {
    if (t->off || t->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        const int n = vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = true;
            return;
        }
        if (t->s && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap ? 2 * t->cap : 4096;
        while (cap < t->len + (size_t)n + 1) cap *= 2;
        char *grown = realloc(t->s, cap);
        if (!grown) {
            t->failed = true;
            return;
        }
        t->s = grown;
        t->cap = cap;
    }
}

#endif
