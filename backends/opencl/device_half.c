/* libportable OpenCL backend — whether a device's kernels may convert float
 * to f16 with the compiler's own conversion (half.h's PT_HALF_NATIVE:
 * _Float16, vcvtps2ph on x86 CPUs) instead of half.h's integer arithmetic.
 *
 * Only where a probe kernel built with it gives half.h's bits, checked
 * against the host's integer form, for: every f16 value as a float and the
 * floats one ulp either side; every midpoint between neighbouring f16
 * values (ties round to even) and one ulp either side, the overflow
 * boundary 65520 included; both signs; float NaNs whose payloads reach
 * below f16's (quiet and signalling); float subnormals; floats far past
 * f16's range; and 2^16 random bit patterns. A compiler that refuses
 * _Float16, a driver that cannot link its conversion, or one bit of
 * difference leaves the device on half.h's arithmetic (Mesa's rusticl on
 * llvmpipe gives every NaN as 0x7e00 or 0xfe00), as does
 * PORTABLE_OPENCL_NATIVE_HALF=off. Tried on CPU devices only, where it was
 * measured (PoCL 3.1 and Intel's CPU runtime on an AVX-512 Xeon); GPUs keep
 * half.h's form. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "internal.h"
#include "portable/half.h"

/* Whether the host's CPU converts to f16 in hardware, so a CPU device's
 * compiler needs no library routine for it (PoCL links none, and a missing
 * symbol in a kernel is not a status there): x86 with F16C and the AVX
 * state the OS saves; AArch64 always. */
static bool ocl_half_host_converts(void) {
#if defined(__x86_64__) || defined(__i386__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    const bool f16c = (c >> 29) & 1u, avx = (c >> 28) & 1u, osxsave = (c >> 27) & 1u;
    if (!(f16c && avx && osxsave)) return false;
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0u));
    (void)hi;
    return (lo & 6u) == 6u; /* SSE and AVX state */
#elif defined(__aarch64__)
    return true;
#else
    return false;
#endif
}

static const char ocl_half_probe_text[] =
    "__kernel void pt_half_probe(__global const uint *in, __global ushort *out, long n) {\n"
    "    const long i = (long)get_global_id(0);\n"
    "    if (i < n) out[i] = pt_f32_to_f16_bits(as_float(in[i]));\n"
    "}\n";

/* The probe's inputs (see the top of this file) into in; returns how many. */
static size_t ocl_half_probe_inputs(uint32_t *in) {
    size_t n = 0;
    for (uint32_t h = 0; h < 0x8000u; ++h) {
        const uint32_t b = pt_h_as_u32(pt_f16_bits_to_f32((uint16_t)h));
        const uint32_t at[3] = {b, b + 1u, b - 1u};
        for (int k = 0; k < 3; ++k) in[n++] = at[k], in[n++] = at[k] ^ 0x80000000u;
        if (h >= 0x7c00u) continue; /* inf and NaN have no midpoint */
        /* the midpoint to the next value (65536 past the largest finite one),
         * exact in a float: f16 keeps 11 significant bits */
        const double lo = pt_f16_bits_to_f32((uint16_t)h);
        const double hi = h + 1u < 0x7c00u ? pt_f16_bits_to_f32((uint16_t)(h + 1u)) : 65536.0;
        const uint32_t m = pt_h_as_u32((float)((lo + hi) / 2));
        const uint32_t mid[3] = {m, m + 1u, m - 1u};
        for (int k = 0; k < 3; ++k) in[n++] = mid[k], in[n++] = mid[k] ^ 0x80000000u;
    }
    static const uint32_t special[] = {0x7f800001u, 0x7f801fffu, 0x7fbfffffu, 0x7fc00001u, 0x7fc01fffu,
                                       0x7fffffffu, 0x00000001u, 0x00400000u, 0x007fffffu, 0x33000000u,
                                       0x33000001u, 0x477ff000u, 0x477fefffu, 0x47800000u, 0x7f7fffffu,
                                       0x5f800000u, 0x387fc000u, 0x387fe000u, 0x38800000u, 0x337fffffu};
    for (size_t k = 0; k < sizeof special / sizeof special[0]; ++k)
        in[n++] = special[k], in[n++] = special[k] ^ 0x80000000u;
    uint64_t s = 0x9e3779b97f4a7c15u;
    for (int k = 0; k < 65536; ++k) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        in[n++] = (uint32_t)(s >> 32);
    }
    return n;
}

#define OCL_HALF_PROBE_MAX ((size_t)0x8000 * 12 + 40 + 65536)

/* Runs the probe kernel of program p over in[0..n-1] into out; false and
 * why when a call fails. */
