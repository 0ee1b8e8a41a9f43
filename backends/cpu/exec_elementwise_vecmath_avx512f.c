/* libportable cpu backend — vecmath level avx512f (16 floats, 8 doubles a
 * vector): compiled with its instruction set's flags (CMakeLists.txt), called
 * only when vecmath.c found the CPU runs it. */
#include <immintrin.h>
#include <sleef.h>

#define PT_VM_LEVEL pt_cpu_vecmath_avx512f
#define PT_VM_NAME "avx512f"
#define PT_VM_VF __m512
#define PT_VM_VD __m512d
#define PT_VM_SF(f) Sleef_##f##f16_u10avx512f
#define PT_VM_SF35(f) Sleef_##f##f16_u35avx512f
#define PT_VM_SD(f) Sleef_##f##d8_u10avx512f
#include "vecmath_impl.h"
