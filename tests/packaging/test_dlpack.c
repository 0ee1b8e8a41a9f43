/* DLPack export/import in C (include/portable/dlpack.h), with no framework
 * on the other side: the managed tensors are read and made by hand, as a
 * consumer or producer would. The Python test (dlpack_frameworks.py) does
 * the same against NumPy and PyTorch. Also here: pt_version and
 * pt_set_default_device, which applications use alongside DLPack.
 *
 * Runs on cpu; with PORTABLE_BACKEND=opencl also exports an opencl tensor
 * and brings it back. */
#include <stdint.h>

#include <portable/dlpack.h>

#include "../unit/check.h"

static pt_tensor *arange_2x3(pt_device *d) {
    const int64_t shape[] = {2, 3};
    pt_tensor *a = pt_arange(d, PT_F32, 0, 6, 1);
    pt_tensor *x = pt_reshape(a, 2, shape);
    pt_release(a);
    return x;
}

/* Export: the DLTensor describes x's memory itself; writes through it are
 * seen by x; the storage outlives x until the deleter. */
static void export_versioned_cpu(void) {
    pt_tensor *x = arange_2x3(pt_cpu());
    REQUIRE(x);
    struct DLManagedTensorVersioned *m = pt_to_dlpack(x);
    REQUIRE(m);
    CHECK_INT(m->version.major, DLPACK_MAJOR_VERSION);
    CHECK_INT(m->version.minor, DLPACK_MINOR_VERSION);
    CHECK_INT((int)m->flags, 0);
    DLTensor *t = &m->dl_tensor;
    CHECK_INT(t->device.device_type, kDLCPU);
    CHECK_INT(t->device.device_id, 0);
    CHECK_INT(t->ndim, 2);
    CHECK_INT(t->dtype.code, kDLFloat);
    CHECK_INT(t->dtype.bits, 32);
    CHECK_INT(t->dtype.lanes, 1);
    CHECK_INT((int)t->shape[0], 2);
    CHECK_INT((int)t->shape[1], 3);
    CHECK_INT((int)t->strides[0], 3);
    CHECK_INT((int)t->strides[1], 1);
    float *p = (float *)((char *)t->data + t->byte_offset);
    CHECK_DBL(p[4], 4.0, 0);
    p[4] = 40.0f; /* the consumer writes: x sees it */
    double v[6];
    CHECK(check_read(x, v, 6));
    CHECK_DBL(v[4], 40.0, 0);
    pt_release(x); /* the export still holds the storage */
    CHECK_DBL(p[5], 5.0, 0);
    m->deleter(m);
}

/* A transposed narrow view keeps its strides and offset. */
static void export_strided_view(void) {
    pt_tensor *x = arange_2x3(pt_cpu());
    pt_tensor *tr = pt_transpose(x, 0, 1);           /* [3, 2], strides [1, 3] */
    pt_tensor *v = pt_narrow(tr, 0, 1, 2);           /* rows 1..2: offset 1 element */
    REQUIRE(v);
    DLManagedTensor *m = pt_to_dlpack_legacy(v);
    REQUIRE(m);
    DLTensor *t = &m->dl_tensor;
    CHECK_INT((int)t->shape[0], 2);
    CHECK_INT((int)t->shape[1], 2);
    CHECK_INT((int)t->strides[0], 1);
    CHECK_INT((int)t->strides[1], 3);
    const float *p = (const float *)((const char *)t->data + t->byte_offset);
    /* element [i][j] of the view is x[j][i + 1] = 3 j + i + 1 */
    CHECK_DBL(p[1 * t->strides[0] + 1 * t->strides[1]], 5.0, 0);
    CHECK_DBL(p[0], 1.0, 0);
    pt_release(v);
    pt_release(tr);
    pt_release(x);
    m->deleter(m);
}

/* Our own export comes back as a view of the same storage, and the export's
 * hold is given back at once. */
static void own_round_trip(pt_device *d) {
    pt_tensor *x = arange_2x3(d);
    REQUIRE(x);
    struct DLManagedTensorVersioned *m = pt_to_dlpack(x);
    REQUIRE(m);
    pt_tensor *y = pt_from_dlpack(m, 0);
    REQUIRE(y);
    CHECK(pt_tensor_shares_storage(x, y));
    CHECK(pt_tensor_device(y) == d);
    CHECK_OK(pt_fill_(y, 7.0));
    double v[6];
    CHECK(check_read(x, v, 6));
    CHECK_DBL(v[0], 7.0, 0);
    CHECK_DBL(v[5], 7.0, 0);
    pt_release(y);
    DLManagedTensor *l = pt_to_dlpack_legacy(x);
    REQUIRE(l);
    pt_tensor *z = pt_from_dlpack_legacy(l, 0);
    CHECK(pt_tensor_shares_storage(x, z));
    pt_release(z);
    pt_release(x);
}

