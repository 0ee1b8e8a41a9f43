/* libportable cpu backend — vectorised transcendental functions over arrays.
 *
 * The row kernels of exec_elementwise.c hand contiguous runs to these. Each level
 * is one translation unit compiled for its instruction set
 * (exec_elementwise_vecmath_{sse2,avx2,avx512f}.c, all from the template
 * vecmath_impl.h) calling SLEEF's functions of that width or its own;
 * exec_elementwise_vecmath.c picks the widest
 * level the CPU and the OS support when the plugin is loaded. Outside x86-64
 * the only level is a scalar libm loop. */
#ifndef PORTABLE_CPU_VECMATH_H
#define PORTABLE_CPU_VECMATH_H

#include <stdint.h>

#include "portable/half.h"
#include "portable/numeric_rules.h"

/* The vectorised unary functions, one row each (a new one is a row here):
 *   X(name, KIND, f32 scalar, f64 scalar, f32 vector, f64 vector)
 * name    the function's name (exp_f32 ... in each level)
 * KIND    the op kind it computes (PT_OP_<KIND>; the cpu plugin runs that
 *         kind through it), and its slot PT_CPU_VM_<KIND> in the tables
 * scalar  the libm expression of the scalar level (exec_elementwise_vecmath.c), in x
 * vector  the expression of the SIMD levels (vecmath_impl.h), in the vector
 *         x, with PT_VM_SF(f) / PT_VM_SF35(f) / PT_VM_SD(f) naming SLEEF's
 *         function f of the level (1.0-ULP f32, 3.5-ULP f32, 1.0-ULP f64).
 * f32: 3.5-ULP log, sin and cos (up to twice as fast as the 1-ULP ones and
 * well inside the conformance bounds), exp (on FMA levels), tanh and sigmoid
 * of their own (vecmath_impl.h); exp within 1.01 ULP. sigmoid is
 * 1/(1+exp(-x)): exp's overflow to +inf gives the limit 0. */
/* clang-format off */
#define PT_CPU_VM_FUNCS(X)                                                                     \
    X(exp,     EXP,     expf(x),     exp(x),     PT_VM_EXP_F32(x),   PT_VM_SD(exp)(x))          \
    X(log,     LOG,     logf(x),     log(x),     PT_VM_SF35(log)(x), PT_VM_SD(log)(x))          \
    X(tanh,    TANH,    tanhf(x),    tanh(x),    tanh_vf(x),         PT_VM_SD(tanh)(x))         \
    X(sigmoid, SIGMOID, sigmoidf_(x), sigmoid_(x), sigmoid_vf(x),    sigmoid_vd(x))             \
    X(sin,     SIN,     sinf(x),     sin(x),     PT_VM_SF35(sin)(x), PT_VM_SD(sin)(x))          \
    X(cos,     COS,     cosf(x),     cos(x),     PT_VM_SF35(cos)(x), PT_VM_SD(cos)(x))
/* clang-format on */

/* The contiguous float arithmetic rows, o[i] = a[i] OP b[i] (o may be a or
 * b exactly): X(name, KIND, OP), the slot PT_CPU_VM_<KIND> of arith_f32
 * and arith_f64. The generic row kernels are compiled for the baseline ISA
 * (SSE2: 4 floats a vector); these run at the level's width, which the
 * passes of a fused chain over its blocks in L1 are bound by. IEEE
 * arithmetic, one rounding per element: the same bits at every level. */
#define PT_CPU_VM_ARITH(X) X(add, ADD, +) X(sub, SUB, -) X(mul, MUL, *) X(div, DIV, /)

typedef enum pt_cpu_vm_arith {
#define PT_CPU_VM_ARITH_ENUM(name, KIND, OP) PT_CPU_VM_##KIND,
    PT_CPU_VM_ARITH(PT_CPU_VM_ARITH_ENUM)
#undef PT_CPU_VM_ARITH_ENUM
    PT_CPU_VM_ARITH__COUNT
} pt_cpu_vm_arith;

typedef enum pt_cpu_vm_op {
#define PT_CPU_VM_ENUM(name, KIND, ...) PT_CPU_VM_##KIND,
    PT_CPU_VM_FUNCS(PT_CPU_VM_ENUM)
#undef PT_CPU_VM_ENUM
    PT_CPU_VM__COUNT
} pt_cpu_vm_op;

/* o[i] = f(a[i]) for i < n; o may be a exactly. */
typedef void (*pt_cpu_vm_f32_fn)(int64_t n, float *o, const float *a);
typedef void (*pt_cpu_vm_f64_fn)(int64_t n, double *o, const double *a);
/* o[i] = pow(a[i * sa], b[i * sb]) with sa, sb each 0 (broadcast) or 1. */
typedef void (*pt_cpu_vm_pow_f32_fn)(int64_t n, float *o, const float *a, int64_t sa,
                                     const float *b, int64_t sb);
typedef void (*pt_cpu_vm_pow_f64_fn)(int64_t n, double *o, const double *a, int64_t sa,
                                     const double *b, int64_t sb);

