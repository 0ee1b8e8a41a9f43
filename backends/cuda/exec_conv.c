/* libportable CUDA backend — CONV2D, CONV2D_BWD_DATA and CONV2D_BWD_WEIGHT
 * (backend.h CONV) without a convolution library: the plugin's own IM2COL
 * and COL2IM kernels (kernels_window.cu, through exec_window.c) and cuBLAS
 * (ptcu_gemm), as portable/conv_plan.h lays them out, over chunks of the
 * batch whose columns fit PT_CONV_PLAN_BUDGET. The columns come from the
 * core's caching allocator for the call and go back when its work is
 * queued; where even that is more than the device has, the chunk halves
 * until one image's columns are all it needs.
 *
 * Precision is matmul's (exec_matmul.c: FP32, TF32 with
 * PORTABLE_CUDA_TF32=1, 16-bit inputs with f32 accumulation). f16/bf16:
 * the forward pass rounds each output once; BWD_DATA rounds the GEMM's
 * columns and then their col2im sum, as the core's composed path does;
 * BWD_WEIGHT sums every image into an f32 copy of the weight gradient and
 * rounds it once at the end. Every sum runs in a fixed order: the same
 * bits on every run. */
#include <limits.h>
#include <string.h>

#include "internal.h"
#include "portable/conv_plan.h"

static bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

pt_status ptcu_conv_supports(const pt_op *op) {
    pt_conv_plan p;
    char why[256];
    if (!pt_conv_plan_of(op, &p, why, sizeof why))
        return ptcu_fail(PT_ERR_UNSUPPORTED, "%s: %s", pt_op_name(op->kind), why);
    if (!fits_int(p.kdim) || !fits_int(p.p) || !fits_int(p.opg) || !fits_int(p.n) || !fits_int(p.groups))
        return ptcu_fail(PT_ERR_UNSUPPORTED,
                         "%s: its GEMMs ([%lld x %lld] by [%lld x %lld], %lld images, %lld groups) exceed "
                         "cuBLAS's 32-bit sizes; pt_f_conv2d composes such a convolution from im2col and matmul",
                         pt_op_name(op->kind), (long long)p.opg, (long long)p.kdim, (long long)p.kdim,
                         (long long)p.p, (long long)p.n, (long long)p.groups);
    return PT_OK;
}

/* One call: its device, descriptor, sizes and workspace. */
typedef struct conv_run {
    ptcu_device *d;
    const pt_op *op;
    pt_conv_plan p;
    size_t es;   /* the dtype's element size */
    char *cols;  /* a chunk's columns */
    float *acc;  /* BWD_WEIGHT in 16 bits: the f32 sum; else NULL */
} conv_run;

/* Element 0 of buffer b and the size of its elements. */
static char *base_of(const conv_run *r, pt_conv_buffer b, size_t *es) {
    *es = r->es;
    switch (b) {
    case PT_CONV_IN0: return ptcu_operand_ptr(&r->op->in[0]);
    case PT_CONV_IN1: return ptcu_operand_ptr(&r->op->in[1]);
    case PT_CONV_OUT:
        if (r->acc) {
            *es = sizeof(float);
            return (char *)r->acc;
        }
        return ptcu_operand_ptr(&r->op->out);
    case PT_CONV_COLUMNS: break;
    }
    return r->cols;
}

