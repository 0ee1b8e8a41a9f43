/* libportable cpu backend — the old name of internal.h.
 *
 * The element-wise kernels (exec_elementwise.c, exec_elementwise_vecmath.c)
 * still include it by this name; they move to internal.h with their next
 * change, and this file goes. */
#include "internal.h"
