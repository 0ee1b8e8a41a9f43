/* libportable CUDA backend — supports() and execute(): every pt_op_kind of
 * backend.h, turned into a launch record for the kernels (cuda_kernels.h)
 * or a cuBLAS call (cuda_matmul.c), queued on the device's stream.
 *
 * Dtypes: f32 f64 i32 i64 for arithmetic; u8 also for COPY, FILL, EQ/LT/GT
 * inputs, WHERE, GATHER values and MAX; float only for POW, the transcendental
 * ops, MEAN, SOFTMAX/LOG_SOFTMAX, MATMUL and RAND_*. Anything else is
 * PT_ERR_UNSUPPORTED with the kind and dtypes named. */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

/* ---- What is supported ---- */

static bool is_float(pt_dtype t) { return t == PT_F32 || t == PT_F64; }
static bool is_int(pt_dtype t) { return t == PT_I32 || t == PT_I64; }
static bool is_numeric(pt_dtype t) { return is_float(t) || is_int(t); }
static bool is_any(pt_dtype t) { return is_numeric(t) || t == PT_U8; }

_Static_assert(PT__OP_COUNT == 36, "a pt_op_kind was added: name it below and support it");

static const char *kind_name(pt_op_kind k) {
    static const char *const names[PT__OP_COUNT] = {
        "FILL", "ARANGE", "RAND_UNIFORM", "RAND_NORMAL", "COPY", "ADD", "SUB", "MUL", "DIV", "POW",
        "MAXIMUM", "MINIMUM", "EQ", "LT", "GT", "ADD_SCALAR", "MUL_SCALAR", "NEG", "ABS", "EXP", "LOG",
        "SQRT", "RELU", "SIGMOID", "TANH", "WHERE", "AXPY", "SUM", "MEAN", "MAX", "ARGMAX", "SOFTMAX",
        "LOG_SOFTMAX", "MATMUL", "GATHER", "ONE_HOT"};
    return (unsigned)k < PT__OP_COUNT ? names[k] : "unknown op";
}

static const char *dtype_name(pt_dtype t) {
    static const char *const names[PT__DTYPE_COUNT] = {"f32", "f64", "i32", "i64", "u8"};
    return (unsigned)t < PT__DTYPE_COUNT ? names[t] : "?";
}

/* Number of inputs an element-wise or creation kind reads (-1: not one). */
static int ew_arity(pt_op_kind k) {
    switch (k) {
    case PT_OP_FILL: case PT_OP_ARANGE: case PT_OP_RAND_UNIFORM: case PT_OP_RAND_NORMAL: return 0;
    case PT_OP_COPY: case PT_OP_ADD_SCALAR: case PT_OP_MUL_SCALAR: case PT_OP_NEG: case PT_OP_ABS:
    case PT_OP_EXP: case PT_OP_LOG: case PT_OP_SQRT: case PT_OP_RELU: case PT_OP_SIGMOID:
    case PT_OP_TANH: return 1;
    case PT_OP_ADD: case PT_OP_SUB: case PT_OP_MUL: case PT_OP_DIV: case PT_OP_POW:
    case PT_OP_MAXIMUM: case PT_OP_MINIMUM: case PT_OP_EQ: case PT_OP_LT: case PT_OP_GT:
    case PT_OP_AXPY: return 2;
    case PT_OP_WHERE: return 3;
    default: return -1;
    }
}

