/* libportable CUDA backend — the kernels, run on the CPU through
 * kernel_emulation.h and checked against plain references: the vectorised
 * and strided element-wise paths (tails, misalignment, broadcasting), the
 * integer and NaN rules, conversions, creation and RNG bits, reductions
 * (row, column and split-r plans; first-max/first-NaN argmax), softmax (warp
 * rows, block rows, columns), gather and one_hot, and f16/bf16 (conversions
 * rounded once, f32 compute with 16-bit loads and stores, bit-exact moves).
 *
 * Built from the same .cu files as the plugin (kernels_emulated_*.cpp
 * include them with PTCU_EMULATE). Prints one line per check group and a
 * closing "N passed, M failed". */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <limits>
#include <vector>

#include "internal.h"
#include "portable/half.h"
#include "portable/philox.h"

static int g_pass, g_fail;
static void check(bool ok, const char *what) {
    if (ok) {
        ++g_pass;
    } else {
        ++g_fail;
        printf("FAIL: %s\n", what);
    }
}

static unsigned long long g_rng = 0x9e3779b97f4a7c15ull;
static double rnd() { /* [-1, 1) */
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* ---- element-wise helpers ---- */

static pt_operand operand(void *base, pt_dtype t, int ndim, const int64_t *shape, const int64_t *strides,
                          size_t offset_bytes = 0) {
    pt_operand o;
    memset(&o, 0, sizeof o);
    o.buf = base;
    o.offset = offset_bytes;
    o.dtype = t;
    o.ndim = ndim;
    for (int d = 0; d < ndim; ++d) {
        o.shape[d] = shape[d];
        o.strides[d] = strides[d];
    }
    return o;
}

static cudaError_t run_ew(pt_op_kind kind, const pt_operand &out, const pt_operand *in, int nin,
                          double scalar = 0, double scalar2 = 0, uint64_t seed = 0, uint64_t counter = 0) {
    ptcu_ew_launch l;
    memset(&l, 0, sizeof l);
    l.kind = kind;
    l.n_inputs = nin;
    l.dtype[0] = out.dtype;
    l.ptr[0] = (char *)out.buf + out.offset;
    for (int k = 0; k < nin; ++k) {
        l.dtype[k + 1] = in[k].dtype;
        l.ptr[k + 1] = (char *)in[k].buf + in[k].offset;
    }
    ptcu_geometry_build(&out, in, nin, &l);
    l.scalar = scalar;
    l.scalar2 = scalar2;
    l.seed = seed;
    l.counter = counter;
    l.max_blocks = 3;
    return ptcu_launch_elementwise(&l, 0);
}

static void test_binary() {
    /* contiguous f32 add, n not a multiple of the vector width; aligned and
     * misaligned (offset by one element: the scalar loop) */
    for (int misalign = 0; misalign <= 1; ++misalign) {
        const int64_t n = 1003;
        std::vector<float> a(n + 1), b(n + 1), out(n + 1, -7.0f);
        for (int64_t i = 0; i <= n; ++i) {
            a[i] = (float)rnd();
            b[i] = (float)rnd();
        }
        const int64_t st = 1;
        const size_t off = misalign * sizeof(float);
        pt_operand o = operand(out.data(), PT_F32, 1, &n, &st, off);
        pt_operand in[2] = {operand(a.data(), PT_F32, 1, &n, &st, off), operand(b.data(), PT_F32, 1, &n, &st, off)};
        check(run_ew(PT_OP_ADD, o, in, 2) == cudaSuccess, "add launch");
        bool ok = true;
        for (int64_t i = 0; i < n; ++i) ok = ok && out[i + misalign] == a[i + misalign] + b[i + misalign];
        if (misalign) ok = ok && out[0] == -7.0f;
        check(ok, misalign ? "add f32 contiguous, misaligned" : "add f32 contiguous, vectorised + tail");
    }
    /* broadcast row [5,7] + [7] in i32, wrapping */
    {
        const int64_t shape[2] = {5, 7}, cs[2] = {7, 1}, bs[2] = {0, 1};
        std::vector<int32_t> a(35), b(7), out(35);
        for (int i = 0; i < 35; ++i) a[i] = i == 3 ? INT32_MAX : i * 3 - 50;
        for (int j = 0; j < 7; ++j) b[j] = j - 2;
        pt_operand o = operand(out.data(), PT_I32, 2, shape, cs);
        pt_operand in[2] = {operand(a.data(), PT_I32, 2, shape, cs), operand(b.data(), PT_I32, 2, shape, bs)};
        run_ew(PT_OP_ADD, o, in, 2);
        bool ok = true;
        for (int i = 0; i < 35; ++i) ok = ok && out[i] == (int32_t)((uint32_t)a[i] + (uint32_t)b[i % 7]);
        check(ok && out[3] == INT32_MIN, "add i32 broadcast row, wraps");
    }
    /* integer division rules */
    {
        const int64_t n = 6, st = 1;
        int32_t a[6] = {7, -7, INT32_MIN, 5, 0, -9}, b[6] = {2, 2, -1, 0, 3, -4}, out[6];
        int32_t want[6] = {3, -3, INT32_MIN, 0, 0, 2};
        pt_operand o = operand(out, PT_I32, 1, &n, &st);
        pt_operand in[2] = {operand(a, PT_I32, 1, &n, &st), operand(b, PT_I32, 1, &n, &st)};
        run_ew(PT_OP_DIV, o, in, 2);
        check(memcmp(out, want, sizeof want) == 0, "div i32: truncation, /0 -> 0, INT_MIN/-1 -> INT_MIN");
        int64_t a64[2] = {INT64_MIN, 9}, b64[2] = {-1, 0}, o64[2];
        const int64_t n2 = 2;
        pt_operand o2 = operand(o64, PT_I64, 1, &n2, &st);
        pt_operand in2[2] = {operand(a64, PT_I64, 1, &n2, &st), operand(b64, PT_I64, 1, &n2, &st)};
        run_ew(PT_OP_DIV, o2, in2, 2);
        check(o64[0] == INT64_MIN && o64[1] == 0, "div i64: INT64_MIN/-1, /0");
    }
    /* NaN propagation in maximum/minimum; pow */
    {
        const int64_t n = 4, st = 1;
        const float nan = std::numeric_limits<float>::quiet_NaN();
        float a[4] = {1, nan, 3, -2}, b[4] = {nan, 2, 1, -1}, mx[4], mn[4], pw[4];
        pt_operand in[2] = {operand(a, PT_F32, 1, &n, &st), operand(b, PT_F32, 1, &n, &st)};
        run_ew(PT_OP_MAXIMUM, operand(mx, PT_F32, 1, &n, &st), in, 2);
        run_ew(PT_OP_MINIMUM, operand(mn, PT_F32, 1, &n, &st), in, 2);
        check(isnan(mx[0]) && isnan(mx[1]) && mx[2] == 3 && mx[3] == -1, "maximum propagates NaN");
        check(isnan(mn[0]) && isnan(mn[1]) && mn[2] == 1 && mn[3] == -2, "minimum propagates NaN");
        float pa[4] = {2, 9, 2, 0}, pb[4] = {10, 0.5f, -1, 0};
        pt_operand pin[2] = {operand(pa, PT_F32, 1, &n, &st), operand(pb, PT_F32, 1, &n, &st)};
        run_ew(PT_OP_POW, operand(pw, PT_F32, 1, &n, &st), pin, 2);
        check(pw[0] == 1024 && pw[1] == 3 && pw[2] == 0.5f && pw[3] == 1, "pow f32");
        int32_t ia[2] = {1, 2}, io[2];
        const int64_t n2 = 2;
        pt_operand iin[2] = {operand(ia, PT_I32, 1, &n2, &st), operand(ia, PT_I32, 1, &n2, &st)};
        check(run_ew(PT_OP_POW, operand(io, PT_I32, 1, &n2, &st), iin, 2) == cudaErrorNotSupported,
              "pow i32 has no kernel");
    }
    /* scalar-broadcast input on the contiguous path, and axpy in place */
    {
        const int64_t n = 517, st = 1, zero = 0;
        std::vector<double> y(n), x(n), out(n);
        double s = 2.5;
        for (int64_t i = 0; i < n; ++i) {
            y[i] = rnd();
            x[i] = rnd();
        }
        pt_operand in[2] = {operand(y.data(), PT_F64, 1, &n, &st), operand(&s, PT_F64, 1, &n, &zero)};
        run_ew(PT_OP_MUL, operand(out.data(), PT_F64, 1, &n, &st), in, 2);
        bool ok = true;
        for (int64_t i = 0; i < n; ++i) ok = ok && out[i] == y[i] * 2.5;
        check(ok, "mul f64 by a broadcast scalar tensor");
        std::vector<double> y0 = y;
        pt_operand ax[2] = {operand(y.data(), PT_F64, 1, &n, &st), operand(x.data(), PT_F64, 1, &n, &st)};
        run_ew(PT_OP_AXPY, operand(y.data(), PT_F64, 1, &n, &st), ax, 2, -0.5);
        ok = true;
        for (int64_t i = 0; i < n; ++i) ok = ok && fabs(y[i] - (y0[i] - 0.5 * x[i])) < 1e-15;
        check(ok, "axpy f64 in place");
    }
}

static void test_compare_where_unary() {
    const int64_t n = 5, st = 1;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    double a[5] = {1, 2, nan, -1, 4}, b[5] = {1, 3, 0, -2, nan};
    uint8_t lt[5], eq[5], gt[5];
    pt_operand in[2] = {operand(a, PT_F64, 1, &n, &st), operand(b, PT_F64, 1, &n, &st)};
    run_ew(PT_OP_LT, operand(lt, PT_U8, 1, &n, &st), in, 2);
    run_ew(PT_OP_EQ, operand(eq, PT_U8, 1, &n, &st), in, 2);
    run_ew(PT_OP_GT, operand(gt, PT_U8, 1, &n, &st), in, 2);
    const uint8_t wlt[5] = {0, 1, 0, 0, 0}, weq[5] = {1, 0, 0, 0, 0}, wgt[5] = {0, 0, 0, 1, 0};
    check(!memcmp(lt, wlt, 5) && !memcmp(eq, weq, 5) && !memcmp(gt, wgt, 5), "lt/eq/gt f64, NaN compares false");
    int64_t x[5] = {10, 20, 30, 40, 50}, yv = -1, w[5];
    const int64_t zero = 0;
    pt_operand win[3] = {operand(lt, PT_U8, 1, &n, &st), operand(x, PT_I64, 1, &n, &st),
                         operand(&yv, PT_I64, 1, &n, &zero)};
    run_ew(PT_OP_WHERE, operand(w, PT_I64, 1, &n, &st), win, 3);
    check(w[0] == -1 && w[1] == 20 && w[2] == -1 && w[4] == -1, "where i64 with a broadcast branch");

    int32_t ia[4] = {INT32_MIN, -5, 0, 7}, neg[4], ab[4], rl[4], as[4], ms[4];
    const int64_t n4 = 4;
    pt_operand iin = operand(ia, PT_I32, 1, &n4, &st);
    run_ew(PT_OP_NEG, operand(neg, PT_I32, 1, &n4, &st), &iin, 1);
    run_ew(PT_OP_ABS, operand(ab, PT_I32, 1, &n4, &st), &iin, 1);
    run_ew(PT_OP_RELU, operand(rl, PT_I32, 1, &n4, &st), &iin, 1);
    run_ew(PT_OP_ADD_SCALAR, operand(as, PT_I32, 1, &n4, &st), &iin, 1, 2.7);
    run_ew(PT_OP_MUL_SCALAR, operand(ms, PT_I32, 1, &n4, &st), &iin, 1, -3.0);
    check(neg[0] == INT32_MIN && neg[1] == 5 && ab[0] == INT32_MIN && ab[1] == 5 && rl[1] == 0 && rl[3] == 7,
          "neg/abs/relu i32 (wrapping at INT_MIN)");
    check(as[1] == -3 && as[3] == 9 && ms[1] == 15 && ms[3] == -21, "add/mul scalar i32 (scalar truncated)");
    float fa[4] = {-1.5f, 0.0f, (float)nan, 2.0f}, fr[4], fe[4], fs[4], fl[4], ft[4], fq[4];
    pt_operand fin = operand(fa, PT_F32, 1, &n4, &st);
    run_ew(PT_OP_RELU, operand(fr, PT_F32, 1, &n4, &st), &fin, 1);
    run_ew(PT_OP_EXP, operand(fe, PT_F32, 1, &n4, &st), &fin, 1);
    run_ew(PT_OP_SIGMOID, operand(fs, PT_F32, 1, &n4, &st), &fin, 1);
    run_ew(PT_OP_LOG, operand(fl, PT_F32, 1, &n4, &st), &fin, 1);
    run_ew(PT_OP_TANH, operand(ft, PT_F32, 1, &n4, &st), &fin, 1);
    run_ew(PT_OP_SQRT, operand(fq, PT_F32, 1, &n4, &st), &fin, 1);
    check(fr[0] == 0 && fr[1] == 0 && isnan(fr[2]) && fr[3] == 2, "relu f32 keeps NaN");
    check(fabsf(fe[3] - expf(2)) < 1e-6f && fabsf(fs[0] - 1 / (1 + expf(1.5f))) < 1e-7f && fs[1] == 0.5f &&
              fabsf(fl[3] - logf(2)) < 1e-7f && isnan(fl[0]) && fabsf(ft[0] - tanhf(-1.5f)) < 1e-7f &&
              fq[3] == sqrtf(2.0f),
          "exp/sigmoid/log/tanh/sqrt f32");
    check(run_ew(PT_OP_EXP, operand(neg, PT_I32, 1, &n4, &st), &iin, 1) == cudaErrorNotSupported,
          "exp i32 has no kernel");
}

static void test_data() {
    const int64_t n = 6, st = 1;
    /* conversions */
    double d[6] = {-1.0, 255.9, 1e10, -1e10, std::numeric_limits<double>::quiet_NaN(), -2.7};
    uint8_t u[6];
    int32_t i32[6];
    int64_t i64[6];
    pt_operand din = operand(d, PT_F64, 1, &n, &st);
    run_ew(PT_OP_COPY, operand(u, PT_U8, 1, &n, &st), &din, 1);
    run_ew(PT_OP_COPY, operand(i32, PT_I32, 1, &n, &st), &din, 1);
    run_ew(PT_OP_COPY, operand(i64, PT_I64, 1, &n, &st), &din, 1);
    check(u[0] == 255 && u[1] == 255 && u[4] == 0 && u[5] == 254, "f64 -> u8 truncates through int64 and wraps");
    check(i32[0] == -1 && i32[2] == INT32_MAX && i32[3] == INT32_MIN && i32[4] == 0 && i32[5] == -2,
          "f64 -> i32 truncates and saturates, NaN -> 0");
    check(i64[2] == 10000000000ll && i64[3] == -10000000000ll && i64[5] == -2, "f64 -> i64");
    int64_t big[2] = {0x100000005ll, -1};
    int32_t wrapped[2];
    float asf[2];
    const int64_t n2 = 2;
    pt_operand bin = operand(big, PT_I64, 1, &n2, &st);
    run_ew(PT_OP_COPY, operand(wrapped, PT_I32, 1, &n2, &st), &bin, 1);
    run_ew(PT_OP_COPY, operand(asf, PT_F32, 1, &n2, &st), &bin, 1);
    check(wrapped[0] == 5 && wrapped[1] == -1 && asf[1] == -1.0f, "i64 -> i32 wraps, i64 -> f32");
    /* transposed copy (strided path) */
    {
        const int64_t shape[2] = {4, 3}, src_st[2] = {1, 4}, dst_st[2] = {3, 1};
        float src[12], dst[12];
        for (int i = 0; i < 12; ++i) src[i] = (float)i;
        pt_operand sin = operand(src, PT_F32, 2, shape, src_st);
        run_ew(PT_OP_COPY, operand(dst, PT_F32, 2, shape, dst_st), &sin, 1);
        bool ok = true;
        for (int r = 0; r < 4; ++r)
            for (int c = 0; c < 3; ++c) ok = ok && dst[r * 3 + c] == src[r + c * 4];
        check(ok, "copy of a transposed view");
    }
    /* fill with stride 2 */
    {
        uint8_t buf[10];
        memset(buf, 7, sizeof buf);
        const int64_t five = 5, two = 2;
        run_ew(PT_OP_FILL, operand(buf, PT_U8, 1, &five, &two), nullptr, 0, -1.0);
        bool ok = true;
        for (int i = 0; i < 10; ++i) ok = ok && buf[i] == (i % 2 ? 7 : 255);
        check(ok, "fill u8 (-1 -> 255) every other element");
    }
    /* arange: exact integers past 2^53, floats */
    {
        int64_t out[5];
        const int64_t five = 5;
        run_ew(PT_OP_ARANGE, operand(out, PT_I64, 1, &five, &st), nullptr, 0, 9007199254740992.0, 1.0);
        bool ok = true;
        for (int i = 0; i < 5; ++i) ok = ok && out[i] == 9007199254740992ll + i;
        check(ok, "arange i64 exact beyond 2^53");
        float f[5];
        run_ew(PT_OP_ARANGE, operand(f, PT_F32, 1, &five, &st), nullptr, 0, 0.5, -0.25);
        check(f[0] == 0.5f && f[4] == -0.5f, "arange f32");
    }
    /* RNG: the bits of philox.h */
    {
        const int64_t m = 1030;
        std::vector<float> uf(m), nf(m);
        std::vector<double> ud(m), nd(m);
        const uint64_t seed = 0x1234567890abcdefull, counter = 77;
        run_ew(PT_OP_RAND_UNIFORM, operand(uf.data(), PT_F32, 1, &m, &st), nullptr, 0, 0, 0, seed, counter);
        run_ew(PT_OP_RAND_NORMAL, operand(nf.data(), PT_F32, 1, &m, &st), nullptr, 0, 0, 0, seed, counter);
        run_ew(PT_OP_RAND_UNIFORM, operand(ud.data(), PT_F64, 1, &m, &st), nullptr, 0, 0, 0, seed, counter);
        run_ew(PT_OP_RAND_NORMAL, operand(nd.data(), PT_F64, 1, &m, &st), nullptr, 0, 0, 0, seed, counter);
        bool ok = true;
        for (int64_t i = 0; i < m; ++i) {
            ok = ok && uf[i] == pt_philox_uniform_f32(seed, counter, (uint64_t)i);
            ok = ok && ud[i] == pt_philox_uniform_f64(seed, counter, (uint64_t)i);
            ok = ok && nf[i] == pt_philox_normal_f32(seed, counter, (uint64_t)i);
            ok = ok && nd[i] == pt_philox_normal_f64(seed, counter, (uint64_t)i);
        }
        check(ok, "rand/randn f32/f64 equal philox.h element by element");
    }
}

/* ---- f16 / bf16 ---- */

static void test_half() {
    const int64_t st = 1;
    /* f32 -> f16: ties to even, overflow to inf, NaN stays NaN */
    {
        const float f[5] = {2049.0f, 2051.0f, 65520.0f, -std::numeric_limits<float>::quiet_NaN(), 1e-8f};
        uint16_t h[5];
        const int64_t n = 5;
        pt_operand in = operand((void *)f, PT_F32, 1, &n, &st);
        check(run_ew(PT_OP_COPY, operand(h, PT_F16, 1, &n, &st), &in, 1) == cudaSuccess, "copy f32 -> f16 launches");
        check(h[0] == 0x6800 && h[1] == 0x6802 && h[2] == 0x7c00 && (h[3] & 0xfe00) == 0xfe00 && h[4] == 0x0000,
              "f32 -> f16 rounds to nearest even, 65520 -> inf, NaN quiet, 1e-8 -> 0");
    }
    /* f64 -> 16 bits rounds once: 1 + 2^-11 + 2^-40 is above the tie, so it
     * rounds up (through f32 by nearest it would be a tie, rounded down). */
    {
        const double d[2] = {1.0 + ldexp(1.0, -11) + ldexp(1.0, -40), 1.0 + ldexp(1.0, -8) + ldexp(1.0, -40)};
        uint16_t h[2], b[2];
        const int64_t n = 2;
        pt_operand in = operand((void *)d, PT_F64, 1, &n, &st);
        run_ew(PT_OP_COPY, operand(h, PT_F16, 1, &n, &st), &in, 1);
        run_ew(PT_OP_COPY, operand(b, PT_BF16, 1, &n, &st), &in, 1);
        check(h[0] == 0x3c01 && b[1] == 0x3f81, "f64 -> f16 / bf16 rounded once (no double rounding)");
    }
    /* f16 -> bf16, -> i32 (truncates), -> u8; a transposed view (strided path) */
    {
        const int64_t shape[2] = {2, 3}, src_st[2] = {1, 2}, dst_st[2] = {3, 1};
        const float vals[6] = {-2.5f, 1.0f / 3.0f, 7.0f, 300.0f, 0.5f, -1.0f};
        uint16_t src[6];
        for (int i = 0; i < 6; ++i) src[i] = pt_f32_to_f16_bits(vals[i]);
        uint16_t bf[6];
        int32_t i32[6];
        pt_operand in = operand(src, PT_F16, 2, shape, src_st);
        run_ew(PT_OP_COPY, operand(bf, PT_BF16, 2, shape, dst_st), &in, 1);
        run_ew(PT_OP_COPY, operand(i32, PT_I32, 2, shape, dst_st), &in, 1);
        bool ok = true;
        for (int r = 0; r < 2; ++r)
            for (int c = 0; c < 3; ++c) {
                const float x = pt_f16_bits_to_f32(src[r + c * 2]);
                ok = ok && bf[r * 3 + c] == pt_f32_to_bf16_bits(x) && i32[r * 3 + c] == (int32_t)x;
            }
        check(ok, "f16 -> bf16 / i32 over a transposed view");
    }
    /* add in f32, rounded once: 2048 + 3 = 2051, a tie, -> 2052; 67 elements
     * (vector bulk and tail), then misaligned by one element (scalar loop) */
    for (int shift = 0; shift < 2; ++shift) {
        const int64_t n = 67;
        std::vector<uint16_t> a(n + 1), b(n + 1), o(n + 1);
        std::vector<float> fa(n), fb(n);
        for (int64_t i = 0; i < n; ++i) {
            fa[i] = i == 0 ? 2048.0f : (float)rnd() * 100.0f;
            fb[i] = i == 0 ? 3.0f : (float)rnd();
            a[i + shift] = pt_f32_to_f16_bits(fa[i]);
            b[i + shift] = pt_f32_to_f16_bits(fb[i]);
        }
        pt_operand in[2] = {operand(a.data(), PT_F16, 1, &n, &st, shift * 2),
                            operand(b.data(), PT_F16, 1, &n, &st, shift * 2)};
        run_ew(PT_OP_ADD, operand(o.data(), PT_F16, 1, &n, &st, shift * 2), in, 2);
        bool ok = o[shift] == pt_f32_to_f16_bits(2052.0f);
        for (int64_t i = 0; i < n; ++i)
            ok = ok && o[i + shift] == pt_f32_to_f16_bits(pt_f16_bits_to_f32(a[i + shift]) +
                                                          pt_f16_bits_to_f32(b[i + shift]));
        check(ok, shift ? "add f16 misaligned: f32 sum rounded once" : "add f16 vectorised: f32 sum rounded once");
    }
    /* bf16: mul_scalar, exp, compare (u8 out), where keeps a NaN's bits */
    {
        const int64_t n = 4;
        const float vals[4] = {1.5f, -2.0f, 0.1f, 3.0f};
        uint16_t x[4], y[4], e[4];
        uint8_t lt[4], cond[4] = {1, 0, 1, 0};
        for (int i = 0; i < 4; ++i) x[i] = pt_f32_to_bf16_bits(vals[i]);
        pt_operand in = operand(x, PT_BF16, 1, &n, &st);
        run_ew(PT_OP_MUL_SCALAR, operand(y, PT_BF16, 1, &n, &st), &in, 1, 1.0 / 3.0);
        run_ew(PT_OP_EXP, operand(e, PT_BF16, 1, &n, &st), &in, 1);
        pt_operand pair[2] = {in, operand(y, PT_BF16, 1, &n, &st)};
        run_ew(PT_OP_LT, operand(lt, PT_U8, 1, &n, &st), pair, 2);
        bool ok = true;
        for (int i = 0; i < 4; ++i) {
            const float xf = pt_bf16_bits_to_f32(x[i]);
            ok = ok && y[i] == pt_f32_to_bf16_bits(xf * (float)(1.0 / 3.0)) && e[i] == pt_f32_to_bf16_bits(expf(xf)) &&
                 lt[i] == (xf < pt_bf16_bits_to_f32(y[i]) ? 1 : 0);
        }
        check(ok, "bf16 mul_scalar / exp / lt computed in f32");
        uint16_t a[4] = {0x7c01, 0x3c00, 0x3c00, 0x3c00}, b[4] = {0, 0x7d55, 0, 0x8001}, w[4];
        pt_operand wi[3] = {operand(cond, PT_U8, 1, &n, &st), operand(a, PT_F16, 1, &n, &st),
                            operand(b, PT_F16, 1, &n, &st)};
        run_ew(PT_OP_WHERE, operand(w, PT_F16, 1, &n, &st), wi, 3);
        check(w[0] == 0x7c01 && w[1] == 0x7d55 && w[2] == 0x3c00 && w[3] == 0x8001,
              "where f16 selects bits (signalling NaNs and subnormals untouched)");
    }
    /* fill and arange round the double once */
    {
        const int64_t n = 3;
        uint16_t f[3], r[3];
        run_ew(PT_OP_FILL, operand(f, PT_F16, 1, &n, &st), nullptr, 0, 0.1);
        run_ew(PT_OP_ARANGE, operand(r, PT_BF16, 1, &n, &st), nullptr, 0, 256.0, 1.0);
        check(f[0] == pt_f64_to_f16_bits(0.1) && f[2] == 0x2e66, "fill f16 0.1 -> 0x2e66");
        check(r[0] == 0x4380 && r[1] == 0x4380 && r[2] == 0x4381, "arange bf16 256, 257 (tie -> 256), 258");
    }
    /* reductions and softmax: 16-bit rows widened, accumulated wide, rounded
     * once. sum(2048, 1, 2) = 2051 -> 2052; adding in f16 step by step would
     * give 2050. A long row (vector loads, split r) sums to its exact total. */
    {
        const int64_t r = 3000;
        std::vector<uint16_t> x(r);
        for (int64_t j = 0; j < r; ++j) x[j] = pt_f32_to_f16_bits(j == 0 ? 2048.0f : j < 3 ? (float)j : 0.25f);
        x[1234] = pt_f32_to_f16_bits(-3.5f);
        x[2000] = pt_f32_to_f16_bits(2048.0f); /* ties the max: the first index wins */
        uint16_t sum3 = 0, sum_long = 0, mx = 0;
        int64_t arg = -1;
        auto reduce = [&](pt_op_kind kind, int64_t n, pt_dtype ot, void *out) {
            ptcu_reduce_launch l;
            memset(&l, 0, sizeof l);
            l.kind = kind;
            l.in_dtype = PT_F16;
            l.out_dtype = ot;
            l.in = x.data();
            l.out = out;
            l.x = {1, n, 1, n, 1, 1};
            l.sm_count = 2;
            std::vector<char> scratch(ptcu_reduce_scratch_bytes(&l) + 16);
            l.scratch = scratch.data();
            return ptcu_launch_reduce(&l, 0) == cudaSuccess;
        };
        bool ok = reduce(PT_OP_SUM, 3, PT_F16, &sum3) && reduce(PT_OP_SUM, r, PT_F16, &sum_long) &&
                  reduce(PT_OP_MAX, r, PT_F16, &mx) && reduce(PT_OP_ARGMAX, r, PT_I64, &arg);
        const double total = 2048.0 + 1 + 2 - 3.5 + 2048.0 + 0.25 * (double)(r - 5);
        check(ok && sum3 == pt_f32_to_f16_bits(2052.0f) && sum_long == pt_f64_to_f16_bits(total),
              "sum f16 accumulates wide and rounds once");
        check(mx == pt_f32_to_f16_bits(2048.0f) && arg == 0, "max / argmax f16 (first maximum)");
        /* softmax of a bf16 row: the exact softmax of its values within one
         * bf16 rounding (plus f32 noise: the lanes sum in their own order) */
        const int64_t n = 5, one = 1;
        const float v[5] = {0.5f, -1.0f, 3.0f, 3.0f, 0.0f};
        uint16_t in[5], out[5], lout[5];
        double m = -INFINITY, z = 0;
        for (int i = 0; i < 5; ++i) {
            in[i] = pt_f32_to_bf16_bits(v[i]);
            m = fmax(m, (double)pt_bf16_bits_to_f32(in[i]));
        }
        for (int i = 0; i < 5; ++i) z += exp((double)pt_bf16_bits_to_f32(in[i]) - m);
        ptcu_softmax_launch sl;
        memset(&sl, 0, sizeof sl);
        sl.dtype = PT_BF16;
        sl.in = in;
        sl.out = out;
        sl.x = {one, n, one, n, one, one};
        sl.sm_count = 1;
        ok = ptcu_launch_softmax(&sl, 0) == cudaSuccess;
        sl.log = true;
        sl.out = lout;
        ok = ok && ptcu_launch_softmax(&sl, 0) == cudaSuccess;
        const double u = ldexp(1.0, -8) + 1e-6;
        for (int i = 0; i < 5; ++i) {
            const double xi = pt_bf16_bits_to_f32(in[i]);
            const double p = exp(xi - m) / z, lp = (xi - m) - log(z);
            ok = ok && fabs(pt_bf16_bits_to_f32(out[i]) - p) <= u * p &&
                 fabs(pt_bf16_bits_to_f32(lout[i]) - lp) <= u * fabs(lp) + 1e-6;
        }
        check(ok, "softmax / log_softmax bf16 computed in f32, rounded once");
    }
}

/* ---- reductions ---- */

struct RedCase {
    int64_t outer, r, inner;
    bool transposed; /* r is the fastest axis in memory */
};

static void test_reduce() {
    const RedCase cases[] = {{1, 1, 1, false},   {3, 5, 1, false},    {1, 100000, 1, false}, {2, 70, 1, true},
                             {4, 3, 37, false},  {2, 2000, 40, false}, {5, 1, 6, true},       {1, 3000, 33, true},
                             {300, 7, 1, false}, {2, 9, 300, false}};
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (const RedCase &c : cases) {
        const int64_t total = c.outer * c.r * c.inner;
        /* strides: [outer, r, inner] contiguous, or [outer, inner, r] in memory */
        int64_t so, sr, si;
        if (c.transposed) {
            so = c.r * c.inner;
            si = c.r;
            sr = 1;
        } else {
            so = c.r * c.inner;
            sr = c.inner;
            si = 1;
        }
        std::vector<float> xf(total);
        std::vector<int32_t> xi(total);
        std::vector<uint8_t> xu(total);
        for (int64_t k = 0; k < total; ++k) {
            xf[k] = (float)(int)(rnd() * 8) / 4.0f; /* many ties */
            xi[k] = (int32_t)(rnd() * 2e9);
            xu[k] = (uint8_t)(rnd() * 127 + 127);
        }
        if (total > 10) xf[total / 3] = (float)nan; /* one NaN */
        const int64_t nout = c.outer * c.inner;
        std::vector<float> sum_f(nout), max_f(nout), mean_f(nout);
        std::vector<int32_t> sum_i(nout), max_i(nout);
        std::vector<int64_t> sum_i64(nout), arg_f(nout), arg_i(nout);
        std::vector<uint8_t> max_u(nout);
        ptcu_reduce_launch l;
        std::vector<char> scratch;
        auto launch = [&](pt_op_kind kind, pt_dtype it, pt_dtype ot, const void *in, void *out) {
            memset(&l, 0, sizeof l);
            l.kind = kind;
            l.in_dtype = it;
            l.out_dtype = ot;
            l.in = in;
            l.out = out;
            l.x = {c.outer, c.r, c.inner, so, sr, si};
            l.sm_count = 2;
            scratch.assign(ptcu_reduce_scratch_bytes(&l) + 16, 0);
            l.scratch = scratch.data();
            return ptcu_launch_reduce(&l, 0);
        };
        bool launched = launch(PT_OP_SUM, PT_F32, PT_F32, xf.data(), sum_f.data()) == cudaSuccess;
        launched &= launch(PT_OP_MEAN, PT_F32, PT_F32, xf.data(), mean_f.data()) == cudaSuccess;
        launched &= launch(PT_OP_MAX, PT_F32, PT_F32, xf.data(), max_f.data()) == cudaSuccess;
        launched &= launch(PT_OP_ARGMAX, PT_F32, PT_I64, xf.data(), arg_f.data()) == cudaSuccess;
        launched &= launch(PT_OP_SUM, PT_I32, PT_I32, xi.data(), sum_i.data()) == cudaSuccess;
        launched &= launch(PT_OP_SUM, PT_I32, PT_I64, xi.data(), sum_i64.data()) == cudaSuccess;
        launched &= launch(PT_OP_MAX, PT_I32, PT_I32, xi.data(), max_i.data()) == cudaSuccess;
        launched &= launch(PT_OP_ARGMAX, PT_I32, PT_I64, xi.data(), arg_i.data()) == cudaSuccess;
        launched &= launch(PT_OP_MAX, PT_U8, PT_U8, xu.data(), max_u.data()) == cudaSuccess;
        bool ok_sum = true, ok_max = true, ok_arg = true, ok_int = true;
        for (int64_t o = 0; o < c.outer; ++o)
            for (int64_t i = 0; i < c.inner; ++i) {
                double s = 0, mx = -INFINITY;
                int64_t am = -1, amf = -1;
                uint64_t si64 = 0;
                int32_t mi = INT32_MIN;
                uint8_t mu = 0;
                bool has_nan = false;
                for (int64_t j = 0; j < c.r; ++j) {
                    const int64_t at = o * so + j * sr + i * si;
                    const float v = xf[at];
                    s += v;
                    if (isnan(v)) {
                        if (!has_nan) amf = j;
                        has_nan = true;
                    } else if (!has_nan && (amf < 0 || v > mx)) {
                        mx = v;
                        amf = j;
                    }
                    si64 += (uint64_t)(int64_t)xi[at];
                    if (am < 0 || xi[at] > mi) {
                        mi = xi[at];
                        am = j;
                    }
                    if (xu[at] > mu) mu = xu[at];
                }
                const int64_t k = o * c.inner + i;
                if (has_nan) ok_sum = ok_sum && isnan(sum_f[k]);
                else ok_sum = ok_sum && fabs(sum_f[k] - s) <= 1e-6 * (1 + fabs(s)) &&
                              fabs(mean_f[k] - s / c.r) <= 1e-6 * (1 + fabs(s / c.r));
                ok_max = ok_max && (has_nan ? isnan(max_f[k]) : max_f[k] == (float)mx);
                ok_arg = ok_arg && arg_f[k] == amf && arg_i[k] == am;
                ok_int = ok_int && sum_i[k] == (int32_t)(uint32_t)si64 && sum_i64[k] == (int64_t)si64 &&
                         max_i[k] == mi && max_u[k] == mu;
            }
        char what[160];
        snprintf(what, sizeof what, "reduce [%lld, %lld, %lld]%s: launches", (long long)c.outer, (long long)c.r,
                 (long long)c.inner, c.transposed ? " (r fastest)" : "");
        check(launched, what);
        snprintf(what, sizeof what, "reduce [%lld, %lld, %lld]%s: sum/mean f32", (long long)c.outer,
                 (long long)c.r, (long long)c.inner, c.transposed ? " (r fastest)" : "");
        check(ok_sum, what);
        snprintf(what, sizeof what, "reduce [%lld, %lld, %lld]%s: max f32 (NaN wins)", (long long)c.outer,
                 (long long)c.r, (long long)c.inner, c.transposed ? " (r fastest)" : "");
        check(ok_max, what);
        snprintf(what, sizeof what, "reduce [%lld, %lld, %lld]%s: argmax first max / first NaN",
                 (long long)c.outer, (long long)c.r, (long long)c.inner, c.transposed ? " (r fastest)" : "");
        check(ok_arg, what);
        snprintf(what, sizeof what, "reduce [%lld, %lld, %lld]%s: i32 sum wraps, i32/u8 max",
                 (long long)c.outer, (long long)c.r, (long long)c.inner, c.transposed ? " (r fastest)" : "");
        check(ok_int, what);
    }
}

/* ---- softmax ---- */

static void test_softmax() {
    const RedCase cases[] = {{3, 10, 1, false}, {2, 1500, 1, false}, {2, 7, 5, false},
                             {9, 33, 1, true},  {1, 1, 1, false},    {3, 4, 70, true}};
    for (const RedCase &c : cases) {
        for (int logf_ = 0; logf_ <= 1; ++logf_) {
            const int64_t total = c.outer * c.r * c.inner;
            int64_t so = c.r * c.inner, sr = c.inner, si = 1;
            if (c.transposed) {
                sr = 1;
                si = c.r;
            }
            std::vector<double> x(total), out(total);
            for (int64_t k = 0; k < total; ++k) x[k] = rnd() * 30;
            if (total > 3) x[1] = -INFINITY;
            ptcu_softmax_launch l;
            memset(&l, 0, sizeof l);
            l.log = logf_;
            l.dtype = PT_F64;
            l.in = x.data();
            l.out = out.data();
            l.x = {c.outer, c.r, c.inner, so, sr, si};
            l.sm_count = 1;
            bool ok = ptcu_launch_softmax(&l, 0) == cudaSuccess;
            for (int64_t o = 0; o < c.outer; ++o)
                for (int64_t i = 0; i < c.inner; ++i) {
                    double m = -INFINITY, s = 0;
                    for (int64_t j = 0; j < c.r; ++j) m = fmax(m, x[o * so + j * sr + i * si]);
                    for (int64_t j = 0; j < c.r; ++j) s += exp(x[o * so + j * sr + i * si] - m);
                    for (int64_t j = 0; j < c.r; ++j) {
                        const double v = x[o * so + j * sr + i * si] - m;
                        const double want = logf_ ? v - log(s) : exp(v) / s;
                        const double got = out[(o * c.r + j) * c.inner + i];
                        if (isinf(want)) ok = ok && got == want;
                        else ok = ok && fabs(got - want) <= 1e-12 * (1 + fabs(want));
                    }
                }
            char what[128];
            snprintf(what, sizeof what, "%s [%lld, %lld, %lld]%s", logf_ ? "log_softmax" : "softmax",
                     (long long)c.outer, (long long)c.r, (long long)c.inner, c.transposed ? " strided" : "");
            check(ok, what);
        }
    }
}

/* ---- gather, one_hot ---- */

static void test_index() {
    const int64_t outer = 2, r_in = 5, r_idx = 4, inner = 3;
    std::vector<float> x(outer * r_in * inner), out(outer * r_idx * inner, -1);
    for (size_t k = 0; k < x.size(); ++k) x[k] = (float)k;
    std::vector<int64_t> idx(outer * r_idx * inner);
    for (size_t k = 0; k < idx.size(); ++k) idx[k] = (int64_t)(k * 7 % 7) - 1 + (int64_t)(k % 7);
    ptcu_gather_launch g;
    memset(&g, 0, sizeof g);
    g.elem_size = 4;
    g.index_dtype = PT_I64;
    g.x = x.data();
    g.index = idx.data();
    g.out = out.data();
    g.outer = outer;
    g.r_in = r_in;
    g.r_idx = r_idx;
    g.inner = inner;
    g.xs[0] = r_in * inner;
    g.xs[1] = inner;
    g.xs[2] = 1;
    g.is[0] = r_idx * inner;
    g.is[1] = inner;
    g.is[2] = 1;
    g.sm_count = 1;
    bool ok = ptcu_launch_gather(&g, 0) == cudaSuccess;
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < r_idx; ++j)
            for (int64_t i = 0; i < inner; ++i) {
                const int64_t at = idx[(o * r_idx + j) * inner + i];
                const float want = (at >= 0 && at < r_in) ? x[(o * r_in + at) * inner + i] : 0.0f;
                ok = ok && out[(o * r_idx + j) * inner + i] == want;
            }
    check(ok, "gather f32 by i64 index, out-of-range -> 0");

    int32_t labels[8] = {2, 99, 0, 99, 7, 99, 4, 99}; /* stride 2: 2, 0, 7 (out of range), 4 */
    std::vector<double> oh(4 * 5, -1);
    ptcu_one_hot_launch h;
    memset(&h, 0, sizeof h);
    h.elem_size = 8;
    double one = 1.0;
    memcpy(&h.one_bits, &one, 8);
    h.label_dtype = PT_I32;
    h.labels = labels;
    h.label_stride = 2;
    h.out = oh.data();
    h.n = 4;
    h.count = 5;
    h.sm_count = 1;
    ok = ptcu_launch_one_hot(&h, 0) == cudaSuccess;
    const int want_col[4] = {2, 0, -1, 4};
    for (int rr = 0; rr < 4; ++rr)
        for (int cc = 0; cc < 5; ++cc) ok = ok && oh[rr * 5 + cc] == (cc == want_col[rr] ? 1.0 : 0.0);
    check(ok, "one_hot f64 from strided i32 labels, out-of-range -> zero row");
}

int main() {
    test_binary();
    test_compare_where_unary();
    test_data();
    test_reduce();
    test_softmax();
    test_index();
    test_half();
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
