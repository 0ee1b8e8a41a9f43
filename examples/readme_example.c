/* The ten-line example of the README, built and run by the tests so it
 * stays true: readme_main is the README's main(void) word for word; the
 * real main only adds the command line every example has (--help). */
#include <portable/portable.h>
#include <stdio.h>

#include <getopt.h>

static int readme_main(void) {
    pt_device *dev = pt_default_device();                 /* PORTABLE_BACKEND picks it */
    if (!dev) { fprintf(stderr, "%s\n", pt_last_error()); return 1; }
    pt_scope scope = pt_scope_begin();                    /* releases what is made inside */
    int64_t shape[2] = {512, 512};
    pt_tensor *a = pt_randn(dev, PT_F32, 2, shape);       /* lives on dev */
    pt_tensor *c = pt_matmul(a, pt_transpose(a, 0, 1));   /* queued on dev, returns at once */
    double norm = pt_item(pt_norm(c));                    /* waits, copies one value back */
    pt_scope_end(scope);
    if (norm != norm) { fprintf(stderr, "%s\n", pt_last_error()); return 1; }
    printf("%s: |A A^T| = %g\n", pt_device_name(dev), norm);
    return 0;
}

static void usage(FILE *f, const char *prog) {
    fprintf(f,
            "usage: %s\n"
            "  -h, --help   this text\n"
            "Prints |A A^T| for a random 512x512 A on PORTABLE_BACKEND's device.\n",
            prog);
}

int main(int argc, char **argv) {
    static const struct option options[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int opt = getopt_long(argc, argv, "h", options, NULL);
    if (opt == 'h') {
        usage(stdout, argv[0]);
        return 0;
    }
    if (opt != -1 || optind < argc) {
        if (opt == -1) fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
        usage(stderr, argv[0]);
        return 2;
    }
    return readme_main();
}
