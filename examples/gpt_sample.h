/* gpt_train's sample: a continuation of --prompt, one character at a time,
 * drawn from the model's next-character distribution at --temperature
 * among the --top-k likeliest characters. */
#ifndef PORTABLE_EXAMPLES_GPT_SAMPLE_H
#define PORTABLE_EXAMPLES_GPT_SAMPLE_H

#include "gpt_cli.h"
#include "gpt_text.h"
#include "portable/portable.h"

/* Prints the prompt and a->sample sampled characters to stdout. The prompt's
 * characters must be in the text's vocabulary. 0, or -1 with the library's
 * error set. */
int gpt_sample(pt_module *m, pt_device *dev, const gpt_text *text, const gpt_cli *a, gpt_rng *rng);

#endif
