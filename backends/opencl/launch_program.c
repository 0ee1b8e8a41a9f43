/* libportable OpenCL backend — building the per-dtype programs.
 *
 * Each element type has its own program: every embedded source compiled with
 * -DPT_DTYPE=<dtype>. A program is built the first time an op of that dtype
 * runs on a device, so a run that only uses f32 never pays for compiling the
 * integer kernels (PoCL and some mobile drivers compile slowly). Built
 * binaries are kept on disk (launch_cache.c) under a key that covers everything
 * that could change the binary; a cached binary the driver refuses is
 * rebuilt from source, never an error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "launch_sha256.h"

_Static_assert(PT_K_F32 == PT_F32 && PT_K_F64 == PT_F64 && PT_K_I32 == PT_I32 &&
                   PT_K_I64 == PT_I64 && PT_K_U8 == PT_U8 && PT_K_F16 == PT_F16 &&
                   PT_K_BF16 == PT_BF16,
               "kernel_abi.h dtype codes must equal pt_dtype");
_Static_assert(PT_K_MAX_DIMS == PT_MAX_DIMS, "kernel_abi.h PT_K_MAX_DIMS must equal PT_MAX_DIMS");

static const char *const ocl_kernel_names[OCL_K__COUNT] = {
#define OCL_OP_KERNEL_NAME(kind, name, ...) [OCL_K_OP_##kind] = "ew_" name,
#define OCL_KERNEL_NAME(id, name) [OCL_K_##id] = name,
    PT_OP_TABLE(OCL_OP_KERNEL_NAME)
    OCL_KERNELS(OCL_KERNEL_NAME)
#undef OCL_KERNEL_NAME
#undef OCL_OP_KERNEL_NAME
};
_Static_assert(OCL_K_OP_FILL == 0 && (int)OCL_K_OP_GELU == (int)PT_OP_GELU,
               "the first kernel ids are the op kinds (internal.h)");

const char *ocl_kernel_name(ocl_kernel_id k) {
    return (k >= 0 && k < OCL_K__COUNT) ? ocl_kernel_names[k] : "?";
}

_Static_assert(OCL_K_COPY_TO_F64 == OCL_K_COPY_TO_F32 + PT_F64 &&
                   OCL_K_COPY_TO_I32 == OCL_K_COPY_TO_F32 + PT_I32 &&
                   OCL_K_COPY_TO_I64 == OCL_K_COPY_TO_F32 + PT_I64 &&
                   OCL_K_COPY_TO_U8 == OCL_K_COPY_TO_F32 + PT_U8,
               "copy_to_<dst> kernels must be in pt_dtype order");

/* Bumped when the cache file's meaning changes without the sources changing. */
#define OCL_CACHE_FORMAT "libportable-opencl-program-v2"

/* Seconds on the host's clock. */
static double ocl_now(void) { return 1e-9 * (double)ocl_host_ns(); }

static void ocl_build_options(const ocl_device *d, pt_dtype t, char *out, size_t cap) {
    snprintf(out, cap, "-DPT_DTYPE=%d%s%s%s%s%s", (int)t, d->fp64 ? " -DPT_FP64" : "",
             d->cpu_forms ? " -DPT_CPU_DEVICE" : "", d->opencl_c_12 ? " -cl-std=CL1.2" : "",
             d->fp32_correct_div_sqrt ? " -cl-fp32-correctly-rounded-divide-sqrt" : "",
             d->half_native ? " -DPT_HALF_NATIVE" : "");
}

/* The key of a program built from texts[0..n-1] with options on d. */
static void ocl_program_key(const ocl_device *d, int n, const char *const *texts, const char *options,
                            ocl_cache_key *key) {
    ocl_sha256 h;
    ocl_sha256_init(&h);
    ocl_sha256_update(&h, OCL_CACHE_FORMAT, sizeof OCL_CACHE_FORMAT);
    for (int i = 0; i < n; ++i) ocl_sha256_update(&h, texts[i], strlen(texts[i]) + 1);
    const char *parts[] = {options,           d->name,          d->vendor,
                           d->device_version, d->driver_version, d->platform_name,
                           d->platform_version};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; ++i)
        ocl_sha256_update(&h, parts[i], strlen(parts[i]) + 1); /* the NULs keep the parts apart */
    ocl_sha256_final(&h, key->id);
}

