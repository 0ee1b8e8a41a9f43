/* `portable`: the command-line companion of libportable.
 *
 *   portable devices   every backend with its load status (or why it failed)
 *                      and every device with its properties, like nvidia-smi
 *                      and clinfo together (--json: the same as JSON)
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

#include <cjson/cJSON.h>

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

static const char *yes_no(bool b) { return b ? "yes" : "no"; }

/* The details clinfo and nvidia-smi show, one "key: value" line each, for
 * what the backend reports (empty strings and zero limits are left out). */
static void print_details(const pt_device_props *p) {
    char b[24];
    if (p->platform[0]) printf("|   platform:        %s\n", p->platform);
    if (p->vendor[0]) printf("|   vendor:          %s\n", p->vendor);
    if (p->device_version[0]) printf("|   version:         %s\n", p->device_version);
    if (p->c_version[0]) printf("|   C version:       %s\n", p->c_version);
    if (p->compute_capability_major)
        printf("|   compute cap.:    %d.%d\n", p->compute_capability_major, p->compute_capability_minor);
    if (p->uuid[0]) printf("|   UUID:            %s\n", p->uuid);
    if (p->pci_bus_id[0]) printf("|   PCI bus id:      %s\n", p->pci_bus_id);
    if (p->max_alloc > 0) {
        pt__format_bytes(p->max_alloc, 1, b, sizeof b);
        printf("|   max allocation:  %s\n", b);
    }
    if (p->local_memory > 0) {
        pt__format_bytes(p->local_memory, 1, b, sizeof b);
        printf("|   local memory:    %s\n", b);
    }
    if (p->max_work_group > 0) printf("|   max work-group:  %lld\n", (long long)p->max_work_group);
    pt__format_bytes(p->memory_process, 1, b, sizeof b);
    printf("|   held by process: %s\n", b);
    printf("|   fp16: %s, fp64: %s\n", yes_no(p->supports_f16), yes_no(p->supports_f64));
    if (p->extensions[0]) { /* single-spaced: drivers pad the list */
        char list[sizeof p->extensions];
        snprintf(list, sizeof list, "%s", p->extensions);
        printf("|   extensions:     ");
        for (char *save = NULL, *e = strtok_r(list, " ", &save); e; e = strtok_r(NULL, " ", &save))
            printf(" %s", e);
        printf("\n");
    }
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
            print_details(&p);
            ++shown;
        }
    }
    if (!shown) printf("| (no devices)\n");
    print_rule();
    printf("mem total, mem free: as each driver reports them (unknown: the driver has no query\n"
           "for it, e.g. OpenCL without AMD's extension); in use: memory libportable holds\n");
    print_plugin_libraries();
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

/* The same as JSON (cJSON): {"version", "backends": [{name, available,
 * reason, path, devices: [{...every pt_device_props member...}]}],
 * "default_device", "default_device_error"}. Sizes are bytes, -1 unknown. */
static cJSON *device_json(pt_device *d) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "device", pt_device_name(d));
    pt_device_props p;
    if (pt_device_info(d, &p) != PT_OK) {
        cJSON_AddStringToObject(o, "error", pt_last_error());
        return o;
    }
    pt_memory_usage m = {0};
    pt_memory_stats(d, &m);
    cJSON_AddStringToObject(o, "name", p.name);
    cJSON_AddStringToObject(o, "backend", p.backend);
    cJSON_AddStringToObject(o, "type", type_name(p.type));
    cJSON_AddStringToObject(o, "vendor", p.vendor);
    cJSON_AddStringToObject(o, "platform", p.platform);
    cJSON_AddStringToObject(o, "driver_version", p.driver_version);
    cJSON_AddStringToObject(o, "device_version", p.device_version);
    cJSON_AddStringToObject(o, "c_version", p.c_version);
    cJSON_AddNumberToObject(o, "compute_units", p.compute_units);
    cJSON_AddNumberToObject(o, "memory_total", (double)p.memory_total);
    cJSON_AddNumberToObject(o, "memory_free", (double)p.memory_free);
    cJSON_AddNumberToObject(o, "memory_process", (double)p.memory_process);
    cJSON_AddNumberToObject(o, "memory_in_use", (double)m.in_use);
    cJSON_AddNumberToObject(o, "memory_cached", (double)m.cached);
    cJSON_AddNumberToObject(o, "max_alloc", (double)p.max_alloc);
    cJSON_AddNumberToObject(o, "local_memory", (double)p.local_memory);
    cJSON_AddNumberToObject(o, "max_work_group", (double)p.max_work_group);
    cJSON_AddBoolToObject(o, "fp16", p.supports_f16);
    cJSON_AddBoolToObject(o, "fp64", p.supports_f64);
    if (p.compute_capability_major) {
        char cc[16];
        snprintf(cc, sizeof cc, "%d.%d", p.compute_capability_major, p.compute_capability_minor);
        cJSON_AddStringToObject(o, "compute_capability", cc);
    } else {
        cJSON_AddNullToObject(o, "compute_capability");
    }
    cJSON_AddStringToObject(o, "uuid", p.uuid);
    cJSON_AddStringToObject(o, "pci_bus_id", p.pci_bus_id);
    cJSON *ext = cJSON_AddArrayToObject(o, "extensions");
    char list[sizeof p.extensions];
    snprintf(list, sizeof list, "%s", p.extensions);
    for (char *save = NULL, *e = strtok_r(list, " ", &save); e; e = strtok_r(NULL, " ", &save))
        cJSON_AddItemToArray(ext, cJSON_CreateString(e));
    return o;
}

