/* libportable cpu backend — vecmath level sse2 (4 floats, 2 doubles a
 * vector): compiled with its instruction set's flags (CMakeLists.txt), called
 * only when vecmath.c found the CPU runs it. */
#include <immintrin.h>
#include <sleef.h>

#define PT_VM_LEVEL pt_cpu_vecmath_sse2
#define PT_VM_NAME "sse2"
#define PT_VM_VF __m128
#define PT_VM_VD __m128d
#define PT_VM_SF(f) Sleef_##f##f4_u10sse2
#define PT_VM_SF35(f) Sleef_##f##f4_u35sse2
#define PT_VM_SD(f) Sleef_##f##d2_u10sse2
#include "vecmath_impl.h"
