/* Scopes and reference counts: pt_scope_end releases the temporaries made
 * since pt_scope_begin, pt_keep hands one to the enclosing scope, scopes
 * nest, pt_release / pt_retain inside a scope stay correct (no double free:
 * run under ASan), and other threads' tensors are not touched. Memory the
 * cpu device's allocator holds in use tells whether storage was freed. */
#include <pthread.h>

#include "check.h"

static pt_device *cpu;

static int64_t in_use(void) {
    pt_memory_usage u;
    if (pt_memory_stats(cpu, &u) != PT_OK) return -1;
    return u.in_use;
}

/* Every tensor here has N elements; unit is what one of them holds in the
 * allocator (the size class of N floats), measured once in main. */
#define N 300
static int64_t unit;
static pt_tensor *vec(double v) {
    int64_t n = N;
    return pt_full(cpu, PT_F32, 1, &n, v);
}

/* Element i of a 1-D tensor, through a view released here. */
static double item_at(pt_tensor *x, int64_t i) {
    pt_tensor *v = pt_narrow(x, 0, i, 1);
    double r = pt_item(v);
    pt_release(v);
    return r;
}

static void test_scope_releases_temporaries(void) {
    int64_t base = in_use();
    pt_scope s = pt_scope_begin();
    CHECK(s.level >= 1);
    pt_tensor *a = vec(1), *b = vec(2);
    pt_tensor *c = pt_add(a, b);
    pt_tensor *d = pt_transpose(pt_reshape(c, 2, (int64_t[]){10, 30}), 0, 1);
    CHECK_NOT_NULL(d);
    CHECK_INT(in_use(), base + 3 * unit);
    pt_scope_end(s);
    CHECK_INT(in_use(), base);
}

static void test_keep(void) {
    int64_t base = in_use();
    pt_tensor *kept;
    pt_scope s = pt_scope_begin();
    pt_tensor *a = vec(3);
    pt_tensor *b = pt_mul_scalar(a, 2);
    kept = pt_keep(b);
    CHECK(kept == b);
    pt_scope_end(s);
    /* kept survives with its value; a is gone */
    CHECK_DBL(item_at(kept, 7), 6, 0);
    CHECK_INT(in_use(), base + unit);
    pt_release(kept);
    CHECK_INT(in_use(), base);
    /* pt_keep with no scope returns x untouched */
    pt_tensor *x = vec(1);
    CHECK(pt_keep(x) == x);
    pt_release(x);
    CHECK_INT(in_use(), base);
}

static void test_nested(void) {
    int64_t base = in_use();
    pt_scope outer = pt_scope_begin();
    pt_tensor *o1 = vec(1);
    pt_scope inner = pt_scope_begin();
    CHECK(inner.level == outer.level + 1);
    pt_tensor *i1 = vec(2);
    pt_tensor *i2 = pt_add(o1, i1);
    pt_keep(i2); /* to outer */
    pt_scope_end(inner);
    /* i1 freed, o1 and i2 alive */
    CHECK_INT(in_use(), base + 2 * unit);
    CHECK_DBL(pt_item(pt_sum(i2, PT_ALL, false)), 3 * N, 0);
    pt_scope_end(outer);
    CHECK_INT(in_use(), base);
    /* ending an outer scope ends the inner ones too */
    pt_scope s1 = pt_scope_begin();
    vec(1);
    pt_scope s2 = pt_scope_begin();
    vec(1);
    (void)s2;
    pt_scope_end(s1);
    CHECK_INT(in_use(), base);
    pt_clear_error();
    CHECK_INT(pt_scope_end(s2), PT_ERR_INVALID_ARGUMENT); /* already ended: an error, nothing freed */
    CHECK_HAS(pt_last_error(), "has already ended");
    CHECK_INT(in_use(), base);
    /* keep from a nested scope all the way out: one pt_keep per level */
    pt_tensor *out;
    pt_scope a = pt_scope_begin();
    pt_scope b = pt_scope_begin();
    out = pt_keep(vec(5));
    pt_scope_end(b);
    pt_keep(out);
    pt_scope_end(a);
    CHECK_DBL(item_at(out, 0), 5, 0);
    pt_release(out);
}

