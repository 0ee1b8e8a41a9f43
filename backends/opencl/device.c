/* libportable OpenCL backend — finding devices and creating their queues.
 *
 * Every device of every platform becomes one index, GPUs first, then
 * accelerators, then CPUs, then anything else, each group in the order the
 * ICD loader lists platforms and devices (so the numbering is stable between
 * runs on one machine). Contexts and queues are created at first use: a
 * program that only lists devices never wakes a GPU driver up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

ocl_state ocl_g;

/* cl_khr_icd's code for "the ICD loader found no vendor": cl_ext.h has it,
 * but it is spelled out to need nothing beyond cl.h. */
#define OCL_PLATFORM_NOT_FOUND_KHR (-1001)

/* Position of a device type in the numbering. */
static int ocl_type_rank(cl_device_type t) {
    if (t & CL_DEVICE_TYPE_GPU) return 0;
    if (t & CL_DEVICE_TYPE_ACCELERATOR) return 1;
    if (t & CL_DEVICE_TYPE_CPU) return 2;
    return 3;
}

static void ocl_device_string(cl_device_id id, cl_device_info what, char *out, size_t cap) {
    out[0] = '\0';
    if (clGetDeviceInfo(id, what, cap - 1, out, NULL) != CL_SUCCESS) out[0] = '\0';
    out[cap - 1] = '\0';
}

static void ocl_platform_string(cl_platform_id id, cl_platform_info what, char *out, size_t cap) {
    out[0] = '\0';
    if (clGetPlatformInfo(id, what, cap - 1, out, NULL) != CL_SUCCESS) out[0] = '\0';
    out[cap - 1] = '\0';
}

/* Whether the space-separated extension list of id contains ext. */
static bool ocl_has_extension(cl_device_id id, const char *ext) {
    size_t n = 0;
    if (clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, 0, NULL, &n) != CL_SUCCESS || n == 0)
        return false;
    char *list = malloc(n + 1);
    if (!list) return false;
    bool found = false;
    if (clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, n, list, NULL) == CL_SUCCESS) {
        list[n] = '\0';
        size_t len = strlen(ext);
        for (const char *p = list; (p = strstr(p, ext)) != NULL; p += len) {
            bool starts = p == list || p[-1] == ' ';
            bool ends = p[len] == '\0' || p[len] == ' ';
            if (starts && ends) {
                found = true;
                break;
            }
        }
    }
    free(list);
    return found;
}

void ocl_device_props_extra(const ocl_device *d, pt_device_props *out) {
    out->supports_f16 = ocl_has_extension(d->id, "cl_khr_fp16");
    out->max_alloc = d->max_alloc ? (int64_t)d->max_alloc : -1;
    cl_ulong local = 0;
    out->local_memory = clGetDeviceInfo(d->id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, NULL) ==
                                CL_SUCCESS
                            ? (int64_t)local
                            : -1;
    out->max_work_group = (int64_t)d->max_work_group;
    snprintf(out->device_version, sizeof out->device_version, "%s", d->device_version);
    ocl_device_string(d->id, CL_DEVICE_OPENCL_C_VERSION, out->c_version, sizeof out->c_version);
    /* asked for its length first: a list longer than the member is cut, not lost */
    size_t n = 0;
    if (clGetDeviceInfo(d->id, CL_DEVICE_EXTENSIONS, 0, NULL, &n) != CL_SUCCESS || n == 0) return;
    char *list = malloc(n + 1);
    if (list && clGetDeviceInfo(d->id, CL_DEVICE_EXTENSIONS, n, list, NULL) == CL_SUCCESS) {
        list[n] = '\0';
        snprintf(out->extensions, sizeof out->extensions, "%s", list);
    }
    free(list);
}

/* Fills d->cb where graphs replay as command buffers (internal.h), else
 * sets d->graph_kernels where they replay as lists of pre-bound kernels,
 * else says why they replay op by op in d->no_graphs. */
