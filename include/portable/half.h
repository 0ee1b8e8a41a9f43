/** @file
 * libportable — 16-bit float storage: IEEE binary16 (PT_F16) and bfloat16
 * (PT_BF16), written once for every language the library compiles.
 *
 * Plain C usable from C (the core, the cpu plugin, users' host code), CUDA
 * (functions become __host__ __device__; device code uses the toolkit's own
 * __half / __nv_bfloat16 conversions where k_common.cuh says so) and OpenCL C
 * (define PT_HALF_OPENCL first, and PT_FP64 where the device has doubles),
 * as numeric_rules.h is. 16-bit values travel as their bit patterns in a
 * uint16_t: pt_from_data with PT_F16 / PT_BF16 takes uint16_t bits, and
 * pt_to_host gives them back.
 *
 * Rules (what torch, NumPy and the hardware conversions do):
 *   to 16 bits:   round to nearest, ties to even; values past the largest
 *                 finite value (65504 for f16) round to +-inf as IEEE says;
 *                 results below the smallest normal become subnormals (f16)
 *                 and then +-0; NaN stays NaN (sign and the top payload
 *                 bits kept, quiet bit set); +-inf stays +-inf.
 *   from 16 bits: exact (every f16 and bf16 value is a float).
 *   from double:  rounded once, to the nearest 16-bit value: the double is
 *                 first rounded to float "to odd", which makes the second
 *                 rounding exact (Boldo and Melquiond, 2008).
 * The conformance suite and tests/unit/test_half.c check these cases. */
#ifndef PORTABLE_HALF_H
#define PORTABLE_HALF_H

#if defined(PT_HALF_OPENCL)
typedef ushort pt_h_u16;
typedef uint pt_h_u32;
typedef int pt_h_i32;
#define PT_HALF_FN static inline
#define PT_H_AS_U32(f) as_uint(f)
#define PT_H_AS_F32(u) as_float(u)
#else
#include <stdint.h>
typedef uint16_t pt_h_u16;
typedef uint32_t pt_h_u32;
typedef int32_t pt_h_i32;
#if defined(__CUDACC__)
#define PT_HALF_FN static __host__ __device__ __forceinline__
#else
#define PT_HALF_FN static inline
#endif
PT_HALF_FN pt_h_u32 pt_h_as_u32(float f) {
    union { float f; pt_h_u32 u; } v;
    v.f = f;
    return v.u;
}
PT_HALF_FN float pt_h_as_f32(pt_h_u32 u) {
    union { float f; pt_h_u32 u; } v;
    v.u = u;
    return v.f;
}
#define PT_H_AS_U32(f) pt_h_as_u32(f)
#define PT_H_AS_F32(u) pt_h_as_f32(u)
#endif

/** The f16 bits of a float of sign bit `sign` (0 or 0x8000) and magnitude
 * bits x, given `sub`: its value rounded to a subnormal (units of 2^-24).
 * Every case is computed and one is selected, without branches or compares
 * of remainders: an OpenCL compiler that vectorises across work-items
 * (PoCL) runs every path of each element anyway, and the earlier branchy
 * form cost it about twice the vector instructions (a fused chain storing
 * f16 ran at half the speed of one storing i32). */
PT_HALF_FN pt_h_u16 pt_f16_bits_select(pt_h_u32 sign, pt_h_u32 x, pt_h_u32 sub) {
    /* NaN: quiet, keep the top 9 payload bits */
    const pt_h_u32 nan = 0x7e00u | ((x >> 13) & 0x1ffu);
    /* normal in f16: rebias ((15 - 127) << 23, wrapping) and round the 13
     * dropped bits to even; a carry out of the top gives inf, as it should */
    const pt_h_u32 normal = (x + 0xc8000fffu + ((x >> 13) & 1u)) >> 13;
    /* normal grows with x from the smallest normal up: at 65536 and beyond
     * (inf included) it is 0x7c00 or more, so capping it there gives inf
     * ([65520, 65536) already rounds to it). One min, where a compare and a
     * select took two instructions and a constant more. */
    const pt_h_u32 finite = normal < 0x7c00u ? normal : 0x7c00u;
    /* x has no sign bit: signed compares, which AVX2 has (unsigned ones it
     * builds from several instructions) */
    const pt_h_i32 xs = (pt_h_i32)x;
    const pt_h_u32 r = xs > 0x7f800000 ? nan : xs >= 0x38800000 ? finite : sub;
    return (pt_h_u16)(sign | r);
}

