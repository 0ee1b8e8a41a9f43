/* libportable null backend — declarations shared by the plugin's files.
 *
 * The skeleton every backend follows (docs/backends.md): one file per role,
 * each calling only the roles after it, so the plugin's calls form no circle
 * (lint_backend_layout checks every backend for that):
 *
 *   plugin.c   the vtable and pt_backend_entry, nothing else
 *   exec.c     supports / execute: dispatch by op family (here: refuse all)
 *   launch.c   the device queue: synchronize (here: nothing to wait for)
 *   memory.c   alloc, free, memory figures, the copies
 *   device.c   init, shutdown, enumeration, properties
 *   errors.c   reporting failures to the host
 *
 * A backend with ops adds exec_<family>.c per op family it runs (and
 * <role>_<topic>.c helpers of a role); its exec.c then dispatches to them.
 *
 * Symbol prefix: null_ (every non-static name; pt_backend_entry is the one
 * exported symbol). The backend's name is the folder's, given by CMake as
 * PT_BACKEND_NAME, so a copy of this folder names itself. */
#ifndef PORTABLE_NULL_INTERNAL_H
#define PORTABLE_NULL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "portable/backend.h"

#ifndef PT_BACKEND_NAME
#error "PT_BACKEND_NAME (the backend's name, its folder's) comes from CMakeLists.txt"
#endif

/* ---- Errors (errors.c) ---- */

/* The host API handed to pt_backend_entry; NULL before it ran (then reports
 * go nowhere). */
void null_set_host(const pt_host_api *host);
/* PT_ERR_OUT_OF_MEMORY: "<name>: <what> of <bytes> bytes failed". */
pt_status null_out_of_memory(const char *what, size_t bytes);
/* PT_ERR_UNSUPPORTED naming the op and its compute dtype from the shared
 * tables (op_table.h, types.h), e.g. "null: add is not implemented for f32". */
pt_status null_unsupported(const pt_op *op);

/* ---- Devices (device.c) ---- */

pt_status null_init(void);
void null_shutdown(void);
int null_device_count(void);
const char *null_unavailable_reason(void);
pt_status null_device_info(int dev, pt_device_props *out);

/* ---- Memory and copies (memory.c) ---- */

/* A buffer of bytes on dev: *buf is a handle the core only passes back. */
pt_status null_alloc(int dev, size_t bytes, void **buf);
void null_free(int dev, void *buf);
/* Free and total bytes of dev; -1 where the backend cannot tell. */
pt_status null_memory_info(int dev, int64_t *free_bytes, int64_t *total_bytes);
/* The copies take byte offsets into buffers (an OpenCL buffer has no
 * pointer arithmetic); async ones may return before the copy lands. */
pt_status null_copy_h2d(int dev, void *dst, size_t dst_offset, const void *src, size_t bytes, bool async);
pt_status null_copy_d2h(int dev, void *dst, const void *src, size_t src_offset, size_t bytes, bool async);
/* Within one device, then between two of this backend's devices. */
pt_status null_copy_d2d(int dev, void *dst, size_t dst_offset, const void *src, size_t src_offset, size_t bytes);
pt_status null_copy_peer(int dst_dev, void *dst, size_t dst_offset, int src_dev, const void *src, size_t src_offset, size_t bytes);

/* ---- The queue (launch.c) ---- */

pt_status null_synchronize(int dev);

/* ---- Execution (exec.c) ---- */

pt_status null_supports(int dev, const pt_op *op);
pt_status null_execute(int dev, const pt_op *op);

#endif
