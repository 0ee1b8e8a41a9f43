/* Fuzz target: DLPack import (pt_from_dlpack, pt_from_dlpack_legacy) of
 * managed tensors whose every field comes from the input.
 *
 * The input decodes to a managed tensor: versioned or legacy, its version
 * and flags, the caller's flags, dtype {code, bits, lanes}, device {type,
 * id}, ndim, shape, strides (or NULL), byte_offset, and data (NULL, or a
 * buffer the harness allocates, maybe misaligned). Extents and strides are
 * small mostly, now and then any 64-bit value.
 *
 * What it checks, besides no crash, leak or sanitizer report:
 * - a refused import returns NULL with a status and a message that starts
 *   with the function called, and never calls the producer's deleter;
 * - an accepted one has the dtype, shape and device the fields describe
 *   (float32/64, int32/64, uint8 with lanes 1; kDLCPU device 0 or
 *   kDLCUDAHost on cpu:0: nothing else exists in this build), and its
 *   deleter runs exactly once, when the tensor is released;
 * - where the harness could allocate the memory the fields describe, an
 *   accepted tensor reads back the bytes at the strided addresses. (The
 *   library cannot know how big a producer's buffer is: where the fields
 *   describe more than the harness allocated, an accepted import is only
 *   checked for its metadata, and is not read.) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "portable/dlpack.h"
#include "portable/portable.h"

enum { MAX_BUFFER = 1 << 16, MAX_READ = 4096, MAX_ND = 10 };

typedef struct reader {
    const uint8_t *p;
    size_t n, at;
} reader;

static unsigned byte(reader *r) { return r->at < r->n ? r->p[r->at++] : 0; }

static uint64_t raw64(reader *r) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= (uint64_t)byte(r) << (8 * i);
    return v;
}

/* Mostly 0..8; a tag byte >= 0xf0 brings any 64-bit value. */
static int64_t small_or_any(reader *r) {
    unsigned tag = byte(r);
    return tag >= 0xf0 ? (int64_t)raw64(r) : (int64_t)(tag % 9);
}

static void die(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_dlpack: contract broken: %s (%s)\n", what, detail ? detail : "");
    abort();
}

static int deleter_calls;
static void versioned_deleter(struct DLManagedTensorVersioned *self) { (void)self; ++deleter_calls; }
static void legacy_deleter(DLManagedTensor *self) { (void)self; ++deleter_calls; }

/* The libportable dtype a DLPack dtype must import as, or -1. */
static int expected_dtype(DLDataType t) {
    if (t.lanes != 1) return -1;
    if (t.code == kDLFloat && t.bits == 32) return PT_F32;
    if (t.code == kDLFloat && t.bits == 64) return PT_F64;
    if (t.code == kDLInt && t.bits == 32) return PT_I32;
    if (t.code == kDLInt && t.bits == 64) return PT_I64;
    if (t.code == kDLUInt && t.bits == 8) return PT_U8;
    if (t.code == kDLFloat && t.bits == 16) return PT_F16;
    if (t.code == kDLBfloat && t.bits == 16) return PT_BF16;
    return -1;
}

/* The bytes from data to one past the farthest element, or false when that
 * is not representable. */
static bool described_bytes(int nd, const int64_t *shape, const int64_t *strides, uint64_t elem,
                            uint64_t byte_offset, uint64_t *out) {
    uint64_t last = 0;
    for (int i = 0; i < nd; ++i) {
        if (shape[i] < 0 || strides[i] < 0) return false;
        if (shape[i] == 0) {
            *out = byte_offset;
            return true;
        }
    }
    for (int i = 0; i < nd; ++i) {
        uint64_t step;
        if (__builtin_mul_overflow((uint64_t)(shape[i] - 1), (uint64_t)strides[i], &step) ||
            __builtin_add_overflow(last, step, &last))
            return false;
    }
    uint64_t bytes;
    if (__builtin_add_overflow(last, 1, &last) || __builtin_mul_overflow(last, elem, &bytes) ||
        __builtin_add_overflow(bytes, byte_offset, out))
        return false;
    return true;
}

