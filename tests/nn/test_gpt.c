/* pt_gpt as a module: its configuration errors, the state-dict names (GPT-2's
 * layout with TransformerEncoderLayer blocks, the tied head stored once),
 * GPT-2's initialisation, the forward's shape and errors (index dtype,
 * rank, T > context), causality, a pt_save / pt_load round trip, dropout
 * following train/eval, and a short training run that learns. */
#include <string.h>
#include <unistd.h>

#include "nn_test.h"

static pt_device *dev;

static const pt_gpt_config small = {.vocab_size = 11, .context = 8, .n_layer = 2, .n_head = 2, .n_embd = 16};

static pt_module *small_gpt(double dropout) {
    pt_gpt_config c = small;
    c.dropout = dropout;
    pt_module *m = pt_gpt(&c);
    if (m && pt_module_to(m, dev) != PT_OK) {
        pt_module_free(m);
        return NULL;
    }
    return m;
}

/* Token indices [b, t] from a fixed sequence. */
static pt_tensor *tokens(int64_t b, int64_t t, pt_dtype dtype, uint64_t seed) {
    nn_rng r = {seed};
    int64_t v64[256];
    int32_t v32[256];
    for (int64_t i = 0; i < b * t && i < 256; ++i) v32[i] = (int32_t)(v64[i] = (int64_t)(nn_uniform(&r) * 11));
    return pt_from_data(dev, dtype, 2, (int64_t[]){b, t}, dtype == PT_I32 ? (const void *)v32 : (const void *)v64);
}

static void expect_config_error(pt_gpt_config c, const char *what, const char *needle) {
    NN_CHECK(!pt_gpt(&c) && pt_last_status() == PT_ERR_INVALID_ARGUMENT && strstr(pt_last_error(), "pt_gpt") &&
                 strstr(pt_last_error(), needle),
             "%s is refused with \"%s\": %s", what, needle, pt_last_error());
    pt_clear_error();
}

static void test_config_errors(void) {
    pt_gpt_config c = small;
    c.n_embd = 10;
    c.n_head = 3;
    expect_config_error(c, "3 heads over 10 channels", "n_head 3 does not divide n_embd 10");
    c = small;
    c.vocab_size = 0;
    expect_config_error(c, "an empty vocabulary", "vocab_size 0");
    c = small;
    c.context = -4;
    expect_config_error(c, "a negative context", "context -4");
    c = small;
    c.dropout = 1.0;
    expect_config_error(c, "dropout 1", "dropout is 1");
}

static double stddev(const double *v, int64_t n) {
    double mean = 0, sq = 0;
    for (int64_t i = 0; i < n; ++i) mean += v[i] / (double)n;
    for (int64_t i = 0; i < n; ++i) sq += (v[i] - mean) * (v[i] - mean) / (double)n;
    return sqrt(sq);
}

static void test_names_and_init(void) {
    pt_manual_seed(5);
    pt_module *m = small_gpt(0);
    const char *names[64];
    pt_tensor *ts[64];
    const int n = pt_module_parameters(m, names, ts, 64);
    NN_CHECK(n == 2 + 12 * 2 + 2, "wte, wpe, 12 per block, ln_f: %d entries", n);
    if (n != 28) return;
    NN_CHECK(strcmp(names[0], "wte.weight") == 0 && strcmp(names[1], "wpe.weight") == 0 &&
                 strcmp(names[2], "h.0.self_attn.in_proj_weight") == 0 && strcmp(names[25], "h.1.norm2.bias") == 0 &&
                 strcmp(names[26], "ln_f.weight") == 0 && strcmp(names[27], "ln_f.bias") == 0,
             "GPT-2's layout with TransformerEncoderLayer names");
    bool tied = true;
    for (int i = 0; i < n; ++i) tied &= strstr(names[i], "lm_head") == NULL && (i == 0 || ts[i] != ts[0]);
    NN_CHECK(tied, "the head is wte.weight itself: no lm_head entry, no second copy");
    NN_CHECK(pt_tensor_shape(ts[0])[0] == 11 && pt_tensor_shape(ts[0])[1] == 16 && pt_tensor_shape(ts[1])[0] == 8,
             "wte [11, 16], wpe [8, 16]");
    double wte[176], proj[256 * 4], bias[64], ln[16];
    nn_to_doubles(pt_module_parameter(m, "wte.weight"), wte, 176);
    nn_to_doubles(pt_module_parameter(m, "h.1.linear2.weight"), proj, 1024);
    nn_to_doubles(pt_module_parameter(m, "h.0.linear1.bias"), bias, 64);
    nn_to_doubles(pt_module_parameter(m, "ln_f.weight"), ln, 16);
    const double s_wte = stddev(wte, 176), s_proj = stddev(proj, 1024);
    NN_CHECK(fabs(s_wte - 0.02) < 0.004, "wte ~ N(0, 0.02): std %g", s_wte);
    NN_CHECK(fabs(s_proj - 0.01) < 0.001, "linear2 ~ N(0, 0.02 / sqrt(2 n_layer)) = 0.01: std %g", s_proj);
    bool zero = true, one = true;
    for (int i = 0; i < 64; ++i) zero &= bias[i] == 0;
    for (int i = 0; i < 16; ++i) one &= ln[i] == 1;
    NN_CHECK(zero && one, "biases 0, layer norm weights 1");
    pt_module_free(m);
}

