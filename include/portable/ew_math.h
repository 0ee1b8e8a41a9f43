/** @file
 * libportable — the math of every element-wise op, written once.
 *
 * PT_EW_MATH(X) lists one X(KIND, name, FORM, DOMAIN, EXPR) row per
 * element-wise kind of the op table (op_table.h) that computes something:
 *   KIND    the op table's kind (PT_OP_<KIND>)
 *   name    the op table's name as a token (OpenCL kernels are ew_<name>)
 *   FORM    UNARY (x, scalars s and s2), BINARY (x, y, scalar s),
 *           COMPARE (x, y; the result is 0 or 1, stored as u8) or
 *           WHERE (c, x, y; c is the u8 condition)
 *   DOMAIN  the dtypes the expression is written for: FLOAT (f32, f64; f16
 *           and bf16 compute in f32 and round once) or ALL (every dtype the
 *           op table's row takes)
 *   EXPR    the result, in terms of the operands x, y, c, the scalars s, s2
 *           (already converted to the compute type) and T, the compute type
 *
 * Each backend expands the rows into its eager kernels: the cpu plugin's
 * row functions, the OpenCL kernels (this header is embedded in every
 * program), the CUDA functors. The rows are also text, so kernels generated
 * at run time (fused chains: OpenCL C, NVRTC) are built from the
 * rows too (pt_ew_row_of), with this header ahead of them for the pt_ew_*
 * helpers.
 *
 * Where the dialects differ, the expressions call a pt_ew_* helper and this
 * header defines it once per dialect:
 *   C11         (the cpu plugin, hosts): type-generic through _Generic over
 *               float, double, int32_t, int64_t, uint8_t;
 *   C++17/CUDA  (CUDA kernels, and the simulator's C++ build of them):
 *               templates on T, functions __host__ __device__ under nvcc;
 *   OpenCL C    (define PT_EW_OPENCL first): one T per program (common.cl
 *               defines T, UT, PT_IS_FLOAT, PT_IS_SIGNED), the built-ins.
 * The rules the helpers keep, as every backend did before: integer add,
 * sub, mul, neg and abs wrap (computed in the unsigned twin type); integer
 * division truncates, x / 0 == 0 and MIN / -1 == MIN; maximum, minimum and
 * clamp propagate NaN; relu keeps NaN and -0.0; floats are IEEE-754 with
 * the platform's accurate math functions (no fast-math). In older C and
 * C++ modes the header gives the rows only.
 *
 * A new element-wise op is a row here (and, when it needs a function the
 * dialects spell differently, a helper in each dialect below). */
#ifndef PORTABLE_EW_MATH_H
#define PORTABLE_EW_MATH_H

/* clang-format off */
/** The unary rows: x, the scalars s and s2. */
#define PT_EW_UNARY(X)                                                                         \
    X(NEG,        neg,        UNARY, ALL,   pt_ew_neg(x))                                       \
    X(ABS,        abs,        UNARY, ALL,   pt_ew_abs(x))                                       \
    X(EXP,        exp,        UNARY, FLOAT, pt_ew_exp(x))                                       \
    X(LOG,        log,        UNARY, FLOAT, pt_ew_log(x))                                       \
    X(SQRT,       sqrt,       UNARY, FLOAT, pt_ew_sqrt(x))                                      \
    X(RSQRT,      rsqrt,      UNARY, FLOAT, pt_ew_rsqrt(x))                                     \
    X(RELU,       relu,       UNARY, ALL,   pt_ew_is_neg(x) ? (T)0 : x)                         \
    X(SIGMOID,    sigmoid,    UNARY, FLOAT, (T)1 / ((T)1 + pt_ew_exp(-x)))                      \
    X(TANH,       tanh,       UNARY, FLOAT, pt_ew_tanh(x))                                      \
    X(SIN,        sin,        UNARY, FLOAT, pt_ew_sin(x))                                       \
    X(COS,        cos,        UNARY, FLOAT, pt_ew_cos(x))                                       \
    /* x Phi(x), Phi through erfc, which keeps its relative precision for x << 0 */             \
    X(GELU,       gelu,       UNARY, FLOAT, x * (T)0.5 * pt_ew_erfc(-x * (T)0.70710678118654752440)) \
    /* Phi(x) + x phi(x) */                                                                     \
    X(GELU_GRAD,  gelu_grad,  UNARY, FLOAT, (T)0.5 * pt_ew_erfc(-x * (T)0.70710678118654752440) + \
                                            x * (T)0.39894228040143267794 * pt_ew_exp((T)-0.5 * x * x)) \
    X(ADD_SCALAR, add_scalar, UNARY, ALL,   pt_ew_add(x, s))                                    \
    X(MUL_SCALAR, mul_scalar, UNARY, ALL,   pt_ew_mul(x, s))                                    \
    X(CLAMP,      clamp,      UNARY, ALL,   pt_ew_min(pt_ew_max(x, s), s2))

