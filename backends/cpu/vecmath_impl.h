/* libportable cpu backend — the vecmath kernels of one instruction set.
 *
 * Included once by each exec_elementwise_vecmath_<isa>.c, compiled with that set's flags,
 * after it defines:
 *   PT_VM_LEVEL      the table function's name (pt_cpu_vecmath_<isa>)
 *   PT_VM_NAME       its name as a string
 *   PT_VM_VF, _VD    SLEEF's vector types (__m256, __m256d, ...)
 *   PT_VM_SF(f), _SD(f)  the SLEEF function for f: Sleef_<f>f8_u10avx2, ...
 *   PT_VM_SF35(f)    its 3.5-ULP f32 variant: Sleef_<f>f8_u35avx2, ...
 * Whole vectors are loaded and stored with memcpy (unaligned moves); the last
 * partial vector goes through a zero-padded buffer. Arithmetic on the vector
 * types uses GCC's vector extensions. */
#include <string.h>

#include "vecmath.h"

typedef PT_VM_VF vf;
typedef PT_VM_VD vd;
typedef int32_t vfi __attribute__((vector_size(sizeof(vf))));
typedef int64_t vdi __attribute__((vector_size(sizeof(vd))));
#define WF ((int64_t)(sizeof(vf) / sizeof(float)))
#define WD ((int64_t)(sizeof(vd) / sizeof(double)))

static inline vf ldf(const float *p) { vf v; memcpy(&v, p, sizeof v); return v; }
static inline vd ldd(const double *p) { vd v; memcpy(&v, p, sizeof v); return v; }
static inline void stf(float *p, vf v) { memcpy(p, &v, sizeof v); }
static inline void std_(double *p, vd v) { memcpy(p, &v, sizeof v); }
static inline vf splatf(float s) {
    vf v;
    for (int64_t k = 0; k < WF; ++k) v[k] = s;
    return v;
}
static inline vd splatd(double s) {
    vd v;
    for (int64_t k = 0; k < WD; ++k) v[k] = s;
    return v;
}

static inline vf selectf(vfi take, vf a, vf b) { return (vf)(((vfi)a & take) | ((vfi)b & ~take)); }

/* x clamped to [lo, hi], a NaN x kept: minps and maxps return their second
 * operand when either is NaN, so x goes second. One instruction each,
 * where a compare-and-select takes three on AVX-512 (a compare into a mask
 * and two masked moves): exp's and tanh's clamps were a sixth of their
 * vector work. */
#if defined(__AVX512F__)
static inline vf clampf(vf x, vf lo, vf hi) { return _mm512_max_ps(lo, _mm512_min_ps(hi, x)); }
#elif defined(__AVX__)
static inline vf clampf(vf x, vf lo, vf hi) { return _mm256_max_ps(lo, _mm256_min_ps(hi, x)); }
#else
static inline vf clampf(vf x, vf lo, vf hi) { return _mm_max_ps(lo, _mm_min_ps(hi, x)); }
#endif

/* f32 exp: Cody-Waite reduction by ln 2 (split in two), Cephes' degree-7
 * polynomial for e^r on [-ln2/2, ln2/2], and 2^n put straight into the
 * exponent bits. exp_parts gives the polynomial p and n of an x already
 * clamped (|x| below 2^22), e^x = p 2^n. */
static inline vf exp_parts(vf c, vfi *k) {
    const vf magic = splatf(12582912.0f); /* 1.5 * 2^23: adding it rounds to an integer */
    const vf t = c * splatf(1.44269504088896341f) + magic;
    const vf n = t - magic;
    const vf r = c - n * splatf(0.693359375f) - n * splatf(-2.12194440e-4f);
    vf p = splatf(1.9875691500e-4f);
    p = p * r + splatf(1.3981999507e-3f);
    p = p * r + splatf(8.3334519073e-3f);
    p = p * r + splatf(4.1665795894e-2f);
    p = p * r + splatf(1.6666665459e-1f);
    p = p * r + splatf(5.0000001201e-1f);
    *k = (vfi)t - (vfi)magic;
    return p * (r * r) + r + splatf(1.0f);
}