/* o[i] = a[i] OP b[i], all three contiguous. */
typedef void (*pt_cpu_vm_arith_f32_fn)(int64_t n, float *o, const float *a, const float *b);
typedef void (*pt_cpu_vm_arith_f64_fn)(int64_t n, double *o, const double *a, const double *b);

/* Contiguous conversions between f32 and f16 bits, rounded to nearest even
 * with portable/half.h's NaN rule (quiet, top payload bits kept): the same
 * bits at every level, F16C's conversions where the level has them. */
typedef void (*pt_cpu_vm_to_f16_fn)(int64_t n, uint16_t *o, const float *a);
typedef void (*pt_cpu_vm_from_f16_fn)(int64_t n, float *o, const uint16_t *a);
/* Contiguous f32 -> i32 by portable/numeric_rules.h (truncation, NaN 0,
 * saturation at the ends). */
typedef void (*pt_cpu_vm_to_i32_fn)(int64_t n, int32_t *o, const float *a);

typedef struct pt_cpu_vecmath {
    const char *isa; /* "avx512f", "avx2", "sse2" or "scalar" */
    pt_cpu_vm_f32_fn f32[PT_CPU_VM__COUNT];
    pt_cpu_vm_f64_fn f64[PT_CPU_VM__COUNT];
    pt_cpu_vm_pow_f32_fn pow_f32;
    pt_cpu_vm_pow_f64_fn pow_f64;
    pt_cpu_vm_arith_f32_fn arith_f32[PT_CPU_VM_ARITH__COUNT];
    pt_cpu_vm_arith_f64_fn arith_f64[PT_CPU_VM_ARITH__COUNT];
    pt_cpu_vm_to_f16_fn to_f16;
    pt_cpu_vm_from_f16_fn from_f16;
    pt_cpu_vm_to_i32_fn f32_to_i32;
} pt_cpu_vecmath;

/* The table of a level whose file defines <name>_f32 and <name>_f64 for
 * every row of PT_CPU_VM_FUNCS and PT_CPU_VM_ARITH, pow_f32, pow_f64, vm_to_f16, vm_from_f16 and vm_f32_to_i32. */
#define PT_CPU_VM_SLOT_F32(name, KIND, ...) [PT_CPU_VM_##KIND] = name##_f32,
#define PT_CPU_VM_SLOT_F64(name, KIND, ...) [PT_CPU_VM_##KIND] = name##_f64,
#define PT_CPU_VM_TABLE(ISA)                                                                   \
    {                                                                                          \
        .isa = (ISA),                                                                          \
        .f32 = {PT_CPU_VM_FUNCS(PT_CPU_VM_SLOT_F32)},                                          \
        .f64 = {PT_CPU_VM_FUNCS(PT_CPU_VM_SLOT_F64)},                                          \
        .arith_f32 = {PT_CPU_VM_ARITH(PT_CPU_VM_SLOT_F32)},                                    \
        .arith_f64 = {PT_CPU_VM_ARITH(PT_CPU_VM_SLOT_F64)},                                    \
        .pow_f32 = pow_f32, .pow_f64 = pow_f64, .to_f16 = vm_to_f16, .from_f16 = vm_from_f16,    \
        .f32_to_i32 = vm_f32_to_i32,                                                           \
    }

/* The scalar conversions: the levels without F16C or AVX2 use them, the
 * others for the elements after the last whole vector. Inline in every
 * level's file, so the levels call nothing of each other's. */
static inline void pt_cpu_vm_to_f16_scalar(int64_t n, uint16_t *o, const float *a) {
    for (int64_t i = 0; i < n; ++i) o[i] = pt_f32_to_f16_bits(a[i]);
}
static inline void pt_cpu_vm_from_f16_scalar(int64_t n, float *o, const uint16_t *a) {
    for (int64_t i = 0; i < n; ++i) o[i] = pt_f16_bits_to_f32(a[i]);
}
static inline void pt_cpu_vm_f32_to_i32_scalar(int64_t n, int32_t *o, const float *a) {
    for (int64_t i = 0; i < n; ++i) o[i] = pt_sat_i32_f32(a[i]);
}

/* The level in use: the scalar one until pt_cpu_vecmath_init has run. */
extern pt_cpu_vecmath pt_cpu_vm;

/* Picks the widest level this CPU runs (PORTABLE_CPU_VECMATH=avx2|sse2|scalar
 * caps it, for testing the narrower levels); idempotent. */
void pt_cpu_vecmath_init(void);

/* Each level's table (vecmath_<isa>.c). */
void pt_cpu_vecmath_scalar(pt_cpu_vecmath *vm);
#if defined(PT_CPU_VECMATH_X86)
void pt_cpu_vecmath_sse2(pt_cpu_vecmath *vm);
void pt_cpu_vecmath_avx2(pt_cpu_vecmath *vm);
void pt_cpu_vecmath_avx512f(pt_cpu_vecmath *vm);
#endif

#endif
