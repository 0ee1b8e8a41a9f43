/* libportable OpenCL kernels — arange and the Philox random streams.
 *
 * The random kernels call the very functions of include/portable/philox.h
 * (embedded before this file), so element i is bit-identical to the cpu
 * backend for uniform draws and equal within the rounding of sqrt/log/cos/sin
 * for normal draws. */

/* Floating-point arithmetic for arange: double where the device has it, so
 * f32 results match a host that computes start + i * step in double. */
#ifdef PT_FP64
typedef double pt_arange_real;
#define PT_ARANGE_TO(I, v) pt_##I##_f64(v)
#else
typedef float pt_arange_real;
#define PT_ARANGE_TO(I, v) pt_##I##_f32(v)
#endif

/* out[i] = start + i * step (contiguous). Integer outputs with integral
 * start and step use exact 64-bit arithmetic (wrapping); otherwise the value
 * is computed in floating point and converted like copy_to_<dst>. */
__kernel void arange(__global T *out, long oo, long n, int mode, long start_i, long step_i,
                     pt_arange_real start_f, pt_arange_real step_f) {
    PT_FOR_EACH(i, n) {
        if (mode == PT_K_ARANGE_INT) {
            out[oo + i] = (T)(long)((ulong)start_i + (ulong)i * (ulong)step_i);
        } else {
            pt_arange_real v = start_f + (pt_arange_real)i * step_f;
#if PT_IS_FLOAT
            out[oo + i] = (T)v;
#elif PT_DTYPE == PT_K_I32
            out[oo + i] = PT_ARANGE_TO(sat_i32, v);
#elif PT_DTYPE == PT_K_I64
            out[oo + i] = PT_ARANGE_TO(sat_i64, v);
#else
            out[oo + i] = PT_ARANGE_TO(wrap_u8, v);
#endif
        }
    }
}

#if PT_DTYPE == PT_K_F32
__kernel void rand_uniform(__global float *out, long oo, long n, ulong seed, ulong counter) {
    PT_FOR_EACH(i, n) { out[oo + i] = pt_philox_uniform_f32(seed, counter, (ulong)i); }
}
__kernel void rand_normal(__global float *out, long oo, long n, ulong seed, ulong counter) {
    PT_FOR_EACH(i, n) { out[oo + i] = pt_philox_normal_f32(seed, counter, (ulong)i); }
}
#elif PT_DTYPE == PT_K_F64
__kernel void rand_uniform(__global double *out, long oo, long n, ulong seed, ulong counter) {
    PT_FOR_EACH(i, n) { out[oo + i] = pt_philox_uniform_f64(seed, counter, (ulong)i); }
}
__kernel void rand_normal(__global double *out, long oo, long n, ulong seed, ulong counter) {
    PT_FOR_EACH(i, n) { out[oo + i] = pt_philox_normal_f64(seed, counter, (ulong)i); }
}
#endif
