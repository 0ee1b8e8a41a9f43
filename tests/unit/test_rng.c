/* The random generator: Philox4x32-10 known-answer vectors (Random123's
 * kat_vectors), the stream philox.h defines, and pt_rand / pt_randn on the
 * cpu device matching it bit for bit (uniform) or to rounding (normal) for a
 * fixed seed, across calls (the counter advances by the element count) and
 * across devices (cpu:0, cpu:1 with PORTABLE_CPU_DEVICES=2). */
#include <portable/philox.h>

#include "check.h"

/* An independent Philox4x32-10 over all four counter words, written from the
 * paper (Salmon et al., SC'11): 10 rounds, the key bumped between rounds. */
static void philox_full(const uint32_t ctr_in[4], const uint32_t key_in[2], uint32_t out[4]) {
    uint32_t c[4] = {ctr_in[0], ctr_in[1], ctr_in[2], ctr_in[3]};
    uint32_t k[2] = {key_in[0], key_in[1]};
    for (int r = 0; r < 10; ++r) {
        if (r > 0) {
            k[0] += 0x9E3779B9u;
            k[1] += 0xBB67AE85u;
        }
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        uint32_t n0 = hi1 ^ c[1] ^ k[0], n1 = lo1, n2 = hi0 ^ c[3] ^ k[1], n3 = lo0;
        c[0] = n0;
        c[1] = n1;
        c[2] = n2;
        c[3] = n3;
    }
    memcpy(out, c, sizeof c);
}

static void check_words(const uint32_t got[4], const uint32_t exp[4], const char *what) {
    char w[256];
    snprintf(w, sizeof w, "%s: got %08x %08x %08x %08x, expected %08x %08x %08x %08x", what, got[0], got[1],
             got[2], got[3], exp[0], exp[1], exp[2], exp[3]);
    check_report(memcmp(got, exp, 16) == 0, __FILE__, __LINE__, w);
}

