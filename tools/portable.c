/* `portable`: the command-line companion of libportable.
 *
 *   portable devices   every backend with its load status (or why it failed)
 *                      and every device with its properties, like nvidia-smi
 *                      and clinfo together
 *   portable bench     a quick f32 matmul and add on every device, timed
 *                      with a synchronise before reading the clock
 *   portable version   library version (pt_version: the loaded library's)
 *   portable trace summary FILE
 *                      tables from a trace (PORTABLE_TRACE=FILE): top ops by
 *                      device time, waits, copy bandwidth, queue busy/idle
 *
 * Arguments are parsed with getopt_long: -h/--help anywhere, anything
 * unknown is an error with the usage text (exit status 2).
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format_bytes.h" /* core/runtime/format_bytes.c, built into this tool too */
#include "plugin_libraries.h"
#include "trace_summary.h"
#include "portable/portable.h"

static const char *type_name(pt_device_type t) {
    switch (t) {
    case PT_DEVICE_CPU: return "CPU";
    case PT_DEVICE_GPU: return "GPU";
    case PT_DEVICE_ACCELERATOR: return "ACCEL";
    default: return "OTHER";
    }
}

static void print_rule(void) {
    printf("+------------+------------------------------------------+-------+-----+------------+------------+------------+--------------------------+\n");
}