/** float -> f16 bits, integer arithmetic only, so it is exact whatever the
 * floating-point environment (rounding mode and flush-to-zero included).
 * The same bits for all 2^32 floats as pt_f32_to_f16_bits_by_add. */
PT_HALF_FN pt_h_u16 pt_f32_to_f16_bits_int(float f) {
    const pt_h_u32 x = PT_H_AS_U32(f) & 0x7fffffffu;
    /* subnormal: value = m 2^(e - 150), in units of 2^-24 that is m >> (126
     * - e), rounded to even (adding half an ulp less one, plus the kept
     * lowest bit); shifts past 25 all give 0 (at or below 2^-25, ties to
     * 0), and the result may carry into the smallest normal, correctly */
    const pt_h_u32 e = x >> 23, m = (x & 0x7fffffu) | 0x800000u;
    /* shift in [1, 25]: 126 - e where that is 1 to 24, else 25 (e of 126
     * and above wrap past 24). Only e below 113 selects sub, where 126 - e
     * is 14 or more, but every lane computes it, and a shift by -1 or 32
     * is undefined in C. */
    const pt_h_u32 d = 126u - e, shift = d - 1u < 24u ? d : 25u;
    const pt_h_u32 sub = (m + (1u << (shift - 1u)) - 1u + ((m >> shift) & 1u)) >> shift;
    return pt_f16_bits_select((PT_H_AS_U32(f) >> 16) & 0x8000u, x, sub);
}

/** float -> f16 bits with the subnormal case rounded by one float addition:
 * |f| + 0.5 has an ulp of 2^-24, the unit of f16's subnormals, so the sum
 * rounded to nearest even holds |f| rounded as f16 rounds it, in its low
 * bits (a carry into the smallest normal included). Both operands and the
 * sum are normal floats, so flush-to-zero cannot touch it (a subnormal
 * float gives 0 either way), but the addition must round to nearest even:
 * always so in OpenCL C, whose kernels cannot select another rounding
 * mode, and C's default. Five vector instructions fewer than the integer
 * form's variable shifts: PoCL's vectorised fused chain storing f16 runs
 * about a fifth faster with it. */
PT_HALF_FN pt_h_u16 pt_f32_to_f16_bits_by_add(float f) {
    const pt_h_u32 x = PT_H_AS_U32(f) & 0x7fffffffu;
    const pt_h_u32 sub = PT_H_AS_U32(PT_H_AS_F32(x) + 0.5f) - 0x3f000000u;
    return pt_f16_bits_select((PT_H_AS_U32(f) >> 16) & 0x8000u, x, sub);
}

#if defined(PT_HALF_OPENCL) && defined(PT_HALF_NATIVE)
/** float -> f16 bits by the compiler's own conversion through _Float16
 * (clang's arithmetic type, which OpenCL C compilers built on clang take
 * without cl_khr_fp16): on x86 CPUs with F16C it becomes vcvtps2ph, which a
 * vectorising compiler widens, where the float-addition form costs about 15
 * vector instructions (a kernel storing x * sigmoid(x) + b as f16 ran 1.65x
 * faster on PoCL 3.1, AVX-512). Only this direction: the hardware's f16 ->
 * float quiets a signalling NaN, which the function below keeps.
 * The OpenCL plugin defines PT_HALF_NATIVE only for a device where a probe
 * kernel gave the integer form's bits for the floats at and around every
 * f16 value and rounding boundary, NaNs with their payloads included
 * (backends/opencl/device_half.c). */