static void test_forward(void) {
    pt_manual_seed(6);
    pt_module *m = small_gpt(0);
    pt_scope s = pt_scope_begin();
    for (int k = 0; k < 2; ++k) {
        pt_tensor *y = pt_module_forward(m, tokens(3, 8, k ? PT_I32 : PT_I64, 1));
        NN_CHECK(y && pt_tensor_ndim(y) == 3 && pt_tensor_shape(y)[0] == 3 && pt_tensor_shape(y)[1] == 8 &&
                     pt_tensor_shape(y)[2] == 11,
                 "%s [3, 8] (T = context) gives logits [3, 8, 11]", k ? "i32" : "i64");
    }
    NN_CHECK(!pt_module_forward(m, tokens(2, 9, PT_I64, 1)) && pt_last_status() == PT_ERR_SHAPE &&
                 strstr(pt_last_error(), "T = 9") && strstr(pt_last_error(), "context of 8"),
             "T = 9 > context 8 is refused, naming both: %s", pt_last_error());
    pt_clear_error();
    NN_CHECK(!pt_module_forward(m, pt_zeros(dev, PT_F32, 2, (int64_t[]){2, 4})) && pt_last_status() == PT_ERR_DTYPE &&
                 strstr(pt_last_error(), "i32 or i64"),
             "f32 indices are refused: %s", pt_last_error());
    pt_clear_error();
    NN_CHECK(!pt_module_forward(m, pt_zeros(dev, PT_I64, 1, (int64_t[]){4})) && pt_last_status() == PT_ERR_SHAPE &&
                 strstr(pt_last_error(), "[B, T]"),
             "1-D indices are refused: %s", pt_last_error());
    pt_clear_error();

    /* causality: changing the last token leaves the earlier positions' logits alone */
    int64_t a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[8] = {1, 2, 3, 4, 5, 6, 7, 0};
    double la[8 * 11], lb[8 * 11];
    nn_to_doubles(pt_module_forward(m, pt_from_data(dev, PT_I64, 2, (int64_t[]){1, 8}, a)), la, 88);
    nn_to_doubles(pt_module_forward(m, pt_from_data(dev, PT_I64, 2, (int64_t[]){1, 8}, b)), lb, 88);
    NN_CHECK(memcmp(la, lb, 7 * 11 * sizeof *la) == 0 && memcmp(&la[77], &lb[77], 11 * sizeof *la) != 0,
             "positions 0..6 do not see token 7; position 7 does");
    pt_scope_end(s);
    pt_module_free(m);
}

static void test_save_load(void) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/test_gpt_%d.safetensors", (int)getpid());
    pt_manual_seed(7);
    pt_module *m = small_gpt(0);
    pt_manual_seed(8);
    pt_module *other = small_gpt(0);
    pt_scope s = pt_scope_begin();
    pt_tensor *x = tokens(2, 6, PT_I64, 3);
    double want[2 * 6 * 11], before[2 * 6 * 11], got[2 * 6 * 11];
    nn_to_doubles(pt_module_forward(m, x), want, 132);
    nn_to_doubles(pt_module_forward(other, x), before, 132);
    NN_CHECK(pt_save(m, path) == PT_OK, "pt_save");
    NN_CHECK(pt_load(other, path, NULL) == PT_OK, "pt_load into a GPT of another seed");
    nn_to_doubles(pt_module_forward(other, x), got, 132);
    NN_CHECK(memcmp(before, want, sizeof want) != 0 && memcmp(got, want, sizeof want) == 0,
             "the loaded GPT gives the saved one's logits exactly");
    FILE *f = fopen(path, "rb");
    char header[4096] = {0};
    if (f) {
        NN_CHECK(fread(header, 1, sizeof header - 1, f) > 8, "read the header");
        fclose(f);
    }
    NN_CHECK(strstr(header + 8, "\"wte.weight\"") && !strstr(header + 8, "lm_head") &&
                 !strstr(strstr(header + 8, "\"wte.weight\"") + 1, "\"wte.weight\""),
             "the file holds wte.weight once and no head");
    remove(path);
    pt_scope_end(s);
    pt_module_free(m);
    pt_module_free(other);
}