static bool ocl_half_probe_run(ocl_device *d, cl_program p, const uint32_t *in, uint16_t *out, size_t n, char *why,
                               size_t cap) {
    cl_int err = CL_SUCCESS;
    cl_kernel k = clCreateKernel(p, "pt_half_probe", &err);
    cl_mem a = k ? clCreateBuffer(d->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * sizeof *in, (void *)in, &err)
                 : NULL;
    cl_mem b = a ? clCreateBuffer(d->ctx, CL_MEM_WRITE_ONLY, n * sizeof *out, NULL, &err) : NULL;
    const cl_long count = (cl_long)n;
    const size_t local = 64, global = (n + local - 1) / local * local;
    if (b && (err = clSetKernelArg(k, 0, sizeof a, &a)) == CL_SUCCESS &&
        (err = clSetKernelArg(k, 1, sizeof b, &b)) == CL_SUCCESS &&
        (err = clSetKernelArg(k, 2, sizeof count, &count)) == CL_SUCCESS &&
        (err = clEnqueueNDRangeKernel(d->queue, k, 1, NULL, &global, &local, 0, NULL, NULL)) == CL_SUCCESS)
        err = clEnqueueReadBuffer(d->queue, b, CL_TRUE, 0, n * sizeof *out, out, 0, NULL, NULL);
    if (err != CL_SUCCESS) snprintf(why, cap, "running the probe kernel failed (%s)", ocl_error_name(err));
    if (b) clReleaseMemObject(b);
    if (a) clReleaseMemObject(a);
    if (k) clReleaseKernel(k);
    return err == CL_SUCCESS;
}

/* Whether the native conversion gives half.h's bits on d; why says what
 * failed. Caller holds d->lock; d->half_native is true while it builds. */
static bool ocl_half_probe(ocl_device *d, char *why, size_t cap) {
    static const char *const names[] = {"prelude.cl", "half.h"};
    const char *texts[3];
    if (ocl_embedded_texts(2, names, texts) != 2) {
        snprintf(why, cap, "prelude.cl or half.h is not embedded");
        return false;
    }
    texts[2] = ocl_half_probe_text;
    uint32_t *in = malloc(OCL_HALF_PROBE_MAX * sizeof *in);
    uint16_t *out = malloc(OCL_HALF_PROBE_MAX * sizeof *out);
    cl_program p = NULL;
    bool ok = false;
    if (!in || !out) {
        snprintf(why, cap, "out of host memory for the probe");
    } else if (ocl_program_build(d, "f16 conversion probe", PT_F32, 3, texts, &p) != PT_OK) {
        /* a compiler without _Float16: not an error of the caller's op */
        if (ocl_host && ocl_host->set_error) ocl_host->set_error(PT_OK, "%s", "");
        snprintf(why, cap, "the probe kernel did not build: the compiler lacks _Float16 or its conversion");
    } else {
        const size_t n = ocl_half_probe_inputs(in);
        ok = ocl_half_probe_run(d, p, in, out, n, why, cap);
        for (size_t i = 0; ok && i < n; ++i) {
            const uint16_t want = pt_f32_to_f16_bits_int(pt_h_as_f32(in[i]));
            if (out[i] != want) {
                snprintf(why, cap, "float bits 0x%08x gave f16 bits 0x%04x, half.h's 0x%04x", in[i],
                         (unsigned)out[i], (unsigned)want);
                ok = false;
            }
        }
        if (ok) snprintf(why, cap, "%zu floats checked", n);
    }
    if (p) clReleaseProgram(p);
    free(in);
    free(out);
    return ok;
}

void ocl_half_decide(ocl_device *d) {
    static const char *const modes[] = {"auto", "off", NULL};
    const int mode = PT_HOST_HAS(ocl_host, env_choice) ? ocl_host->env_choice("PORTABLE_OPENCL_NATIVE_HALF", modes, 0)
                                                       : 0;
    char why[200] = "";
    d->half_native = false;
    if (mode == 1) {
        snprintf(why, sizeof why, "PORTABLE_OPENCL_NATIVE_HALF=off");
    } else if (strstr(d->platform_name, "Oclgrind")) {
        /* a simulator: it stops on a conversion to half ("Unsupported float size") */
        snprintf(why, sizeof why, "Oclgrind simulates no f16 conversion");
    } else if (!(d->cl_type & CL_DEVICE_TYPE_CPU)) {
        snprintf(why, sizeof why, "not a CPU device (measured on CPU devices only)");
    } else if (!ocl_half_host_converts()) {
        snprintf(why, sizeof why, "the host CPU has no f16 conversion instructions (x86: F16C)");
    } else {
        d->half_native = true; /* the probe builds with it */
        d->half_native = ocl_half_probe(d, why, sizeof why);
    }
    ocl_log(PT_LOG_INFO, "%s: float -> f16 in kernels by %s (%s)", d->name,
            d->half_native ? "the compiler's _Float16 conversion" : "half.h's arithmetic", why);
}
