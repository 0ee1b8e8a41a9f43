/* Where plugins are looked for and when they are opened (docs/plugins.md):
 *
 *  - every search folder is an absolute path fixed when libportable.so was
 *    loaded: a libportable found through a relative LD_LIBRARY_PATH never
 *    makes the loader look relative to a later working directory (a planted
 *    lib/libportable-cpu.so there must never run its constructor);
 *  - a backend's plugin is opened when that backend is first asked for:
 *    PORTABLE_BACKEND=cpu never opens or maps the OpenCL or CUDA plugin;
 *    enumeration (pt_backend_available & co., `portable devices`) opens all;
 *  - only regular files are opened: a FIFO or a folder named like a plugin is
 *    listed with a reason and never blocks the process;
 *  - several threads asking for different backends at once all get the same
 *    devices.
 *
 * Each scenario runs in a child process with its own environment; the ones
 * that could hang on a regression run under alarm() so that CI fails
 * instead of waiting for ever. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include "../unit/check.h"

#define HANG_LIMIT_S 30 /* a scenario that blocks this long has hung */

static int backend_index(const char *name) {
    for (int i = 0; i < pt_backend_count(); ++i)
        if (pt_backend_name(i) && strcmp(pt_backend_name(i), name) == 0) return i;
    return -1;
}

/* Whether /proc/self/maps has a mapping whose file name contains part. */
static bool mapped(const char *part) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return false;
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, part) != NULL;
    fclose(f);
    return found;
}

#define CHECK_MAPPED(part, want)                                                                   \
    do {                                                                                           \
        char w_[256];                                                                              \
        snprintf(w_, sizeof w_, "%s is %s in /proc/self/maps", part, (want) ? "mapped" : "not mapped"); \
        check_report(mapped(part) == (want), __FILE__, __LINE__, w_);                              \
    } while (0)

static bool regular_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* ---- PORTABLE_BACKEND=cpu opens only the cpu plugin ---- */

/* One training step of a small net on the default device (the cpu). */
static void train_one_step(pt_device *d) {
    int64_t xs[2] = {8, 4}, ys[2] = {8, 2};
    pt_tensor *x = pt_rand(d, PT_F32, 2, xs);
    pt_tensor *y = pt_rand(d, PT_F32, 2, ys);
    pt_module *layers[3] = {pt_linear(16), pt_relu_module(), pt_linear(2)};
    pt_module *net = pt_sequential(3, layers);
    REQUIRE(x);
    REQUIRE(y);
    REQUIRE(net);
    pt_tensor *pred = pt_module_forward(net, x);
    REQUIRE(pred);
    pt_optimizer *opt = pt_sgd(net, 0.1, 0.9, 0);
    REQUIRE(opt);
    pt_tensor *loss = pt_mse_loss(pred, y);
    REQUIRE(loss);
    CHECK_OK(pt_backward(loss));
    CHECK_OK(pt_optimizer_step(opt));
    CHECK(isfinite(pt_item(loss)));
    pt_release(loss);
    pt_release(pred);
    pt_optimizer_free(opt);
    pt_module_free(net);
    pt_release(y);
    pt_release(x);
}

