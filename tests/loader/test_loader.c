/* The plugin loader against fake plugins (tests/loader/fake_plugin.c) in
 * FAKE_PLUGIN_DIR. The loader's contract (docs/plugins.md, DESIGN.md):
 * it looks for libportable-*.so in each PORTABLE_PLUGIN_PATH directory,
 * then next to libportable.so, then in its portable/ subfolder; backend names
 * come from the plugin files found, never from names written in the core; a
 * shared object without the entry symbol (libportable-dist.so) is no
 * backend and is never listed; every
 * failure (dlopen text, missing entry symbol, ABI mismatch, bad table, init
 * failure, zero devices) is recorded as the backend's reason and named in
 * the error a user gets when asking for that backend.
 *
 * The library reads the environment at its first call, so each scenario
 * runs in a fresh child process with its own PORTABLE_* settings. */
#include "../unit/check.h"

static int backend_index(const char *name) {
    for (int i = 0; i < pt_backend_count(); ++i)
        if (pt_backend_name(i) && strcmp(pt_backend_name(i), name) == 0) return i;
    return -1;
}

/* Backend `name` is listed, unavailable, and its reason mentions n1 and n2. */
static void check_rejected(const char *name, const char *n1, const char *n2) {
    int i = backend_index(name);
    char what[256];
    snprintf(what, sizeof what, "backend \"%s\" is listed", name);
    check_report(i >= 0, __FILE__, __LINE__, what);
    if (i < 0) return;
    const char *reason = NULL;
    snprintf(what, sizeof what, "backend \"%s\" is not available", name);
    check_report(!pt_backend_available(i, &reason), __FILE__, __LINE__, what);
    printf("   %s: %s\n", name, reason ? reason : "(no reason)");
    CHECK_HAS(reason, n1);
    if (n2) CHECK_HAS(reason, n2);
    CHECK_HAS(pt_backend_path(i), FAKE_PLUGIN_DIR);
    CHECK_INT(pt_backend_device_count(i), 0);
    CHECK(pt_backend_device(i, 0) == NULL);
    pt_clear_error();
    CHECK_INT(pt_device_count(name), 0);
    CHECK_LAST(PT_OK);
    /* asking for one of its devices names the reason */
    char dev[64];
    snprintf(dev, sizeof dev, "%s:0", name);
    CHECK(pt_device_get(dev) == NULL);
    CHECK(pt_last_status() == PT_ERR_BACKEND_LOAD || pt_last_status() == PT_ERR_NO_DEVICE);
    CHECK_HAS(pt_last_error(), name);
    CHECK_HAS(pt_last_error(), n1);
    pt_clear_error();
    CHECK(pt_device_get(name) == NULL);
    CHECK_HAS(pt_last_error(), n1);
    pt_clear_error();
}

/* PORTABLE_PLUGIN_PATH=/nonexistent:FAKE_PLUGIN_DIR, PORTABLE_BACKEND=cpu */
static void fakes(void) {
    CHECK(backend_index("cpu") >= 0);
    CHECK(backend_index("badabi") >= 0);
    /* a library that is not a plugin, next to libportable.so or here */
    CHECK(backend_index("noentry") < 0);
    CHECK(backend_index("dist") < 0);
    int cpu = backend_index("cpu");
    if (cpu >= 0) {
        CHECK(pt_backend_available(cpu, NULL));
        CHECK_HAS(pt_backend_path(cpu), PT_LIB_DIR "/libportable-cpu.so"); /* found next to libportable.so */
    }
    check_rejected("badabi", "ABI version", "999");
    check_rejected("smallvt", "16", "libportable-smallvt.so");
    check_rejected("nullentry", "pt_backend_entry", "NULL");
    check_rejected("noexec", "execute", NULL);
    check_rejected("initfail", "init", "widget firmware missing");
    check_rejected("nodev", "0 devices", "no widgets attached");
    check_rejected("garbage", "libportable-garbage.so", NULL);
    /* the working backend is unaffected */
    pt_device *d = pt_default_device();
    CHECK_NOT_NULL(d);
    CHECK(d == pt_cpu());
    int64_t n = 3;
    pt_tensor *x = pt_full(d, PT_F32, 1, &n, 2);
    pt_tensor *s = pt_sum(x, PT_ALL, false);
    CHECK_DBL(pt_item(s), 6, 0);
    pt_release(s);
    pt_release(x);
}

