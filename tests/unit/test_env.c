/* Settings from the environment (portable/env.h) and the log handler
 * (portable/log.h): every bad value is a warning that names the variable,
 * the value and what is accepted, delivered to the application's handler
 * (or stderr), and the default is used instead. The library reads each
 * variable once, so each setting runs in a child process of its own. */
#include <fcntl.h>

#include "check.h"

/* What the handler received, one message after another. */
static char seen[8192];
static int seen_count;
static pt_log_level last_level;
static void *seen_user;

/* The cpu plugin's note on a CPU whose model OpenBLAS does not know comes
 * and goes with the machine, not with the settings under test: left out. */
static void capture(pt_log_level level, const char *message, void *user) {
    if (strncmp(message, "cpu: OpenBLAS runs its", 22) == 0) return;
    size_t used = strlen(seen);
    snprintf(seen + used, sizeof seen - used, "%s\n", message);
    ++seen_count;
    last_level = level;
    seen_user = user;
}

static int cookie;

static void start_capture(void) {
    seen[0] = '\0';
    seen_count = 0;
    seen_user = NULL;
    pt_set_log_handler(capture, &cookie);
}

/* The warning for name=value, with the accepted values and the default. */
static void check_warned(const char *name_value, const char *accepted, const char *used) {
    printf("   handler got: %s", seen);
    CHECK_HAS(seen, name_value);
    CHECK_HAS(seen, accepted);
    CHECK_HAS(seen, used);
    CHECK(last_level == PT_LOG_WARN);
    CHECK(seen_user == &cookie);
}

static void bad_log_level(void) {
    start_capture();
    CHECK_NOT_NULL(pt_cpu());
    check_warned("PORTABLE_LOG='bogus'", "accepted: debug, info, warn, off", "using warn");
}

static void bad_gc_ratio(void) {
    start_capture();
    int64_t n = 1000;
    pt_tensor *x = pt_zeros(pt_cpu(), PT_F32, 1, &n); /* the allocator reads it */
    CHECK_NOT_NULL(x);
    pt_release(x);
    check_warned("PORTABLE_ALLOC_GC='abc'", "not a finite number", "accepted: 0 or a number >= 1;");
    CHECK_HAS(seen, "using 1.5");
}

/* Read by the cpu plugin through the host API. */
static void too_many_cpu_devices(void) {
    start_capture();
    CHECK_INT(pt_device_count("cpu"), 1);
    CHECK_INT(pt_device_count("cpu"), 1);
    check_warned("PORTABLE_CPU_DEVICES='100000'", "an integer from 1 to 64", "using 1");
    CHECK_INT(seen_count, 1); /* read once, reported once */
}

static void bad_vecmath(void) {
    start_capture();
    int64_t n = 8;
    pt_tensor *x = pt_ones(pt_cpu(), PT_F32, 1, &n), *y = pt_exp(x), *s = pt_sum(y, PT_ALL, false);
    CHECK_DBL(pt_item(s), 8 * exp(1.0), 1e-4);
    pt_release(s);
    pt_release(y);
    pt_release(x);
    check_warned("PORTABLE_CPU_VECMATH='avx9'", "scalar, sse2, avx2, avx512f", "using");
}

static void bad_plugin_path(void) {
    start_capture();
    CHECK_NOT_NULL(pt_cpu()); /* the good entry still works */
    check_warned("PORTABLE_PLUGIN_PATH entry '/nonexistent-plugin-dir'", "existing folders", "skipped");
}

/* Good values are taken without a word. */
static void good_values(void) {
    start_capture();
    CHECK_INT(pt_device_count("cpu"), 3);
    int64_t n = 4;
    pt_tensor *x = pt_ones(pt_cpu(), PT_F32, 1, &n);
    pt_release(x);
    CHECK_INT(seen_count, 0);
    CHECK_INT((int)strlen(seen), 0);
}

