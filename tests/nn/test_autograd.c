/* Autograd semantics: accumulation across backward calls, pt_zero_grad,
 * grad mode (nesting, per thread), errors, freeing the graph (measured with
 * the allocator's counters), long chains, scopes. Values are asserted
 * exactly where the arithmetic is exact. Runs on pt_default_device(). */
#include <pthread.h>
#include <string.h>

#include "nn_test.h"

static pt_device *dev;

static pt_tensor *vec(const float *v, int64_t n) { return pt_from_data(dev, PT_F32, 1, &n, v); }

static bool values_are(pt_tensor *t, const float *want, int64_t n) {
    float got[16];
    if (!t || n > 16 || pt_tensor_numel(t) != n || pt_to_host(t, got, sizeof got) != PT_OK) return false;
    for (int64_t i = 0; i < n; ++i)
        if (got[i] != want[i]) {
            printf("  element %lld: got %g, want %g\n", (long long)i, got[i], want[i]);
            return false;
        }
    return true;
}

/* loss = sum(x * x) */
static pt_tensor *square_sum(pt_tensor *x) {
    pt_tensor *sq = pt_mul(x, x);
    pt_tensor *l = pt_sum(sq, PT_ALL, false);
    pt_release(sq);
    return l;
}

static void test_accumulation(void) {
    const float xv[3] = {1, -2, 3};
    pt_tensor *x = vec(xv, 3);
    NN_CHECK(pt_set_requires_grad(x, true) == PT_OK && pt_requires_grad(x), "mark leaf");
    NN_CHECK(pt_grad(x) == NULL, "no gradient before any backward");

    pt_tensor *l = square_sum(x);
    NN_CHECK(pt_requires_grad(l), "op result requires grad");
    NN_CHECK(pt_backward(l) == PT_OK, "backward");
    pt_release(l);
    pt_tensor *g = pt_grad(x);
    const float two_x[3] = {2, -4, 6};
    NN_CHECK(values_are(g, two_x, 3), "d sum(x^2)/dx = 2x");

    l = square_sum(x);
    NN_CHECK(pt_backward(l) == PT_OK, "second backward");
    pt_release(l);
    const float four_x[3] = {4, -8, 12};
    /* The tensor handed out earlier is the one accumulated into, like .grad. */
    NN_CHECK(values_are(g, four_x, 3), "gradients accumulate in place across backward calls");
    pt_release(g);

    NN_CHECK(pt_zero_grad(x) == PT_OK && pt_grad(x) == NULL, "zero_grad drops the gradient");
    l = square_sum(x);
    pt_backward(l);
    pt_release(l);
    g = pt_grad(x);
    NN_CHECK(values_are(g, two_x, 3), "fresh gradient after zero_grad");
    pt_release(g);

    /* sum's gradient is a broadcast (stride-0) view of one element: it must
     * be copied in, then added in place without writing through the view. */
    pt_zero_grad(x);
    for (int i = 0; i < 3; ++i) {
        l = pt_sum(x, PT_ALL, false);
        pt_backward(l);
        pt_release(l);
    }
    g = pt_grad(x);
    const float threes[3] = {3, 3, 3};
    NN_CHECK(values_are(g, threes, 3), "three backwards of sum(x): gradient 3 everywhere");
    pt_release(g);
    pt_release(x);
}

/* A leaf keeps a derivative's fresh result as its .grad when nothing else
 * holds it (no copy), and later backward calls add into it in place: that
 * must never write into another leaf's gradient or a value still in use. */
