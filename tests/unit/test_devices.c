/* Devices: names, lookups (good and bad), pt_try_device / pt_all_devices,
 * counts, properties, backends, and PORTABLE_BACKEND / PORTABLE_CPU_DEVICES.
 * Each scenario runs in its own process with its own environment. */
#include "check.h"

static int backend_index(const char *name) {
    for (int i = 0; i < pt_backend_count(); ++i)
        if (pt_backend_name(i) && strcmp(pt_backend_name(i), name) == 0) return i;
    return -1;
}

/* device.h says PT_ERR_NO_DEVICE for every absent device; a device of a
 * backend that failed to load may also report PT_ERR_BACKEND_LOAD. */
static void expect_no_device_status(const char *name, bool backend_missing) {
    pt_clear_error();
    pt_device *d = pt_device_get(name);
    char what[300];
    snprintf(what, sizeof what, "pt_device_get(\"%s\") is NULL", name ? name : "(NULL)");
    check_report(d == NULL, __FILE__, __LINE__, what);
    pt_status s = pt_last_status();
    snprintf(what, sizeof what, "pt_device_get(\"%s\") status %s (%s)", name ? name : "(NULL)", pt_status_name(s),
             pt_last_error());
    check_report(s == PT_ERR_NO_DEVICE || (!name && s == PT_ERR_INVALID_ARGUMENT) ||
                     (backend_missing && s == PT_ERR_BACKEND_LOAD),
                 __FILE__, __LINE__, what);
    CHECK_HAS(pt_last_error(), "pt_device_get");
    if (name && *name) CHECK_HAS(pt_last_error(), name);
}
static void expect_no_device(const char *name) { expect_no_device_status(name, false); }

/* A string that is not a device name at all (device.h's grammar):
 * PT_ERR_INVALID_ARGUMENT naming the function and the string. */
static void expect_bad_name_at(const char *name, int line) {
    pt_clear_error();
    pt_device *d = pt_device_get(name);
    char what[400];
    snprintf(what, sizeof what, "pt_device_get(\"%s\") is NULL + PT_ERR_INVALID_ARGUMENT (got %s, %s: %s)",
             name, d ? pt_device_name(d) : "NULL", pt_status_name(pt_last_status()), pt_last_error());
    check_report(d == NULL && pt_last_status() == PT_ERR_INVALID_ARGUMENT, __FILE__, line, what);
    char quoted[80];
    snprintf(quoted, sizeof quoted, "'%s'", name);
    snprintf(what, sizeof what, "message names pt_device_get and '%s' (got \"%s\")", name, pt_last_error());
    check_report(strstr(pt_last_error(), "pt_device_get") && strstr(pt_last_error(), quoted), __FILE__,
                 line, what);
    pt_clear_error();
}
#define expect_bad_name(name) expect_bad_name_at((name), __LINE__)

/* PORTABLE_BACKEND=cpu, PORTABLE_CPU_DEVICES=2: strict parsing:
 * "cpu: 1", "cpu:+0", "cpu:00" were accepted as cpu:1 / cpu:0. */
static void strict_names(void) {
    pt_device *c0 = pt_device_get("cpu:0"), *c1 = pt_device_get("cpu:1");
    CHECK_NOT_NULL(c0);
    CHECK_NOT_NULL(c1);
    CHECK(pt_device_get("cpu") == c0);
    const char *bad[] = {"cpu: 1", "cpu:+0", "cpu:+1", "cpu:00", "cpu:01", "cpu:-0", "cpu:-1",
                         "cpu:1x", "cpu:0x1", "cpu:1e0", "cpu:1.0", "cpu:0 ", "cpu:\t1", "cpu:1:0",
                         "cpu:", ":0", ":", "", " cpu", "cpu ", "cp u", "cpu\n", "cpu:\n0",
                         "cpu/0", "c+u", "abcdefghijklmnopqrstuvwxyzabcdefghij"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) expect_bad_name(bad[i]);
    /* Well-formed names of devices that do not exist: PT_ERR_NO_DEVICE,
     * huge indices included (no wrap-around to a small index). */
    expect_no_device("cpu:2");
    expect_no_device("cpu:99999999999");
    expect_no_device("cpu:2147483648");
    expect_no_device("cpu:4294967297");
    expect_no_device("cpu:18446744073709551617");
    expect_no_device("nosuch");
    expect_no_device("nosuch:0");
    pt_clear_error();
}

