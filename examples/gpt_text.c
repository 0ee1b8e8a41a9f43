/* gpt_train's text (gpt_text.h). */
#include "gpt_text.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int read_file(const char *path, unsigned char **data, int64_t *size, char *err, size_t errcap) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errcap, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 20, len = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap) break;
        unsigned char *grown = realloc(buf, cap * 2);
        if (!grown) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    const int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        snprintf(err, errcap, "cannot read %s: %s", path, buf ? "read error" : "out of host memory");
        free(buf);
        return -1;
    }
    *data = buf;
    *size = (int64_t)len;
    return 0;
}

int gpt_text_load(const char *path, int64_t min_tokens, gpt_text *out, char *err, size_t errcap) {
    memset(out, 0, sizeof *out);
    unsigned char *data = NULL;
    int64_t n = 0;
    if (read_file(path, &data, &n, err, errcap) != 0) return -1;
    const int64_t n_train = n * 9 / 10;
    if (n_train < min_tokens || n - n_train < min_tokens) {
        snprintf(err, errcap,
                 "%s has %lld characters: too short for a 90/10 split with %lld or more in each part (give a "
                 "longer text or a shorter --context)",
                 path, (long long)n, (long long)min_tokens);
        free(data);
        return -2;
    }
    bool seen[256] = {false};
    for (int64_t i = 0; i < n; ++i) seen[data[i]] = true;
    for (int c = 0; c < 256; ++c) {
        out->id_of[c] = seen[c] ? out->vocab : -1;
        if (seen[c]) out->chars[out->vocab++] = (unsigned char)c;
    }
    out->tokens = malloc((size_t)n * sizeof *out->tokens);
    if (!out->tokens) {
        snprintf(err, errcap, "%s: out of host memory for %lld tokens", path, (long long)n);
        free(data);
        return -1;
    }
    for (int64_t i = 0; i < n; ++i) out->tokens[i] = out->id_of[data[i]];
    free(data);
    out->n = n;
    out->n_train = n_train;
    return 0;
}

void gpt_text_free(gpt_text *t) {
    free(t->tokens);
    t->tokens = NULL;
}

double gpt_text_unigram_loss(const gpt_text *t) {
    double count[256] = {0};
    for (int64_t i = 0; i < t->n_train; ++i) count[t->tokens[i]] += 1;
    const double total = (double)t->n_train + t->vocab;
    double nll = 0;
    for (int64_t i = t->n_train; i < t->n; ++i) nll -= log((count[t->tokens[i]] + 1) / total);
    return nll / (double)(t->n - t->n_train);
}

uint64_t gpt_rng_next(gpt_rng *r) {
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double gpt_rng_uniform(gpt_rng *r) { return (double)(gpt_rng_next(r) >> 11) * 0x1.0p-53; }

static void window(const int64_t *tokens, int64_t at, int context, int64_t *x, int64_t *y) {
    memcpy(x, tokens + at, (size_t)context * sizeof *x);
    memcpy(y, tokens + at + 1, (size_t)context * sizeof *y);
}

void gpt_text_train_batch(const gpt_text *t, gpt_rng *r, int batch, int context, int64_t *x, int64_t *y) {
    const uint64_t starts = (uint64_t)(t->n_train - context); /* the last window's target is still train */
    for (int b = 0; b < batch; ++b)
        window(t->tokens, (int64_t)(gpt_rng_next(r) % starts), context, x + (size_t)b * context,
               y + (size_t)b * context);
}

void gpt_text_val_windows(const gpt_text *t, int first, int count, int windows, int context, int64_t *x, int64_t *y) {
    const int64_t span = t->n - t->n_train - context - 1;
    for (int w = 0; w < count; ++w) {
        const int64_t at = t->n_train + (windows > 1 ? span * (first + w) / (windows - 1) : 0);
        window(t->tokens, at, context, x + (size_t)w * context, y + (size_t)w * context);
    }
}
