/* Byte counts for people ("1.50 GiB"): the out-of-memory message
 * (allocator.c) and the memory columns of the `portable` tool. One source
 * file, compiled into libportable (hidden, like every pt__ name) and into
 * the tool (tools/CMakeLists.txt), so both print sizes the same way without
 * adding a public API name for it. Depends on nothing else in core/. */
#ifndef PORTABLE_CORE_FORMAT_BYTES_H
#define PORTABLE_CORE_FORMAT_BYTES_H

#include <stddef.h>
#include <stdint.h>

/* Writes bytes into buf in B, KiB, MiB, GiB or TiB with `decimals` digits
 * after the point (none for plain bytes), or "unknown" when bytes < 0 (a
 * driver that does not report the figure). Returns buf. */
char *pt__format_bytes(int64_t bytes, int decimals, char *buf, size_t cap);

#endif
