/* The cpu backend under an address-space limit (ulimit -v): every call
 * returns, with PT_OK or PT_ERR_OUT_OF_MEMORY, and the process exits.
 *
 * Each scenario runs in a child that sets RLIMIT_AS to 1 GiB before its
 * first library call (as `ulimit -v` would), fills the address space with
 * 1 MiB tensors, gives a few MiB back and runs an add big enough for the
 * OpenMP team: libgomp used to exit(1) ("Thread creation failed") when a
 * thread's stack did not fit, and OpenBLAS's idle pool hung the exit. A
 * child that is killed, exits with another status, or has not exited after
 * 60 s fails the test.
 *
 * AddressSanitizer reserves terabytes of address space for its shadow, so
 * it cannot run under such a limit: the sanitizer build skips this test
 * (exit 77) and the plain build runs it. */
#include <signal.h>
#include <sys/resource.h>

#include "check.h"

#if defined(__SANITIZE_ADDRESS__)
#define PT_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PT_TEST_ASAN 1
#endif
#endif

#ifndef PT_TEST_ASAN
static int scenario(int give_back_mb) {
    struct rlimit r = {(rlim_t)1 << 30, (rlim_t)1 << 30};
    if (setrlimit(RLIMIT_AS, &r) != 0) return 3;
    pt_device *c = pt_cpu();
    if (!c) return pt_last_status() == PT_ERR_OUT_OF_MEMORY ? 0 : 4;
    enum { MAX_HOG = 4096 };
    static pt_tensor *hog[MAX_HOG];
    int n = 0;
    int64_t mb[1] = {1 << 20};
    while (n < MAX_HOG && (hog[n] = pt_empty(c, PT_U8, 1, mb)) != NULL) ++n;
    if (pt_last_status() != PT_ERR_OUT_OF_MEMORY) return 5;
    pt_clear_error();
    for (int i = 0; i < give_back_mb && n > 0; ++i) pt_release(hog[--n]);
    pt_empty_cache(c);
    int64_t s[1] = {300000}; /* above the cheap grain: the team runs */
    pt_tensor *a = pt_zeros(c, PT_F32, 1, s);
    pt_tensor *b = a ? pt_add(a, a) : NULL;
    double v = b ? pt_item(pt_sum(b, PT_ALL, false)) : 0;
    pt_status st = pt_last_status();
    printf("   %d MiB held, %d given back: %s%s\n", n, give_back_mb, pt_status_name(st), b && v == 0 ? ", sum 0" : "");
    if (st != PT_OK && st != PT_ERR_OUT_OF_MEMORY) return 6;
    if (b && v != 0) return 7;
    for (int i = 0; i < n; ++i) pt_release(hog[i]);
    return 0;
}
#endif

int main(void) {
#ifdef PT_TEST_ASAN
    printf("SKIP: AddressSanitizer cannot run under an address-space limit (its shadow alone is terabytes); "
           "the plain build runs this test\n");
    return 77;
#else
    const int give_back[] = {2, 4, 6, 10, 20, 40};
    for (size_t i = 0; i < sizeof give_back / sizeof give_back[0]; ++i) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            alarm(60);
            int rc = scenario(give_back[i]);
            fflush(stdout);
            exit(rc);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        char what[160];
        snprintf(what, sizeof what, "%d MiB given back: the child exited with 0 (status 0x%x%s)", give_back[i], st,
                 WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ? ": hung" : "");
        check_report(WIFEXITED(st) && WEXITSTATUS(st) == 0, __FILE__, __LINE__, what);
    }
    return check_summary();
#endif
}