/* f16 and bf16 go out as kDLFloat/16 and kDLBfloat/16 over the tensor's own
 * 2-byte elements, and come back as the same dtype over the same storage. */
static void half_dtypes(void) {
    static const struct { pt_dtype t; uint8_t code; uint16_t bits_of_3; } rows[] = {
        {PT_F16, kDLFloat, 0x4200},  /* 3.0 in binary16 */
        {PT_BF16, kDLBfloat, 0x4040}, /* 3.0 in bfloat16 */
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; ++r) {
        int64_t n = 4;
        pt_tensor *x = pt_full(pt_cpu(), rows[r].t, 1, &n, 3.0);
        REQUIRE(x);
        struct DLManagedTensorVersioned *m = pt_to_dlpack(x);
        REQUIRE(m);
        CHECK_INT(m->dl_tensor.dtype.code, rows[r].code);
        CHECK_INT(m->dl_tensor.dtype.bits, 16);
        CHECK_INT(m->dl_tensor.dtype.lanes, 1);
        uint16_t *p = (uint16_t *)((char *)m->dl_tensor.data + m->dl_tensor.byte_offset);
        CHECK_INT(p[3], rows[r].bits_of_3);
        p[0] = 0; /* +0.0 in both formats: x sees the consumer's write */
        double v[4];
        pt_tensor *wide = pt_cast(x, PT_F32);
        CHECK(check_read(wide, v, 4));
        pt_release(wide);
        CHECK_DBL(v[0], 0.0, 0);
        CHECK_DBL(v[1], 3.0, 0);
        pt_tensor *y = pt_from_dlpack(m, 0);
        REQUIRE(y);
        CHECK_INT(pt_tensor_dtype(y), rows[r].t);
        CHECK(pt_tensor_shares_storage(x, y));
        pt_release(y);
        pt_release(x);
    }
}

/* ---- a producer made by hand ---- */

typedef struct host_producer {
    struct DLManagedTensorVersioned m;
    int64_t shape[2], strides[2];
    double data[12];
    int *deleted; /* counts deleter calls */
} host_producer;

static void host_producer_delete(struct DLManagedTensorVersioned *self) {
    host_producer *h = self->manager_ctx;
    ++*h->deleted;
    free(h);
}

/* A 3x2 view with strides {4, 2} at byte offset 8 into 12 doubles 0..11:
 * element [i][j] is data[1 + 4 i + 2 j]. */
static host_producer *make_producer(int *deleted) {
    host_producer *h = calloc(1, sizeof *h);
    for (int i = 0; i < 12; ++i) h->data[i] = i;
    h->shape[0] = 3;
    h->shape[1] = 2;
    h->strides[0] = 4;
    h->strides[1] = 2;
    h->deleted = deleted;
    h->m.version.major = DLPACK_MAJOR_VERSION;
    h->m.version.minor = DLPACK_MINOR_VERSION;
    h->m.manager_ctx = h;
    h->m.deleter = host_producer_delete;
    DLTensor *t = &h->m.dl_tensor;
    t->data = h->data;
    t->byte_offset = sizeof(double);
    t->device.device_type = kDLCPU;
    t->device.device_id = 0;
    t->ndim = 2;
    t->dtype.code = kDLFloat;
    t->dtype.bits = 64;
    t->dtype.lanes = 1;
    t->shape = h->shape;
    t->strides = h->strides;
    return h;
}

static void import_foreign(void) {
    int deleted = 0;
    host_producer *h = make_producer(&deleted);
    pt_tensor *x = pt_from_dlpack(&h->m, 0);
    REQUIRE(x);
    CHECK(pt_tensor_device(x) == pt_cpu());
    CHECK_INT(pt_tensor_dtype(x), PT_F64);
    CHECK_INT((int)pt_tensor_strides(x)[0], 4);
    CHECK_INT((int)pt_tensor_strides(x)[1], 2);
    double v[6];
    CHECK(check_read(x, v, 6));
    CHECK_DBL(v[0], 1.0, 0);
    CHECK_DBL(v[1], 3.0, 0);
    CHECK_DBL(v[5], 11.0, 0);
    /* no copy: a write on either side shows on the other */
    h->data[5] = -5.0;
    CHECK(check_read(x, v, 6));
    CHECK_DBL(v[2], -5.0, 0);
    CHECK_OK(pt_fill_(x, 2.5));
    CHECK_DBL(h->data[1], 2.5, 0);
    CHECK_DBL(h->data[11], 2.5, 0);
    CHECK_DBL(h->data[2], 2.0, 0); /* outside the view: untouched */
    /* the deleter runs once, when the last view is gone */
    pt_tensor *row = pt_narrow(x, 0, 1, 1);
    pt_release(x);
    CHECK_INT(deleted, 0);
    pt_release(row);
    CHECK_INT(deleted, 1);
}

