/* libportable OpenCL backend — casts to and from f64 on a device without
 * cl_khr_fp64, through the host.
 *
 * Such a device stores f64 (its bytes are moved by the i64 program, see
 * launch.c's ocl_storage_dtype) but cannot convert: converting is
 * double arithmetic. So the source is gathered into a contiguous device
 * buffer (a same-dtype move, any strides), read back, converted on the host
 * by the rules of portable/numeric_rules.h, written to the device and moved
 * into the output's strides. Slow (two transfers and a synchronisation) but
 * exact; on a device with fp64 the copy_to_<dst> kernels run instead. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "portable/half.h"
#include "portable/numeric_rules.h"

/* A contiguous operand of `like`'s shape in a fresh buffer of dtype t. */
static pt_status ocl_contiguous_temp(ocl_device *d, const pt_operand *like, pt_dtype t,
                                     size_t n, pt_operand *out) {
    memset(out, 0, sizeof *out);
    out->dtype = t;
    out->ndim = like->ndim;
    int64_t stride = 1;
    for (int i = like->ndim - 1; i >= 0; --i) {
        out->shape[i] = like->shape[i];
        out->strides[i] = stride;
        stride *= like->shape[i];
    }
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, n * pt_dtype_table_size(t), NULL, &err);
    if (!m)
        return ocl_cl_fail(err, "clCreateBuffer(%zu bytes) for a cast through the host",
                           n * pt_dtype_table_size(t));
    atomic_fetch_add_explicit(&d->buffers_made, 1, memory_order_relaxed); /* see launch_args.c */
    out->buf = m;
    return PT_OK;
}

static double ocl_host_load(pt_dtype t, const void *p, size_t i) {
    switch (t) {
    case PT_F32: return ((const float *)p)[i];
    case PT_F64: return ((const double *)p)[i];
    case PT_I32: return ((const int32_t *)p)[i];
    case PT_I64: return (double)((const int64_t *)p)[i];
    case PT_F16: return pt_f16_bits_to_f32(((const uint16_t *)p)[i]);
    case PT_BF16: return pt_bf16_bits_to_f32(((const uint16_t *)p)[i]);
    default: return ((const uint8_t *)p)[i];
    }
}

/* One element converted as the copy_to_<dst> kernels convert it. i64 to f64
 * goes through double, which rounds to nearest as (double) in the kernel. */
static void ocl_host_store(pt_dtype t, void *p, size_t i, double v) {
    switch (t) {
    case PT_F32: ((float *)p)[i] = (float)v; break;
    case PT_F64: ((double *)p)[i] = v; break;
    case PT_I32: ((int32_t *)p)[i] = pt_sat_i32_f64(v); break;
    case PT_I64: ((int64_t *)p)[i] = pt_sat_i64_f64(v); break;
    /* one rounding from the double, as copy_to_f16/bf16 do (through a float
     * rounded to odd) */
    case PT_F16: ((uint16_t *)p)[i] = pt_f64_to_f16_bits(v); break;
    case PT_BF16: ((uint16_t *)p)[i] = pt_f64_to_bf16_bits(v); break;
    default: ((uint8_t *)p)[i] = pt_wrap_u8_f64(v); break;
    }
}

pt_status ocl_cast_via_host(ocl_device *d, const pt_op *op) {
    const pt_operand *src = &op->in[0], *out = &op->out;
    size_t n = 1;
    for (int i = 0; i < out->ndim; ++i) n *= (size_t)out->shape[i];
    if (n == 0) return PT_OK;
    const size_t es_in = pt_dtype_table_size(src->dtype), es_out = pt_dtype_table_size(out->dtype);
    pt_operand gathered, staged;
    memset(&staged, 0, sizeof staged);
    pt_status s = ocl_contiguous_temp(d, out, src->dtype, n, &gathered);
    if (s != PT_OK) return s;
    void *host_in = malloc(n * es_in), *host_out = malloc(n * es_out);
    if (!host_in || !host_out) {
        s = ocl_fail(PT_ERR_OUT_OF_MEMORY, "copy %s -> %s through the host: no %zu bytes of host memory",
                     pt_dtype_table_name(src->dtype), pt_dtype_table_name(out->dtype),
                     n * (es_in + es_out));
        goto done;
    }
    if ((s = ocl_move(d, &gathered, src)) != PT_OK) goto done;
    cl_int err = clEnqueueReadBuffer(d->queue, (cl_mem)gathered.buf, CL_TRUE, 0, n * es_in,
                                     host_in, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        s = ocl_cl_fail(err, "clEnqueueReadBuffer(%zu bytes) of a cast through the host", n * es_in);
        goto done;
    }
    for (size_t i = 0; i < n; ++i)
        ocl_host_store(out->dtype, host_out, i, ocl_host_load(src->dtype, host_in, i));
    if (ocl_is_contiguous(out)) {
        err = clEnqueueWriteBuffer(d->queue, (cl_mem)out->buf, CL_TRUE, out->offset, n * es_out,
                                   host_out, 0, NULL, NULL);
    } else {
        if ((s = ocl_contiguous_temp(d, out, out->dtype, n, &staged)) != PT_OK) goto done;
        err = clEnqueueWriteBuffer(d->queue, (cl_mem)staged.buf, CL_TRUE, 0, n * es_out, host_out,
                                   0, NULL, NULL);
        if (err == CL_SUCCESS) s = ocl_move(d, out, &staged);
    }
    if (err != CL_SUCCESS)
        s = ocl_cl_fail(err, "clEnqueueWriteBuffer(%zu bytes) of a cast through the host",
                        n * es_out);
done:
    /* Released buffers live on until the queued work using them ends. */
    clReleaseMemObject((cl_mem)gathered.buf);
    if (staged.buf) clReleaseMemObject((cl_mem)staged.buf);
    free(host_in);
    free(host_out);
    return s;
}