/** The binary rows: x, y, the scalar s. */
#define PT_EW_BINARY(X)                                                                        \
    X(ADD,        add,        BINARY, ALL,   pt_ew_add(x, y))                                   \
    X(SUB,        sub,        BINARY, ALL,   pt_ew_sub(x, y))                                   \
    X(MUL,        mul,        BINARY, ALL,   pt_ew_mul(x, y))                                   \
    X(DIV,        div,        BINARY, ALL,   pt_ew_div(x, y))                                   \
    X(POW,        pow,        BINARY, FLOAT, pt_ew_pow(x, y))                                   \
    X(MAXIMUM,    maximum,    BINARY, ALL,   pt_ew_max(x, y))                                   \
    X(MINIMUM,    minimum,    BINARY, ALL,   pt_ew_min(x, y))                                   \
    X(AXPY,       axpy,       BINARY, ALL,   pt_ew_add(x, pt_ew_mul(s, y)))

/** The comparisons: x, y; NaN compares unequal to everything, itself included. */
#define PT_EW_COMPARE(X)                                                                       \
    X(EQ,         eq,         COMPARE, ALL,  x == y)                                            \
    X(LT,         lt,         COMPARE, ALL,  x < y)                                             \
    X(GT,         gt,         COMPARE, ALL,  x > y)                                             \
    X(LE,         le,         COMPARE, ALL,  x <= y)                                            \
    X(GE,         ge,         COMPARE, ALL,  x >= y)                                            \
    X(NE,         ne,         COMPARE, ALL,  x != y)

/** where: c, x, y; selects values bit for bit, so a backend may copy raw bits. */
#define PT_EW_WHERE(X)                                                                         \
    X(WHERE,      where,      WHERE,   ALL,  c ? x : y)

/** Every row: X(KIND, name, FORM, DOMAIN, EXPR), as described at the top. */
#define PT_EW_MATH(X) PT_EW_UNARY(X) PT_EW_BINARY(X) PT_EW_COMPARE(X) PT_EW_WHERE(X)
/* clang-format on */

/* ---- The helpers, per dialect ---- */
/** @cond PT_EW_HELPERS (not API: what the expressions call) */

/* The shared bodies: max/min that propagate NaN (like torch.maximum; a NaN
 * y falls through to the second branch). */
#define PT_EW_MAX_BODY(x, y) return ((x) > (y) || pt_ew_isnan(x)) ? (x) : (y);
#define PT_EW_MIN_BODY(x, y) return ((x) < (y) || pt_ew_isnan(x)) ? (x) : (y);

#if defined(PT_EW_OPENCL)
/* ---- OpenCL C: T is the program's element type ---- */
#if PT_IS_FLOAT
#define pt_ew_isnan(v) isnan(v)
#define pt_ew_is_neg(v) ((v) < (T)0)
static inline T pt_ew_add(T x, T y) { return x + y; }
static inline T pt_ew_sub(T x, T y) { return x - y; }
static inline T pt_ew_mul(T x, T y) { return x * y; }
static inline T pt_ew_div(T x, T y) { return x / y; }
static inline T pt_ew_neg(T x) { return -x; }
static inline T pt_ew_abs(T x) { return fabs(x); }
#define pt_ew_exp(v) exp(v)
#define pt_ew_log(v) log(v)
#define pt_ew_sqrt(v) sqrt(v)
#define pt_ew_rsqrt(v) rsqrt(v)
#define pt_ew_tanh(v) tanh(v)
#define pt_ew_sin(v) sin(v)
#define pt_ew_cos(v) cos(v)
#define pt_ew_erfc(v) erfc(v)
#define pt_ew_pow(v, w) pow(v, w)
#else
#define pt_ew_isnan(v) 0
static inline T pt_ew_add(T x, T y) { return (T)((UT)x + (UT)y); }
static inline T pt_ew_sub(T x, T y) { return (T)((UT)x - (UT)y); }
static inline T pt_ew_mul(T x, T y) { return (T)((UT)x * (UT)y); }
static inline T pt_ew_neg(T x) { return (T)((UT)0 - (UT)x); }
static inline T pt_ew_div(T x, T y) {
    if (y == 0) return 0;
#if PT_IS_SIGNED
    if (y == (T)-1) return pt_ew_neg(x); /* MIN / -1 wraps instead of trapping */
#endif
    return x / y;
}
#if PT_IS_SIGNED
#define pt_ew_is_neg(v) ((v) < (T)0)
/* abs() returns the unsigned twin: |MIN| wraps back to MIN. Not
 * `x < 0 ? -x : x`, which LLVM turns into llvm.abs, an intrinsic Oclgrind
 * (scripts/opencl-matrix.sh) cannot run. */
