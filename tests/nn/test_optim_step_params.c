/* pt_optimizer_step_params: stepping the parameters in disjoint subsets
 * (in another order than the module's) must give, bit for bit, what one
 * pt_optimizer_step gives, for every optimizer kind, over several steps (so
 * that momentum buffers and Adam's moments and step counts are carried
 * along per parameter). The net has a batch norm, so its buffers are in the
 * state dict too: listing one is allowed and changes nothing. Bad
 * arguments are refused with a message and update nothing. */
#include <string.h>

#include "nn_test.h"

#define STEPS 4
#define NP 8 /* state-dict entries: 0.weight 0.bias 1.weight 1.bias 1.running_mean 1.running_var 1.num_batches_tracked ... */

static pt_module *make_net(void) {
    pt_manual_seed(7);
    pt_module *layers[] = {pt_linear_sized(4, 6), pt_batch_norm2d(1e-5, 0.1), pt_relu_module(), pt_linear_sized(6, 3)};
    return pt_sequential(4, layers);
}

static pt_tensor *loss_of(pt_module *net, int step) {
    float x[5 * 4];
    int64_t y[5];
    for (int i = 0; i < 20; ++i) x[i] = (float)(((i * 7 + step * 3) % 11) - 5) / 4.0f;
    for (int i = 0; i < 5; ++i) y[i] = (i + step) % 3;
    pt_tensor *xt = pt_from_data(pt_cpu(), PT_F32, 2, (int64_t[]){5, 4}, x);
    pt_tensor *yt = pt_from_data(pt_cpu(), PT_I64, 1, (int64_t[]){5}, y);
    return pt_cross_entropy(pt_module_forward(net, xt), yt);
}

/* Whether every state-dict tensor of a and b has the same bytes. */
static bool same_bits(pt_module *a, pt_module *b) {
    pt_tensor *pa[16], *pb[16];
    int n = pt_module_parameters(a, NULL, pa, 16);
    if (n != pt_module_parameters(b, NULL, pb, 16)) return false;
    for (int i = 0; i < n; ++i) {
        size_t bytes = (size_t)pt_tensor_numel(pa[i]) * pt_dtype_size(pt_tensor_dtype(pa[i]));
        char *x = malloc(bytes), *y = malloc(bytes);
        bool same = pt_to_host(pa[i], x, bytes) == PT_OK && pt_to_host(pb[i], y, bytes) == PT_OK &&
                    memcmp(x, y, bytes) == 0;
        free(x);
        free(y);
        if (!same) return false;
    }
    return true;
}

typedef pt_optimizer *(*make_opt)(pt_module *);
static pt_optimizer *sgd_plain(pt_module *m) { return pt_sgd(m, 0.1, 0.0, 0.0); }
static pt_optimizer *sgd_momentum(pt_module *m) { return pt_sgd(m, 0.1, 0.9, 1e-3); }
static pt_optimizer *adam_plain(pt_module *m) { return pt_adam(m, 1e-2, 0.9, 0.999, 1e-8, 0.0); }
static pt_optimizer *adam_decay(pt_module *m) { return pt_adam(m, 1e-2, 0.8, 0.99, 1e-6, 1e-2); }

/* One kind: net a takes full steps, net b the same steps in three subsets,
 * the last parameters first. */
static void check_kind(const char *name, make_opt make) {
    pt_module *a = make_net(), *b = make_net();
    pt_optimizer *oa = make(a), *ob = make(b);
    NN_CHECK(a && b && oa && ob, "%s: set-up", name);
    if (!a || !b || !oa || !ob) return;
    for (int step = 0; step < STEPS; ++step) {
        pt_scope s = pt_scope_begin();
        pt_status st = pt_optimizer_zero_grad(oa);
        if (!st) st = pt_optimizer_zero_grad(ob);
        if (!st) st = pt_backward(loss_of(a, step));
        if (!st) st = pt_backward(loss_of(b, step));
        if (!st) st = pt_optimizer_step(oa);
        pt_tensor *p[16];
        int n = pt_module_parameters(b, NULL, p, 16);
        NN_CHECK(n >= NP, "%s: %d state-dict entries", name, n);
        /* {last two}, {buffers + first weight}, {the rest}: every entry once. */
        pt_tensor *last[2] = {p[n - 1], p[n - 2]};
        pt_tensor *mid[4] = {p[4], p[5], p[6], p[0]};
        pt_tensor *rest[16];
        int nrest = 0;
        for (int i = 1; i < n - 2; ++i)
            if (i < 4 || i > 6) rest[nrest++] = p[i];
        if (!st) st = pt_optimizer_step_params(ob, last, 2);
        if (!st) st = pt_optimizer_step_params(ob, mid, 4);
        if (!st) st = pt_optimizer_step_params(ob, rest, nrest);
        NN_CHECK(st == PT_OK, "%s step %d: %s", name, step, pt_status_name(st));
        NN_CHECK(same_bits(a, b), "%s step %d: subsets differ from one full step", name, step);
        pt_scope_end(s);
    }
    pt_optimizer_free(oa);
    pt_optimizer_free(ob);
    pt_module_free(a);
    pt_module_free(b);
}