/* Every refusal names the problem and leaves m with the caller. */
static void import_refusals(void) {
    int deleted = 0;
    host_producer *h = make_producer(&deleted);
    DLTensor *t = &h->m.dl_tensor;

    h->m.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
    CHECK(pt_from_dlpack(&h->m, 0) == NULL);
    CHECK_LAST(PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "PT_DLPACK_READ_ONLY_OK");
    pt_tensor *ro = pt_from_dlpack(&h->m, PT_DLPACK_READ_ONLY_OK); /* the caller promises */
    CHECK_NOT_NULL(ro);
    pt_release(ro);
    CHECK_INT(deleted, 1);
    h = make_producer(&deleted);
    t = &h->m.dl_tensor;

    h->m.version.major = 2;
    CHECK(pt_from_dlpack(&h->m, 0) == NULL);
    CHECK_LAST(PT_ERR_UNSUPPORTED);
    CHECK_HAS(pt_last_error(), "DLPack 2.");
    h->m.version.major = DLPACK_MAJOR_VERSION;

    CHECK(pt_from_dlpack(&h->m, 4) == NULL);
    CHECK_LAST(PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "flags 0x4");

    t->dtype.code = kDLComplex;
    t->dtype.bits = 64;
    CHECK(pt_from_dlpack(&h->m, 0) == NULL);
    CHECK_LAST(PT_ERR_DTYPE);
    CHECK_HAS(pt_last_error(), "complex");
    t->dtype.code = kDLBfloat; /* bfloat other than 16 bits */
    t->dtype.bits = 32;
    CHECK(pt_from_dlpack(&h->m, 0) == NULL);
    CHECK_LAST(PT_ERR_DTYPE);
    CHECK_HAS(pt_last_error(), "bfloat");
    t->dtype.code = kDLFloat;
    t->dtype.bits = 64;
    t->dtype.lanes = 4;
    CHECK(pt_from_dlpack(&h->m, 0) == NULL);
    CHECK_HAS(pt_last_error(), "lanes 4");
    t->dtype.lanes = 1;

    h->strides[1] = -2;
    CHECK(pt_from_dlpack(&h->m, 0) == NULL);
    CHECK_LAST(PT_ERR_UNSUPPORTED);
    CHECK_HAS(pt_last_error(), "stride -2 of dim 1");
    h->strides[1] = 2;

    h->shape[0] = (int64_t)1 << 40;
    h->strides[0] = (int64_t)1 << 40;
    CHECK(pt_from_dlpack(&h->m, 0) == NULL);
    CHECK_LAST(PT_ERR_SHAPE);
    h->shape[0] = 3;
    h->strides[0] = 4;

    t->ndim = PT_MAX_DIMS + 1;
    CHECK(pt_from_dlpack(&h->m, 0) == NULL);
    CHECK_LAST(PT_ERR_SHAPE);
    t->ndim = 2;

    t->byte_offset = 3; /* not a multiple of 8 */
    CHECK(pt_from_dlpack(&h->m, 0) == NULL);
    CHECK_LAST(PT_ERR_UNSUPPORTED);
    CHECK_HAS(pt_last_error(), "aligned");
    t->byte_offset = sizeof(double);

    t->device.device_type = kDLOpenCL;
    CHECK(pt_from_dlpack(&h->m, 0) == NULL);
    CHECK_LAST(PT_ERR_UNSUPPORTED);
    CHECK_HAS(pt_last_error(), "OpenCL");
    t->device.device_type = kDLVulkan;
    CHECK(pt_from_dlpack(&h->m, 0) == NULL);
    CHECK_LAST(PT_ERR_UNSUPPORTED);
    CHECK_HAS(pt_last_error(), "kDLVulkan");
    t->device.device_type = kDLCUDA;
    t->device.device_id = 99;
    CHECK(pt_from_dlpack(&h->m, 0) == NULL);
    /* no such device of the backend that reports kDLCUDA; or, without such
     * a backend (the core knows backends only from their plugins), a device
     * type nothing here handles */
    CHECK(pt_last_status() == PT_ERR_NO_DEVICE || pt_last_status() == PT_ERR_UNSUPPORTED);
    CHECK_HAS(pt_last_error(), "CUDA device 99");
    t->device.device_type = kDLCPU;
    t->device.device_id = 0;

    CHECK(pt_from_dlpack(NULL, 0) == NULL);
    CHECK_LAST(PT_ERR_INVALID_ARGUMENT);
    CHECK(pt_from_dlpack_legacy(NULL, 0) == NULL);
    CHECK_LAST(PT_ERR_INVALID_ARGUMENT);
    CHECK(pt_to_dlpack(NULL) == NULL);
    CHECK_LAST(PT_ERR_INVALID_ARGUMENT);
    CHECK(pt_to_dlpack_legacy(NULL) == NULL);

    /* none of the refusals took m: it is still ours to give back */
    CHECK_INT(deleted, 1);
    h->m.deleter(&h->m);
    CHECK_INT(deleted, 2);
    pt_clear_error();
}

