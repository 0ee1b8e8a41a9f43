/* The gradient-ready hook (pt_set_grad_ready_hook, what pt_ddp starts its
 * buckets from), on its own, in one process: it is called exactly once per
 * hooked leaf and backward, after the last gradient that backward sends the
 * leaf (checked by reading .grad inside the hook: it must already be the
 * final value), also for a leaf used several times in the graph (twice in
 * one op and once more elsewhere); never for a leaf the loss does not
 * depend on; with grad mode off; a failing hook stops the backward with its
 * status; NULL removes it; bad arguments are refused. Values are exact in
 * f32. Runs on pt_default_device(). */
#include <string.h>

#include "nn_test.h"

static pt_device *dev;

typedef struct seen {
    int calls;
    bool grad_mode;     /* pt_grad_enabled() inside the hook */
    float grad[4];      /* pt_grad(leaf) when the hook ran */
    pt_tensor *leaf;    /* the leaf the hook was given */
    pt_status answer;   /* what the hook returns */
} seen;

static pt_status record(pt_tensor *leaf, void *user) {
    seen *s = user;
    s->calls++;
    s->leaf = leaf;
    s->grad_mode = pt_grad_enabled();
    pt_tensor *g = pt_grad(leaf);
    memset(s->grad, 0, sizeof s->grad);
    if (g) pt_to_host(g, s->grad, (size_t)pt_tensor_numel(g) * sizeof(float));
    pt_release(g);
    if (s->answer) return pt_set_error(s->answer, "test hook", "refused on purpose");
    return PT_OK;
}

static pt_tensor *vec(const float *v) { return pt_from_data(dev, PT_F32, 1, (int64_t[]){2}, v); }

static bool same2(const float *got, const float *want) {
    if (got[0] == want[0] && got[1] == want[1]) return true;
    printf("  got {%g, %g}, want {%g, %g}\n", got[0], got[1], want[0], want[1]);
    return false;
}

/* loss = sum((w * x) * v) + sum(w * w): w gets three gradients (one from
 * w * x, deep in the graph, two from w * w next to the loss), v one, u none.
 * dloss/dw = x * v + 2 w, dloss/dv = w * x. */
static pt_tensor *forward(pt_tensor *w, pt_tensor *v, pt_tensor *x) {
    pt_tensor *deep = pt_sum(pt_mul(pt_mul(w, x), v), PT_ALL, false);
    pt_tensor *near = pt_sum(pt_mul(w, w), PT_ALL, false);
    return pt_add(deep, near);
}

