/* The files the OpenCL backend reads: its program cache and the CLBlast
 * tuning file.
 *
 * The cache holds binaries that may be native code (PoCL), so an entry is
 * used only when it is the program's own (a SHA-256 of everything it was
 * built from, bound into the entry), in a directory and a file of the
 * user's own that nobody else may write. Each case plants a bad entry, then
 * a fresh process computes 1.5 + 2.25 in f32 on opencl:0 and must get 3.75
 * and a warning naming the problem: the i32 program's entry copied under the
 * f32 program's name (its header names another key), then the poisoning
 * repro, the i32 binary forged into a self-consistent f32 entry (header key
 * and digest recomputed, as someone who can write the folder could): in a
 * world-writable directory owned by nobody with files nobody wrote, owned
 * by nobody in the user's own directory, or writable by others; and a
 * FIFO. The
 * tuning file named by PORTABLE_OPENCL_TUNING may be a FIFO, /dev/zero or
 * /dev/urandom: refused, without hanging or flooding stderr.
 *
 * The cases with nobody's files need root (as here and in CI) and are
 * skipped with a message otherwise. Exit 77 when there is no OpenCL device. */
#include "other_user.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>

#include "../../backends/opencl/launch_sha256.h"
#include "check.h"

enum { MAX_FILES = 16, LOG_CAP = 1 << 16 };

static char base[512];

/* ---- SHA-256: the FIPS 180-4 examples ---- */

static void hex(const unsigned char d[32], char out[65]) {
    for (int i = 0; i < 32; ++i) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void sha256_vectors(void) {
    static const struct {
        const char *text;
        int repeat;
        const char *digest;
    } v[] = {
        {"", 1, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", 1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 1,
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"a", 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; ++i) {
        ocl_sha256 s;
        ocl_sha256_init(&s);
        for (int r = 0; r < v[i].repeat; ++r) ocl_sha256_update(&s, v[i].text, strlen(v[i].text));
        unsigned char d[32];
        char h[65];
        ocl_sha256_final(&s, d);
        hex(d, h);
        CHECK_STR(h, v[i].digest);
    }
}

/* ---- one computation in a fresh process ---- */

typedef struct outcome {
    int status;   /* 0: computed; 77: no OpenCL device; else failed or hung */
    double value;
    char log[LOG_CAP]; /* its stderr */
    size_t log_bytes;
} outcome;

/* x + y in dtype t on opencl:0 in a child with XDG_CACHE_HOME=xdg (and
 * PORTABLE_OPENCL_TUNING=tuning unless NULL); a child that hangs is killed
 * after 120 s. */
static void compute(const char *xdg, const char *tuning, pt_dtype t, double x, double y, outcome *o) {
    char log_path[600];
    snprintf(log_path, sizeof log_path, "%s/child.log", base);
    int fds[2];
    o->status = -1;
    o->log_bytes = 0;
    o->log[0] = '\0';
    if (pipe(fds) != 0) return;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        alarm(120);
        int lf = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (lf >= 0) dup2(lf, 2);
        setenv("XDG_CACHE_HOME", xdg, 1);
        setenv("PORTABLE_LOG", "warn", 1);
        if (tuning) setenv("PORTABLE_OPENCL_TUNING", tuning, 1);
        else unsetenv("PORTABLE_OPENCL_TUNING");
        pt_device *d = pt_device_get("opencl:0");
        if (!d) _exit(77);
        pt_tensor *a = pt_full(d, t, 0, NULL, x), *b = pt_full(d, t, 0, NULL, y);
        double v = pt_item(pt_add(a, b));
        if (write(fds[1], &v, sizeof v) != (ssize_t)sizeof v) _exit(3);
        _exit(pt_last_status() == PT_OK ? 0 : 2);
    }
    close(fds[1]);
    double v = NAN;
    if (read(fds[0], &v, sizeof v) != (ssize_t)sizeof v) v = NAN;
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    o->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    o->value = v;
    FILE *f = fopen(log_path, "r");
    if (f) {
        o->log_bytes = fread(o->log, 1, LOG_CAP - 1, f);
        o->log[o->log_bytes] = '\0';
        fclose(f);
    }
}

/* 1.5 + 2.25 in f32 gave 3.75 and the log says want. */
static void expect_refused(const char *label, const char *xdg, const char *want) {
    static outcome o;
    compute(xdg, NULL, PT_F32, 1.5, 2.25, &o);
    char what[256];
    snprintf(what, sizeof what, "%s: 1.5 + 2.25 on opencl", label);
    check_report(o.status == 0 && o.value == 3.75, __FILE__, __LINE__, what);
    if (o.status != 0 || o.value != 3.75) printf("  status %d, value %.17g, log:\n%s\n", o.status, o.value, o.log);
    CHECK_HAS(o.log, want);
}

/* ---- the cache directory's entries ---- */

/* An entry's header (backends/opencl/launch_cache.c): magic, key, size, digest. */
enum { MAGIC_BYTES = 8, KEY_BYTES = 32, HEADER_BYTES = 8 + 32 + 8 + 32 };

/* What an attacker who can write the folder makes (the poisoning repro): the
 * payload of entry foreign under the key of entry own, with a header whose
 * digest is right for them, to out. Without the ownership checks such an
 * entry would be loaded. */
static bool forge(const char *own, const char *foreign, const char *out) {
    static unsigned char a[HEADER_BYTES], payload[1 << 24];
    FILE *fa = fopen(own, "rb"), *fb = fopen(foreign, "rb");
    size_t n = 0;
    bool ok = fa && fb && fread(a, 1, HEADER_BYTES, fa) == HEADER_BYTES && fseek(fb, HEADER_BYTES, SEEK_SET) == 0;
    if (ok) n = fread(payload, 1, sizeof payload, fb);
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    if (!ok || n == 0 || n == sizeof payload) return false;
    uint64_t size = n;
    unsigned char header[HEADER_BYTES];
    memcpy(header, a, MAGIC_BYTES + KEY_BYTES); /* magic and the victim's key */
    memcpy(header + MAGIC_BYTES + KEY_BYTES, &size, 8);
    ocl_sha256 s;
    ocl_sha256_init(&s);
    ocl_sha256_update(&s, a + MAGIC_BYTES, KEY_BYTES);
    ocl_sha256_update(&s, &size, 8);
    ocl_sha256_update(&s, payload, n);
    ocl_sha256_final(&s, header + MAGIC_BYTES + KEY_BYTES + 8);
    FILE *f = fopen(out, "wb");
    ok = f && fwrite(header, 1, HEADER_BYTES, f) == HEADER_BYTES && fwrite(payload, 1, n, f) == n;
    if (f && fclose(f) != 0) ok = false;
    return ok;
}

static int list_entries(const char *dir, char names[MAX_FILES][256]) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL && n < MAX_FILES)
        if (strncmp(e->d_name, "opencl-", 7) == 0 && strstr(e->d_name, ".bin") && !strstr(e->d_name, ".tmp"))
            snprintf(names[n++], 256, "%s", e->d_name);
    if (d) closedir(d);
    return n;
}

