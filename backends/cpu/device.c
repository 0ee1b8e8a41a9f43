/* libportable cpu backend — devices and their properties.
 *
 * Every cpu device is the same host: PORTABLE_CPU_DEVICES=N only multiplies
 * the name so multi-device code can be exercised on one machine. Properties
 * come from /proc (Linux) with sysconf fallbacks, read on each call: they
 * are asked for rarely and the free-memory figure changes. */
/* posix_memalign, sysconf: POSIX, also under a strict -std=c11. */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec_conv.h"
#include "internal.h"
#include "vecmath.h"

#ifdef PT_CPU_HAVE_CBLAS
#include <cblas.h>
#endif

#define PT_CPU_MAX_DEVICES 64

/* PORTABLE_CPU_DEVICES, read once (a bad value is reported once). */
/* Nothing to bring up: the devices are this process's memory and cores. */
pt_status pt_cpu_init(void) { return PT_OK; }

static int device_count = -1;
static void read_device_count(void) {
    device_count = PT_HOST_HAS(pt_cpu_host, env_int)
                       ? (int)pt_cpu_host->env_int("PORTABLE_CPU_DEVICES", 1, PT_CPU_MAX_DEVICES, 1)
                       : 1;
}

int pt_cpu_device_count(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, read_device_count);
    return device_count;
}

/* Copies the value of the first "key<spaces>: value" line of /proc/cpuinfo
 * into out; false when absent. */
static bool cpuinfo_field(const char *key, char *out, size_t cap) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return false;
    char line[512];
    size_t klen = strlen(key);
    bool found = false;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) != 0) continue;
        const char *p = line + klen;
        while (*p == ' ' || *p == '\t') ++p;
        if (*p != ':') continue;
        ++p;
        while (*p == ' ' || *p == '\t') ++p;
        size_t n = strcspn(p, "\r\n");
        if (n == 0) continue;
        if (n >= cap) n = cap - 1;
        memcpy(out, p, n);
        out[n] = '\0';
        found = true;
        break;
    }
    fclose(f);
    return found;
}

/* "MemTotal" / "MemAvailable" from /proc/meminfo in bytes; -1 when absent. */
static int64_t meminfo_bytes(const char *key) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return -1;
    char line[256];
    size_t klen = strlen(key);
    int64_t result = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            long long kib = 0;
            if (sscanf(line + klen + 1, "%lld", &kib) == 1) result = (int64_t)kib * 1024;
            break;
        }
    }
    fclose(f);
    return result;
}

static void copy_str(char *dst, size_t cap, const char *src) {
    snprintf(dst, cap, "%s", src);
}

pt_status pt_cpu_memory_info(int dev, int64_t *free_bytes, int64_t *total_bytes) {
    if (dev < 0 || dev >= pt_cpu_device_count())
        return pt_cpu_fail(PT_ERR_NO_DEVICE, "memory_info: no cpu device %d (there are %d)", dev,
                           pt_cpu_device_count());
    int64_t page = (int64_t)sysconf(_SC_PAGESIZE);
    int64_t total = meminfo_bytes("MemTotal");
    if (total < 0) {
        long pages = sysconf(_SC_PHYS_PAGES);
        total = (pages > 0 && page > 0) ? (int64_t)pages * page : -1;
    }
    int64_t avail = meminfo_bytes("MemAvailable");
    if (avail < 0) {
        long pages = sysconf(_SC_AVPHYS_PAGES);
        avail = (pages > 0 && page > 0) ? (int64_t)pages * page : -1;
    }
    if (free_bytes) *free_bytes = avail;
    if (total_bytes) *total_bytes = total;
    return PT_OK;
}

pt_status pt_cpu_device_info(int dev, pt_device_props *out) {
    if (dev < 0 || dev >= pt_cpu_device_count())
        return pt_cpu_fail(PT_ERR_NO_DEVICE, "device_info: no cpu device %d (there are %d)", dev,
                           pt_cpu_device_count());
    memset(out, 0, sizeof *out);
    if (!cpuinfo_field("model name", out->name, sizeof out->name))
        copy_str(out->name, sizeof out->name, "cpu");
    copy_str(out->backend, sizeof out->backend, "cpu");
    if (!cpuinfo_field("vendor_id", out->vendor, sizeof out->vendor))
        copy_str(out->vendor, sizeof out->vendor, "unknown");
#if defined(PT_CPU_HAVE_CBLAS) && defined(PT_CPU_HAVE_OPENBLAS_CONFIG)
    /* The version and the kernels OpenBLAS chose for this CPU, not its whole
     * build configuration: the 128 bytes must hold the other libraries too. */
    char version[16] = "";
    (void)sscanf(openblas_get_config(), "OpenBLAS %15s", version);
    snprintf(out->platform, sizeof out->platform, "OpenBLAS %s %s", version[0] ? version : "?",
             openblas_get_corename());
#elif defined(PT_CPU_HAVE_CBLAS)
    copy_str(out->platform, sizeof out->platform, "CBLAS");
#else
    copy_str(out->platform, sizeof out->platform, "built-in loops (no BLAS)");
#endif
    /* Which ISA the vector math and oneDNN's convolutions use (AVX-512 or
     * AVX2): what decides how they compare with NumPy's and PyTorch's. */
    char conv[64] = "convolutions im2col + GEMM";
#ifdef PT_CPU_HAVE_ONEDNN
    pt_cpu_onednn_version(conv, sizeof conv);
#endif
    char libs[sizeof out->platform];
    const char *gemm = pt_cpu_gemm_note();
    snprintf(libs, sizeof libs, "%s; vecmath %s; %s%s%s", out->platform, pt_cpu_vm.isa, conv, gemm[0] ? "; " : "",
             gemm);
    copy_str(out->platform, sizeof out->platform, libs);
    copy_str(out->driver_version, sizeof out->driver_version, "libportable-cpu 0.1");
    out->type = PT_DEVICE_CPU;
    out->compute_units = pt_cpu_max_threads();
#ifndef _OPENMP
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    out->compute_units = cores > 0 ? (int)cores : 1;
#endif
    pt_cpu_memory_info(dev, &out->memory_free, &out->memory_total);
    out->supports_f64 = true;
    out->supports_f16 = true;              /* stored in 16 bits, computed in f32 */
    out->max_alloc = out->memory_total;    /* malloc: as much as there is */
    return PT_OK;
}
