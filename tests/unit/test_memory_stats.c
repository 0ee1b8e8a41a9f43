/* pt_memory_stats and pt_reset_peak_memory: the peak is per device and
 * starts again from the memory in use at a reset; the driver's figures are
 * reported or -1 (unknown), never made up: on the cpu the OS's MemTotal and
 * MemAvailable, on an OpenCL device that is not AMD's, free is unknown. */
#include "check.h"

static pt_tensor *block_of(pt_device *d, int64_t floats) { return pt_zeros(d, PT_F32, 1, &floats); }

static void test_peak_per_device(void) {
    pt_device *d0 = pt_device_get("cpu:0"), *d1 = pt_device_get("cpu:1");
    REQUIRE(d0);
    REQUIRE(d1);
    pt_memory_usage m0, m1;
    CHECK_OK(pt_reset_peak_memory(d0));
    CHECK_OK(pt_reset_peak_memory(d1));
    CHECK_OK(pt_memory_stats(d0, &m0));
    const int64_t base0 = m0.in_use;
    CHECK_INT(m0.peak, base0);

    pt_tensor *big = block_of(d0, 1 << 20); /* 4 MiB */
    REQUIRE(big);
    CHECK_OK(pt_memory_stats(d0, &m0));
    CHECK_INT(m0.in_use, base0 + (4 << 20));
    CHECK_INT(m0.peak, base0 + (4 << 20));
    pt_release(big);
    CHECK_OK(pt_memory_stats(d0, &m0));
    CHECK_INT(m0.in_use, base0);
    CHECK_INT(m0.peak, base0 + (4 << 20)); /* the peak stays until a reset */
    CHECK_OK(pt_memory_stats(d1, &m1));
    CHECK_INT(m1.peak, m1.in_use); /* the other device saw none of it */

    CHECK_OK(pt_reset_peak_memory(d0));
    CHECK_OK(pt_memory_stats(d0, &m0));
    CHECK_INT(m0.peak, base0);
    pt_tensor *small = block_of(d0, 1024); /* 4 KiB */
    REQUIRE(small);
    CHECK_OK(pt_memory_stats(d0, &m0));
    CHECK_INT(m0.peak, base0 + 4096);
    pt_release(small);

    CHECK(pt_reset_peak_memory(NULL) == PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "pt_reset_peak_memory");
}

static void test_driver_figures(void) {
    pt_device *cpu = pt_cpu();
    pt_memory_usage m;
    CHECK_OK(pt_memory_stats(cpu, &m));
    /* Linux reports both (/proc/meminfo) */
    CHECK(m.device_total > 0);
    CHECK(m.device_free > 0 && m.device_free <= m.device_total);
    pt_device_props p;
    CHECK_OK(pt_device_info(cpu, &p));
    CHECK_INT(p.memory_total, m.device_total);

    pt_device *ocl = pt_device_get("opencl:0");
    if (!ocl) {
        printf("opencl:0 not available (%s): its figures not checked\n", pt_last_error());
        pt_clear_error();
        return;
    }
    CHECK_OK(pt_memory_stats(ocl, &m));
    CHECK_OK(pt_device_info(ocl, &p));
    CHECK(m.device_total > 0);
    CHECK_INT(m.device_total, p.memory_total);
    /* AMD's OpenCL names itself so; PoCL on an AMD CPU says "AuthenticAMD" */
    const bool amd = strstr(p.vendor, "Advanced Micro Devices") != NULL;
    if (amd)
        CHECK(m.device_free == -1 || (m.device_free > 0 && m.device_free <= m.device_total));
    else
        CHECK_INT(m.device_free, -1); /* PoCL, Intel, NVIDIA, rusticl: no query, so unknown */
}

int main(void) {
    test_peak_per_device();
    test_driver_figures();
    return check_summary();
}
