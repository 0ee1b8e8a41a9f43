/* The parameter-free layers: dropout (which follows the train/eval mode),
 * flatten and gelu. */
#include "nn/module_kind.h"

typedef struct dropout {
    pt_module base;
    double p;
} dropout;

static pt_tensor *dropout_forward(pt_module *m, pt_tensor *x) {
    return pt_f_dropout(x, ((dropout *)m)->p, !m->eval);
}

static pt_tensor *flatten_forward(pt_module *m, pt_tensor *x) {
    (void)m;
    return pt_f_flatten(x, 1, -1);
}

static pt_tensor *gelu_forward(pt_module *m, pt_tensor *x) {
    (void)m;
    return pt_gelu(x);
}

static const pt__module_kind dropout_kind = {.name = "dropout", .forward = dropout_forward};
static const pt__module_kind flatten_kind = {.name = "flatten", .forward = flatten_forward};
static const pt__module_kind gelu_kind = {.name = "gelu", .forward = gelu_forward};

pt_module *pt_dropout(double p) {
    if (!(p >= 0 && p <= 1)) {
        pt__error(PT_ERR_INVALID_ARGUMENT, "pt_dropout", "p is %g; it must be in [0, 1]", p);
        return NULL;
    }
    pt_module *m = pt__module_new("pt_dropout", &dropout_kind, sizeof(dropout));
    if (m) ((dropout *)m)->p = p;
    return m;
}

pt_module *pt_flatten(void) { return pt__module_new("pt_flatten", &flatten_kind, sizeof(pt_module)); }
pt_module *pt_gelu_module(void) { return pt__module_new("pt_gelu_module", &gelu_kind, sizeof(pt_module)); }
