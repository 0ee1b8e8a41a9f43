/* libportable CUDA backend — devices: admission, bring-up on first use,
 * properties, and the caller's current device.
 *
 * Graceful absence: the plugin links the CUDA runtime (libcudart) shared but
 * never the driver (libcuda.so.1), which the runtime loads when first asked
 * for a device. So the plugin loads on any machine with the toolkit's
 * runtime; init then finds out what is there and, when nothing usable is,
 * returns PT_OK with zero devices and a reason the core shows in
 * `portable devices`:
 *   - no driver:            libcuda.so.1 cannot be dlopen'ed (dlerror() text)
 *                           and cudaGetDeviceCount's error;
 *   - a driver, no device:  cudaGetDeviceCount's error or 0 devices, with
 *                           CUDA_VISIBLE_DEVICES;
 *   - a GPU the build has no kernels for (its compute capability against
 *                           the compiled architectures): it is skipped and
 *                           the reason recorded.
 * Admission reads device properties only, which needs no CUDA context: a
 * device's context, stream and kernel check are made on its first use
 * (ptcu_select), so a process that uses one GPU of eight pays for one; a
 * device whose bring-up fails then fails every call with that reason.
 * Every vtable entry (plugin.c) puts the calling thread's current CUDA
 * device back as it found it (ptcu_caller_now / ptcu_caller_restore), so
 * the plugin never moves a program's own CUDA work. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static struct {
    int ndev;
    ptcu_device devices[PTCU_MAX_DEVICES];
    char reason[2048];           /* why there are no devices ("" when some) */
    char driver_version[64];     /* "580.159.04 (CUDA 13.0)" */
    char runtime_version[32];    /* "13.0" */
} g_cuda;

int ptcu_device_total(void) { return g_cuda.ndev; }

ptcu_device *ptcu_dev(int dev) { return &g_cuda.devices[dev]; }

/* ---- Devices ---- */

/* Context, kernel check, stream, occupancy: d's first use (caller holds
 * up_lock). On failure writes why and leaves nothing allocated. */
static bool bring_up(ptcu_device *d, char *why, size_t cap) {
    cudaError_t e = cudaSetDevice(d->ordinal);
    if (e == cudaSuccess) e = cudaFree(NULL); /* creates the primary context now */
    if (e != cudaSuccess) {
        snprintf(why, cap, "%s: context creation failed: %s (%s)", d->name, cudaGetErrorName(e),
                 cudaGetErrorString(e));
        (void)cudaGetLastError();
        return false;
    }
    e = ptcu_probe_kernels();
    if (e != cudaSuccess) {
        snprintf(why, cap,
                 "%s: compute capability %d.%d cannot run this build's kernels (built for %s): %s "
                 "(%s); rebuild with -DPT_CUDA_ARCHITECTURES=%d%d-real",
                 d->name, d->cc_major, d->cc_minor, ptcu_compiled_architectures(), cudaGetErrorName(e),
                 cudaGetErrorString(e), d->cc_major, d->cc_minor);
        return false;
    }
    e = cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        snprintf(why, cap, "%s: cudaStreamCreateWithFlags: %s (%s)", d->name, cudaGetErrorName(e),
                 cudaGetErrorString(e));
        (void)cudaGetLastError();
        d->stream = NULL;
        return false;
    }
    return true;
}

