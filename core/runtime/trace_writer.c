/* The trace file: Chrome trace-event JSON ({"traceEvents": [...]}) written
 * as events happen, under one lock, and closed valid whether pt_trace_end,
 * process exit or the size cap ends it. Also the track numbering: one
 * process per device, one row per host thread plus the queue row. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/trace_internal.h"

/* Room kept for the closing text, so a cut file still ends properly. */
#define TAIL_RESERVE 256
#define MAX_TRACKS 64
#define MAX_NAMED_THREADS 64
/* Rows of the caller's own (pt_trace_span): names shared by all tracks. */
#define MAX_ROWS 32
#define ROW_TID_BASE 1000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *file;
static size_t written, cap;
static bool truncated, write_failed, any_event;
static int64_t origin_ns;
static const pt_device *tracks[MAX_TRACKS];
/* per track: bit t = thread t's host row named; and its graphs row */
static uint64_t named_threads[MAX_TRACKS], named_graph_threads[MAX_TRACKS];
static _Atomic uint64_t flow_ids;
static char row_names[MAX_ROWS][48];
static int n_rows;
static uint32_t named_rows[MAX_TRACKS]; /* per track: bit r = row r named */

/* Thread numbers come from a pthread key, not a thread-local: the library's
 * TLS block must stay a few words (runtime.h). */
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t thread_key;
static atomic_int thread_count;
static void make_key(void) { (void)pthread_key_create(&thread_key, NULL); }

static int thread_number(void) {
    pthread_once(&key_once, make_key);
    intptr_t v = (intptr_t)pthread_getspecific(thread_key);
    if (!v) {
        v = (intptr_t)atomic_fetch_add(&thread_count, 1) + 1;
        (void)pthread_setspecific(thread_key, (void *)v);
    }
    return (int)v - 1;
}

int64_t pt__trace_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t pt__trace_origin_ns(void) { return origin_ns; }

char *pt__trace_format_us(int64_t ns, char *buf) {
    char digits[24];
    int n = 0;
    const bool negative = ns < 0;
    uint64_t v = negative ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v || n < 4); /* at least "0.000" */
    char *p = buf;
    if (negative) *p++ = '-';
    while (n > 3) *p++ = digits[--n];
    *p++ = '.';
    while (n > 0) *p++ = digits[--n];
    *p = '\0';
    return buf;
}

uint64_t pt__trace_next_flow(void) { return atomic_fetch_add(&flow_ids, 1) + 1; }

/* Caller holds lock. */
static void emit_locked(const char *event, size_t len) {
    if (!file || truncated) return;
    if (written + len + 2 + TAIL_RESERVE > cap) {
        truncated = true;
        return;
    }
    if (any_event && fputs(",\n", file) < 0) write_failed = true;
    if (fwrite(event, 1, len, file) != len) write_failed = true;
    written += len + 2;
    any_event = true;
}

void pt__trace_emit(const char *event, size_t len) {
    pthread_mutex_lock(&lock);
    emit_locked(event, len);
    pthread_mutex_unlock(&lock);
}

pt_status pt__trace_open(const char *fn, const char *path, size_t max_bytes) {
    FILE *f = fopen(path, "w");
    if (!f)
        return pt__error(PT_ERR_IO, fn,
                         "cannot open trace file '%s' for writing: %s; give a path in an "
                         "existing, writable folder",
                         path, strerror(errno));
    static const char head[] = "{\"traceEvents\":[\n";
    pthread_mutex_lock(&lock);
    file = f;
    cap = max_bytes;
    written = sizeof head - 1;
    truncated = write_failed = any_event = false;
    memset(tracks, 0, sizeof tracks);
    memset(named_threads, 0, sizeof named_threads);
    memset(named_graph_threads, 0, sizeof named_graph_threads);
    memset(named_rows, 0, sizeof named_rows);
    n_rows = 0;
    origin_ns = pt__trace_now_ns();
    if (fputs(head, f) < 0) write_failed = true;
    pthread_mutex_unlock(&lock);
    return PT_OK;
}

