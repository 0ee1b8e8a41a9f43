/* A program written against the first release's headers keeps compiling
 * and running: this file carries its own copy of the old declarations (the
 * headers are not included), calls the plain symbols pt_device_info and
 * pt_memory_stats as such a program does, and checks that the library
 * writes no byte past the old structs. Then the versioned symbols
 * (cmake/libportable.map) and the sized entry points with a size from a
 * future, larger header. */
#define _GNU_SOURCE /* dlvsym */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- the first release's declarations, copied ---- */
typedef struct pt_device pt_device;
typedef int pt_status;
typedef struct old_device_props {
    char name[128];
    char backend[16];
    char vendor[128];
    char platform[128];
    char driver_version[64];
    int type;
    int compute_units;
    int64_t memory_total;
    int64_t memory_free;
    bool supports_f64;
} old_device_props;
typedef struct old_memory_usage {
    int64_t in_use, cached, peak, reserved, pinned_cached, pinned_allocs, pinned_reuses;
} old_memory_usage;
pt_device *pt_cpu(void);
pt_status pt_device_info(const pt_device *d, old_device_props *out);
pt_status pt_memory_stats(pt_device *d, old_memory_usage *out);
const char *pt_last_error(void);
/* the sized entry points, as the new header's macros call them */
pt_status pt_device_info_sized(const pt_device *d, void *out, size_t size);
pt_status pt_memory_stats_sized(pt_device *d, void *out, size_t size);

static int failed;
#define CHECK(c)                                                                    \
    do {                                                                            \
        if (!(c)) {                                                                 \
            printf("%s:%d: FAILED: %s\n", __FILE__, __LINE__, #c);                  \
            ++failed;                                                               \
        }                                                                           \
    } while (0)

/* Whether bytes [from, to) of p all equal v. */
static bool all_are(const unsigned char *p, size_t from, size_t to, unsigned char v) {
    for (size_t i = from; i < to; ++i)
        if (p[i] != v) return false;
    return true;
}

int main(void) {
    pt_device *cpu = pt_cpu();
    CHECK(cpu != NULL);
    if (!cpu) return 1;

    /* each old struct at the start of a buffer whose tail is a canary */
    static _Alignas(16) unsigned char future[65536];
    old_device_props *p = (old_device_props *)(void *)future;
    memset(future, 0xA5, sizeof future);
    CHECK(pt_device_info(cpu, p) == 0);
    printf("old pt_device_info: name '%s', backend '%s', %d compute units, %lld bytes\n", p->name,
           p->backend, p->compute_units, (long long)p->memory_total);
    CHECK(strcmp(p->backend, "cpu") == 0);
    CHECK(p->compute_units >= 1);
    CHECK(p->memory_total > 0);
    CHECK(p->supports_f64);
    CHECK(all_are(future, sizeof *p, 8192, 0xA5)); /* nothing past it */
    char name[sizeof p->name];
    memcpy(name, p->name, sizeof name);

    old_memory_usage *m = (old_memory_usage *)(void *)future;
    memset(future, 0xA5, sizeof future);
    CHECK(pt_memory_stats(cpu, m) == 0);
    CHECK(m->in_use >= 0 && m->reserved >= m->in_use);
    CHECK(all_are(future, sizeof *m, 8192, 0xA5));

    /* a newer header than the library: what the library does not know is zeroed */
    memset(future, 0xA5, sizeof future);
    CHECK(pt_device_info_sized(cpu, future, sizeof future) == 0);
    CHECK(strcmp((const char *)future, name) == 0);
    CHECK(all_are(future, sizeof future - 1024, sizeof future, 0));
    memset(future, 0xA5, sizeof future);
    CHECK(pt_memory_stats_sized(cpu, future, 1024) == 0);
    CHECK(all_are(future, 512, 1024, 0) && all_are(future, 1024, 2048, 0xA5));
    /* too small for any release's struct: refused, nothing written */
    memset(future, 0xA5, sizeof future);
    CHECK(pt_device_info_sized(cpu, future, 16) != 0);
    CHECK(strstr(pt_last_error(), "pt_device_info") && strstr(pt_last_error(), "size 16"));
    CHECK(all_are(future, 0, 64, 0xA5));
    CHECK(pt_memory_stats_sized(cpu, future, 8) != 0);

    /* the symbols carry versions: the first release's names in PORTABLE_0.1,
     * the sized entry points in PORTABLE_0.2 */
    void *self = dlopen(NULL, RTLD_NOW);
    CHECK(dlvsym(self, "pt_device_info", "PORTABLE_0.1") != NULL);
    CHECK(dlvsym(self, "pt_cpu", "PORTABLE_0.1") != NULL);
    CHECK(dlvsym(self, "pt_device_info_sized", "PORTABLE_0.2") != NULL);
    CHECK(dlvsym(self, "pt_set_log_handler", "PORTABLE_0.2") != NULL);
    CHECK(dlvsym(self, "pt_device_info_sized", "PORTABLE_0.1") == NULL);
    CHECK(dlsym(self, "pt__registry_init") == NULL); /* internal names stay hidden */

    printf("%s\n", failed ? "FAILED" : "all passed");
    return failed ? 1 : 0;
}
