/* The command line of the digits trainers (mlp_digits, cnn_digits,
 * ddp_digits): --data, --epochs, --help, where the example saves --save,
 * where it has several models --model, where it offers them --dtype,
 * --loss-log and --graph, parsed with getopt_long. Bad values, and --save or --loss-log
 * paths that cannot be written, stop the program before any work, with the
 * usage line. */
#ifndef PORTABLE_EXAMPLES_DIGITS_CLI_H
#define PORTABLE_EXAMPLES_DIGITS_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include <portable/portable.h>

typedef struct digits_cli_spec {
    const char *launcher;  /* written before the program in the usage line ("" or "mpirun -np N ") */
    const char *save_what; /* --save's help text; NULL: the example has no --save */
    const char *footer;    /* the last line of --help: where the device comes from */
} digits_cli_spec;

typedef struct digits_cli {
    const char *data; /* --data; NULL: the default file (digits_find) */
    const char *save; /* --save; NULL: none */
    int epochs;       /* --epochs; the caller sets the default before parsing */
    const char *models; /* --model's choices, e.g. "mlp|cnn", set by the caller before parsing; NULL: no --model */
    const char *model;  /* --model: one of those choices (NULL: not given) */
    bool precision;   /* set by the caller: the example takes --dtype */
    bool logs_losses; /* set by the caller: the example takes --loss-log */
    const char *dtype;    /* --dtype: "f32" (NULL: the default), "bf16" or "f16" */
    const char *loss_log; /* --loss-log: where to write the loss of every step; NULL: nowhere */
    bool graphs;      /* set by the caller: the example takes --graph */
    bool graph;       /* --graph: capture the training step once per batch shape and replay it */
} digits_cli;

/* Returns 0 to go on, 1 after --help (usage on stdout), 2 for bad usage
 * (what was wrong and the usage on stderr). */
int digits_cli_parse(int argc, char **argv, const digits_cli_spec *spec, digits_cli *out);

/* --loss-log: writes one epoch's step losses as "epoch step loss" (%.9g),
 * read back only now (kept on the device, so logging adds no wait per
 * step), and releases them. Non-zero if a loss is NaN or a write failed. */
int digits_write_losses(FILE *f, int epoch, pt_tensor **losses, int steps);

#endif