static inline T pt_ew_abs(T x) { return (T)abs(x); }
#else
#define pt_ew_is_neg(v) 0
static inline T pt_ew_abs(T x) { return x; }
#endif
#endif
static inline T pt_ew_max(T x, T y) { PT_EW_MAX_BODY(x, y) }
static inline T pt_ew_min(T x, T y) { PT_EW_MIN_BODY(x, y) }

#elif defined(__cplusplus)
#if __cplusplus >= 201703L
/* ---- C++17 (CUDA): templates on the compute type ---- */
#include <math.h>
#include <type_traits>
#if defined(__CUDACC__)
#define PT_EW_FN static __host__ __device__ __forceinline__
#else
#define PT_EW_FN static inline
#endif
template <class T> PT_EW_FN bool pt_ew_isnan(T v) {
    if constexpr (std::is_floating_point<T>::value) return v != v;
    else return false;
}
template <class T> PT_EW_FN bool pt_ew_is_neg(T v) {
    if constexpr (std::is_signed<T>::value) return v < (T)0;
    else return false;
}
/* Integer add/sub/mul wrap: done in the unsigned type of the same width. */
#define PT_EW_WRAPPING(NAME, OP)                                                               \
    template <class T> PT_EW_FN T NAME(T x, T y) {                                             \
        if constexpr (std::is_floating_point<T>::value) {                                      \
            return x OP y;                                                                     \
        } else {                                                                               \
            typedef typename std::make_unsigned<T>::type U;                                    \
            return (T)(U)((U)x OP(U) y);                                                       \
        }                                                                                      \
    }
PT_EW_WRAPPING(pt_ew_add, +)
PT_EW_WRAPPING(pt_ew_sub, -)
PT_EW_WRAPPING(pt_ew_mul, *)
#undef PT_EW_WRAPPING
template <class T> PT_EW_FN T pt_ew_neg(T x) { return pt_ew_sub<T>((T)0, x); }
template <class T> PT_EW_FN T pt_ew_div(T x, T y) {
    if constexpr (std::is_floating_point<T>::value) {
        return x / y;
    } else {
        if (y == 0) return (T)0;
        if (y == (T)-1) return pt_ew_neg<T>(x); /* MIN / -1 wraps instead of trapping */
        return x / y;
    }
}
template <class T> PT_EW_FN T pt_ew_abs(T x) {
    if constexpr (std::is_same<T, float>::value) return fabsf(x);
    else if constexpr (std::is_floating_point<T>::value) return fabs(x);
    else return pt_ew_is_neg(x) ? pt_ew_neg<T>(x) : x; /* |MIN| wraps to MIN */
}
template <class T> PT_EW_FN T pt_ew_max(T x, T y) { PT_EW_MAX_BODY(x, y) }
template <class T> PT_EW_FN T pt_ew_min(T x, T y) { PT_EW_MIN_BODY(x, y) }
/* The f32 function for float (CUDA's libdevice, accurate), the f64 one
 * otherwise. */
#define PT_EW_MATH1(NAME, F32, F64)                                                            \
    template <class T> PT_EW_FN T NAME(T x) {                                                  \
        if constexpr (std::is_same<T, float>::value) return F32(x);                            \
        else return F64(x);                                                                    \
    }
