/* Test helpers for the cases with files another user made (the plugin
 * loader, the OpenCL cache, pt_save): copying a file, as this user or as
 * another one (a child that drops root first), and removing a scratch
 * folder. Standalone (no library calls), so any test folder can use it. */
#ifndef PT_TEST_OTHER_USER_H
#define PT_TEST_OTHER_USER_H

#define _GNU_SOURCE /* setresuid, setresgid, nftw */
#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* from copied to to, then given mode. */
static inline bool test_copy_file(const char *from, const char *to, mode_t mode) {
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    char buf[65536];
    size_t n;
    bool ok = in && out;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
    if (in) fclose(in);
    if (out && fclose(out) != 0) ok = false;
    return ok && chmod(to, mode) == 0;
}

/* The same done by user pw (needs root): the copy is pw's file. */
static inline bool test_copy_as(const struct passwd *pw, const char *from, const char *to, mode_t mode) {
    pid_t pid = fork();
    if (pid == 0) {
        if (setgroups(0, NULL) != 0 || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) != 0 ||
            setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) != 0)
            _exit(2);
        unlink(to);
        _exit(test_copy_file(from, to, mode) ? 0 : 1);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static inline int test_remove_one(const char *p, const struct stat *s, int flag, struct FTW *f) {
    (void)s, (void)flag, (void)f;
    return remove(p);
}

/* rm -r dir (symlinks removed, not followed). */
static inline void test_remove_tree(const char *dir) { nftw(dir, test_remove_one, 16, FTW_DEPTH | FTW_PHYS); }

#endif
