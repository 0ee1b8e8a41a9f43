/* The sequential container: runs its children in order, owns them, and
 * names their parameters by position ("0.weight", "1.0.bias"). */
#include <stdlib.h>

#include "nn/module_kind.h"

static pt_tensor *sequential_forward(pt_module *m, pt_tensor *x) {
    pt_tensor *cur = x;
    for (int i = 0; i < m->n_children && cur; ++i) {
        pt_tensor *next = pt_module_forward(m->children[i], cur);
        if (cur != x) pt_release(cur);
        cur = next;
    }
    /* An empty sequential is the identity: still a new reference. */
    return cur == x ? pt__ret(pt_retain(x)) : cur;
}

static const pt__module_kind sequential_kind = {.name = "sequential", .forward = sequential_forward};

/* Frees the distinct, unowned entries the caller handed over (a failure
 * after the list was found valid: every non-NULL entry is distinct and has
 * no owner, so each is destroyed exactly once). */
static void free_entries(int n, pt_module *const *modules) {
    for (int i = 0; i < n; ++i)
        if (modules[i]) pt__module_destroy(modules[i]);
}

pt_module *pt_sequential(int n, pt_module *const *modules) {
    static const char fn[] = "pt_sequential";
    if (n < 0 || (n > 0 && !modules)) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "n is %d and modules is %s", n, modules ? "set" : "NULL");
        return NULL;
    }
    /* A list the caller got wrong (a module twice, or one that already has
     * an owner) is refused before anything is taken: every module stays the
     * caller's and usable. Checked over the whole list first, so that
     * nothing is freed while a later entry may still name it. */
    for (int i = 0; i < n; ++i) {
        if (!modules[i]) continue;
        if (modules[i]->parent) {
            pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                      "modules[%d] already belongs to another sequential; a module has one owner "
                      "(nothing was taken: every module is still yours)",
                      i);
            return NULL;
        }
        for (int j = 0; j < i; ++j)
            if (modules[j] == modules[i]) {
                pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                          "modules[%d] and modules[%d] are the same module; list each module once "
                          "(nothing was taken: every module is still yours)",
                          j, i);
                return NULL;
            }
    }
    /* A NULL entry is a constructor that failed inside the call's argument
     * list: keep its error and free the others, as ownership was promised. */
    for (int i = 0; i < n; ++i) {
        if (modules[i]) continue;
        if (pt_last_status() == PT_OK) pt__error(PT_ERR_INVALID_ARGUMENT, fn, "modules[%d] is NULL", i);
        free_entries(n, modules);
        return NULL;
    }
    pt_module *m = pt__module_new(fn, &sequential_kind, sizeof(pt_module));
    if (m && n > 0) {
        m->children = malloc((size_t)n * sizeof *m->children);
        if (!m->children) {
            pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for %d children", n);
            free(m);
            m = NULL;
        }
    }
    if (!m) {
        free_entries(n, modules);
        return NULL;
    }
    m->n_children = n;
    for (int i = 0; i < n; ++i) {
        m->children[i] = modules[i];
        modules[i]->parent = m;
    }
    if (!pt__module_set_prefix(m, "")) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "modules are nested too deeply for parameter names");
        pt__module_destroy(m);
        return NULL;
    }
    return m;
}