PT_EW_MATH1(pt_ew_exp, expf, exp)
PT_EW_MATH1(pt_ew_log, logf, log)
PT_EW_MATH1(pt_ew_sqrt, sqrtf, sqrt)
PT_EW_MATH1(pt_ew_tanh, tanhf, tanh)
PT_EW_MATH1(pt_ew_sin, sinf, sin)
PT_EW_MATH1(pt_ew_cos, cosf, cos)
PT_EW_MATH1(pt_ew_erfc, erfcf, erfc)
#undef PT_EW_MATH1
/* On the device: CUDA's reciprocal square root (2 ULP in f32, 1 in f64);
 * the host pass and the simulator's C++ build: 1 / sqrt, rounded twice. */
template <class T> PT_EW_FN T pt_ew_rsqrt(T x) {
#if defined(__CUDA_ARCH__)
    if constexpr (std::is_same<T, float>::value) return rsqrtf(x);
    else return rsqrt(x);
#else
    return (T)1 / pt_ew_sqrt<T>(x);
#endif
}
template <class T> PT_EW_FN T pt_ew_pow(T x, T y) {
    if constexpr (std::is_same<T, float>::value) return powf(x, y);
    else return pow(x, y);
}
#endif

#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
/* ---- C11: type-generic over the five compute types ---- */
#include <math.h>
#include <stdint.h>

#define PT_EW_FLOAT_FNS(S, T, F)                                                               \
    static inline int pt_ew_isnan_##S(T x) { return x != x; }                                  \
    static inline int pt_ew_is_neg_##S(T x) { return x < (T)0; }                               \
    static inline T pt_ew_add_##S(T x, T y) { return x + y; }                                  \
    static inline T pt_ew_sub_##S(T x, T y) { return x - y; }                                  \
    static inline T pt_ew_mul_##S(T x, T y) { return x * y; }                                  \
    static inline T pt_ew_div_##S(T x, T y) { return x / y; }                                  \
    static inline T pt_ew_neg_##S(T x) { return -x; }                                          \
    static inline T pt_ew_abs_##S(T x) { return fabs##F(x); }

#define PT_EW_SIGNED_FNS(S, T, U)                                                              \
    static inline int pt_ew_isnan_##S(T x) { (void)x; return 0; }                              \
    static inline int pt_ew_is_neg_##S(T x) { return x < 0; }                                  \
    static inline T pt_ew_add_##S(T x, T y) { return (T)((U)x + (U)y); }                       \
    static inline T pt_ew_sub_##S(T x, T y) { return (T)((U)x - (U)y); }                       \
    static inline T pt_ew_mul_##S(T x, T y) { return (T)((U)x * (U)y); }                       \
    static inline T pt_ew_div_##S(T x, T y) {                                                  \
        if (y == 0) return 0;                                                                  \
        if (y == -1) return (T)((U)0 - (U)x); /* MIN / -1 wraps instead of trapping */         \
        return (T)(x / y);                                                                     \
    }                                                                                          \
    static inline T pt_ew_neg_##S(T x) { return (T)((U)0 - (U)x); }                            \
    static inline T pt_ew_abs_##S(T x) { return x < 0 ? (T)((U)0 - (U)x) : x; }

/* u8 promotes to int, so + - * cannot overflow before the wrap to 8 bits. */
#define PT_EW_UNSIGNED_FNS(S, T)                                                               \
    static inline int pt_ew_isnan_##S(T x) { (void)x; return 0; }                              \
    static inline int pt_ew_is_neg_##S(T x) { (void)x; return 0; }                             \
    static inline T pt_ew_add_##S(T x, T y) { return (T)(x + y); }                             \
    static inline T pt_ew_sub_##S(T x, T y) { return (T)(x - y); }                             \
    static inline T pt_ew_mul_##S(T x, T y) { return (T)((unsigned)x * (unsigned)y); }         \
    static inline T pt_ew_div_##S(T x, T y) { return y == 0 ? (T)0 : (T)(x / y); }             \
    static inline T pt_ew_neg_##S(T x) { return (T)(0u - x); }                                 \
    static inline T pt_ew_abs_##S(T x) { return x; }

PT_EW_FLOAT_FNS(f32, float, f)
PT_EW_FLOAT_FNS(f64, double, )
PT_EW_SIGNED_FNS(i32, int32_t, uint32_t)
PT_EW_SIGNED_FNS(i64, int64_t, uint64_t)
PT_EW_UNSIGNED_FNS(u8, uint8_t)

