/* libportable core — what a layer kind implements: the module base every
 * layer embeds first, and the small vtable module.c calls through.
 *
 * A layer kind is one file (linear.c, relu_module.c, sequential.c, ...): a
 * struct that starts with a pt_module, a pt__module_kind, and the public
 * constructor, which calls pt__module_new and declares its parameters with
 * pt__module_add_param. Everything shared (naming parameters, listing and
 * installing them, moving, freeing the tree) is module.c's, done once on the
 * base. Nothing here is exported. */
#ifndef PORTABLE_CORE_NN_MODULE_KIND_H
#define PORTABLE_CORE_NN_MODULE_KIND_H

#include "nn/nn_internal.h"

#define PT__NAME_CAP 192
#define PT__MODULE_MAX_PARAMS 8
#define PT__CHILD_NAME_CAP 32

/* One parameter a module declares. */
typedef struct pt__module_param {
    const char *local_name;        /* "weight" (static storage) */
    char name[PT__NAME_CAP];       /* with the module's place in the tree: "1.0.weight" */
    pt_tensor *value;              /* owned, unregistered; NULL while lazy (not created yet) */
    int ndim;                      /* expected shape; -1 entries: not known yet (lazy) */
    int64_t shape[PT_MAX_DIMS];
    bool buffer;                   /* state, not a parameter: saved, loaded and moved, but
                                      never requires grad nor meets an optimizer
                                      (batch norm's running statistics) */
    bool count;                    /* an i64 buffer (num_batches_tracked), else the layer's float dtype */
} pt__module_param;

typedef struct pt__module_kind {
    const char *name; /* "linear", for messages */
    /* m applied to x (not NULL): a new reference, or NULL + error. */
    pt_tensor *(*forward)(pt_module *m, pt_tensor *x);
    /* Frees what the kind owns beyond its parameters and children (NULL:
     * nothing); the base and the rest are module.c's. */
    void (*release)(pt_module *m);
} pt__module_kind;

struct pt_module {
    const pt__module_kind *kind;
    pt_module *parent;             /* the container that owns this module, or NULL */
    char prefix[PT__NAME_CAP];     /* "1.0." inside nested sequentials */
    char child_name[PT__CHILD_NAME_CAP]; /* what its parent calls it ("self_attn", "h.0");
                                      empty: its index, as a sequential names children */
    pt_device *device;             /* set by pt_module_to: where lazy parameters are created
                                      (NULL: on the input's device) */
    int n_params;
    pt__module_param params[PT__MODULE_MAX_PARAMS];
    bool eval;                     /* evaluation mode (pt_module_train(m, false)); a new
                                      module trains, as in PyTorch */
    bool mixed;                    /* pt_module_set_compute_dtype was called: the layer
                                      computes in `compute` (autocast.c) */
    pt_dtype compute;
    int n_children;                /* children, in forward and state-dict order ("0.", "1.", ...) */
    pt_module **children;
};

/* A zeroed module of `size` bytes (the kind's struct, base first), or NULL +
 * PT_ERR_OUT_OF_MEMORY naming fn. */
pt_module *pt__module_new(const char *fn, const pt__module_kind *kind, size_t size);
/* Declares m's next parameter (up to PT__MODULE_MAX_PARAMS; in state-dict
 * order) with its expected shape, -1 where not known yet. Returns its slot,
 * or NULL + PT_ERR_INTERNAL past the limit (a library bug, not the user's). */
pt__module_param *pt__module_add_param(pt_module *m, const char *local_name, int ndim, const int64_t *shape);
/* The same for a buffer (see pt__module_param.buffer); count: i64. */
pt__module_param *pt__module_add_buffer(pt_module *m, const char *local_name, int ndim, const int64_t *shape,
                                        bool count);
/* Appends child to parent's children under name (copied; NULL: its index),
 * so its parameters are called "<parent prefix><name>.weight", as a named
 * attribute of a torch.nn.Module. parent owns child from then on, whatever
 * happens: on failure (PT_ERR_OUT_OF_MEMORY naming fn, a name too long) the
 * child is destroyed. Composite layers build their tree with it. */
pt_status pt__module_add_child(const char *fn, pt_module *parent, pt_module *child, const char *name);
/* Sets m's name prefix and its descendants' ("" at the root). False when a
 * name would not fit (absurdly deep nesting). */
bool pt__module_set_prefix(pt_module *m, const char *prefix);
/* Frees m, its parameters and its children, owned or not. NULL is fine. */
void pt__module_destroy(pt_module *m);
/* A layer's input check before its (lazy) parameters are made from x: a
 * float tensor of min_ndim..max_ndim dims, else PT_ERR_SHAPE and "<what>
 * '<first parameter>' takes f32/f64 <form> input, got <x>" (false). */
bool pt__layer_input_ok(const char *fn, const pt_module *m, const pt_tensor *x, int min_ndim, int max_ndim,
                        const char *what, const char *form);
/* Where a lazy layer makes its parameters: its pt_module_to device, else x's. */
pt_device *pt__layer_device(const pt_module *m, const pt_tensor *x);

/* ---- Layers that composite layers are built from ---- */
/* A linear layer with in_features known (linear.c): parameters made now, f32
 * on the cpu, initialised as torch.nn.Linear; no bias parameter at all when
 * bias is false (torch.nn.Linear(bias=False)). Errors name fn. */
pt_module *pt__linear_sized(const char *fn, int64_t in_features, int64_t out_features, bool bias);
/* How pt__module_init_param fills a parameter. */
typedef enum pt__init { PT__INIT_NORMAL, PT__INIT_UNIFORM, PT__INIT_CONSTANT } pt__init;
/* Gives m's own parameter number i (declared with a known shape) a new
 * value: N(0, a^2), U(-a, a) or the constant a, drawn with pt_randn /
 * pt_rand so every backend gets the same numbers for the same seed. The
 * tensor is made where the old value lives, in its dtype (f32 on the cpu
 * when there is none yet), with grad mode paused, and requires grad unless
 * the slot is a buffer; the old value is released. Errors name fn. */
pt_status pt__module_init_param(const char *fn, pt_module *m, int i, pt__init how, double a);

/* ---- Mixed precision (autocast.c) ---- */
/* The dtype a lazy layer makes its parameters in from input x: x's, except
 * that under a compute dtype a 16-bit input gets f32 masters. */
pt_dtype pt__layer_param_dtype(const pt_module *m, const pt_tensor *x);
/* t for m's arithmetic: cast (recorded, so gradients flow back in t's
 * dtype) to m's compute dtype when one is set and differs, else t itself.
 * Call inside a pt_scope: a cast is a temporary of that scope. NULL in,
 * NULL out (the error stays). */
pt_tensor *pt__layer_compute(const pt_module *m, pt_tensor *t);
/* t cast to dtype when they differ, else t itself (same rules). */
pt_tensor *pt__layer_cast(pt_tensor *t, pt_dtype dtype);

#endif
