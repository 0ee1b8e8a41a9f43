/* libportable cpu backend — the plugin entry point and the one vtable.
 *
 * This file owns every vtable member: admission (pt_backend_entry), memory,
 * transfers and the execute/supports dispatch to the op families. Buffers are
 * 64-byte aligned host pointers (host_visible), transfers are memcpy, and
 * execution is immediate, so synchronize has nothing to wait for. */
/* posix_memalign, sysconf: POSIX, also under a strict -std=c11. */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

/* Cache-line and AVX-512 friendly: vector loads of a fresh buffer never
 * straddle a line. */
#define PT_CPU_ALIGNMENT 64

const pt_host_api *pt_cpu_host = NULL;

/* ---- Errors ---- */

pt_status pt_cpu_fail(pt_status s, const char *fmt, ...) {
    if (pt_cpu_host && pt_cpu_host->set_error) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        pt_cpu_host->set_error(s, "cpu: %s", msg);
    }
    return s;
}

static const char *const pt_cpu_op_names[PT__OP_COUNT] = {
    [PT_OP_FILL] = "fill",           [PT_OP_ARANGE] = "arange",
    [PT_OP_RAND_UNIFORM] = "rand_uniform", [PT_OP_RAND_NORMAL] = "rand_normal",
    [PT_OP_COPY] = "copy",           [PT_OP_ADD] = "add",
    [PT_OP_SUB] = "sub",             [PT_OP_MUL] = "mul",
    [PT_OP_DIV] = "div",             [PT_OP_POW] = "pow",
    [PT_OP_MAXIMUM] = "maximum",     [PT_OP_MINIMUM] = "minimum",
    [PT_OP_EQ] = "eq",               [PT_OP_LT] = "lt",
    [PT_OP_GT] = "gt",               [PT_OP_ADD_SCALAR] = "add_scalar",
    [PT_OP_MUL_SCALAR] = "mul_scalar", [PT_OP_NEG] = "neg",
    [PT_OP_ABS] = "abs",             [PT_OP_EXP] = "exp",
    [PT_OP_LOG] = "log",             [PT_OP_SQRT] = "sqrt",
    [PT_OP_RELU] = "relu",           [PT_OP_SIGMOID] = "sigmoid",
    [PT_OP_TANH] = "tanh",           [PT_OP_WHERE] = "where",
    [PT_OP_AXPY] = "axpy",           [PT_OP_SUM] = "sum",
    [PT_OP_MEAN] = "mean",           [PT_OP_MAX] = "max",
    [PT_OP_ARGMAX] = "argmax",       [PT_OP_SOFTMAX] = "softmax",
    [PT_OP_LOG_SOFTMAX] = "log_softmax", [PT_OP_MATMUL] = "matmul",
    [PT_OP_GATHER] = "gather",       [PT_OP_ONE_HOT] = "one_hot",
};

const char *pt_cpu_op_name(pt_op_kind k) {
    if ((int)k < 0 || k >= PT__OP_COUNT || !pt_cpu_op_names[k]) return "?";
    return pt_cpu_op_names[k];
}

const char *pt_cpu_dtype_name(pt_dtype t) {
    switch (t) {
    case PT_F32: return "f32";
    case PT_F64: return "f64";
    case PT_I32: return "i32";
    case PT_I64: return "i64";
    case PT_U8: return "u8";
    default: return "?";
    }
}

pt_status pt_cpu_unsupported(const pt_op *op, pt_dtype t) {
    return pt_cpu_fail(PT_ERR_UNSUPPORTED, "%s not implemented for %s", pt_cpu_op_name(op->kind),
                       pt_cpu_dtype_name(t));
}

pt_status pt_cpu_bad_op(const pt_op *op, const char *what) {
    return pt_cpu_fail(PT_ERR_INTERNAL, "%s: malformed op descriptor: %s (a core bug)",
                       pt_cpu_op_name(op->kind), what);
}

/* ---- Lifetime ---- */

static pt_status cpu_init(void) { return PT_OK; }

/* ---- Memory ---- */

static pt_status cpu_aligned_alloc(size_t bytes, void **buf, const char *what) {
    void *p = NULL;
    /* posix_memalign(0) may return NULL; a real block keeps handles unique. */
    int rc = posix_memalign(&p, PT_CPU_ALIGNMENT, bytes ? bytes : PT_CPU_ALIGNMENT);
    if (rc != 0 || !p) {
        *buf = NULL;
        return pt_cpu_fail(PT_ERR_OUT_OF_MEMORY,
                           "%s of %zu bytes failed (posix_memalign: %s); free memory or use "
                           "smaller tensors",
                           what, bytes, strerror(rc ? rc : 12));
    }
    *buf = p;
    return PT_OK;
}

static pt_status cpu_alloc(int dev, size_t bytes, void **buf) {
    (void)dev;
    return cpu_aligned_alloc(bytes, buf, "alloc");
}

static void cpu_free(int dev, void *buf) {
    (void)dev;
    free(buf);
}

static pt_status cpu_host_alloc(int dev, size_t bytes, void **ptr) {
    (void)dev;
    return cpu_aligned_alloc(bytes, ptr, "host_alloc");
}

