/* A tiny assertion kit for the unit tests: each CHECK prints file:line and
 * the values when it fails and counts passes and failures; check_summary()
 * prints "N passed, M failed" and gives the exit status.
 *
 * check_in_child() runs a scenario in a forked process with its own
 * environment variables (the library reads PORTABLE_* once, at its first
 * call, so scenarios with different settings need fresh processes). */
#ifndef PT_TEST_CHECK_H
#define PT_TEST_CHECK_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <portable/portable.h>

static int check_passed, check_failed;

static inline void check_report(int ok, const char *file, int line, const char *what) {
    if (ok) {
        ++check_passed;
    } else {
        ++check_failed;
        printf("%s:%d: FAILED: %s\n", file, line, what);
        fflush(stdout);
    }
}

#define CHECK(cond) check_report(!!(cond), __FILE__, __LINE__, #cond)

#define CHECK_INT(a, b)                                                                            \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        char w_[512];                                                                              \
        snprintf(w_, sizeof w_, "%s == %s (%lld vs %lld)", #a, #b, a_, b_);                        \
        check_report(a_ == b_, __FILE__, __LINE__, w_);                                            \
    } while (0)

#define CHECK_DBL(a, b, tol)                                                                       \
    do {                                                                                           \
        double a_ = (double)(a), b_ = (double)(b);                                                 \
        char w_[512];                                                                              \
        snprintf(w_, sizeof w_, "%s ~= %s (%.17g vs %.17g, tol %g)", #a, #b, a_, b_, (double)(tol)); \
        check_report(fabs(a_ - b_) <= (tol), __FILE__, __LINE__, w_);                              \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        char w_[768];                                                                              \
        snprintf(w_, sizeof w_, "%s == \"%s\" (got \"%s\")", #a, b_ ? b_ : "(null)", a_ ? a_ : "(null)"); \
        check_report(a_ && b_ && strcmp(a_, b_) == 0, __FILE__, __LINE__, w_);                     \
    } while (0)

/* hay contains needle */
#define CHECK_HAS(hay, needle)                                                                     \
    do {                                                                                           \
        const char *h_ = (hay), *n_ = (needle);                                                    \
        char w_[1200];                                                                             \
        snprintf(w_, sizeof w_, "%s mentions \"%s\" (got \"%s\")", #hay, n_, h_ ? h_ : "(null)");  \
        check_report(h_ && strstr(h_, n_) != NULL, __FILE__, __LINE__, w_);                        \
    } while (0)

/* The thread's last status is s. */
#define CHECK_LAST(s)                                                                              \
    do {                                                                                           \
        pt_status got_ = pt_last_status();                                                         \
        char w_[1200];                                                                             \
        snprintf(w_, sizeof w_, "last status %s, expected %s (message: %s)", pt_status_name(got_), \
                 pt_status_name(s), pt_last_error());                                              \
        check_report(got_ == (s), __FILE__, __LINE__, w_);                                         \
    } while (0)

#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        pt_status s_ = (expr);                                                                     \
        char w_[1200];                                                                             \
        snprintf(w_, sizeof w_, "%s returned %s (%s)", #expr, pt_status_name(s_), pt_last_error()); \
        check_report(s_ == PT_OK, __FILE__, __LINE__, w_);                                         \
    } while (0)

#define CHECK_NOT_NULL(p)                                                                          \
    do {                                                                                           \
        char w_[1200];                                                                             \
        snprintf(w_, sizeof w_, "%s is not NULL (%s: %s)", #p, pt_status_name(pt_last_status()),   \
                 pt_last_error());                                                                 \
        check_report((p) != NULL, __FILE__, __LINE__, w_);                                         \
    } while (0)

/* Like CHECK_NOT_NULL, and returns from the calling (void) function when p is
 * NULL so that the checks after it do not dereference it. */
#define REQUIRE(p)                                                                                 \
    do {                                                                                           \
        CHECK_NOT_NULL(p);                                                                         \
        if (!(p)) return;                                                                          \
    } while (0)

/* Every element of a small tensor read back as doubles. */
static inline int check_read(pt_tensor *x, double *out, int64_t cap) {
    if (!x) return 0;
    int64_t n = pt_tensor_numel(x);
    if (n > cap) return 0;
    pt_dtype t = pt_tensor_dtype(x);
    size_t es = pt_dtype_size(t);
    unsigned char *raw = malloc((size_t)(n > 0 ? n : 1) * es);
    if (pt_to_host(x, raw, (size_t)n * es) != PT_OK) {
        free(raw);
        return 0;
    }
    for (int64_t i = 0; i < n; ++i) {
        switch (t) {
        case PT_F32: out[i] = ((float *)raw)[i]; break;
        case PT_F64: out[i] = ((double *)raw)[i]; break;
        case PT_I32: out[i] = ((int32_t *)raw)[i]; break;
        case PT_I64: out[i] = (double)((int64_t *)raw)[i]; break;
        default: out[i] = raw[i]; break;
        }
    }
    free(raw);
    return 1;
}

/* Runs fn in a child process after setting the listed environment
 * ("NAME=value", or "NAME=" with nothing after '=' to unset), and counts the
 * child's checks into ours. */
static inline void check_in_child(const char *label, const char *const *env, void (*fn)(void)) {
    int fds[2];
    if (pipe(fds) != 0) {
        check_report(0, __FILE__, __LINE__, "pipe()");
        return;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        for (const char *const *e = env; e && *e; ++e) {
            char name[128];
            const char *eq = strchr(*e, '=');
            size_t n = (size_t)(eq - *e);
            memcpy(name, *e, n);
            name[n] = '\0';
            if (eq[1]) setenv(name, eq + 1, 1);
            else unsetenv(name);
        }
        check_passed = check_failed = 0;
        printf("-- %s\n", label);
        fn();
        int counts[2] = {check_passed, check_failed};
        if (write(fds[1], counts, sizeof counts) != (ssize_t)sizeof counts) _exit(3);
        fflush(stdout);
        exit(check_failed ? 1 : 0); /* exit, not _exit: LeakSanitizer runs at exit */
    }
    close(fds[1]);
    int counts[2] = {0, 0}, status = 0;
    ssize_t got = read(fds[0], counts, sizeof counts);
    close(fds[0]);
    waitpid(pid, &status, 0);
    check_passed += counts[0];
    check_failed += counts[1];
    char w[256];
    snprintf(w, sizeof w, "scenario \"%s\" ran to completion and exited cleanly (status 0x%x)", label, status);
    check_report(got == (ssize_t)sizeof counts && WIFEXITED(status) &&
                     (WEXITSTATUS(status) == 0 || (counts[1] > 0 && WEXITSTATUS(status) == 1)),
                 __FILE__, __LINE__, w);
}

static inline int check_summary(void) {
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}

#endif