static void cpu_only(void) {
    pt_device *d = pt_default_device();
    REQUIRE(d);
    CHECK(d == pt_cpu());
    CHECK(pt_device_get("cpu:0") == d);
    CHECK_INT(pt_device_count("cpu"), 1);
    train_one_step(d);
    CHECK_MAPPED("libportable-cpu.so", true);
    /* Nothing else was asked for, so nothing else is open. */
    CHECK_MAPPED("libportable-opencl.so", false);
    CHECK_MAPPED("libportable-cuda.so", false);
    /* Debian's oneDNN, which the cpu plugin may link, links the OpenCL ICD
     * loader for its GPU engine: then the loader is mapped, but no OpenCL
     * implementation (PoCL below) may be, since nothing asks for platforms. */
    if (!mapped("libdnnl")) CHECK_MAPPED("libOpenCL", false);
    CHECK_MAPPED("libpocl", false);
    CHECK_MAPPED("libcuda", false);
    CHECK_MAPPED("libportable-nodev.so", false); /* a fake in PORTABLE_PLUGIN_PATH */
    CHECK_MAPPED("libportable-initfail.so", false);
    /* Listing names opens nothing either. */
    CHECK(backend_index("nodev") >= 0);
    CHECK_MAPPED("libportable-opencl.so", false);
    CHECK_MAPPED("libportable-nodev.so", false);
    /* Enumeration opens every plugin, so the maps check above can see one. */
    int nodev = backend_index("nodev");
    const char *reason = NULL;
    CHECK(nodev >= 0 && !pt_backend_available(nodev, &reason));
    CHECK_HAS(reason, "no widgets attached");
    CHECK_MAPPED("libportable-nodev.so", true);
    if (regular_file(PT_LIB_DIR "/libportable-opencl.so")) {
        int ocl = backend_index("opencl");
        (void)pt_backend_available(ocl, NULL);
        CHECK_MAPPED("libportable-opencl.so", true);
    }
}

/* auto ranks the plugins it finds by the auto_priority each one reports
 * (opening them, nothing started) and picks the first with a device it may
 * use (cuda on a GPU machine, cpu here), so the plugin checked is the chosen
 * device's. A plugin the loader refuses (bad ABI) is closed again, and the
 * fakes, which report no priority, are never chosen. */
static void auto_choice(void) {
    pt_device *d = pt_default_device();
    CHECK_NOT_NULL(d);
    if (!d) return;
    const char *name = pt_device_name(d);
    char plugin[64];
    snprintf(plugin, sizeof plugin, "libportable-%.*s.so", (int)strcspn(name, ":"), name);
    CHECK_MAPPED(plugin, true);
    CHECK(strncmp(name, "nodev", 5) != 0 && strncmp(name, "initfail", 8) != 0);
    CHECK_MAPPED("libportable-badabi.so", false);
}

/* Asking for one broken backend by name opens that one only, and its
 * reason is the admission step that failed. */
static void one_by_name(void) {
    pt_clear_error();
    CHECK(pt_device_get("initfail:0") == NULL);
    CHECK_HAS(pt_last_error(), "widget firmware missing");
    CHECK_MAPPED("libportable-initfail.so", true);
    CHECK_MAPPED("libportable-cpu.so", false);
    CHECK_MAPPED("libportable-opencl.so", false);
    CHECK_MAPPED("libportable-nodev.so", false);
    /* cuda, never loaded, still says why it is missing once asked: as a
     * listed plugin that cannot start, or as a file that is not there */
    int cuda = backend_index("cuda");
    const char *reason = NULL;
    if (cuda >= 0 && !pt_backend_available(cuda, &reason)) CHECK(reason && reason[0]);
    if (cuda < 0) {
        CHECK(pt_device_get("cuda:0") == NULL);
        CHECK_HAS(pt_last_error(), "no plugin libportable-cuda.so");
        pt_clear_error();
    }
}

/* ---- Only regular files are opened ---- */

static char fifo_dir[256];

static void fifo_plugins(void) {
    alarm(HANG_LIMIT_S); /* a regression dies of SIGALRM instead of hanging */
    pt_device *cpu = pt_cpu();
    CHECK_NOT_NULL(cpu);
    int i = backend_index("cpu");
    CHECK(i >= 0);
    if (i >= 0) CHECK_STR(pt_backend_path(i), PT_LIB_DIR "/libportable-cpu.so");
    /* Enumeration, which opens everything, does not open the FIFOs either. */
    for (int b = 0; b < pt_backend_count(); ++b) (void)pt_backend_available(b, NULL);
    int evil = backend_index("evil");
    CHECK(evil >= 0);
    if (evil >= 0) {
        const char *reason = NULL;
        CHECK(!pt_backend_available(evil, &reason));
        printf("   evil: %s\n", reason ? reason : "(null)");
        CHECK_HAS(reason, "not a regular file");
        CHECK_HAS(reason, fifo_dir);
        pt_clear_error();
        CHECK(pt_device_get("evil") == NULL);
        CHECK_HAS(pt_last_error(), "not a regular file");
    }
    int folder = backend_index("folder");
    const char *reason = NULL;
    CHECK(folder >= 0 && !pt_backend_available(folder, &reason));
    CHECK_HAS(reason, "not a regular file");
    alarm(0);
}