static bool dtypes_ok(const pt_op *op) {
    const pt_dtype o = op->out.dtype;
    const pt_dtype a = op->n_inputs > 0 ? op->in[0].dtype : o;
    const pt_dtype b = op->n_inputs > 1 ? op->in[1].dtype : a;
    const pt_dtype c = op->n_inputs > 2 ? op->in[2].dtype : b;
    switch (op->kind) {
    case PT_OP_FILL: return is_any(o);
    case PT_OP_ARANGE: return is_any(o);
    case PT_OP_RAND_UNIFORM: case PT_OP_RAND_NORMAL: return is_float(o);
    case PT_OP_COPY: return is_any(o) && is_any(a);
    case PT_OP_ADD: case PT_OP_SUB: case PT_OP_MUL: case PT_OP_DIV: case PT_OP_MAXIMUM:
    case PT_OP_MINIMUM: case PT_OP_AXPY: return is_numeric(o) && a == o && b == o;
    case PT_OP_POW: return is_float(o) && a == o && b == o;
    case PT_OP_EQ: case PT_OP_LT: case PT_OP_GT: return o == PT_U8 && is_any(a) && b == a;
    case PT_OP_ADD_SCALAR: case PT_OP_MUL_SCALAR: case PT_OP_NEG: case PT_OP_ABS: case PT_OP_RELU:
        return is_numeric(o) && a == o;
    case PT_OP_EXP: case PT_OP_LOG: case PT_OP_SQRT: case PT_OP_SIGMOID: case PT_OP_TANH:
        return is_float(o) && a == o;
    case PT_OP_WHERE: return a == PT_U8 && is_any(o) && b == o && c == o;
    case PT_OP_SUM: return is_numeric(a) && (o == a || (is_int(a) && o == PT_I64));
    case PT_OP_MEAN: return is_float(a) && o == a;
    case PT_OP_MAX: return is_any(a) && o == a;
    case PT_OP_ARGMAX: return is_numeric(a) && o == PT_I64;
    case PT_OP_SOFTMAX: case PT_OP_LOG_SOFTMAX: return is_float(a) && o == a;
    case PT_OP_MATMUL: return is_float(o) && a == o && b == o;
    case PT_OP_GATHER: return is_any(a) && o == a && is_int(b);
    case PT_OP_ONE_HOT: return is_int(a) && is_any(o);
    default: return false;
    }
}

pt_status ptcu_supports(const pt_op *op) {
    if ((unsigned)op->kind >= PT__OP_COUNT) {
        ptcu_host->set_error(PT_ERR_UNSUPPORTED, "op kind %d is unknown to the cuda backend", (int)op->kind);
        return PT_ERR_UNSUPPORTED;
    }
    if (!dtypes_ok(op)) {
        char ins[96] = "";
        for (int k = 0; k < op->n_inputs && k < PT_OP_MAX_INPUTS; ++k) {
            size_t used = strlen(ins);
            snprintf(ins + used, sizeof ins - used, "%s%s", k ? ", " : "", dtype_name(op->in[k].dtype));
        }
        ptcu_host->set_error(PT_ERR_UNSUPPORTED,
                             "the cuda backend has no %s kernel for inputs (%s) -> %s; "
                             "cast to a supported dtype first (see backends/cuda/README.md)",
                             kind_name(op->kind), ins, dtype_name(op->out.dtype));
        return PT_ERR_UNSUPPORTED;
    }
    return PT_OK;
}

pt_status ptcu_vt_supports(int dev, const pt_op *op) {
    (void)dev;
    return ptcu_supports(op);
}

/* ---- Element-wise and creation ops ---- */

static void *operand_ptr(const pt_operand *o) { return (char *)o->buf + o->offset; }

static size_t dtype_bytes(pt_dtype t) {
    switch (t) {
    case PT_F32: case PT_I32: return 4;
    case PT_F64: case PT_I64: return 8;
    case PT_U8: return 1;
    default: return 0;
    }
}

static int max_blocks(const ptcu_device *d) { return 16 * (d->sm_count > 0 ? d->sm_count : 1); }

static pt_status launched(cudaError_t e, const pt_op *op) {
    if (e == cudaSuccess) return PT_OK;
    return ptcu_cuda_error(e, "%s (%s -> %s) kernel launch", kind_name(op->kind),
                           op->n_inputs > 0 ? dtype_name(op->in[0].dtype) : "-", dtype_name(op->out.dtype));
}

