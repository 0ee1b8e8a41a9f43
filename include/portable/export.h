/** @file
 * libportable — symbol visibility.
 *
 * The library is built with -fvisibility=hidden; only declarations marked
 * PT_API are exported from libportable.so. Plugins mark their single entry
 * point with PT_PLUGIN_API. */
#ifndef PORTABLE_EXPORT_H
#define PORTABLE_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
/** Marks a declaration exported from libportable.so. */
#define PT_API __attribute__((visibility("default")))
/** Lets the compiler check a printf-style format (argument fmt_index) against
 * the arguments from first_arg. */
#define PT_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
/** Marks a declaration exported from libportable.so (nothing to do here). */
#define PT_API
/** A printf-style format check (none with this compiler). */
#define PT_PRINTF(fmt_index, first_arg)
#endif

/** Marks a plugin's exported entry point (pt_backend_entry). */
#define PT_PLUGIN_API PT_API

#endif
