/** @file
 * libportable — numeric rules every backend shares, written once.
 *
 * Plain C usable from C (the core, the cpu plugin, the OpenCL plugin's host
 * side), CUDA (functions become __host__ __device__) and OpenCL C (embedded
 * in the program source ahead of the kernels; define PT_NUMERIC_OPENCL
 * first, and PT_FP64 where the device has doubles), as philox.h is.
 *
 * Float to integer, where C leaves the result undefined:
 *   to i32/i64: NaN -> 0, values beyond the range saturate at its ends, the
 *               rest truncate toward zero (OpenCL's convert_*_sat_rtz);
 *   to u8:      through i64 as above, then the low 8 bits (-1.0 -> 255, as
 *               NumPy and PyTorch do on x86).
 * Integer to narrower integer keeps the low bits (two's complement wrap).
 * The conformance suite checks these cases on every backend. */
#ifndef PORTABLE_NUMERIC_RULES_H
#define PORTABLE_NUMERIC_RULES_H

#if defined(PT_NUMERIC_OPENCL)
typedef int pt_nr_i32;
typedef long pt_nr_i64;
typedef uchar pt_nr_u8;
typedef ulong pt_nr_u64;
#define PT_NUMERIC_FN static inline
#else
#include <stdint.h>
typedef int32_t pt_nr_i32;
typedef int64_t pt_nr_i64;
typedef uint8_t pt_nr_u8;
typedef uint64_t pt_nr_u64;
#if defined(__CUDACC__)
#define PT_NUMERIC_FN static __host__ __device__ __forceinline__
#else
#define PT_NUMERIC_FN static inline
#endif
#endif

/** The limits as floating-point values: 2^31 and 2^63 are exact in float
 * and double, and a value at or past them saturates. */
#define PT_NR_TWO_31 2147483648.0
#define PT_NR_TWO_63 9223372036854775808.0

/** pt_sat_i32_<S>, pt_sat_i64_<S>, pt_wrap_u8_<S> for source type F named S. */
#define PT_NR_DEFINE_FLOAT_TO_INT(S, F)                                                     \
    PT_NUMERIC_FN pt_nr_i32 pt_sat_i32_##S(F v) {                                           \
        if (v != v) return 0;                                                               \
        if (v <= (F)(-PT_NR_TWO_31)) return (pt_nr_i32)(-2147483647 - 1);                   \
        if (v >= (F)PT_NR_TWO_31) return (pt_nr_i32)2147483647;                             \
        return (pt_nr_i32)v;                                                                \
    }                                                                                       \
    PT_NUMERIC_FN pt_nr_i64 pt_sat_i64_##S(F v) {                                           \
        if (v != v) return 0;                                                               \
        if (v <= (F)(-PT_NR_TWO_63)) return (pt_nr_i64)(-9223372036854775807LL - 1);        \
        if (v >= (F)PT_NR_TWO_63) return (pt_nr_i64)9223372036854775807LL;                  \
        return (pt_nr_i64)v;                                                                \
    }                                                                                       \
    PT_NUMERIC_FN pt_nr_u8 pt_wrap_u8_##S(F v) { return (pt_nr_u8)(pt_nr_u64)pt_sat_i64_##S(v); }

PT_NR_DEFINE_FLOAT_TO_INT(f32, float)
#if !defined(PT_NUMERIC_OPENCL) || defined(PT_FP64)
PT_NR_DEFINE_FLOAT_TO_INT(f64, double)
#endif

#endif
