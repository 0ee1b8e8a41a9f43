/* libportable null backend — reporting failures to the host.
 *
 * Every vtable member that fails calls one of these before returning, so the
 * core can prefix the message with the public function and device names. Kept
 * apart from the vtable so a new backend's op files can include this header
 * without including the dispatcher (and the dispatcher never includes an op
 * file): no cycle between the two. */
#ifndef PORTABLE_NULL_ERRORS_H
#define PORTABLE_NULL_ERRORS_H

#include "portable/backend.h"

/* The host API handed to pt_backend_entry; NULL before it ran (then reports
 * go nowhere). */
void null_set_host(const pt_host_api *host);

/* PT_ERR_OUT_OF_MEMORY: "null: <what> of <bytes> bytes failed". */
pt_status null_out_of_memory(const char *what, size_t bytes);

/* PT_ERR_UNSUPPORTED naming the op and its compute dtype from the shared
 * tables (op_table.h, types.h), e.g. "null: add is not implemented for f32". */
pt_status null_unsupported(const pt_op *op);

#endif