static bool in_list(const char *name, char names[MAX_FILES][256], int n) {
    for (int i = 0; i < n; ++i)
        if (strcmp(names[i], name) == 0) return true;
    return false;
}

int main(void) {
    sha256_vectors();
    /* under /tmp, which every user can reach: nobody must get to the folders */
    snprintf(base, sizeof base, "/tmp/ocl_files.XXXXXX");
    if (!mkdtemp(base)) {
        printf("cannot make a folder under %s\n", base);
        return 1;
    }
    chmod(base, 0755); /* nobody must reach the folders below */
    char xdg_a[600], dir_a[700], names_a[MAX_FILES][256], names_b[MAX_FILES][256], path[1024], other[1024];
    snprintf(xdg_a, sizeof xdg_a, "%s/a", base);
    snprintf(dir_a, sizeof dir_a, "%s/portable", xdg_a);

    static outcome o;
    compute(xdg_a, NULL, PT_F32, 1.5, 2.25, &o);
    if (o.status == 77) {
        printf("SKIP: no OpenCL device (%d checks passed before)\n", check_passed);
        test_remove_tree(base);
        return check_failed ? 1 : 77;
    }
    CHECK(o.status == 0 && o.value == 3.75);
    int na = list_entries(dir_a, names_a);
    CHECK(na >= 1);
    compute(xdg_a, NULL, PT_I32, 1, 2, &o);
    CHECK(o.status == 0 && o.value == 3);
    int nb = list_entries(dir_a, names_b), foreign = -1;
    for (int i = 0; i < nb && foreign < 0; ++i)
        if (!in_list(names_b[i], names_a, na)) foreign = i;
    CHECK(foreign >= 0);
    if (na < 1 || foreign < 0) {
        printf("  no cache entries were written under %s; log:\n%s\n", dir_a, o.log);
        return check_summary();
    }
    char foreign_path[1024], f32_path[1024];
    snprintf(foreign_path, sizeof foreign_path, "%s/%s", dir_a, names_b[foreign]);
    snprintf(f32_path, sizeof f32_path, "%s/%s", dir_a, names_a[0]);
    char saved[1024], forged[1024];
    snprintf(saved, sizeof saved, "%s/i32.bin", base);
    snprintf(forged, sizeof forged, "%s/forged.bin", base);
    CHECK(test_copy_file(foreign_path, saved, 0644));
    CHECK(forge(f32_path, foreign_path, forged) && chmod(forged, 0644) == 0);

    /* the poisoning repro, in the user's own directory: bound to its key */
    for (int i = 0; i < na; ++i) {
        snprintf(path, sizeof path, "%s/%s", dir_a, names_a[i]);
        CHECK(test_copy_file(saved, path, 0644));
    }
    expect_refused("the i32 binary under the f32 name", xdg_a, "another program's");

    /* from here on the planted entries are forged (self-consistent): only
     * the ownership and mode checks stand in their way */
    /* a file others may write */
    CHECK(test_copy_file(forged, f32_path, 0666));
    expect_refused("a cache file writable by others", xdg_a, "writable by group or others");

    /* a FIFO under the entry's name: no hang */
    unlink(f32_path);
    CHECK(mkfifo(f32_path, 0600) == 0);
    expect_refused("a FIFO as a cache entry", xdg_a, "not a regular file");
    unlink(f32_path);

    struct passwd *nobody = getpwnam("nobody");
    if (geteuid() != 0 || !nobody) {
        printf("SKIP (part): the cases with files made by another user need root and a 'nobody' user "
               "(running as uid %u)\n",
               (unsigned)geteuid());
    } else {
        /* a file nobody made, in the user's own directory */
        CHECK(test_copy_as(nobody, forged, f32_path, 0644) == false); /* nobody cannot write in the user's folder */
        CHECK(test_copy_file(forged, f32_path, 0644) && chown(f32_path, nobody->pw_uid, nobody->pw_gid) == 0);
        expect_refused("a cache file owned by nobody", xdg_a, "owned by another user");

        /* the poisoning repro: a world-writable directory owned by nobody, the
         * entries written by nobody */
        char xdg_b[600], dir_b[700];
        snprintf(xdg_b, sizeof xdg_b, "%s/b", base);
        snprintf(dir_b, sizeof dir_b, "%s/portable", xdg_b);
        CHECK(mkdir(xdg_b, 0755) == 0 && mkdir(dir_b, 0777) == 0 && chmod(dir_b, 01777) == 0 &&
              chown(dir_b, nobody->pw_uid, nobody->pw_gid) == 0);
        for (int i = 0; i < na; ++i) {
            snprintf(other, sizeof other, "%s/%s", dir_b, names_a[i]);
            CHECK(test_copy_as(nobody, forged, other, 0644));
        }
        expect_refused("a world-writable cache directory owned by nobody", xdg_b,
                       "not using the program cache directory");
        int nb2 = list_entries(dir_b, names_b);
        CHECK_INT(nb2, na); /* nothing stored there either */
    }

    /* the tuning file: special files are refused, without hanging or flooding */
    char fifo[700];
    snprintf(fifo, sizeof fifo, "%s/tuning.fifo", base);
    CHECK(mkfifo(fifo, 0600) == 0);
    const char *specials[3] = {fifo, "/dev/zero", "/dev/urandom"};
    for (int i = 0; i < 3; ++i) {
        compute(xdg_a, specials[i], PT_F32, 1.5, 2.25, &o);
        char what[256];
        snprintf(what, sizeof what, "PORTABLE_OPENCL_TUNING=%s: computed 3.75", specials[i]);
        check_report(o.status == 0 && o.value == 3.75, __FILE__, __LINE__, what);
        CHECK_HAS(o.log, "not a regular file");
        CHECK(o.log_bytes < 4096);
    }
    test_remove_tree(base);
    return check_summary();
}
