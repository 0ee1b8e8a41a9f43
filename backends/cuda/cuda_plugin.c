/* libportable CUDA backend — the plugin's entry point, its vtable, and device
 * admission.
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
 *   - a device that fails:  it is skipped and its error recorded (context
 *                           creation, no kernel image for its architecture,
 *                           stream creation). */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

const pt_host_api *ptcu_host;

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

pt_status ptcu_select(const ptcu_device *d, const char *what) {
    int cur = -1;
    if (cudaGetDevice(&cur) == cudaSuccess && cur == d->ordinal) return PT_OK;
    cudaError_t e = cudaSetDevice(d->ordinal);
    if (e != cudaSuccess) return ptcu_cuda_error(e, "%s: cudaSetDevice(%d)", what, d->ordinal);
    return PT_OK;
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
        if (fgets(line, sizeof line, f)) {
            /* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  <date>" */
            const char *p = strstr(line, "Kernel Module");
            if (p) {
                p += strlen("Kernel Module");
                while (*p == ' ') ++p;
                size_t n = strcspn(p, " \n");
                if (n >= sizeof kernel_module) n = sizeof kernel_module - 1;
                memcpy(kernel_module, p, n);
                kernel_module[n] = '\0';
            }
        }
        fclose(f);
    }
    if (kernel_module[0])
        snprintf(g_cuda.driver_version, sizeof g_cuda.driver_version, "%s (CUDA %s)", kernel_module,
                 cuda_str);
    else
        snprintf(g_cuda.driver_version, sizeof g_cuda.driver_version, "CUDA %s", cuda_str);
}

/* Brings up one CUDA device: context, kernel image check, stream. On failure
 * writes why into why (and leaves nothing allocated). */
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
    d->sm_count = prop.multiProcessorCount;
    d->cc_major = prop.major;
    d->cc_minor = prop.minor;
    d->total_memory = (int64_t)prop.totalGlobalMem;

    e = cudaSetDevice(ordinal);
    if (e == cudaSuccess) e = cudaFree(NULL); /* creates the primary context now, not at first use */
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
        return false;
    }
    if (pthread_mutex_init(&d->lock, NULL) != 0) {
        snprintf(why, cap, "%s: pthread_mutex_init failed", d->name);
        cudaStreamDestroy(d->stream);
        return false;
    }
    return true;
}

static pt_status cuda_init(void) {
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

static void cuda_shutdown(void) {
    /* At process exit the runtime may already be unloading: errors are
     * ignored. The primary contexts are left alone (cudaDeviceReset would
     * pull memory from under other users of CUDA in this process). */
    for (int i = 0; i < g_cuda.ndev; ++i) {
        ptcu_device *d = &g_cuda.devices[i];
        if (cudaSetDevice(d->ordinal) == cudaSuccess) {
            if (d->blas) cublasDestroy(d->blas);
            if (d->stream) cudaStreamSynchronize(d->stream);
            if (d->scratch) cudaFree(d->scratch);
            if (d->stream) cudaStreamDestroy(d->stream);
        }
        pthread_mutex_destroy(&d->lock);
        memset(d, 0, sizeof *d);
    }
    g_cuda.ndev = 0;
    (void)cudaGetLastError();
}

static int cuda_device_count(void) { return g_cuda.ndev; }

static const char *cuda_unavailable_reason(void) {
    return g_cuda.reason[0] ? g_cuda.reason : "no CUDA devices";
}

static pt_status cuda_device_info(int dev, pt_device_props *out) {
    const ptcu_device *d = ptcu_dev(dev);
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
    pt_status s = ptcu_select(d, "device_info");
    if (s != PT_OK) return s;
    size_t free_b = 0, total_b = 0;
    cudaError_t e = cudaMemGetInfo(&free_b, &total_b);
    if (e != cudaSuccess) return ptcu_cuda_error(e, "cudaMemGetInfo");
    out->memory_free = (int64_t)free_b;
    out->memory_total = (int64_t)total_b;
    return PT_OK;
}

static const pt_backend_vtable g_vtable = {
    .struct_size = sizeof(pt_backend_vtable),
    .abi_version = PT_BACKEND_ABI_VERSION,
    .name = "cuda",
    .host_visible = false,
    .init = cuda_init,
    .shutdown = cuda_shutdown,
    .device_count = cuda_device_count,
    .unavailable_reason = cuda_unavailable_reason,
    .device_info = cuda_device_info,
    .alloc = ptcu_vt_alloc,
    .free = ptcu_vt_free,
    .memory_info = ptcu_vt_memory_info,
    .host_alloc = ptcu_vt_host_alloc,
    .host_free = ptcu_vt_host_free,
    .copy_h2d = ptcu_vt_copy_h2d,
    .copy_d2h = ptcu_vt_copy_d2h,
    .copy_d2d = ptcu_vt_copy_d2d,
    .copy_peer = ptcu_vt_copy_peer,
    .supports = ptcu_vt_supports,
    .execute = ptcu_vt_execute,
    .synchronize = ptcu_vt_synchronize,
};

PT_PLUGIN_API const pt_backend_vtable *pt_backend_entry(const pt_host_api *host, uint32_t host_abi) {
    /* A core of another ABI version gets NULL; its loader reports the
     * mismatch. A host API too small to hold the members we call is refused
     * the same way. */
    if (host_abi != PT_BACKEND_ABI_VERSION || !host ||
        host->struct_size < offsetof(pt_host_api, log) + sizeof host->log || !host->set_error ||
        !host->log)
        return NULL;
    ptcu_host = host;
    return &g_vtable;
}
