/* pt_save and pt_load and the file system: a save keeps the replaced file's
 * mode and owner, and removes the temporaries a killed save left; a load
 * opens regular files only (a FIFO used to block it for ever).
 *
 * The owner case gives the file to nobody first, which needs root (as here
 * and in CI); it is skipped with a message otherwise. */
#include "../unit/other_user.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nn_test.h"

static char dir[512];

static pt_module *made_net(void) {
    pt_module *layers[2] = {pt_linear_sized(4, 3), pt_relu_module()};
    return pt_sequential(2, layers);
}

static mode_t mode_of(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? st.st_mode & 07777 : (mode_t)-1;
}

/* A save over a 0600 file keeps 0600 (and 0640 keeps 0640), whatever the
 * umask gives new files. */
static void keeps_mode(pt_module *m) {
    char path[600];
    snprintf(path, sizeof path, "%s/mode.safetensors", dir);
    const mode_t modes[2] = {0600, 0640};
    for (int i = 0; i < 2; ++i) {
        NN_CHECK(pt_save(m, path) == PT_OK, "first save: %s", pt_last_error());
        NN_CHECK(chmod(path, modes[i]) == 0, "chmod");
        NN_CHECK(pt_save(m, path) == PT_OK, "second save: %s", pt_last_error());
        NN_CHECK(mode_of(path) == modes[i], "mode after the save is %o, was %o", (unsigned)mode_of(path),
                 (unsigned)modes[i]);
    }
}

/* root saving over nobody's 0600 file: it stays nobody's and 0600. */
static void keeps_owner(pt_module *m) {
    struct passwd *nobody = getpwnam("nobody");
    if (geteuid() != 0 || !nobody) {
        printf("SKIP (part): keeping another user's ownership needs root and a 'nobody' user (uid %u)\n",
               (unsigned)geteuid());
        return;
    }
    char path[600];
    snprintf(path, sizeof path, "%s/owner.safetensors", dir);
    NN_CHECK(pt_save(m, path) == PT_OK, "save: %s", pt_last_error());
    NN_CHECK(chown(path, nobody->pw_uid, nobody->pw_gid) == 0 && chmod(path, 0600) == 0, "chown");
    NN_CHECK(pt_save(m, path) == PT_OK, "save over nobody's file: %s", pt_last_error());
    struct stat st;
    NN_CHECK(stat(path, &st) == 0 && st.st_uid == nobody->pw_uid && st.st_gid == nobody->pw_gid &&
                 (st.st_mode & 07777) == 0600,
             "owner %u:%u mode %o after the save; want %u:%u 0600", (unsigned)st.st_uid, (unsigned)st.st_gid,
             (unsigned)(st.st_mode & 07777), (unsigned)nobody->pw_uid, (unsigned)nobody->pw_gid);
}

/* A pid that no process has: a child that has exited and been reaped. */
static pid_t gone_pid(void) {
    pid_t p = fork();
    if (p == 0) _exit(0);
    waitpid(p, NULL, 0);
    return p;
}

static bool exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Temporaries of a save whose process is gone are removed by the next
 * save of that path; a live process's, another path's, and names that only
 * look similar are left alone. */
static void removes_stale_temporaries(pt_module *m) {
    char path[600], stale[700], live[700], other[700], odd[700], mine_link[700];
    snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
    pid_t gone = gone_pid();
    snprintf(stale, sizeof stale, "%s.tmp%ld.0123abcd", path, (long)gone);
    snprintf(live, sizeof live, "%s.tmp%ld.0123abcd", path, (long)getppid());
    snprintf(other, sizeof other, "%s/other.safetensors.tmp%ld.0123abcd", dir, (long)gone);
    snprintf(odd, sizeof odd, "%s.tmp%ld.0123abcdX", path, (long)gone);
    snprintf(mine_link, sizeof mine_link, "%s.tmp%ld.00000001", path, (long)gone);
    const char *made[4] = {stale, live, other, odd};
    for (int i = 0; i < 4; ++i) {
        FILE *f = fopen(made[i], "w");
        NN_CHECK(f && fputs("half a checkpoint", f) >= 0 && fclose(f) == 0, "making %s", made[i]);
    }
    NN_CHECK(symlink(stale, mine_link) == 0, "symlink");
    NN_CHECK(pt_save(m, path) == PT_OK, "save: %s", pt_last_error());
    NN_CHECK(!exists(stale), "the killed save's temporary %s is still there", stale);
    NN_CHECK(exists(mine_link), "a symlink named like a temporary was removed (only regular files are)");
    NN_CHECK(exists(live), "a live process's temporary %s was removed", live);
    NN_CHECK(exists(other), "another path's temporary %s was removed", other);
    NN_CHECK(exists(odd), "a name that only looks like a temporary (%s) was removed", odd);
    unlink(live);
    unlink(other);
    unlink(odd);
    unlink(mine_link);
}

/* pt_load of a FIFO, a folder and /dev/zero: PT_ERR_IO at once. */
static void loads_regular_files_only(void) {
    char fifo[600];
    snprintf(fifo, sizeof fifo, "%s/ckpt.fifo", dir);
    NN_CHECK(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno));
    const char *paths[3] = {fifo, dir, "/dev/zero"};
    alarm(60); /* a blocking open would otherwise hang the test */
    for (int i = 0; i < 3; ++i) {
        pt_module *m = made_net();
        pt_status s = pt_load(m, paths[i], NULL);
        NN_CHECK(s == PT_ERR_IO && strstr(pt_last_error(), "pt_load: ") == pt_last_error() &&
                     strstr(pt_last_error(), "not a regular file"),
                 "pt_load(%s) gave %s: %s", paths[i], pt_status_name(s), pt_last_error());
        pt_module_free(m);
    }
    alarm(0);
    unlink(fifo);
}

int main(void) {
    nn_begin();
    snprintf(dir, sizeof dir, "/tmp/save_files.XXXXXX");
    if (!mkdtemp(dir)) return 1;
    umask(022);
    pt_module *m = made_net();
    NN_CHECK(m != NULL, "net: %s", pt_last_error());
    keeps_mode(m);
    keeps_owner(m);
    removes_stale_temporaries(m);
    loads_regular_files_only();
    pt_module_free(m);
    test_remove_tree(dir);
    return nn_finish();
}