/* The helpers themselves, in this process. */
static void helpers(void) {
    start_capture();
    setenv("PT_TEST_INT", "12", 1);
    CHECK_INT(pt_env_int("PT_TEST_INT", 0, 100, 5), 12);
    setenv("PT_TEST_INT", "-3", 1);
    CHECK_INT(pt_env_int("PT_TEST_INT", -5, 5, 0), -3);
    setenv("PT_TEST_INT", "", 1);
    CHECK_INT(pt_env_int("PT_TEST_INT", 0, 100, 5), 5); /* empty: the default, quietly */
    unsetenv("PT_TEST_INT");
    CHECK_INT(pt_env_int("PT_TEST_INT", 0, 100, 5), 5);
    CHECK_INT(seen_count, 0);
    setenv("PT_TEST_INT", "12x", 1);
    CHECK_INT(pt_env_int("PT_TEST_INT", 0, 100, 5), 5);
    CHECK_HAS(seen, "PT_TEST_INT='12x' is not an integer; accepted: an integer from 0 to 100; using 5");
    setenv("PT_TEST_INT", "99999999999999999999", 1);
    CHECK_INT(pt_env_int("PT_TEST_INT", 0, 100, 5), 5);
    CHECK_HAS(seen, "PT_TEST_INT='99999999999999999999' is not an integer");
    setenv("PT_TEST_INT", "101", 1);
    CHECK_INT(pt_env_int("PT_TEST_INT", 0, 100, 5), 5);
    CHECK_HAS(seen, "PT_TEST_INT='101' is out of range");
    CHECK_INT(seen_count, 3);

    setenv("PT_TEST_NUM", "2.5", 1);
    CHECK_DBL(pt_env_double("PT_TEST_NUM", 1, 10, 0, 3), 2.5, 0);
    setenv("PT_TEST_NUM", "0", 1);
    CHECK_DBL(pt_env_double("PT_TEST_NUM", 1, 10, 1, 3), 0, 0);
    CHECK_DBL(pt_env_double("PT_TEST_NUM", 1, 10, 0, 3), 3, 0);
    CHECK_HAS(seen, "PT_TEST_NUM='0' is out of range; accepted: a number from 1 to 10; using 3");
    setenv("PT_TEST_NUM", "nan", 1);
    CHECK_DBL(pt_env_double("PT_TEST_NUM", 1, 10, 0, 3), 3, 0);
    CHECK_HAS(seen, "PT_TEST_NUM='nan' is not a finite number");

    static const char *const colours[] = {"red", "green", NULL};
    setenv("PT_TEST_CHOICE", "green", 1);
    CHECK_INT(pt_env_choice("PT_TEST_CHOICE", colours, 0), 1);
    setenv("PT_TEST_CHOICE", "Green", 1); /* exact spelling only */
    CHECK_INT(pt_env_choice("PT_TEST_CHOICE", colours, 0), 0);
    CHECK_HAS(seen, "PT_TEST_CHOICE='Green' is not understood; accepted: red, green; using red");
    int before = seen_count;
    CHECK_INT(pt_env_choice(NULL, colours, 1), 1);
    CHECK_INT(pt_env_choice("PT_TEST_CHOICE", NULL, 1), 1);
    CHECK_INT(pt_env_int(NULL, 0, 1, 1), 1);
    CHECK_INT(pt_env_int("PT_TEST_INT", 5, 1, 7), 7); /* lo > hi */
    CHECK_INT(seen_count, before);

    /* pt_log_message: through the handler, PORTABLE_LOG's threshold applies
     * (warn by default: info is dropped). */
    pt_log_message(PT_LOG_WARN, "application says %d", 42);
    CHECK_HAS(seen, "application says 42\n");
    before = seen_count;
    pt_log_message(PT_LOG_INFO, "too chatty");
    pt_log_message((pt_log_level)7, "outside the enum");
    pt_log_message(PT_LOG_WARN, NULL);
    CHECK_INT(seen_count, before);

    /* NULL hands the messages back to stderr */
    pt_set_log_handler(NULL, NULL);
    char path[] = "/tmp/pt_test_env_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        CHECK(fd >= 0);
        return;
    }
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    pt_log_message(PT_LOG_WARN, "to stderr %s", "now");
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    char text[256] = "";
    ssize_t got = pread(fd, text, sizeof text - 1, 0);
    close(fd);
    unlink(path);
    text[got > 0 ? got : 0] = '\0';
    CHECK_HAS(text, "portable [warn]: to stderr now\n");
    CHECK_INT(seen_count, before);
}

/* PORTABLE_LOG=debug lets info through to the handler. */
static void debug_level(void) {
    start_capture();
    pt_log_message(PT_LOG_INFO, "info shown");
    pt_log_message(PT_LOG_DEBUG, "debug shown");
    CHECK_HAS(seen, "info shown\ndebug shown\n");
    CHECK(last_level == PT_LOG_DEBUG);
}

static void off_level(void) {
    start_capture();
    pt_log_message(PT_LOG_WARN, "not shown");
    CHECK_INT(seen_count, 0);
}

int main(void) {
    char plugin_path[1200];
    const char *dir = getenv("PORTABLE_PLUGIN_PATH");
    snprintf(plugin_path, sizeof plugin_path, "PORTABLE_PLUGIN_PATH=/nonexistent-plugin-dir:%s",
             dir ? dir : "");
    static const char *const good[] = {"PORTABLE_CPU_DEVICES=3", "PORTABLE_ALLOC_GC=2",
                                       "PORTABLE_LOG=warn", "PORTABLE_CPU_VECMATH=sse2", NULL};
    const struct {
        const char *label, *env[5];
        void (*fn)(void);
    } scenarios[] = {
        {"PORTABLE_LOG=bogus", {"PORTABLE_LOG=bogus"}, bad_log_level},
        {"PORTABLE_ALLOC_GC=abc", {"PORTABLE_ALLOC_GC=abc"}, bad_gc_ratio},
        {"PORTABLE_CPU_DEVICES=100000", {"PORTABLE_CPU_DEVICES=100000"}, too_many_cpu_devices},
        {"PORTABLE_CPU_VECMATH=avx9", {"PORTABLE_CPU_VECMATH=avx9"}, bad_vecmath},
        {"PORTABLE_PLUGIN_PATH with a missing folder", {plugin_path}, bad_plugin_path},
        {"good values", {good[0], good[1], good[2], good[3]}, good_values},
        {"the helpers and the handler", {"PORTABLE_LOG="}, helpers},
        {"PORTABLE_LOG=debug", {"PORTABLE_LOG=debug"}, debug_level},
        {"PORTABLE_LOG=off", {"PORTABLE_LOG=off"}, off_level},
    };
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; ++i)
        check_in_child(scenarios[i].label, scenarios[i].env, scenarios[i].fn);
    return check_summary();
}
