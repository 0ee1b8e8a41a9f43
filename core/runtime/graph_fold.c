/* Constant folding: the ops of a graph whose values are the same at every
 * replay run once, when the graph is built, and leave the op list the
 * replays launch (docs/graphs.md, "Constants").
 *
 * Such an op is a FILL, or an element-wise op reading only such values,
 * that writes a whole intermediate (made and released during the capture)
 * nothing else writes, and that is neither random nor patched per replay:
 * a backward pass's seed of ones and its scaled copy, the zeros a ReLU's
 * gradient selects. Its value keeps its place in the arena for the graph's
 * life (the memory plan stretches its lifetime over every op), so no
 * intermediate of this replay or the next overwrites it; where that would
 * make the arena larger than the eager run's peak, nothing is folded. On a
 * device where each kernel costs a few microseconds whatever it does (PoCL
 * queues them about 5 us apart), a kernel not launched is that much saved. */
#include <stdlib.h>

#include "runtime/graph_internal.h"

int32_t pt__graph_fold_mark(pt__capture *c, const bool *varies, bool *konst) {
    const int32_t n = c->n_nodes, nv = c->n_values;
    int32_t *writers = calloc((size_t)nv + 1, sizeof *writers);
    bool *constant_value = calloc((size_t)nv + 1, sizeof *constant_value);
    int32_t count = 0;
    if (!writers || !constant_value) { /* no folding: the graph is still right */
        free(writers);
        free(constant_value);
        return 0;
    }
    for (int32_t i = 0; i < n; ++i)
        if (c->nodes[i].value[0] >= 0) writers[c->nodes[i].value[0]]++;
    for (int32_t i = 0; i < n; ++i) {
        const pt__gnode *node = &c->nodes[i];
        const pt_op *op = &node->op;
        const int32_t v = node->value[0];
        konst[i] = false;
        if (varies[i] || node->rng || v < 0 || writers[v] != 1 || !c->values[v].freed || op->n_extra != 0)
            continue;
        const pt_op_info *info = pt_op_info_of(op->kind);
        bool folds = op->kind == PT_OP_FILL && op->n_inputs == 0;
        if (!folds && info && info->family == PT_OP_FAMILY_ELEMENTWISE && op->n_inputs >= 1) {
            folds = true;
            for (int j = 0; j < op->n_inputs && folds; ++j) {
                const int32_t w = node->value[1 + j];
                folds = w >= 0 && constant_value[w];
            }
        }
        if (!folds) continue;
        konst[i] = true;
        constant_value[v] = true;
        ++count;
    }
    free(writers);
    free(constant_value);
    return count;
}

pt_status pt__graph_fold_run(const char *fn, pt_device *d, pt_op *ops, int32_t *n_ops, const bool *konst,
                             int32_t *new_index) {
    int32_t m = 0;
    for (int32_t i = 0; i < *n_ops; ++i) {
        if (!konst[i]) {
            new_index[i] = m;
            ops[m++] = ops[i];
            continue;
        }
        new_index[i] = -1;
        pt_op once = ops[i];
        const pt_status s = pt__execute(fn, d, &once);
        if (s != PT_OK) return s;
    }
    *n_ops = m;
    return PT_OK;
}
