/* Safetensors save/load of a module's parameters, under PyTorch's
 * state-dict names (safetensors_file.c reads and writes the format).
 *
 * Loading trusts nothing in the file: every check runs, and every tensor's
 * bytes are read into host memory and copied to the device, before the
 * module is touched. */
#include <stdlib.h>
#include <string.h>

#include "nn/module_kind.h"
#include "nn/safetensors_file.h"

pt_status pt_save(pt_module *m, const char *path) {
    static const char fn[] = "pt_save";
    if (!path) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "path is NULL");
    pt__param *ps;
    int n = pt__module_params_alloc(m, &ps, fn);
    if (n < 0) return pt_last_status();
    const char **names = malloc((n > 0 ? (size_t)n : 1) * sizeof *names);
    pt_tensor **tensors = malloc((n > 0 ? (size_t)n : 1) * sizeof *tensors);
    pt_status s = names && tensors ? PT_OK : pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    for (int i = 0; i < n && !s; ++i) {
        if (!*ps[i].slot)
            s = pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                          "parameter \"%s\" belongs to a lazy %s that has not run yet; run a "
                          "forward pass first so its shape is known",
                          ps[i].name, ps[i].owner->kind->name);
        names[i] = ps[i].name;
        tensors[i] = *ps[i].slot;
    }
    static const char *const meta[][2] = {{"format", "pt"}};
    if (!s) s = pt__st_save(fn, path, n, names, tensors, 1, meta);
    free(names);
    free(tensors);
    free(ps);
    return s;
}

/* ==== Load ================================================================ */

/* The file and, once matched, the entry of each module parameter. */
typedef struct load_ctx {
    pt__st_file file;
    pt__st_entry **of_param;
} load_ctx;

static char *shape_text(int ndim, const int64_t *shape, char *buf, size_t cap) {
    return pt__shape_str(ndim, shape, buf, cap);
}

static bool float_dtype(pt_dtype t) { return pt_dtype_is_float(t); }

/* Matches the file's tensors with the module's parameters one to one. */
static pt_status match_params(load_ctx *c, pt__param *ps, int n) {
    const pt__st_file *f = &c->file;
    char a[160], b[160];
    for (int i = 0; i < n; ++i) {
        pt__st_entry *e = pt__st_find(f, ps[i].name);
        if (!e) return pt__st_bad(f, ps[i].name, "missing from the file (the module has this parameter)");
        e->claimed = i;
        c->of_param[i] = e;
        bool fits = e->ndim == ps[i].ndim;
        for (int d = 0; fits && d < e->ndim; ++d)
            fits = ps[i].shape[d] < 0 ? e->shape[d] >= 1 : e->shape[d] == ps[i].shape[d];
        if (!fits) {
            int64_t want[PT_MAX_DIMS];
            for (int d = 0; d < ps[i].ndim; ++d) want[d] = ps[i].shape[d];
            return pt__st_bad(f, e->name, "shape %s does not match the module's parameter %s%s",
                              shape_text(e->ndim, e->shape, a, sizeof a), shape_text(ps[i].ndim, want, b, sizeof b),
                              ps[i].ndim > 1 && want[1] < 0 ? " (-1: input size not known yet)" : "");
        }
        pt_tensor *cur = *ps[i].slot;
        if (cur && cur->dtype != e->dtype)
            return pt__st_bad(f, e->name, "dtype %s does not match the module's parameter (%s)",
                              pt__st_dtype_tag(e->dtype), pt__st_dtype_tag(cur->dtype));
        if (!cur && ps[i].count && e->dtype != PT_I64)
            return pt__st_bad(f, e->name, "dtype %s cannot be a %s's batch count (I64)", pt__st_dtype_tag(e->dtype),
                              ps[i].owner->kind->name);
        if (!cur && !ps[i].count && !float_dtype(e->dtype))
            return pt__st_bad(f, e->name, "dtype %s cannot be a %s layer's parameter (F32, F64, F16 or BF16)",
                              pt__st_dtype_tag(e->dtype), ps[i].owner->kind->name);
    }
    for (int j = 0; j < c->file.n_entries; ++j)
        if (c->file.entries[j].claimed < 0)
            return pt__st_bad(f, c->file.entries[j].name, "not a parameter of the module (unexpected tensor)");
    /* A lazy layer's float tensors come into being together: the same
     * dtype (its batch count aside). */
    for (int i = 0; i + 1 < n; ++i) {
        if (*ps[i].slot || ps[i].owner != ps[i + 1].owner || ps[i].count || ps[i + 1].count) continue;
        const pt__st_entry *w = c->of_param[i], *bias = c->of_param[i + 1];
        if (w->dtype != bias->dtype)
            return pt__st_bad(f, bias->name, "dtype %s differs from its weight's %s", pt__st_dtype_tag(bias->dtype),
                              pt__st_dtype_tag(w->dtype));
    }
    return PT_OK;
}

/* Reads every tensor and copies it to its device. On success fresh[i] owns
 * parameter i's new tensor. */
static pt_status materialise(load_ctx *c, pt__param *ps, pt_device *map_location, pt_tensor **fresh) {
    pt_status s = PT_OK;
    pt_scope scope = pt_scope_begin();
    pt__grad_pause();
    for (int j = 0; j < c->file.n_entries && !s; ++j) {
        pt__st_entry *e = &c->file.entries[j];
        pt_tensor *cur = *ps[e->claimed].slot;
        pt_device *dev = map_location ? map_location : cur ? pt_tensor_device(cur) : pt_cpu();
        if (!dev) {
            s = pt_last_status();
            break;
        }
        fresh[e->claimed] = pt__own(pt__st_read(&c->file, e, dev));
        if (!fresh[e->claimed]) s = pt_last_status();
    }
    pt__grad_resume();
    pt_scope_end(scope);
    return s;
}

pt_status pt_load(pt_module *m, const char *path, pt_device *map_location) {
    static const char fn[] = "pt_load";
    if (!path) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "path is NULL");
    pt__param *ps;
    int n = pt__module_params_alloc(m, &ps, fn);
    if (n < 0) return pt_last_status();
    load_ctx c = {0};
    pt_tensor **fresh = calloc(n > 0 ? (size_t)n : 1, sizeof *fresh);
    pt_status s = fresh ? PT_OK : pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    if (!s) s = pt__st_open(&c.file, fn, path);
    if (!s) {
        c.of_param = calloc(n > 0 ? (size_t)n : 1, sizeof *c.of_param);
        if (!c.of_param) s = pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    }
    if (!s) s = match_params(&c, ps, n);
    if (!s) s = materialise(&c, ps, map_location, fresh);
    if (!s) {
        for (int i = 0; i < n; ++i) pt__module_install(&ps[i], fresh[i], NULL);
    } else if (fresh) {
        for (int i = 0; i < n; ++i) pt__drop_owned(fresh[i]);
    }
    pt__st_close(&c.file);
    free(c.of_param);
    free(fresh);
    free(ps);
    return s;
}