static void test_kept_gradients(void) {
    const float av[3] = {1, 2, 3}, bv[3] = {4, 5, 6};
    pt_tensor *a = vec(av, 3), *b = vec(bv, 3);
    pt_set_requires_grad(a, true);
    pt_set_requires_grad(b, true);
    /* add hands one gradient to both inputs: they must not share it */
    for (int i = 0; i < 2; ++i) {
        pt_scope scope = pt_scope_begin(); /* the step's temporaries */
        pt_tensor *l = pt_sum(pt_add(pt_add(a, b), pt_mul(a, b)), PT_ALL, false);
        NN_CHECK(pt_backward(l) == PT_OK, "backward of sum(a + b + a * b)");
        pt_scope_end(scope);
    }
    pt_tensor *ga = pt_grad(a), *gb = pt_grad(b);
    const float want_a[3] = {10, 12, 14}, want_b[3] = {4, 6, 8}; /* 2 (1 + b), 2 (1 + a) */
    NN_CHECK(values_are(ga, want_a, 3) && values_are(gb, want_b, 3),
             "two backwards: each input's gradient is its own, accumulated in place");
    pt_release(ga);
    pt_release(gb);

    /* a linear layer's weight gets its product gradient through a
     * transpose: kept too, then accumulated, with and without x's own */
    const float wv[6] = {1, 0, -1, 2, 1, 0};
    const float x4[12] = {1, 2, 3, 4, -1, 0, 2, 1, 1, 0, 1, -2};
    for (int with_x = 0; with_x < 2; ++with_x) {
        pt_tensor *w = pt_from_data(dev, PT_F32, 2, (const int64_t[]){2, 3}, wv);
        pt_tensor *x = pt_from_data(dev, PT_F32, 2, (const int64_t[]){4, 3}, x4);
        pt_set_requires_grad(w, true);
        if (with_x) pt_set_requires_grad(x, true);
        for (int i = 0; i < 2; ++i) {
            pt_scope scope = pt_scope_begin();
            pt_tensor *y = pt_matmul(x, pt_transpose(w, 0, 1)); /* [4, 2] */
            NN_CHECK(pt_backward(pt_sum(pt_mul(y, y), PT_ALL, false)) == PT_OK, "backward through x w^T");
            pt_scope_end(scope);
        }
        /* d sum(y^2)/dw = 2 y^T x, twice; y = x w^T */
        float want[6] = {0};
        for (int r = 0; r < 4; ++r)
            for (int o = 0; o < 2; ++o) {
                float yv = 0;
                for (int k = 0; k < 3; ++k) yv += x4[r * 3 + k] * wv[o * 3 + k];
                for (int k = 0; k < 3; ++k) want[o * 3 + k] += 4 * yv * x4[r * 3 + k];
            }
        pt_tensor *gw = pt_grad(w);
        NN_CHECK(values_are(gw, want, 6), with_x ? "weight gradient, x requiring grad too" : "weight gradient");
        float wnow[6];
        NN_CHECK(pt_to_host(w, wnow, sizeof wnow) == PT_OK && !memcmp(wnow, wv, sizeof wnow),
                 "the weight itself is untouched by its gradient's accumulation");
        pt_release(gw);
        pt_release(w);
        pt_release(x);
    }
    pt_release(a);
    pt_release(b);
}

static void test_errors(void) {
    const float xv[3] = {1, 2, 3};
    pt_tensor *x = vec(xv, 3);
    pt_set_requires_grad(x, true);
    pt_tensor *y = pt_mul_scalar(x, 2.0);
    NN_CHECK(pt_backward(y) == PT_ERR_SHAPE, "backward of a 3-element tensor is PT_ERR_SHAPE");
    NN_CHECK(strstr(pt_last_error(), "exactly one element") != NULL, "message says why: %s", pt_last_error());
    NN_CHECK(pt_set_requires_grad(y, false) == PT_ERR_INVALID_ARGUMENT, "an op result is not a leaf");

    pt_tensor *plain = vec(xv, 3);
    pt_tensor *s = pt_sum(plain, PT_ALL, false);
    NN_CHECK(pt_backward(s) == PT_ERR_INVALID_ARGUMENT, "backward of a tensor without history");

    int32_t iv[2] = {1, 2};
    int64_t two = 2;
    pt_tensor *ints = pt_from_data(dev, PT_I32, 1, &two, iv);
    NN_CHECK(pt_set_requires_grad(ints, true) == PT_ERR_DTYPE, "integer tensors cannot require grad");

    pt_tensor *am = pt_argmax(x, 0, false);
    NN_CHECK(am && !pt_requires_grad(am), "argmax (integer) carries no history");

    pt_clear_error();
    NN_CHECK(pt_backward(NULL) == PT_ERR_INVALID_ARGUMENT, "backward(NULL)");
    NN_CHECK(pt_zero_grad(NULL) == PT_ERR_INVALID_ARGUMENT, "zero_grad(NULL)");

    /* A graph can be differentiated once. */
    pt_tensor *l = square_sum(x);
    NN_CHECK(pt_backward(l) == PT_OK, "first backward");
    pt_tensor *g = pt_grad(x);
    NN_CHECK(pt_backward(l) == PT_ERR_INVALID_ARGUMENT, "second backward through a freed graph");
    NN_CHECK(strstr(pt_last_error(), "already freed") != NULL, "message: %s", pt_last_error());
    const float two_x[3] = {2, 4, 6};
    NN_CHECK(values_are(g, two_x, 3), "the failed backward added nothing");
    pt_release(g);
    pt_release(l);

    /* A leaf as the loss. */
    const float one = 5;
    int64_t n1 = 1;
    pt_tensor *leaf = pt_from_data(dev, PT_F32, 1, &n1, &one);
    pt_set_requires_grad(leaf, true);
    NN_CHECK(pt_backward(leaf) == PT_OK, "backward of a one-element leaf");
    g = pt_grad(leaf);
    const float unit = 1;
    NN_CHECK(values_are(g, &unit, 1), "d leaf / d leaf = 1");
    pt_release(g);

    pt_release(leaf);
    pt_release(am);
    pt_release(ints);
    pt_release(s);
    pt_release(plain);
    pt_release(y);
    pt_release(x);
    pt_clear_error();
}