/* Reports a build failure with the compiler's log (truncated to fit). */
static pt_status ocl_build_failed(ocl_device *d, cl_program p, cl_int err, const char *what,
                                  const char *options) {
    size_t n = 0;
    char *log = NULL;
    if (clGetProgramBuildInfo(p, d->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS &&
        n > 0 && (log = malloc(n + 1)) != NULL) {
        if (clGetProgramBuildInfo(p, d->id, CL_PROGRAM_BUILD_LOG, n, log, NULL) != CL_SUCCESS)
            log[0] = '\0';
        log[n] = '\0';
    }
    const size_t keep = 6000;
    const char *text = log ? log : "(no build log)";
    size_t len = strlen(text);
    pt_status s = ocl_fail(PT_ERR_BACKEND,
                           "clBuildProgram failed for the %s on %s (%s, driver %s) with "
                           "options \"%s\": %s; build log%s:\n%s",
                           what, d->name, d->platform_name, d->driver_version,
                           options, ocl_error_name(err), len > keep ? " (last part)" : "",
                           len > keep ? text + len - keep : text);
    free(log);
    return s;
}

/* A program from a cached binary, or NULL when there is none or the driver
 * refuses it (then the caller builds from source). */
static cl_program ocl_program_from_cache(ocl_device *d, const ocl_cache_key *key, const char *options) {
    size_t size = 0;
    unsigned char *bin = ocl_cache_load(key, &size);
    if (!bin) return NULL;
    const unsigned char *bins[1] = {bin};
    cl_int bin_status = CL_SUCCESS, err = CL_SUCCESS;
    cl_program p = clCreateProgramWithBinary(d->ctx, 1, &d->id, &size, bins, &bin_status, &err);
    free(bin);
    if (p && err == CL_SUCCESS && bin_status == CL_SUCCESS)
        err = clBuildProgram(p, 1, &d->id, options, NULL, NULL);
    else if (err == CL_SUCCESS)
        err = bin_status;
    if (err == CL_SUCCESS) return p;
    ocl_log(PT_LOG_WARN, "cached program binary %02x%02x%02x%02x... refused by the driver (%s); rebuilding",
            key->id[0], key->id[1], key->id[2], key->id[3], ocl_error_name(err));
    if (p) clReleaseProgram(p);
    return NULL;
}

static void ocl_program_to_cache(ocl_device *d, cl_program p, const ocl_cache_key *key) {
    size_t size = 0;
    if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS ||
        size == 0) {
        ocl_log(PT_LOG_DEBUG, "%s: driver returns no program binary; not cached", d->name);
        return;
    }
    unsigned char *bin = malloc(size);
    if (!bin) return;
    unsigned char *bins[1] = {bin};
    if (clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS)
        ocl_cache_store(key, bin, size);
    free(bin);
}

pt_status ocl_program_build(ocl_device *d, const char *what, pt_dtype t, int n,
                            const char *const *texts, cl_program *out) {
    char options[256];
    ocl_build_options(d, t, options, sizeof options);
    ocl_cache_key key;
    ocl_program_key(d, n, texts, options, &key);
    double t0 = ocl_now();

    cl_program p = ocl_program_from_cache(d, &key, options);
    if (p) {
        ocl_log(PT_LOG_INFO, "%s for %s loaded from the disk cache in %.3f s", what, d->name,
                ocl_now() - t0);
    } else {
        cl_int err = CL_SUCCESS;
        p = clCreateProgramWithSource(d->ctx, (cl_uint)n, (const char **)texts, NULL, &err);
        if (!p) return ocl_cl_fail(err, "clCreateProgramWithSource (%s)", what);
        err = clBuildProgram(p, 1, &d->id, options, NULL, NULL);
        if (err != CL_SUCCESS) {
            pt_status s = ocl_build_failed(d, p, err, what, options);
            clReleaseProgram(p);
            return s;
        }
        double t1 = ocl_now();
        /* Some drivers (PoCL) finish compiling every kernel only when asked
         * for the binary, so storing it is timed apart. */
        ocl_program_to_cache(d, p, &key);
        ocl_log(PT_LOG_INFO, "%s for %s built from source in %.3f s (+%.3f s to store the "
                "binary in the disk cache)",
                what, d->name, t1 - t0, ocl_now() - t1);
    }
    *out = p;
    return PT_OK;
}

static pt_status ocl_program(ocl_device *d, pt_dtype t, cl_program *out) {
    if (d->programs[t]) {
        *out = d->programs[t];
        return PT_OK;
    }
    if (t == PT_F64 && !d->fp64)
        return ocl_fail(PT_ERR_UNSUPPORTED,
                        "f64 needs cl_khr_fp64, which %s (%s) does not offer; use f32",
                        d->name, d->platform_name);
    const char *texts[64];
    int n = 0;
    for (int i = 0; i < ocl_n_sources && n < 64; ++i) texts[n++] = ocl_sources[i].text;
    char what[64];
    snprintf(what, sizeof what, "%s kernels", pt_dtype_table_name(t));
    cl_program p = NULL;
    pt_status s = ocl_program_build(d, what, t, n, texts, &p);
    if (s != PT_OK) return s;
    d->programs[t] = p;
    *out = p;
    return PT_OK;
}

