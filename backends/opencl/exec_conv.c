/* libportable OpenCL backend — CONV2D, CONV2D_BWD_DATA and
 * CONV2D_BWD_WEIGHT (backend.h CONV) without a convolution library: the
 * plugin's own IM2COL and COL2IM kernels (window.cl, through exec_window.c)
 * and CLBlast (ocl_gemm), as portable/conv_plan.h lays them out, over
 * chunks of the batch whose columns fit PT_CONV_PLAN_BUDGET (and half the
 * device's largest buffer). The columns come from the core's caching
 * allocator for the call and go back when its work is queued; where even
 * that is more than the device has, the chunk halves until one image's
 * columns are all it needs.
 *
 * f32, and f64 where the device has cl_khr_fp64. f16 and bf16 are refused
 * like the plugin's other arithmetic (ocl_supports): the core runs them in
 * f32 through the plugin's conversions. Every sum runs in a fixed order
 * (BWD_WEIGHT adds the images into the result one after another): the same
 * bits on every run. */
#include <string.h>

#include "internal.h"
#include "portable/conv_plan.h"

/* The most column bytes one call holds at once on d. */
static size_t ocl_conv_budget(const ocl_device *d) {
    size_t budget = PT_CONV_PLAN_BUDGET;
    if (d->max_alloc && d->max_alloc / 2 < budget) budget = (size_t)(d->max_alloc / 2);
    return budget;
}

pt_status ocl_conv_supports(const ocl_device *d, const pt_op *op) {
    pt_conv_plan p;
    char why[256];
    if (!pt_conv_plan_of(op, &p, why, sizeof why))
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s: %s", pt_op_name(op->kind), why);
    const double image_bytes = (double)p.col_image * (double)pt_dtype_table_size(op->dtype);
    if (d->max_alloc && image_bytes > (double)d->max_alloc)
        return ocl_fail(PT_ERR_UNSUPPORTED,
                        "%s: one image's columns take %.0f bytes, more than one buffer of %s may hold (%llu, "
                        "CL_DEVICE_MAX_MEM_ALLOC_SIZE); use smaller images or another device",
                        pt_op_name(op->kind), image_bytes, d->name, (unsigned long long)d->max_alloc);
    return PT_OK;
}

/* One call: its device, descriptor, sizes and workspace. */
typedef struct ocl_conv_run {
    ocl_device *d;
    const pt_op *op;
    pt_conv_plan p;
    cl_mem cols;        /* a chunk's columns: this buffer ... */
    size_t cols_offset; /* ... from this byte */
} ocl_conv_run;

/* Buffer b and the element offset of its element 0. */
static pt_status ocl_conv_base(const ocl_conv_run *r, pt_conv_buffer b, cl_mem *mem, size_t *at) {
    const pt_operand *o = b == PT_CONV_IN0 ? &r->op->in[0] : b == PT_CONV_IN1 ? &r->op->in[1] : &r->op->out;
    if (b == PT_CONV_COLUMNS) {
        *mem = r->cols;
        *at = r->cols_offset / pt_dtype_table_size(r->op->dtype);
        return PT_OK;
    }
    cl_long e = 0;
    pt_status s = ocl_elem_offset(o, &e);
    *mem = (cl_mem)o->buf;
    *at = (size_t)e;
    return s;
}

/* A chunk's GEMMs, one batched call per step (or one call for all of a
 * weight gradient's images). */
static pt_status ocl_conv_gemms(void *ctx, const pt_conv_gemm *g) {
    const ocl_conv_run *r = ctx;
    ocl_gemm_call call;
    memset(&call, 0, sizeof call);
    size_t a0, b0, c0;
    pt_status s;
    if ((s = ocl_conv_base(r, g->a.buffer, &call.a, &a0)) != PT_OK ||
        (s = ocl_conv_base(r, g->b.buffer, &call.b, &b0)) != PT_OK ||
        (s = ocl_conv_base(r, g->c.buffer, &call.c, &c0)) != PT_OK)
        return s;
    call.dtype = r->op->dtype;
    call.M = (size_t)g->m;
    call.N = (size_t)g->n;
    call.K = (size_t)g->k;
    call.a_row = g->a.row;
    call.a_col = g->a.col;
    call.b_row = g->b.row;
    call.b_col = g->b.col;
    /* A weight gradient's images, one matrix each, in one launch of the
     * own kernels where they take it: the same sums, image after image. */
    const int64_t steps = pt_conv_plan_steps(g);
    if (g->sums_images && steps > 1 && steps <= INT32_MAX && pt_conv_plan_step(g, 0).batch == 1) {
        const pt_conv_step first = pt_conv_plan_step(g, 0), second = pt_conv_plan_step(g, 1);
        ocl_gemm_call sum = call;
        sum.ao = a0 + (size_t)first.a;
        sum.bo = b0 + (size_t)first.b;
        sum.co = c0 + (size_t)first.c;
        sum.a_stride = (size_t)(second.a - first.a);
        sum.b_stride = (size_t)(second.b - first.b);
        sum.c_stride = 0;
        sum.batch = 1;
        sum.sums = (size_t)steps;
        sum.accumulate = first.accumulate;
        if (second.c == first.c && ocl_gemm_own_takes(r->d, &sum)) return ocl_gemm(r->d, &sum, r->op);
    }
    for (int64_t i = 0; i < steps && s == PT_OK; ++i) {
        const pt_conv_step st = pt_conv_plan_step(g, i);
        call.ao = a0 + (size_t)st.a;
        call.bo = b0 + (size_t)st.b;
        call.co = c0 + (size_t)st.c;
        call.a_stride = (size_t)st.sa;
        call.b_stride = (size_t)st.sb;
        call.c_stride = (size_t)st.sc;
        call.batch = (size_t)st.batch;
        call.accumulate = st.accumulate;
        s = ocl_gemm(r->d, &call, r->op);
    }
    return s;
}

static pt_status ocl_conv_window(void *ctx, const pt_op *op) {
    return ocl_window_run(((const ocl_conv_run *)ctx)->d, op);
}

pt_status ocl_conv(ocl_device *d, int dev, const pt_op *op) {
    ocl_conv_run r;
    memset(&r, 0, sizeof r);
    r.d = d;
    r.op = op;
    char why[256];
    if (!pt_conv_plan_of(op, &r.p, why, sizeof why)) /* ocl_supports has said yes */
        return ocl_fail(PT_ERR_INTERNAL, "%s: %s", pt_op_name(op->kind), why);
    const size_t es = pt_dtype_table_size(op->dtype);
    int64_t nb = pt_conv_plan_chunk(&r.p, es, ocl_conv_budget(d));
    void *block = NULL;
    pt_status s;
    for (;;) {
        s = ocl_temp_alloc(d, dev, (size_t)(nb * r.p.col_image) * es, &r.cols, &r.cols_offset, &block);
        if (s != PT_ERR_OUT_OF_MEMORY || nb == 1) break;
        nb = (nb + 1) / 2; /* less at once, more chunks */
    }
    if (s != PT_OK) return s;
    if (r.cols_offset % es != 0)
        s = ocl_fail(PT_ERR_INTERNAL, "%s: the allocator gave columns at byte %zu, not a multiple of %zu",
                     pt_op_name(op->kind), r.cols_offset, es);
    const pt_conv_plan_ops ops = {&r, ocl_conv_window, ocl_conv_gemms};
    if (s == PT_OK) s = pt_conv_plan_run(op, &r.p, nb, r.cols, r.cols_offset, &ops);
    ocl_temp_free(d, dev, r.cols, block);
    return s;
}
