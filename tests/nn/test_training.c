/* The cross-backend training test: the same run (fixed seeds, the digits
 * data, MLP 64 -> 256 -> 10, SGD with momentum) on cpu and on opencl:0 must
 * start from bit-identical parameters (Philox), give loss curves equal
 * within 1e-4 relative at every step, and reach >= 95% test accuracy on
 * both. Exits 77 (skip) when no OpenCL device is available, after checking
 * the cpu run on its own.
 *
 *   test_training [path/to/digits.csv.gz] */
#include <string.h>

#include "digits_train.h" /* the model and the step, shared with bench/bench_mlp.c */
#include "nn_test.h"

#define BATCH DIGITS_BATCH
#define EPOCHS 15 /* as examples/mlp_digits.c */
#define MAX_STEPS 1024

typedef struct run_result {
    int steps;
    double loss[MAX_STEPS];
    double accuracy;
    float init_weight[8]; /* the first elements of "0.weight" after creation */
} run_result;

static bool train(pt_device *dev, const digits *tr, const digits *te, run_result *r) {
    memset(r, 0, sizeof *r);
    pt_manual_seed(0);
    pt_module *net = digits_mlp();
    pt_optimizer *opt = digits_sgd(net);
    int *order = malloc((size_t)tr->n * sizeof *order);
    float *px = malloc((size_t)BATCH * DIGITS_FEATURES * sizeof *px);
    int64_t *lb = malloc(BATCH * sizeof *lb);
    bool ok = net && opt && order && px && lb;
    for (int epoch = 0; ok && epoch < EPOCHS; ++epoch) {
        digits_permutation(tr->n, 1000 + (uint64_t)epoch + 1, order); /* epochs count from 1 there */
        for (int first = 0; ok && first < tr->n && r->steps < MAX_STEPS; first += BATCH) {
            int count = tr->n - first < BATCH ? tr->n - first : BATCH;
            pt_scope scope = pt_scope_begin();
            pt_tensor *loss = digits_batch_loss(dev, net, tr, order, first, count, px, lb);
            if (r->steps == 0) { /* the parameters exist now (first forward) and are not yet updated */
                pt_tensor *w = pt_module_parameter(net, "0.weight");
                pt_tensor *head = pt_narrow(pt_reshape(w, 1, (int64_t[]){pt_tensor_numel(w)}), 0, 0, 8);
                ok = head && pt_to_host(head, r->init_weight, sizeof r->init_weight) == PT_OK;
            }
            ok = ok && digits_update(opt, loss) == PT_OK;
            r->loss[r->steps++] = ok ? pt_item(loss) : NAN;
            pt_scope_end(scope);
        }
    }
    if (ok) {
        pt_scope scope = pt_scope_begin();
        pt_no_grad_begin();
        int64_t xs[2] = {te->n, DIGITS_FEATURES}, ys[1] = {te->n};
        pt_tensor *x = pt_from_data(dev, PT_F32, 2, xs, te->pixels);
        pt_tensor *y = pt_from_data(dev, PT_I64, 1, ys, te->labels);
        pt_tensor *hit = pt_eq(pt_argmax(pt_module_forward(net, x), 1, false), y);
        r->accuracy = pt_item(pt_mean(pt_cast(hit, PT_F32), PT_ALL, false));
        pt_no_grad_end();
        pt_scope_end(scope);
        ok = !isnan(r->accuracy);
    }
    if (!ok) printf("training on %s failed: %s\n", pt_device_name(dev), pt_last_error());
    pt_optimizer_free(opt);
    pt_module_free(net);
    free(order);
    free(px);
    free(lb);
    return ok;
}

int main(int argc, char **argv) {
    nn_begin();
    char path[4096], err[512];
    if (digits_find(argc > 1 ? argv[1] : NULL, path, sizeof path) != 0) {
        printf("FAIL: %s\n", path);
        return 1;
    }
    digits all, tr, te;
    if (digits_load(path, &all, err, sizeof err) != 0 || digits_split(&all, 42, 0.8, &tr, &te) != 0) {
        printf("FAIL: %s\n", err);
        return 1;
    }
    digits_free(&all);

    static run_result cpu_run, ocl_run;
    pt_device *cpu = pt_device_get("cpu");
    bool ok = cpu && train(cpu, &tr, &te, &cpu_run);
    NN_CHECK(ok, "training on cpu");
    if (ok) {
        printf("cpu:      %d steps, loss %.5f -> %.5f, test accuracy %.2f%%\n", cpu_run.steps, cpu_run.loss[0],
               cpu_run.loss[cpu_run.steps - 1], 100 * cpu_run.accuracy);
        NN_CHECK(cpu_run.accuracy >= 0.95, "cpu accuracy %.4f >= 0.95", cpu_run.accuracy);
        NN_CHECK(cpu_run.loss[cpu_run.steps - 1] < 0.5 * cpu_run.loss[0], "cpu loss fell (%g -> %g)", cpu_run.loss[0],
                 cpu_run.loss[cpu_run.steps - 1]);
    }

    pt_device *ocl = pt_device_get("opencl:0");
    if (!ocl) {
        printf("SKIP: cross-backend comparison: %s\n", pt_last_error());
        printf("%d passed, %d failed\n", nn_passed, nn_failed);
        digits_free(&tr);
        digits_free(&te);
        return nn_failed ? 1 : NN_SKIP;
    }
    ok = train(ocl, &tr, &te, &ocl_run);
    NN_CHECK(ok, "training on opencl:0");
    if (ok) {
        printf("opencl:0: %d steps, loss %.5f -> %.5f, test accuracy %.2f%%\n", ocl_run.steps, ocl_run.loss[0],
               ocl_run.loss[ocl_run.steps - 1], 100 * ocl_run.accuracy);
        NN_CHECK(ocl_run.accuracy >= 0.95, "opencl accuracy %.4f >= 0.95", ocl_run.accuracy);
        NN_CHECK(memcmp(cpu_run.init_weight, ocl_run.init_weight, sizeof cpu_run.init_weight) == 0,
                 "initial weights are bit-identical on cpu and opencl (%.9g vs %.9g)", cpu_run.init_weight[0],
                 ocl_run.init_weight[0]);
        NN_CHECK(cpu_run.steps == ocl_run.steps, "same number of steps");
        double worst = 0;
        int worst_at = 0;
        for (int i = 0; i < cpu_run.steps && i < ocl_run.steps; ++i) {
            double rel = fabs(cpu_run.loss[i] - ocl_run.loss[i]) / fabs(cpu_run.loss[i]);
            if (!(rel <= worst)) {
                worst = rel;
                worst_at = i;
            }
        }
        printf("loss curves: largest relative difference %.3g at step %d (cpu %.8f, opencl %.8f)\n", worst, worst_at,
               cpu_run.loss[worst_at], ocl_run.loss[worst_at]);
        NN_CHECK(worst <= 1e-4, "loss curves equal within 1e-4 relative (worst %.3g at step %d)", worst, worst_at);
    }
    digits_free(&tr);
    digits_free(&te);
    return nn_finish();
}
