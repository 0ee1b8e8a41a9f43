/* Small helpers shared by the nets tests: a check macro that counts, the
 * device under test and a deterministic host generator. Each test program
 * ends with the line "N passed, M failed" and exits 0 only when M is 0
 * (77 when its device is unavailable, which CTest reports as a skip). */
#ifndef PORTABLE_TESTS_NN_TEST_H
#define PORTABLE_TESTS_NN_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "portable/portable.h"

#define NN_SKIP 77

static int nn_passed, nn_failed;

#define NN_CHECK(cond, ...)                                                    \
    do {                                                                       \
        if (cond) {                                                            \
            ++nn_passed;                                                       \
        } else {                                                               \
            ++nn_failed;                                                       \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);             \
            printf(__VA_ARGS__);                                               \
            printf(" [last error: %s]\n", pt_last_error());                    \
        }                                                                      \
    } while (0)

/* Unbuffered output: what a test printed survives a crash, so CTest's
 * --output-on-failure shows how far it got. */
static inline void nn_begin(void) { setvbuf(stdout, NULL, _IONBF, 0); }

static inline int nn_finish(void) {
    printf("%d passed, %d failed\n", nn_passed, nn_failed);
    return nn_failed ? 1 : 0;
}

/* The device PORTABLE_BACKEND picks, or exit 77 with the reason. */
static inline pt_device *nn_device_or_skip(void) {
    pt_device *d = pt_default_device();
    if (!d) {
        printf("SKIP: no device for PORTABLE_BACKEND=%s: %s\n",
               getenv("PORTABLE_BACKEND") ? getenv("PORTABLE_BACKEND") : "(unset)", pt_last_error());
        exit(NN_SKIP);
    }
    return d;
}

/* A 64-bit LCG (Knuth's MMIX constants): the same numbers everywhere. */
typedef struct nn_rng {
    uint64_t state;
} nn_rng;

static inline double nn_uniform(nn_rng *r) {
    r->state = r->state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(r->state >> 11) * (1.0 / 9007199254740992.0);
}

/* Reads a tensor of any float dtype into doubles (numel entries). */
static inline int nn_to_doubles(pt_tensor *t, double *out, int64_t n) {
    if (!t || pt_tensor_numel(t) != n) return -1;
    if (pt_tensor_dtype(t) == PT_F64) return pt_to_host(t, out, (size_t)n * sizeof(double)) ? -1 : 0;
    pt_tensor *c = pt_cast(t, PT_F64);
    int rc = c && pt_to_host(c, out, (size_t)n * sizeof(double)) == PT_OK ? 0 : -1;
    pt_release(c);
    return rc;
}

#endif
