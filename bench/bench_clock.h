/* What the cpu benchmarks' programs time and measure with: a clock in ms
 * (CLOCK_MONOTONIC for wall time, CLOCK_PROCESS_CPUTIME_ID for the CPU time
 * that leaves out other processes on a shared machine), a comparison for
 * qsort'ing samples to take their median, and the resident set. */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static inline double now_ms(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Resident set now (VmRSS) in MiB, from /proc; -1 where there is none. */
static inline double rss_now_mib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    double kib = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) kib = atof(line + 6);
    fclose(f);
    return kib < 0 ? -1 : kib / 1024;
}

/* The process's largest resident set so far, in MiB. */
static inline double rss_peak_mib(void) {
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? (double)u.ru_maxrss / 1024 : -1;
}

#endif
