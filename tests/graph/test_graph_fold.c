/* Constant folding in graphs (core/runtime/graph_fold.c): fills, and
 * element-wise ops reading only their values, run once at the build and
 * leave the replayed op list, on every backend.
 *
 * - A constant made after an earlier intermediate's last use keeps its
 *   value over replays that rewrite that intermediate (its place in the
 *   arena is its own for the graph's life): each replay, with new inputs,
 *   equals the eager run.
 * - A chain of constants (a fill, then a scaled copy) folds whole.
 * - A fill that a later op writes again (pt_axpy_ into it) is not folded.
 * - A fill whose place over the whole graph would make the arena larger
 *   than the eager peak is not folded.
 * - A random op is not folded: two replays draw different numbers.
 * - PORTABLE_GRAPH_FUSION=off keeps every recorded op a kernel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "portable/portable.h"

#define N 1000

typedef pt_tensor *(*step_fn)(pt_tensor *x);

/* softmax's value is dead after the sum; the fill comes after it */
static pt_tensor *late_constant(pt_tensor *x) {
    int64_t n = N;
    pt_tensor *a = pt_softmax(x, 0);
    pt_tensor *s = pt_sum(a, PT_ALL, false);
    pt_tensor *c = pt_full(pt_tensor_device(x), PT_F32, 1, &n, 2.0);
    return pt_add(pt_mul(x, c), s);
}

/* fill -> mul_scalar, both constant, then used twice */
static pt_tensor *constant_chain(pt_tensor *x) {
    int64_t n = 1;
    pt_tensor *one = pt_ones(pt_tensor_device(x), PT_F32, 0, &n);
    pt_tensor *half = pt_mul_scalar(one, 0.5);
    return pt_sub(pt_mul(pt_softmax(x, 0), half), half);
}

/* zeros written again by an axpy: they vary with x */
static pt_tensor *written_again(pt_tensor *x) {
    int64_t n = N;
    pt_tensor *z = pt_zeros(pt_tensor_device(x), PT_F32, 1, &n);
    if (pt_axpy_(z, 1.0, pt_softmax(x, 0)) != PT_OK) return NULL;
    return pt_mul_scalar(z, 2.0);
}

/* two values die before a late fill: kept over the whole graph, the fill
 * would need an arena past the eager peak, so nothing is folded */
static pt_tensor *fill_past_peak(pt_tensor *x) {
    int64_t n = N;
    pt_tensor *a = pt_softmax(x, 0), *b = pt_exp(x);
    pt_tensor *p = pt_mul(a, b);
    pt_release(a);
    pt_release(b);
    pt_tensor *s = pt_sum(p, PT_ALL, false);
    pt_release(p);
    pt_tensor *c = pt_full(pt_tensor_device(x), PT_F32, 1, &n, 2.0);
    pt_tensor *t = pt_mul(x, c);
    pt_release(c);
    pt_tensor *y = pt_add(t, s);
    pt_release(t);
    pt_release(s);
    return y;
}

static const struct {
    const char *name;
    step_fn fn;
    int folded; /* ops run once at the build */
} cases[] = {{"a constant after a dead intermediate", late_constant, 1},
             {"a chain of constants", constant_chain, 2},
             {"zeros written again", written_again, 0},
             {"a fill the arena cannot keep", fill_past_peak, 0}};

static bool read_all(pt_tensor *y, float *out) {
    return y && pt_to_host(y, out, N * sizeof *out) == PT_OK;
}

/* x's values for round r */
static void set_x(pt_tensor *x, int r) {
    float v[N];
    for (int i = 0; i < N; ++i) v[i] = (float)((i * 37 + r * 101) % 97) / 19.0f - 2.5f;
    int64_t n = N;
    pt_tensor *h = pt_from_data(pt_cpu(), PT_F32, 1, &n, v);
    CHECK_OK(pt_copy_(x, h));
    pt_release(h);
}

static void run_case(pt_device *d, int k, bool fusion_off) {
    int64_t n = N;
    pt_tensor *x = pt_zeros(d, PT_F32, 1, &n);
    REQUIRE(x);
    float eager[N], replayed[N];
    pt_scope scope = pt_scope_begin();
    CHECK_OK(pt_graph_capture_begin(d));
    pt_tensor *y = pt_keep(cases[k].fn(x));
    pt_scope_end(scope);
    pt_graph *g = pt_graph_capture_end(d);
    CHECK_NOT_NULL(g);
    CHECK_NOT_NULL(y);
    if (!g || !y) {
        printf("%s: %s\n", cases[k].name, pt_last_error());
        pt_graph_free(g);
        pt_release(y);
        pt_release(x);
        return;
    }
    pt_graph_stats st;
    CHECK_OK(pt_graph_info(g, &st));
    /* folding takes exactly the constant ops out of the replay; fusion may take more */
    CHECK(st.bytes_planned <= st.bytes_eager_peak);
    if (fusion_off) CHECK_INT(st.kernels, st.ops);
    else CHECK(st.kernels <= st.ops - cases[k].folded);
    printf("%s%s: %lld ops, %lld kernels, arena %lld bytes (eager peak %lld)\n", cases[k].name,
           fusion_off ? " (fusion off)" : "", (long long)st.ops, (long long)st.kernels, (long long)st.bytes_planned,
           (long long)st.bytes_eager_peak);
    for (int r = 0; r < 3; ++r) {
        set_x(x, r);
        CHECK_OK(pt_graph_replay(g));
        CHECK(read_all(y, replayed));
        scope = pt_scope_begin();
        CHECK(read_all(cases[k].fn(x), eager));
        pt_scope_end(scope);
        int bad = -1;
        for (int i = 0; i < N && bad < 0; ++i)
            if (memcmp(&eager[i], &replayed[i], sizeof eager[i]) != 0) bad = i;
        if (bad >= 0)
            printf("%s, replay %d: element %d is %.9g, eagerly %.9g\n", cases[k].name, r + 1, bad, replayed[bad],
                   eager[bad]);
        CHECK(bad < 0);
    }
    pt_graph_free(g);
    pt_release(y);
    pt_release(x);
}

/* rand is never folded: each replay draws anew, so the values change */
static void random_not_folded(pt_device *d) {
    int64_t n = N;
    pt_tensor *x = pt_ones(d, PT_F32, 1, &n);
    REQUIRE(x);
    pt_scope scope = pt_scope_begin();
    CHECK_OK(pt_graph_capture_begin(d));
    pt_tensor *y = pt_keep(pt_mul(pt_rand(d, PT_F32, 1, &n), x));
    pt_scope_end(scope);
    pt_graph *g = pt_graph_capture_end(d);
    CHECK_NOT_NULL(g);
    float a[N], b[N];
    CHECK_OK(pt_graph_replay(g));
    CHECK(read_all(y, a));
    CHECK_OK(pt_graph_replay(g));
    CHECK(read_all(y, b));
    CHECK(memcmp(a, b, sizeof a) != 0);
    pt_graph_free(g);
    pt_release(y);
    pt_release(x);
}

int main(void) {
    pt_device *d = pt_default_device();
    if (!d) {
        printf("skip: %s\n", pt_last_error());
        return 77;
    }
    for (int off = 0; off < 2; ++off) {
        if (off) setenv("PORTABLE_GRAPH_FUSION", "off", 1);
        for (int k = 0; k < (int)(sizeof cases / sizeof cases[0]); ++k) run_case(d, k, off);
    }
    unsetenv("PORTABLE_GRAPH_FUSION");
    random_not_folded(d);
    return check_summary();
}