pt_status pt__trace_close(const char *fn) {
    pthread_mutex_lock(&lock);
    FILE *f = file;
    file = NULL;
    bool failed = write_failed;
    if (f) {
        if (fprintf(f, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"library\":\"libportable\","
                       "\"truncated\":%s,\"max_bytes\":%zu}}\n",
                    truncated ? "true" : "false", cap) < 0)
            failed = true;
        if (fclose(f) != 0) failed = true;
    }
    pthread_mutex_unlock(&lock);
    if (failed)
        return pt__error(PT_ERR_IO, fn, "writing the trace file failed (is the disk full?); "
                                        "the file may be incomplete");
    return PT_OK;
}

/* Caller holds lock. */
static void name_row_locked(int pid, int tid, const char *name) {
    char ev[160];
    int n = snprintf(ev, sizeof ev,
                     "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
                     "\"args\":{\"name\":\"%s\"}}",
                     pid, tid, name);
    emit_locked(ev, (size_t)n);
}

int pt__trace_pid(const pt_device *d) {
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < MAX_TRACKS && tracks[i] && tracks[i] != d) i++;
    if (i == MAX_TRACKS) i = MAX_TRACKS - 1; /* more devices than tracks share the last */
    if (!tracks[i]) {
        tracks[i] = d;
        char ev[200];
        int n = snprintf(ev, sizeof ev,
                         "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,"
                         "\"args\":{\"name\":\"%s\"}}",
                         i + 1, d->name);
        emit_locked(ev, (size_t)n);
        n = snprintf(ev, sizeof ev,
                     "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,"
                     "\"args\":{\"sort_index\":%d}}",
                     i + 1, i + 1);
        emit_locked(ev, (size_t)n);
        name_row_locked(i + 1, PT__TRACE_QUEUE_TID, "queue");
    }
    pthread_mutex_unlock(&lock);
    return i + 1;
}

/* The calling thread's row base + t on track pid, named label (the first
 * thread's) or "label thread t" on first use. */
static int thread_row(int pid, int base, uint64_t *named, const char *label) {
    const int t = thread_number();
    const int tid = base + t;
    if (t < MAX_NAMED_THREADS && pid >= 1 && pid <= MAX_TRACKS) {
        pthread_mutex_lock(&lock);
        if (!(named[pid - 1] & ((uint64_t)1 << t))) {
            named[pid - 1] |= (uint64_t)1 << t;
            char name[48];
            if (t == 0)
                snprintf(name, sizeof name, "%s", label);
            else
                snprintf(name, sizeof name, "%s thread %d", label, t);
            name_row_locked(pid, tid, name);
        }
        pthread_mutex_unlock(&lock);
    }
    return tid;
}

int pt__trace_host_tid(int pid) { return thread_row(pid, 100, named_threads, "host"); }

int pt__trace_graph_tid(int pid) {
    return thread_row(pid, PT__TRACE_GRAPH_TID_BASE, named_graph_threads, "graphs");
}

int pt__trace_row_tid(int pid, const char *row) {
    pthread_mutex_lock(&lock);
    int r = 0;
    while (r < n_rows && strcmp(row_names[r], row) != 0) r++;
    if (r == n_rows) {
        if (n_rows == MAX_ROWS) {
            pthread_mutex_unlock(&lock);
            return -1;
        }
        snprintf(row_names[n_rows++], sizeof row_names[0], "%s", row);
    }
    if (pid >= 1 && pid <= MAX_TRACKS && !(named_rows[pid - 1] & ((uint32_t)1 << r))) {
        named_rows[pid - 1] |= (uint32_t)1 << r;
        name_row_locked(pid, ROW_TID_BASE + r, row);
    }
    pthread_mutex_unlock(&lock);
    return ROW_TID_BASE + r;
}
