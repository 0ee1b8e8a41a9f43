/* DLPack export and import (include/portable/dlpack.h): a tensor's memory
 * handed to another framework, or another framework's memory wrapped as a
 * tensor, never copied.
 *
 * Export keeps the memory alive with a view of the tensor (a library-held
 * reference on the storage, like any view's) that the managed tensor's
 * deleter drops. Import wraps the memory in an external storage whose
 * release calls the producer's deleter once the last view is gone. A tensor
 * libportable exported itself comes back as a view of its own storage: the
 * only way an OpenCL buffer can be imported, since a cl_mem is only usable
 * in the context it was made in. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "portable/dlpack.h"
#include "tensor/tensor_internal.h"

/* ---- dtypes ---- */

typedef struct dl_dtype_row {
    pt_dtype dtype;
    uint8_t code, bits;
} dl_dtype_row;

/* Listed by hand, not derived from PT_DTYPE_TABLE's kind and size: two
 * dtypes of one size and kind (f16 and bf16) differ in DLPack's code. */
static const dl_dtype_row dl_dtypes[] = {
    {PT_F32, kDLFloat, 32}, {PT_F64, kDLFloat, 64}, {PT_I32, kDLInt, 32},
    {PT_I64, kDLInt, 64},   {PT_U8, kDLUInt, 8},    {PT_F16, kDLFloat, 16},
    {PT_BF16, kDLBfloat, 16},
};
#define N_DL_DTYPES (sizeof dl_dtypes / sizeof dl_dtypes[0])

static bool dl_dtype_of(pt_dtype t, DLDataType *out) {
    for (size_t i = 0; i < N_DL_DTYPES; ++i)
        if (dl_dtypes[i].dtype == t) {
            out->code = dl_dtypes[i].code;
            out->bits = dl_dtypes[i].bits;
            out->lanes = 1;
            return true;
        }
    return false;
}

static const char *dl_code_name(uint8_t code) {
    switch (code) {
    case kDLInt: return "int";
    case kDLUInt: return "uint";
    case kDLFloat: return "float";
    case kDLOpaqueHandle: return "opaque handle";
    case kDLBfloat: return "bfloat";
    case kDLComplex: return "complex";
    case kDLBool: return "bool";
    default: return "float8/6/4 or unknown";
    }
}

static pt_status pt_dtype_of(const char *fn, DLDataType t, pt_dtype *out) {
    if (t.lanes == 1)
        for (size_t i = 0; i < N_DL_DTYPES; ++i)
            if (dl_dtypes[i].code == t.code && dl_dtypes[i].bits == t.bits) {
                *out = dl_dtypes[i].dtype;
                return PT_OK;
            }
    return pt__error(PT_ERR_DTYPE, fn,
                     "DLPack dtype {code %u (%s), bits %u, lanes %u} has no libportable dtype; "
                     "libportable takes float32/64, int32/64 and uint8 with lanes 1 (cast it "
                     "on the producer's side first)",
                     (unsigned)t.code, dl_code_name(t.code), (unsigned)t.bits, (unsigned)t.lanes);
}

/* ---- devices ---- */

static const char *dl_device_name(int32_t type) {
    switch (type) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return "kDLCUDA";
    case kDLCUDAHost: return "kDLCUDAHost";
    case kDLOpenCL: return "kDLOpenCL";
    case kDLVulkan: return "kDLVulkan";
    case kDLMetal: return "kDLMetal";
    case kDLROCM: return "kDLROCM";
    case kDLROCMHost: return "kDLROCMHost";
    case kDLCUDAManaged: return "kDLCUDAManaged";
    case kDLOneAPI: return "kDLOneAPI";
    default: return "another device type";
    }
}

/* A backend's DLPack device type (backend.h: dlpack_device_type, default
 * kDLCPU for a host-visible backend, else none: 0). */
static int32_t backend_dl_type(const pt__backend *b) {
    int32_t t = pt__backend_dlpack_device_type(b);
    return t ? t : b->host_visible ? kDLCPU : 0;
}