static pt_status run_elementwise(ptcu_device *d, const pt_op *op, int arity) {
    ptcu_ew_launch l;
    memset(&l, 0, sizeof l);
    l.kind = op->kind;
    l.n_inputs = arity;
    l.dtype[0] = op->out.dtype;
    l.ptr[0] = operand_ptr(&op->out);
    for (int k = 0; k < arity; ++k) {
        l.dtype[k + 1] = op->in[k].dtype;
        l.ptr[k + 1] = operand_ptr(&op->in[k]);
    }
    ptcu_geometry_build(&op->out, op->in, arity, &l);
    l.scalar = op->scalar;
    l.scalar2 = op->scalar2;
    l.seed = op->seed;
    l.counter = op->counter;
    l.max_blocks = max_blocks(d);

    /* A same-dtype contiguous copy is a plain device-to-device memcpy. */
    if (op->kind == PT_OP_COPY && l.contiguous && op->in[0].dtype == op->out.dtype &&
        (l.geo.strides[1][0] == 1 || l.numel == 1)) {
        cudaError_t e = cudaMemcpyAsync(l.ptr[0], l.ptr[1], (size_t)l.numel * dtype_bytes(op->out.dtype),
                                        cudaMemcpyDeviceToDevice, d->stream);
        if (e != cudaSuccess) return ptcu_cuda_error(e, "COPY: cudaMemcpyAsync device to device");
        return PT_OK;
    }
    cudaError_t e;
    switch (op->kind) {
    case PT_OP_ADD: case PT_OP_SUB: case PT_OP_MUL: case PT_OP_DIV: case PT_OP_POW:
    case PT_OP_MAXIMUM: case PT_OP_MINIMUM: case PT_OP_AXPY:
        e = ptcu_launch_binary(&l, d->stream);
        break;
    case PT_OP_EQ: case PT_OP_LT: case PT_OP_GT: case PT_OP_WHERE:
        e = ptcu_launch_compare(&l, d->stream);
        break;
    case PT_OP_COPY: case PT_OP_FILL: case PT_OP_ARANGE: case PT_OP_RAND_UNIFORM:
    case PT_OP_RAND_NORMAL:
        e = ptcu_launch_data(&l, d->stream);
        break;
    default:
        e = ptcu_launch_unary(&l, d->stream);
        break;
    }
    return launched(e, op);
}

pt_status ptcu_copy_contiguous(ptcu_device *d, const pt_operand *src, void *dst) {
    pt_operand out;
    memset(&out, 0, sizeof out);
    out.buf = dst;
    out.offset = 0;
    out.dtype = src->dtype;
    out.ndim = src->ndim;
    int64_t stride = 1;
    for (int dd = src->ndim - 1; dd >= 0; --dd) {
        out.shape[dd] = src->shape[dd];
        out.strides[dd] = stride;
        stride *= src->shape[dd];
    }
    pt_op op;
    memset(&op, 0, sizeof op);
    op.kind = PT_OP_COPY;
    op.dtype = src->dtype;
    op.n_inputs = 1;
    op.out = out;
    op.in[0] = *src;
    return run_elementwise(d, &op, 1);
}

/* ---- Reductions and softmax: in [outer, r, inner] ---- */

static pt_status run_reduce(ptcu_device *d, const pt_op *op) {
    const pt_operand *x = &op->in[0];
    ptcu_reduce_launch l;
    memset(&l, 0, sizeof l);
    l.kind = op->kind;
    l.in_dtype = x->dtype;
    l.out_dtype = op->out.dtype;
    l.in = operand_ptr(x);
    l.out = operand_ptr(&op->out);
    l.outer = x->shape[0];
    l.r = x->shape[1];
    l.inner = x->shape[2];
    l.s_outer = x->strides[0];
    l.s_r = x->strides[1];
    l.s_inner = x->strides[2];
    l.sm_count = d->sm_count;
    const size_t need = ptcu_reduce_scratch_bytes(&l);
    pthread_mutex_lock(&d->lock);
    pt_status s = PT_OK;
    if (need > 0) s = ptcu_scratch(d, need, &l.scratch);
    if (s == PT_OK) s = launched(ptcu_launch_reduce(&l, d->stream), op);
    pthread_mutex_unlock(&d->lock);
    return s;
}

