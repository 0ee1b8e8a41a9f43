/* libportable OpenCL kernels — element-wise operations, casts and fill.
 *
 * Each operation's math is its row of portable/ew_math.h (embedded ahead of
 * this file), the same rows the cpu and CUDA kernels expand: one kernel
 * ew_<name> per row, FLOAT rows in the float programs only.
 *
 * One kernel per operation rather than one kernel with an operation switch:
 * a switch costs nothing on a GPU, but CPU implementations (PoCL) vectorise
 * the work-items of a group as a loop and give up on the switch, which made
 * a contiguous add 2.5x slower there. For the same reason each operation is
 * two kernels: <name> walks any strides and broadcasts (pt_locate), and
 * <name>_contig, for launches where every operand is contiguous, reads and
 * writes element i at i, with no `i < n` test: the host launches it on whole
 * work-groups only and runs the remainder (fewer than one group), and
 * contiguous ops too small to be worth two launches, with <name>_tail, the
 * same walk with the test. With the strided walk's divisions merely present
 * behind a uniform `nd == 0` branch, or with the `i < n` test, PoCL left the
 * work-item loop scalar and a 16M f32 add reached 0.45 of
 * clEnqueueCopyBuffer's bandwidth. The _tail form rather than the general
 * one for the rest: 6 arguments fewer, and PoCL pays two allocations per
 * argument at each launch. Strided and broadcast operands have a fourth
 * form, <name>_rows: pt_locate's per-element divisions keep PoCL's loop
 * scalar too, and the row walk (common.cl) divides once per group. */

/* Element offsets of out and the inputs for element i in the general form. */
#define PT_LOCATE(p, i) const pt_pos p = pt_locate((i), nd, shape, st_o, st_a, st_b, st_c);

/* Defines kernel `name` (general: PARAMS then the layout), `name`_contig
 * and `name`_tail (PARAMS only), and `name`_rows (the general form's
 * arguments, common.cl's row walk: launched on every element in groups
 * that divide the innermost extent, where a group size does). AT(EXPR, po, pa, pb, pc) is the work of one element given
 * the element offsets of out and of the inputs a, b, c (before their base
 * offsets, pos.s0 to pos.s3). */
#define PT_DEFINE_POINTWISE(name, PARAMS, AT, EXPR)                                             \
    __kernel void name(PARAMS, PT_LAYOUT_PARAMS) {                                               \
        const long n = pos.s4;                                                                   \
        PT_FOR_EACH(i, n) {                                                                      \
            PT_LOCATE(p, i)                                                                      \
            AT(EXPR, p.o, p.a, p.b, p.c)                                                         \
        }                                                                                        \
    }                                                                                            \
    __kernel void name##_contig(PARAMS) {                                                        \
        PT_FOR_EACH_EXACT(i) { AT(EXPR, i, i, i, i) }                                            \
    }                                                                                            \
    __kernel void name##_tail(PARAMS) {                                                          \
        const long n = pos.s4;                                                                   \
        PT_FOR_EACH(i, n) { AT(EXPR, i, i, i, i) }                                               \
    }                                                                                            \
    __kernel void name##_rows(PARAMS, PT_LAYOUT_PARAMS) {                                        \
        const long g0 = (long)get_group_id(0) * (long)get_local_size(0);                         \
        const pt_pos p = pt_locate_rows(g0, (long)get_local_id(0), nd, shape, st_o, st_a, st_b,   \
                                        st_c);                                                   \
        AT(EXPR, p.o, p.a, p.b, p.c)                                                             \
    }

/* pos: the element offsets of out and of the inputs in order (s0, s1, s2,
 * s3), the item count (s4) and the op's scalars as T's bytes (s5, s6), one
 * argument rather than seven: PoCL copies every argument at each launch
 * (twice where it is set anew), which made a 10-element add's launch cost
 * more host instructions than a hand-written kernel's clSetKernelArg and
 * clEnqueueNDRangeKernel together. */
#define PT_UNARY_PARAMS __global T *out, __global const T *a, long8 pos
#define PT_BINARY_PARAMS __global T *out, __global const T *a, __global const T *b, long8 pos
#define PT_COMPARE_PARAMS __global uchar *out, __global const T *a, __global const T *b, long8 pos

/* The scalar whose bytes the host put at the start of a slot of pos. */
inline T pt_scalar_of(long bits) {
    union {
        long l;
        T t;
    } u;
    u.l = bits;
    return u.t;
}

