/* 16-bit storage: the conversions of portable/half.h against a reference
 * written differently (round a double to p bits with nearbyint, ties to
 * even, overflow past the largest finite value to inf), and, where the C
 * compiler has _Float16, against the compiler's own conversions too; then
 * the tensor-level contract: pt_from_data takes bits, casts to and from
 * every dtype, pt_item, promotion, ops computed in f32 and rounded once. */
#include <fenv.h>
#include <float.h>

#include "check.h"
#include <portable/half.h>

typedef struct fmt {
    const char *name;
    int p;        /* precision bits, the implicit one included */
    int emin;     /* exponent of the smallest normal */
    double max;   /* largest finite */
} fmt;

static const fmt F16 = {"f16", 11, -14, 65504.0};
static const fmt BF16 = {"bf16", 8, -126, 3.38953138925153547590470800371487866880e38};

/* x rounded to the format: nearest, ties to even, +-inf beyond. */
static double ref_round(const fmt *f, double x) {
    if (isnan(x) || isinf(x)) return x;
    if (x == 0.0) return x;
    double a = fabs(x);
    int e;
    (void)frexp(a, &e); /* a = m 2^e, m in [0.5, 1): exponent e - 1 */
    int E = e - 1 < f->emin ? f->emin : e - 1;
    double ulp = ldexp(1.0, E - (f->p - 1));
    double r = nearbyint(a / ulp) * ulp;
    if (r > f->max) r = INFINITY;
    return copysign(r, x);
}

static double decode(const fmt *f, uint16_t h) {
    return f == &F16 ? (double)pt_f16_bits_to_f32(h) : (double)pt_bf16_bits_to_f32(h);
}
static uint16_t enc32(const fmt *f, float x) {
    return f == &F16 ? pt_f32_to_f16_bits(x) : pt_f32_to_bf16_bits(x);
}
static uint16_t enc64(const fmt *f, double x) {
    return f == &F16 ? pt_f64_to_f16_bits(x) : pt_f64_to_bf16_bits(x);
}

