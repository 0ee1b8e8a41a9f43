/* gpt_train's sample (gpt_sample.h). */
#include "gpt_sample.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Draws a token from the logits: the k largest kept, softmax at the
 * temperature, inverse-CDF with the host generator. */
static int draw(const float *logits, int vocab, int k, double temperature, gpt_rng *rng) {
    int order[256];
    for (int i = 0; i < vocab; ++i) order[i] = i;
    if (k > vocab) k = vocab;
    for (int i = 0; i < k; ++i) /* partial selection sort: the k largest first */
        for (int j = i + 1; j < vocab; ++j)
            if (logits[order[j]] > logits[order[i]]) {
                const int swap = order[i];
                order[i] = order[j];
                order[j] = swap;
            }
    double p[256], total = 0;
    for (int i = 0; i < k; ++i) total += p[i] = exp((logits[order[i]] - logits[order[0]]) / temperature);
    double u = gpt_rng_uniform(rng) * total;
    for (int i = 0; i < k; ++i)
        if ((u -= p[i]) < 0) return order[i];
    return order[k - 1];
}

int gpt_sample(pt_module *m, pt_device *dev, const gpt_text *text, const gpt_cli *a, gpt_rng *rng) {
    const size_t plen = strlen(a->prompt), total = plen + (size_t)a->sample;
    int64_t *tokens = malloc(total * sizeof *tokens);
    float *logits = malloc((size_t)text->vocab * sizeof *logits);
    int status = tokens && logits ? 0 : -1;
    for (size_t i = 0; tokens && i < plen; ++i) tokens[i] = text->id_of[(unsigned char)a->prompt[i]];
    const bool training = pt_module_is_training(m);
    pt_module_train(m, false);
    pt_no_grad_begin();
    printf("sample (top-%ld, temperature %g):\n%s", a->top_k, a->temperature, a->prompt);
    for (size_t len = plen; status == 0 && len < total; ++len) {
        const int64_t ctx = (int64_t)len < a->context ? (int64_t)len : a->context;
        pt_scope s = pt_scope_begin();
        pt_tensor *out = pt_module_forward(m, pt_from_data(dev, PT_I64, 2, (int64_t[]){1, ctx}, tokens + len - ctx));
        pt_tensor *last = pt_cast(pt_contiguous(pt_narrow(out, 1, ctx - 1, 1)), PT_F32);
        if (!last || pt_to_host(last, logits, (size_t)text->vocab * sizeof *logits) != PT_OK) status = -1;
        pt_scope_end(s);
        if (status == 0) {
            tokens[len] = draw(logits, text->vocab, (int)a->top_k, a->temperature, rng);
            putchar(text->chars[tokens[len]]);
        }
    }
    printf("\n");
    pt_no_grad_end();
    pt_module_train(m, training);
    free(tokens);
    free(logits);
    return status;
}
