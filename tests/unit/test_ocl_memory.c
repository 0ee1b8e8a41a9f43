/* OpenCL allocations that cannot be served come back as
 * PT_ERR_OUT_OF_MEMORY with a message naming the request, the device's
 * limits and the fix, instead of succeeding lazily and failing (or, with
 * PoCL, aborting the process on its own assertion) at first use:
 *
 *  - a buffer just over CL_DEVICE_MAX_MEM_ALLOC_SIZE;
 *  - a buffer within that limit but larger than CL_DEVICE_GLOBAL_MEM_SIZE
 *    minus what this process already holds (untouched buffers: nothing is
 *    written, so this costs address space, not memory);
 *  - the host running out while buffers are filled (an address-space limit
 *    in a child process): on a CPU device this aborted inside PoCL.
 *
 * The limits are read with OpenCL directly, from the device whose name
 * pt_device_info reports for opencl:0. Exit 77 when there is no OpenCL
 * device. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <sys/resource.h>

#include "check.h"

#define MIB ((int64_t)1 << 20)

static pt_device *dev;
static cl_ulong max_alloc, global_mem;

/* Finds the cl_device_id named like opencl:0 and reads its limits. */
static bool read_limits(void) {
    pt_device_props p;
    if (pt_device_info(dev, &p) != PT_OK) return false;
    cl_platform_id plats[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS) return false;
    for (cl_uint i = 0; i < np && i < 16; ++i) {
        cl_device_id ids[16];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 16, ids, &nd) != CL_SUCCESS) continue;
        for (cl_uint j = 0; j < nd && j < 16; ++j) {
            char name[256] = "";
            clGetDeviceInfo(ids[j], CL_DEVICE_NAME, sizeof name - 1, name, NULL);
            if (strncmp(name, p.name, sizeof p.name - 1) != 0) continue;
            return clGetDeviceInfo(ids[j], CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc,
                                   NULL) == CL_SUCCESS &&
                   clGetDeviceInfo(ids[j], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global_mem, &global_mem,
                                   NULL) == CL_SUCCESS;
        }
    }
    return false;
}

/* The device still works: a small tensor filled and read back. */
static void check_still_usable(void) {
    int64_t n = 1000;
    pt_tensor *x = pt_full(dev, PT_F32, 1, &n, 3);
    CHECK_NOT_NULL(x);
    pt_tensor *s = x ? pt_sum(x, PT_ALL, false) : NULL;
    CHECK_NOT_NULL(s);
    if (s) CHECK_DBL(pt_item(s), 3000, 0);
    pt_release(s);
    pt_release(x);
}

static void over_max_alloc(void) {
    char limit[32];
    snprintf(limit, sizeof limit, "%llu", (unsigned long long)max_alloc);
    int64_t n = (int64_t)(max_alloc / 4) + 1; /* f32: 4 bytes over the limit */
    pt_clear_error();
    pt_tensor *t = pt_empty(dev, PT_F32, 1, &n);
    CHECK(t == NULL);
    CHECK_LAST(PT_ERR_OUT_OF_MEMORY);
    printf("   %s\n", pt_last_error());
    CHECK_HAS(pt_last_error(), "pt_empty");
    CHECK_HAS(pt_last_error(), "opencl:0");
    CHECK_HAS(pt_last_error(), "CL_DEVICE_MAX_MEM_ALLOC_SIZE");
    CHECK_HAS(pt_last_error(), limit);
    CHECK_HAS(pt_last_error(), "split");
    pt_release(t);
    pt_clear_error();
    check_still_usable();
}