pt_status ocl_kernel_variant(ocl_device *d, pt_dtype t, ocl_kernel_id k, ocl_variant v,
                             cl_kernel *out, size_t *wg) {
    if (d->kernels[t][k][v]) {
        *out = d->kernels[t][k][v];
        *wg = d->kernel_wg[t][k][v];
        return PT_OK;
    }
    cl_program p = NULL;
    pt_status s = ocl_program(d, t, &p);
    if (s != PT_OK) return s;
    char name[64];
    static const char *const suffix[OCL_VARIANT__COUNT] = {[OCL_GENERAL] = "", [OCL_CONTIG] = "_contig",
                                                           [OCL_TAIL] = "_tail", [OCL_ROWS] = "_rows"};
    snprintf(name, sizeof name, "%s%s", ocl_kernel_names[k], suffix[v]);
    char what[32];
    snprintf(what, sizeof what, "the %s program", pt_dtype_table_name(t));
    cl_kernel kern = NULL;
    size_t kwg = 0;
    if ((s = ocl_kernel_create(d, p, name, what, &kern, &kwg)) != PT_OK) return s;
    d->kernels[t][k][v] = kern;
    d->kernel_wg[t][k][v] = kwg;
    *out = kern;
    *wg = kwg;
    return PT_OK;
}

pt_status ocl_kernel_create(ocl_device *d, cl_program p, const char *name, const char *what,
                            cl_kernel *out, size_t *wg) {
    cl_int err = CL_SUCCESS;
    cl_kernel kern = clCreateKernel(p, name, &err);
    if (!kern) return ocl_cl_fail(err, "clCreateKernel(\"%s\") in %s", name, what);
    size_t kwg = 0;
    if (clGetKernelWorkGroupInfo(kern, d->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg, &kwg, NULL) !=
            CL_SUCCESS ||
        kwg == 0 || kwg > d->max_work_group)
        kwg = d->max_work_group;
    ocl_args_forget(d, kern); /* a released kernel object's arguments are not this one's */
    d->new_kernels = true; /* see ocl_after_new_kernels */
    *out = kern;
    *wg = kwg;
    return PT_OK;
}

int ocl_embedded_texts(int n, const char *const *names, const char **texts) {
    int found = 0;
    for (int k = 0; k < n; ++k)
        for (int i = 0; i < ocl_n_sources; ++i)
            if (!strcmp(ocl_sources[i].name, names[k])) texts[found++] = ocl_sources[i].text;
    return found;
}

pt_status ocl_program_from_sources(ocl_device *d, const char *what, pt_dtype t, const char *define, int n,
                                   const char *const *names, cl_program *out) {
    const char *texts[1 + OCL_MAX_PROGRAM_SOURCES] = {define};
    if (n > OCL_MAX_PROGRAM_SOURCES)
        return ocl_fail(PT_ERR_INTERNAL, "%s: %d sources, more than the %d a program takes", what, n,
                        OCL_MAX_PROGRAM_SOURCES);
    const int found = ocl_embedded_texts(n, names, texts + 1);
    if (found != n)
        return ocl_fail(PT_ERR_INTERNAL, "%s: %d of the %d sources they need are embedded "
                        "(CMakeLists.txt's PT_OCL_KERNEL_SOURCES)", what, found, n);
    return ocl_program_build(d, what, t, 1 + n, texts, out);
}

pt_status ocl_kernel(ocl_device *d, pt_dtype t, ocl_kernel_id k, cl_kernel *out, size_t *wg) {
    return ocl_kernel_variant(d, t, k, OCL_GENERAL, out, wg);
}

void ocl_programs_release(ocl_device *d) {
    for (int t = 0; t < PT_DTYPE_COUNT; ++t) {
        for (int k = 0; k < OCL_K__COUNT; ++k)
            for (int v = 0; v < OCL_VARIANT__COUNT; ++v)
                if (d->kernels[t][k][v]) clReleaseKernel(d->kernels[t][k][v]);
        if (d->programs[t]) clReleaseProgram(d->programs[t]);
    }
    memset(d->kernels, 0, sizeof d->kernels);
    memset(d->programs, 0, sizeof d->programs);
    ocl_args_release(d);
}