/* ---- Search folders are absolute ---- */

/* Child of the relative-LD_LIBRARY_PATH scenario, exec'ed with cwd = the
 * build directory and LD_LIBRARY_PATH=lib: it changes into a folder with a
 * planted lib/libportable-cpu.so, then makes its first library call. */
static int relative_child(void) {
    Dl_info info;
    if (!dladdr((void *)&pt_cpu, &info) || !info.dli_fname || info.dli_fname[0] == '/') {
        printf("FAILED: libportable was not found through the relative LD_LIBRARY_PATH "
               "(dladdr says %s): the scenario is not set up\n",
               info.dli_fname ? info.dli_fname : "(null)");
        return 1;
    }
    printf("   libportable loaded as %s\n", info.dli_fname);
    if (chdir(PLANTED_DIR) != 0) {
        printf("FAILED: chdir(%s): %s\n", PLANTED_DIR, strerror(errno));
        return 1;
    }
    pt_device *cpu = pt_cpu();
    int i = backend_index("cpu");
    const char *path = i >= 0 ? pt_backend_path(i) : "(not listed)";
    printf("   cpu plugin: %s\n", path);
    if (!cpu || strcmp(path, PT_LIB_DIR "/libportable-cpu.so") != 0) {
        printf("FAILED: pt_cpu() %s, cpu plugin %s, expected %s/libportable-cpu.so (%s)\n",
               cpu ? "worked" : "failed", path, PT_LIB_DIR, pt_last_error());
        return 1;
    }
    for (int b = 0; b < pt_backend_count(); ++b) {
        const char *p = pt_backend_path(b);
        if (p[0] && p[0] != '/') {
            printf("FAILED: backend %s has a relative path %s\n", pt_backend_name(b), p);
            return 1;
        }
    }
    return 0;
}

static void relative_library_path(void) {
    char dir[] = "/tmp/pt-planted-XXXXXX";
    if (!mkdtemp(dir)) {
        check_report(0, __FILE__, __LINE__, "mkdtemp");
        return;
    }
    char marker[300];
    snprintf(marker, sizeof marker, "%s/constructor-ran", dir);
    CHECK(regular_file(PLANTED_DIR "/lib/libportable-cpu.so"));
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (chdir(PT_BUILD_DIR) != 0) _exit(4);
        setenv("LD_LIBRARY_PATH", "lib", 1);
        setenv("PT_PLANTED_MARKER", marker, 1);
        setenv("PORTABLE_BACKEND", "cpu", 1);
        unsetenv("PORTABLE_PLUGIN_PATH");
        alarm(HANG_LIMIT_S);
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) _exit(5);
        self[n] = '\0';
        execl(self, self, "--relative-child", (char *)NULL);
        _exit(6);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    char w[128];
    snprintf(w, sizeof w, "relative-LD_LIBRARY_PATH child exited cleanly (status 0x%x)", status);
    check_report(WIFEXITED(status) && WEXITSTATUS(status) == 0, __FILE__, __LINE__, w);
    struct stat st;
    bool ran = stat(marker, &st) == 0;
    check_report(!ran, __FILE__, __LINE__,
                 "the planted lib/libportable-cpu.so under the working directory was never opened "
                 "(its constructor's marker file is absent)");
    unlink(marker);
    rmdir(dir);
}

/* ---- Several threads asking for different backends at once ---- */

#define N_THREADS 8
static pt_device *got[N_THREADS];
static int reasons_ok[N_THREADS];
static pthread_barrier_t start;