/* PORTABLE_BACKEND set to something that is not a name (the environment
 * holds the value): every function that reads it returns the error
 * device.h lists, PT_ERR_INVALID_ARGUMENT naming the variable and value. */
static void backend_unparseable(void) {
    const char *env = getenv("PORTABLE_BACKEND");
    pt_clear_error();
    CHECK(pt_default_device() == NULL);
    CHECK_LAST(PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "pt_default_device");
    CHECK_HAS(pt_last_error(), "PORTABLE_BACKEND");
    CHECK_HAS(pt_last_error(), env);
    pt_clear_error();
    CHECK(pt_try_device(0) == NULL);
    CHECK_LAST(PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "pt_try_device");
    pt_clear_error();
    CHECK_INT(pt_all_devices(NULL, 0), -1);
    CHECK_LAST(PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "pt_all_devices");
    pt_clear_error();
    CHECK_NOT_NULL(pt_cpu()); /* asking by name still works */
}

/* PORTABLE_BACKEND=cpu:99999999999: well-formed, no such device. */
static void backend_huge_index(void) {
    pt_clear_error();
    CHECK(pt_default_device() == NULL);
    CHECK_LAST(PT_ERR_NO_DEVICE);
    CHECK_HAS(pt_last_error(), "cpu:99999999999");
    pt_clear_error();
}

/* PORTABLE_BACKEND=cpu, PORTABLE_CPU_DEVICES=3 */
static void three_cpus(void) {
    pt_device *cpu = pt_cpu();
    CHECK_NOT_NULL(cpu);
    CHECK_STR(pt_device_name(cpu), "cpu:0");
    CHECK(pt_device_get("cpu") == cpu);
    CHECK(pt_device_get("cpu:0") == cpu);
    pt_device *c1 = pt_device_get("cpu:1"), *c2 = pt_device_get("cpu:2");
    CHECK_NOT_NULL(c1);
    CHECK_NOT_NULL(c2);
    CHECK(c1 != cpu && c2 != c1);
    CHECK_STR(pt_device_name(c2), "cpu:2");
    CHECK(pt_device_get("cpu:2") == c2); /* stable pointers */
    CHECK_INT(pt_device_count("cpu"), 3);
    pt_clear_error();
    CHECK_INT(pt_device_count("nonsense"), 0);
    CHECK_INT(pt_device_count(""), 0);
    CHECK_LAST(PT_OK); /* absence is not an error */
    CHECK(pt_device_count("cuda") >= 0);
    CHECK(pt_device_count("opencl") >= 0);

    expect_no_device("cpu:3");
    expect_no_device_status("cuda:99", pt_device_count("cuda") == 0);
    expect_no_device_status("opencl:99", pt_device_count("opencl") == 0);
    expect_no_device("gpu");
    expect_bad_name("");
    expect_bad_name("cpu:");
    expect_bad_name("cpu:-1");
    expect_bad_name("cpu:abc");
    expect_bad_name("cpu:1x");
    expect_no_device(NULL);

    /* the chosen backend is cpu: pt_try_device(i) is cpu:i, else cpu:0 */
    CHECK(pt_default_device() == cpu);
    CHECK(pt_try_device(0) == cpu);
    CHECK(pt_try_device(1) == c1);
    CHECK(pt_try_device(10) == cpu);
    CHECK(pt_try_device(-1) == cpu);

    pt_device *all[8] = {NULL};
    int n = pt_all_devices(all, 8);
    CHECK(n >= 1 && n <= 3);
    CHECK(all[0] == cpu);
    for (int i = 0; i < n && i < 8; ++i) CHECK(all[i] != NULL && strncmp(pt_device_name(all[i]), "cpu", 3) == 0);
    pt_device *one[1] = {NULL};
    CHECK_INT(pt_all_devices(one, 1), n); /* the count, even past cap */
    CHECK(one[0] == cpu);
    CHECK_INT(pt_all_devices(NULL, 0), n);

    pt_device_props p;
    memset(&p, 0x5a, sizeof p);
    CHECK_OK(pt_device_info(c1, &p));
    CHECK_STR(p.backend, "cpu");
    CHECK(p.type == PT_DEVICE_CPU);
    CHECK(p.compute_units >= 1);
    CHECK(p.memory_total > 0);
    CHECK(p.memory_free == -1 || (p.memory_free > 0 && p.memory_free <= p.memory_total));
    CHECK(p.supports_f64);
    CHECK(memchr(p.name, '\0', sizeof p.name) != NULL && p.name[0] != '\0');
    CHECK(memchr(p.vendor, '\0', sizeof p.vendor) != NULL);
    CHECK(memchr(p.driver_version, '\0', sizeof p.driver_version) != NULL);
    pt_clear_error();
    CHECK(pt_device_info(NULL, &p) != PT_OK);
    CHECK_HAS(pt_last_error(), "pt_device_info");
    pt_clear_error();
    CHECK((pt_device_info)(cpu, NULL) != PT_OK);
    pt_clear_error();
    CHECK_OK(pt_device_synchronize(c2));
    CHECK(pt_device_synchronize(NULL) != PT_OK);
    pt_clear_error();

    /* backends: the plugin files found, each with its file, never dist */
    int ncpu = backend_index("cpu");
    CHECK(ncpu >= 0);
    CHECK(backend_index("dist") < 0);
    CHECK(pt_backend_count() >= 1);
    for (int b = 0; b < pt_backend_count(); ++b) CHECK(pt_backend_path(b)[0] != '\0');
    if (ncpu >= 0) {
        const char *reason = "unset";
        CHECK(pt_backend_available(ncpu, &reason));
        CHECK(pt_backend_available(ncpu, NULL));
        CHECK_HAS(pt_backend_path(ncpu), "libportable-cpu.so");
        CHECK_INT(pt_backend_device_count(ncpu), 3);
        CHECK(pt_backend_device(ncpu, 0) == cpu);
        CHECK(pt_backend_device(ncpu, 2) == c2);
        CHECK(pt_backend_device(ncpu, 3) == NULL);
        CHECK(pt_backend_device(ncpu, -1) == NULL);
    }
    CHECK(pt_backend_name(-1) == NULL || strcmp(pt_backend_name(-1), "") == 0);
    CHECK(pt_backend_name(pt_backend_count()) == NULL || strcmp(pt_backend_name(pt_backend_count()), "") == 0);
    CHECK(!pt_backend_available(pt_backend_count(), NULL));
    for (int i = 0; i < pt_backend_count(); ++i) {
        const char *reason = NULL;
        if (!pt_backend_available(i, &reason)) {
            /* an unavailable backend always says why */
            CHECK(reason != NULL && reason[0] != '\0');
            printf("   (backend %s unavailable: %s)\n", pt_backend_name(i), reason ? reason : "(null)");
        }
    }
    /* tensors live where they were made */
    int64_t s[1] = {3};
    pt_tensor *x = pt_zeros(c2, PT_F32, 1, s);
    CHECK(pt_tensor_device(x) == c2);
    pt_tensor *y = pt_add_scalar(x, 1);
    CHECK(pt_tensor_device(y) == c2);
    pt_release(x);
    pt_release(y);
}