/* out = EXPR(x) with x = a[...]; s, s2 are the op's scalars (or unused). */
#define PT_UNARY_AT(EXPR, po, pa, pb, pc)                                                        \
    const T s = pt_scalar_of(pos.s5), s2 = pt_scalar_of(pos.s6);                                 \
    const T x = a[pos.s1 + (pa)];                                                                \
    out[pos.s0 + (po)] = (EXPR);
#define PT_DEFINE_UNARY(name, EXPR) PT_DEFINE_POINTWISE(name, PT_UNARY_PARAMS, PT_UNARY_AT, EXPR)

/* out = EXPR(x, y) with x = a[...], y = b[...]; s is the op's scalar (AXPY's
 * factor; the other binary rows take none). */
#define PT_BINARY_AT(EXPR, po, pa, pb, pc)                                                       \
    const T s = pt_scalar_of(pos.s5);                                                            \
    const T x = a[pos.s1 + (pa)], y = b[pos.s2 + (pb)];                                          \
    out[pos.s0 + (po)] = (EXPR);
#define PT_DEFINE_BINARY(name, EXPR)                                                             \
    PT_DEFINE_POINTWISE(name, PT_BINARY_PARAMS, PT_BINARY_AT, EXPR)

/* out (u8) = x <op> y */
#define PT_COMPARE_AT(EXPR, po, pa, pb, pc)                                                      \
    const T x = a[pos.s1 + (pa)], y = b[pos.s2 + (pb)];                                          \
    out[pos.s0 + (po)] = (EXPR) ? (uchar)1 : (uchar)0;
#define PT_DEFINE_COMPARE(name, EXPR)                                                            \
    PT_DEFINE_POINTWISE(name, PT_COMPARE_PARAMS, PT_COMPARE_AT, EXPR)

/* The rows of ew_math.h (WHERE's kernel is below: it selects bits). The
 * kernel's name is pasted first: exp, log, ... may be macros of the
 * OpenCL implementation's headers. */
#define PT_DEFINE_WHERE(name, EXPR)
#define PT_EW_KERNEL_ALL(FORM, kernel, EXPR) PT_DEFINE_##FORM(kernel, EXPR)
#if PT_IS_FLOAT
#define PT_EW_KERNEL_FLOAT PT_EW_KERNEL_ALL
#else
#define PT_EW_KERNEL_FLOAT(FORM, kernel, EXPR)
#endif
#define PT_EW_KERNEL(KIND, name, FORM, DOMAIN, EXPR) PT_EW_KERNEL_##DOMAIN(FORM, ew_##name, EXPR)
PT_EW_MATH(PT_EW_KERNEL)

/* out = cond != 0 ? a : b; cond is u8 (slot a), a and b of the program's
 * type (slots b and c). Both values are loaded, then one is chosen: a load
 * through a pointer chosen per element kept PoCL's work-item loop scalar,
 * and where ran at half the speed of add. */
#define PT_WHERE_PARAMS __global T *out, __global const uchar *cond, __global const T *a, __global const T *b, long8 pos
#define PT_WHERE_AT(EXPR, po, pa, pb, pc)                                                        \
    const T wa = a[pos.s2 + (pb)], wb = b[pos.s3 + (pc)];                                        \
    out[pos.s0 + (po)] = cond[pos.s1 + (pa)] ? wa : wb;
PT_DEFINE_POINTWISE(ew_where, PT_WHERE_PARAMS, PT_WHERE_AT, /* no EXPR */)

#define PT_FILL_PARAMS __global T *out, long8 pos
#define PT_FILL_AT(EXPR, po, pa, pb, pc) out[pos.s0 + (po)] = pt_scalar_of(pos.s5);
PT_DEFINE_POINTWISE(fill, PT_FILL_PARAMS, PT_FILL_AT, /* no EXPR */)

/* ---- Casts: copy_to_<dst> converts this program's type to dst ----
 *
 * Integer to narrower integer wraps (modulo), integer or float to float rounds
 * to nearest, float to integer follows portable/numeric_rules.h (common.cl's
 * PT_SAT_I32/PT_SAT_I64/PT_WRAP_U8). */
#if defined(PT_IS_HALF)
/* 16-bit programs: every conversion goes through the exact float value
 * (vload_half for f16, the top half of a float for bf16). */
