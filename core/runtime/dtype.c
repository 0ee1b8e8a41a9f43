/* pt_dtype_size and pt_dtype_name: columns of PT_DTYPE_TABLE (types.h). They
 * live in the lowest layer because the runtime names dtypes in its own
 * messages (devices, descriptors) and may call nothing above it. */
#include "runtime/runtime.h"

size_t pt_dtype_size(pt_dtype t) { return pt_dtype_table_size(t); }

const char *pt_dtype_name(pt_dtype t) { return pt_dtype_table_name(t); }