/* The DLPack device x's memory is on: its backend says which type. */
static pt_status dl_device_of(const char *fn, const pt_tensor *x, DLDevice *out) {
    const pt_device *d = pt__dev(x);
    out->device_id = d->index;
    if (d->backend->host_visible) {
        /* pinned memory of another backend: that backend's host type
         * (dlpack_host_device_type, default kDLCPU) */
        const pt_device *owner = x->st->kind == PT__STORAGE_PINNED ? x->st->pinned_owner : NULL;
        int32_t host_type = owner ? pt__backend_dlpack_host_device_type(owner->backend) : 0;
        out->device_type = host_type ? (DLDeviceType)host_type : kDLCPU;
        if (host_type && host_type != kDLCPU) out->device_id = 0; /* host memory has no device index */
        return PT_OK;
    }
    int32_t t = backend_dl_type(d->backend);
    if (t) {
        out->device_type = (DLDeviceType)t;
        return PT_OK;
    }
    return pt__error(PT_ERR_UNSUPPORTED, fn,
                     "the tensor is on %s, a backend DLPack has no device type for; move it to "
                     "the cpu with pt_to first",
                     d->name);
}

/* ---- export ---- */

/* What a managed tensor (either kind) carries besides the DLTensor. */
typedef struct export_hold {
    pt_tensor *view; /* keeps the storage alive until the deleter runs */
    int64_t shape[PT_MAX_DIMS];
    int64_t strides[PT_MAX_DIMS];
} export_hold;

typedef struct versioned_export {
    struct DLManagedTensorVersioned managed;
    export_hold hold;
} versioned_export;

typedef struct legacy_export {
    DLManagedTensor managed;
    export_hold hold;
} legacy_export;

static void versioned_deleter(struct DLManagedTensorVersioned *self) {
    if (!self) return;
    versioned_export *e = (versioned_export *)self->manager_ctx;
    pt__drop(e->hold.view);
    free(e);
}

static void legacy_deleter(DLManagedTensor *self) {
    if (!self) return;
    legacy_export *e = (legacy_export *)self->manager_ctx;
    pt__drop(e->hold.view);
    free(e);
}

/* Fills t and hold from x: a view of x holds the storage. */
static pt_status export_tensor(const char *fn, pt_tensor *x, DLTensor *t, export_hold *hold) {
    if (!x) return pt__null_tensor_status(fn, "x");
    DLDataType dtype;
    if (!dl_dtype_of(x->dtype, &dtype))
        return pt__error(PT_ERR_DTYPE, fn, "dtype %s has no DLPack type; cast it with pt_cast",
                         pt_dtype_name(x->dtype));
    DLDevice device;
    pt_status s = dl_device_of(fn, x, &device);
    if (s) return s;
    /* the consumer reads the memory as soon as it has it */
    s = pt__synchronize(fn, pt__dev(x));
    if (s) return s;
    hold->view = pt__tensor_view(x, x->ndim, x->shape, x->strides, x->offset);
    if (!hold->view) return pt_last_status();
    for (int i = 0; i < x->ndim; ++i) {
        hold->shape[i] = x->shape[i];
        hold->strides[i] = x->strides[i];
    }
    t->device = device;
    t->ndim = x->ndim;
    t->dtype = dtype;
    t->shape = hold->shape;
    t->strides = hold->strides;
    if (pt__host_visible(pt__dev(x))) {
        /* host memory: the plain pointer, which every consumer takes */
        t->data = pt__host_ptr(x);
        t->byte_offset = 0;
    } else {
        /* a device buffer handle (CUdeviceptr, cl_mem): offsets go beside it */
        t->data = x->st->buf;
        t->byte_offset = x->offset;
    }
    return PT_OK;
}

