/* libportable cpu backend — vecmath level avx2 (8 floats, 4 doubles a
 * vector): compiled with its instruction set's flags (CMakeLists.txt), called
 * only when vecmath.c found the CPU runs it. */
#include <immintrin.h>
#include <sleef.h>

#define PT_VM_LEVEL pt_cpu_vecmath_avx2
#define PT_VM_NAME "avx2"
#define PT_VM_VF __m256
#define PT_VM_VD __m256d
#define PT_VM_SF(f) Sleef_##f##f8_u10avx2
#define PT_VM_SF35(f) Sleef_##f##f8_u35avx2
#define PT_VM_SD(f) Sleef_##f##d4_u10avx2
#include "vecmath_impl.h"
