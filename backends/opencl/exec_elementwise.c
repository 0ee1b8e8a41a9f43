/* libportable OpenCL backend — the element-wise family: arithmetic,
 * comparisons, WHERE and COPY, one kernel per kind (the rows of
 * portable/ew_math.h, named ew_<name> after the op table; kernels/elementwise.cl),
 * launched by ocl_pointwise
 * (launch.c). A cast to or from f64 on a device without fp64 runs on the
 * host (exec_elementwise_host_cast.c). */
#include "internal.h"
#include "portable/ew_math.h"

/* The kinds with an ew_<name> kernel: the rows of ew_math.h (WHERE has its
 * own kernel, which selects bits). */
static const bool ocl_ew_kernels[PT_OP_COUNT] = {
#define OCL_EW_KERNEL_OF(KIND, ...) [PT_OP_##KIND] = true,
    PT_EW_UNARY(OCL_EW_KERNEL_OF) PT_EW_BINARY(OCL_EW_KERNEL_OF) PT_EW_COMPARE(OCL_EW_KERNEL_OF)
#undef OCL_EW_KERNEL_OF
};

bool ocl_has_ew_kernel(pt_op_kind k) {
    return (unsigned)k < (unsigned)PT_OP_COUNT && ocl_ew_kernels[k];
}

static ocl_kernel_id ocl_elementwise_kernel(pt_op_kind k) {
    return (ocl_kernel_id)(OCL_K_OP_FILL + (int)k);
}

/* Unary and binary kernels: inputs, then the position vector, which
 * carries the op's scalars as T: two for unary rows, one (s, AXPY's) for
 * binary ones. */
static pt_status ocl_run_arith(ocl_device *d, const pt_op *op, int n_in) {
    pt_dtype t = op->in[0].dtype;
    const ocl_scalar sc[2] = {ocl_make_scalar(t, op->scalar), ocl_make_scalar(t, op->scalar2)};
    const pt_operand *in[2] = {&op->in[0], &op->in[1]};
    return ocl_pointwise(d, t, ocl_elementwise_kernel(op->kind), &op->out, n_in, in, n_in == 1 ? 2 : 1, sc);
}

static pt_status ocl_run_compare(ocl_device *d, const pt_op *op) {
    const pt_operand *in[2] = {&op->in[0], &op->in[1]};
    return ocl_pointwise(d, op->in[0].dtype, ocl_elementwise_kernel(op->kind), &op->out, 2, in,
                         0, NULL);
}

/* A cast that needs double arithmetic the device lacks: to or from f64. */
bool ocl_cast_needs_host(const ocl_device *d, const pt_op *op) {
    return op->kind == PT_OP_COPY && !d->fp64 && op->in[0].dtype != op->out.dtype &&
           (op->in[0].dtype == PT_F64 || op->out.dtype == PT_F64);
}

static pt_status ocl_run_where(ocl_device *d, const pt_op *op) {
    const pt_operand *in[3] = {&op->in[0], &op->in[1], &op->in[2]};
    return ocl_pointwise(d, ocl_storage_dtype(d, op->out.dtype), OCL_K_EW_WHERE, &op->out, 3, in,
                         0, NULL);
}

static pt_status ocl_run_copy(ocl_device *d, const pt_op *op) {
    if (ocl_cast_needs_host(d, op)) return ocl_cast_via_host(d, op);
    return ocl_move(d, &op->out, &op->in[0]);
}

pt_status ocl_elementwise(ocl_device *d, const pt_op *op) {
    const pt_op_info *info = pt_op_info_of(op->kind);
    if (op->kind == PT_OP_COPY) return ocl_run_copy(d, op);
    if (op->kind == PT_OP_WHERE) return ocl_run_where(d, op);
    if (info->result == PT_OP_RESULT_U8) return ocl_run_compare(d, op);
    return ocl_run_arith(d, op, info->arity);
}
