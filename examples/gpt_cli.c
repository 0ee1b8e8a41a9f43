/* gpt_train's command line (gpt_cli.h). */
#include "gpt_cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gpt_cli gpt_cli_defaults(const char *default_text) {
    return (gpt_cli){.text = default_text,
                     .steps = 1500,
                     .batch = 32,
                     .context = 64,
                     .layers = 2,
                     .heads = 4,
                     .width = 128,
                     .eval_every = 100,
                     .sample = 300,
                     .top_k = 10,
                     .lr = 3e-3,
                     .temperature = 0.8,
                     .seed = 1,
                     .prompt = "And God said"};
}

static void usage(FILE *f, const char *prog, const gpt_cli *d) {
    fprintf(f,
            "usage: %s [--text FILE] [--steps N] [--batch N] [--context N] [--layers N] [--heads N]\n"
            "       [--width N] [--lr X] [--seed N] [--graph] [--dtype f32|bf16] [--save PATH] [--load PATH]\n"
            "       [--eval-every N] [--loss-log FILE] [--sample N] [--prompt TEXT] [--temperature X] [--top-k N]\n"
            "  --text FILE      plain text to learn, one token per byte (default %s)\n"
            "  --steps N        training steps, 0 to only evaluate and sample (default %ld)\n"
            "  --batch N        sequences per step (default %ld)\n"
            "  --context N      characters per sequence (default %ld)\n"
            "  --layers N       transformer blocks (default %ld)\n"
            "  --heads N        attention heads; must divide --width (default %ld)\n"
            "  --width N        embedding width (default %ld)\n"
            "  --lr X           peak AdamW learning rate, warm-up then cosine to X/10 (default %g)\n"
            "  --seed N         initialisation, batches and sampling (default %llu)\n"
            "  --graph          capture the training step once and replay it (portable/graph.h)\n"
            "  --dtype T        f32 (default) or bf16 compute with f32 master weights\n"
            "  --save PATH      where to save the trained weights (safetensors)\n"
            "  --load PATH      start from saved weights (the same text, vocabulary and shape)\n"
            "  --eval-every N   steps between the loss lines (default %ld)\n"
            "  --loss-log FILE  write \"1 step loss\" for every step to FILE (%%.9g)\n"
            "  --sample N       characters to sample at the end, 0 for none (default %ld)\n"
            "  --prompt TEXT    the sample's seed string (default \"%s\")\n"
            "  --temperature X  the sample's softmax temperature, > 0 (default %g)\n"
            "  --top-k N        sample among the N likeliest characters (default %ld)\n"
            "  -h, --help       this text\n"
            "The device is PORTABLE_BACKEND's (auto, cpu, cuda, opencl, optionally :N).\n",
            prog, d->text, d->steps, d->batch, d->context, d->layers, d->heads, d->width, d->lr,
            (unsigned long long)d->seed, d->eval_every, d->sample, d->prompt, d->temperature, d->top_k);
}

/* A whole number option in [lo, hi]; 0, or -1 after saying what was wrong. */
static int whole(const char *prog, const char *name, const char *arg, long lo, long hi, long *out) {
    char *end = NULL;
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (errno || end == arg || *end || v < lo || v > hi) {
        fprintf(stderr, "%s: --%s '%s' is not a whole number from %ld to %ld\n", prog, name, arg, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* A positive finite real option; 0, or -1 after saying what was wrong. */
static int positive(const char *prog, const char *name, const char *arg, double *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(arg, &end);
    if (errno || end == arg || *end || !isfinite(v) || v <= 0) {
        fprintf(stderr, "%s: --%s '%s' is not a positive number\n", prog, name, arg);
        return -1;
    }
    *out = v;
    return 0;
}

int gpt_cli_parse(int argc, char **argv, gpt_cli *out) {
    const gpt_cli defaults = *out;
    static const struct option options[] = {
        {"text", required_argument, NULL, 'T'},    {"steps", required_argument, NULL, 's'},
        {"batch", required_argument, NULL, 'b'},   {"context", required_argument, NULL, 'c'},
        {"layers", required_argument, NULL, 'L'},  {"heads", required_argument, NULL, 'H'},
        {"width", required_argument, NULL, 'w'},   {"lr", required_argument, NULL, 'r'},
        {"seed", required_argument, NULL, 'S'},    {"graph", no_argument, NULL, 'g'},
        {"dtype", required_argument, NULL, 'd'},   {"save", required_argument, NULL, 'o'},
        {"load", required_argument, NULL, 'i'},    {"eval-every", required_argument, NULL, 'e'},
        {"loss-log", required_argument, NULL, 'l'}, {"sample", required_argument, NULL, 'n'},
        {"prompt", required_argument, NULL, 'p'},  {"temperature", required_argument, NULL, 't'},
        {"top-k", required_argument, NULL, 'k'},   {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *prog = argv[0];
    int opt, bad = 0;
    long seed = 0;
    while (!bad && (opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (opt) {
        case 'T': out->text = optarg; break;
        case 's': bad = whole(prog, "steps", optarg, 0, 100000000, &out->steps); break;
        case 'b': bad = whole(prog, "batch", optarg, 1, 65536, &out->batch); break;
        case 'c': bad = whole(prog, "context", optarg, 1, 65536, &out->context); break;
        case 'L': bad = whole(prog, "layers", optarg, 1, 1024, &out->layers); break;
        case 'H': bad = whole(prog, "heads", optarg, 1, 4096, &out->heads); break;
        case 'w': bad = whole(prog, "width", optarg, 1, 65536, &out->width); break;
        case 'r': bad = positive(prog, "lr", optarg, &out->lr); break;
        case 'S':
            bad = whole(prog, "seed", optarg, 0, 2147483647, &seed);
            out->seed = (uint64_t)seed;
            break;
        case 'g': out->graph = true; break;
        case 'd':
            if (strcmp(optarg, "f32") && strcmp(optarg, "bf16")) {
                fprintf(stderr, "%s: --dtype '%s' is not one of f32, bf16\n", prog, optarg);
                bad = -1;
            }
            out->bf16 = !strcmp(optarg, "bf16");
            break;
        case 'o': out->save = optarg; break;
        case 'i': out->load = optarg; break;
        case 'e': bad = whole(prog, "eval-every", optarg, 1, 100000000, &out->eval_every); break;
        case 'l': out->loss_log = optarg; break;
        case 'n': bad = whole(prog, "sample", optarg, 0, 1000000, &out->sample); break;
        case 'p': out->prompt = optarg; break;
        case 't': bad = positive(prog, "temperature", optarg, &out->temperature); break;
        case 'k': bad = whole(prog, "top-k", optarg, 1, 256, &out->top_k); break;
        case 'h': usage(stdout, prog, &defaults); return 1;
        default: bad = -1; break; /* getopt_long said what was wrong */
        }
    }
    if (!bad && optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[optind]);
        bad = -1;
    }
    if (!bad && out->width % out->heads != 0) {
        fprintf(stderr, "%s: --heads %ld does not divide --width %ld; pick a width that is a multiple of the heads\n",
                prog, out->heads, out->width);
        bad = -1;
    }
    if (!bad && out->prompt[0] == '\0') {
        fprintf(stderr, "%s: --prompt is empty; the sample needs at least one character to start from\n", prog);
        bad = -1;
    }
    if (bad) {
        usage(stderr, prog, &defaults);
        return 2;
    }
    return 0;
}
