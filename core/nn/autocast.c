/* Mixed precision on a module tree, like torch.autocast: the parameters
 * stay f32 ("masters": what the optimizer updates and pt_save writes), and
 * each layer casts them and its input to the compute dtype at every
 * forward, so the activations and the GEMMs are 16-bit. pt_cast is
 * recorded, so the backward pass casts the gradients back and they land in
 * the f32 masters. The layers (linear.c, conv2d.c, batch_norm.c,
 * layer_norm.c) call the two helpers below; the others (relu, pools,
 * flatten, dropout) compute in whatever dtype reaches them. */
#include "nn/module_kind.h"

static void set_compute(pt_module *m, pt_dtype t) {
    m->mixed = true;
    m->compute = t;
    for (int i = 0; i < m->n_children; ++i) set_compute(m->children[i], t);
}

pt_status pt_module_set_compute_dtype(pt_module *m, pt_dtype dtype) {
    static const char fn[] = "pt_module_set_compute_dtype";
    if (!m) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "module is NULL");
    if (pt__check_dtype(fn, dtype)) return pt_last_status();
    if (!pt__grad_float(dtype))
        return pt__error(PT_ERR_DTYPE, fn, "compute dtype %s is not a float dtype; use bf16, f16, f32 or f64",
                         pt_dtype_name(dtype));
    set_compute(m, dtype);
    return PT_OK;
}

pt_dtype pt__layer_param_dtype(const pt_module *m, const pt_tensor *x) {
    pt_dtype t = pt_tensor_dtype(x);
    return m->mixed && pt_dtype_is_half(t) ? PT_F32 : t;
}

pt_tensor *pt__layer_cast(pt_tensor *t, pt_dtype dtype) {
    return t && pt_tensor_dtype(t) != dtype ? pt_cast(t, dtype) : t;
}

pt_tensor *pt__layer_compute(const pt_module *m, pt_tensor *t) {
    return m->mixed ? pt__layer_cast(t, m->compute) : t;
}
