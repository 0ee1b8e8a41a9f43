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
/** f32 and f64: kinds the core never sends in 16 bits (it computes those in
 * f32 itself, as for ATTENTION, whose extra operands half_widen does not convert). */
#define PT_DTYPES_WIDE_FLOAT (PT_DTYPE_BIT(PT_F32) | PT_DTYPE_BIT(PT_F64))
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
 * no portable query for free memory).
 *
 * Growable: members are only ever appended, and pt_device_info (a macro,
 * device.h) passes sizeof *out, so a program built against an older copy
 * of this header gets the members its copy has, and one built against a
 * newer copy than the library gets the rest zeroed. */
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
    /* ---- Appended members (after the first release): add only below ---- */
    bool supports_f16;       /**< OpenCL: cl_khr_fp16; CUDA: always; cpu: storage + f32 arithmetic */
    int64_t max_alloc;       /**< largest single allocation (OpenCL CL_DEVICE_MAX_MEM_ALLOC_SIZE); -1: unknown */
    int64_t local_memory;    /**< per work-group / per block shared memory; 0: none */
    int64_t max_work_group;  /**< work-items per work-group, threads per block; 0: not a notion */
    /** Device memory this process holds through libportable's allocator
     * (its reserved bytes: driver allocations, the driver's own context not
     * included), the per-process figure nvidia-smi shows. */
    int64_t memory_process;
    char device_version[128]; /**< OpenCL: CL_DEVICE_VERSION ("OpenCL 3.0 PoCL ...") */
    char c_version[64];       /**< OpenCL: CL_DEVICE_OPENCL_C_VERSION ("OpenCL C 1.2 PoCL") */
    int compute_capability_major; /**< CUDA; 0 elsewhere */
    int compute_capability_minor; /**< CUDA; 0 elsewhere */
    char uuid[48];            /**< CUDA: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi */
    char pci_bus_id[32];      /**< CUDA: "0000:65:00.0" */
    char extensions[4096];    /**< OpenCL: CL_DEVICE_EXTENSIONS, space-separated */
} pt_device_props;

/** The size of pt_device_props as the first release had it (up to
 * supports_f64): what the pt_device_info symbol fills for programs built
 * before the sized entry point existed. */
#define PT_DEVICE_PROPS_SIZE_V1 (offsetof(pt_device_props, supports_f64) + sizeof(bool))

/** The caching allocator's view of one device, in bytes. Growable as
 * pt_device_props: members only appended, pt_memory_stats passes sizeof. */
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

/** The size of pt_memory_usage as the first release had it. */
#define PT_MEMORY_USAGE_SIZE_V1 (offsetof(pt_memory_usage, pinned_reuses) + sizeof(int64_t))

#ifdef __cplusplus
}
#endif
#endif