static int list_devices(void) {
    int nb = pt_backend_count();
    printf("libportable %s\n\n", pt_version()->string);
    printf("Backends\n");
    for (int i = 0; i < nb; ++i) {
        const char *reason = NULL;
        bool ok = pt_backend_available(i, &reason);
        const char *path = pt_backend_path(i);
        if (ok) {
            printf("  %-8s ok, %d device%s  (%s)\n", pt_backend_name(i), pt_backend_device_count(i),
                   pt_backend_device_count(i) == 1 ? "" : "s", path);
            if (reason && *reason) printf("  %-8s skipped: %s\n", "", reason);
        } else
            printf("  %-8s unavailable: %s\n", pt_backend_name(i), reason);
    }
    printf("\nDevices\n");
    print_rule();
    printf("| %-10s | %-40s | %-5s | %3s | %-10s | %-10s | %-10s | %-24s |\n", "device", "name",
           "type", "CUs", "mem total", "mem free", "in use", "driver");
    print_rule();
    int shown = 0;
    for (int i = 0; i < nb; ++i) {
        for (int j = 0; j < pt_backend_device_count(i); ++j) {
            pt_device *d = pt_backend_device(i, j);
            pt_device_props p;
            if (pt_device_info(d, &p) != PT_OK) {
                printf("| %-10s | error: %s\n", pt_device_name(d), pt_last_error());
                continue;
            }
            pt_memory_usage m = {0};
            pt_memory_stats(d, &m);
            char total[24], avail[24], used[24];
            /* one decimal: the columns are 10 wide */
            pt__format_bytes(p.memory_total, 1, total, sizeof total);
            pt__format_bytes(p.memory_free, 1, avail, sizeof avail);
            pt__format_bytes(m.reserved, 1, used, sizeof used);
            printf("| %-10s | %-40.40s | %-5s | %3d | %10s | %10s | %10s | %-24.24s |\n",
                   pt_device_name(d), p.name, type_name(p.type), p.compute_units, total, avail, used,
                   p.driver_version);
            if (p.platform[0] || p.vendor[0])
                printf("| %-10s | %-40.40s | %-5s | %3s | %10s | %10s | %10s | %-24.24s |\n", "",
                       p.vendor, p.supports_f64 ? "fp64" : "fp32", "", "", "", "", p.platform);
            ++shown;
        }
    }
    if (!shown) printf("| (no devices)\n");
    print_rule();
    printf("mem total, mem free: as each driver reports them (unknown: the driver has no query\n"
           "for it, e.g. OpenCL without AMD's extension); in use: memory libportable holds\n");
    print_plugin_libraries();
    /* The platform column cuts long strings (the cpu plugin's libraries and
     * the ISA each picked): the whole line is here. */
    bool header = false;
    for (int i = 0; i < nb; ++i)
        for (int j = 0; j < pt_backend_device_count(i); ++j) {
            pt_device_props p;
            if (pt_device_info(pt_backend_device(i, j), &p) != PT_OK || strlen(p.platform) <= 24) continue;
            if (!header) printf("\nPlatforms (the libraries and the ISA each runs)\n");
            header = true;
            printf("  %-10s %s\n", pt_device_name(pt_backend_device(i, j)), p.platform);
        }
    const char *env = getenv("PORTABLE_BACKEND");
    pt_device *def = pt_default_device();
    if (def)
        printf("\nDefault device (PORTABLE_BACKEND=%s): %s\n", env && *env ? env : "auto",
               pt_device_name(def));
    else
        printf("\nDefault device (PORTABLE_BACKEND=%s): none: %s\n", env && *env ? env : "auto",
               pt_last_error());
    return def ? 0 : 1;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds per call of op on d: one warm-up (kernel compilation, caches),
 * then reps calls and a synchronise before the clock is read. */
static double time_op(pt_device *d, pt_tensor *(*op)(pt_tensor *, pt_tensor *), pt_tensor *a,
                      pt_tensor *b, int reps) {
    pt_release(op(a, b));
    if (pt_device_synchronize(d) != PT_OK) return -1;
    double t0 = now();
    for (int i = 0; i < reps; ++i) {
        pt_tensor *c = op(a, b);
        if (!c) return -1;
        pt_release(c);
    }
    if (pt_device_synchronize(d) != PT_OK) return -1;
    return (now() - t0) / reps;
}

static int bench_devices(void) {
    printf("| device     | matmul 1024 f32 (GFLOP/s) | add 16M f32 (GB/s, read+write) |\n");
    printf("|------------|--------------------------:|-------------------------------:|\n");
    int failures = 0;
    for (int i = 0; i < pt_backend_count(); ++i) {
        for (int j = 0; j < pt_backend_device_count(i); ++j) {
            pt_device *d = pt_backend_device(i, j);
            pt_scope s = pt_scope_begin();
            int64_t sq[2] = {1024, 1024}, n = 16 << 20;
            pt_tensor *a = pt_rand(d, PT_F32, 2, sq), *b = pt_rand(d, PT_F32, 2, sq);
            pt_tensor *x = pt_rand(d, PT_F32, 1, &n), *y = pt_rand(d, PT_F32, 1, &n);
            double mm = a && b ? time_op(d, pt_matmul, a, b, 5) : -1;
            double add = x && y ? time_op(d, pt_add, x, y, 5) : -1;
            pt_scope_end(s);
            if (mm < 0 || add < 0) {
                printf("| %-10s | error: %s\n", pt_device_name(d), pt_last_error());
                ++failures;
                continue;
            }
            printf("| %-10s | %25.1f | %30.1f |\n", pt_device_name(d), 2.0 * 1024 * 1024 * 1024 / mm * 1e-9,
                   3.0 * 4 * (double)n / add * 1e-9);
        }
    }
    return failures ? 1 : 0;
}

static void usage(FILE *f) {
    fprintf(f, "usage: portable [-h|--help] [-V|--version] [<command>]\n"
               "  devices   list backends (with why one is missing) and devices (the default)\n"
               "  bench     time a matmul and an add on every device\n"
               "  version   print the library's version (of the loaded libportable.so)\n"
               "  trace summary FILE   tables from a trace written with PORTABLE_TRACE=FILE\n"
               "Each command takes -h/--help. Environment: PORTABLE_BACKEND picks the default\n"
               "device (auto, cpu, cuda, opencl, optionally :N), PORTABLE_PLUGIN_PATH adds plugin\n"
               "folders (searched before <folder of libportable.so> and its portable/ subfolder),\n"
               "PORTABLE_LOG=debug shows the plugins' diagnostics.\n");
}

static int print_version(void) {
    const pt_version_info *v = pt_version();
    printf("libportable %s", v->string);
    if (v->number != PT_VERSION_NUMBER) printf(" (this tool was built with %s)", PT_VERSION_STRING);
    printf("\n");
    return 0;
}

/* A command's own arguments: only -h/--help; anything else is an error. */
static int command_args(const char *command, int argc, char **argv, bool *help) {
    static const struct option options[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    *help = false;
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        if (opt == 'h') *help = true;
        else {
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "portable %s: unexpected argument '%s'\n", command, argv[optind]);
        usage(stderr);
        return 2;
    }
    return 0;
}

int main(int argc, char **argv) {
    static const struct option options[] = {{"help", no_argument, NULL, 'h'},
                                            {"version", no_argument, NULL, 'V'},
                                            {NULL, 0, NULL, 0}};
    int opt;
    /* "+": options before the command only; the command parses its own */
    while ((opt = getopt_long(argc, argv, "+hV", options, NULL)) != -1) {
        if (opt == 'h') {
            usage(stdout);
            return 0;
        }
        if (opt == 'V') return print_version();
        usage(stderr);
        return 2;
    }
    const char *command = optind < argc ? argv[optind] : "devices";
    int sub_argc = optind < argc ? argc - optind : 1;
    char **sub_argv = optind < argc ? argv + optind : argv;
    if (strcmp(command, "trace") == 0) {
        if (sub_argc == 3 && strcmp(sub_argv[1], "summary") == 0)
            return pt_tool_trace_summary(sub_argv[2], stdout);
        fprintf(stderr, "portable trace: expected 'portable trace summary FILE'\n");
        usage(stderr);
        return 2;
    }
    int (*run)(void) = NULL;
    if (strcmp(command, "devices") == 0) run = list_devices;
    else if (strcmp(command, "bench") == 0) run = bench_devices;
    else if (strcmp(command, "version") == 0) run = print_version;
    else {
        fprintf(stderr, "portable: unknown command '%s'\n", command);
        usage(stderr);
        return 2;
    }
    bool help = false;
    int bad = command_args(command, sub_argc, sub_argv, &help);
    if (bad) return bad;
    if (help) {
        usage(stdout);
        return 0;
    }
    return run();
}
