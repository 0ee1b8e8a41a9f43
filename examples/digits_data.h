/* The UCI digits data set (examples/data/digits.csv.gz): finding the file,
 * reading it with zlib, a seeded 80/20 split and minibatch order. Plain C
 * on the host; shared by examples/mlp_digits.c, tests/nn/test_training.c and
 * bench/bench_mlp.c. */
#ifndef PORTABLE_EXAMPLES_DIGITS_DATA_H
#define PORTABLE_EXAMPLES_DIGITS_DATA_H

#include <stddef.h>
#include <stdint.h>

#define DIGITS_FEATURES 64
#define DIGITS_CLASSES 10

typedef struct digits {
    int n;
    float *pixels;   /* n x 64, scaled to [0, 1] (the file's 0..16 divided by 16) */
    int64_t *labels; /* n, 0..9 */
} digits;

/* Where digits.csv.gz is: `explicit_path` if given, else
 * $PORTABLE_DATA_DIR/digits.csv.gz, else next to the executable
 * (data/, ../examples/data/, ../../examples/data/), else the source tree's
 * examples/data when DIGITS_SOURCE_DIR was defined at build time. Writes the
 * path into buf and returns 0, or -1 with the places tried in buf. */
int digits_find(const char *explicit_path, char *buf, size_t cap);

/* Reads the file. Returns 0, or -1 with a message in err. */
int digits_load(const char *path, digits *out, char *err, size_t errcap);

/* Shuffles the rows with a seeded generator and puts the first
 * round(train_fraction * n) in train, the rest in test (copies). */
int digits_split(const digits *all, uint64_t seed, double train_fraction, digits *train, digits *test);

/* A permutation of 0..n-1 from seed (Fisher-Yates on a 64-bit LCG): the
 * minibatch order of one epoch. */
void digits_permutation(int n, uint64_t seed, int *order);

/* Copies rows order[first .. first+count) into pixels/labels buffers. */
void digits_gather(const digits *d, const int *order, int first, int count, float *pixels, int64_t *labels);

void digits_free(digits *d);

#endif