static void ocl_command_buffers_probe(ocl_device *d) {
    /* off/on, or 0/1 as the plugin's other switches take; kernels: lists
     * even where command buffers exist; command-buffers: them wherever they
     * exist, PoCL included */
    static const char *const modes[] = {"off", "on", "0", "1", "kernels", "command-buffers", NULL};
    memset(&d->cb, 0, sizeof d->cb);
    d->graph_kernels = false;
    d->no_graphs[0] = '\0';
    cl_bitfield caps = 0;
    const int mode = PT_HOST_HAS(ocl_host, env_choice) ? ocl_host->env_choice("PORTABLE_OPENCL_GRAPHS", modes, 1) : 1;
    if (mode == 0 || mode == 2) {
        snprintf(d->no_graphs, sizeof d->no_graphs, "PORTABLE_OPENCL_GRAPHS=off");
        return;
    }
    /* Every return below without command buffers lists kernels instead. */
    d->graph_kernels = true;
    if (mode == 4) return;
    /* PoCL 3.1 re-creates every recorded command at each
     * clEnqueueCommandBufferKHR: its buffers cost the host more per kernel
     * than queuing pre-bound kernels (bench/opencl's "tiny" part measures
     * both), so lists are its default. */
    if (mode != 5 && strstr(d->platform_name, "Portable Computing Language")) {
        snprintf(d->no_graphs, sizeof d->no_graphs,
                 "PoCL's command buffers cost more per kernel than queuing them (PORTABLE_OPENCL_GRAPHS="
                 "command-buffers uses them)");
        return;
    }
    if (!ocl_has_extension(d->id, OCL_CB_EXTENSION)) {
        snprintf(d->no_graphs, sizeof d->no_graphs, "%s lacks " OCL_CB_EXTENSION, d->name);
        return;
    }
    /* Without simultaneous use, queueing a buffer whose last run has not
     * ended is an error: replays would have to wait for each other. */
    if (clGetDeviceInfo(d->id, OCL_DEVICE_COMMAND_BUFFER_CAPABILITIES, sizeof caps, &caps, NULL) !=
            CL_SUCCESS ||
        !(caps & OCL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE)) {
        snprintf(d->no_graphs, sizeof d->no_graphs,
                 "%s's " OCL_CB_EXTENSION " lacks simultaneous use", d->name);
        return;
    }
    ocl_cb_api a = {0};
    if (clGetDeviceInfo(d->id, OCL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES,
                        sizeof a.queue_props, &a.queue_props, NULL) != CL_SUCCESS)
        a.queue_props = 0;
    /* An object pointer to a function pointer: memcpy, as ISO C allows. */
    void *entry = NULL;
#define OCL_CB_ENTRY(member, name)                                                \
    entry = clGetExtensionFunctionAddressForPlatform(d->platform, name);          \
    memcpy(&a.member, &entry, sizeof entry)
    OCL_CB_ENTRY(create, "clCreateCommandBufferKHR");
    OCL_CB_ENTRY(finalize, "clFinalizeCommandBufferKHR");
    OCL_CB_ENTRY(release, "clReleaseCommandBufferKHR");
    OCL_CB_ENTRY(enqueue, "clEnqueueCommandBufferKHR");
    OCL_CB_ENTRY(ndrange, "clCommandNDRangeKernelKHR");
#undef OCL_CB_ENTRY
    if (!a.create || !a.finalize || !a.release || !a.enqueue || !a.ndrange) {
        snprintf(d->no_graphs, sizeof d->no_graphs,
                 "%s (%s) does not give the entry points of " OCL_CB_EXTENSION, d->name,
                 d->platform_name);
        return;
    }
    d->cb = a;
    d->graph_kernels = false;
}

