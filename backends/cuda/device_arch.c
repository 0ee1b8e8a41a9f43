/* libportable CUDA backend — which GPUs the compiled kernels can run on,
 * decided from the build's architecture list alone, so that device
 * admission needs no CUDA context (contexts are made on first use). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* CMake's CUDA_ARCHITECTURES words: "NN-real" is machine code (SASS), which
 * runs on the same major version at the same or a later minor; "NN-virtual"
 * is PTX, which the driver compiles for any GPU of compute capability NN or
 * newer; a bare "NN" is both. Any other word ("native", "all") cannot be
 * judged here: the kernel probe at first use decides. */
bool ptcu_architecture_fits(const char *codes, int major, int minor) {
    const int cc = major * 10 + minor;
    bool judged = true;
    for (const char *p = codes ? codes : ""; *p;) {
        while (*p == ' ' || *p == ';') ++p;
        if (!*p) break;
        const size_t len = strcspn(p, " ;");
        char *end = NULL;
        const long nn = strtol(p, &end, 10);
        const size_t num_len = (size_t)(end - p);
        if (num_len == 0 || nn <= 0) {
            judged = false; /* "native", "all", ... */
        } else {
            const char *suffix = p + num_len;
            const size_t suffix_len = len - num_len;
            const bool real = suffix_len == 0 || (suffix_len == 5 && strncmp(suffix, "-real", 5) == 0);
            const bool virt = suffix_len == 0 || (suffix_len == 8 && strncmp(suffix, "-virtual", 8) == 0);
            if (!real && !virt) judged = false;
            if (real && nn / 10 == major && nn % 10 <= minor) return true;
            if (virt && nn <= cc) return true;
        }
        p += len;
    }
    return !judged;
}