/* exp applies 2^n as two powers of two 2^(n/2) 2^(n - n/2), so results
 * down in the subnormals (x to about -103.3) round once and results past
 * FLT_MAX (x above 88.72) become +inf; x is clamped where both ends are
 * settled (to -104 and 89: 0 and +inf). NaN passes through. Within 1.01
 * ULP over every 61st float (the conformance bound is 3). With FMA (AVX2,
 * AVX-512) it takes 20% less time than SLEEF's 1-ULP expf on AVX2; without
 * it (SSE2) SLEEF's is faster and stays. */
static inline vf exp_vf(vf x) {
    vfi k;
    const vf p = exp_parts(clampf(x, splatf(-104.0f), splatf(89.0f)), &k);
    const vfi k1 = k >> 1, k2 = k - k1;
    return p * (vf)((k1 + 127) << 23) * (vf)((k2 + 127) << 23);
}

/* sigmoid = 1 / (1 + e), e = exp(-x) as exp_vf computes it wherever e is a
 * normal float, so the same bits there. Elsewhere 1 + e needs no more than
 * one power of two: -x clamped to [-88, 89] makes n at most 128, whose
 * exponent bits are +inf (e = +inf for -x above 88.38, where e itself
 * would still be finite: the quotient is then 0 instead of a subnormal
 * under 4.2e-39), and at least -127, whose bits are 0 (e = 0 where it
 * would be a subnormal: 1 + e is 1 either way). The division stays: on
 * AVX-512 and AVX2 it runs in the divider beside exp's multiply-adds,
 * where a reciprocal estimate and its Newton steps add to them (measured
 * slower on AVX-512, no faster on AVX2). Within 2.5 ULP in f32 (2.47 the
 * worst over every 7th float with a normal result); NaN stays NaN. 1-ULP
 * SLEEF exp in f64. */
static inline vf sigmoid_vf(vf x) {
    vfi k;
    const vf p = exp_parts(clampf(-x, splatf(-88.0f), splatf(89.0f)), &k);
    return splatf(1.0f) / (splatf(1.0f) + p * (vf)((k + 127) << 23));
}
static inline vd sigmoid_vd(vd x) { return splatd(1.0) / (splatd(1.0) + PT_VM_SD(exp)(-x)); }

/* f32 tanh as a rational function: x P(x^2) / Q(x^2), degrees 13 over 6,
 * with x clamped to +-7.9053 (where it rounds to +-1) and tiny |x| passed
 * through (tanh x = x in f32 there). Eigen's float tanh (TensorFlow's and
 * XLA's too): only multiply-adds and one division, about three times
 * faster than SLEEF's 3.5-ULP tanhf, which runs through expm1, and
 * within 5 ULP (4.86 the largest over every 16th positive float). NaN
 * passes through the clamps (comparisons with NaN are false). Compiled with
 * -ffp-contract=fast (CMakeLists.txt): the Horner steps become FMAs. */
static inline vf tanh_vf(vf x) {
    const vf hi = splatf(7.90531110763549805f), lo = -hi;
    const vf c = clampf(x, lo, hi);
    const vf x2 = c * c;
    vf p = splatf(-2.76076847742355e-16f);
    p = x2 * p + splatf(2.00018790482477e-13f);
    p = x2 * p + splatf(-8.60467152213735e-11f);
    p = x2 * p + splatf(5.12229709037114e-08f);
    p = x2 * p + splatf(1.48572235717979e-05f);
    p = x2 * p + splatf(6.37261928875436e-04f);
    p = x2 * p + splatf(4.89352455891786e-03f);
    vf q = splatf(1.19825839466702e-06f);
    q = x2 * q + splatf(1.18534705686654e-04f);
    q = x2 * q + splatf(2.26843463243900e-03f);
    q = x2 * q + splatf(4.89352518554385e-03f);
    const vf ax = (vf)((vfi)x & ~(vfi)splatf(-0.0f)); /* |x| */
    return selectf(ax < splatf(0.0004f), x, c * p / q);
}