static void ocl_describe(ocl_device *d) {
    ocl_device_string(d->id, CL_DEVICE_NAME, d->name, sizeof d->name);
    ocl_device_string(d->id, CL_DEVICE_VENDOR, d->vendor, sizeof d->vendor);
    ocl_device_string(d->id, CL_DEVICE_VERSION, d->device_version, sizeof d->device_version);
    ocl_device_string(d->id, CL_DRIVER_VERSION, d->driver_version, sizeof d->driver_version);
    ocl_platform_string(d->platform, CL_PLATFORM_NAME, d->platform_name,
                        sizeof d->platform_name);
    ocl_platform_string(d->platform, CL_PLATFORM_VERSION, d->platform_version,
                        sizeof d->platform_version);
    d->no_calls_at_exit = strstr(d->platform_name, "Oclgrind") != NULL;
    d->blocking_transfers = strstr(d->platform_name, "rusticl") != NULL;
    if (clGetDeviceInfo(d->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof d->compute_units,
                        &d->compute_units, NULL) != CL_SUCCESS)
        d->compute_units = 1;
    if (clGetDeviceInfo(d->id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof d->global_mem, &d->global_mem,
                        NULL) != CL_SUCCESS)
        d->global_mem = 0;
    if (clGetDeviceInfo(d->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof d->max_alloc, &d->max_alloc,
                        NULL) != CL_SUCCESS)
        d->max_alloc = 0;
    if (clGetDeviceInfo(d->id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof d->max_work_group,
                        &d->max_work_group, NULL) != CL_SUCCESS ||
        d->max_work_group == 0)
        d->max_work_group = 1;
    if (clGetDeviceInfo(d->id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof d->local_mem, &d->local_mem, NULL) !=
        CL_SUCCESS)
        d->local_mem = 0;
    d->loop_budget = strstr(d->name, "llvmpipe") ? 65535 : 0;
    d->fp64 = ocl_has_extension(d->id, "cl_khr_fp64");
    /* PORTABLE_OPENCL_FP64=0 treats every device as lacking fp64, as many
     * consumer and mobile GPUs do: how CI tests that path on PoCL. */
    static const char *const off_on[] = {"0", "1", NULL};
    if (PT_HOST_HAS(ocl_host, env_choice) && ocl_host->env_choice("PORTABLE_OPENCL_FP64", off_on, 1) == 0)
        d->fp64 = false;
    /* f16 MATMUL runs as CLBlastHgemm only when asked for
     * (PORTABLE_OPENCL_HGEMM=1) on a cl_khr_fp16 device: CLBlast multiplies
     * and accumulates in half, so its error grows with the inner dimension
     * (on Intel's CPU runtime 2026.2, 4716 of 6144 elements of a
     * [64, 300] @ [300, 96] product were outside the bound of f32
     * accumulation and one rounding that cuBLAS and the f32 path meet). By
     * default f16 products take the f32 path: SGEMM on converted operands,
     * rounded once. */
    d->fp16 = PT_HOST_HAS(ocl_host, env_choice) &&
              ocl_host->env_choice("PORTABLE_OPENCL_HGEMM", off_on, 0) == 1 &&
              ocl_has_extension(d->id, "cl_khr_fp16");
    /* The kernel forms for CPU devices (the row forms, reduce_serial, the
     * -DPT_CPU_DEVICE row walk) or for GPUs: by the device's type, unless
     * PORTABLE_OPENCL_KERNEL_FORMS=cpu|gpu says (how CI tests the GPU forms
     * on PoCL, and a way to try the CPU forms on another device). */
    static const char *const form_modes[] = {"auto", "cpu", "gpu", NULL};
    const int forms = PT_HOST_HAS(ocl_host, env_choice)
                          ? ocl_host->env_choice("PORTABLE_OPENCL_KERNEL_FORMS", form_modes, 0)
                          : 0;
    d->cpu_forms = forms == 0 ? (d->cl_type & CL_DEVICE_TYPE_CPU) != 0 : forms == 1;
    static const char *const gemm_modes[] = {"auto", "clblast", "own", NULL};
    d->gemm_mode = PT_HOST_HAS(ocl_host, env_choice)
                       ? (ocl_gemm_mode)ocl_host->env_choice("PORTABLE_OPENCL_GEMM", gemm_modes, OCL_GEMM_AUTO)
                       : OCL_GEMM_AUTO;
    /* The own products' vector width (kernels/gemm.cl): 16 floats where
     * the device's native float vector is that wide (PoCL on AVX-512 CPUs),
     * else 8; PORTABLE_OPENCL_GEMM_VECTOR=8|16 says (how CI keeps the 8-wide
     * kernels tested on an AVX-512 machine). */
    static const char *const widths[] = {"auto", "8", "16", NULL};
    const int width = PT_HOST_HAS(ocl_host, env_choice)
                          ? ocl_host->env_choice("PORTABLE_OPENCL_GEMM_VECTOR", widths, 0)
                          : 0;
    cl_uint native = 0;
    if (clGetDeviceInfo(d->id, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof native, &native, NULL) != CL_SUCCESS)
        native = 0;
    d->gemm_width = width == 1 ? 8 : width == 2 ? 16 : native >= 16 ? 16 : 8;
    cl_device_fp_config scfg = 0;
    d->fp32_correct_div_sqrt =
        clGetDeviceInfo(d->id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof scfg, &scfg, NULL) ==
            CL_SUCCESS &&
        (scfg & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT);
    char cver[64];
    ocl_device_string(d->id, CL_DEVICE_OPENCL_C_VERSION, cver, sizeof cver);
    int major = 0, minor = 0;
    d->opencl_c_12 = sscanf(cver, "OpenCL C %d.%d", &major, &minor) == 2 &&
                     (major > 1 || (major == 1 && minor >= 2));
    ocl_command_buffers_probe(d);
    pthread_mutex_init(&d->lock, NULL);
    pthread_mutex_init(&d->host_lock, NULL);
    pthread_mutex_init(&d->clock_lock, NULL);
}

