/* Byte counts for people; see format_bytes.h. */
#include "format_bytes.h"

#include <stdio.h>

char *pt__format_bytes(int64_t bytes, int decimals, char *buf, size_t cap) {
    if (bytes < 0) {
        snprintf(buf, cap, "unknown");
        return buf;
    }
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        ++u;
    }
    snprintf(buf, cap, "%.*f %s", u ? decimals : 0, v, units[u]);
    return buf;
}
