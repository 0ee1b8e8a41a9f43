/* float -> f16 on opencl:0 gives half.h's bits, whichever conversion the
 * plugin chose for the device's kernels (backends/opencl/device_half.c: the
 * compiler's _Float16 where its probe passed, half.h's arithmetic
 * otherwise, or with PORTABLE_OPENCL_NATIVE_HALF=off).
 *
 * Inputs, drawn independently of the probe's: every f16 value as a float
 * and its neighbours two ulps either side, the midpoints between
 * neighbouring f16 values and theirs, both signs, float NaNs with payloads
 * in every bit, infinities, float subnormals, and 2^20 bit patterns from
 * splitmix64. Each goes through the eager cast, and through a captured
 * graph's fused chain (mul_scalar by 1 then the cast: a multiplication by
 * one is exact, a NaN only quieted, so the bits are the cast's of x * 1 as
 * the host computes it), both held bit for bit to pt_f32_to_f16_bits.
 *
 * PT_TEST_HALF_PATH=native|arithmetic also checks the plugin's log line
 * says which conversion it took (ctest sets it where that is known: PoCL on
 * x86, and the off switch). Exit 77 when there is no OpenCL device. */
#include <string.h>

#include "check.h"
#include "portable/graph.h"
#include "portable/half.h"

enum { RANDOM = 1 << 20 };

static char path_seen[32];

static void watch_log(pt_log_level level, const char *message, void *user) {
    (void)level;
    (void)user;
    if (!strstr(message, "float -> f16 in kernels by")) return;
    snprintf(path_seen, sizeof path_seen, "%s", strstr(message, "_Float16") ? "native" : "arithmetic");
}

static int64_t make_inputs(uint32_t *in) {
    int64_t n = 0;
    for (uint32_t h = 0; h < 0x10000u; ++h) {
        const uint32_t b = pt_h_as_u32(pt_f16_bits_to_f32((uint16_t)h));
        for (int d = -2; d <= 2; ++d) in[n++] = b + (uint32_t)d;
        if ((h & 0x7fffu) >= 0x7c00u) continue;
        /* the midpoint to the next magnitude (65536 past 65504) */
        const double lo = pt_f16_bits_to_f32((uint16_t)(h & 0x7fffu));
        const double hi = (h & 0x7fffu) + 1u < 0x7c00u ? pt_f16_bits_to_f32((uint16_t)((h & 0x7fffu) + 1u)) : 65536.0;
        const uint32_t m = pt_h_as_u32((float)((lo + hi) / 2)) | (h & 0x8000u) << 16;
        for (int d = -2; d <= 2; ++d) in[n++] = m + (uint32_t)d;
    }
    for (int bit = 0; bit < 23; ++bit) {
        in[n++] = 0x7f800000u | 1u << bit;
        in[n++] = 0xffc00000u | 1u << bit;
        in[n++] = 1u << bit; /* float subnormals */
    }
    uint64_t s = 12345;
    for (int k = 0; k < RANDOM; ++k) {
        uint64_t z = (s += 0x9e3779b97f4a7c15u);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        in[n++] = (uint32_t)(z ^ (z >> 31));
    }
    return n;
}

/* y's bits against pt_f32_to_f16_bits of in (after * 1 when times_one). */
static void check_bits(const char *what, pt_tensor *y, const uint32_t *in, int64_t n, bool times_one) {
    uint16_t *got = malloc((size_t)n * sizeof *got);
    CHECK_NOT_NULL(got);
    if (!got) return;
    CHECK_OK(pt_to_host(y, got, (size_t)n * sizeof *got));
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; ++i) {
        const float x = times_one ? pt_h_as_f32(in[i]) * 1.0f : pt_h_as_f32(in[i]);
        if (got[i] != pt_f32_to_f16_bits(x) && bad++ == 0) first = i;
    }
    if (bad)
        printf("  %s: %lld of %lld differ; first: float 0x%08x gave 0x%04x, want 0x%04x\n", what, (long long)bad,
               (long long)n, in[first], (unsigned)got[first],
               (unsigned)pt_f32_to_f16_bits(times_one ? pt_h_as_f32(in[first]) * 1.0f : pt_h_as_f32(in[first])));
    CHECK(bad == 0);
    free(got);
}

int main(void) {
    pt_set_log_handler(watch_log, NULL);
    pt_device *dev = pt_device_get("opencl:0");
    if (!dev) {
        printf("SKIP: no OpenCL device (%s)\n", pt_last_error());
        return 77;
    }
    const int64_t cap = 0x10000 * 10 + 23 * 3 + RANDOM;
    uint32_t *in = malloc((size_t)cap * sizeof *in);
    CHECK_NOT_NULL(in);
    if (!in) return check_summary();
    const int64_t n = make_inputs(in);
    CHECK(n <= cap);
    printf("%lld floats on %s\n", (long long)n, pt_device_name(dev));

    pt_scope scope = pt_scope_begin();
    pt_tensor *x = pt_from_data(dev, PT_F32, 1, &n, in);
    CHECK_NOT_NULL(x);
    check_bits("eager cast", pt_cast(x, PT_F16), in, n, false);

    CHECK_OK(pt_graph_capture_begin(dev));
    pt_tensor *y = pt_keep(pt_cast(pt_mul_scalar(x, 1.0), PT_F16));
    pt_graph *g = pt_graph_capture_end(dev);
    CHECK_NOT_NULL(g);
    if (g) {
        pt_graph_stats st;
        CHECK_OK(pt_graph_info(g, &st));
        CHECK_INT(st.kernels, 1); /* the chain is one kernel */
        CHECK_OK(pt_graph_replay(g));
        check_bits("fused chain", y, in, n, true);
        pt_graph_free(g);
    }
    pt_release(y);
    pt_scope_end(scope);

    const char *want = getenv("PT_TEST_HALF_PATH");
    printf("conversion in kernels: %s\n", path_seen[0] ? path_seen : "(not logged: PORTABLE_LOG=info shows it)");
    if (want) CHECK_STR(path_seen, want);
    free(in);
    return check_summary();
}
