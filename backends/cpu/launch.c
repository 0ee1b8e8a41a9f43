/* libportable cpu backend — the queue: waiting for it and timing it.
 *
 * Every member runs to completion before it returns (the kernels split
 * their loops over the OpenMP team, launch_threads.c, and join it), so
 * there is no queue to wait for and a trace stamp passes the moment it is
 * recorded. */
/* clock_gettime: POSIX, also under a strict -std=c11. */
#define _POSIX_C_SOURCE 200809L

#include <time.h>

#include "internal.h"

pt_status pt_cpu_synchronize(int dev) {
    (void)dev;
    return PT_OK; /* every member completed before returning */
}

/* ---- Device timing for traces ---- */

/* Execution is immediate, so the queue passes a stamp the moment it is
 * recorded: the stamp is the host's clock then, held in the handle itself
 * (nothing to allocate, nothing to leak if a trace is cut off at exit). */
_Static_assert(sizeof(void *) >= sizeof(int64_t), "a stamp handle holds nanoseconds");

pt_status pt_cpu_stamp_record(int dev, void **stamp) {
    (void)dev;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *stamp = (void *)(uintptr_t)((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
    return PT_OK;
}

pt_status pt_cpu_stamp_time(int dev, void *stamp, int64_t *ns) {
    (void)dev;
    *ns = (int64_t)(uintptr_t)stamp;
    return PT_OK;
}

void pt_cpu_stamp_release(int dev, void *stamp) {
    (void)dev;
    (void)stamp;
}
