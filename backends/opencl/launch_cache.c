/* libportable OpenCL backend — the on-disk cache of compiled programs.
 *
 * One file per program binary: <dir>/opencl-<first 16 hex digits of the
 * key>.bin, where the key (launch_program.c) is the SHA-256 of the source, the
 * build options, the device, the driver and the platform. The file's header
 * repeats the whole key and carries the payload's size and the SHA-256 of
 * key, size and payload, so an entry is bound to the program it was built
 * for: a truncated, corrupted or foreign file, or another program's entry
 * copied under this name, is recognised and rebuilt.
 *
 * The binaries hold native code on some drivers (PoCL), so loading one is
 * running code: the directory and every file must be the user's own and
 * writable by nobody else, as ssh requires of ~/.ssh; anything else is
 * refused with a warning and the program built from source. Writes go to a
 * temporary file in the same directory and are renamed into place, so a
 * reader never sees half a file even with several processes compiling at
 * once. Every failure here is logged and ignored: the cache only saves
 * time. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "launch_sha256.h"

#define OCL_CACHE_MAGIC "PTOCLBN2"

typedef struct ocl_cache_header {
    char magic[8];
    unsigned char key[32];
    uint64_t size;
    unsigned char digest[32]; /* SHA-256 of key, size (8 bytes, as here) and payload */
} ocl_cache_header;

static void entry_digest(const ocl_cache_key *key, uint64_t size, const unsigned char *data,
                         unsigned char out[32]) {
    ocl_sha256 s;
    ocl_sha256_init(&s);
    ocl_sha256_update(&s, key->id, sizeof key->id);
    ocl_sha256_update(&s, &size, sizeof size);
    ocl_sha256_update(&s, data, (size_t)size);
    ocl_sha256_final(&s, out);
}

/* Why st (a cache directory or file) cannot be trusted, or NULL: it must be
 * the user's own, and not writable by group or others. */
static const char *untrusted(const struct stat *st) {
    if (st->st_uid != geteuid()) return "owned by another user";
    if (st->st_mode & (S_IWGRP | S_IWOTH)) return "writable by group or others";
    return NULL;
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

/* dir itself (not a symlink to it) passes untrusted(); warns once if not. */
static bool trusted_dir(const char *dir) {
    static atomic_bool warned;
    struct stat st;
    const char *why = lstat(dir, &st) != 0 ? "unreadable" : !S_ISDIR(st.st_mode) ? "not a directory (a symlink?)" : untrusted(&st);
    if (!why) return true;
    if (!atomic_exchange(&warned, true))
        ocl_log(PT_LOG_WARN,
                "not using the program cache directory %s: %s (owner uid %u, mode %03o; it must be yours "
                "and writable only by you); kernels are built from source",
                dir, why, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
    return false;
}

bool ocl_cache_dir(char *out, size_t cap) {
    /* XDG says relative values are invalid and must be ignored. */
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && xdg[0] == '/') {
        int n = snprintf(out, cap, "%s/portable", xdg);
        if (n > 0 && (size_t)n < cap && ocl_make_dirs(out)) return trusted_dir(out);
    }
    const char *home = getenv("HOME");
    if (home && home[0] == '/') {
        int n = snprintf(out, cap, "%s/.cache/portable", home);
        if (n > 0 && (size_t)n < cap && ocl_make_dirs(out)) return trusted_dir(out);
    }
    return false;
}

static bool ocl_cache_path(const ocl_cache_key *key, char *out, size_t cap) {
    char dir[900];
    if (!ocl_cache_dir(dir, sizeof dir)) return false;
    int n = snprintf(out, cap, "%s/opencl-", dir);
    for (int i = 0; i < 8 && n > 0 && (size_t)n + 2 < cap; ++i) n += snprintf(out + n, cap - (size_t)n, "%02x", key->id[i]);
    if (n > 0 && (size_t)n < cap) n += snprintf(out + n, cap - (size_t)n, ".bin");
    return n > 0 && (size_t)n < cap;
}

/* The entry's file, opened only if it is a regular file of the user's own
 * that nobody else may write (O_NOFOLLOW: no symlink; O_NONBLOCK: a FIFO
 * planted under the name cannot block the open). NULL when missing or
 * refused (with a warning). */
static FILE *open_entry(const char *path) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT)
            ocl_log(PT_LOG_WARN, "not loading program cache entry %s: %s; rebuilding", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    const char *why = fstat(fd, &st) != 0 ? "cannot stat it" : !S_ISREG(st.st_mode) ? "not a regular file" : untrusted(&st);
    FILE *f = why ? NULL : fdopen(fd, "rb");
    if (!f) {
        if (why)
            ocl_log(PT_LOG_WARN, "not loading program cache entry %s: %s (owner uid %u, mode %03o); rebuilding", path,
                    why, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
        close(fd);
    }
    return f;
}

unsigned char *ocl_cache_load(const ocl_cache_key *key, size_t *size) {
    char path[1024];
    if (!ocl_cache_path(key, path, sizeof path)) return NULL;
    FILE *f = open_entry(path);
    if (!f) return NULL;
    ocl_cache_header h;
    unsigned char *data = NULL, digest[32];
    const char *problem = NULL;
    if (fread(&h, sizeof h, 1, f) != 1 || memcmp(h.magic, OCL_CACHE_MAGIC, 8) != 0)
        problem = "bad header";
    else if (memcmp(h.key, key->id, sizeof h.key) != 0)
        problem = "the entry is another program's";
    else if (h.size == 0 || h.size > ((uint64_t)1 << 31))
        problem = "implausible size";
    else if (!(data = malloc((size_t)h.size)))
        problem = "out of host memory";
    else if (fread(data, 1, (size_t)h.size, f) != (size_t)h.size || fgetc(f) != EOF)
        problem = "truncated or oversized";
    else if (entry_digest(key, h.size, data, digest), memcmp(digest, h.digest, sizeof digest) != 0)
        problem = "digest mismatch";
    fclose(f);
    if (problem) {
        ocl_log(PT_LOG_WARN, "ignoring corrupt program cache entry %s (%s); rebuilding", path, problem);
        free(data);
        return NULL;
    }
    *size = (size_t)h.size;
    return data;
}

void ocl_cache_store(const ocl_cache_key *key, const unsigned char *data, size_t size) {
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
    memcpy(h.key, key->id, sizeof h.key);
    h.size = size;
    entry_digest(key, h.size, data, h.digest);
    bool ok = fwrite(&h, sizeof h, 1, f) == 1 && fwrite(data, 1, size, f) == size;
    ok = (fclose(f) == 0) && ok;
    /* mkstemp makes 0600 files; the cache is as readable as its directory,
     * and writable only by its owner. */
    if (ok) chmod(tmp, 0644);
    if (!ok || rename(tmp, path) != 0) {
        ocl_log(PT_LOG_WARN, "cannot write program cache entry %s: %s", path, strerror(errno));
        unlink(tmp);
        return;
    }
    ocl_log(PT_LOG_DEBUG, "cached program binary %s (%zu bytes)", path, size);
}
