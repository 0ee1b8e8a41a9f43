/* Threads: what docs/execution.md promises is
 * thread-safe, exercised by several threads at once. Meant to run under
 * ThreadSanitizer (scripts/run-tests.sh builds a TSan configuration) as well
 * as in the plain and ASan builds:
 *
 *   1. threads racing the library's first call (device lookup, first op);
 *   2. threads sharing read-only tensors: ops that hand back the caller's
 *      own tensor retained (pt_contiguous, pt_to, pt_cast, pt_grad), views,
 *      arithmetic, pt_retain/pt_release, each thread inside its own scopes,
 *      with every result checked (a lost update of a shared counter shows as
 *      a double free, a use-after-free or a wrong sum);
 *   3. threads using scopes, pt_keep and errors concurrently: each thread's
 *      scopes and last error are its own, and another thread's scope handle
 *      is refused;
 *   4. threads that used a scope and exit leave no memory behind (the
 *      thread's scope list and error state are freed by a thread-exit
 *      destructor): counted with mallinfo2 in plain builds, by LeakSanitizer
 *      in the ASan build.
 *
 * Check failures in worker threads are counted atomically and printed; the
 * main thread turns them into the exit status. */
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "../unit/check.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PT_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PT_TEST_SANITIZED 1
#endif
#endif

#define THREADS 6

static atomic_int worker_failures;

/* A failed check on a worker thread: printed at once, counted for main. */
#define WCHECK(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            atomic_fetch_add(&worker_failures, 1);                                                 \
            char w_[600];                                                                          \
            snprintf(w_, sizeof w_, __VA_ARGS__);                                                  \
            printf("%s:%d: FAILED (worker): %s: %s [last error: %s]\n", __FILE__, __LINE__, #cond,  \
                   w_, pt_last_error());                                                           \
            fflush(stdout);                                                                        \
        }                                                                                          \
    } while (0)

static pthread_barrier_t start_line;

static double sum_of(pt_tensor *x) {
    pt_tensor *s = pt_sum(x, PT_ALL, false);
    double v = pt_item(s);
    pt_release(s);
    return v;
}

/* ---- 1. racing the first call ---- */

static void *first_call(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start_line);
    pt_device *cpu = pt_cpu();
    WCHECK(cpu != NULL, "pt_cpu() on a racing thread");
    if (!cpu) return NULL;
    WCHECK(pt_device_get("cpu:0") == cpu, "pt_device_get(\"cpu:0\") is pt_cpu()");
    int64_t n = 64;
    pt_tensor *a = pt_arange(cpu, PT_F32, 0, 64, 1);
    pt_tensor *b = pt_full(cpu, PT_F32, 1, &n, 2);
    pt_tensor *c = pt_mul(a, b);
    WCHECK(c && sum_of(c) == 2 * (63 * 64 / 2), "2 * sum(0..63)");
    pt_release(a);
    pt_release(b);
    pt_release(c);
    return NULL;
}

static void test_race_first_call(void) {
    pthread_t t[THREADS];
    pthread_barrier_init(&start_line, NULL, THREADS);
    for (int i = 0; i < THREADS; ++i) CHECK(pthread_create(&t[i], NULL, first_call, NULL) == 0);
    for (int i = 0; i < THREADS; ++i) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start_line);
}

/* ---- 2. shared read-only tensors ---- */

#define SHARED_N 100
#define ROUNDS 150

static pt_device *cpu;
static pt_tensor *shared_x;    /* f32 [100]: 0, 1, ..., 99 */
static pt_tensor *shared_leaf; /* f32 [100] requiring grad, its .grad all 3 */