/* Two forwards of x [2, 8]: 1 when their logits differ, 0 when they are the
 * same, -1 when either failed. */
static int forwards_differ(pt_module *m, pt_tensor *x) {
    double a[176], b[176];
    if (nn_to_doubles(pt_module_forward(m, x), a, 176) || nn_to_doubles(pt_module_forward(m, x), b, 176)) return -1;
    return memcmp(a, b, sizeof a) != 0;
}

static void test_dropout_modes(void) {
    pt_manual_seed(9);
    pt_module *m = small_gpt(0.2);
    pt_scope s = pt_scope_begin();
    pt_tensor *x = tokens(2, 8, PT_I64, 4);
    NN_CHECK(forwards_differ(m, x) == 1, "training with dropout 0.2: two forwards differ");
    pt_module_train(m, false);
    NN_CHECK(forwards_differ(m, x) == 0, "evaluation: no dropout anywhere");
    pt_scope_end(s);
    pt_module_free(m);
}

/* bf16 compute (pt_module_set_compute_dtype) with f32 masters: bf16 logits
 * near the f32 ones, and f32 gradients in every parameter, the tied one too. */
static void test_mixed_precision(void) {
    pt_manual_seed(12);
    pt_module *m = small_gpt(0);
    pt_scope s = pt_scope_begin();
    pt_tensor *x = tokens(2, 8, PT_I64, 5);
    double f32[176], bf16[176];
    nn_to_doubles(pt_module_forward(m, x), f32, 176);
    NN_CHECK(pt_module_set_compute_dtype(m, PT_BF16) == PT_OK, "bf16 compute");
    pt_tensor *y = pt_module_forward(m, x);
    NN_CHECK(y && pt_tensor_dtype(y) == PT_BF16 && nn_to_doubles(y, bf16, 176) == 0, "bf16 logits");
    double worst = 0;
    for (int i = 0; i < 176; ++i) worst = fmax(worst, fabs(bf16[i] - f32[i]));
    NN_CHECK(worst < 0.05, "bf16 logits within 0.05 of f32: %g", worst);
    NN_CHECK(pt_backward(pt_sum(pt_cast(y, PT_F32), PT_ALL, false)) == PT_OK, "backward");
    pt_tensor *g = pt_grad(pt_module_parameter(m, "wte.weight"));
    NN_CHECK(g && pt_tensor_dtype(g) == PT_F32 && pt_tensor_dtype(pt_module_parameter(m, "wte.weight")) == PT_F32,
             "the tied weight stays f32 with an f32 gradient");
    pt_scope_end(s);
    pt_module_free(m);
}

/* 30 AdamW steps on one batch of a repeating sequence: the loss falls. */
static void test_learns(void) {
    pt_manual_seed(10);
    pt_module *m = small_gpt(0);
    pt_optimizer *o = pt_adamw(m, 1e-2, 0.9, 0.95, 1e-8, 0.1);
    int64_t seq[4 * 9];
    for (int i = 0; i < 36; ++i) seq[i] = (i % 9 * 5 + i / 9) % 11;
    int64_t in[32], next[32];
    for (int r = 0; r < 4; ++r)
        for (int t = 0; t < 8; ++t) in[r * 8 + t] = seq[r * 9 + t], next[r * 8 + t] = seq[r * 9 + t + 1];
    pt_tensor *x = pt_from_data(dev, PT_I64, 2, (int64_t[]){4, 8}, in);
    pt_tensor *y = pt_from_data(dev, PT_I64, 1, (int64_t[]){32}, next);
    double first = NAN, last = NAN;
    for (int step = 0; step < 30; ++step) {
        pt_scope s = pt_scope_begin();
        pt_optimizer_zero_grad(o);
        pt_tensor *loss = pt_cross_entropy(pt_reshape(pt_module_forward(m, x), 2, (int64_t[]){32, 11}), y);
        pt_backward(loss);
        pt_clip_grad_norm(m, 1.0);
        pt_optimizer_step(o);
        last = pt_item(loss);
        if (step == 0) first = last;
        pt_scope_end(s);
    }
    NN_CHECK(first > 2.0 && last < 0.25 * first, "loss %g -> %g over 30 steps", first, last);
    printf("loss %.4f -> %.4f over 30 steps\n", first, last);
    pt_release(x);
    pt_release(y);
    pt_optimizer_free(o);
    pt_module_free(m);
}

int main(void) {
    nn_begin();
    dev = nn_device_or_skip();
    printf("pt_gpt on %s\n", pt_device_name(dev));
    test_config_errors();
    test_names_and_init();
    test_forward();
    test_save_load();
    test_dropout_modes();
    test_mixed_precision();
    test_learns();
    return nn_finish();
}