/* PORTABLE_BACKEND names a broken plugin: the error carries its reason. */
static void backend_badabi(void) {
    pt_clear_error();
    CHECK(pt_default_device() == NULL);
    CHECK(pt_last_status() == PT_ERR_BACKEND_LOAD || pt_last_status() == PT_ERR_NO_DEVICE);
    CHECK_HAS(pt_last_error(), "badabi");
    CHECK_HAS(pt_last_error(), "ABI version");
    CHECK_NOT_NULL(pt_cpu()); /* no silent fallback, but cpu by name still works */
}

static void backend_initfail(void) {
    pt_clear_error();
    CHECK(pt_default_device() == NULL);
    CHECK_HAS(pt_last_error(), "initfail");
    CHECK_HAS(pt_last_error(), "widget firmware missing");
    CHECK(pt_try_device(0) == NULL || pt_last_status() != PT_OK);
}

/* Every name the registry lists has a plugin file behind it. */
static void check_listed_have_files(void) {
    for (int i = 0; i < pt_backend_count(); ++i) {
        char what[256];
        snprintf(what, sizeof what, "backend %s has a plugin file", pt_backend_name(i));
        check_report(pt_backend_path(i)[0] != '\0', __FILE__, __LINE__, what);
    }
}

/* Asking for an accelerator backend this machine cannot serve. */
static void check_unavailable_backend(const char *name) {
    check_listed_have_files();
    int i = backend_index(name);
    if (i < 0) { /* not built here: the error names the file it looked for */
        printf("   %s has no plugin in this build\n", name);
        pt_clear_error();
        CHECK(pt_default_device() == NULL);
        CHECK_LAST(PT_ERR_NO_DEVICE);
        char file[64];
        snprintf(file, sizeof file, "libportable-%s.so", name);
        CHECK_HAS(pt_last_error(), file);
        CHECK_HAS(pt_last_error(), "known backends: ");
        CHECK(strstr(pt_last_error(), "dist") == NULL);
        return;
    }
    const char *reason = NULL;
    if (pt_backend_available(i, &reason)) {
        printf("   %s is available on this machine: nothing to check\n", name);
        return;
    }
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", reason ? reason : "");
    printf("   %s unavailable: %s\n", name, copy);
    CHECK(copy[0] != '\0');
    pt_clear_error();
    CHECK(pt_default_device() == NULL);
    CHECK(pt_last_status() == PT_ERR_NO_DEVICE || pt_last_status() == PT_ERR_BACKEND_LOAD);
    CHECK_HAS(pt_last_error(), name);
    CHECK_HAS(pt_last_error(), copy); /* the recorded reason, verbatim */
    pt_clear_error();
    CHECK_INT(pt_all_devices(NULL, 0), -1);
    CHECK(pt_last_status() != PT_OK);
}
static void backend_cuda(void) { check_unavailable_backend("cuda"); }
static void backend_opencl(void) { check_unavailable_backend("opencl"); }

/* A backend with no plugin file: the error names the directories searched. */
static void backend_nosuch(void) {
    pt_clear_error();
    CHECK(pt_default_device() == NULL);
    CHECK(pt_last_status() == PT_ERR_NO_DEVICE || pt_last_status() == PT_ERR_BACKEND_LOAD);
    CHECK_HAS(pt_last_error(), "nosuch");
    CHECK_HAS(pt_last_error(), "libportable-nosuch.so");
    CHECK_HAS(pt_last_error(), FAKE_PLUGIN_DIR);
    CHECK_HAS(pt_last_error(), PT_LIB_DIR);
    /* the list is the plugins found, the fakes included, never dist */
    CHECK_HAS(pt_last_error(), "known backends: ");
    CHECK_HAS(pt_last_error(), "cpu");
    CHECK_HAS(pt_last_error(), "badabi");
    CHECK(strstr(pt_last_error(), "noentry") == NULL);
    CHECK(strstr(pt_last_error(), "dist") == NULL);
    pt_clear_error();
    CHECK(pt_device_get("nosuch:0") == NULL);
    CHECK_LAST(PT_ERR_NO_DEVICE);
}