pt_status ptcu_select(ptcu_device *d, const char *what) {
    int state = __atomic_load_n(&d->up, __ATOMIC_ACQUIRE);
    if (state == 0) {
        pthread_mutex_lock(&d->up_lock);
        state = __atomic_load_n(&d->up, __ATOMIC_RELAXED);
        if (state == 0) {
            state = bring_up(d, d->why, sizeof d->why) ? 1 : -1;
            if (state < 0) ptcu_host->log(PT_LOG_WARN, "cuda: CUDA device %d: %s", d->ordinal, d->why);
            __atomic_store_n(&d->up, state, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&d->up_lock);
    }
    if (state < 0)
        return ptcu_fail(PT_ERR_BACKEND, "%s: CUDA device %d could not be brought up: %s", what, d->ordinal,
                         d->why);
    int cur = -1;
    if (cudaGetDevice(&cur) == cudaSuccess && cur == d->ordinal) return PT_OK;
    cudaError_t e = cudaSetDevice(d->ordinal);
    if (e != cudaSuccess) return ptcu_cuda_error(e, "%s: cudaSetDevice(%d)", what, d->ordinal);
    return PT_OK;
}

/* ---- The caller's current device ----
 *
 * cudaSetDevice is per thread and programs rely on it (their own kernels, a
 * second library): an entry that had to switch switches back. Only to a
 * device whose context exists already: on a thread that never chose one,
 * cudaGetDevice says 0, and switching "back" there would create device 0's
 * context for nothing (this plugin brings contexts up lazily). */
ptcu_caller_device ptcu_caller_now(void) {
    ptcu_caller_device c = {-1, false};
    if (cudaGetDevice(&c.ordinal) == cudaSuccess) c.known = true;
    else (void)cudaGetLastError();
    return c;
}

static bool context_exists(int ordinal);

void ptcu_caller_restore(ptcu_caller_device c) {
    int cur = -1;
    if (!c.known || cudaGetDevice(&cur) != cudaSuccess || cur == c.ordinal) return;
    if (!context_exists(c.ordinal)) return;
    if (cudaSetDevice(c.ordinal) != cudaSuccess) (void)cudaGetLastError();
}

/* ---- Admission ---- */

static void append(char *buf, size_t cap, const char *fmt, ...) PT_PRINTF(3, 4);
static void append(char *buf, size_t cap, const char *fmt, ...) {
    size_t used = strlen(buf);
    if (used + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, cap - used, fmt, ap);
    va_end(ap);
}

/* The kernel driver's version from /proc (what nvidia-smi shows); the CUDA
 * API only knows the CUDA version the driver supports. */
static void read_driver_version(void) {
    int cuda_version = 0;
    char cuda_str[32] = "unknown";
    if (cudaDriverGetVersion(&cuda_version) == cudaSuccess && cuda_version > 0)
        snprintf(cuda_str, sizeof cuda_str, "%d.%d", cuda_version / 1000, (cuda_version % 1000) / 10);
    char kernel_module[32] = "";
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (f) {
        char line[256];
        if (fgets(line, sizeof line, f)) (void)ptcu_parse_nvrm_version(line, kernel_module, sizeof kernel_module);
        fclose(f);
    }
    if (kernel_module[0])
        snprintf(g_cuda.driver_version, sizeof g_cuda.driver_version, "%s (CUDA %s)", kernel_module,
                 cuda_str);
    else
        snprintf(g_cuda.driver_version, sizeof g_cuda.driver_version, "CUDA %s", cuda_str);
}

/* Admits one CUDA device from its properties alone (no context): its
 * compute capability must suit the compiled architectures. On failure
 * writes why into why. */
static bool admit_device(int ordinal, ptcu_device *d, char *why, size_t cap) {
    memset(d, 0, sizeof *d);
    d->ordinal = ordinal;
    struct cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, ordinal);
    if (e != cudaSuccess) {
        snprintf(why, cap, "cudaGetDeviceProperties: %s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
        (void)cudaGetLastError();
        return false;
    }
    snprintf(d->name, sizeof d->name, "%s", prop.name);
    snprintf(d->pci, sizeof d->pci, "%04x:%02x:%02x.0", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
    /* nvidia-smi's form: GPU- and the 16 bytes as 8-4-4-4-12 hex digits */
    const unsigned char *u = (const unsigned char *)prop.uuid.bytes;
    snprintf(d->uuid, sizeof d->uuid,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
             u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    d->shared_per_block = (int64_t)prop.sharedMemPerBlock;
    /* What a kernel may opt in to beyond that (cudaFuncSetAttribute): the
     * attention kernels size their tiles to it. */
    int optin = 0;
    if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, ordinal) != cudaSuccess ||
        optin < d->shared_per_block) {
        (void)cudaGetLastError();
        optin = (int)d->shared_per_block;
    }
    d->shared_optin = optin;
    d->max_threads_per_block = prop.maxThreadsPerBlock;
    d->sm_count = prop.multiProcessorCount;
    d->cc_major = prop.major;
    d->cc_minor = prop.minor;
    d->total_memory = (int64_t)prop.totalGlobalMem;
    if (!ptcu_architecture_fits(ptcu_compiled_architecture_codes(), d->cc_major, d->cc_minor)) {
        snprintf(why, cap,
                 "%s: compute capability %d.%d cannot run this build's kernels (built for %s): %s "
                 "(%s); rebuild with -DPT_CUDA_ARCHITECTURES=%d%d-real",
                 d->name, d->cc_major, d->cc_minor, ptcu_compiled_architectures(),
                 cudaGetErrorName(cudaErrorNoKernelImageForDevice),
                 cudaGetErrorString(cudaErrorNoKernelImageForDevice), d->cc_major, d->cc_minor);
        return false;
    }
    if (pthread_mutex_init(&d->lock, NULL) != 0 || pthread_mutex_init(&d->up_lock, NULL) != 0 ||
        pthread_mutex_init(&d->clock_lock, NULL) != 0) {
        snprintf(why, cap, "%s: pthread_mutex_init failed", d->name);
        return false;
    }
    return true;
}

static bool context_exists(int ordinal) {
    for (int i = 0; i < g_cuda.ndev; ++i)
        if (g_cuda.devices[i].ordinal == ordinal)
            return __atomic_load_n(&g_cuda.devices[i].up, __ATOMIC_ACQUIRE) == 1;
    return true; /* not one of ours: the caller chose it, so it has its context */
}

pt_status ptcu_vt_init(void) {
    g_cuda.ndev = 0;
    g_cuda.reason[0] = '\0';
    snprintf(g_cuda.driver_version, sizeof g_cuda.driver_version, "none");
    int rt = 0;
    if (cudaRuntimeGetVersion(&rt) == cudaSuccess)
        snprintf(g_cuda.runtime_version, sizeof g_cuda.runtime_version, "%d.%d", rt / 1000, (rt % 1000) / 10);

    /* Look for the driver ourselves first: the runtime's error for a missing
     * driver ("insufficient driver") does not say that the file is absent. */
    char dl_error[512] = "";
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver) {
        const char *msg = dlerror();
        snprintf(dl_error, sizeof dl_error, "%s", msg ? msg : "unknown dlopen error");
    } else {
        dlclose(driver); /* the runtime holds its own reference once it loads it */
    }

    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (dl_error[0]) {
            snprintf(g_cuda.reason, sizeof g_cuda.reason,
                     "CUDA driver not found (libcuda.so.1 missing): dlopen(\"libcuda.so.1\") failed: %s; "
                     "cudaGetDeviceCount returned %s (%s). Install the NVIDIA driver, or choose "
                     "another backend (PORTABLE_BACKEND=cpu)",
                     dl_error, cudaGetErrorName(e), cudaGetErrorString(e));
        } else {
            read_driver_version();
            const char *visible = getenv("CUDA_VISIBLE_DEVICES");
            snprintf(g_cuda.reason, sizeof g_cuda.reason,
                     "cudaGetDeviceCount returned %s (%s); driver %s, CUDA runtime %s%s%s%s",
                     cudaGetErrorName(e), cudaGetErrorString(e), g_cuda.driver_version,
                     g_cuda.runtime_version, visible ? ", CUDA_VISIBLE_DEVICES=\"" : "",
                     visible ? visible : "", visible ? "\"" : "");
            if (e == cudaErrorInsufficientDriver)
                append(g_cuda.reason, sizeof g_cuda.reason,
                       ". The driver is older than this CUDA runtime: update the NVIDIA driver");
        }
        return PT_OK;
    }
    read_driver_version();
    if (count == 0) {
        const char *visible = getenv("CUDA_VISIBLE_DEVICES");
        snprintf(g_cuda.reason, sizeof g_cuda.reason,
                 "driver %s present but cudaGetDeviceCount found 0 devices%s%s%s",
                 g_cuda.driver_version, visible ? " (CUDA_VISIBLE_DEVICES=\"" : "",
                 visible ? visible : "", visible ? "\")" : "");
        return PT_OK;
    }
    if (count > PTCU_MAX_DEVICES) {
        ptcu_host->log(PT_LOG_WARN, "cuda: %d devices found, using the first %d", count, PTCU_MAX_DEVICES);
        count = PTCU_MAX_DEVICES;
    }
    char skipped[1536] = "";
    for (int ordinal = 0; ordinal < count; ++ordinal) {
        char why[512] = "";
        if (admit_device(ordinal, &g_cuda.devices[g_cuda.ndev], why, sizeof why)) {
            ++g_cuda.ndev;
        } else {
            ptcu_host->log(PT_LOG_WARN, "cuda: skipping CUDA device %d: %s", ordinal, why);
            append(skipped, sizeof skipped, "%sCUDA device %d: %s", skipped[0] ? "; " : "", ordinal, why);
        }
    }
    if (g_cuda.ndev == 0)
        snprintf(g_cuda.reason, sizeof g_cuda.reason, "%d CUDA device%s found but none could be used: %s",
                 count, count == 1 ? "" : "s", skipped);
    return PT_OK;
}

