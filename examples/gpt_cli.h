/* gpt_train's command line, parsed with getopt_long. Every value is checked
 * before any work: a bad one stops the program with what was wrong and the
 * usage (exit 2). */
#ifndef PORTABLE_EXAMPLES_GPT_CLI_H
#define PORTABLE_EXAMPLES_GPT_CLI_H

#include <stdbool.h>
#include <stdint.h>

typedef struct gpt_cli {
    const char *text;     /* --text; the caller sets the default before parsing */
    long steps, batch, context, layers, heads, width, eval_every, sample, top_k;
    double lr, temperature;
    uint64_t seed;
    bool graph;           /* --graph: capture the training step once, replay it */
    bool bf16;            /* --dtype bf16: bf16 compute, f32 master weights */
    const char *save;     /* --save PATH, NULL: a temporary file for the reload check */
    const char *load;     /* --load PATH, NULL: start from the initialisation */
    const char *loss_log; /* --loss-log FILE: "1 step loss" per step (%.9g) */
    const char *prompt;   /* --prompt: the seed string of the sample */
} gpt_cli;

/* The defaults (a model that learns the default text on a laptop's cores
 * in minutes). */
gpt_cli gpt_cli_defaults(const char *default_text);

/* Returns 0 to go on, 1 after --help (usage on stdout), 2 for bad usage
 * (what was wrong and the usage on stderr). */
int gpt_cli_parse(int argc, char **argv, gpt_cli *out);

#endif