/* A C-ordered import (strides NULL) of a 0-dim and an empty tensor. */
static void import_edge_shapes(void) {
    int deleted = 0;
    host_producer *h = make_producer(&deleted);
    DLTensor *t = &h->m.dl_tensor;
    t->strides = NULL;
    t->ndim = 0;
    pt_tensor *s = pt_from_dlpack(&h->m, 0);
    REQUIRE(s);
    CHECK_DBL(pt_item(s), 1.0, 0);
    pt_release(s);
    CHECK_INT(deleted, 1);
    h = make_producer(&deleted);
    h->shape[0] = 0;
    h->m.dl_tensor.strides = NULL;
    pt_tensor *e = pt_from_dlpack(&h->m, 0);
    REQUIRE(e);
    CHECK_INT((int)pt_tensor_numel(e), 0);
    CHECK_INT((int)pt_tensor_strides(e)[0], 2);
    pt_release(e);
    CHECK_INT(deleted, 2);
}

static void version(void) {
    const pt_version_info *v = pt_version();
    REQUIRE(v);
    CHECK_INT(v->major, PT_VERSION_MAJOR);
    CHECK_INT(v->minor, PT_VERSION_MINOR);
    CHECK_INT(v->patch, PT_VERSION_PATCH);
    CHECK_INT(v->number, PT_VERSION_NUMBER);
    CHECK_INT(PT_VERSION_NUMBER, PT_VERSION_MAJOR * 10000 + PT_VERSION_MINOR * 100 + PT_VERSION_PATCH);
    CHECK_STR(v->string, PT_VERSION_STRING);
    char expect[32];
    snprintf(expect, sizeof expect, "%d.%d.%d", v->major, v->minor, v->patch);
    CHECK_STR(v->string, expect);
}

/* Runs with PORTABLE_BACKEND=cpu and two cpu devices: the program's choice
 * wins over the variable until it is taken back. */
static void default_device(void) {
    pt_device *env_choice = pt_default_device();
    REQUIRE(env_choice);
    CHECK_STR(pt_device_name(env_choice), "cpu:0");
    pt_device *second = pt_device_get("cpu:1");
    REQUIRE(second);
    CHECK_OK(pt_set_default_device(second));
    CHECK(pt_default_device() == second);
    CHECK(pt_try_device(0) == pt_device_get("cpu:0")); /* d's backend's devices */
    CHECK_INT(pt_all_devices(NULL, 0), 2);
    pt_tensor *x = pt_zeros(pt_default_device(), PT_F32, 0, NULL);
    CHECK(pt_tensor_device(x) == second);
    pt_release(x);
    int junk = 0;
    CHECK_INT(pt_set_default_device((pt_device *)&junk), PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "pt_set_default_device");
    CHECK(pt_default_device() == second); /* a refused call changes nothing */
    CHECK_OK(pt_set_default_device(NULL));
    CHECK(pt_default_device() == env_choice);
    pt_clear_error();
}

int main(void) {
    version();
    default_device();
    export_versioned_cpu();
    export_strided_view();
    own_round_trip(pt_cpu());
    half_dtypes();
    import_foreign();
    import_refusals();
    import_edge_shapes();
    pt_device *ocl = pt_device_get("opencl:0");
    if (ocl) {
        printf("-- opencl:0: export and own round trip\n");
        pt_tensor *x = arange_2x3(ocl);
        struct DLManagedTensorVersioned *m = pt_to_dlpack(x);
        CHECK_NOT_NULL(m);
        if (m) {
            CHECK_INT(m->dl_tensor.device.device_type, kDLOpenCL);
            CHECK(m->dl_tensor.data != NULL); /* the cl_mem */
            m->deleter(m);
        }
        pt_release(x);
        own_round_trip(ocl);
    } else {
        printf("-- no opencl:0 (%s): opencl part skipped\n", pt_last_error());
        pt_clear_error();
    }
    return check_summary();
}