/* Where finite differences cannot look: ties. maximum/minimum split the
 * gradient evenly between equal operands (like PyTorch); max sends all of
 * it to the first maximum (pt_argmax). */
static void test_ties(void) {
    const float av[3] = {1, 5, 2}, bv[3] = {1, 3, 2};
    pt_tensor *a = vec(av, 3), *b = vec(bv, 3);
    pt_set_requires_grad(a, true);
    pt_set_requires_grad(b, true);
    pt_tensor *m = pt_maximum(a, b);
    pt_tensor *l = pt_sum(m, PT_ALL, false);
    NN_CHECK(pt_backward(l) == PT_OK, "backward of maximum");
    pt_tensor *ga = pt_grad(a), *gb = pt_grad(b);
    const float want_a[3] = {0.5f, 1, 0.5f}, want_b[3] = {0.5f, 0, 0.5f};
    NN_CHECK(values_are(ga, want_a, 3) && values_are(gb, want_b, 3), "maximum: ties split 0.5 / 0.5");
    pt_release(ga);
    pt_release(gb);
    pt_release(l);
    pt_release(m);
    pt_zero_grad(a);

    const float tv[4] = {3, 7, 7, 1};
    pt_tensor *t = vec(tv, 4);
    pt_set_requires_grad(t, true);
    pt_tensor *mx = pt_max(t, 0, false);
    NN_CHECK(pt_backward(mx) == PT_OK, "backward of max");
    pt_tensor *gt = pt_grad(t);
    const float want_t[4] = {0, 1, 0, 0};
    NN_CHECK(values_are(gt, want_t, 4), "max: the whole gradient to the first maximum");
    pt_release(gt);
    pt_release(mx);
    pt_release(t);
    pt_release(a);
    pt_release(b);
}

static void *grad_mode_in_thread(void *arg) {
    *(bool *)arg = pt_grad_enabled();
    return NULL;
}

static void test_no_grad(void) {
    const float xv[2] = {1, 2};
    pt_tensor *x = vec(xv, 2);
    pt_set_requires_grad(x, true);
    NN_CHECK(pt_grad_enabled(), "grad mode on by default");
    pt_no_grad_begin();
    pt_no_grad_begin();
    pt_tensor *a = pt_mul_scalar(x, 3.0);
    NN_CHECK(!pt_requires_grad(a), "nothing recorded in no-grad mode");
    NN_CHECK(pt_no_grad_end() == PT_OK && !pt_grad_enabled(), "inner end: still off (nested)");

    bool other = false;
    pthread_t t;
    pthread_create(&t, NULL, grad_mode_in_thread, &other);
    pthread_join(t, NULL);
    NN_CHECK(other, "grad mode is per thread");

    NN_CHECK(pt_no_grad_end() == PT_OK && pt_grad_enabled(), "outer end: on again");
    NN_CHECK(pt_no_grad_end() == PT_ERR_INVALID_ARGUMENT, "unbalanced end is an error");
    pt_tensor *b = pt_mul_scalar(x, 3.0);
    NN_CHECK(pt_requires_grad(b), "recording resumes");

    pt_tensor *d = pt_detach(b);
    NN_CHECK(d && !pt_requires_grad(d) && pt_tensor_shares_storage(d, b), "detach: same storage, no history");
    pt_release(d);
    pt_release(b);
    pt_release(a);
    pt_release(x);
    pt_clear_error();
}

static int64_t in_use(void) {
    pt_memory_usage u;
    return pt_memory_stats(dev, &u) == PT_OK ? u.in_use : -1;
}

/* The graph's saved values go when backward finishes, and the whole graph
 * when its tensors are released without a backward. */
static void test_graph_memory(void) {
    int64_t n = 4096; /* 16 KiB per f32 tensor */
    pt_tensor *x = pt_rand(dev, PT_F32, 1, &n);
    pt_set_requires_grad(x, true);
    int64_t base = in_use();

    /* Without backward: build, release the root, all gone. */
    pt_tensor *a = pt_exp(x);
    pt_tensor *b = pt_tanh(a);
    pt_tensor *c = pt_mul(a, b);
    pt_release(a);
    pt_release(b);
    int64_t held = in_use();
    NN_CHECK(held >= base + 3 * n * 4, "a, b, c kept alive by the graph (%lld over base)", (long long)(held - base));
    pt_release(c);
    NN_CHECK(in_use() == base, "releasing the root frees the graph (in use %lld, base %lld)", (long long)in_use(),
             (long long)base);

    /* With backward: keep only the loss; the saved values go at backward. */
    a = pt_exp(x);
    b = pt_tanh(a);
    c = pt_mul(a, b);
    pt_tensor *l = pt_sum(c, PT_ALL, false);
    pt_release(a);
    pt_release(b);
    pt_release(c);
    NN_CHECK(pt_backward(l) == PT_OK, "backward");
    int64_t after = in_use();
    /* What may remain: x's gradient (16 KiB) and the loss (one block). */
    NN_CHECK(after - base <= n * 4 + 4096, "after backward only the gradient and loss remain (%lld over base)",
             (long long)(after - base));
    pt_release(l);
    pt_zero_grad(x);
    NN_CHECK(in_use() == base, "everything back (in use %lld, base %lld)", (long long)in_use(), (long long)base);
    pt_release(x);
}

