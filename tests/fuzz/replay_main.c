/* A plain main() for a fuzz target, for compilers without libFuzzer: runs
 * LLVMFuzzerTestOneInput once on each file named, and on each file of each
 * folder named (sorted, not recursive). CI replays the committed corpus
 * this way under gcc's AddressSanitizer + UndefinedBehaviorSanitizer.
 *
 *   fuzz_<target>_replay FILE_OR_FOLDER...
 *
 * Exit status: 0 when every input ran (a broken contract aborts), 2 for
 * usage or unreadable files. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *bigger = realloc(buf, cap *= 2);
            if (!bigger) free(buf);
            buf = bigger;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "replay: out of memory reading %s\n", path);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_FOLDER...\n", argv[0]);
        return 2;
    }
    int ran = 0, failed = 0;
    for (int i = 1; i < argc; ++i) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            fprintf(stderr, "replay: no such file or folder: %s\n", argv[i]);
            ++failed;
            continue;
        }
        if (!S_ISDIR(sb.st_mode)) {
            failed += run_file(argv[i]) != 0;
            ran += 1;
            continue;
        }
        DIR *d = opendir(argv[i]);
        char **names = NULL;
        size_t n = 0, cap = 0;
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') continue;
            if (n == cap) {
                char **more = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *names);
                if (!more) break;
                names = more;
            }
            size_t len = strlen(argv[i]) + strlen(e->d_name) + 2;
            if ((names[n] = malloc(len)) == NULL) break;
            snprintf(names[n++], len, "%s/%s", argv[i], e->d_name);
        }
        if (d) closedir(d);
        if (n) qsort(names, n, sizeof *names, by_name);
        for (size_t k = 0; k < n; ++k) {
            struct stat fb;
            if (stat(names[k], &fb) == 0 && S_ISREG(fb.st_mode)) {
                failed += run_file(names[k]) != 0;
                ++ran;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("replayed %d inputs, %d unreadable\n", ran, failed);
    return failed || ran == 0 ? 2 : 0;
}
