/* Reading a libportable trace with cJSON: the file's text and the few
 * accessors both `portable trace summary` and the trace test use. */
#ifndef PORTABLE_TOOL_TRACE_JSON_H
#define PORTABLE_TOOL_TRACE_JSON_H

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The parsed file, or NULL when it cannot be read or is not JSON. */
static inline cJSON *trace_json_load(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *text = malloc(cap);
    while (text) {
        if (n + 1 == cap) {
            char *grown = realloc(text, cap *= 2);
            if (!grown) break;
            text = grown;
        }
        size_t got = fread(text + n, 1, cap - n - 1, f);
        if (got == 0) break;
        n += got;
    }
    fclose(f);
    if (!text) return NULL;
    text[n] = '\0';
    cJSON *root = cJSON_Parse(text);
    free(text);
    return root;
}

static inline const char *trace_json_str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static inline double trace_json_num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static inline const cJSON *trace_json_args(const cJSON *e) {
    return cJSON_GetObjectItemCaseSensitive(e, "args");
}

#endif