/* PORTABLE_CPU_DEVICES unset: one cpu */
static void one_cpu(void) {
    CHECK_INT(pt_device_count("cpu"), 1);
    CHECK_NOT_NULL(pt_cpu());
    expect_no_device("cpu:1");
    CHECK(pt_try_device(1) == pt_cpu());
}

/* PORTABLE_BACKEND=nonsense: no silent fallback */
static void backend_nonsense(void) {
    pt_clear_error();
    CHECK(pt_default_device() == NULL);
    CHECK(pt_last_status() == PT_ERR_NO_DEVICE || pt_last_status() == PT_ERR_BACKEND_LOAD);
    CHECK_HAS(pt_last_error(), "nonsense");
    CHECK_HAS(pt_last_error(), "PORTABLE_BACKEND");
    pt_clear_error();
    CHECK(pt_all_devices(NULL, 0) == -1);
    CHECK(pt_last_status() != PT_OK);
    /* the cpu itself is still there when asked for by name */
    CHECK_NOT_NULL(pt_cpu());
}

/* PORTABLE_BACKEND=cpu:2 with 3 cpus; cpu:7 is out of range */
static void backend_cpu2(void) {
    pt_device *d = pt_default_device();
    CHECK_NOT_NULL(d);
    CHECK_STR(pt_device_name(d), "cpu:2");
}
static void backend_cpu7(void) {
    pt_clear_error();
    CHECK(pt_default_device() == NULL);
    CHECK(pt_last_status() == PT_ERR_NO_DEVICE);
    CHECK_HAS(pt_last_error(), "cpu:7");
}

