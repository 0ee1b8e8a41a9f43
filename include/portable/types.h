/** @file
 * libportable — value types shared by the public API and the plugin ABI. */
#ifndef PORTABLE_TYPES_H
#define PORTABLE_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest number of dimensions a tensor may have. */
#define PT_MAX_DIMS 8

/** The one dtype table: X(suffix, name, bytes, kind, promotion rank). The
 * enum, pt_dtype_name/pt_dtype_size, the plugins' messages and the
 * conformance suite's dtype loop all expand from it. Append only: the enum
 * values are part of the plugin ABI. kind is one of PT_DTYPE_KIND_*; the
 * promotion order of mixed operands is u8 < i32 < i64 < f16 < bf16 < f32 <
 * f64, except that f16 with bf16 gives f32 (neither holds the other), as in
 * PyTorch. F16 is IEEE binary16, BF16 bfloat16 (the top half of an f32):
 * both are storage types whose ops compute in f32 and round the result once
 * (portable/half.h has the conversions and the host-side helpers). */
#define PT_DTYPE_TABLE(X)                                                                  \
    X(F32, "f32", 4, FLOAT, 5)                                                             \
    X(F64, "f64", 8, FLOAT, 6)                                                             \
    X(I32, "i32", 4, SIGNED, 1)                                                            \
    X(I64, "i64", 8, SIGNED, 2)                                                            \
    X(U8, "u8", 1, UNSIGNED, 0)                                                            \
    X(F16, "f16", 2, FLOAT, 3)                                                             \
    X(BF16, "bf16", 2, FLOAT, 4)

/** Element types (PT_F32, PT_F64, PT_I32, PT_I64, PT_U8, PT_F16, PT_BF16,
 * from PT_DTYPE_TABLE); PT_DTYPE_COUNT is their number. Append only. */
typedef enum pt_dtype {
#define PT_DTYPE_ENUM_ENTRY(suffix, name, bytes, kind, rank) PT_##suffix,
    PT_DTYPE_TABLE(PT_DTYPE_ENUM_ENTRY)
#undef PT_DTYPE_ENUM_ENTRY
        PT_DTYPE_COUNT
} pt_dtype;

enum { PT_DTYPE_KIND_FLOAT, PT_DTYPE_KIND_SIGNED, PT_DTYPE_KIND_UNSIGNED };

/** Sets of dtypes as bit masks (bit t is dtype t): which dtypes an op takes. */
#define PT_DTYPE_BIT(t) (1u << (unsigned)(t))
/** FLOAT includes the 16-bit types, so every op row that takes floats takes
 * them: a plugin either computes them (in f32, rounding the result) or
 * refuses the kind in that dtype, and then the core computes it in f32
 * through the plugin's own conversions (backend.h, "16-bit dtypes"). */
#define PT_DTYPES_HALF (PT_DTYPE_BIT(PT_F16) | PT_DTYPE_BIT(PT_BF16))
/** The float dtypes: f32, f64, f16, bf16. */
#define PT_DTYPES_FLOAT (PT_DTYPE_BIT(PT_F32) | PT_DTYPE_BIT(PT_F64) | PT_DTYPES_HALF)
/** The dtypes arithmetic takes: the floats, i32 and i64 (not u8). */
#define PT_DTYPES_NUMERIC (PT_DTYPES_FLOAT | PT_DTYPE_BIT(PT_I32) | PT_DTYPE_BIT(PT_I64))
/** Every dtype. */
#define PT_DTYPES_ANY (PT_DTYPES_NUMERIC | PT_DTYPE_BIT(PT_U8))

/** Facts of the table for code that cannot link the core (plugins, tests):
 * "?" / 0 / false outside the enum. */
