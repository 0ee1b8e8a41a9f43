/* Small MPI helpers: dtype and op mapping, errors as statuses, and the
 * division that makes a sum an average. */
#include "dist_internal.h"

MPI_Datatype pt__mpi_type(pt_dtype t) {
    switch (t) {
    case PT_F32: return MPI_FLOAT;
    case PT_F64: return MPI_DOUBLE;
    case PT_I32: return MPI_INT32_T;
    case PT_I64: return MPI_INT64_T;
    case PT_U8: return MPI_UINT8_T;
    case PT_F16:
    case PT_BF16: return pt__mpi_half_type(t);
    default: return MPI_DATATYPE_NULL;
    }
}

MPI_Op pt__mpi_op(pt_reduce_op op, pt_dtype t) {
    if (t == PT_F16 || t == PT_BF16) return pt__mpi_half_op(op);
    return op == PT_REDUCE_MAX ? MPI_MAX : MPI_SUM;
}

pt_status pt__mpi_failed(const char *fn, const char *call, int code) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "MPI error %d", code);
    return pt_set_error(PT_ERR_BACKEND, fn, "%s failed: %s", call, text);
}

void pt__divide(void *p, pt_dtype t, int64_t count, int n) {
    switch (t) {
    case PT_F32: for (int64_t i = 0; i < count; ++i) ((float *)p)[i] /= (float)n; break;
    case PT_F64: for (int64_t i = 0; i < count; ++i) ((double *)p)[i] /= n; break;
    case PT_I32: for (int64_t i = 0; i < count; ++i) ((int32_t *)p)[i] /= n; break;
    case PT_I64: for (int64_t i = 0; i < count; ++i) ((int64_t *)p)[i] /= n; break;
    case PT_U8: for (int64_t i = 0; i < count; ++i) ((uint8_t *)p)[i] /= (uint8_t)n; break;
    case PT_F16:
    case PT_BF16: pt__divide_half(p, t == PT_BF16, count, n); break;
    default: break;
    }
}