/* Appends every device of platform p whose rank is `rank` to the table. */
static pt_status ocl_collect(cl_platform_id p, const cl_device_id *ids, cl_uint n, int rank) {
    for (cl_uint i = 0; i < n; ++i) {
        cl_device_type t = 0;
        if (clGetDeviceInfo(ids[i], CL_DEVICE_TYPE, sizeof t, &t, NULL) != CL_SUCCESS) continue;
        if (ocl_type_rank(t) != rank) continue;
        ocl_device *grown =
            realloc(ocl_g.devices, (size_t)(ocl_g.n_devices + 1) * sizeof *ocl_g.devices);
        if (!grown) return ocl_fail(PT_ERR_OUT_OF_MEMORY, "out of host memory listing devices");
        ocl_g.devices = grown;
        ocl_device *d = &ocl_g.devices[ocl_g.n_devices++];
        memset(d, 0, sizeof *d);
        d->platform = p;
        d->id = ids[i];
        d->cl_type = t;
        ocl_describe(d);
    }
    return PT_OK;
}

pt_status ocl_devices_enumerate(void) {
    ocl_g.devices = NULL;
    ocl_g.n_devices = 0;
    ocl_g.reason[0] = '\0';

    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err == OCL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && np == 0)) {
        snprintf(ocl_g.reason, sizeof ocl_g.reason,
                 "no OpenCL platform found (libOpenCL.so.1 loaded, 0 platforms); install an "
                 "OpenCL driver (ICD), e.g. pocl-opencl-icd, or check OCL_ICD_VENDORS");
        return PT_OK;
    }
    if (err != CL_SUCCESS) {
        snprintf(ocl_g.reason, sizeof ocl_g.reason,
                 "clGetPlatformIDs failed: %s (libOpenCL.so.1 loaded, no usable platform)",
                 ocl_error_name(err));
        return PT_OK;
    }
    cl_platform_id *platforms = calloc(np, sizeof *platforms);
    if (!platforms) return ocl_fail(PT_ERR_OUT_OF_MEMORY, "out of host memory listing platforms");
    err = clGetPlatformIDs(np, platforms, NULL);
    if (err != CL_SUCCESS) {
        free(platforms);
        snprintf(ocl_g.reason, sizeof ocl_g.reason, "clGetPlatformIDs failed: %s",
                 ocl_error_name(err));
        return PT_OK;
    }

    /* Device lists per platform, fetched once and walked once per rank. */
    cl_device_id **ids = calloc(np, sizeof *ids);
    cl_uint *nids = calloc(np, sizeof *nids);
    pt_status st = PT_OK;
    if (!ids || !nids) st = ocl_fail(PT_ERR_OUT_OF_MEMORY, "out of host memory listing devices");
    for (cl_uint p = 0; st == PT_OK && p < np; ++p) {
        cl_uint n = 0;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &n) != CL_SUCCESS || n == 0)
            continue;
        ids[p] = calloc(n, sizeof **ids);
        if (!ids[p]) {
            st = ocl_fail(PT_ERR_OUT_OF_MEMORY, "out of host memory listing devices");
            break;
        }
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, n, ids[p], NULL) == CL_SUCCESS)
            nids[p] = n;
    }
    for (int rank = 0; st == PT_OK && rank < 4; ++rank)
        for (cl_uint p = 0; st == PT_OK && p < np; ++p)
            st = ocl_collect(platforms[p], ids[p], nids[p], rank);

    if (st == PT_OK && ocl_g.n_devices == 0) {
        int len = snprintf(ocl_g.reason, sizeof ocl_g.reason,
                           "%u OpenCL platform(s) found but no devices:", (unsigned)np);
        for (cl_uint p = 0; p < np && len > 0 && (size_t)len < sizeof ocl_g.reason; ++p) {
            char pname[128];
            ocl_platform_string(platforms[p], CL_PLATFORM_NAME, pname, sizeof pname);
            len += snprintf(ocl_g.reason + len, sizeof ocl_g.reason - (size_t)len, "%s \"%s\"",
                            p ? "," : "", pname);
        }
    }
    for (cl_uint p = 0; ids && p < np; ++p) free(ids[p]);
    free(ids);
    free(nids);
    free(platforms);
    return st;
}

