/* The ReLU layer: pt_relu as a module, with no parameters. */
#include "nn/module_kind.h"

static pt_tensor *relu_forward(pt_module *m, pt_tensor *x) {
    (void)m;
    return pt_relu(x);
}

static const pt__module_kind relu_kind = {.name = "relu", .forward = relu_forward};

pt_module *pt_relu_module(void) { return pt__module_new("pt_relu_module", &relu_kind, sizeof(pt_module)); }
