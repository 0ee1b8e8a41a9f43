/* f16 and bf16 for MPI, which has no 16-bit float types: each is a
 * duplicate of MPI_UINT16_T (so moving bytes is exact and the reduction
 * can tell the two apart), reduced by user ops that widen to f32, combine
 * and round back to nearest even, as NCCL does for half sums. Made once,
 * on the first collective that needs them (MPI is up by then). */
#include <pthread.h>

#include "dist_internal.h"
#include "portable/half.h"

static MPI_Datatype f16_type = MPI_DATATYPE_NULL, bf16_type = MPI_DATATYPE_NULL;
static MPI_Op sum_op = MPI_OP_NULL, max_op = MPI_OP_NULL;
static pthread_once_t made = PTHREAD_ONCE_INIT;

static float widen(uint16_t h, bool bf16) { return bf16 ? pt_bf16_bits_to_f32(h) : pt_f16_bits_to_f32(h); }
static uint16_t narrow(float f, bool bf16) { return bf16 ? pt_f32_to_bf16_bits(f) : pt_f32_to_f16_bits(f); }

/* MPI's user-function signature; inout[i] = inout[i] (op) in[i]. */
static void combine(void *in, void *inout, int *len, MPI_Datatype *type, bool max) {
    const uint16_t *a = in;
    uint16_t *b = inout;
    bool bf16 = *type == bf16_type;
    for (int i = 0; i < *len; ++i) {
        float x = widen(a[i], bf16), y = widen(b[i], bf16);
        /* max propagates NaN, like the element-wise max of the library */
        float r = max ? (x != x || x > y ? x : y) : x + y;
        b[i] = narrow(r, bf16);
    }
}
static void sum_fn(void *in, void *inout, int *len, MPI_Datatype *type) { combine(in, inout, len, type, false); }
static void max_fn(void *in, void *inout, int *len, MPI_Datatype *type) { combine(in, inout, len, type, true); }

static void make(void) {
    if (MPI_Type_dup(MPI_UINT16_T, &f16_type) != MPI_SUCCESS || MPI_Type_commit(&f16_type) != MPI_SUCCESS ||
        MPI_Type_dup(MPI_UINT16_T, &bf16_type) != MPI_SUCCESS || MPI_Type_commit(&bf16_type) != MPI_SUCCESS ||
        MPI_Op_create(sum_fn, 1, &sum_op) != MPI_SUCCESS || MPI_Op_create(max_fn, 1, &max_op) != MPI_SUCCESS) {
        f16_type = bf16_type = MPI_DATATYPE_NULL; /* the caller reports "no MPI type" */
    }
}

MPI_Datatype pt__mpi_half_type(pt_dtype t) {
    pthread_once(&made, make);
    return t == PT_BF16 ? bf16_type : f16_type;
}

MPI_Op pt__mpi_half_op(pt_reduce_op op) {
    pthread_once(&made, make);
    return op == PT_REDUCE_MAX ? max_op : sum_op;
}

void pt__divide_half(uint16_t *p, bool bf16, int64_t count, int n) {
    for (int64_t i = 0; i < count; ++i) p[i] = narrow(widen(p[i], bf16) / (float)n, bf16);
}
