/* libportable OpenCL backend — the on-disk cache of compiled programs.
 *
 * One file per program binary: <dir>/opencl-<key as 16 hex digits>.bin,
 * where the key (computed by ocl_program.c) hashes the source, the build
 * options, the device, the driver and the platform. The file starts with a
 * header that repeats the key and carries the payload's size and hash, so a
 * truncated, foreign or corrupted file is recognised and rebuilt. Writes go
 * to a temporary file in the same directory and are renamed into place, so a
 * reader never sees half a file even with several processes compiling at
 * once. Every failure here is logged and ignored: the cache only saves time. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ocl_internal.h"

#define OCL_CACHE_MAGIC "PTOCLBN1"

typedef struct ocl_cache_header {
    char magic[8];
    uint64_t key;
    uint64_t size;
    uint64_t payload_hash;
} ocl_cache_header;

uint64_t ocl_fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* mkdir -p for an absolute path; true when path is a writable directory. */
static bool ocl_make_dirs(const char *path) {
    char buf[1024];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; ++i) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        char saved = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return false;
        buf[i] = saved;
    }
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode) && access(path, W_OK | X_OK) == 0;
}

bool ocl_cache_dir(char *out, size_t cap) {
    /* XDG says relative values are invalid and must be ignored. */
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && xdg[0] == '/') {
        int n = snprintf(out, cap, "%s/portable", xdg);
        if (n > 0 && (size_t)n < cap && ocl_make_dirs(out)) return true;
    }
    const char *home = getenv("HOME");
    if (home && home[0] == '/') {
        int n = snprintf(out, cap, "%s/.cache/portable", home);
        if (n > 0 && (size_t)n < cap && ocl_make_dirs(out)) return true;
    }
    return false;
}

static bool ocl_cache_path(uint64_t key, char *out, size_t cap) {
    char dir[900];
    if (!ocl_cache_dir(dir, sizeof dir)) return false;
    int n = snprintf(out, cap, "%s/opencl-%016llx.bin", dir, (unsigned long long)key);
    return n > 0 && (size_t)n < cap;
}

unsigned char *ocl_cache_load(uint64_t key, size_t *size) {
    char path[1024];
    if (!ocl_cache_path(key, path, sizeof path)) return NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    ocl_cache_header h;
    unsigned char *data = NULL;
    const char *problem = NULL;
    if (fread(&h, sizeof h, 1, f) != 1 || memcmp(h.magic, OCL_CACHE_MAGIC, 8) != 0)
        problem = "bad header";
    else if (h.key != key)
        problem = "key mismatch";
    else if (h.size == 0 || h.size > ((uint64_t)1 << 31))
        problem = "implausible size";
    else if (!(data = malloc((size_t)h.size)))
        problem = "out of host memory";
    else if (fread(data, 1, (size_t)h.size, f) != (size_t)h.size || fgetc(f) != EOF)
        problem = "truncated or oversized";
    else if (ocl_fnv1a(OCL_FNV_OFFSET, data, (size_t)h.size) != h.payload_hash)
        problem = "checksum mismatch";
    fclose(f);
    if (problem) {
        ocl_log(PT_LOG_WARN, "ignoring corrupt program cache entry %s (%s); rebuilding", path,
                problem);
        free(data);
        return NULL;
    }
    *size = (size_t)h.size;
    return data;
}

void ocl_cache_store(uint64_t key, const unsigned char *data, size_t size) {
    char path[1024], tmp[1100];
    if (!ocl_cache_path(key, path, sizeof path)) {
        ocl_log(PT_LOG_DEBUG, "no usable cache directory ($XDG_CACHE_HOME, $HOME); "
                              "compiled programs are not cached on disk");
        return;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        ocl_log(PT_LOG_WARN, "cannot create %s: %s; program not cached", tmp, strerror(errno));
        return;
    }
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        close(fd);
        unlink(tmp);
        return;
    }
    ocl_cache_header h;
    memcpy(h.magic, OCL_CACHE_MAGIC, 8);
    h.key = key;
    h.size = size;
    h.payload_hash = ocl_fnv1a(OCL_FNV_OFFSET, data, size);
    bool ok = fwrite(&h, sizeof h, 1, f) == 1 && fwrite(data, 1, size, f) == size;
    ok = (fclose(f) == 0) && ok;
    /* mkstemp makes 0600 files; the cache is as readable as its directory. */
    if (ok) chmod(tmp, 0644);
    if (!ok || rename(tmp, path) != 0) {
        ocl_log(PT_LOG_WARN, "cannot write program cache entry %s: %s", path, strerror(errno));
        unlink(tmp);
        return;
    }
    ocl_log(PT_LOG_DEBUG, "cached program binary %s (%zu bytes)", path, size);
}