#if PT_DTYPE == PT_K_F16
#define PT_LOAD(p, k) vload_half((size_t)(k), (__global const half *)(p))
#else
#define PT_LOAD(p, k) as_float((uint)(p)[k] << 16)
#endif
#define PT_TO_I32(x) pt_sat_i32_f32(x)
#define PT_TO_I64(x) pt_sat_i64_f32(x)
#define PT_TO_U8(x) pt_wrap_u8_f32(x)
#elif PT_IS_FLOAT
#define PT_TO_I32(x) PT_SAT_I32(x)
#define PT_TO_I64(x) PT_SAT_I64(x)
#define PT_TO_U8(x) PT_WRAP_U8(x)
#else
#define PT_TO_I32(x) ((int)(x))
#define PT_TO_I64(x) ((long)(x))
#define PT_TO_U8(x) ((uchar)(x))
#endif
#define PT_TO_F32(x) ((float)(x))
#define PT_TO_F64(x) ((double)(x))

#ifndef PT_LOAD
#define PT_LOAD(p, k) (p)[k]
#endif

#define PT_COPY_AT(CONVERT, po, pa, pb, pc) out[pos.s0 + (po)] = CONVERT(PT_LOAD(a, pos.s1 + (pa)));
#define PT_COPY_PARAMS(U) __global U *out, __global const T *a, long8 pos
#define PT_DEFINE_COPY(name, U, CONVERT)                                                         \
    PT_DEFINE_POINTWISE(name, PT_COPY_PARAMS(U), PT_COPY_AT, CONVERT)

/* To 16 bits: one rounding to nearest even from this program's value. The
 * value is first made a float "rounded to odd" (exact for f32, f16, bf16
 * and u8; truncated with the last bit set otherwise), which makes the
 * second rounding the same as a direct one (portable/half.h). */
#if PT_DTYPE == PT_K_F32 || PT_DTYPE == PT_K_F16 || PT_DTYPE == PT_K_BF16 || PT_DTYPE == PT_K_U8
#define PT_AS_F32_ODD(x) ((float)(x))
#elif PT_DTYPE == PT_K_F64
#define PT_AS_F32_ODD(x) pt_f64_to_f32_odd(x)
#else
/* Round to nearest (the one long -> float conversion every implementation
 * gets right: Mesa's rusticl on llvmpipe loses the sign of a negative long
 * in convert_float_rtz/_rtn/_rtp), then, if that was inexact, one step
 * toward zero where it rounded away (truncation) and the last bit set. */
static inline float pt_int_to_f32_odd(long v) {
    float f = (float)v;
    if (f >= 0x1p63f) return as_float(as_uint(0x1p63f) - 1u); /* every long is below 2^63 */
    const long back = (long)f;
    if (back == v) return f;
    if (v > 0 ? back > v : back < v) f = as_float(as_uint(f) - 1u); /* |f| one ulp smaller */
    return as_float(as_uint(f) | 1u);
}
#define PT_AS_F32_ODD(x) pt_int_to_f32_odd((long)(x))
#endif

/* A 16-bit float's bits from the source value, converted from f32 by CONV:
 * half.h's conversions, not vstore_half_rte, whose PoCL form runs about
 * twice as long as the memory it moves on a CPU device. A source of the
 * same type copies its bits. */
#define PT_TO_16_AT(CONV, po, pa) out[pos.s0 + (po)] = CONV(PT_AS_F32_ODD(PT_LOAD(a, pos.s1 + (pa))));
#if PT_DTYPE == PT_K_F16
#define PT_TO_F16_AT(EXPR, po, pa, pb, pc) out[pos.s0 + (po)] = a[pos.s1 + (pa)];
#else
#define PT_TO_F16_AT(EXPR, po, pa, pb, pc) PT_TO_16_AT(pt_f32_to_f16_bits, po, pa)
#endif
PT_DEFINE_POINTWISE(copy_to_f16, PT_COPY_PARAMS(ushort), PT_TO_F16_AT, /* no EXPR */)

#if PT_DTYPE == PT_K_BF16
#define PT_TO_BF16_AT(EXPR, po, pa, pb, pc) out[pos.s0 + (po)] = a[pos.s1 + (pa)];
#else
#define PT_TO_BF16_AT(EXPR, po, pa, pb, pc) PT_TO_16_AT(pt_f32_to_bf16_bits, po, pa)
#endif
PT_DEFINE_POINTWISE(copy_to_bf16, PT_COPY_PARAMS(ushort), PT_TO_BF16_AT, /* no EXPR */)

PT_DEFINE_COPY(copy_to_f32, float, PT_TO_F32)
PT_DEFINE_COPY(copy_to_i32, int, PT_TO_I32)
PT_DEFINE_COPY(copy_to_i64, long, PT_TO_I64)
PT_DEFINE_COPY(copy_to_u8, uchar, PT_TO_U8)
#ifdef PT_FP64
PT_DEFINE_COPY(copy_to_f64, double, PT_TO_F64)
#endif
