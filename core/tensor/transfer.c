/* Moving data: host <-> device, device <-> device, and reading values back.
 *
 * A copy always leaves from a contiguous source (made on the source device
 * first if needed), so every transfer is one block of bytes. Host-visible
 * devices (the cpu backend) take part through their host pointers, which
 * keeps a cpu <-> accelerator copy to a single driver call. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "portable/half.h"
#include "tensor/tensor_internal.h"

static size_t tensor_bytes(const pt_tensor *x) {
    return (size_t)pt__numel(x->ndim, x->shape) * pt_dtype_size(x->dtype);
}

static bool host_visible(const pt_device *d) { return d->backend->host_visible; }

pt_tensor *pt_from_data(pt_device *d, pt_dtype t, int ndim, const int64_t *shape,
                        const void *data) {
    static const char fn[] = "pt_from_data";
    pt_tensor *x = pt__tensor_new(fn, d, t, ndim, shape);
    if (!x) return NULL;
    size_t bytes = tensor_bytes(x);
    if (bytes && !data) {
        pt_release(x);
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "data is NULL but the shape has %lld elements",
                  (long long)pt__numel(ndim, shape));
        return NULL;
    }
    if (pt__upload(fn, d, x->st->buf, x->offset, data, bytes)) {
        pt_release(x);
        return NULL;
    }
    return pt__ret(x);
}

/* Waits for whatever may still write x's bytes: its device's queue and, for a
 * pinned landing buffer of pt_to_async, the device copying into it. */
static pt_status wait_for_writers(const char *fn, const pt_tensor *x) {
    if (x->st->kind == PT__STORAGE_PINNED && x->st->pinned_owner) {
        pt_status s = pt__synchronize(fn, x->st->pinned_owner);
        if (s) return s;
    }
    return pt__synchronize(fn, x->st->dev);
}

/* Reads a contiguous x into dst (exactly tensor_bytes(x) bytes). */
static pt_status read_contiguous(const char *fn, const pt_tensor *x, void *dst) {
    size_t bytes = tensor_bytes(x);
    pt_device *d = x->st->dev;
    if (host_visible(d)) {
        pt_status s = wait_for_writers(fn, x);
        if (s) return s;
        if (bytes) memcpy(dst, pt__host_ptr(x), bytes);
        return PT_OK;
    }
    return pt__copy_d2h(fn, d, dst, x->st->buf, x->offset, bytes, false);
}

pt_status pt_to_host(const pt_tensor *x, void *dst, size_t dst_bytes) {
    static const char fn[] = "pt_to_host";
    if (!x) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "x is NULL; pass a tensor");
    size_t bytes = tensor_bytes(x);
    if (bytes && !dst) return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "dst is NULL");
    if (dst_bytes < bytes) {
        char shape[160];
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                         "dst holds %zu bytes but the %s tensor %s needs %zu", dst_bytes,
                         pt_dtype_name(x->dtype), pt__shape_str(x->ndim, x->shape, shape, sizeof shape),
                         bytes);
    }
    if (pt__is_contiguous(x)) return read_contiguous(fn, x, dst);
    /* A packed copy on x's device (no autograd: it never leaves here). */
    pt_tensor *c = pt__copy_new(fn, (pt_tensor *)x, x->dtype, x->ndim, x->shape);
    if (!c) return pt_last_status();
    pt_status s = read_contiguous(fn, c, dst);
    pt_release(c);
    return s;
}

double pt_item(const pt_tensor *x) {
    static const char fn[] = "pt_item";
    if (!x) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "x is NULL; pass a tensor");
        return NAN;
    }
    if (pt__numel(x->ndim, x->shape) != 1) {
        char shape[160];
        pt__error(PT_ERR_SHAPE, fn, "tensor of shape %s has %lld elements; pt_item needs exactly 1",
                  pt__shape_str(x->ndim, x->shape, shape, sizeof shape),
                  (long long)pt__numel(x->ndim, x->shape));
        return NAN;
    }
    union {
        float f32;
        double f64;
        int32_t i32;
        int64_t i64;
        uint8_t u8;
        uint16_t h16; /* f16 / bf16 bits */
    } v;
    if (read_contiguous(fn, x, &v)) return NAN; /* one element is always contiguous */
    switch (x->dtype) {
    case PT_F32: return v.f32;
    case PT_F64: return v.f64;
    case PT_I32: return v.i32;
    case PT_I64: return (double)v.i64;
    case PT_U8: return v.u8;
    case PT_F16: return pt_f16_bits_to_f32(v.h16);
    case PT_BF16: return pt_bf16_bits_to_f32(v.h16);
    default: break;
    }
    pt__error(PT_ERR_DTYPE, fn, "unknown dtype %d", (int)x->dtype);
    return NAN;
}