typedef union { _Float16 h; pt_h_u16 u; } pt_h_native;
PT_HALF_FN pt_h_u16 pt_f32_to_f16_bits_native(float f) {
    pt_h_native v;
    v.h = (_Float16)f;
    return v.u;
}
#endif

/** float -> f16 bits: OpenCL C kernels use the compiler's conversion where
 * the plugin checked it (PT_HALF_NATIVE), else the float-addition form
 * (their rounding mode is fixed), everything else the integer form, which a
 * caller's fesetround cannot change. */
PT_HALF_FN pt_h_u16 pt_f32_to_f16_bits(float f) {
#if defined(PT_HALF_OPENCL) && defined(PT_HALF_NATIVE)
    return pt_f32_to_f16_bits_native(f);
#elif defined(PT_HALF_OPENCL)
    return pt_f32_to_f16_bits_by_add(f);
#else
    return pt_f32_to_f16_bits_int(f);
#endif
}

/** f16 bits -> float (exact), without branches (a vectorising compiler
 * keeps the loop vectorised; the earlier loop normalising subnormals kept
 * PoCL's from it, three times slower). A subnormal is m 2^-24: the product
 * of m (exact as a float) and a power of two is exact and a normal float,
 * so neither the rounding mode nor flush-to-zero can touch it. */
PT_HALF_FN float pt_f16_bits_to_f32(pt_h_u16 h) {
    const pt_h_u32 sign = ((pt_h_u32)h & 0x8000u) << 16;
    const pt_h_u32 e = ((pt_h_u32)h >> 10) & 0x1fu, m = (pt_h_u32)h & 0x3ffu;
    const pt_h_u32 normal = ((e + 112u) << 23) | (m << 13);
    const pt_h_u32 inf_nan = 0x7f800000u | (m << 13);
    const pt_h_u32 sub = PT_H_AS_U32((float)m * PT_H_AS_F32(0x33800000u)); /* 2^-24 */
    return PT_H_AS_F32(sign | (e == 0x1fu ? inf_nan : e != 0u ? normal : sub));
}

/** float -> bf16 bits: the top half, rounded to nearest even. */
PT_HALF_FN pt_h_u16 pt_f32_to_bf16_bits(float f) {
    const pt_h_u32 x = PT_H_AS_U32(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (pt_h_u16)((x >> 16) | 0x40u); /* quiet NaN */
    return (pt_h_u16)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/** bf16 bits -> float (exact). */
PT_HALF_FN float pt_bf16_bits_to_f32(pt_h_u16 h) { return PT_H_AS_F32((pt_h_u32)h << 16); }

#if !defined(PT_HALF_OPENCL) || defined(PT_FP64)
/** double -> float rounded to odd: truncated, with the last bit set when
 * anything was dropped. A later rounding to 16 bits is then the same as
 * rounding the double directly. */
PT_HALF_FN float pt_f64_to_f32_odd(double d) {
    float f = (float)d;
    if (d == d && (double)f != d) {
        pt_h_u32 b = PT_H_AS_U32(f);
        const double af = f < 0.0f ? -(double)f : (double)f, ad = d < 0.0 ? -d : d;
        if (af > ad) --b; /* rounded away from zero: step back (inf becomes the largest float) */
        f = PT_H_AS_F32(b | 1u);
    }
    return f;
}
/** double -> f16 bits, rounded once (to nearest even) as if directly. */
PT_HALF_FN pt_h_u16 pt_f64_to_f16_bits(double d) { return pt_f32_to_f16_bits(pt_f64_to_f32_odd(d)); }
/** double -> bf16 bits, rounded once (to nearest even) as if directly. */
PT_HALF_FN pt_h_u16 pt_f64_to_bf16_bits(double d) { return pt_f32_to_bf16_bits(pt_f64_to_f32_odd(d)); }
#endif

#endif
