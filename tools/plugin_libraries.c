/* The shared libraries each loaded plugin depends on, and the file each was
 * loaded from: which libcudart, cuBLAS, OpenCL loader or OpenBLAS a run
 * really uses is the first question when a backend misbehaves on a new
 * machine (two CUDA toolkits, pip's nvidia-* wheels, a vendor's own
 * libOpenCL). Read from the process itself (dl_iterate_phdr), not guessed
 * from search paths. */
#define _GNU_SOURCE
#include <elf.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_libraries.h"
#include "portable/portable.h"

typedef struct {
    const char *want;           /* the plugin's real path */
    const char *needed[32];     /* its DT_NEEDED names */
    int n;
} plugin_deps;

typedef struct {
    const char *soname;
    char path[PATH_MAX];
} lookup;

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int collect_needed(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    plugin_deps *d = arg;
    char real[PATH_MAX];
    if (!info->dlpi_name || !info->dlpi_name[0] || !realpath(info->dlpi_name, real) || strcmp(real, d->want))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
        const ElfW(Dyn) *dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        const char *strtab = NULL;
        for (const ElfW(Dyn) *e = dyn; e->d_tag != DT_NULL; ++e)
            if (e->d_tag == DT_STRTAB) {
                /* ld.so relocates this entry in place on most targets;
                 * where it did not, it is still an offset from the base. */
                ElfW(Addr) a = e->d_un.d_ptr;
                strtab = (const char *)(a < info->dlpi_addr ? a + info->dlpi_addr : a);
            }
        if (!strtab) return 1;
        for (const ElfW(Dyn) *e = dyn; e->d_tag != DT_NULL && d->n < 32; ++e)
            if (e->d_tag == DT_NEEDED) d->needed[d->n++] = strtab + e->d_un.d_val;
    }
    return 1;
}

static int find_loaded(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    lookup *l = arg;
    if (!info->dlpi_name || strcmp(base_name(info->dlpi_name), l->soname)) return 0;
    if (!realpath(info->dlpi_name, l->path)) snprintf(l->path, sizeof l->path, "%s", info->dlpi_name);
    return 1;
}

/* The C and C++ runtimes every plugin needs say nothing about the machine. */
static int is_runtime(const char *n) {
    static const char *const common[] = {"libc.so", "libm.so", "libdl.so", "libpthread.so", "librt.so",
                                         "libgcc_s.so", "libstdc++.so", "ld-linux"};
    for (size_t i = 0; i < sizeof common / sizeof common[0]; ++i)
        if (strncmp(n, common[i], strlen(common[i])) == 0) return 1;
    return 0;
}

void print_plugin_libraries(void) {
    printf("\nLibraries the plugins loaded\n");
    int shown = 0;
    for (int i = 0; i < pt_backend_count(); ++i) {
        const char *path = pt_backend_path(i);
        char real[PATH_MAX];
        if (!path || !realpath(path, real)) continue;
        plugin_deps d = {.want = real};
        dl_iterate_phdr(collect_needed, &d);
        const char *label = pt_backend_name(i);
        for (int k = 0; k < d.n; ++k) {
            if (is_runtime(d.needed[k])) continue;
            lookup l = {.soname = d.needed[k]};
            const char *where = dl_iterate_phdr(find_loaded, &l) ? l.path : "(not loaded)";
            printf("  %-8s %-24s %s\n", label, d.needed[k], where);
            label = "";
            ++shown;
        }
    }
    if (!shown) printf("  (no plugin loaded, or none depends on more than the C runtime)\n");
}
