/* libportable OpenCL backend — launching a kernel: operand offsets in
 * elements, kernel arguments, scalars of a program's element type and 1-D
 * work sizes, for every file that queues kernels (ocl_execute.c,
 * ocl_window.c) and for the GEMMs' offsets (ocl_gemm.c). */
#include <string.h>

#include "ocl_internal.h"
#include "portable/half.h"
#include "portable/numeric_rules.h"

pt_status ocl_elem_offset(const pt_operand *x, cl_long *out) {
    size_t es = pt_dtype_table_size(x->dtype);
    if (es == 0 || x->offset % es != 0)
        return ocl_fail(PT_ERR_INTERNAL,
                        "operand byte offset %zu is not a multiple of its %s element size",
                        x->offset, pt_dtype_table_name(x->dtype));
    *out = (cl_long)(x->offset / es);
    return PT_OK;
}

int64_t ocl_numel(const pt_operand *x) {
    int64_t n = 1;
    for (int d = 0; d < x->ndim; ++d) n *= x->shape[d];
    return n;
}

/* Integer scalars convert as portable/numeric_rules.h says (as in copy_to_<dst>). */
ocl_scalar ocl_make_scalar(pt_dtype t, double v) {
    ocl_scalar s;
    memset(&s, 0, sizeof s);
    switch (t) {
    case PT_F32: s.v.f32 = (cl_float)v; s.size = sizeof(cl_float); break;
    case PT_F64: s.v.f64 = v; s.size = sizeof(cl_double); break;
    case PT_I32: s.v.i32 = pt_sat_i32_f64(v); s.size = sizeof(cl_int); break;
    case PT_I64: s.v.i64 = pt_sat_i64_f64(v); s.size = sizeof(cl_long); break;
    case PT_F16: s.v.u16 = pt_f64_to_f16_bits(v); s.size = sizeof(cl_ushort); break;
    case PT_BF16: s.v.u16 = pt_f64_to_bf16_bits(v); s.size = sizeof(cl_ushort); break;
    default: s.v.u8 = pt_wrap_u8_f64(v); s.size = sizeof(cl_uchar); break;
    }
    return s;
}

pt_status ocl_set_args(cl_kernel k, const char *name, int n, const ocl_arg *args) {
    for (int i = 0; i < n; ++i) {
        cl_int err = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].value);
        if (err != CL_SUCCESS) return ocl_cl_fail(err, "clSetKernelArg(%s, argument %d)", name, i);
    }
    return PT_OK;
}

/* One 1-D launch of global work-items (from global id `offset`) in groups of
 * local. */
pt_status ocl_enqueue_at(ocl_device *d, cl_kernel k, const char *name, size_t offset,
                                size_t global, size_t local) {
    cl_int err = clEnqueueNDRangeKernel(d->queue, k, 1, offset ? &offset : NULL, &global, &local,
                                        0, NULL, NULL);
    if (err != CL_SUCCESS)
        return ocl_cl_fail(err, "clEnqueueNDRangeKernel(%s, offset %zu, global %zu, local %zu) on %s",
                           name, offset, global, local, d->name);
    return PT_OK;
}

pt_status ocl_enqueue(ocl_device *d, cl_kernel k, const char *name, size_t global,
                             size_t local) {
    return ocl_enqueue_at(d, k, name, 0, global, local);
}

/* Work sizes of a one-work-item-per-element kernel over n items: groups of
 * up to 256, n rounded up to a whole number of groups. */
pt_status ocl_launch_items(ocl_device *d, cl_kernel k, const char *name, size_t wg,
                                  int64_t n) {
    size_t local = wg < 256 ? wg : 256;
    size_t global = ((size_t)n + local - 1) / local * local;
    return ocl_enqueue(d, k, name, global, local);
}