struct DLManagedTensorVersioned *pt_to_dlpack(pt_tensor *x) {
    versioned_export *e = calloc(1, sizeof *e);
    if (!e) {
        pt__error(PT_ERR_OUT_OF_MEMORY, "pt_to_dlpack", "out of host memory for a managed tensor");
        return NULL;
    }
    if (export_tensor("pt_to_dlpack", x, &e->managed.dl_tensor, &e->hold)) {
        free(e);
        return NULL;
    }
    e->managed.version.major = DLPACK_MAJOR_VERSION;
    e->managed.version.minor = DLPACK_MINOR_VERSION;
    e->managed.manager_ctx = e;
    e->managed.deleter = versioned_deleter;
    e->managed.flags = 0;
    return &e->managed;
}

DLManagedTensor *pt_to_dlpack_legacy(pt_tensor *x) {
    legacy_export *e = calloc(1, sizeof *e);
    if (!e) {
        pt__error(PT_ERR_OUT_OF_MEMORY, "pt_to_dlpack_legacy",
                  "out of host memory for a managed tensor");
        return NULL;
    }
    if (export_tensor("pt_to_dlpack_legacy", x, &e->managed.dl_tensor, &e->hold)) {
        free(e);
        return NULL;
    }
    e->managed.manager_ctx = e;
    e->managed.deleter = legacy_deleter;
    return &e->managed;
}

/* ---- import ---- */

/* The device of memory another library made on DLPack device dev, of a
 * backend that reports that device type (backend.h: dlpack_device_type)
 * and takes such memory (dlpack_imports); or NULL with the error. Backends
 * are started in file order until one reports the type. */
static pt_device *import_foreign_device(const char *fn, DLDevice dev) {
    for (int i = 0; i < pt__backend_total(); ++i) {
        pt__backend *b = pt__backend_load(pt__backend_at(i));
        if (!b->available || b->host_visible || backend_dl_type(b) != (int32_t)dev.device_type) continue;
        if (!pt__backend_dlpack_imports(b)) {
            pt__error(PT_ERR_UNSUPPORTED, fn,
                      "the tensor is in %s memory of another program, which backend %s cannot "
                      "use (its buffers belong to its own context); copy it to the host first "
                      "(only tensors libportable exported itself come back on %s)",
                      dl_device_name(dev.device_type), b->name, b->name);
            return NULL;
        }
        if (dev.device_id < 0 || dev.device_id >= b->ndev) {
            pt__error(PT_ERR_NO_DEVICE, fn,
                      "the tensor is on %s device %d, which libportable cannot use (backend %s "
                      "has %d device%s); copy it to the host on the producer's side",
                      dl_device_name(dev.device_type), (int)dev.device_id, b->name, b->ndev,
                      b->ndev == 1 ? "" : "s");
            return NULL;
        }
        return &b->devices[dev.device_id];
    }
    pt__error(PT_ERR_UNSUPPORTED, fn,
              "the tensor is on %s device %d (DLPack device type %d), which no backend of this "
              "libportable handles; copy it to the host (kDLCPU) first",
              dl_device_name(dev.device_type), (int)dev.device_id, (int)dev.device_type);
    return NULL;
}

/* The device the memory is on, or NULL with the error. */
static pt_device *import_device(const char *fn, DLDevice dev) {
    switch ((int)dev.device_type) {
    case kDLCPU:
        /* DLPack numbers host memory device 0; another id is a producer's
         * mistake, not a second cpu (libportable's cpu:N are its own). */
        if (dev.device_id != 0) {
            pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                      "the tensor is on kDLCPU device_id %d; DLPack host memory has device_id 0 "
                      "(fix the producer's device field)",
                      (int)dev.device_id);
            return NULL;
        }
        return pt_cpu();
    case kDLCUDAHost: return pt_cpu(); /* pinned host memory: DLPack says the cpu reads it */
    default: return import_foreign_device(fn, dev);
    }
}

/* Shape, strides (elements) and the bytes the view spans from its first
 * element, checked against libportable's limits. */