int ptcu_vt_device_count(void) { return g_cuda.ndev; }

void ptcu_devices_forget(void) { g_cuda.ndev = 0; }

const char *ptcu_vt_unavailable_reason(void) {
    return g_cuda.reason[0] ? g_cuda.reason : "no CUDA devices";
}

pt_status ptcu_vt_device_info(int dev, pt_device_props *out) {
    ptcu_device *d = ptcu_dev(dev);
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", d->name);
    snprintf(out->backend, sizeof out->backend, "cuda");
    snprintf(out->vendor, sizeof out->vendor, "NVIDIA");
    snprintf(out->platform, sizeof out->platform, "CUDA runtime %s, compute capability %d.%d, PCI %s",
             g_cuda.runtime_version, d->cc_major, d->cc_minor, d->pci);
    snprintf(out->driver_version, sizeof out->driver_version, "%s", g_cuda.driver_version);
    out->type = PT_DEVICE_GPU;
    out->compute_units = d->sm_count;
    out->memory_total = d->total_memory;
    out->memory_free = -1;
    out->supports_f64 = true;
    out->supports_f16 = true; /* every architecture the plugin is built for (>= 5.3) */
    out->max_alloc = d->total_memory;
    out->local_memory = d->shared_per_block;
    out->max_work_group = d->max_threads_per_block;
    out->compute_capability_major = d->cc_major;
    out->compute_capability_minor = d->cc_minor;
    snprintf(out->uuid, sizeof out->uuid, "%s", d->uuid);
    snprintf(out->pci_bus_id, sizeof out->pci_bus_id, "%s", d->pci);
    pt_status s = ptcu_select(d, "device_info");
    if (s != PT_OK) return s;
    size_t free_b = 0, total_b = 0;
    cudaError_t e = cudaMemGetInfo(&free_b, &total_b);
    if (e != cudaSuccess) return ptcu_cuda_error(e, "cudaMemGetInfo");
    out->memory_free = (int64_t)free_b;
    out->memory_total = (int64_t)total_b;
    return PT_OK;
}