static int list_devices_json(void) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "version", pt_version()->string);
    cJSON *backends = cJSON_AddArrayToObject(root, "backends");
    for (int i = 0; i < pt_backend_count(); ++i) {
        cJSON *b = cJSON_CreateObject();
        const char *reason = NULL;
        bool ok = pt_backend_available(i, &reason);
        cJSON_AddStringToObject(b, "name", pt_backend_name(i));
        cJSON_AddBoolToObject(b, "available", ok);
        cJSON_AddStringToObject(b, "reason", ok ? "" : reason);
        cJSON_AddStringToObject(b, "path", pt_backend_path(i));
        cJSON *devices = cJSON_AddArrayToObject(b, "devices");
        for (int j = 0; j < pt_backend_device_count(i); ++j)
            cJSON_AddItemToArray(devices, device_json(pt_backend_device(i, j)));
        cJSON_AddItemToArray(backends, b);
    }
    pt_device *def = pt_default_device();
    if (def) cJSON_AddStringToObject(root, "default_device", pt_device_name(def));
    else {
        cJSON_AddNullToObject(root, "default_device");
        cJSON_AddStringToObject(root, "default_device_error", pt_last_error());
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) {
        fprintf(stderr, "portable devices: out of memory writing JSON\n");
        return 1;
    }
    printf("%s\n", text);
    cJSON_free(text);
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
               "PORTABLE_LOG=debug shows the plugins' diagnostics (README: every variable).\n");
}

/* One command: its name, what it does (its --help) and whether it takes --json. */
typedef struct command {
    const char *name;
    int (*run)(bool json);
    bool takes_json;
    const char *help;
} command;

static int print_version(void);

static int run_devices(bool json) { return json ? list_devices_json() : list_devices(); }
static int run_bench(bool json) {
    (void)json;
    return bench_devices();
}
static int run_version(bool json) {
    (void)json;
    return print_version();
}

static const command commands[] = {
    {"devices", run_devices, true,
     "usage: portable devices [-h|--help] [--json]\n"
     "Lists every backend plugin found (loaded, or why not) and every device with its\n"
     "properties: name, type, compute units, memory (total, free, held by this process),\n"
     "driver; OpenCL version and OpenCL C version, platform, max allocation, local memory,\n"
     "max work-group size, fp16/fp64 and extensions; for CUDA the compute capability, UUID\n"
     "and PCI bus id. Then the default device PORTABLE_BACKEND picks.\n"
     "  --json    the same as one JSON object (backends[].devices[] with every property;\n"
     "            sizes in bytes, -1 when the driver cannot tell)\n"
     "Exit status: 0, or 1 when the default device cannot be used.\n"},
    {"bench", run_bench, false,
     "usage: portable bench [-h|--help]\n"
     "Times an f32 matmul (1024 x 1024, GFLOP/s) and an f32 add (16M elements, GB/s read +\n"
     "write) on every device, after a warm-up, with a synchronise before each clock read.\n"
     "Exit status: 0, or 1 when a device failed.\n"},
    {"version", run_version, false,
     "usage: portable version [-h|--help]\n"
     "Prints the version of the libportable.so this tool loaded (and the version the tool\n"
     "was built with, when they differ).\n"},
};

static int print_version(void) {
    const pt_version_info *v = pt_version();
    printf("libportable %s", v->string);
    if (v->number != PT_VERSION_NUMBER) printf(" (this tool was built with %s)", PT_VERSION_STRING);
    printf("\n");
    return 0;
}

/* A command's own arguments: -h/--help, and --json where it takes one;
 * anything else is an error with that command's usage. */
static int command_args(const command *c, int argc, char **argv, bool *help, bool *json) {
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'}, {"json", no_argument, NULL, 'j'}, {NULL, 0, NULL, 0}};
    *help = *json = false;
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        if (opt == 'h') *help = true;
        else if (opt == 'j' && c->takes_json) *json = true;
        else {
            if (opt == 'j') fprintf(stderr, "portable %s: --json is for `portable devices`\n", c->name);
            fputs(c->help, stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "portable %s: unexpected argument '%s'\n", c->name, argv[optind]);
        fputs(c->help, stderr);
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
    const char *command_name = optind < argc ? argv[optind] : "devices";
    int sub_argc = optind < argc ? argc - optind : 1;
    char **sub_argv = optind < argc ? argv + optind : argv;
    if (strcmp(command_name, "trace") == 0) {
        if (sub_argc == 3 && strcmp(sub_argv[1], "summary") == 0)
            return pt_tool_trace_summary(sub_argv[2], stdout);
        if (sub_argc == 2 && (strcmp(sub_argv[1], "-h") == 0 || strcmp(sub_argv[1], "--help") == 0)) {
            fputs("usage: portable trace summary FILE\n"
                  "Reads a trace written with PORTABLE_TRACE or pt_trace_begin and prints: the ops\n"
                  "that took the most device time, the host's waits, copy bandwidth per direction,\n"
                  "and each device queue's busy and idle time.\n",
                  stdout);
            return 0;
        }
        fprintf(stderr, "portable trace: expected 'portable trace summary FILE'\n");
        usage(stderr);
        return 2;
    }
    const command *c = NULL;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; ++i)
        if (strcmp(command_name, commands[i].name) == 0) c = &commands[i];
    if (!c) {
        fprintf(stderr, "portable: unknown command '%s'\n", command_name);
        usage(stderr);
        return 2;
    }
    bool help = false, json = false;
    int bad = command_args(c, sub_argc, sub_argv, &help, &json);
    if (bad) return bad;
    if (help) {
        fputs(c->help, stdout);
        return 0;
    }
    return c->run(json);
}
