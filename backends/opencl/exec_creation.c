/* libportable OpenCL backend — the creation family: FILL (any dtype; f64
 * by its bits through the i64 program on a device without fp64), ARANGE and
 * RAND_UNIFORM / RAND_NORMAL (kernels/creation.cl; Philox as philox.h). */
#include <math.h>
#include <string.h>

#include "internal.h"

static pt_status ocl_run_fill(ocl_device *d, const pt_op *op) {
    const pt_dtype t = ocl_storage_dtype(d, op->out.dtype);
    ocl_scalar sc = ocl_make_scalar(op->out.dtype, op->scalar);
    if (t != op->out.dtype) { /* f64 through the i64 program: the double's bits */
        const double v = op->scalar;
        memcpy(&sc.v.i64, &v, sizeof v);
        sc.size = sizeof(cl_long);
    }
    return ocl_pointwise(d, t, OCL_K_FILL, &op->out, 0, NULL, 1, &sc);
}

static bool ocl_is_int64_value(double v) {
    return v == floor(v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0;
}

static pt_status ocl_run_arange(ocl_device *d, const pt_op *op) {
    pt_dtype t = op->out.dtype;
    cl_kernel k;
    size_t wg;
    pt_status s = ocl_kernel(d, t, OCL_K_ARANGE, &k, &wg);
    if (s != PT_OK) return s;
    cl_long oo = 0, n = ocl_numel(&op->out);
    if ((s = ocl_elem_offset(&op->out, &oo)) != PT_OK) return s;
    /* Integers from integral start/step: exact 64-bit arithmetic. */
    bool integral = !pt_dtype_is_float(t) && ocl_is_int64_value(op->scalar) &&
                    ocl_is_int64_value(op->scalar2);
    cl_int mode = integral ? PT_K_ARANGE_INT : PT_K_ARANGE_FLOAT;
    cl_long start_i = integral ? (cl_long)op->scalar : 0;
    cl_long step_i = integral ? (cl_long)op->scalar2 : 0;
    cl_double start_d = op->scalar, step_d = op->scalar2;
    cl_float start_f = (cl_float)op->scalar, step_f = (cl_float)op->scalar2;
    cl_mem out = (cl_mem)op->out.buf;
    ocl_arg args[8] = {OCL_ARG(out),     OCL_ARG(oo),     OCL_ARG(n), OCL_ARG(mode),
                       OCL_ARG(start_i), OCL_ARG(step_i), {0, NULL},  {0, NULL}};
    /* The kernel computes in double where the device has it (see creation.cl). */
    if (d->fp64) {
        args[6] = (ocl_arg)OCL_ARG(start_d);
        args[7] = (ocl_arg)OCL_ARG(step_d);
    } else {
        args[6] = (ocl_arg)OCL_ARG(start_f);
        args[7] = (ocl_arg)OCL_ARG(step_f);
    }
    if ((s = ocl_set_args(d, k, "arange", 8, args)) != PT_OK) return s;
    return ocl_launch_items(d, k, "arange", wg, n);
}

static pt_status ocl_run_rand(ocl_device *d, const pt_op *op) {
    pt_dtype t = op->out.dtype;
    bool normal = op->kind == PT_OP_RAND_NORMAL;
    const char *name = normal ? "rand_normal" : "rand_uniform";
    cl_kernel k;
    size_t wg;
    pt_status s = ocl_kernel(d, t, normal ? OCL_K_RAND_NORMAL : OCL_K_RAND_UNIFORM, &k, &wg);
    if (s != PT_OK) return s;
    cl_long oo = 0, n = ocl_numel(&op->out);
    if ((s = ocl_elem_offset(&op->out, &oo)) != PT_OK) return s;
    cl_mem out = (cl_mem)op->out.buf;
    cl_ulong seed = op->seed, counter = op->counter;
    ocl_arg args[5] = {OCL_ARG(out), OCL_ARG(oo), OCL_ARG(n), OCL_ARG(seed), OCL_ARG(counter)};
    if ((s = ocl_set_args(d, k, name, 5, args)) != PT_OK) return s;
    return ocl_launch_items(d, k, name, wg, n);
}

pt_status ocl_creation(ocl_device *d, const pt_op *op) {
    return op->kind == PT_OP_FILL     ? ocl_run_fill(d, op)
           : op->kind == PT_OP_ARANGE ? ocl_run_arange(d, op)
                                      : ocl_run_rand(d, op);
}
