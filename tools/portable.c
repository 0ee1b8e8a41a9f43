/* `portable`: the command-line companion of libportable.
 *
 *   portable devices   every backend with its load status (or why it failed)
 *                      and every device with its properties, like nvidia-smi
 *                      and clinfo together
 *   portable version   library version
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "portable/portable.h"

static const char *type_name(pt_device_type t) {
    switch (t) {
    case PT_DEVICE_CPU: return "CPU";
    case PT_DEVICE_GPU: return "GPU";
    case PT_DEVICE_ACCELERATOR: return "ACCEL";
    default: return "OTHER";
    }
}

static void format_bytes(int64_t bytes, char *buf, size_t cap) {
    if (bytes < 0) {
        snprintf(buf, cap, "unknown");
        return;
    }
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        ++u;
    }
    snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

static void print_rule(void) {
    printf("+------------+------------------------------------------+-------+-----+------------+------------+------------+--------------------------+\n");
}

static int list_devices(void) {
    int nb = pt_backend_count();
    printf("libportable %d.%d.%d\n\n", PT_VERSION_MAJOR, PT_VERSION_MINOR, PT_VERSION_PATCH);
    printf("Backends\n");
    for (int i = 0; i < nb; ++i) {
        const char *reason = NULL;
        bool ok = pt_backend_available(i, &reason);
        const char *path = pt_backend_path(i);
        if (ok)
            printf("  %-8s ok, %d device%s  (%s)\n", pt_backend_name(i), pt_backend_device_count(i),
                   pt_backend_device_count(i) == 1 ? "" : "s", path);
        else
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
            format_bytes(p.memory_total, total, sizeof total);
            format_bytes(p.memory_free, avail, sizeof avail);
            format_bytes(m.reserved, used, sizeof used);
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

static void usage(FILE *f) {
    fprintf(f, "usage: portable <command>\n"
               "  devices   list backends (with why one is missing) and devices\n"
               "  version   print the library version\n");
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "devices") == 0) return list_devices();
    if (strcmp(argv[1], "version") == 0) {
        printf("libportable %d.%d.%d\n", PT_VERSION_MAJOR, PT_VERSION_MINOR, PT_VERSION_PATCH);
        return 0;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "portable: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
