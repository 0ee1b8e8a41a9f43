/* libportable — value types shared by the public API and the plugin ABI. */
#ifndef PORTABLE_TYPES_H
#define PORTABLE_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest number of dimensions a tensor may have. */
#define PT_MAX_DIMS 8

/* Element types. Append only: the values are part of the plugin ABI. */
typedef enum pt_dtype { PT_F32 = 0, PT_F64, PT_I32, PT_I64, PT_U8, PT__DTYPE_COUNT } pt_dtype;

/* Bytes per element (0 for values outside the enum). */
PT_API size_t pt_dtype_size(pt_dtype t);
/* "f32", "f64", "i32", "i64", "u8"; "?" for values outside the enum. */
PT_API const char *pt_dtype_name(pt_dtype t);

typedef enum pt_device_type {
    PT_DEVICE_CPU = 0,
    PT_DEVICE_GPU,
    PT_DEVICE_ACCELERATOR,
    PT_DEVICE_OTHER
} pt_device_type;

/* What pt_device_info reports. Strings are NUL-terminated and truncated to
 * fit. Memory figures are bytes; -1 means the driver cannot tell (OpenCL has
 * no portable query for free memory). */
typedef struct pt_device_props {
    char name[128];          /* "NVIDIA H100 80GB HBM3", "cpu" */
    char backend[16];        /* "cpu", "cuda", "opencl" */
    char vendor[128];
    char platform[128];      /* OpenCL platform, CUDA runtime version, ... */
    char driver_version[64];
    pt_device_type type;
    int compute_units;       /* cores, SMs, OpenCL compute units */
    int64_t memory_total;
    int64_t memory_free;     /* -1: unknown */
    bool supports_f64;
} pt_device_props;

/* The caching allocator's view of one device, in bytes. */
typedef struct pt_memory_usage {
    int64_t in_use;     /* held by live tensors */
    int64_t cached;     /* freed by tensors, kept for reuse, still taken from the driver */
    int64_t peak;       /* largest in_use since start */
    int64_t reserved;   /* in_use + cached: what the driver sees as taken by us */
} pt_memory_usage;

#ifdef __cplusplus
}
#endif
#endif
