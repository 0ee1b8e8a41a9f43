/** @file
 * libportable — the version, at compile time and at run time.
 *
 * The macros are the version of the headers an application was compiled
 * against; pt_version() is the version of the libportable.so it runs with
 * (the same major version is ABI-compatible: SONAME libportable.so.0).
 * CMake checks that these numbers match project(VERSION) at configure time. */
#ifndef PORTABLE_VERSION_H
#define PORTABLE_VERSION_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Major version of these headers (0.x: the ABI of SONAME libportable.so.0). */
#define PT_VERSION_MAJOR 0
/** Minor version of these headers. */
#define PT_VERSION_MINOR 1
/** Patch version of these headers. */
#define PT_VERSION_PATCH 0
/** One comparable number: major * 10000 + minor * 100 + patch (0.1.0 is 100),
 * for `#if PT_VERSION_NUMBER >= 100`. */
#define PT_VERSION_NUMBER (PT_VERSION_MAJOR * 10000 + PT_VERSION_MINOR * 100 + PT_VERSION_PATCH)
#define PT_VERSION_STRINGIFY_(x) #x
#define PT_VERSION_STRINGIFY(x) PT_VERSION_STRINGIFY_(x)
/** "0.1.0" */
#define PT_VERSION_STRING                                                                   \
    PT_VERSION_STRINGIFY(PT_VERSION_MAJOR)                                                  \
    "." PT_VERSION_STRINGIFY(PT_VERSION_MINOR) "." PT_VERSION_STRINGIFY(PT_VERSION_PATCH)

/** The running library's version. Members are only ever appended. */
typedef struct pt_version_info {
    int major;          /**< as PT_VERSION_MAJOR */
    int minor;          /**< as PT_VERSION_MINOR */
    int patch;          /**< as PT_VERSION_PATCH */
    int number;         /**< as PT_VERSION_NUMBER */
    const char *string; /**< "0.1.0" */
} pt_version_info;

/** The version of the loaded libportable.so (not of the headers: compare
 * with PT_VERSION_NUMBER to detect a mismatch). Never NULL; static storage. */
PT_API const pt_version_info *pt_version(void);

#ifdef __cplusplus
}
#endif
#endif