static pt_status import_layout(const char *fn, const DLTensor *t, size_t elem, int64_t *shape,
                               int64_t *strides, size_t *span) {
    if (t->ndim < 0 || t->ndim > PT_MAX_DIMS)
        return pt__error(PT_ERR_SHAPE, fn,
                         "the tensor has %d dims; libportable takes 0..%d (reshape it first)",
                         (int)t->ndim, PT_MAX_DIMS);
    if (t->ndim > 0 && !t->shape)
        return pt__error(PT_ERR_INVALID_ARGUMENT, fn, "the tensor has %d dims but shape is NULL",
                         (int)t->ndim);
    for (int i = 0; i < t->ndim; ++i) shape[i] = t->shape[i];
    pt_status s = pt__check_shape(fn, t->ndim, shape);
    if (s) return s;
    if (t->strides) {
        for (int i = 0; i < t->ndim; ++i) {
            if (t->strides[i] < 0)
                return pt__error(PT_ERR_UNSUPPORTED, fn,
                                 "stride %lld of dim %d is negative; libportable views walk "
                                 "memory forwards only (pass a copy, e.g. np.ascontiguousarray)",
                                 (long long)t->strides[i], i);
            if (t->strides[i] > PT__MAX_ELEMENTS)
                return pt__error(PT_ERR_SHAPE, fn,
                                 "stride %lld of dim %d is larger than 2^48 elements",
                                 (long long)t->strides[i], i);
            strides[i] = t->strides[i];
        }
    } else {
        pt__contiguous_strides(t->ndim, shape, strides);
    }
    /* the farthest element from the first, in elements: at most 2^48, like
     * every view's span (checked before each product, which cannot overflow) */
    uint64_t last = 0, limit = (uint64_t)PT__MAX_ELEMENTS;
    bool empty = false;
    for (int i = 0; i < t->ndim; ++i) {
        if (shape[i] == 0) empty = true;
        if (shape[i] <= 1 || strides[i] == 0) continue;
        if ((uint64_t)(shape[i] - 1) > (limit - last) / (uint64_t)strides[i])
            return pt__error(PT_ERR_SHAPE, fn,
                             "the tensor's strides reach beyond 2^48 elements (dim %d: extent "
                             "%lld, stride %lld)",
                             i, (long long)shape[i], (long long)strides[i]);
        last += (uint64_t)(shape[i] - 1) * (uint64_t)strides[i];
    }
    *span = empty ? 0 : (size_t)(last + 1) * elem;
    return PT_OK;
}

/* The producer's deleter, called once by the storage's release. */
typedef struct import_owner {
    struct DLManagedTensorVersioned *versioned;
    DLManagedTensor *legacy;
} import_owner;

static void give_back(void *ctx) {
    import_owner *o = ctx;
    if (o->versioned && o->versioned->deleter) o->versioned->deleter(o->versioned);
    if (o->legacy && o->legacy->deleter) o->legacy->deleter(o->legacy);
    free(o);
}

/* A tensor libportable exported: a new view of the same storage. */
static pt_tensor *import_own(const export_hold *hold) {
    pt_tensor *x = hold->view;
    return pt__tensor_view(x, x->ndim, x->shape, x->strides, x->offset);
}

static pt_tensor *import_tensor(const char *fn, const DLTensor *t, import_owner *owner) {
    pt_dtype dtype = PT_F32;
    if (pt_dtype_of(fn, t->dtype, &dtype)) return NULL;
    pt_device *d = import_device(fn, t->device);
    if (!d) return NULL;
    int64_t shape[PT_MAX_DIMS], strides[PT_MAX_DIMS];
    size_t elem = pt_dtype_size(dtype), span = 0;
    if (import_layout(fn, t, elem, shape, strides, &span)) return NULL;
    if (!t->data && span > 0) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "data is NULL for a tensor of %zu bytes", span);
        return NULL;
    }
    void *buf = t->data;
    if (t->byte_offset > ((uint64_t)1 << 62)) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "byte_offset %llu is beyond any memory",
                  (unsigned long long)t->byte_offset);
        return NULL;
    }
    size_t offset = (size_t)t->byte_offset;
    if (pt__host_visible(d)) {
        /* the cpu backend takes the host pointer itself as its buffer */
        if (((uintptr_t)t->data + offset) % elem != 0) {
            pt__error(PT_ERR_UNSUPPORTED, fn,
                      "the data (%p + byte_offset %zu) is not aligned to its %zu-byte elements; "
                      "pass an aligned copy",
                      t->data, offset, elem);
            return NULL;
        }
    } else if (offset % elem != 0) {
        pt__error(PT_ERR_UNSUPPORTED, fn,
                  "byte_offset %zu is not a multiple of the %zu-byte element size", offset, elem);
        return NULL;
    }
    pt_tensor *x = pt__tensor_external(fn, d, dtype, t->ndim, shape, strides, offset, buf,
                                       offset + span, give_back, owner);
    return pt__ret(x);
}