#define PT_VM_UNARY(NAME, T, V, W, LD, ST, BODY)                                               \
    static void NAME(int64_t n, T *o, const T *a) {                                           \
        int64_t i = 0;                                                                        \
        for (; i + W <= n; i += W) {                                                          \
            V x = LD(a + i);                                                                  \
            ST(o + i, BODY);                                                                  \
        }                                                                                     \
        if (i < n) {                                                                          \
            T buf[W];                                                                         \
            memset(buf, 0, sizeof buf);                                                       \
            memcpy(buf, a + i, (size_t)(n - i) * sizeof(T));                                  \
            V x = LD(buf);                                                                    \
            ST(buf, BODY);                                                                    \
            memcpy(o + i, buf, (size_t)(n - i) * sizeof(T));                                  \
        }                                                                                     \
    }

/* exp's f32 vector function: exp_vf above where the level has FMA, else
 * SLEEF's (faster there). */
#if defined(__FMA__) || defined(__AVX512F__)
#define PT_VM_EXP_F32(x) exp_vf(x)
#else
#define PT_VM_EXP_F32(x) PT_VM_SF(exp)(x)
#endif
#define PT_VM_UNARIES(name, KIND, F32, F64, VF32, VF64)                                        \
    PT_VM_UNARY(name##_f32, float, vf, WF, ldf, stf, VF32)                                     \
    PT_VM_UNARY(name##_f64, double, vd, WD, ldd, std_, VF64)
PT_CPU_VM_FUNCS(PT_VM_UNARIES)

/* The arithmetic rows (vecmath.h): whole vectors, then the last elements
 * one by one (the same operation, so the same bits). */
#define PT_VM_ARITH_FN(NAME, T, V, W, LD, ST, OP)                                              \
    static void NAME(int64_t n, T *o, const T *a, const T *b) {                               \
        int64_t i = 0;                                                                        \
        for (; i + W <= n; i += W) ST(o + i, LD(a + i) OP LD(b + i));                         \
        for (; i < n; ++i) o[i] = a[i] OP b[i];                                               \
    }
#define PT_VM_ARITHS(name, KIND, OP)                                                           \
    PT_VM_ARITH_FN(name##_f32, float, vf, WF, ldf, stf, OP)                                    \
    PT_VM_ARITH_FN(name##_f64, double, vd, WD, ldd, std_, OP)
PT_CPU_VM_ARITH(PT_VM_ARITHS)

/* sa and sb are 0 or 1: a broadcast operand is splat once. */
#define PT_VM_POW(NAME, T, V, W, LD, ST, SPLAT, FN)                                            \
    static void NAME(int64_t n, T *o, const T *a, int64_t sa, const T *b, int64_t sb) {       \
        int64_t i = 0;                                                                        \
        const V xs = SPLAT(a[0]), ys = SPLAT(b[0]);                                           \
        for (; i + W <= n; i += W) {                                                          \
            V x = sa ? LD(a + i) : xs, y = sb ? LD(b + i) : ys;                               \
            ST(o + i, FN(x, y));                                                              \
        }                                                                                     \
        if (i < n) {                                                                          \
            T bx[W], by[W];                                                                   \
            for (int64_t k = 0; k < W; ++k) {                                                 \
                bx[k] = i + k < n ? a[(i + k) * sa] : (T)1;                                   \
                by[k] = i + k < n ? b[(i + k) * sb] : (T)1;                                   \
            }                                                                                 \
            ST(bx, FN(LD(bx), LD(by)));                                                       \
            memcpy(o + i, bx, (size_t)(n - i) * sizeof(T));                                   \
        }                                                                                     \
    }

PT_VM_POW(pow_f32, float, vf, WF, ldf, stf, splatf, PT_VM_SF(pow))
PT_VM_POW(pow_f64, double, vd, WD, ldd, std_, splatd, PT_VM_SD(pow))

/* The f32 -> f16 and f32 -> i32 conversions of the widest vectors a level
 * has: PT_VM_CV_W floats a step (16 with AVX-512F, 8 with AVX2), then the
 * scalar conversion for the last ones.
 *
 * f32 -> f16: F16C's conversion, or AVX-512F's own of the same instruction
 * twice as wide (rounding to nearest even, given in the instruction, not
 * taken from MXCSR), gives portable/half.h's bits, NaNs included: quiet,
 * the top payload bits kept.
 *
 * f32 -> i32: the truncating conversion gives INT_MIN for NaN and for
 * everything out of range; the rules want INT_MAX at or above 2^31 and 0
 * for NaN, put back with two masks. */
#if defined(__AVX512F__)
#define PT_VM_CV_W 16
static inline void to_f16_step(uint16_t *o, const float *a) {
    _mm256_storeu_si256((__m256i *)o, _mm512_cvtps_ph(_mm512_loadu_ps(a), _MM_FROUND_TO_NEAREST_INT));
}
static inline void to_i32_step(int32_t *o, const float *a) {
    const __m512 x = _mm512_loadu_ps(a);
    const __mmask16 big = _mm512_cmp_ps_mask(x, _mm512_set1_ps(2147483648.0f), _CMP_GE_OQ);
    const __m512i r = _mm512_mask_mov_epi32(_mm512_cvttps_epi32(x), big, _mm512_set1_epi32(2147483647));
    _mm512_storeu_si512((void *)o, _mm512_maskz_mov_epi32(_mm512_cmp_ps_mask(x, x, _CMP_ORD_Q), r));
}
#elif defined(__F16C__) && defined(__AVX2__)
#define PT_VM_CV_W 8
static inline void to_f16_step(uint16_t *o, const float *a) {
    _mm_storeu_si128((__m128i *)o, _mm256_cvtps_ph(_mm256_loadu_ps(a), _MM_FROUND_TO_NEAREST_INT));
}
static inline void to_i32_step(int32_t *o, const float *a) {
    const __m256 x = _mm256_loadu_ps(a);
    __m256i r = _mm256_cvttps_epi32(x);
    r = _mm256_blendv_epi8(r, _mm256_set1_epi32(2147483647),
                           _mm256_castps_si256(_mm256_cmp_ps(x, _mm256_set1_ps(2147483648.0f), _CMP_GE_OQ)));
    _mm256_storeu_si256((__m256i *)o, _mm256_andnot_si256(_mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)), r));
}
#endif

#if defined(PT_VM_CV_W)
static void vm_to_f16(int64_t n, uint16_t *o, const float *a) {
    int64_t i = 0;
    for (; i + PT_VM_CV_W <= n; i += PT_VM_CV_W) to_f16_step(o + i, a + i);
    if (i < n) pt_cpu_vm_to_f16_scalar(n - i, o + i, a + i);
}
static void vm_f32_to_i32(int64_t n, int32_t *o, const float *a) {
    int64_t i = 0;
    for (; i + PT_VM_CV_W <= n; i += PT_VM_CV_W) to_i32_step(o + i, a + i);
    if (i < n) pt_cpu_vm_f32_to_i32_scalar(n - i, o + i, a + i);
}
/* F16C quiets a signalling NaN; portable/half.h widens every f16 exactly, so
 * the quiet bit it set is cleared again where the input was signalling. */
static void vm_from_f16(int64_t n, float *o, const uint16_t *a) {
    int64_t i = 0;
    const __m256i exp_quiet = _mm256_set1_epi32(0x7e00), exp_only = _mm256_set1_epi32(0x7c00);
    const __m256i payload = _mm256_set1_epi32(0x1ff), quiet32 = _mm256_set1_epi32(0x00400000);
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128((const __m128i *)(a + i));
        const __m256i w = _mm256_cvtepu16_epi32(h);
        const __m256i signalling =
            _mm256_andnot_si256(_mm256_cmpeq_epi32(_mm256_and_si256(w, payload), _mm256_setzero_si256()),
                                _mm256_cmpeq_epi32(_mm256_and_si256(w, exp_quiet), exp_only));
        const __m256i f = _mm256_castps_si256(_mm256_cvtph_ps(h));
        _mm256_storeu_si256((__m256i *)(o + i), _mm256_xor_si256(f, _mm256_and_si256(signalling, quiet32)));
    }
    if (i < n) pt_cpu_vm_from_f16_scalar(n - i, o + i, a + i);
}
#else
#define vm_to_f16 pt_cpu_vm_to_f16_scalar
#define vm_from_f16 pt_cpu_vm_from_f16_scalar
#define vm_f32_to_i32 pt_cpu_vm_f32_to_i32_scalar
#endif

void PT_VM_LEVEL(pt_cpu_vecmath *vm) { *vm = (pt_cpu_vecmath)PT_CPU_VM_TABLE(PT_VM_NAME); }