static void *use_shared(void *arg) {
    int id = (int)(intptr_t)arg;
    const double sum_x = SHARED_N * (SHARED_N - 1) / 2.0;
    const double sum_sq = (SHARED_N - 1) * SHARED_N * (2.0 * SHARED_N - 1) / 6.0;
    pthread_barrier_wait(&start_line);
    for (int r = 0; r < ROUNDS; ++r) {
        pt_scope outer = pt_scope_begin();
        /* each of these may hand back shared_x itself, retained and recorded
         * in this thread's scope */
        pt_tensor *c = pt_contiguous(shared_x);
        pt_tensor *m = pt_to(shared_x, cpu);
        pt_tensor *k = pt_cast(shared_x, PT_F32);
        pt_tensor *g = pt_grad(shared_leaf);
        WCHECK(c && m && k && g, "round %d: contiguous/to/cast/grad", r);
        if (!(c && m && k && g)) {
            pt_scope_end(outer);
            break;
        }
        pt_scope inner = pt_scope_begin();
        pt_tensor *sq = pt_mul(c, k);
        double got = sum_of(sq);
        WCHECK(got == sum_sq, "round %d: sum(x*x) = %.17g, expected %.17g", r, got, sum_sq);
        got = sum_of(pt_add(m, g));
        WCHECK(got == sum_x + 3 * SHARED_N, "round %d: sum(x+grad) = %.17g", r, got);
        /* a view and a forward op on the leaf (records a node that holds the
         * shared leaf) */
        pt_tensor *v = pt_narrow(shared_x, 0, 10, 5);
        got = sum_of(v);
        WCHECK(got == 10 + 11 + 12 + 13 + 14, "round %d: sum of narrow = %.17g", r, got);
        pt_tensor *y = pt_mul(shared_leaf, k);
        WCHECK(y && pt_requires_grad(y), "round %d: leaf * x tracks grad", r);
        pt_keep(y); /* to outer */
        pt_scope_end(inner);
        /* the user's own references next to the scope's records */
        pt_tensor *own = pt_retain(shared_x);
        if ((r + id) % 2) pt_release(c); /* takes one of the scope's records off */
        if ((r + id) % 3 == 0) pt_release(m);
        got = sum_of(y); /* leaf (ones) * x */
        WCHECK(got == sum_x, "round %d: sum(leaf * x) = %.17g", r, got);
        pt_release(own);
        pt_scope_end(outer);
    }
    return NULL;
}

static void test_shared_readonly(void) {
    int64_t n = SHARED_N;
    shared_x = pt_arange(cpu, PT_F32, 0, SHARED_N, 1);
    shared_leaf = pt_ones(cpu, PT_F32, 1, &n);
    REQUIRE(shared_x);
    REQUIRE(shared_leaf);
    CHECK_OK(pt_set_requires_grad(shared_leaf, true));
    pt_scope s = pt_scope_begin();
    CHECK_OK(pt_backward(pt_sum(pt_mul_scalar(shared_leaf, 3), PT_ALL, false)));
    pt_scope_end(s);

    pthread_t t[THREADS];
    pthread_barrier_init(&start_line, NULL, THREADS);
    for (int i = 0; i < THREADS; ++i)
        CHECK(pthread_create(&t[i], NULL, use_shared, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < THREADS; ++i) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start_line);

    /* Every thread's records are gone: one release each frees them. */
    CHECK_DBL(sum_of(shared_x), SHARED_N * (SHARED_N - 1) / 2.0, 0);
    pt_release(shared_x);
    pt_release(shared_leaf);
}

/* ---- 3. scopes and errors on many threads ---- */

static pt_scope foreign_scope; /* begun by the main thread, still open */