/* Copies contiguous src into contiguous dst of the same size on another
 * device. async: leave the copy queued on the source device (only when the
 * host side is pinned). */
static pt_status copy_across(const char *fn, const pt_tensor *src, pt_tensor *dst, bool async) {
    pt_device *sd = src->st->dev, *dd = dst->st->dev;
    size_t bytes = tensor_bytes(src);
    if (bytes == 0) return PT_OK;
    if (host_visible(dd) && host_visible(sd)) {
        pt_status s = wait_for_writers(fn, src);
        if (s) return s;
        memcpy(pt__host_ptr(dst), pt__host_ptr(src), bytes);
        return PT_OK;
    }
    if (host_visible(dd)) /* accelerator -> cpu: one read on the source queue */
        return pt__copy_d2h(fn, sd, pt__host_ptr(dst), src->st->buf, src->offset, bytes, async);
    if (host_visible(sd)) { /* cpu -> accelerator */
        pt_status s = wait_for_writers(fn, src);
        if (s) return s;
        if (async && src->st->kind == PT__STORAGE_PINNED)
            return pt__copy_h2d(fn, dd, dst->st->buf, dst->offset, pt__host_ptr(src), bytes, true);
        return pt__upload(fn, dd, dst->st->buf, dst->offset, pt__host_ptr(src), bytes);
    }
    /* Two accelerators: the plugin's peer copy, or staged through pinned
     * host memory (pt__copy_peer holds that default). */
    pt_status s = pt__copy_peer(fn, dd, dst->st->buf, dst->offset, sd, src->st->buf, src->offset,
                                bytes);
    if (s) return s;
    return async ? PT_OK : pt__synchronize(fn, dd);
}

pt_status pt__copy_into_accelerator(const char *fn, pt_tensor *dst, pt_tensor *src, bool *done) {
    *done = host_visible(src->st->dev) && !host_visible(dst->st->dev) && src->dtype == dst->dtype &&
            src->ndim == dst->ndim && memcmp(src->shape, dst->shape, (size_t)src->ndim * sizeof(int64_t)) == 0 &&
            pt__is_contiguous(src) && pt__is_contiguous(dst);
    return *done ? copy_across(fn, src, dst, false) : PT_OK;
}

pt_tensor *pt__move(const char *fn, pt_tensor *x, pt_device *d, bool async) {
    if (!x) return pt__null_input(fn, "x");
    if (!d) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "device is NULL (did pt_device_get fail? see its error)");
        return NULL;
    }
    if (x->st->dev == d) return pt__ret(pt_retain(x));
    /* src is the library's own reference: dropped with pt__drop. */
    pt_tensor *src = pt__is_contiguous(x) ? pt_retain(x)
                                          : pt__copy_new(fn, x, x->dtype, x->ndim, x->shape);
    if (!src) return NULL;
    bool to_pinned = async && host_visible(d) && !host_visible(x->st->dev);
    pt_tensor *out = to_pinned ? pt__tensor_pinned(fn, d, x->st->dev, x->dtype, x->ndim, x->shape)
                               : pt__tensor_new(fn, d, x->dtype, x->ndim, x->shape);
    if (out && copy_across(fn, src, out, async)) {
        pt__drop(out);
        out = NULL;
    }
    pt__drop(src);
    return pt__ret(out);
}

pt_tensor *pt_to(pt_tensor *x, pt_device *d) { return pt__move("pt_to", x, d, false); }
pt_tensor *pt_to_async(pt_tensor *x, pt_device *d) { return pt__move("pt_to_async", x, d, true); }