static pt_status run_softmax(ptcu_device *d, const pt_op *op) {
    const pt_operand *x = &op->in[0];
    ptcu_softmax_launch l;
    memset(&l, 0, sizeof l);
    l.log = op->kind == PT_OP_LOG_SOFTMAX;
    l.dtype = x->dtype;
    l.in = operand_ptr(x);
    l.out = operand_ptr(&op->out);
    l.outer = x->shape[0];
    l.r = x->shape[1];
    l.inner = x->shape[2];
    l.s_outer = x->strides[0];
    l.s_r = x->strides[1];
    l.s_inner = x->strides[2];
    l.sm_count = d->sm_count;
    return launched(ptcu_launch_softmax(&l, d->stream), op);
}

/* ---- Indexing ---- */

static pt_status run_gather(ptcu_device *d, const pt_op *op) {
    const pt_operand *x = &op->in[0], *idx = &op->in[1];
    ptcu_gather_launch l;
    memset(&l, 0, sizeof l);
    l.elem_size = dtype_bytes(x->dtype);
    l.index_dtype = idx->dtype;
    l.x = operand_ptr(x);
    l.index = operand_ptr(idx);
    l.out = operand_ptr(&op->out);
    l.outer = x->shape[0];
    l.r_in = x->shape[1];
    l.r_idx = idx->shape[1];
    l.inner = x->shape[2];
    for (int k = 0; k < 3; ++k) {
        l.xs[k] = x->strides[k];
        l.is[k] = idx->strides[k];
    }
    l.sm_count = d->sm_count;
    return launched(ptcu_launch_gather(&l, d->stream), op);
}

static uint64_t one_bits(pt_dtype t) {
    union {
        float f;
        double d;
        uint32_t u32;
        uint64_t u64;
    } v;
    memset(&v, 0, sizeof v);
    switch (t) {
    case PT_F32: v.f = 1.0f; return v.u32;
    case PT_F64: v.d = 1.0; return v.u64;
    default: return 1;
    }
}

static pt_status run_one_hot(ptcu_device *d, const pt_op *op) {
    const pt_operand *labels = &op->in[0];
    ptcu_one_hot_launch l;
    memset(&l, 0, sizeof l);
    l.elem_size = dtype_bytes(op->out.dtype);
    l.one_bits = one_bits(op->out.dtype);
    l.label_dtype = labels->dtype;
    l.labels = operand_ptr(labels);
    l.label_stride = labels->strides[0];
    l.out = operand_ptr(&op->out);
    l.n = labels->shape[0];
    l.count = op->count;
    l.sm_count = d->sm_count;
    return launched(ptcu_launch_one_hot(&l, d->stream), op);
}

/* ---- Dispatch ---- */

pt_status ptcu_execute(ptcu_device *d, const pt_op *op) {
    pt_status s = ptcu_supports(op);
    if (s != PT_OK) return s;
    if ((s = ptcu_select(d, kind_name(op->kind))) != PT_OK) return s;
    const int arity = ew_arity(op->kind);
    if (arity >= 0) return run_elementwise(d, op, arity);
    switch (op->kind) {
    case PT_OP_SUM: case PT_OP_MEAN: case PT_OP_MAX: case PT_OP_ARGMAX: return run_reduce(d, op);
    case PT_OP_SOFTMAX: case PT_OP_LOG_SOFTMAX: return run_softmax(d, op);
    case PT_OP_MATMUL: return ptcu_matmul(d, op);
    case PT_OP_GATHER: return run_gather(d, op);
    case PT_OP_ONE_HOT: return run_one_hot(d, op);
    default:
        ptcu_host->set_error(PT_ERR_UNSUPPORTED, "op %s is not handled by the cuda backend", kind_name(op->kind));
        return PT_ERR_UNSUPPORTED;
    }
}

pt_status ptcu_vt_execute(int dev, const pt_op *op) { return ptcu_execute(ptcu_dev(dev), op); }