/* Same value and the same sign (of zero too); NaN matches NaN of the same sign. */
static int same(double got, double want) {
    if (isnan(want)) return isnan(got) && signbit(got) == signbit(want);
    return got == want && signbit(got) == signbit(want);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t next_u64(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float f32_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static double f64_of(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

static int bad_reported;
static void check_one32(const fmt *f, float x) {
    double got = decode(f, enc32(f, x)), want = ref_round(f, (double)x);
    if (!same(got, want)) {
        CHECK(same(got, want));
        if (bad_reported++ < 10)
            printf("  %s(%a) = %a, reference %a\n", f->name, (double)x, got, want);
    }
}
static void check_one64(const fmt *f, double x) {
    double got = decode(f, enc64(f, x)), want = ref_round(f, x);
    if (!same(got, want)) {
        CHECK(same(got, want));
        if (bad_reported++ < 10) printf("  %s(double %a) = %a, reference %a\n", f->name, x, got, want);
    }
}

/* Every 16-bit value decodes to what its fields say, and encodes back to the
 * same bits (NaN: to a quiet NaN of the same sign). Around each value: the
 * midpoints to both neighbours (ties), and one float ulp either side. */
static void test_exhaustive(const fmt *f) {
    int before = check_failed;
    for (uint32_t h = 0; h < 0x10000u; ++h) {
        const double v = decode(f, (uint16_t)h);
        const int e = (int)((h >> (f->p - 1)) & ((f == &F16) ? 0x1fu : 0xffu));
        const int emax = f == &F16 ? 0x1f : 0xff;
        const uint32_t m = h & ((1u << (f->p - 1)) - 1u);
        double want;
        if (e == emax) want = m ? NAN : INFINITY;
        else if (e == 0) want = ldexp((double)m, f->emin - (f->p - 1));
        else want = ldexp(1.0 + (double)m / (double)(1u << (f->p - 1)), e - (emax >> 1));
        if (h & 0x8000u) want = -want;
        if (!same(v, want)) {
            CHECK(same(v, want));
            if (bad_reported++ < 10) printf("  %s bits %04x decode %a, want %a\n", f->name, h, v, want);
        }
        if (isnan(v)) {
            uint16_t back = enc32(f, (float)v);
            CHECK(isnan(decode(f, back)) && ((back ^ h) & 0x8000u) == 0);
            continue;
        }
        CHECK_INT(enc32(f, (float)v), h);
        CHECK_INT(enc64(f, v), h);
        if (isinf(v)) continue;
        /* the next value up in magnitude (for the largest finite: where inf begins) */
        uint16_t up = (uint16_t)(h + 1);
        double vu = isinf(decode(f, up)) ? ldexp(1.0, f == &F16 ? 16 : 128) : decode(f, up);
        double mid = (v + vu) / 2; /* exact in double */
        check_one32(f, (float)mid);
        check_one64(f, mid);
        check_one32(f, nextafterf((float)mid, 0.0f));
        check_one32(f, nextafterf((float)mid, INFINITY));
        check_one64(f, nextafter(mid, 0.0));
        check_one64(f, nextafter(mid, INFINITY));
        check_one64(f, nextafter(mid, -INFINITY));
    }
    printf("%s: exhaustive decode, round trip and ties: %s\n", f->name,
           check_failed == before ? "ok" : "FAILED");
}

/* Random floats and doubles over every exponent (subnormals included), and
 * doubles that a plain double -> float -> 16-bit path would round twice. */
static void test_random(const fmt *f) {
    int before = check_failed;
    for (int i = 0; i < 2000000; ++i) check_one32(f, f32_of((uint32_t)next_u64()));
    for (int i = 0; i < 1000000; ++i) {
        /* exponents near the format's range, where the interesting cases are */
        uint64_t u = next_u64();
        int ex = (int)(u % 80) - 40 + (f == &F16 ? -5 : 0);
        double x = ldexp(1.0 + (double)(u >> 12) / 4503599627370496.0, ex);
        check_one64(f, (u & 1) ? -x : x);
        check_one64(f, f64_of(next_u64()));
    }
    /* 1 + half an f16/bf16 ulp + a bit only a double holds: ties in float */
    check_one64(f, 1.0 + ldexp(1.0, -f->p) + ldexp(1.0, -40));
    check_one64(f, -(1.0 + ldexp(1.0, -f->p) + ldexp(1.0, -40)));
    check_one64(f, 1.0 + ldexp(1.0, -f->p) - ldexp(1.0, -40));
    printf("%s: random floats and doubles: %s\n", f->name, check_failed == before ? "ok" : "FAILED");
}

static void test_special(void) {
    CHECK_INT(pt_f32_to_f16_bits(65504.0f), 0x7bff);
    CHECK_INT(pt_f32_to_f16_bits(65519.996f), 0x7bff);
    CHECK_INT(pt_f32_to_f16_bits(65520.0f), 0x7c00);         /* tie with inf: to even */
    CHECK_INT(pt_f32_to_f16_bits(-1e10f), 0xfc00);
    CHECK_INT(pt_f32_to_f16_bits(ldexpf(1.0f, -24)), 0x0001); /* smallest subnormal */
    CHECK_INT(pt_f32_to_f16_bits(ldexpf(1.0f, -25)), 0x0000); /* tie: to even (zero) */
    CHECK_INT(pt_f32_to_f16_bits(ldexpf(1.5f, -25)), 0x0001);
    CHECK_INT(pt_f32_to_f16_bits(ldexpf(3.0f, -25)), 0x0002); /* 1.5 units: to even 2 */
    CHECK_INT(pt_f32_to_f16_bits(-0.0f), 0x8000);
    CHECK_INT(pt_f32_to_bf16_bits(-0.0f), 0x8000);
    CHECK_INT(pt_f32_to_bf16_bits(INFINITY), 0x7f80);
    CHECK_INT(pt_f32_to_bf16_bits(FLT_MAX), 0x7f80);          /* past bf16's largest: inf */
    CHECK_INT(pt_f32_to_bf16_bits(f32_of(0x3f808000u)), 0x3f80); /* tie: to even */
    CHECK_INT(pt_f32_to_bf16_bits(f32_of(0x3f818000u)), 0x3f82);
    CHECK_INT(pt_f64_to_f16_bits(1e300), 0x7c00);
    CHECK_INT(pt_f64_to_bf16_bits(-1e300), 0xff80);
    CHECK_INT(pt_f64_to_f16_bits(1e-300), 0x0000);
    /* NaN: quiet, sign kept, never turned into inf by the rounding carry */
    CHECK((pt_f32_to_f16_bits(f32_of(0x7f800001u)) & 0x7e00u) == 0x7e00u);
    CHECK((pt_f32_to_bf16_bits(f32_of(0xffffffffu)) & 0xffc0u) == 0xffc0u);
    CHECK((pt_f32_to_bf16_bits(f32_of(0x7f800001u)) & 0x7fc0u) == 0x7fc0u);
    CHECK(isnan(pt_f16_bits_to_f32(0x7e00)) && isnan(pt_bf16_bits_to_f32(0xffc0)));
#ifdef __FLT16_MAX__
    /* The compiler's own _Float16 conversions agree bit for bit. */
    int before = check_failed;
    for (int i = 0; i < 1000000; ++i) {
        float x = f32_of((uint32_t)next_u64());
        if (isnan(x)) continue;
        _Float16 h = (_Float16)x;
        uint16_t hb;
        memcpy(&hb, &h, 2);
        if (hb != pt_f32_to_f16_bits(x)) CHECK_INT(hb, pt_f32_to_f16_bits(x));
        double d = f64_of(next_u64());
        if (isnan(d)) continue;
        h = (_Float16)d;
        memcpy(&hb, &h, 2);
        if (hb != pt_f64_to_f16_bits(d)) CHECK_INT(hb, pt_f64_to_f16_bits(d));
    }
    printf("f16: agrees with the compiler's _Float16: %s\n", check_failed == before ? "ok" : "FAILED");
#else
    printf("f16: no _Float16 in this compiler; the nearbyint reference alone checks f16\n");
#endif
}

/* OpenCL kernels round f32 to f16 with pt_f32_to_f16_bits_by_add (a float
 * addition rounds the subnormals), everything else with the integer form:
 * the two agree on every float whose f16 is a subnormal or the smallest
 * normals (every magnitude from 2^-25 to 2^-14 and a little past, both
 * signs), on the magnitudes below 2^-25 at a stride, and on random floats.
 * main sets C's default rounding (to nearest even), which OpenCL C fixes. */
static void test_two_forms(void) {
    int before = check_failed;
#if FLT_EVAL_METHOD == 0
    uint64_t bad = 0;
    for (uint32_t x = 0x33000000u; x < 0x38802000u; ++x)
        for (int neg = 0; neg < 2; ++neg) {
            const float f = f32_of(neg ? x | 0x80000000u : x);
            if (pt_f32_to_f16_bits_by_add(f) != pt_f32_to_f16_bits_int(f) && bad++ < 10)
                printf("  f16 of %a: by_add %04x, int %04x\n", (double)f, pt_f32_to_f16_bits_by_add(f),
                       pt_f32_to_f16_bits_int(f));
        }
    for (uint32_t x = 0; x < 0x33000000u; x += 4099u) {
        const float f = f32_of(x);
        if (pt_f32_to_f16_bits_by_add(f) != 0 || pt_f32_to_f16_bits_int(f) != 0) ++bad;
    }
    for (int i = 0; i < 2000000; ++i) {
        const float f = f32_of((uint32_t)next_u64());
        if (pt_f32_to_f16_bits_by_add(f) != pt_f32_to_f16_bits_int(f)) ++bad;
    }
    CHECK(bad == 0);
    printf("f16: the float-addition form agrees with the integer form: %s\n",
           check_failed == before ? "ok" : "FAILED");
#else
    printf("f16: FLT_EVAL_METHOD %d (float sums in a wider type): the float-addition form is not checked here\n",
           (int)FLT_EVAL_METHOD);
#endif
}

static void test_buffers(void) {
    float src[6] = {1.0f, -2.5f, 65536.0f, 1e-8f, NAN, 0.1f};
    uint16_t h[6], b[6];
    float back[6];
    pt_f32_to_f16(src, h, 6);
    pt_f32_to_bf16(src, b, 6);
    for (int i = 0; i < 6; ++i) {
        CHECK_INT(h[i], pt_f32_to_f16_bits(src[i]));
        CHECK_INT(b[i], pt_f32_to_bf16_bits(src[i]));
    }
    pt_f16_to_f32(h, back, 6);
    CHECK(back[0] == 1.0f && back[1] == -2.5f && isinf(back[2]) && isnan(back[4]));
    CHECK(back[3] == ldexpf(1.0f, -27) * 0 + pt_f16_bits_to_f32(h[3]));
    pt_bf16_to_f32(b, back, 6);
    CHECK(back[0] == 1.0f && back[2] == 65536.0f && fabsf(back[5] - 0.1f) < 0.001f);
}

/* Tensors: bits in, casts to every dtype, ops in f32 rounded once. */
static void test_tensors(void) {
    pt_device *cpu = pt_cpu();
    const int64_t n = 6;
    const float vals[6] = {1.0f, -2.5f, 3.140625f, 65504.0f, -0.0f, 1000.0f};
    uint16_t h[6], bits[6];
    pt_f32_to_f16(vals, h, 6);
    pt_tensor *x = pt_from_data(cpu, PT_F16, 1, &n, h);
    CHECK(x && pt_tensor_dtype(x) == PT_F16);
    CHECK(pt_to_host(x, bits, sizeof bits) == PT_OK && memcmp(bits, h, sizeof h) == 0);
    pt_tensor *one = pt_narrow(x, 0, 2, 1);
    CHECK(pt_item(one) == 3.140625);
    pt_release(one);
    /* to every dtype and back */
    for (int t = 0; t < PT_DTYPE_COUNT; ++t) {
        pt_tensor *c = pt_cast(x, (pt_dtype)t);
        double got[6];
        pt_tensor *d = pt_cast(c, PT_F64);
        CHECK(d && pt_to_host(d, got, sizeof got) == PT_OK);
        for (int i = 0; i < 6; ++i) {
            double want = vals[i];
            if (t == PT_I32 || t == PT_I64) want = trunc(want);
            if (t == PT_U8) want = (double)(uint8_t)(int64_t)want;
            if (t == PT_BF16) want = ref_round(&BF16, want);
            if (!(got[i] == want)) {
                printf("  f16 %g cast to %s and f64: %g, want %g\n", vals[i],
                       pt_dtype_name((pt_dtype)t), got[i], want);
                CHECK(got[i] == want);
            }
        }
        pt_release(c);
        pt_release(d);
    }
    /* add computed in f32 and rounded once: 2049 + 1 -> 2050 (2049 is not an f16) */
    const int64_t one_n = 1;
    uint16_t a16 = pt_f32_to_f16_bits(2048.0f), b16 = pt_f32_to_f16_bits(3.0f);
    pt_tensor *a = pt_from_data(cpu, PT_F16, 1, &one_n, &a16);
    pt_tensor *b = pt_from_data(cpu, PT_F16, 1, &one_n, &b16);
    pt_tensor *s = pt_add(a, b);
    CHECK(s && pt_tensor_dtype(s) == PT_F16 && pt_item(s) == 2052.0); /* 2051 ties to even */
    pt_tensor *m = pt_matmul(pt_reshape(a, 2, (int64_t[]){1, 1}), pt_reshape(b, 2, (int64_t[]){1, 1}));
    CHECK(m && pt_tensor_dtype(m) == PT_F16 && pt_item(m) == 6144.0);
    /* promotion: f16 with bf16 -> f32; i32 with f16 -> f16; f16 with f32 -> f32 */
    pt_tensor *bb = pt_cast(b, PT_BF16);
    pt_tensor *mix = pt_add(a, bb);
    CHECK(mix && pt_tensor_dtype(mix) == PT_F32 && pt_item(mix) == 2051.0);
    pt_tensor *i = pt_full(cpu, PT_I32, 1, &one_n, 7);
    pt_tensor *fi = pt_mul(i, b);
    CHECK(fi && pt_tensor_dtype(fi) == PT_F16 && pt_item(fi) == 21.0);
    pt_tensor *full = pt_full(cpu, PT_BF16, 1, &one_n, 1.0 + ldexp(1.0, -8) + ldexp(1.0, -40));
    CHECK(full && pt_item(full) == 1.0 + ldexp(1.0, -7)); /* rounded once from the double */
    pt_release(full);
    pt_release(fi);
    pt_release(i);
    pt_release(mix);
    pt_release(bb);
    pt_release(m);
    pt_release(s);
    pt_release(a);
    pt_release(b);
    pt_release(x);
    /* names */
    CHECK(strcmp(pt_dtype_name(PT_F16), "f16") == 0 && strcmp(pt_dtype_name(PT_BF16), "bf16") == 0);
    CHECK(pt_dtype_size(PT_F16) == 2 && pt_dtype_size(PT_BF16) == 2);
}

/* Gradients flow through casts between float dtypes (mixed precision: f32
 * master weights, 16-bit activations). */
static void test_cast_grad(void) {
    pt_device *cpu = pt_cpu();
    const int64_t n = 3;
    const float w[3] = {0.5f, -1.25f, 2.0f};
    pt_tensor *p = pt_from_data(cpu, PT_F32, 1, &n, w);
    pt_set_requires_grad(p, true);
    pt_tensor *h = pt_cast(p, PT_BF16);
    pt_tensor *y = pt_sum(pt_mul(h, h), PT_ALL, false); /* d/dp = 2p */
    CHECK(y && pt_tensor_dtype(y) == PT_BF16);
    CHECK(pt_backward(y) == PT_OK);
    pt_tensor *g = pt_grad(p);
    float gv[3] = {0};
    CHECK(g && pt_tensor_dtype(g) == PT_F32 && pt_to_host(g, gv, sizeof gv) == PT_OK);
    for (int i = 0; i < 3; ++i) CHECK(gv[i] == 2.0f * w[i]);
}

int main(void) {
    fesetround(FE_TONEAREST);
    test_special();
    test_two_forms();
    test_exhaustive(&F16);
    test_exhaustive(&BF16);
    test_random(&F16);
    test_random(&BF16);
    test_buffers();
    pt_scope sc = pt_scope_begin();
    test_tensors();
    test_cast_grad();
    pt_scope_end(sc);
    return check_summary();
}
