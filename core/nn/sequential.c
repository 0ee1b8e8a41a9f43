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

pt_module *pt_sequential(int n, pt_module *const *modules) {
    static const char fn[] = "pt_sequential";
    bool ok = n >= 0 && (n == 0 || modules);
    if (!ok) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "n is %d and modules is %s", n, modules ? "set" : "NULL");
        return NULL;
    }
    int bad = -1;
    for (int i = 0; i < n && ok; ++i) {
        if (!modules[i]) {
            /* A constructor failed and already said why: keep its error. */
            if (pt_last_status() == PT_OK)
                pt__error(PT_ERR_INVALID_ARGUMENT, fn, "modules[%d] is NULL", i);
            ok = false;
        } else if (modules[i]->parent) {
            pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                      "modules[%d] already belongs to another sequential; a module has one owner", i);
            bad = i;
            ok = false;
        }
        for (int j = 0; j < i && ok; ++j)
            if (modules[j] == modules[i]) {
                pt__error(PT_ERR_INVALID_ARGUMENT, fn, "modules[%d] and modules[%d] are the same module", j, i);
                bad = i;
                ok = false;
            }
    }
    pt_module *m = ok ? pt__module_new(fn, &sequential_kind, sizeof(pt_module)) : NULL;
    if (m && n > 0) {
        m->children = malloc((size_t)n * sizeof *m->children);
        if (!m->children) {
            pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for %d children", n);
            free(m);
            m = NULL;
        }
    }
    if (!m) {
        /* Ownership was promised: free what we were given (but not a module
         * another sequential owns, nor one listed twice). */
        for (int i = 0; i < n; ++i) {
            if (!modules[i] || modules[i]->parent || i == bad) continue;
            bool seen = false;
            for (int j = 0; j < i; ++j) seen = seen || modules[j] == modules[i];
            if (!seen) pt__module_destroy(modules[i]);
        }
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