static void *use_scopes(void *arg) {
    int id = (int)(intptr_t)arg;
    pthread_barrier_wait(&start_line);
    for (int r = 0; r < 100; ++r) {
        pt_scope a = pt_scope_begin();
        WCHECK(a.level == 1, "a new thread's first scope is level 1 (got %d)", a.level);
        int64_t n = 10;
        pt_tensor *x = pt_full(cpu, PT_F32, 1, &n, id);
        pt_scope b = pt_scope_begin();
        pt_tensor *kept = pt_keep(pt_add_scalar(x, 1));
        pt_full(cpu, PT_F32, 1, &n, 5); /* left to b */
        pt_scope_end(b);
        double got = sum_of(kept);
        WCHECK(got == 10.0 * (id + 1), "kept value %.17g", got);
        /* another thread's scope handle is not ours to end */
        pt_clear_error();
        pt_scope_end(foreign_scope);
        WCHECK(pt_last_status() == PT_ERR_INVALID_ARGUMENT, "foreign handle refused");
        /* our own stale handle neither */
        pt_clear_error();
        pt_scope_end(b);
        WCHECK(pt_last_status() == PT_ERR_INVALID_ARGUMENT, "stale handle refused");
        /* errors are per thread: ours names our shape */
        int64_t bad = -(int64_t)id - 2; /* -1 would mean "infer" */
        WCHECK(pt_reshape(x, 1, &bad) == NULL, "reshape to a negative extent fails");
        char want[64];
        snprintf(want, sizeof want, "%lld", (long long)bad);
        WCHECK(strstr(pt_last_error(), want) != NULL, "our error mentions %s", want);
        pt_clear_error();
        pt_scope_end(a);
        WCHECK(pt_last_status() == PT_OK, "ending our own scope");
    }
    return NULL;
}

static void test_scopes_on_threads(void) {
    foreign_scope = pt_scope_begin();
    pt_tensor *mine = pt_ones(cpu, PT_F32, 1, (int64_t[]){4});
    pthread_t t[THREADS];
    pthread_barrier_init(&start_line, NULL, THREADS);
    for (int i = 0; i < THREADS; ++i)
        CHECK(pthread_create(&t[i], NULL, use_scopes, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < THREADS; ++i) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start_line);
    /* the other threads' failed attempts did not end our scope */
    CHECK_DBL(sum_of(mine), 4, 0);
    CHECK_LAST(PT_OK); /* their errors were theirs */
    pt_clear_error();
    pt_scope_end(foreign_scope);
    CHECK_LAST(PT_OK);
}

/* ---- 4. threads that used scopes exit without leaking ---- */

static void *scope_and_exit(void *arg) {
    (void)arg;
    pt_scope s = pt_scope_begin();
    pt_full(cpu, PT_F32, 1, (int64_t[]){8}, 1);
    pt_reshape(NULL, 0, NULL); /* no error for NULL, but exercise the path */
    pt_tensor *x = pt_ones(cpu, PT_F32, 1, (int64_t[]){8});
    int64_t bad = -3;
    pt_reshape(x, 1, &bad); /* leaves an error message on this thread */
    pt_scope_end(s);
    return NULL;
}

static void run_exiting_threads(int n) {
    for (int i = 0; i < n; ++i) {
        pthread_t t;
        CHECK(pthread_create(&t, NULL, scope_and_exit, NULL) == 0);
        pthread_join(t, NULL);
    }
}

static void test_thread_exit_frees(void) {
    run_exiting_threads(2); /* warm-up: one-time allocations happen here */
#ifndef PT_TEST_SANITIZED
    /* One malloc arena (set in main), so mallinfo2 sees every thread's blocks. */
    size_t before = mallinfo2().uordblks;
    run_exiting_threads(64);
    size_t after = mallinfo2().uordblks;
    long long grown = (long long)after - (long long)before;
    char w[200];
    snprintf(w, sizeof w, "64 threads that used a scope grew the heap by %lld bytes", grown);
    check_report(grown < 64 * 128, __FILE__, __LINE__, w);
#else
    run_exiting_threads(16); /* LeakSanitizer reports what they leave */
#endif
}

int main(void) {
#ifndef PT_TEST_SANITIZED
    mallopt(M_ARENA_MAX, 1);
#endif
    test_race_first_call(); /* must be the process's first library call */
    cpu = pt_cpu();
    if (!cpu) {
        printf("no cpu device: %s\n", pt_last_error());
        return 1;
    }
    test_shared_readonly();
    test_scopes_on_threads();
    test_thread_exit_frees();
    int wf = atomic_load(&worker_failures);
    if (wf) printf("%d check(s) failed on worker threads\n", wf);
    return check_summary() | (wf != 0);
}
