/* libportable CUDA backend — every error the plugin reports goes through
 * here: CUDA runtime and cuBLAS failures with their names, unsupported ops
 * and failed launches named from the op table (portable/op_table.h) and the
 * dtype table (portable/types.h), and plain messages. No other file calls
 * the host's set_error (ptcu_host, set by pt_backend_entry). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

const pt_host_api *ptcu_host;

/* buf = the enclosing function's variadic arguments formatted by fmt, its
 * last named parameter. */
#define FORMAT_VARIADIC(buf, fmt)              \
    do {                                       \
        va_list ap_;                           \
        va_start(ap_, fmt);                    \
        vsnprintf(buf, sizeof buf, fmt, ap_); \
        va_end(ap_);                           \
    } while (0)

/* This thread's last message (ptcu_last_failure). */
static _Thread_local char last_failure[1024];

pt_status ptcu_fail(pt_status s, const char *fmt, ...) {
    FORMAT_VARIADIC(last_failure, fmt);
    ptcu_host->set_error(s, "%s", last_failure);
    return s;
}

const char *ptcu_last_failure(void) { return last_failure; }

pt_status ptcu_cuda_error(cudaError_t e, const char *what_fmt, ...) {
    char what[512];
    FORMAT_VARIADIC(what, what_fmt);
    (void)cudaGetLastError(); /* clear a non-sticky error so later calls start clean */
    return ptcu_fail(e == cudaErrorMemoryAllocation ? PT_ERR_OUT_OF_MEMORY
                     : e == cudaErrorNotSupported   ? PT_ERR_UNSUPPORTED
                                                    : PT_ERR_BACKEND,
                     "%s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

pt_status ptcu_blas_error(cublasStatus_t st, const char *what_fmt, ...) {
    char what[512];
    FORMAT_VARIADIC(what, what_fmt);
    return ptcu_fail(st == CUBLAS_STATUS_ALLOC_FAILED    ? PT_ERR_OUT_OF_MEMORY
                     : st == CUBLAS_STATUS_NOT_SUPPORTED ? PT_ERR_UNSUPPORTED
                                                         : PT_ERR_BACKEND,
                     "%s: %s (%s)", what, cublasGetStatusName(st), cublasGetStatusString(st));
}

pt_status ptcu_unsupported(const pt_op *op) {
    if (!pt_op_info_of(op->kind))
        return ptcu_fail(PT_ERR_UNSUPPORTED, "op kind %d is unknown to the cuda backend", (int)op->kind);
    char ins[96] = "";
    for (int k = 0; k < op->n_inputs && k < PT_OP_MAX_INPUTS; ++k) {
        size_t used = strlen(ins);
        snprintf(ins + used, sizeof ins - used, "%s%s", k ? ", " : "", pt_dtype_table_name(op->in[k].dtype));
    }
    return ptcu_fail(PT_ERR_UNSUPPORTED,
                     "the cuda backend has no %s kernel for inputs (%s) -> %s; "
                     "cast to a supported dtype first (see backends/cuda/README.md)",
                     pt_op_name(op->kind), ins, pt_dtype_table_name(op->out.dtype));
}

pt_status ptcu_launch_error(cudaError_t e, const pt_op *op) {
    if (e == cudaSuccess) return PT_OK;
    return ptcu_cuda_error(e, "%s (%s -> %s) kernel launch", pt_op_name(op->kind),
                           op->n_inputs > 0 ? pt_dtype_table_name(op->in[0].dtype) : "-",
                           pt_dtype_table_name(op->out.dtype));
}