/* No PORTABLE_PLUGIN_PATH at all: plugins are found next to libportable.so. */
static void default_search(void) {
    CHECK_NOT_NULL(pt_cpu());
    int cpu = backend_index("cpu");
    CHECK(cpu >= 0);
    if (cpu >= 0) CHECK_HAS(pt_backend_path(cpu), PT_LIB_DIR);
    CHECK(backend_index("badabi") < 0); /* the fake directory is not searched */
    CHECK(backend_index("dist") < 0);   /* libportable-dist.so sits in lib/ */
    check_listed_have_files();
}

/* A plugin directory listed first wins over the one next to libportable.so:
 * here the fake directory has no cpu plugin, so cpu still comes from lib. */
static void order(void) {
    int cpu = backend_index("cpu");
    CHECK(cpu >= 0);
    if (cpu >= 0) CHECK_HAS(pt_backend_path(cpu), PT_LIB_DIR);
    CHECK(backend_index("nodev") >= 0);
}

/* A plugin's host->log reaches the application's log handler. */
static char plugin_said[1024];
static void capture_plugin_log(pt_log_level level, const char *message, void *user) {
    (void)user;
    if (level == PT_LOG_WARN && strstr(message, "fake nodev"))
        snprintf(plugin_said, sizeof plugin_said, "%s", message);
}
static void plugin_log(void) {
    pt_set_log_handler(capture_plugin_log, NULL);
    CHECK_INT(pt_device_count("nodev"), 0); /* admits it: its init logs */
    CHECK_HAS(plugin_said, "fake nodev: init logs through the host");
}

int main(void) {
    const char *fake_path = "PORTABLE_PLUGIN_PATH=/nonexistent-plugin-dir:" FAKE_PLUGIN_DIR;
    const char *env_fakes[] = {fake_path, "PORTABLE_BACKEND=cpu", "PORTABLE_CPU_DEVICES=", NULL};
    check_in_child("fake plugins", env_fakes, fakes);
    const char *env_badabi[] = {fake_path, "PORTABLE_BACKEND=badabi", NULL};
    check_in_child("PORTABLE_BACKEND=badabi", env_badabi, backend_badabi);
    const char *env_initfail[] = {fake_path, "PORTABLE_BACKEND=initfail", NULL};
    check_in_child("PORTABLE_BACKEND=initfail", env_initfail, backend_initfail);
    const char *env_cuda[] = {fake_path, "PORTABLE_BACKEND=cuda", NULL};
    check_in_child("PORTABLE_BACKEND=cuda", env_cuda, backend_cuda);
    const char *env_ocl[] = {fake_path, "PORTABLE_BACKEND=opencl", "OCL_ICD_VENDORS=/nonexistent-icd-dir", NULL};
    check_in_child("PORTABLE_BACKEND=opencl with no OpenCL platform", env_ocl, backend_opencl);
    const char *env_nosuch[] = {fake_path, "PORTABLE_BACKEND=nosuch", NULL};
    check_in_child("PORTABLE_BACKEND=nosuch", env_nosuch, backend_nosuch);
    const char *env_default[] = {"PORTABLE_PLUGIN_PATH=", "PORTABLE_BACKEND=cpu", NULL};
    check_in_child("no PORTABLE_PLUGIN_PATH", env_default, default_search);
    const char *env_log[] = {fake_path, "PORTABLE_BACKEND=cpu", "PORTABLE_LOG=", NULL};
    check_in_child("a plugin's log goes to the log handler", env_log, plugin_log);
    const char *env_order[] = {"PORTABLE_PLUGIN_PATH=" FAKE_PLUGIN_DIR ":" PT_LIB_DIR, "PORTABLE_BACKEND=cpu", NULL};
    check_in_child("search order", env_order, order);
    return check_summary();
}
