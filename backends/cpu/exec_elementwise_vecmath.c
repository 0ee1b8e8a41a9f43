/* libportable cpu backend — choosing the vecmath level (see vecmath.h).
 *
 * The scalar level is plain libm, for machines without the x86 levels and
 * as the table's contents before pt_cpu_vecmath_init. On x86-64 the choice is
 * the widest of AVX-512F, AVX2 (with FMA, as SLEEF's avx2 functions use it)
 * and SSE2 that __builtin_cpu_supports reports; GCC's check includes the OS
 * saving the wider registers (XGETBV). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(PT_CPU_VECMATH_X86)
#include <cpuid.h>
#endif

#include "internal.h" /* pt_cpu_host: PORTABLE_CPU_VECMATH through the host API */
#include "vecmath.h"

#define PT_VM_SCALAR(NAME, T, EXPR)                                                            \
    static void NAME(int64_t n, T *o, const T *a) {                                           \
        for (int64_t i = 0; i < n; ++i) {                                                     \
            T x = a[i];                                                                       \
            o[i] = (EXPR);                                                                    \
        }                                                                                     \
    }

static inline float sigmoidf_(float x) {
    if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}
static inline double sigmoid_(double x) {
    if (x >= 0.0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

#define PT_VM_SCALARS(name, KIND, F32, F64, ...)                                               \
    PT_VM_SCALAR(name##_f32, float, F32)                                                       \
    PT_VM_SCALAR(name##_f64, double, F64)
PT_CPU_VM_FUNCS(PT_VM_SCALARS)

#define PT_VM_ARITH_SCALAR(name, KIND, OP)                                                     \
    static void name##_f32(int64_t n, float *o, const float *a, const float *b) {             \
        for (int64_t i = 0; i < n; ++i) o[i] = a[i] OP b[i];                                  \
    }                                                                                         \
    static void name##_f64(int64_t n, double *o, const double *a, const double *b) {          \
        for (int64_t i = 0; i < n; ++i) o[i] = a[i] OP b[i];                                  \
    }
PT_CPU_VM_ARITH(PT_VM_ARITH_SCALAR)

static void pow_f32(int64_t n, float *o, const float *a, int64_t sa, const float *b, int64_t sb) {
    for (int64_t i = 0; i < n; ++i) o[i] = powf(a[i * sa], b[i * sb]);
}
static void pow_f64(int64_t n, double *o, const double *a, int64_t sa, const double *b,
                    int64_t sb) {
    for (int64_t i = 0; i < n; ++i) o[i] = pow(a[i * sa], b[i * sb]);
}

#define vm_f32_to_i32 pt_cpu_vm_f32_to_i32_scalar
#define vm_to_f16 pt_cpu_vm_to_f16_scalar
#define vm_from_f16 pt_cpu_vm_from_f16_scalar

void pt_cpu_vecmath_scalar(pt_cpu_vecmath *vm) { *vm = (pt_cpu_vecmath)PT_CPU_VM_TABLE("scalar"); }

pt_cpu_vecmath pt_cpu_vm = PT_CPU_VM_TABLE("scalar");

static void vecmath_init_once(void) {
    pt_cpu_vecmath vm;
    pt_cpu_vecmath_scalar(&vm);
#if defined(PT_CPU_VECMATH_X86)
    /* PORTABLE_CPU_VECMATH caps the level: the narrower ones get tested on
     * a machine that would never pick them. */
    static const char *const caps[] = {"scalar", "sse2", "avx2", "avx512f", NULL};
    int max = PT_HOST_HAS(pt_cpu_host, env_choice)
                  ? pt_cpu_host->env_choice("PORTABLE_CPU_VECMATH", caps, 3)
                  : 3; /* 3 avx512f, 2 avx2, 1 sse2, 0 scalar */
    __builtin_cpu_init();
    if (max >= 3 && __builtin_cpu_supports("avx512f")) pt_cpu_vecmath_avx512f(&vm);
    else if (max >= 2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        pt_cpu_vecmath_avx2(&vm);
    else if (max >= 1) pt_cpu_vecmath_sse2(&vm);
    /* The wide levels convert with F16C, which AVX2 and AVX-512 CPUs have;
     * CPUID says so for certain (a hypervisor may hide it). */
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_F16C)) {
        vm.to_f16 = pt_cpu_vm_to_f16_scalar;
        vm.from_f16 = pt_cpu_vm_from_f16_scalar;
    }
#endif
    pt_cpu_vm = vm;
}

void pt_cpu_vecmath_init(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, vecmath_init_once);
}