/* A chunk's GEMMs, one batched cuBLAS call per step. */
static pt_status gemms(void *ctx, const pt_conv_gemm *g) {
    const conv_run *r = ctx;
    size_t ea, eb, ec;
    char *a = base_of(r, g->a.buffer, &ea), *b = base_of(r, g->b.buffer, &eb), *c = base_of(r, g->c.buffer, &ec);
    ptcu_gemm_call call;
    memset(&call, 0, sizeof call);
    call.dtype = r->op->dtype;
    call.out_f32 = g->c.buffer == PT_CONV_OUT && r->acc;
    call.M = g->m;
    call.N = g->n;
    call.K = g->k;
    call.la = ptcu_matrix_layout_of(g->m, g->k, g->a.row, g->a.col);
    call.lb = ptcu_matrix_layout_of(g->k, g->n, g->b.row, g->b.col);
    if (call.la.layout == PTCU_NEEDS_COPY || call.lb.layout == PTCU_NEEDS_COPY || g->c.row != g->n || g->c.col != 1)
        return ptcu_fail(PT_ERR_INTERNAL, "%s: conv_plan.h gave a GEMM operand cuBLAS cannot take as it is",
                         pt_op_name(r->op->kind));
    pt_status s = PT_OK;
    for (int64_t i = 0; i < pt_conv_plan_steps(g) && s == PT_OK; ++i) {
        const pt_conv_step st = pt_conv_plan_step(g, i);
        call.a = a + (size_t)st.a * ea;
        call.b = b + (size_t)st.b * eb;
        call.c = c + (size_t)st.c * ec;
        call.sa = st.sa;
        call.sb = st.sb;
        call.sc = st.sc;
        call.batch = st.batch;
        call.accumulate = st.accumulate;
        s = ptcu_gemm(r->d, &call, r->op);
    }
    return s;
}

static pt_status window(void *ctx, const pt_op *op) { return ptcu_window(((const conv_run *)ctx)->d, op); }

/* out = the f32 sum in acc, rounded once (the plugin's own COPY). */
static pt_status round_sum(const conv_run *r) {
    const int64_t n = r->p.co * r->p.kdim;
    pt_op c;
    memset(&c, 0, sizeof c);
    c.kind = PT_OP_COPY;
    c.dtype = PT_F32;
    c.n_inputs = 1;
    c.out = r->op->out;
    c.out.ndim = 1;
    c.out.shape[0] = n;
    c.out.strides[0] = 1;
    c.in[0] = c.out;
    c.in[0].buf = r->acc;
    c.in[0].offset = 0;
    c.in[0].dtype = PT_F32;
    return ptcu_elementwise(r->d, &c);
}

static size_t align_up(size_t v) { return (v + 255) & ~(size_t)255; }

pt_status ptcu_conv(ptcu_device *d, const pt_op *op) {
    conv_run r;
    memset(&r, 0, sizeof r);
    r.d = d;
    r.op = op;
    r.es = pt_dtype_table_size(op->dtype);
    char why[256];
    if (!pt_conv_plan_of(op, &r.p, why, sizeof why)) /* ptcu_supports has said yes */
        return ptcu_fail(PT_ERR_INTERNAL, "%s: %s", pt_op_name(op->kind), why);
    const bool sum32 = op->kind == PT_OP_CONV2D_BWD_WEIGHT && pt_dtype_is_half(op->dtype);
    const size_t acc_bytes = sum32 ? align_up((size_t)(r.p.co * r.p.kdim) * sizeof(float)) : 0;
    int64_t nb = pt_conv_plan_chunk(&r.p, r.es, PT_CONV_PLAN_BUDGET);
    void *mem = NULL, *block = NULL;
    pt_status s;
    for (;;) {
        s = ptcu_temp_alloc(d, acc_bytes + (size_t)(nb * r.p.col_image) * r.es, &mem, &block);
        if (s != PT_ERR_OUT_OF_MEMORY || nb == 1) break;
        nb = (nb + 1) / 2; /* less at once, more chunks */
    }
    if (s != PT_OK) return s;
    r.acc = sum32 ? (float *)mem : NULL;
    r.cols = (char *)mem + acc_bytes;
    /* The cuBLAS handle is the device's: one product at a time. */
    pthread_mutex_lock(&d->lock);
    const pt_conv_plan_ops ops = {&r, window, gemms};
    s = pt_conv_plan_run(op, &r.p, nb, r.cols, 0, &ops);
    if (s == PT_OK && sum32) s = round_sum(&r);
    pthread_mutex_unlock(&d->lock);
    ptcu_temp_free(d, mem, block);
    return s;
}