/* The element bytes an accepted tensor must read back as, in C order. */
static void check_values(pt_tensor *x, int nd, const int64_t *shape, const int64_t *strides, size_t elem,
                         const unsigned char *base) {
    int64_t n = pt_tensor_numel(x);
    if (n > MAX_READ) return;
    pt_tensor *c = pt_contiguous(x);
    if (!c) die("pt_contiguous of an accepted import failed", pt_last_error());
    unsigned char *got = malloc((size_t)n * elem + 1);
    if (!got) die("out of memory in the harness", NULL);
    if (pt_to_host(c, got, (size_t)n * elem) != PT_OK) die("reading an accepted import failed", pt_last_error());
    int64_t idx[MAX_ND] = {0};
    for (int64_t k = 0; k < n; ++k) {
        uint64_t at = 0;
        for (int i = 0; i < nd; ++i) at += (uint64_t)idx[i] * (uint64_t)strides[i];
        if (memcmp(got + (size_t)k * elem, base + at * elem, elem) != 0) die("an imported element reads back wrong", NULL);
        for (int i = nd - 1; i >= 0; --i) {
            if (++idx[i] < shape[i]) break;
            idx[i] = 0;
        }
    }
    free(got);
    pt_release(c);
}

static const int32_t device_types[] = {kDLCPU, kDLCPU, kDLCPU, kDLCUDAHost, kDLCUDA, kDLOpenCL, kDLVulkan,
                                       kDLROCM, kDLMetal, kDLExtDev, 0, -1};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static pt_device *cpu;
    if (!cpu && !(cpu = pt_cpu())) die("no cpu device", pt_last_error());
    reader r = {data, size, 0};
    unsigned mode = byte(&r);
    bool legacy = mode & 1, read_only = mode & 2, read_only_ok = mode & 4, odd_flags = mode & 8,
         null_strides = mode & 16, null_data = mode & 32, misalign = mode & 64, odd_version = mode & 128;

    DLTensor t;
    memset(&t, 0, sizeof t);
    t.dtype.code = (uint8_t)(byte(&r) % 8);
    unsigned bits = byte(&r);
    t.dtype.bits = (uint8_t)(bits < 0xc0 ? (8u << (bits % 4)) : bits);
    unsigned lanes = byte(&r);
    t.dtype.lanes = (uint16_t)(lanes < 0xf0 ? 1 : lanes - 0xef);
    t.device.device_type = (DLDeviceType)device_types[byte(&r) % (sizeof device_types / sizeof device_types[0])];
    unsigned id = byte(&r);
    t.device.device_id = id < 0xc0 ? 0 : (int32_t)(int8_t)id;
    unsigned nd = byte(&r);
    t.ndim = nd < 0xf0 ? (int32_t)(nd % 11) : (int32_t)(int8_t)nd; /* 0..10, now and then -16..-1 */
    int slots = t.ndim > 0 ? t.ndim : 0;
    if (slots > MAX_ND) slots = MAX_ND; /* ndim beyond PT_MAX_DIMS: the library must refuse it unread */
    int64_t shape[MAX_ND], strides[MAX_ND];
    for (int i = 0; i < slots; ++i) shape[i] = small_or_any(&r);
    for (int i = 0; i < slots; ++i) strides[i] = small_or_any(&r);
    uint64_t byte_offset = (uint64_t)small_or_any(&r);
    t.byte_offset = byte_offset;
    t.shape = slots ? shape : NULL;
    t.strides = null_strides ? NULL : strides;

    /* The layout the library must see, to size the buffer and check values. */
    int64_t eff_strides[MAX_ND];
    int want_dtype = expected_dtype(t.dtype);
    size_t elem = want_dtype >= 0 ? pt_dtype_size((pt_dtype)want_dtype) : 1;
    if (null_strides) {
        int64_t s = 1;
        for (int i = slots - 1; i >= 0; --i) {
            eff_strides[i] = s;
            if (shape[i] > 0 && __builtin_mul_overflow(s, shape[i], &s)) s = INT64_MAX;
        }
    } else {
        memcpy(eff_strides, strides, sizeof(int64_t) * (size_t)slots);
    }
    uint64_t need = 0;
    bool fits = described_bytes(slots, shape, eff_strides, elem, byte_offset, &need) && need <= MAX_BUFFER;
    size_t alloc = fits ? (size_t)need + 8 : 64;
    unsigned char *mem = malloc(alloc);
    if (!mem) die("out of memory in the harness", NULL);
    for (size_t i = 0; i < alloc; ++i) mem[i] = (unsigned char)(i * 131u + 7u);
    size_t shift = misalign ? 1 + byte(&r) % 7 : 0;
    if (fits && shift > alloc - (size_t)need) shift = 0;
    t.data = null_data ? NULL : mem + shift;

    struct DLManagedTensorVersioned v;
    DLManagedTensor l;
    unsigned flags = (read_only_ok ? PT_DLPACK_READ_ONLY_OK : 0u) | (odd_flags ? 1u << (byte(&r) % 32) : 0u);
    deleter_calls = 0;
    pt_clear_error();
    pt_tensor *x;
    const char *fn;
    if (legacy) {
        memset(&l, 0, sizeof l);
        l.dl_tensor = t;
        l.deleter = legacy_deleter;
        fn = "pt_from_dlpack_legacy";
        x = pt_from_dlpack_legacy(&l, flags);
    } else {
        memset(&v, 0, sizeof v);
        v.version.major = odd_version ? byte(&r) : DLPACK_MAJOR_VERSION;
        v.version.minor = byte(&r);
        v.flags = read_only ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
        v.dl_tensor = t;
        v.deleter = versioned_deleter;
        fn = "pt_from_dlpack";
        x = pt_from_dlpack(&v, flags);
    }
    if (!x) {
        const char *msg = pt_last_error();
        if (pt_last_status() == PT_OK) die("a refused import left no status", fn);
        if (strncmp(msg, fn, strlen(fn)) != 0 || msg[strlen(fn)] != ':') die("the message does not name the function", msg);
        if (deleter_calls) die("a refused import called the producer's deleter", msg);
        free(mem);
        return 0;
    }
    /* accepted: everything it was given must have been valid */
    if (want_dtype < 0) die("a DLPack dtype with no libportable dtype was accepted", NULL);
    if (pt_tensor_dtype(x) != (pt_dtype)want_dtype) die("an import has another dtype than described", NULL);
    bool host = t.device.device_type == kDLCUDAHost || (t.device.device_type == kDLCPU && t.device.device_id == 0);
    if (!host || pt_tensor_device(x) != cpu) die("an import is on another device than described", NULL);
    if (flags & ~PT_DLPACK_READ_ONLY_OK) die("unknown flags were accepted", NULL);
    if (!legacy && read_only && !(flags & PT_DLPACK_READ_ONLY_OK)) die("a read-only tensor was accepted without PT_DLPACK_READ_ONLY_OK", NULL);
    if (!legacy && v.version.major != DLPACK_MAJOR_VERSION) die("another major version was accepted", NULL);
    if (t.data && ((uintptr_t)t.data + byte_offset) % elem != 0) die("misaligned data was accepted", NULL);
    if (pt_tensor_ndim(x) != t.ndim) die("an import has another ndim than described", NULL);
    for (int i = 0; i < slots; ++i)
        if (pt_tensor_shape(x)[i] != shape[i]) die("an import has another shape than described", NULL);
    if (fits && t.data) check_values(x, slots, shape, eff_strides, elem, (const unsigned char *)t.data + byte_offset);
    if (deleter_calls) die("the deleter ran while the tensor lives", NULL);
    pt_release(x);
    if (deleter_calls != 1) die("releasing the import did not call the deleter exactly once", NULL);
    free(mem);
    return 0;
}