/* Flags beyond PT_DLPACK_READ_ONLY_OK are refused, naming them. */
static bool flags_known(const char *fn, unsigned flags) {
    if (!(flags & ~PT_DLPACK_READ_ONLY_OK)) return true;
    pt__error(PT_ERR_INVALID_ARGUMENT, fn, "flags 0x%x: only PT_DLPACK_READ_ONLY_OK (0x%x) is defined", flags,
              PT_DLPACK_READ_ONLY_OK);
    return false;
}

/* Another producer's tensor t, held by an import record that calls the
 * deleter of whichever of versioned / legacy it came in. */
static pt_tensor *import_foreign(const char *fn, DLTensor *t, struct DLManagedTensorVersioned *versioned,
                                 DLManagedTensor *legacy) {
    import_owner *o = calloc(1, sizeof *o);
    if (!o) {
        pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for an import record");
        return NULL;
    }
    o->versioned = versioned;
    o->legacy = legacy;
    pt_tensor *x = import_tensor(fn, t, o);
    if (!x) free(o);
    return x;
}

pt_tensor *pt_from_dlpack(struct DLManagedTensorVersioned *m, unsigned flags) {
    static const char fn[] = "pt_from_dlpack";
    if (!m) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "the managed tensor is NULL");
        return NULL;
    }
    if (m->version.major != DLPACK_MAJOR_VERSION) {
        pt__error(PT_ERR_UNSUPPORTED, fn,
                  "the managed tensor is DLPack %u.%u; libportable reads major version %d "
                  "(ask the producer for max_version=(%d, %d))",
                  (unsigned)m->version.major, (unsigned)m->version.minor, DLPACK_MAJOR_VERSION,
                  DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION);
        return NULL;
    }
    if ((m->flags & DLPACK_FLAG_BITMASK_READ_ONLY) && !(flags & PT_DLPACK_READ_ONLY_OK)) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn,
                  "the tensor is read-only (DLPACK_FLAG_BITMASK_READ_ONLY) and libportable "
                  "cannot stop writes to it; pass PT_DLPACK_READ_ONLY_OK if you will not "
                  "write it, or import a writable copy");
        return NULL;
    }
    if (!flags_known(fn, flags)) return NULL;
    if (m->deleter == versioned_deleter) {
        /* our own export: share the storage, give the export back */
        pt_tensor *x = import_own(&((versioned_export *)m->manager_ctx)->hold);
        if (!x) return NULL;
        versioned_deleter(m);
        return pt__ret(x);
    }
    return import_foreign(fn, &m->dl_tensor, m, NULL);
}

pt_tensor *pt_from_dlpack_legacy(DLManagedTensor *m, unsigned flags) {
    static const char fn[] = "pt_from_dlpack_legacy";
    if (!m) {
        pt__error(PT_ERR_INVALID_ARGUMENT, fn, "the managed tensor is NULL");
        return NULL;
    }
    if (!flags_known(fn, flags)) return NULL;
    if (m->deleter == legacy_deleter) {
        pt_tensor *x = import_own(&((legacy_export *)m->manager_ctx)->hold);
        if (!x) return NULL;
        legacy_deleter(m);
        return pt__ret(x);
    }
    return import_foreign(fn, &m->dl_tensor, NULL, m);
}
