/* Max and average pooling layers: pt_f_max_pool2d / pt_f_avg_pool2d with
 * their options, no parameters. */
#include "nn/module_kind.h"

typedef struct pool {
    pt_module base;
    pt_pool2d_opts opts;
} pool;

static pt_tensor *max_forward(pt_module *m, pt_tensor *x) { return pt_f_max_pool2d(x, &((pool *)m)->opts); }
static pt_tensor *avg_forward(pt_module *m, pt_tensor *x) { return pt_f_avg_pool2d(x, &((pool *)m)->opts); }

static const pt__module_kind max_kind = {.name = "max_pool2d", .forward = max_forward};
static const pt__module_kind avg_kind = {.name = "avg_pool2d", .forward = avg_forward};

/* The options are checked now, so a bad layer fails where it is made. */
static pt_module *pool_new(const char *fn, const pt__module_kind *kind, const pt_pool2d_opts *opts) {
    if (!opts) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "opts is NULL; pass at least a kernel size");
        return NULL;
    }
    for (int i = 0; i < 2; ++i) {
        if (opts->kernel[i] < 1 || opts->stride[i] < 0 || opts->padding[i] < 0 || 2 * opts->padding[i] > opts->kernel[i]) {
            pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                      "kernel [%lld, %lld], stride [%lld, %lld], padding [%lld, %lld]: the kernel must be >= 1, "
                      "the stride >= 0 (0 means the kernel) and the padding between 0 and half the kernel",
                      (long long)opts->kernel[0], (long long)opts->kernel[1], (long long)opts->stride[0],
                      (long long)opts->stride[1], (long long)opts->padding[0], (long long)opts->padding[1]);
            return NULL;
        }
    }
    pt_module *m = pt__module_new(fn, kind, sizeof(pool));
    if (m) ((pool *)m)->opts = *opts;
    return m;
}

pt_module *pt_max_pool2d(const pt_pool2d_opts *opts) { return pool_new("pt_max_pool2d", &max_kind, opts); }
pt_module *pt_avg_pool2d(const pt_pool2d_opts *opts) { return pool_new("pt_avg_pool2d", &avg_kind, opts); }