static inline const char *pt_dtype_table_name(pt_dtype t) {
    switch (t) {
#define PT_DTYPE_NAME_CASE(suffix, name, bytes, kind, rank) case PT_##suffix: return name;
        PT_DTYPE_TABLE(PT_DTYPE_NAME_CASE)
#undef PT_DTYPE_NAME_CASE
    default: return "?";
    }
}
static inline size_t pt_dtype_table_size(pt_dtype t) {
    switch (t) {
#define PT_DTYPE_SIZE_CASE(suffix, name, bytes, kind, rank) case PT_##suffix: return bytes;
        PT_DTYPE_TABLE(PT_DTYPE_SIZE_CASE)
#undef PT_DTYPE_SIZE_CASE
    default: return 0;
    }
}
static inline bool pt_dtype_is_float(pt_dtype t) {
    return ((unsigned)t < (unsigned)PT_DTYPE_COUNT) && (PT_DTYPE_BIT(t) & PT_DTYPES_FLOAT);
}
/** f16 and bf16: 2-byte storage, f32 arithmetic. */
static inline bool pt_dtype_is_half(pt_dtype t) {
    return ((unsigned)t < (unsigned)PT_DTYPE_COUNT) && (PT_DTYPE_BIT(t) & PT_DTYPES_HALF);
}
static inline int pt_dtype_promotion_rank(pt_dtype t) {
    switch (t) {
#define PT_DTYPE_RANK_CASE(suffix, name, bytes, kind, rank) case PT_##suffix: return rank;
        PT_DTYPE_TABLE(PT_DTYPE_RANK_CASE)
#undef PT_DTYPE_RANK_CASE
    default: return -1;
    }
}

/** Bytes per element (0 for values outside the enum). */
PT_API size_t pt_dtype_size(pt_dtype t);
/** "f32", "f64", "i32", "i64", "u8", "f16", "bf16"; "?" outside the enum. */
PT_API const char *pt_dtype_name(pt_dtype t);

/** What kind of processor a device is (pt_device_props.type). */
typedef enum pt_device_type {
    PT_DEVICE_CPU = 0,     /**< the host's cores (the cpu backend, an OpenCL CPU device) */
    PT_DEVICE_GPU,         /**< a GPU */
    PT_DEVICE_ACCELERATOR, /**< another accelerator (an OpenCL ACCELERATOR device) */
    PT_DEVICE_OTHER        /**< none of these */
} pt_device_type;

/** What pt_device_info reports. Strings are NUL-terminated and truncated to
 * fit. Memory figures are bytes; -1 means the driver cannot tell (OpenCL has
 * no portable query for free memory). */
typedef struct pt_device_props {
    char name[128];          /**< "NVIDIA H100 80GB HBM3", "cpu" */
    char backend[16];        /**< "cpu", "cuda", "opencl" */
    char vendor[128]; /**< who made the device, as the driver says */
    char platform[128];      /**< OpenCL platform, CUDA runtime version, ... */
    char driver_version[64]; /**< the driver's version string */
    pt_device_type type; /**< cpu, GPU, other accelerator */
    int compute_units;       /**< cores, SMs, OpenCL compute units */
    int64_t memory_total; /**< device memory in bytes; -1: unknown */
    int64_t memory_free;     /**< -1: unknown */
    bool supports_f64; /**< whether f64 arithmetic runs (some OpenCL devices lack it) */
} pt_device_props;

/** The caching allocator's view of one device, in bytes. */
typedef struct pt_memory_usage {
    int64_t in_use;     /**< held by live tensors */
    int64_t cached;     /**< freed by tensors, kept for reuse, still taken from the driver */
    int64_t peak;       /**< largest in_use since start or the last pt_reset_peak_memory */
    int64_t reserved;   /**< in_use + cached: what the driver sees as taken by us */
    /** Pinned host blocks this device owns (pt_to_async to the cpu, staged
     * copies): bytes cached for reuse (pt_empty_cache frees them). */
    int64_t pinned_cached;
    int64_t pinned_allocs; /**< driver allocations of pinned host blocks made */
    int64_t pinned_reuses; /**< pinned requests served from the cache */
    /** The device's memory as its driver reports it now, -1 when the driver
     * has no query for it (OpenCL reports no free memory, except AMD's
     * cl_amd_device_attribute_query), never an estimate. The figures above
     * are libportable's own counts. */
    int64_t device_total;
    int64_t device_free; /**< free device memory per the driver; -1: unknown */
} pt_memory_usage;

#ifdef __cplusplus
}
#endif
#endif
