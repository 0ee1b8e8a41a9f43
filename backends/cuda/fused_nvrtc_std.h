/* libportable CUDA backend — what NVRTC lacks of the standard headers that
 * the generated fused kernels include (k_values.cuh, portable/ew_math.h,
 * half.h, numeric_rules.h): NVRTC has no C or C++ standard library, so
 * launch_nvrtc.c hands it this text under the names <stdint.h> and
 * <type_traits> (and an empty <math.h>: the CUDA math functions are
 * built into NVRTC). Only the traits those headers use, for the types the
 * kernels compute in. Never included by anything compiled ahead of time. */
#ifndef PTCU_FUSED_NVRTC_STD_H
#define PTCU_FUSED_NVRTC_STD_H

typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long int64_t; /* as on the LP64 hosts the eager kernels are built for */
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long uint64_t;
typedef unsigned long uintptr_t;
#define UINT32_MAX 0xffffffffu
#define INT32_MIN (-2147483647 - 1)
#define INT64_MIN (-9223372036854775807L - 1)
/* <math.h>'s infinity, for the reductions' identities (k_reduce_acc.cuh) */
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

namespace std {
template <class T, T v> struct integral_constant {
    static constexpr T value = v;
};
typedef integral_constant<bool, true> true_type;
typedef integral_constant<bool, false> false_type;
template <class A, class B> struct is_same : false_type {};
template <class A> struct is_same<A, A> : true_type {};
template <bool C, class A, class B> struct conditional {
    typedef A type;
};
template <class A, class B> struct conditional<false, A, B> {
    typedef B type;
};
template <class T> struct is_floating_point : false_type {};
template <> struct is_floating_point<float> : true_type {};
template <> struct is_floating_point<double> : true_type {};
template <class T> struct is_signed : integral_constant<bool, (T)-1 < (T)0> {};
template <class T> struct make_unsigned;
template <> struct make_unsigned<signed char> { typedef unsigned char type; };
template <> struct make_unsigned<unsigned char> { typedef unsigned char type; };
template <> struct make_unsigned<short> { typedef unsigned short type; };
template <> struct make_unsigned<int> { typedef unsigned int type; };
template <> struct make_unsigned<unsigned int> { typedef unsigned int type; };
template <> struct make_unsigned<long> { typedef unsigned long type; };
template <> struct make_unsigned<unsigned long> { typedef unsigned long type; };
template <> struct make_unsigned<long long> { typedef unsigned long long type; };
} /* namespace std */

#endif
