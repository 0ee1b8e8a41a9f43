/* libportable null backend — reporting failures to the host (internal.h).
 *
 * Each message goes straight to host->set_error, which formats it; a backend
 * with many messages adds one printf-like helper here instead. Messages
 * start with the backend's name, PT_BACKEND_NAME. */
#include "internal.h"

static const pt_host_api *null_host = NULL;

void null_set_host(const pt_host_api *host) { null_host = host; }

pt_status null_out_of_memory(const char *what, size_t bytes) {
    if (null_host)
        null_host->set_error(PT_ERR_OUT_OF_MEMORY, PT_BACKEND_NAME ": %s of %zu bytes failed", what,
                             bytes);
    return PT_ERR_OUT_OF_MEMORY;
}

pt_status null_unsupported(const pt_op *op) {
    if (null_host)
        null_host->set_error(PT_ERR_UNSUPPORTED,
                             PT_BACKEND_NAME ": %s is not implemented for %s (the " PT_BACKEND_NAME
                                             " backend runs no ops)",
                             pt_op_name(op->kind), pt_dtype_table_name(op->dtype));
    return PT_ERR_UNSUPPORTED;
}