void ocl_devices_release(void) {
    for (int i = 0; i < ocl_g.n_devices; ++i) {
        ocl_device *d = &ocl_g.devices[i];
        if (d->ready && !d->no_calls_at_exit) {
            clFinish(d->queue);
            for (int b = 0; b < d->n_host_blocks; ++b) {
                clEnqueueUnmapMemObject(d->queue, d->host_blocks[b].mem, d->host_blocks[b].ptr,
                                        0, NULL, NULL);
                clReleaseMemObject(d->host_blocks[b].mem);
            }
            clFinish(d->queue);
            ocl_programs_release(d);
            ocl_attn_release(d);
            ocl_gemm_release(d);
            ocl_fused_release(d, true);
            if (d->scratch) clReleaseMemObject(d->scratch);
            clReleaseCommandQueue(d->queue);
            clReleaseContext(d->ctx);
        }
        ocl_fused_release(d, false); /* what is left: the host memory */
        free(d->host_blocks);
        pthread_mutex_destroy(&d->lock);
        pthread_mutex_destroy(&d->host_lock);
        pthread_mutex_destroy(&d->clock_lock);
    }
    free(ocl_g.devices);
    ocl_g.devices = NULL;
    ocl_g.n_devices = 0;
}

/* Context callback: driver-side errors that no call returns (asynchronous
 * faults) go to the log rather than vanish. */
static void CL_CALLBACK ocl_context_notify(const char *errinfo, const void *info, size_t cb,
                                           void *user) {
    (void)info;
    (void)cb;
    ocl_log(PT_LOG_WARN, "opencl:%d: driver reports: %s", (int)(intptr_t)user, errinfo);
}

/* Waits for every queue before the process's exit handlers go further. Work
 * still queued at exit (a fill whose tensor nobody read) may need PoCL to
 * compile a kernel in its worker thread, while LLVM's function-local statics
 * (created by PoCL's first compile, destroyed by exit handlers in reverse
 * order of creation) are gone: that crashed in llvm::vfs. */
static void ocl_finish_at_exit(void) {
    for (int i = 0; i < ocl_g.n_devices; ++i)
        if (atomic_load_explicit(&ocl_g.devices[i].ready, memory_order_acquire) &&
            !ocl_g.devices[i].no_calls_at_exit)
            clFinish(ocl_g.devices[i].queue);
}

void ocl_after_new_kernels(ocl_device *d) {
    if (!d->new_kernels) return;
    d->new_kernels = false;
    /* Their first launch compiles them (PoCL, unless its disk cache has
     * them): wait for it now, then register the exit handler (again), so it
     * runs before the destruction of whatever that compile created. Once per
     * new kernel object, so a few hundred times in a process at most. */
    clFinish(d->queue);
    atexit(ocl_finish_at_exit);
}

