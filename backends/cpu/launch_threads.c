/* libportable cpu backend — the size of each OpenMP team, and making sure
 * the team can be created before a kernel asks for it.
 *
 * libgomp cannot report a failed thread creation: it prints "Thread
 * creation failed" and calls exit(1). Under an address-space limit
 * (ulimit -v, RLIMIT_AS) each thread's stack (8 MiB by default) may be
 * what is missing, so before a thread's first parallel region its team is
 * tried with plain pthread_create, which does report: the team is capped
 * at the threads that could be made (1: the kernels run serially), and
 * formed at once, while the stacks just freed are still in glibc's cache.
 * libgomp keeps a thread's team for its later regions, so only that first
 * one can fail. What cannot be caught: memory taken by another thread
 * between the trial and the team's creation, and an OMP_STACKSIZE larger
 * than the default stack the trial uses (docs/security.md). Without a
 * limit nothing is tried. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <unistd.h>

#include "internal.h"

#ifdef _OPENMP
/* Cores in this process's affinity mask, looked up once (0: not yet). */
static int affinity_cores(void) {
    static _Atomic int cpu_cores;
    int cores = atomic_load_explicit(&cpu_cores, memory_order_relaxed);
    if (cores == 0) {
        cpu_set_t set;
        cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
        if (cores < 1) cores = 1;
        atomic_store_explicit(&cpu_cores, cores, memory_order_relaxed);
    }
    return cores;
}

bool pt_cpu_address_space_limited(void) {
    struct rlimit r;
    return getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY;
}

static void *nothing(void *arg) { return arg; }

/* How many of want threads (this one included) can be made now. */
static int threads_that_fit(int want) {
    pthread_t t[64];
    int made = 0;
    if (want > 65) want = 65;
    while (made < want - 1 && pthread_create(&t[made], NULL, nothing, NULL) == 0) ++made;
    for (int i = 0; i < made; ++i) pthread_join(t[i], NULL);
    return made + 1;
}

/* This thread's team cap once tried (0: not yet); a thread-local, so
 * threads calling ops each have their own libgomp team, and each one's
 * first team is tried. */
static _Thread_local int team_cap;

int pt_cpu_max_threads(void) {
    const int cores = affinity_cores(), t = omp_get_max_threads();
    int want = t < cores ? t : cores;
    if (want <= 1) return 1;
    if (team_cap == 0) {
        team_cap = pt_cpu_address_space_limited() ? threads_that_fit(want) : want;
        if (team_cap < want && pt_cpu_host && pt_cpu_host->log)
            pt_cpu_host->log(PT_LOG_WARN,
                             "cpu: only %d of %d threads could be started under this process's address-space "
                             "limit (ulimit -v); this thread's kernels use %d",
                             team_cap, want, team_cap);
        if (team_cap > 1) {
            /* form the team now, while the stacks just freed are cached */
#pragma omp parallel num_threads(team_cap)
            {
                (void)0;
            }
        }
    }
    return want < team_cap ? want : team_cap;
}
#else
bool pt_cpu_address_space_limited(void) { return false; }
int pt_cpu_max_threads(void) { return 1; }
#endif