/* PORTABLE_BACKEND=auto (the default): something, never NULL with cpu present */
static void backend_auto(void) {
    pt_device *d = pt_default_device();
    CHECK_NOT_NULL(d);
    pt_device *all[4];
    CHECK(pt_all_devices(all, 4) >= 1);
    /* auto: cuda if it has a device, else an OpenCL GPU, else cpu (an OpenCL
     * CPU device such as PoCL's is never picked over the cpu backend) */
    bool opencl_gpu = false;
    for (int i = 0; i < pt_device_count("opencl"); ++i) {
        char name[32];
        snprintf(name, sizeof name, "opencl:%d", i);
        pt_device_props p;
        if (pt_device_info(pt_device_get(name), &p) == PT_OK && p.type == PT_DEVICE_GPU) opencl_gpu = true;
    }
    if (pt_device_count("cuda") > 0) CHECK(d == pt_device_get("cuda:0"));
    else if (opencl_gpu) CHECK(strncmp(pt_device_name(d), "opencl:", 7) == 0);
    else CHECK(d == pt_cpu());
    printf("   auto picked %s\n", pt_device_name(d));
}

/* PORTABLE_CPU_DEVICES=0 or garbage: a clear decision, never a crash */
static void cpu_devices_garbage(void) {
    int n = pt_device_count("cpu");
    CHECK(n >= 0);
    pt_device *d = pt_cpu();
    if (n == 0) {
        CHECK(d == NULL);
        CHECK(pt_last_status() != PT_OK);
        CHECK_HAS(pt_last_error(), "PORTABLE_CPU_DEVICES");
    } else {
        CHECK_NOT_NULL(d);
    }
}

int main(void) {
    const char *env3[] = {"PORTABLE_BACKEND=cpu", "PORTABLE_CPU_DEVICES=3", NULL};
    check_in_child("cpu backend, 3 cpu devices", env3, three_cpus);
    const char *env1[] = {"PORTABLE_BACKEND=cpu", "PORTABLE_CPU_DEVICES=", NULL};
    check_in_child("cpu backend, PORTABLE_CPU_DEVICES unset", env1, one_cpu);
    const char *envn[] = {"PORTABLE_BACKEND=nonsense", NULL};
    check_in_child("PORTABLE_BACKEND=nonsense", envn, backend_nonsense);
    const char *env2[] = {"PORTABLE_BACKEND=cpu:2", "PORTABLE_CPU_DEVICES=3", NULL};
    check_in_child("PORTABLE_BACKEND=cpu:2", env2, backend_cpu2);
    const char *env7[] = {"PORTABLE_BACKEND=cpu:7", "PORTABLE_CPU_DEVICES=3", NULL};
    check_in_child("PORTABLE_BACKEND=cpu:7", env7, backend_cpu7);
    const char *enva[] = {"PORTABLE_BACKEND=", "PORTABLE_CPU_DEVICES=", NULL};
    check_in_child("PORTABLE_BACKEND unset (auto)", enva, backend_auto);
    const char *envs[] = {"PORTABLE_BACKEND=cpu", "PORTABLE_CPU_DEVICES=2", NULL};
    check_in_child("strict device names", envs, strict_names);
    const char *unparseable[] = {"cpu: 1", "cpu:+0", "cpu:00", "cpu:-1", "cpu:1x", " cpu", "cpu:"};
    for (size_t i = 0; i < sizeof unparseable / sizeof *unparseable; ++i) {
        char var[64], label[80];
        snprintf(var, sizeof var, "PORTABLE_BACKEND=%s", unparseable[i]);
        snprintf(label, sizeof label, "PORTABLE_BACKEND='%s'", unparseable[i]);
        const char *envu[] = {var, "PORTABLE_CPU_DEVICES=2", NULL};
        check_in_child(label, envu, backend_unparseable);
    }
    const char *envh[] = {"PORTABLE_BACKEND=cpu:99999999999", "PORTABLE_CPU_DEVICES=2", NULL};
    check_in_child("PORTABLE_BACKEND=cpu:99999999999", envh, backend_huge_index);
    const char *envg[] = {"PORTABLE_BACKEND=cpu", "PORTABLE_CPU_DEVICES=lots", NULL};
    check_in_child("PORTABLE_CPU_DEVICES=lots", envg, cpu_devices_garbage);
    return check_summary();
}