static void test_known_answers(void) {
    /* Random123 kat_vectors, philox4x32 10 */
    static const struct {
        uint32_t ctr[4], key[2], out[4];
    } kat[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
        {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
         {0xffffffffu, 0xffffffffu},
         {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
        {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
         {0xa4093822u, 0x299f31d0u},
         {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
    };
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; ++i) {
        uint32_t out[4];
        philox_full(kat[i].ctr, kat[i].key, out);
        check_words(out, kat[i].out, "local Philox4x32-10 known answer");
    }
    /* philox.h (counter words 2, 3 = 0) on the all-zero vector */
    pt_philox_block b = pt_philox4x32_10(0, 0);
    check_words(b.w, kat[0].out, "pt_philox4x32_10(0, 0)");
    /* philox.h agrees with the full version wherever its inputs reach */
    static const uint64_t seeds[] = {0, 1, 42, 0xffffffffull, 0x123456789abcdef0ull, ~0ull};
    static const uint64_t ctrs[] = {0, 1, 7, 0xfffffffful, 0x100000000ull, 0xdeadbeefcafef00dull};
    for (size_t s = 0; s < 6; ++s)
        for (size_t c = 0; c < 6; ++c) {
            uint32_t key[2] = {(uint32_t)seeds[s], (uint32_t)(seeds[s] >> 32)};
            uint32_t ctr[4] = {(uint32_t)ctrs[c], (uint32_t)(ctrs[c] >> 32), 0, 0}, out[4];
            philox_full(ctr, key, out);
            pt_philox_block h = pt_philox4x32_10(seeds[s], ctrs[c]);
            check_words(h.w, out, "pt_philox4x32_10 vs the 4-word Philox");
        }
}

static pt_tensor *draw(pt_device *d, bool normal, pt_dtype t, int64_t n) {
    return normal ? pt_randn(d, t, 1, &n) : pt_rand(d, t, 1, &n);
}

static void test_rand_f32_bits(pt_device *d) {
    const int64_t n = 1003;
    pt_manual_seed(42);
    pt_tensor *x = draw(d, false, PT_F32, n);
    REQUIRE(x);
    float *got = malloc(sizeof(float) * (size_t)n);
    CHECK_OK(pt_to_host(x, got, sizeof(float) * (size_t)n));
    int bad = 0;
    for (int64_t i = 0; i < n; ++i) {
        float e = pt_philox_uniform_f32(42, 0, (uint64_t)i);
        if (memcmp(&got[i], &e, sizeof e) != 0 && bad++ < 3)
            printf("  %s: rand f32 seed 42 element %lld: got %.9g, expected %.9g\n", pt_device_name(d),
                   (long long)i, got[i], e);
        CHECK(got[i] >= 0.0f && got[i] < 1.0f);
    }
    CHECK_INT(bad, 0);
    /* element 0 from the independent Philox: key (42, 0), counter 0, word 0 */
    uint32_t ctr[4] = {0, 0, 0, 0}, key[2] = {42, 0}, w[4];
    philox_full(ctr, key, w);
    CHECK_DBL(got[0], (double)(w[0] >> 8) / 16777216.0, 0);
    CHECK_DBL(got[3], (double)(w[3] >> 8) / 16777216.0, 0);
    ctr[0] = 250; /* element 1001 is block 250, word 1 */
    philox_full(ctr, key, w);
    CHECK_DBL(got[1001], (double)(w[1] >> 8) / 16777216.0, 0);
    /* the next call continues at counter n */
    pt_tensor *y = draw(d, false, PT_F32, 10);
    float g2[10];
    CHECK_OK(pt_to_host(y, g2, sizeof g2));
    for (int i = 0; i < 10; ++i) CHECK_DBL(g2[i], pt_philox_uniform_f32(42, (uint64_t)n, (uint64_t)i), 0);
    /* reseeding restarts the stream */
    pt_manual_seed(42);
    pt_tensor *z = draw(d, false, PT_F32, n);
    float *g3 = malloc(sizeof(float) * (size_t)n);
    CHECK_OK(pt_to_host(z, g3, sizeof(float) * (size_t)n));
    CHECK(memcmp(got, g3, sizeof(float) * (size_t)n) == 0);
    /* another seed gives other numbers */
    pt_manual_seed(43);
    pt_tensor *o = draw(d, false, PT_F32, n);
    CHECK_OK(pt_to_host(o, g3, sizeof(float) * (size_t)n));
    CHECK(memcmp(got, g3, sizeof(float) * (size_t)n) != 0);
    free(got);
    free(g3);
    pt_release(x);
    pt_release(y);
    pt_release(z);
    pt_release(o);
}

static void test_other_streams(pt_device *d) {
    const int64_t n = 999;
    const uint64_t seed = 0x0123456789abcdefull;
    double *g = malloc(sizeof(double) * (size_t)n);
    float *f = malloc(sizeof(float) * (size_t)n);
    /* uniform f64: exact */
    pt_manual_seed(seed);
    pt_tensor *u = draw(d, false, PT_F64, n);
    REQUIRE(u);
    CHECK_OK(pt_to_host(u, g, sizeof(double) * (size_t)n));
    int bad = 0;
    for (int64_t i = 0; i < n; ++i) bad += g[i] != pt_philox_uniform_f64(seed, 0, (uint64_t)i);
    CHECK_INT(bad, 0);
    /* normal f32 after the f64 draw: counter n */
    pt_tensor *nf = draw(d, true, PT_F32, n);
    CHECK_OK(pt_to_host(nf, f, sizeof(float) * (size_t)n));
    bad = 0;
    for (int64_t i = 0; i < n; ++i) {
        double e = pt_philox_normal_f32(seed, (uint64_t)n, (uint64_t)i);
        if (fabs(f[i] - e) > 1e-6 * fmax(1.0, fabs(e)) * 4) ++bad;
    }
    CHECK_INT(bad, 0);
    /* normal f64 at counter 2n */
    pt_tensor *nd = draw(d, true, PT_F64, n);
    CHECK_OK(pt_to_host(nd, g, sizeof(double) * (size_t)n));
    bad = 0;
    for (int64_t i = 0; i < n; ++i) {
        double e = pt_philox_normal_f64(seed, 2 * (uint64_t)n, (uint64_t)i);
        if (fabs(g[i] - e) > 1e-12 * fmax(1.0, fabs(e))) ++bad;
    }
    CHECK_INT(bad, 0);
    pt_release(u);
    pt_release(nf);
    pt_release(nd);
    free(g);
    free(f);
}

static void test_across_devices(void) {
    pt_device *d0 = pt_device_get("cpu:0"), *d1 = pt_device_get("cpu:1");
    REQUIRE(d0);
    REQUIRE(d1);
    const int64_t n = 4097;
    float *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
    pt_manual_seed(7);
    pt_tensor *x = draw(d0, false, PT_F32, n);
    pt_manual_seed(7);
    pt_tensor *y = draw(d1, false, PT_F32, n);
    CHECK_OK(pt_to_host(x, a, sizeof(float) * (size_t)n));
    CHECK_OK(pt_to_host(y, b, sizeof(float) * (size_t)n));
    CHECK(memcmp(a, b, sizeof(float) * (size_t)n) == 0);
    free(a);
    free(b);
    pt_release(x);
    pt_release(y);
}

static void test_statistics(void) {
    const int64_t n = 200000;
    pt_manual_seed(2024);
    pt_tensor *u = draw(pt_cpu(), false, PT_F32, n), *z = draw(pt_cpu(), true, PT_F64, n);
    REQUIRE(u);
    REQUIRE(z);
    pt_tensor *mu = pt_mean(u, PT_ALL, false), *mz = pt_mean(z, PT_ALL, false);
    pt_tensor *z2 = pt_mul(z, z), *vz = pt_mean(z2, PT_ALL, false);
    pt_tensor *umax = pt_max(u, PT_ALL, false);
    CHECK_DBL(pt_item(mu), 0.5, 0.005);
    CHECK(pt_item(umax) < 1.0);
    CHECK_DBL(pt_item(mz), 0.0, 0.01);
    CHECK_DBL(pt_item(vz), 1.0, 0.02);
    pt_release(mu);
    pt_release(mz);
    pt_release(z2);
    pt_release(vz);
    pt_release(umax);
    pt_release(u);
    pt_release(z);
}

static void test_errors(void) {
    int64_t n = 4;
    pt_clear_error();
    CHECK(pt_rand(pt_cpu(), PT_I32, 1, &n) == NULL);
    CHECK_LAST(PT_ERR_DTYPE);
    CHECK_HAS(pt_last_error(), "pt_rand");
    pt_clear_error();
    CHECK(pt_randn(pt_cpu(), PT_U8, 1, &n) == NULL);
    CHECK_LAST(PT_ERR_DTYPE);
    pt_clear_error();
    /* empty and 0-D draws */
    int64_t z = 0;
    pt_tensor *e = pt_rand(pt_cpu(), PT_F32, 1, &z), *s = pt_randn(pt_cpu(), PT_F64, 0, NULL);
    CHECK_NOT_NULL(e);
    CHECK_NOT_NULL(s);
    CHECK(isfinite(pt_item(s)));
    pt_release(e);
    pt_release(s);
}

int main(void) {
    test_known_answers();
    if (!pt_cpu()) {
        printf("no cpu device: %s\n", pt_last_error());
        return 1;
    }
    test_rand_f32_bits(pt_cpu());
    if (pt_device_get("cpu:1")) test_rand_f32_bits(pt_device_get("cpu:1"));
    test_other_streams(pt_cpu());
    test_across_devices();
    test_statistics();
    test_errors();
    return check_summary();
}