static void test_release_and_retain_inside(void) {
    int64_t base = in_use();
    pt_scope s = pt_scope_begin();
    pt_tensor *a = vec(1);
    pt_release(a); /* the scope must not release it again */
    CHECK_INT(in_use(), base);
    pt_tensor *b = vec(2);
    pt_tensor *b2 = pt_retain(b); /* a reference of our own */
    pt_tensor *v = pt_narrow(b, 0, 0, 10); /* a view keeps storage alive */
    pt_release(v);
    pt_scope_end(s);
    CHECK_INT(in_use(), base + unit);
    CHECK_DBL(item_at(b2, 299), 2, 0);
    pt_release(b2);
    CHECK_INT(in_use(), base);
    /* a view kept while its base is released by the scope keeps the storage */
    pt_scope s3 = pt_scope_begin();
    pt_tensor *base_t = vec(4);
    pt_tensor *view = pt_keep(pt_narrow(base_t, 0, 10, 5));
    pt_scope_end(s3);
    CHECK_INT(in_use(), base + unit);
    CHECK_DBL(item_at(view, 4), 4, 0);
    pt_release(view);
    CHECK_INT(in_use(), base);
    /* failing ops inside a scope register nothing */
    pt_scope s4 = pt_scope_begin();
    pt_tensor *x = vec(1), *y = pt_reshape(vec(1), 2, (int64_t[]){3, 100});
    CHECK(pt_add(x, y) == NULL);
    pt_clear_error();
    pt_scope_end(s4);
    CHECK_INT(in_use(), base);
}

/* A handle whose scope has ended (here by the end of its
 * enclosing scope) must not end the newer scope that now sits at its level:
 * begin a, begin b, end a, begin c, begin d, make t, end b used to free t. */
static void test_stale_handle(void) {
    int64_t base = in_use();
    pt_scope a = pt_scope_begin();
    pt_scope b = pt_scope_begin();
    pt_scope_end(a); /* ends b too */
    pt_scope c = pt_scope_begin();
    pt_scope d = pt_scope_begin();
    pt_tensor *t = vec(7);
    REQUIRE(t);
    pt_clear_error();
    CHECK_INT(pt_scope_end(b), PT_ERR_INVALID_ARGUMENT);
    CHECK_LAST(PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "pt_scope_end");
    CHECK_HAS(pt_last_error(), "has already ended");
    CHECK_HAS(pt_last_error(), "innermost first");
    CHECK_INT(in_use(), base + unit); /* t was not freed */
    CHECK_DBL(item_at(t, 3), 7, 0);
    /* the same handle again, and a never-begun one: errors, nothing freed */
    pt_clear_error();
    pt_scope_end(b);
    CHECK_LAST(PT_ERR_INVALID_ARGUMENT);
    pt_clear_error();
    pt_scope_end((pt_scope){0});
    CHECK_LAST(PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "never begun");
    CHECK_INT(in_use(), base + unit);
    /* d and c are still open and end normally */
    pt_clear_error();
    CHECK_OK(pt_scope_end(d));
    CHECK_INT(in_use(), base);
    pt_scope_end(c);
    CHECK_LAST(PT_OK);
    /* a handle of an ended scope, reused level after level, never ends a
     * newer scope at any depth */
    pt_scope old = pt_scope_begin();
    pt_scope_end(old);
    pt_scope fresh = pt_scope_begin();
    CHECK_INT(fresh.level, old.level);
    pt_tensor *u = vec(3);
    pt_clear_error();
    pt_scope_end(old);
    CHECK_LAST(PT_ERR_INVALID_ARGUMENT);
    CHECK_INT(in_use(), base + unit);
    CHECK_DBL(item_at(u, 0), 3, 0);
    pt_clear_error();
    pt_scope_end(fresh);
    CHECK_LAST(PT_OK);
    CHECK_INT(in_use(), base);
}

static void *make_on_thread(void *arg) {
    (void)arg;
    return vec(9); /* no scope on this thread: the caller owns it */
}

static void test_other_thread(void) {
    int64_t base = in_use();
    pt_scope s = pt_scope_begin();
    pthread_t t;
    void *ret = NULL;
    CHECK(pthread_create(&t, NULL, make_on_thread, NULL) == 0);
    pthread_join(t, &ret);
    pt_scope_end(s);
    pt_tensor *x = ret;
    REQUIRE(x);
    CHECK_INT(in_use(), base + unit);
    CHECK_DBL(item_at(x, 1), 9, 0);
    pt_release(x);
}

int main(void) {
    cpu = pt_cpu();
    if (!cpu) {
        printf("no cpu device: %s\n", pt_last_error());
        return 1;
    }
    int64_t before = in_use();
    pt_tensor *probe = vec(0);
    unit = in_use() - before;
    pt_release(probe);
    CHECK(unit >= N * 4);
    test_scope_releases_temporaries();
    test_keep();
    test_nested();
    test_release_and_retain_inside();
    test_other_thread();
    test_stale_handle();
    return check_summary();
}