static void cpu_host_free(int dev, void *ptr) {
    (void)dev;
    free(ptr);
}

/* ---- Transfers: every device is this process's memory ---- */

static pt_status cpu_copy_h2d(int dev, void *dst, size_t dst_offset, const void *src,
                              size_t bytes, bool async) {
    (void)dev;
    (void)async;
    if (bytes) memmove((char *)dst + dst_offset, src, bytes);
    return PT_OK;
}

static pt_status cpu_copy_d2h(int dev, void *dst, const void *src, size_t src_offset,
                              size_t bytes, bool async) {
    (void)dev;
    (void)async;
    if (bytes) memmove(dst, (const char *)src + src_offset, bytes);
    return PT_OK;
}

static pt_status cpu_copy_d2d(int dev, void *dst, size_t dst_offset, const void *src,
                              size_t src_offset, size_t bytes) {
    (void)dev;
    /* memmove: a copy within one buffer (pt_cat into itself) may overlap. */
    if (bytes) memmove((char *)dst + dst_offset, (const char *)src + src_offset, bytes);
    return PT_OK;
}

static pt_status cpu_copy_peer(int dst_dev, void *dst, size_t dst_offset, int src_dev,
                               const void *src, size_t src_offset, size_t bytes) {
    (void)dst_dev;
    (void)src_dev;
    if (bytes) memmove((char *)dst + dst_offset, (const char *)src + src_offset, bytes);
    return PT_OK;
}

/* ---- Execution ---- */

static pt_status cpu_dispatch(const pt_op *op, bool run) {
    switch (op->kind) {
    case PT_OP_FILL:
    case PT_OP_ARANGE: return pt_cpu_creation(op, run);
    case PT_OP_RAND_UNIFORM:
    case PT_OP_RAND_NORMAL: return pt_cpu_random(op, run);
    case PT_OP_COPY: return pt_cpu_copy(op, run);
    case PT_OP_ADD: case PT_OP_SUB: case PT_OP_MUL: case PT_OP_DIV: case PT_OP_POW:
    case PT_OP_MAXIMUM: case PT_OP_MINIMUM: case PT_OP_EQ: case PT_OP_LT: case PT_OP_GT:
    case PT_OP_ADD_SCALAR: case PT_OP_MUL_SCALAR: case PT_OP_NEG: case PT_OP_ABS:
    case PT_OP_EXP: case PT_OP_LOG: case PT_OP_SQRT: case PT_OP_RELU: case PT_OP_SIGMOID:
    case PT_OP_TANH: case PT_OP_WHERE: case PT_OP_AXPY: return pt_cpu_elementwise(op, run);
    case PT_OP_SUM: case PT_OP_MEAN: case PT_OP_MAX:
    case PT_OP_ARGMAX: return pt_cpu_reduce(op, run);
    case PT_OP_SOFTMAX:
    case PT_OP_LOG_SOFTMAX: return pt_cpu_softmax(op, run);
    case PT_OP_MATMUL: return pt_cpu_matmul(op, run);
    case PT_OP_GATHER:
    case PT_OP_ONE_HOT: return pt_cpu_index_op(op, run);
    default:
        return pt_cpu_fail(PT_ERR_UNSUPPORTED,
                           "op kind %d is not known to this plugin (built for backend ABI %u); "
                           "rebuild libportable-cpu.so with the core",
                           (int)op->kind, PT_BACKEND_ABI_VERSION);
    }
}

static pt_status cpu_supports(int dev, const pt_op *op) {
    (void)dev;
    return cpu_dispatch(op, false);
}

static pt_status cpu_execute(int dev, const pt_op *op) {
    (void)dev;
    return cpu_dispatch(op, true);
}

static pt_status cpu_synchronize(int dev) {
    (void)dev;
    return PT_OK; /* every member completed before returning */
}

/* ---- Admission ---- */

static const pt_backend_vtable pt_cpu_vtable = {
    .struct_size = sizeof(pt_backend_vtable),
    .abi_version = PT_BACKEND_ABI_VERSION,
    .name = "cpu",
    .host_visible = true,
    .init = cpu_init,
    .shutdown = NULL,
    .device_count = pt_cpu_device_count,
    .unavailable_reason = NULL,
    .device_info = pt_cpu_device_info,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .memory_info = pt_cpu_memory_info,
    .host_alloc = cpu_host_alloc,
    .host_free = cpu_host_free,
    .copy_h2d = cpu_copy_h2d,
    .copy_d2h = cpu_copy_d2h,
    .copy_d2d = cpu_copy_d2d,
    .copy_peer = cpu_copy_peer,
    .supports = cpu_supports,
    .execute = cpu_execute,
    .synchronize = cpu_synchronize,
};

PT_PLUGIN_API const pt_backend_vtable *pt_backend_entry(const pt_host_api *host,
                                                        uint32_t host_abi) {
    if (host_abi != PT_BACKEND_ABI_VERSION) return NULL;
    pt_cpu_host = host;
    return &pt_cpu_vtable;
}