pt_status ocl_device_ready(int dev, const char *what, ocl_device **out) {
    if (dev < 0 || dev >= ocl_g.n_devices)
        return ocl_fail(PT_ERR_NO_DEVICE, "%s: no OpenCL device %d (%d present)", what, dev,
                        ocl_g.n_devices);
    ocl_device *d = &ocl_g.devices[dev];
    /* Ready devices take no lock here: an op then locks once (ocl_execute, exec.c),
     * not twice. */
    if (atomic_load_explicit(&d->ready, memory_order_acquire)) {
        *out = d;
        return PT_OK;
    }
    pthread_mutex_lock(&d->lock);
    if (!d->ready) {
        cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform,
                                         0};
        cl_int err = CL_SUCCESS;
        d->ctx = clCreateContext(props, 1, &d->id, ocl_context_notify, (void *)(intptr_t)dev,
                                 &err);
        if (!d->ctx) {
            pthread_mutex_unlock(&d->lock);
            return ocl_cl_fail(err, "clCreateContext for opencl:%d (%s)", dev, d->name);
        }
        /* In order: the one queue orders every op and copy. Profiling on,
         * so trace stamps (launch_stamps.c) can read when markers passed. */
        d->queue = clCreateCommandQueue(d->ctx, d->id, CL_QUEUE_PROFILING_ENABLE, &err);
        d->profiling = d->queue != NULL;
        if (!d->queue) /* a driver without profiling still runs, untimed */
            d->queue = clCreateCommandQueue(d->ctx, d->id, 0, &err);
        if (!d->queue) {
            clReleaseContext(d->ctx);
            d->ctx = NULL;
            pthread_mutex_unlock(&d->lock);
            return ocl_cl_fail(err, "clCreateCommandQueue for opencl:%d (%s)", dev, d->name);
        }
        ocl_tuning_apply(d);
        ocl_half_decide(d);
        atomic_store_explicit(&d->ready, true, memory_order_release);
    }
    pthread_mutex_unlock(&d->lock);
    *out = d;
    return PT_OK;
}

/* ---- The vtable's device members ---- */

static void ocl_copy_str(char *dst, size_t cap, const char *src) {
    snprintf(dst, cap, "%s", src);
}

pt_status ocl_init(void) { return ocl_devices_enumerate(); }

void ocl_shutdown(void) { ocl_devices_release(); }

int ocl_device_count(void) { return ocl_g.n_devices; }

const char *ocl_unavailable_reason(void) {
    return ocl_g.reason[0] ? ocl_g.reason : "no OpenCL devices";
}

pt_status ocl_device_info(int dev, pt_device_props *out) {
    if (dev < 0 || dev >= ocl_g.n_devices)
        return ocl_fail(PT_ERR_NO_DEVICE, "device_info: no OpenCL device %d (%d present)", dev,
                        ocl_g.n_devices);
    const ocl_device *d = &ocl_g.devices[dev];
    memset(out, 0, sizeof *out);
    ocl_copy_str(out->name, sizeof out->name, d->name);
    ocl_copy_str(out->backend, sizeof out->backend, "opencl");
    ocl_copy_str(out->vendor, sizeof out->vendor, d->vendor);
    snprintf(out->platform, sizeof out->platform, "%s (%s)", d->platform_name,
             d->platform_version);
    ocl_copy_str(out->driver_version, sizeof out->driver_version, d->driver_version);
    out->type = (d->cl_type & CL_DEVICE_TYPE_GPU)           ? PT_DEVICE_GPU
                : (d->cl_type & CL_DEVICE_TYPE_ACCELERATOR) ? PT_DEVICE_ACCELERATOR
                : (d->cl_type & CL_DEVICE_TYPE_CPU)         ? PT_DEVICE_CPU
                                                            : PT_DEVICE_OTHER;
    out->compute_units = (int)d->compute_units;
    out->memory_total = (int64_t)d->global_mem;
    out->memory_free = -1; /* OpenCL cannot tell */
    out->supports_f64 = d->fp64;
    ocl_device_props_extra(d, out);
    return PT_OK;
}