static void test_once_after_last(void) {
    pt_scope scope = pt_scope_begin();
    const float xv[2] = {1, 2}, wv[2] = {3, -1}, vv[2] = {0.5f, 2}, uv[2] = {7, 7};
    pt_tensor *x = vec(xv), *w = vec(wv), *v = vec(vv), *u = vec(uv);
    pt_set_requires_grad(w, true);
    pt_set_requires_grad(v, true);
    pt_set_requires_grad(u, true);
    seen sw = {0}, sv = {0}, su = {0};
    NN_CHECK(pt_set_grad_ready_hook(w, record, &sw) == PT_OK && pt_set_grad_ready_hook(v, record, &sv) == PT_OK &&
                 pt_set_grad_ready_hook(u, record, &su) == PT_OK,
             "hooks set");

    NN_CHECK(pt_backward(forward(w, v, x)) == PT_OK, "backward");
    const float dw[2] = {1 * 0.5f + 2 * 3, 2 * 2 + 2 * -1}, dv[2] = {3, -2};
    NN_CHECK(sw.calls == 1, "w (three gradients in this backward) hooked once, got %d calls", sw.calls);
    NN_CHECK(sv.calls == 1, "v hooked once, got %d calls", sv.calls);
    NN_CHECK(su.calls == 0, "u (not in the graph) never hooked, got %d calls", su.calls);
    NN_CHECK(same2(sw.grad, dw), "w's .grad inside its hook is already the sum of all three gradients");
    NN_CHECK(same2(sv.grad, dv), "v's .grad inside its hook is final");
    NN_CHECK(sw.leaf == w && sv.leaf == v, "the hook gets the hooked leaf");
    NN_CHECK(!sw.grad_mode && !sv.grad_mode, "grad mode is off inside the hook");

    /* A second forward + backward: once more each, after accumulation. */
    NN_CHECK(pt_backward(forward(w, v, x)) == PT_OK, "second backward");
    const float dw2[2] = {2 * dw[0], 2 * dw[1]}, dv2[2] = {2 * dv[0], 2 * dv[1]};
    NN_CHECK(sw.calls == 2 && sv.calls == 2, "once per backward: w %d, v %d calls", sw.calls, sv.calls);
    NN_CHECK(same2(sw.grad, dw2) && same2(sv.grad, dv2), "second backward: hook sees the accumulated gradient");

    /* A backward that reaches only v (w's hook stays quiet). */
    NN_CHECK(pt_backward(pt_sum(pt_mul(v, x), PT_ALL, false)) == PT_OK, "backward through v only");
    NN_CHECK(sw.calls == 2 && sv.calls == 3, "only v hooked: w %d, v %d calls", sw.calls, sv.calls);

    /* The loss itself a leaf (pt_backward's shortcut). */
    const float one[1] = {4};
    pt_tensor *s = pt_from_data(dev, PT_F32, 1, (int64_t[]){1}, one);
    pt_set_requires_grad(s, true);
    seen ss = {0};
    pt_set_grad_ready_hook(s, record, &ss);
    NN_CHECK(pt_backward(s) == PT_OK && ss.calls == 1 && ss.grad[0] == 1, "a leaf loss is hooked once, grad 1");

    /* NULL removes it. */
    NN_CHECK(pt_set_grad_ready_hook(w, NULL, NULL) == PT_OK, "remove w's hook");
    NN_CHECK(pt_backward(forward(w, v, x)) == PT_OK && sw.calls == 2 && sv.calls == 4,
             "removed hook not called: w %d, v %d calls", sw.calls, sv.calls);
    pt_scope_end(scope);
}

static void test_failing_hook(void) {
    pt_scope scope = pt_scope_begin();
    const float xv[2] = {1, 2}, wv[2] = {3, -1}, vv[2] = {0.5f, 2};
    pt_tensor *x = vec(xv), *w = vec(wv), *v = vec(vv);
    pt_set_requires_grad(w, true);
    pt_set_requires_grad(v, true);
    seen sw = {.answer = PT_ERR_BACKEND}, sv = {0};
    pt_set_grad_ready_hook(w, record, &sw);
    pt_set_grad_ready_hook(v, record, &sv);
    pt_status s = pt_backward(forward(w, v, x));
    NN_CHECK(s == PT_ERR_BACKEND && strstr(pt_last_error(), "refused on purpose"),
             "a hook's error stops the backward and comes back from it (status %d)", (int)s);
    NN_CHECK(sw.calls == 1, "the failing hook ran once (%d)", sw.calls);
    pt_scope_end(scope);
}

static void test_bad_arguments(void) {
    pt_scope scope = pt_scope_begin();
    seen s = {0};
    NN_CHECK(pt_set_grad_ready_hook(NULL, record, &s) == PT_ERR_INVALID_ARGUMENT &&
                 strstr(pt_last_error(), "pt_set_grad_ready_hook"),
             "NULL leaf refused");
    const float wv[2] = {3, -1};
    pt_tensor *w = vec(wv);
    pt_set_requires_grad(w, true);
    pt_tensor *y = pt_mul(w, w);
    NN_CHECK(pt_set_grad_ready_hook(y, record, &s) == PT_ERR_INVALID_ARGUMENT && strstr(pt_last_error(), "not a leaf"),
             "an op's result refused");
    pt_scope_end(scope);
}

int main(void) {
    nn_begin();
    dev = nn_device_or_skip();
    printf("gradient-ready hook on %s\n", pt_device_name(dev));
    test_once_after_last();
    test_failing_hook();
    test_bad_arguments();
    return nn_finish();
}
