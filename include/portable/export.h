/* libportable — symbol visibility.
 *
 * The library is built with -fvisibility=hidden; only declarations marked
 * PT_API are exported from libportable.so. Plugins mark their single entry
 * point with PT_PLUGIN_API. */
#ifndef PORTABLE_EXPORT_H
#define PORTABLE_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define PT_API __attribute__((visibility("default")))
#define PT_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define PT_API
#define PT_PRINTF(fmt_index, first_arg)
#endif

#define PT_PLUGIN_API PT_API

#endif
