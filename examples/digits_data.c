/* Reading the digits data set with zlib; see digits_data.h. */
#define _GNU_SOURCE /* readlink */
#include "digits_data.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static int readable(const char *path) { return access(path, R_OK) == 0; }

int digits_find(const char *explicit_path, char *buf, size_t cap) {
    if (explicit_path) {
        snprintf(buf, cap, "%s", explicit_path);
        return 0;
    }
    char tried[2048] = "";
    const char *env = getenv("PORTABLE_DATA_DIR");
    if (env && *env) {
        snprintf(buf, cap, "%s/digits.csv.gz", env);
        if (readable(buf)) return 0;
        snprintf(tried + strlen(tried), sizeof tried - strlen(tried), " %s", buf);
    }
    char exe[1024];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        static const char *const rel[] = {"data", "../examples/data", "../../examples/data", "../../../examples/data"};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; ++i) {
            snprintf(buf, cap, "%s/%s/digits.csv.gz", exe, rel[i]);
            if (readable(buf)) return 0;
            snprintf(tried + strlen(tried), sizeof tried - strlen(tried), " %s", buf);
        }
    }
#ifdef DIGITS_SOURCE_DIR
    snprintf(buf, cap, "%s/digits.csv.gz", DIGITS_SOURCE_DIR);
    if (readable(buf)) return 0;
    snprintf(tried + strlen(tried), sizeof tried - strlen(tried), " %s", buf);
#endif
    snprintf(buf, cap,
             "digits.csv.gz not found (tried:%s); pass its path or set PORTABLE_DATA_DIR to the "
             "directory holding it (examples/data in the source tree)",
             tried);
    return -1;
}

int digits_load(const char *path, digits *out, char *err, size_t errcap) {
    memset(out, 0, sizeof *out);
    gzFile f = gzopen(path, "rb");
    if (!f) {
        snprintf(err, errcap, "%s: cannot open: %s", path, errno ? strerror(errno) : "zlib error");
        return -1;
    }
    int cap = 2048;
    out->pixels = malloc((size_t)cap * DIGITS_FEATURES * sizeof *out->pixels);
    out->labels = malloc((size_t)cap * sizeof *out->labels);
    char line[1024];
    int rc = 0;
    while (rc == 0 && out->pixels && out->labels && gzgets(f, line, sizeof line)) {
        if (line[0] == '\n' || line[0] == '\0') continue;
        if (out->n == cap) {
            cap *= 2;
            float *p = realloc(out->pixels, (size_t)cap * DIGITS_FEATURES * sizeof *p);
            int64_t *l = p ? realloc(out->labels, (size_t)cap * sizeof *l) : NULL;
            if (p) out->pixels = p;
            if (l) out->labels = l;
            if (!p || !l) break;
        }
        char *s = line, *end;
        for (int k = 0; k <= DIGITS_FEATURES; ++k) {
            long v = strtol(s, &end, 10);
            bool sep_ok = k < DIGITS_FEATURES ? *end == ',' : (*end == '\n' || *end == '\r' || *end == '\0');
            if (end == s || !sep_ok || v < 0 || v > (k < DIGITS_FEATURES ? 16 : 9)) {
                snprintf(err, errcap, "%s: line %d, field %d: expected %s", path, out->n + 1, k + 1,
                         k < DIGITS_FEATURES ? "a pixel 0..16 and a comma" : "a label 0..9 at the end");
                rc = -1;
                break;
            }
            if (k < DIGITS_FEATURES) out->pixels[(size_t)out->n * DIGITS_FEATURES + k] = (float)v / 16.0f;
            else out->labels[out->n] = v;
            s = end + 1;
        }
        if (rc == 0) ++out->n;
    }
    if (rc == 0 && (!out->pixels || !out->labels)) {
        snprintf(err, errcap, "%s: out of memory", path);
        rc = -1;
    }
    int zerr = 0;
    const char *zmsg = gzerror(f, &zerr);
    if (rc == 0 && zerr != Z_OK && zerr != Z_STREAM_END) {
        snprintf(err, errcap, "%s: read error: %s", path, zmsg);
        rc = -1;
    }
    gzclose(f);
    if (rc == 0 && out->n == 0) {
        snprintf(err, errcap, "%s: no rows", path);
        rc = -1;
    }
    if (rc != 0) digits_free(out);
    return rc;
}

static uint64_t lcg_next(uint64_t *state) {
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return *state >> 33;
}

void digits_permutation(int n, uint64_t seed, int *order) {
    uint64_t state = seed ^ 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < n; ++i) order[i] = i;
    for (int i = n - 1; i > 0; --i) {
        int j = (int)(lcg_next(&state) % (uint64_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

void digits_gather(const digits *d, const int *order, int first, int count, float *pixels, int64_t *labels) {
    for (int i = 0; i < count; ++i) {
        int row = order ? order[first + i] : first + i;
        memcpy(pixels + (size_t)i * DIGITS_FEATURES, d->pixels + (size_t)row * DIGITS_FEATURES,
               DIGITS_FEATURES * sizeof *pixels);
        labels[i] = d->labels[row];
    }
}

static int take(const digits *all, const int *order, int first, int count, digits *out) {
    out->n = count;
    out->pixels = malloc((size_t)(count ? count : 1) * DIGITS_FEATURES * sizeof *out->pixels);
    out->labels = malloc((size_t)(count ? count : 1) * sizeof *out->labels);
    if (!out->pixels || !out->labels) {
        digits_free(out);
        return -1;
    }
    digits_gather(all, order, first, count, out->pixels, out->labels);
    return 0;
}

int digits_split(const digits *all, uint64_t seed, double train_fraction, digits *train, digits *test) {
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    int *order = malloc((size_t)all->n * sizeof *order);
    if (!order) return -1;
    digits_permutation(all->n, seed, order);
    int n_train = (int)(train_fraction * all->n + 0.5);
    int rc = take(all, order, 0, n_train, train);
    if (rc == 0) rc = take(all, order, n_train, all->n - n_train, test);
    if (rc != 0) digits_free(train);
    free(order);
    return rc;
}

void digits_free(digits *d) {
    free(d->pixels);
    free(d->labels);
    d->pixels = NULL;
    d->labels = NULL;
    d->n = 0;
}
