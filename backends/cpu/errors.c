/* libportable cpu backend — reporting failures to the host.
 *
 * Apart from the dispatcher (exec.c) so the op files and the dispatcher
 * depend on this file and never on each other. Op and dtype names come from
 * the shared tables (op_table.h, types.h). */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

const pt_host_api *pt_cpu_host = NULL;

pt_status pt_cpu_fail(pt_status s, const char *fmt, ...) {
    if (pt_cpu_host && pt_cpu_host->set_error) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        pt_cpu_host->set_error(s, "cpu: %s", msg);
    }
    return s;
}

pt_status pt_cpu_unsupported(const pt_op *op, pt_dtype t) {
    return pt_cpu_fail(PT_ERR_UNSUPPORTED, "%s not implemented for %s", pt_op_name(op->kind),
                       pt_dtype_table_name(t));
}

pt_status pt_cpu_bad_op(const pt_op *op, const char *what) {
    return pt_cpu_fail(PT_ERR_INTERNAL, "%s: malformed op descriptor: %s (a core bug)",
                       pt_op_name(op->kind), what);
}
