/* Plugins another user could have planted are never opened.
 *
 * PORTABLE_PLUGIN_PATH names, before the real plugins, folders holding a
 * libportable-cpu.so whose constructor writes a marker file (the planted
 * fake of tests/loader/fake_plugin.c): a world-writable sticky folder with
 * the file made by nobody (the repro), the file owned by nobody in a folder
 * of root's, and a file of root's that others may write. The cpu backend
 * must come from the build's own folder, the marker must not exist, and
 * the backend's note (what `portable devices` prints) must name each
 * skipped file and why.
 *
 * The cases with nobody's files need root (as here and in CI); otherwise
 * only the world-writable file is tried and the rest is skipped with a
 * message. */
#include "../unit/other_user.h"

#include <errno.h>
#include <signal.h>

#include "../unit/check.h"

static char dirs[3][64], marker[128];
static int n_dirs;

static int backend_index(const char *name) {
    for (int i = 0; i < pt_backend_count(); ++i)
        if (strcmp(pt_backend_name(i), name) == 0) return i;
    return -1;
}

static void planted_skipped(void) {
    alarm(30);
    CHECK_NOT_NULL(pt_cpu());
    int i = backend_index("cpu");
    CHECK(i >= 0);
    if (i < 0) return;
    CHECK_STR(pt_backend_path(i), PT_LIB_DIR "/libportable-cpu.so");
    const char *note = NULL;
    CHECK(pt_backend_available(i, &note));
    printf("   cpu skipped: %s\n", note ? note : "(null)");
    for (int d = 0; d < n_dirs; ++d) CHECK_HAS(note, dirs[d]);
    CHECK_HAS(note, "writable by others");
    if (n_dirs == 3) CHECK_HAS(note, "neither root nor this user");
    struct stat st;
    CHECK(stat(marker, &st) != 0 && errno == ENOENT); /* the planted constructor never ran */
    alarm(0);
}

int main(void) {
    const char *planted = PLANTED_DIR "/lib/libportable-cpu.so";
    struct passwd *nobody = getpwnam("nobody");
    const bool as_root = geteuid() == 0 && nobody;
    char src_dir[64] = "/tmp/pt-trust-src-XXXXXX", src[128], path[128];
    snprintf(marker, sizeof marker, "/tmp/pt-trust-marker-%ld", (long)getpid());
    if (!mkdtemp(src_dir) || chmod(src_dir, 0755) != 0) return 1;
    snprintf(src, sizeof src, "%s/libportable-cpu.so", src_dir);
    CHECK(test_copy_file(planted, src, 0644));

    /* a file of this user's that others may write, in a folder of its own */
    snprintf(dirs[n_dirs], sizeof dirs[0], "/tmp/pt-trust-wf-XXXXXX");
    CHECK(mkdtemp(dirs[n_dirs]) && chmod(dirs[n_dirs], 0755) == 0);
    snprintf(path, sizeof path, "%s/libportable-cpu.so", dirs[n_dirs++]);
    CHECK(test_copy_file(src, path, 0666));
    if (as_root) {
        /* the repro: a sticky world-writable folder, the file made by nobody */
        snprintf(dirs[n_dirs], sizeof dirs[0], "/tmp/pt-trust-ww-XXXXXX");
        CHECK(mkdtemp(dirs[n_dirs]) && chmod(dirs[n_dirs], 01777) == 0);
        snprintf(path, sizeof path, "%s/libportable-cpu.so", dirs[n_dirs++]);
        CHECK(test_copy_as(nobody, src, path, 0755));
        /* nobody's file in a folder of root's */
        snprintf(dirs[n_dirs], sizeof dirs[0], "/tmp/pt-trust-own-XXXXXX");
        CHECK(mkdtemp(dirs[n_dirs]) && chmod(dirs[n_dirs], 0755) == 0);
        snprintf(path, sizeof path, "%s/libportable-cpu.so", dirs[n_dirs++]);
        CHECK(test_copy_file(src, path, 0755) && chown(path, nobody->pw_uid, nobody->pw_gid) == 0);
    } else {
        printf("SKIP (part): the cases with files made by another user need root and a 'nobody' user "
               "(running as uid %u)\n",
               (unsigned)geteuid());
    }
    char env_path[400], env_marker[200];
    int used = snprintf(env_path, sizeof env_path, "PORTABLE_PLUGIN_PATH=");
    for (int d = 0; d < n_dirs; ++d) used += snprintf(env_path + used, sizeof env_path - (size_t)used, "%s:", dirs[d]);
    snprintf(env_marker, sizeof env_marker, "PT_PLANTED_MARKER=%s", marker);
    const char *env[] = {env_path, env_marker, "PORTABLE_BACKEND=cpu", NULL};
    check_in_child("plugins other users could have planted", env, planted_skipped);

    unlink(marker);
    for (int d = 0; d < n_dirs; ++d) {
        snprintf(path, sizeof path, "%s/libportable-cpu.so", dirs[d]);
        unlink(path);
        rmdir(dirs[d]);
    }
    unlink(src);
    rmdir(src_dir);
    return check_summary();
}