static void *ask(void *arg) {
    int k = (int)(intptr_t)arg;
    pthread_barrier_wait(&start);
    switch (k % 4) {
    case 0: got[k] = pt_cpu(); break;
    case 1: got[k] = pt_device_get("cpu:0"); break;
    case 2: {
        const char *reason = NULL;
        int i = backend_index("initfail");
        reasons_ok[k] = i >= 0 && !pt_backend_available(i, &reason) && reason &&
                        strstr(reason, "widget firmware missing") != NULL;
        got[k] = pt_default_device();
        break;
    }
    default:
        reasons_ok[k] = pt_device_get("nodev:0") == NULL &&
                        strstr(pt_last_error(), "no widgets attached") != NULL;
        (void)pt_device_get("opencl:0");
        got[k] = pt_cpu();
        break;
    }
    return NULL;
}

static void racing_threads(void) {
    alarm(HANG_LIMIT_S);
    pthread_t t[N_THREADS];
    pthread_barrier_init(&start, NULL, N_THREADS);
    for (int k = 0; k < N_THREADS; ++k) pthread_create(&t[k], NULL, ask, (void *)(intptr_t)k);
    for (int k = 0; k < N_THREADS; ++k) pthread_join(t[k], NULL);
    pthread_barrier_destroy(&start);
    pt_device *cpu = pt_cpu();
    CHECK_NOT_NULL(cpu);
    for (int k = 0; k < N_THREADS; ++k) {
        CHECK(got[k] == cpu);
        if (k % 4 >= 2) CHECK(reasons_ok[k]);
    }
    alarm(0);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--relative-child") == 0) return relative_child();

    /* PT_TEST_PLUGINS_FIRST: a folder searched before the fakes, e.g. the
     * CUDA simulator's, so the scenarios also run where cuda has a device. */
    char fakes_first[1024];
    const char *first = getenv("PT_TEST_PLUGINS_FIRST");
    snprintf(fakes_first, sizeof fakes_first, "PORTABLE_PLUGIN_PATH=%s%s" FAKE_PLUGIN_DIR,
             first ? first : "", first ? ":" : "");
    const char *fakes = fakes_first;
    const char *env_cpu[] = {fakes, "PORTABLE_BACKEND=cpu", NULL};
    check_in_child("PORTABLE_BACKEND=cpu opens only the cpu plugin", env_cpu, cpu_only);
    const char *env_auto[] = {fakes, "PORTABLE_BACKEND=auto", NULL};
    check_in_child("PORTABLE_BACKEND=auto opens no unknown plugin", env_auto, auto_choice);
    const char *env_one[] = {fakes, "PORTABLE_BACKEND=cpu", NULL};
    check_in_child("asking for one backend opens that one", env_one, one_by_name);

    snprintf(fifo_dir, sizeof fifo_dir, "/tmp/pt-fifo-XXXXXX");
    if (mkdtemp(fifo_dir)) {
        char p[512], env_path[600];
        const char *names[] = {"libportable-evil.so", "libportable-cpu.so"};
        for (size_t i = 0; i < 2; ++i) {
            snprintf(p, sizeof p, "%s/%s", fifo_dir, names[i]);
            CHECK(mkfifo(p, 0600) == 0);
        }
        snprintf(p, sizeof p, "%s/libportable-folder.so", fifo_dir);
        CHECK(mkdir(p, 0700) == 0);
        snprintf(env_path, sizeof env_path, "PORTABLE_PLUGIN_PATH=%s", fifo_dir);
        const char *env_fifo[] = {env_path, "PORTABLE_BACKEND=cpu", NULL};
        check_in_child("FIFOs and folders named like plugins", env_fifo, fifo_plugins);
        rmdir(p);
        for (size_t i = 0; i < 2; ++i) {
            snprintf(p, sizeof p, "%s/%s", fifo_dir, names[i]);
            unlink(p);
        }
        rmdir(fifo_dir);
    } else {
        check_report(0, __FILE__, __LINE__, "mkdtemp for the FIFO scenario");
    }

    printf("-- relative LD_LIBRARY_PATH, planted plugin under the working directory\n");
    relative_library_path();

    const char *env_threads[] = {fakes, "PORTABLE_BACKEND=cpu", NULL};
    check_in_child("threads asking for different backends at once", env_threads, racing_threads);
    return check_summary();
}
