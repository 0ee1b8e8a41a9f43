/* The text gpt_train learns from: a plain file read into memory, its
 * characters (bytes) numbered in sorted order, a 90/10 split into training
 * and validation tokens, the unigram baseline, and seeded random windows.
 * Plain C on the host. */
#ifndef PORTABLE_EXAMPLES_GPT_TEXT_H
#define PORTABLE_EXAMPLES_GPT_TEXT_H

#include <stddef.h>
#include <stdint.h>

typedef struct gpt_text {
    int vocab;              /* distinct bytes in the file */
    unsigned char chars[256]; /* token id -> byte */
    int id_of[256];         /* byte -> token id, -1 when the byte never occurs */
    int64_t *tokens;        /* the whole file as token ids */
    int64_t n, n_train;     /* tokens [0, n_train) train, [n_train, n) validate */
} gpt_text;

/* Reads path and numbers its bytes. Returns 0; -1 with the reason in err
 * when the file cannot be read; -2 when it is too short to train on (fewer
 * than min_tokens in either split), also with the reason in err. */
int gpt_text_load(const char *path, int64_t min_tokens, gpt_text *out, char *err, size_t errcap);

void gpt_text_free(gpt_text *t);

/* Mean negative log-likelihood (nats per character) of the validation
 * tokens under the training split's character frequencies, add-one
 * smoothed so a character seen only in validation costs a finite amount:
 * what a model that ignores context at best achieves. */
double gpt_text_unigram_loss(const gpt_text *t);

/* A reproducible generator for batch offsets and sampling (splitmix64). */
typedef struct gpt_rng {
    uint64_t state;
} gpt_rng;

uint64_t gpt_rng_next(gpt_rng *r);
/* Uniform in [0, 1). */
double gpt_rng_uniform(gpt_rng *r);

/* batch windows of context tokens from the training split at random
 * offsets: x[b, t] = token at offset + t and y[b, t] = the next one. */
void gpt_text_train_batch(const gpt_text *t, gpt_rng *r, int batch, int context, int64_t *x, int64_t *y);

/* Window w (0 <= w < windows) of the validation split's evenly spaced
 * windows, in the layout of gpt_text_train_batch, for count windows. */
void gpt_text_val_windows(const gpt_text *t, int first, int count, int windows, int context, int64_t *x, int64_t *y);

#endif