/* A chain far longer than any recursion would survive. */
static void test_long_chain(void) {
    const float one = 1;
    int64_t n1 = 1;
    pt_tensor *x = pt_from_data(dev, PT_F32, 1, &n1, &one);
    pt_set_requires_grad(x, true);
    pt_tensor *cur = pt_retain(x);
    const int steps = 20000;
    for (int i = 0; i < steps && cur; ++i) {
        pt_tensor *next = pt_add_scalar(cur, 0.5);
        pt_release(cur);
        cur = next;
    }
    NN_CHECK(cur != NULL, "chain built");
    pt_tensor *l = pt_sum(cur, PT_ALL, false);
    NN_CHECK(pt_backward(l) == PT_OK, "backward through %d ops", steps);
    pt_tensor *g = pt_grad(x);
    NN_CHECK(values_are(g, &one, 1), "d/dx (x + 0.5 n) = 1");
    pt_release(g);
    pt_release(l);
    pt_release(cur);

    /* The same length released without backward (freed by the worklist). */
    cur = pt_retain(x);
    for (int i = 0; i < steps && cur; ++i) {
        pt_tensor *next = pt_mul_scalar(cur, 1.0);
        pt_release(cur);
        cur = next;
    }
    pt_release(cur);
    NN_CHECK(true, "released a %d-op graph without backward", steps);
    pt_release(x);
}

/* Autograd inside a user's scope: temporaries go with the scope, the
 * gradient survives it, nothing is released twice (ASan checks). */
static void test_scopes(void) {
    const float xv[3] = {1, 2, 3};
    pt_tensor *x = vec(xv, 3);
    pt_set_requires_grad(x, true);
    pt_scope s = pt_scope_begin();
    pt_tensor *y = pt_mul(x, x);
    pt_tensor *l = pt_sum(y, PT_ALL, false);
    NN_CHECK(pt_backward(l) == PT_OK, "backward inside a scope");
    pt_tensor *g = pt_grad(x);
    pt_keep(g);
    pt_scope_end(s);
    const float two_x[3] = {2, 4, 6};
    NN_CHECK(values_are(g, two_x, 3), "gradient kept past the scope");
    pt_release(g);
    g = pt_grad(x);
    NN_CHECK(values_are(g, two_x, 3), "the leaf still holds its gradient after the scope");
    pt_release(g);

    /* Reading a gradient inside a scope and releasing it there: the .grad
     * the leaf holds must survive the scope, and the next backward adds to
     * it (AddressSanitizer reports a use after free otherwise). */
    s = pt_scope_begin();
    g = pt_grad(x);
    pt_release(g);
    pt_scope_end(s);
    pt_tensor *l2 = square_sum(x);
    NN_CHECK(pt_backward(l2) == PT_OK, "backward after reading .grad in a scope");
    pt_release(l2);
    g = pt_grad(x);
    const float four_x[3] = {4, 8, 12};
    NN_CHECK(values_are(g, four_x, 3), "the leaf's gradient survived the scope and accumulated");
    pt_release(g);
    pt_release(x);

    /* A leaf released by the user inside a scope while a graph still holds
     * it: the scope's end frees the graph, then the leaf, once each. */
    s = pt_scope_begin();
    pt_tensor *leaf = vec(xv, 3);
    pt_set_requires_grad(leaf, true);
    pt_tensor *twice = pt_mul_scalar(leaf, 2.0);
    pt_release(leaf);
    NN_CHECK(twice && pt_requires_grad(twice), "graph holds the released leaf");
    pt_scope_end(s);
    NN_CHECK(true, "scope end freed the graph and its leaf once");
}

int main(void) {
    nn_begin();
    dev = nn_device_or_skip();
    printf("autograd semantics on %s\n", pt_device_name(dev));
    test_accumulation();
    test_kept_gradients();
    test_errors();
    test_no_grad();
    test_ties();
    test_graph_memory();
    test_long_chain();
    test_scopes();
    return nn_finish();
}
