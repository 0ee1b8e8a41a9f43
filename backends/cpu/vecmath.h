/* libportable cpu backend — vectorised transcendental functions over arrays.
 *
 * The row kernels of elementwise.c hand contiguous runs to these. Each level
 * is one translation unit compiled for its instruction set (vecmath_sse2.c,
 * vecmath_avx2.c, vecmath_avx512f.c, all from the template vecmath_impl.h)
 * calling SLEEF's 1.0-ULP functions of that width; vecmath.c picks the widest
 * level the CPU and the OS support when the plugin is loaded. Outside x86-64
 * the only level is a scalar libm loop. */
#ifndef PORTABLE_CPU_VECMATH_H
#define PORTABLE_CPU_VECMATH_H

#include <stdint.h>

/* The unary functions, in the order of the tables below. */
typedef enum pt_cpu_vm_op {
    PT_CPU_VM_EXP,
    PT_CPU_VM_LOG,
    PT_CPU_VM_TANH,
    PT_CPU_VM_SIGMOID, /* 1/(1+exp(-x)); exp's overflow to +inf gives the limit 0 */
    PT_CPU_VM_SIN,
    PT_CPU_VM_COS,
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

typedef struct pt_cpu_vecmath {
    const char *isa; /* "avx512f", "avx2", "sse2" or "scalar" */
    pt_cpu_vm_f32_fn f32[PT_CPU_VM__COUNT];
    pt_cpu_vm_f64_fn f64[PT_CPU_VM__COUNT];
    pt_cpu_vm_pow_f32_fn pow_f32;
    pt_cpu_vm_pow_f64_fn pow_f64;
} pt_cpu_vecmath;

/* The table of a level whose file defines exp_f32 ... cos_f64, pow_f32 and
 * pow_f64 (one name per entry, so no level can list them differently). */
#define PT_CPU_VM_TABLE(ISA)                                                                   \
    {                                                                                          \
        .isa = (ISA),                                                                          \
        .f32 = {[PT_CPU_VM_EXP] = exp_f32, [PT_CPU_VM_LOG] = log_f32,                         \
                [PT_CPU_VM_TANH] = tanh_f32, [PT_CPU_VM_SIGMOID] = sigmoid_f32,              \
                [PT_CPU_VM_SIN] = sin_f32, [PT_CPU_VM_COS] = cos_f32},                        \
        .f64 = {[PT_CPU_VM_EXP] = exp_f64, [PT_CPU_VM_LOG] = log_f64,                         \
                [PT_CPU_VM_TANH] = tanh_f64, [PT_CPU_VM_SIGMOID] = sigmoid_f64,              \
                [PT_CPU_VM_SIN] = sin_f64, [PT_CPU_VM_COS] = cos_f64},                        \
        .pow_f32 = pow_f32, .pow_f64 = pow_f64,                                                \
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
