/* libportable CUDA backend — the kernel driver's version as nvidia-smi shows
 * it, read from the first line of /proc/driver/nvidia/version. Pure C, so
 * the parsing is tested without a driver. */
#include <ctype.h>
#include <string.h>

#include "internal.h"

/* The line comes in two shapes, the proprietary and the open kernel module:
 *   "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Sun ..."
 *   "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..."
 * so the version is the first word after "Kernel Module" made of digits and
 * dots with at least one dot, not the word right after it. */
bool ptcu_parse_nvrm_version(const char *line, char *out, size_t cap) {
    if (!out || cap == 0) return false;
    out[0] = '\0';
    const char *p = line ? strstr(line, "Kernel Module") : NULL;
    if (!p) return false;
    p += strlen("Kernel Module");
    while (*p && *p != '\n') {
        while (*p == ' ' || *p == '\t') ++p;
        const size_t n = strcspn(p, " \t\n");
        if (n == 0) break;
        bool digits_and_dots = isdigit((unsigned char)p[0]) != 0, dot = false;
        for (size_t i = 0; i < n && digits_and_dots; ++i) {
            if (p[i] == '.') dot = true;
            else if (!isdigit((unsigned char)p[i])) digits_and_dots = false;
        }
        if (digits_and_dots && dot) {
            if (n >= cap) return false;
            memcpy(out, p, n);
            out[n] = '\0';
            return true;
        }
        p += n;
    }
    return false;
}