static void over_remaining_global(void) {
    CHECK_OK(pt_empty_cache(dev));
    int64_t piece = (int64_t)max_alloc / MIB * MIB; /* the allocator rounds to whole MiB */
    int64_t fit = (int64_t)global_mem / piece;      /* pieces that fit in global memory */
    int64_t n = piece / 4;
    pt_tensor *held[64] = {NULL};
    int got = 0;
    pt_clear_error();
    /* Untouched buffers: nothing is written, so nothing is backed by memory. */
    while (got <= fit && got < 64) {
        pt_tensor *t = pt_empty(dev, PT_F32, 1, &n);
        if (!t) break;
        held[got++] = t;
    }
    printf("   %d buffer(s) of %lld bytes before a refusal (global memory %llu, max alloc %llu)\n",
           got, (long long)piece, (unsigned long long)global_mem, (unsigned long long)max_alloc);
    char w[256];
    snprintf(w, sizeof w, "%d x %lld bytes handed out fits in CL_DEVICE_GLOBAL_MEM_SIZE %llu", got,
             (long long)piece, (unsigned long long)global_mem);
    check_report((uint64_t)got * (uint64_t)piece <= global_mem, __FILE__, __LINE__, w);
    /* small buffers the runtime itself holds may cost one piece, no more */
    CHECK(got >= fit - 1);
    CHECK_LAST(PT_ERR_OUT_OF_MEMORY);
    printf("   %s\n", pt_last_error());
    CHECK_HAS(pt_last_error(), "pt_empty");
    CHECK_HAS(pt_last_error(), "opencl:0");
    CHECK_HAS(pt_last_error(), "CL_DEVICE_GLOBAL_MEM_SIZE");
    CHECK_HAS(pt_last_error(), "release tensors");
    for (int i = 0; i < got; ++i) pt_release(held[i]);
    pt_clear_error();
    CHECK_OK(pt_empty_cache(dev));
    /* released memory can be had again */
    if (fit >= 1) {
        pt_tensor *again = pt_empty(dev, PT_F32, 1, &n);
        CHECK_NOT_NULL(again);
        pt_release(again);
        CHECK_OK(pt_empty_cache(dev));
    }
    check_still_usable();
}

/* In a child: the address space is capped a little above what the process
 * uses, then 128 MiB buffers are filled until one cannot be had. */
static long vm_size_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %ld kB", &kib) == 1) break;
    if (f) fclose(f);
    return kib;
}

static void host_runs_out(void) {
    dev = pt_device_get("opencl:0");
    REQUIRE(dev);
    pt_device_props p;
    CHECK_OK(pt_device_info(dev, &p));
    if (p.type != PT_DEVICE_CPU) {
        printf("   (skipped: opencl:0 is not a CPU device, its memory is not the host's)\n");
        return;
    }
    check_still_usable(); /* context, queue and the fill/sum kernels exist before the cap */
    long vm = vm_size_kib();
    CHECK(vm > 0);
    struct rlimit lim = {(rlim_t)vm * 1024 + (rlim_t)(512 * MIB), (rlim_t)vm * 1024 + (rlim_t)(512 * MIB)};
    CHECK(setrlimit(RLIMIT_AS, &lim) == 0);
    int64_t n = 128 * MIB / 4;
    pt_tensor *held[16] = {NULL};
    int got = 0;
    pt_status failed = PT_OK;
    pt_clear_error();
    while (got < 16) {
        pt_tensor *t = pt_empty(dev, PT_F32, 1, &n);
        if (!t) {
            failed = pt_last_status();
            break;
        }
        held[got++] = t;
        pt_status s = pt_fill_(t, 1.0);
        if (s == PT_OK) s = pt_device_synchronize(dev);
        if (s != PT_OK) {
            failed = s;
            break;
        }
    }
    printf("   %d buffer(s) of 128 MiB filled, then: %s: %s\n", got, pt_status_name(failed),
           pt_last_error());
    CHECK(got < 16);
    CHECK_INT(failed, PT_ERR_OUT_OF_MEMORY);
    CHECK_HAS(pt_last_error(), "opencl:0");
    for (int i = 0; i < got; ++i) pt_release(held[i]);
    CHECK_OK(pt_empty_cache(dev));
    check_still_usable();
}

int main(void) {
    /* First, in a fresh child: a forked child of a process whose OpenCL
     * driver already runs threads could not use it. */
    const char *env[] = {NULL};
    check_in_child("the host runs out while buffers are filled", env, host_runs_out);
    dev = pt_device_get("opencl:0");
    if (!dev) {
        printf("SKIP: no OpenCL device: %s\n", pt_last_error());
        return 77;
    }
    if (!read_limits()) {
        printf("FAILED: could not read the limits of %s with OpenCL\n", pt_device_name(dev));
        return 1;
    }
    printf("opencl:0: CL_DEVICE_MAX_MEM_ALLOC_SIZE %llu, CL_DEVICE_GLOBAL_MEM_SIZE %llu\n",
           (unsigned long long)max_alloc, (unsigned long long)global_mem);
    printf("-- just over the per-buffer limit\n");
    over_max_alloc();
    printf("-- within the per-buffer limit, over what is left of global memory\n");
    over_remaining_global();
    return check_summary();
}