/* NAME_<dtype> for the type of v. */
#define PT_EW_GENERIC(NAME, v)                                                                 \
    _Generic((v), float: NAME##_f32, double: NAME##_f64, int32_t: NAME##_i32,                  \
             int64_t: NAME##_i64, uint8_t: NAME##_u8)
/* The libm function for float or double v. */
#define PT_EW_LIBM(F, v) _Generic((v), float: F##f, double: F)

#define pt_ew_isnan(v) PT_EW_GENERIC(pt_ew_isnan, v)(v)
#define pt_ew_is_neg(v) PT_EW_GENERIC(pt_ew_is_neg, v)(v)
#define pt_ew_add(v, w) PT_EW_GENERIC(pt_ew_add, v)(v, w)
#define pt_ew_sub(v, w) PT_EW_GENERIC(pt_ew_sub, v)(v, w)
#define pt_ew_mul(v, w) PT_EW_GENERIC(pt_ew_mul, v)(v, w)
#define pt_ew_div(v, w) PT_EW_GENERIC(pt_ew_div, v)(v, w)
#define pt_ew_neg(v) PT_EW_GENERIC(pt_ew_neg, v)(v)
#define pt_ew_abs(v) PT_EW_GENERIC(pt_ew_abs, v)(v)
#define pt_ew_max(v, w) PT_EW_GENERIC(pt_ew_max, v)(v, w)
#define pt_ew_min(v, w) PT_EW_GENERIC(pt_ew_min, v)(v, w)
#define pt_ew_exp(v) PT_EW_LIBM(exp, v)(v)
#define pt_ew_log(v) PT_EW_LIBM(log, v)(v)
#define pt_ew_sqrt(v) PT_EW_LIBM(sqrt, v)(v)
#define pt_ew_tanh(v) PT_EW_LIBM(tanh, v)(v)
#define pt_ew_sin(v) PT_EW_LIBM(sin, v)(v)
#define pt_ew_cos(v) PT_EW_LIBM(cos, v)(v)
#define pt_ew_erfc(v) PT_EW_LIBM(erfc, v)(v)
#define pt_ew_pow(v, w) PT_EW_LIBM(pow, v)(v, w)
#define pt_ew_rsqrt(v) (1 / pt_ew_sqrt(v)) /* no libm rsqrt: rounded twice */

#define PT_EW_MINMAX_FNS(S, T)                                                                 \
    static inline T pt_ew_max_##S(T x, T y) { PT_EW_MAX_BODY(x, y) }                           \
    static inline T pt_ew_min_##S(T x, T y) { PT_EW_MIN_BODY(x, y) }
PT_EW_MINMAX_FNS(f32, float)
PT_EW_MINMAX_FNS(f64, double)
PT_EW_MINMAX_FNS(i32, int32_t)
PT_EW_MINMAX_FNS(i64, int64_t)
PT_EW_MINMAX_FNS(u8, uint8_t)
#undef PT_EW_MINMAX_FNS
#endif
/** @endcond */

/* ---- The rows as text ---- (in C, where the op table is known) */
#if defined(PORTABLE_OP_TABLE_H) && !defined(PT_EW_OPENCL) && !defined(__cplusplus)
/** One row of PT_EW_MATH as text. */
typedef struct pt_ew_row {
    const char *name;   /**< "rsqrt" (the op table's name) */
    const char *form;   /**< "UNARY", "BINARY", "COMPARE" or "WHERE" */
    const char *domain; /**< "FLOAT" or "ALL" */
    const char *expr;   /**< "pt_ew_rsqrt(x)" */
} pt_ew_row;

/** The row of kind k as text, for generating kernels at run time; NULL for
 * a kind without one (not element-wise, or COPY). */
static inline const pt_ew_row *pt_ew_row_of(pt_op_kind k) {
    static const pt_ew_row rows[PT_OP_COUNT] = {
#define PT_EW_TEXT_ROW(KIND, name, FORM, DOMAIN, EXPR) [PT_OP_##KIND] = {#name, #FORM, #DOMAIN, #EXPR},
        PT_EW_MATH(PT_EW_TEXT_ROW)
#undef PT_EW_TEXT_ROW
    };
    return (unsigned)k < (unsigned)PT_OP_COUNT && rows[k].expr ? &rows[k] : (const pt_ew_row *)0;
}
#endif

#endif
