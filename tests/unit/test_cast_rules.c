/* The cpu device's contiguous casts against the host's rules, bit for bit:
 * f16 <-> f32 against portable/half.h's converters and f32 -> i32 against
 * portable/numeric_rules.h. The plugin takes vector paths for these (F16C,
 * AVX2) where the CPU has them and scalar ones elsewhere; both must give the
 * rules' bits. Inputs: every f16 pattern (signalling NaNs included), f32
 * patterns around every f16 value and every power of two, NaNs, infinities,
 * the integer limits' neighbours, and random bits, in lengths that leave a
 * partial vector at the end. */
#include "check.h"
#include <portable/half.h>
#include <portable/numeric_rules.h>

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint64_t next_u64(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* n f32 bit patterns: near every f16 value (its bits, +-1 ulp, the halfway
 * points' neighbourhood), then random bits. */
static uint32_t *f32_patterns(int64_t n) {
    uint32_t *f = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; ++i) {
        float v = pt_f16_bits_to_f32((uint16_t)(i >> 3));
        uint32_t u;
        memcpy(&u, &v, 4);
        switch (i & 7) {
        case 0: break;
        case 1: u += 1; break;
        case 2: u -= 1; break;
        case 3: u += 0x1000; break; /* halfway to the next f16 (13 bits dropped) */
        case 4: u += 0xfff; break;
        case 5: u += 0x1001; break;
        default: u = (uint32_t)next_u64(); break;
        }
        f[i] = u;
    }
    return f;
}

static pt_tensor *cast_of(pt_dtype from, pt_dtype to, int64_t n, const void *data) {
    pt_tensor *x = pt_from_data(pt_cpu(), from, 1, &n, data);
    pt_tensor *y = pt_cast(x, to);
    pt_release(x);
    return y;
}

static void test_f16_to_f32(void) {
    const int64_t n = 0x10000 + 5;
    uint16_t *h = malloc((size_t)n * 2);
    float *got = malloc((size_t)n * 4), *want = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; ++i) h[i] = (uint16_t)(i * 40503u); /* odd step: every pattern */
    pt_tensor *y = cast_of(PT_F16, PT_F32, n, h);
    CHECK(y && pt_to_host(y, got, (size_t)n * 4) == PT_OK);
    pt_f16_to_f32(h, want, (size_t)n);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) bad += memcmp(&got[i], &want[i], 4) != 0;
    CHECK_INT(bad, 0);
    printf("f16 -> f32, every pattern: %s\n", bad ? "FAILED" : "ok");
    pt_release(y);
    free(h);
    free(got);
    free(want);
}

static void test_f32_to_f16(void) {
    const int64_t n = 8 * 0x10000 + 3;
    uint32_t *f = f32_patterns(n);
    uint16_t *got = malloc((size_t)n * 2), *want = malloc((size_t)n * 2);
    pt_tensor *y = cast_of(PT_F32, PT_F16, n, f);
    CHECK(y && pt_to_host(y, got, (size_t)n * 2) == PT_OK);
    pt_f32_to_f16((const float *)f, want, (size_t)n);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) bad += got[i] != want[i];
    CHECK_INT(bad, 0);
    printf("f32 -> f16: %s\n", bad ? "FAILED" : "ok");
    pt_release(y);
    free(f);
    free(got);
    free(want);
}

static void test_f32_to_i32(void) {
    static const float edges[] = {2147483648.0f, -2147483648.0f, 2147483520.0f, -2147483520.0f, 0.5f, -0.5f,
                                  0.99999994f, -0.99999994f, 1e30f, -1e30f, 0.0f, -0.0f};
    const int64_t n_edges = (int64_t)(sizeof edges / sizeof edges[0]);
    const int64_t n = 8 * 0x10000 + 7;
    uint32_t *f = f32_patterns(n);
    memcpy(f, edges, sizeof edges);
    const uint32_t specials[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x00000001u};
    memcpy(f + n_edges, specials, sizeof specials);
    int32_t *got = malloc((size_t)n * 4);
    pt_tensor *y = cast_of(PT_F32, PT_I32, n, f);
    CHECK(y && pt_to_host(y, got, (size_t)n * 4) == PT_OK);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
        float v;
        memcpy(&v, &f[i], 4);
        if (got[i] != pt_sat_i32_f32(v) && bad++ < 5)
            printf("  f32 %a (bits %08x) -> i32 %d, want %d\n", (double)v, f[i], got[i], pt_sat_i32_f32(v));
    }
    CHECK_INT(bad, 0);
    printf("f32 -> i32: %s\n", bad ? "FAILED" : "ok");
    pt_release(y);
    free(f);
    free(got);
}

int main(void) {
    test_f16_to_f32();
    test_f32_to_f16();
    test_f32_to_i32();
    return check_summary();
}
