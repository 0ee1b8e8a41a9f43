/* The digits trainers' shared command line (digits_cli.h). */
#include "digits_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *f, const char *prog, const digits_cli_spec *spec, const digits_cli *out, int default_epochs) {
    const char *models = out->models;
    fprintf(f, "usage: %s%s [--data digits.csv.gz]%s [--epochs N]%s%s%s%s%s%s\n", spec->launcher, prog,
            spec->save_what ? " [--save model.safetensors]" : "", models ? " [--model " : "",
            models ? models : "", models ? "]" : "", out->precision ? " [--dtype f32|bf16|f16]" : "",
            out->logs_losses ? " [--loss-log FILE]" : "", out->graphs ? " [--graph]" : "");
    fprintf(f, "  --data PATH    the digits CSV (default: examples/data/digits.csv.gz)\n");
    if (models) fprintf(f, "  --model NAME   which net: %s (default: the first)\n", models);
    if (spec->save_what) fprintf(f, "  --save PATH    %s\n", spec->save_what);
    if (out->precision)
        fprintf(f, "  --dtype T      compute dtype: f32 (default), or bf16 / f16 with f32 master weights\n"
                   "                 (mixed precision, pt_module_set_compute_dtype)\n");
    if (out->logs_losses)
        fprintf(f, "  --loss-log F   write \"epoch step loss\" for every training step to F (%%.9g)\n");
    if (out->graphs)
        fprintf(f, "  --graph        capture the training step once per batch shape and replay it\n"
                   "                 (portable/graph.h): the same batches and losses, less host work\n");
    fprintf(f,
            "  --epochs N     training epochs, a whole number >= 1 (default %d)\n"
            "  -h, --help     this text\n"
            "%s\n",
            default_epochs, spec->footer);
}

/* An option this example does not offer (getopt_long knows every example's
 * options): the message getopt would give, then the usage. Returns 2. */
static int unoffered(const char *option, const char *prog, const digits_cli_spec *spec,
                     const digits_cli *out, int default_epochs) {
    fprintf(stderr, "%s: unrecognized option '--%s'\n", prog, option);
    usage(stderr, prog, spec, out, default_epochs);
    return 2;
}

/* 0 when a file can be written at path (an existing regular file is left as
 * it is; a new one is created and removed again), else the errno saying why,
 * so a bad --save is found before minutes of training, not after. */
static int check_writable(const char *path) {
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return EISDIR;
        return access(path, W_OK) == 0 ? 0 : errno;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return errno;
    close(fd);
    unlink(path);
    return 0;
}

/* Whether name is one of the '|'-separated choices. */
static int model_listed(const char *choices, const char *name) {
    size_t len = strlen(name);
    for (const char *c = choices; *c;) {
        const char *bar = strchr(c, '|');
        size_t n = bar ? (size_t)(bar - c) : strlen(c);
        if (n == len && strncmp(c, name, n) == 0) return 1;
        if (!bar) break;
        c = bar + 1;
    }
    return 0;
}

int digits_cli_parse(int argc, char **argv, const digits_cli_spec *spec, digits_cli *out) {
    const int default_epochs = out->epochs;
    static const struct option options[] = {{"data", required_argument, NULL, 'd'},
                                            {"save", required_argument, NULL, 's'},
                                            {"epochs", required_argument, NULL, 'e'},
                                            {"dtype", required_argument, NULL, 't'},
                                            {"loss-log", required_argument, NULL, 'l'},
                                            {"help", no_argument, NULL, 'h'},
                                            {"model", required_argument, NULL, 'm'},
                                            {"graph", no_argument, NULL, 'g'},
                                            {NULL, 0, NULL, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        char *end = NULL;
        long n;
        switch (opt) {
        case 'd': out->data = optarg; break;
        case 's':
            if (!spec->save_what) /* this example saves nothing */
                return unoffered("save", argv[0], spec, out, default_epochs);
            out->save = optarg;
            break;
        case 'e':
            errno = 0;
            n = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || n < 1 || n > 100000) {
                fprintf(stderr, "%s: --epochs '%s' is not a whole number from 1 to 100000\n", argv[0], optarg);
                usage(stderr, argv[0], spec, out, default_epochs);
                return 2;
            }
            out->epochs = (int)n;
            break;
        case 'm':
            if (!out->models) return unoffered("model", argv[0], spec, out, default_epochs);
            if (!model_listed(out->models, optarg)) {
                fprintf(stderr, "%s: --model '%s' is not one of %s\n", argv[0], optarg, out->models);
                usage(stderr, argv[0], spec, out, default_epochs);
                return 2;
            }
            out->model = optarg;
            break;
        case 'l':
            if (!out->logs_losses) /* this example logs no per-step losses */
                return unoffered("loss-log", argv[0], spec, out, default_epochs);
            out->loss_log = optarg;
            break;
        case 't':
            if (!out->precision) /* this example has one precision */
                return unoffered("dtype", argv[0], spec, out, default_epochs);
            if (!strcmp(optarg, "f32") || !strcmp(optarg, "bf16") || !strcmp(optarg, "f16")) {
                out->dtype = optarg;
            } else {
                fprintf(stderr, "%s: --dtype '%s' is not one of f32, bf16, f16\n", argv[0], optarg);
                usage(stderr, argv[0], spec, out, default_epochs);
                return 2;
            }
            break;
        case 'g':
            if (!out->graphs) /* this example has no captured step */
                return unoffered("graph", argv[0], spec, out, default_epochs);
            out->graph = true;
            break;
        case 'h': usage(stdout, argv[0], spec, out, default_epochs); return 1;
        default: usage(stderr, argv[0], spec, out, default_epochs); return 2; /* getopt_long said what was wrong */
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
        usage(stderr, argv[0], spec, out, default_epochs);
        return 2;
    }
    const char *outputs[2][2] = {{"--save", out->save}, {"--loss-log", out->loss_log}};
    for (int i = 0; i < 2; ++i) {
        int err = outputs[i][1] ? check_writable(outputs[i][1]) : 0;
        if (err) {
            fprintf(stderr, "%s: %s '%s' cannot be written (%s); give a path in a writable folder\n",
                    argv[0], outputs[i][0], outputs[i][1], strerror(err));
            usage(stderr, argv[0], spec, out, default_epochs);
            return 2;
        }
    }
    return 0;
}

int digits_write_losses(FILE *f, int epoch, pt_tensor **losses, int steps) {
    int bad = 0;
    for (int s = 0; s < steps; ++s) {
        double l = pt_item(losses[s]);
        bad |= isnan(l) || fprintf(f, "%d %d %.9g\n", epoch, s, l) < 0;
        pt_release(losses[s]);
        losses[s] = NULL;
    }
    return bad;
}
