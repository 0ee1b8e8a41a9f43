/** @file
 * libportable — the random number generator every backend shares.
 *
 * Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3", SC'11): a counter-based generator, so element i of a pt_rand call is a
 * pure function of (seed, counter, i) and every backend computes the same
 * bits in any order. This header is plain C99 usable from C, CUDA (functions
 * become __host__ __device__) and OpenCL C (embedded into the program
 * source; define PT_PHILOX_OPENCL first).
 *
 * The stream, as promised across backends:
 *   key   = (seed & 0xffffffff, seed >> 32)
 *   block b = philox4x32_10(counter = (c & 0xffffffff, c >> 32, 0, 0), key)
 *             where c = counter + b.
 *   uniform f32, element i: block i/4, word i%4 w:  (w >> 8) * 2^-24
 *   uniform f64, element i: block i/2, words (2(i%2), 2(i%2)+1) = hi, lo:
 *             ((hi:lo) >> 11) * 2^-53
 *   normal  f32, element i: block i/4, pair p = (i%4)/2 of words (a, b):
 *             u1 = ((a >> 8) + 1) * 2^-24, u2 = (b >> 8) * 2^-24,
 *             r = sqrt(-2 log u1), i even: r cos(2 pi u2), odd: r sin(2 pi u2)
 *   normal  f64, element i: block i/2, u1 = (((w0:w1) >> 11) + 1) * 2^-53,
 *             u2 = ((w2:w3) >> 11) * 2^-53, same Box-Muller.
 * The core advances the counter by the element count after each call, which
 * covers every block the call used. */
#ifndef PORTABLE_PHILOX_H
#define PORTABLE_PHILOX_H

#if defined(PT_PHILOX_OPENCL)
typedef uint pt_u32;
typedef ulong pt_u64;
#define PT_PHILOX_FN static inline
#define PT_PHILOX_MULHI(a, b) mul_hi((a), (b))
#elif defined(__CUDACC__)
#include <stdint.h>
typedef uint32_t pt_u32;
typedef uint64_t pt_u64;
#define PT_PHILOX_FN static inline __host__ __device__
#define PT_PHILOX_MULHI(a, b) ((pt_u32)(((pt_u64)(a) * (pt_u64)(b)) >> 32))
#else
#include <math.h>
#include <stdint.h>
typedef uint32_t pt_u32;
typedef uint64_t pt_u64;
#define PT_PHILOX_FN static inline
#define PT_PHILOX_MULHI(a, b) ((pt_u32)(((pt_u64)(a) * (pt_u64)(b)) >> 32))
#endif

#define PT_PHILOX_M0 0xD2511F53u
#define PT_PHILOX_M1 0xCD9E8D57u
#define PT_PHILOX_W0 0x9E3779B9u
#define PT_PHILOX_W1 0xBB67AE85u
#define PT_PI_F 3.14159265358979323846f
#define PT_PI_D 3.14159265358979323846

/** One Philox4x32-10 output block: four 32-bit random words. */
typedef struct pt_philox_block {
    pt_u32 w[4]; /**< the words, used in order */
} pt_philox_block;

/** The 4 words of block number c (counter + b above) under seed. */
PT_PHILOX_FN pt_philox_block pt_philox4x32_10(pt_u64 seed, pt_u64 c) {
    pt_u32 c0 = (pt_u32)c, c1 = (pt_u32)(c >> 32), c2 = 0, c3 = 0;
    pt_u32 k0 = (pt_u32)seed, k1 = (pt_u32)(seed >> 32);
    for (int round = 0; round < 10; ++round) {
        pt_u32 lo0 = PT_PHILOX_M0 * c0, hi0 = PT_PHILOX_MULHI(PT_PHILOX_M0, c0);
        pt_u32 lo1 = PT_PHILOX_M1 * c2, hi1 = PT_PHILOX_MULHI(PT_PHILOX_M1, c2);
        pt_u32 n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0;
        c1 = lo1;
        c2 = n2;
        c3 = lo0;
        k0 += PT_PHILOX_W0;
        k1 += PT_PHILOX_W1;
    }
    pt_philox_block b;
    b.w[0] = c0;
    b.w[1] = c1;
    b.w[2] = c2;
    b.w[3] = c3;
    return b;
}

/** Element i of a uniform f32 stream in [0, 1) (the layout above). */
PT_PHILOX_FN float pt_philox_uniform_f32(pt_u64 seed, pt_u64 counter, pt_u64 i) {
    pt_philox_block b = pt_philox4x32_10(seed, counter + i / 4);
    return (float)(b.w[i % 4] >> 8) * (1.0f / 16777216.0f);
}

#if !defined(PT_PHILOX_OPENCL) || defined(PT_PHILOX_FP64)
/** Element i of a uniform f64 stream in [0, 1). */
PT_PHILOX_FN double pt_philox_uniform_f64(pt_u64 seed, pt_u64 counter, pt_u64 i) {
    pt_philox_block b = pt_philox4x32_10(seed, counter + i / 2);
    unsigned j = (unsigned)(i % 2) * 2;
    pt_u64 bits = ((pt_u64)b.w[j] << 32) | b.w[j + 1];
    return (double)(bits >> 11) * (1.0 / 9007199254740992.0);
}

/** Element i of a standard normal f64 stream (Box-Muller). */
PT_PHILOX_FN double pt_philox_normal_f64(pt_u64 seed, pt_u64 counter, pt_u64 i) {
    pt_philox_block b = pt_philox4x32_10(seed, counter + i / 2);
    pt_u64 a = ((pt_u64)b.w[0] << 32) | b.w[1];
    pt_u64 c = ((pt_u64)b.w[2] << 32) | b.w[3];
    double u1 = (double)((a >> 11) + 1) * (1.0 / 9007199254740992.0);
    double u2 = (double)(c >> 11) * (1.0 / 9007199254740992.0);
    double r = sqrt(-2.0 * log(u1));
    return (i % 2 == 0) ? r * cos(2.0 * PT_PI_D * u2) : r * sin(2.0 * PT_PI_D * u2);
}
#endif

/** Element i of a standard normal f32 stream (Box-Muller). */
PT_PHILOX_FN float pt_philox_normal_f32(pt_u64 seed, pt_u64 counter, pt_u64 i) {
    pt_philox_block b = pt_philox4x32_10(seed, counter + i / 4);
    unsigned p = (unsigned)((i % 4) / 2) * 2;
    float u1 = (float)((b.w[p] >> 8) + 1) * (1.0f / 16777216.0f);
    float u2 = (float)(b.w[p + 1] >> 8) * (1.0f / 16777216.0f);
    float r = sqrtf(-2.0f * logf(u1));
    return (i % 2 == 0) ? r * cosf(2.0f * PT_PI_F * u2) : r * sinf(2.0f * PT_PI_F * u2);
}

#endif