/* Bad arguments: an error naming the problem, and no parameter changes. */
static void check_errors(void) {
    pt_module *a = make_net(), *ref = make_net(), *other = make_net();
    pt_optimizer *o = pt_sgd(a, 0.1, 0.9, 0.0), *oref = pt_sgd(ref, 0.1, 0.9, 0.0);
    pt_scope s = pt_scope_begin();
    pt_backward(loss_of(a, 0));
    pt_backward(loss_of(ref, 0));
    pt_tensor *p[16], *q[16];
    int n = pt_module_parameters(a, NULL, p, 16);
    pt_module_parameters(other, NULL, q, 16);

    NN_CHECK(pt_optimizer_step_params(NULL, p, 1) == PT_ERR_INVALID_ARGUMENT &&
                 strstr(pt_last_error(), "pt_optimizer_step_params") && strstr(pt_last_error(), "NULL"),
             "NULL optimizer");
    NN_CHECK(pt_optimizer_step_params(o, p, -1) == PT_ERR_INVALID_ARGUMENT && strstr(pt_last_error(), "-1"),
             "negative count");
    NN_CHECK(pt_optimizer_step_params(o, NULL, 2) == PT_ERR_INVALID_ARGUMENT && strstr(pt_last_error(), "NULL"),
             "NULL params");
    pt_tensor *foreign[2] = {p[0], q[1]};
    NN_CHECK(pt_optimizer_step_params(o, foreign, 2) == PT_ERR_INVALID_ARGUMENT &&
                 strstr(pt_last_error(), "params[1]") && strstr(pt_last_error(), "not a parameter"),
             "a tensor of another module: '%s'", pt_last_error());
    pt_tensor *twice[3] = {p[1], p[0], p[1]};
    NN_CHECK(pt_optimizer_step_params(o, twice, 3) == PT_ERR_INVALID_ARGUMENT &&
                 strstr(pt_last_error(), "params[0] and params[2]") && strstr(pt_last_error(), "0.bias"),
             "a parameter twice: '%s'", pt_last_error());
    pt_tensor *with_null[2] = {p[0], NULL};
    NN_CHECK(pt_optimizer_step_params(o, with_null, 2) == PT_ERR_INVALID_ARGUMENT &&
                 strstr(pt_last_error(), "params[1] is NULL"),
             "a NULL entry: '%s'", pt_last_error());
    NN_CHECK(same_bits(a, ref), "a refused call changed parameters");
    /* count 0 is a valid no-op; a full step afterwards is still the same
     * as the reference's (no state was advanced by the refused calls). */
    NN_CHECK(pt_optimizer_step_params(o, NULL, 0) == PT_OK, "count 0");
    NN_CHECK(pt_optimizer_step_params(o, p, n) == PT_OK && pt_optimizer_step(oref) == PT_OK, "all at once");
    NN_CHECK(same_bits(a, ref), "every parameter listed != pt_optimizer_step");
    pt_scope_end(s);
    pt_optimizer_free(o);
    pt_optimizer_free(oref);
    pt_module_free(a);
    pt_module_free(ref);
    pt_module_free(other);
}

int main(void) {
    nn_begin();
    check_kind("sgd", sgd_plain);
    check_kind("sgd momentum + weight decay", sgd_momentum);
    check_kind("adam", adam_plain);
    check_kind("adam + weight decay", adam_decay);
    check_errors();
    return nn_finish();
}
