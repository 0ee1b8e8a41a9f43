/* The file side of pt_save: a temporary next to the target that a rename
 * makes the real file, with the replaced file's mode and owner, and the
 * temporaries of saves that were killed half way removed.
 *
 * A save replaces a file by renaming a new one over it, so without care the
 * new file would get the default mode (a 0600 checkpoint would become
 * world-readable) and the saving user as owner. And a save killed between
 * creating its temporary and the rename leaves "<path>.tmp<pid>.<hex>"
 * behind, as big as the checkpoint: the next save of the same path removes
 * those whose process is gone. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nn/nn_internal.h"

int pt__save_temporary(const char *path, char *tmp, size_t cap) {
    static _Atomic uint64_t calls;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t x = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^ (uint64_t)(uintptr_t)tmp ^
                 (++calls << 40);
    for (int attempt = 0; attempt < 100; ++attempt) {
        /* splitmix64 */
        x += 0x9e3779b97f4a7c15u;
        uint64_t r = x;
        r = (r ^ (r >> 30)) * 0xbf58476d1ce4e5b9u;
        r = (r ^ (r >> 27)) * 0x94d049bb133111ebu;
        r ^= r >> 31;
        snprintf(tmp, cap, "%s.tmp%ld.%08x", path, (long)getpid(), (unsigned)r);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    return -1; /* errno is EEXIST */
}

void pt__save_keep_owner(int fd, const char *path) {
    struct stat old;
    /* lstat: the rename replaces a symlink itself, not what it points to */
    if (lstat(path, &old) != 0 || !S_ISREG(old.st_mode)) return;
    /* The owner first: changing it clears set-id bits, which the mode then
     * restores. Only root may give a file away; others keep their own. */
    if (old.st_uid != geteuid() || old.st_gid != getegid()) {
        if (fchown(fd, old.st_uid, old.st_gid) != 0 && fchown(fd, (uid_t)-1, old.st_gid) != 0) {
            /* neither: the file is the saver's, which is what saving means */
        }
    }
    (void)fchmod(fd, old.st_mode & 07777);
}

void pt__save_sync_folder(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

/* The pid in name when it is exactly "<base>.tmp<pid>.<8 hex digits>", else 0. */
static long temporary_pid(const char *name, const char *base) {
    size_t n = strlen(base);
    if (strncmp(name, base, n) != 0 || strncmp(name + n, ".tmp", 4) != 0) return 0;
    const char *p = name + n + 4;
    long pid = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9' && digits < 10; ++p, ++digits) pid = pid * 10 + (*p - '0');
    if (!digits || *p != '.') return 0;
    ++p;
    for (int i = 0; i < 8; ++i)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f'))) return 0;
    return p[8] == '\0' ? pid : 0;
}

void pt__save_remove_stale(const char *path) {
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    int dfd = dir && *base ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    free(dir);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0) close(dfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid = temporary_pid(e->d_name, base);
        /* a live process (or one we may not signal) may still be saving */
        if (pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        struct stat st;
        /* only the saver's own regular files: never another user's, never
         * what a link points to */
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid())
            continue;
        (void)unlinkat(dfd, e->d_name, 0);
    }
    closedir(d);
}
