/* Tensors above 2^32 elements: a u8 tensor of 2^32 + 2^20 elements (about
 * 4.3 GB) made by a broadcast copy, copied transposed, then reduced with MAX
 * and an i64 SUM. Every index, stride and grid computation that slips into
 * 32 bits shows up here as a wrong value at or past element 2^32.
 *
 * usage: test_large_tensors [device]   (default: the default device)
 * Needs two such tensors at once plus a margin in the device's free memory;
 * with less it exits 77 (skip) and says how much it needs and has. The sums
 * (of everything, and of each row) widen u8 to i64 one block of at most
 * 2^24 elements at a time (core/ops/reduce.c), so they need 128 MiB more,
 * not 8 bytes per element. Run by
 * ctest label `large` (cpu, when built with -DPT_TEST_LARGE=ON) and by
 * tests/gpu/run_on_device.sh on cuda:0. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "portable/portable.h"

#define K 251 /* row length: prime, so no power-of-two pattern hides a wrong index */

static int failures;

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static pt_tensor *must(pt_tensor *x, const char *what) {
    if (!x) {
        printf("FAIL: %s: %s\n", what, pt_last_error());
        exit(1);
    }
    return x;
}

/* Element i of the 1-D view flat, read back to the host. */
static int element(pt_tensor *flat, int64_t i) {
    pt_scope sc = pt_scope_begin();
    uint8_t v = 0;
    pt_tensor *one = pt_narrow(flat, 0, i, 1);
    if (!one || pt_to_host(one, &v, 1) != PT_OK) {
        printf("FAIL: reading element %lld: %s\n", (long long)i, pt_last_error());
        exit(1);
    }
    pt_scope_end(sc);
    return v;
}

static void check_elements(const char *what, pt_tensor *flat, int64_t numel, int (*want)(int64_t, int64_t),
                           int64_t arg) {
    const int64_t two32 = (int64_t)1 << 32;
    const int64_t at[] = {0, 1, K, (int64_t)1 << 31, two32 - 1, two32, two32 + 1, two32 + K + 7, numel - 2, numel - 1};
    int bad = 0;
    for (size_t k = 0; k < sizeof at / sizeof at[0]; ++k) {
        const int got = element(flat, at[k]), expect = want(at[k], arg);
        if (got != expect) {
            printf("FAIL: %s: element %lld is %d, want %d\n", what, (long long)at[k], got, expect);
            ++bad;
        }
    }
    if (!bad) printf("ok: %s (elements around 2^31, 2^32 and the end)\n", what);
    failures += bad;
}

static int broadcast_value(int64_t i, int64_t unused) {
    (void)unused;
    return (int)(i % K);
}

/* The transposed copy is [K, M]: row r holds r everywhere. */
static int transposed_value(int64_t i, int64_t m) { return (int)(i / m); }

int main(int argc, char **argv) {
    pt_device *dev = argc > 1 ? pt_device_get(argv[1]) : pt_default_device();
    if (!dev) {
        printf("FAIL: device %s: %s\n", argc > 1 ? argv[1] : "(default)", pt_last_error());
        return 1;
    }
    const int64_t target = ((int64_t)1 << 32) + ((int64_t)1 << 20);
    const int64_t m = (target + K - 1) / K, numel = m * K;
    const int64_t need = 2 * numel + ((int64_t)1 << 30); /* two tensors and 1 GiB to spare */
    pt_device_props p;
    if (pt_device_info(dev, &p) != PT_OK) {
        printf("FAIL: pt_device_info(%s): %s\n", pt_device_name(dev), pt_last_error());
        return 1;
    }
    if (p.memory_free >= 0 && p.memory_free < need) {
        printf("SKIP: %s has %.1f GiB free; tensors of %lld u8 elements (above 2^32) need %.1f GiB "
               "(two of %.1f GiB at once, plus 1 GiB)\n",
               pt_device_name(dev), (double)p.memory_free / (1 << 30), (long long)numel,
               (double)need / (1 << 30), (double)numel / (1 << 30));
        return 77;
    }
    printf("%s: u8 tensors of [%lld, %d] = %lld elements (2^32 + %lld)\n", pt_device_name(dev), (long long)m, K,
           (long long)numel, (long long)(numel - ((int64_t)1 << 32)));
    pt_scope sc = pt_scope_begin();
    double t0 = seconds();
    /* Broadcast copy: one row 0..250 expanded over m rows, made contiguous. */
    const int64_t row_shape[2] = {1, K}, big_shape[2] = {m, K}, flat_shape[1] = {numel};
    pt_tensor *row = must(pt_reshape(must(pt_arange(dev, PT_U8, 0, K, 1), "arange"), 2, row_shape), "reshape row");
    pt_tensor *big = must(pt_contiguous(must(pt_expand(row, 2, big_shape), "expand")), "broadcast copy");
    check_elements("broadcast copy", must(pt_reshape(big, 1, flat_shape), "flatten"), numel, broadcast_value, 0);
    double t1 = seconds();
    /* Transposed copy: [K, m], row r all r. */
    pt_tensor *tr = must(pt_contiguous(must(pt_transpose(big, 0, 1), "transpose")), "transposed copy");
    pt_release(big);
    check_elements("transposed copy", must(pt_reshape(tr, 1, flat_shape), "flatten"), numel, transposed_value, m);
    double t2 = seconds();
    const double mx = pt_item(must(pt_max(tr, PT_ALL, false), "max"));
    if (mx != K - 1) {
        printf("FAIL: max is %.0f, want %d\n", mx, K - 1);
        ++failures;
    } else {
        printf("ok: max %.0f\n", mx);
    }
    double t3 = seconds();
    /* pt_sum of u8 counts in i64; the input is widened one block at a
     * time, so the sums fit in the margin checked above. */
    pt_tensor *sum = must(pt_sum(tr, PT_ALL, false), "sum");
    const double want_sum = (double)m * (K * (K - 1) / 2);
    if (pt_tensor_dtype(sum) != PT_I64 || pt_item(sum) != want_sum) {
        printf("FAIL: sum is %.0f (%s), want %.0f (i64)\n", pt_item(sum), pt_dtype_name(pt_tensor_dtype(sum)),
               want_sum);
        ++failures;
    } else {
        printf("ok: i64 sum %.0f\n", want_sum);
    }
    /* Row sums: row r of tr holds m copies of r. */
    pt_tensor *rows = must(pt_sum(tr, 1, false), "row sums");
    int64_t row_sum[K];
    const bool read = pt_tensor_dtype(rows) == PT_I64 && pt_tensor_numel(rows) == K &&
                      pt_to_host(rows, row_sum, sizeof row_sum) == PT_OK;
    int bad_rows = 0;
    for (int r = 0; r < K && read; ++r) bad_rows += row_sum[r] != (int64_t)r * m;
    if (!read || bad_rows) {
        printf("FAIL: row sums: %d of %d rows wrong (dtype %s)\n", read ? bad_rows : K, K,
               pt_dtype_name(pt_tensor_dtype(rows)));
        ++failures;
    } else {
        printf("ok: %d i64 row sums\n", K);
    }
    double t4 = seconds();
    pt_scope_end(sc);
    printf("seconds: broadcast copy %.1f, transposed copy %.1f, max %.1f, sum %.1f\n", t1 - t0, t2 - t1, t3 - t2,
           t4 - t3);
    printf("%s\n", failures ? "FAILED" : "passed");
    return failures ? 1 : 0;
}
