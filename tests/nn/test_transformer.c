/* The transformer layers against a float64 host reference written out here:
 * pt_embedding (rows, gradient counts, N(0, 1) init), pt_multihead_attention
 * (PyTorch's names and init, with and without biases, causal or not,
 * batched and unbatched, dropout only in training) and pt_transformer_block
 * (TransformerEncoderLayer's names, pre-norm forward), and their errors. */
#include <string.h>

#include "nn_test.h"

static pt_device *dev;

/* A module's parameter as doubles (n elements); NULL-safe through nn_to_doubles. */
static double *param_values(pt_module *m, const char *name, int64_t n) {
    double *v = calloc((size_t)n, sizeof *v);
    if (v && nn_to_doubles(pt_module_parameter(m, name), v, n)) {
        free(v);
        return NULL;
    }
    return v;
}

static pt_tensor *uniform_tensor(nn_rng *r, int ndim, const int64_t *shape, float lo, float hi) {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    float *h = malloc((size_t)n * sizeof *h);
    for (int64_t i = 0; i < n; ++i) h[i] = lo + (hi - lo) * (float)nn_uniform(r);
    pt_tensor *t = pt_from_data(dev, PT_F32, ndim, shape, h);
    free(h);
    return t;
}

static double worst_rel(const double *got, const double *want, int64_t n) {
    double w = 0;
    for (int64_t i = 0; i < n; ++i) {
        double e = fabs(got[i] - want[i]) / (1 + fabs(want[i]));
        w = e > w || e != e ? e : w;
    }
    return w;
}

/* ---- Host reference ---- */

/* y[r, o] = sum_i x[r, i] w[o, i] + b[o] (b may be NULL). */
static void ref_linear(const double *x, int64_t rows, int64_t in, const double *w, const double *b, int64_t out,
                       double *y) {
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t o = 0; o < out; ++o) {
            double s = b ? b[o] : 0;
            for (int64_t i = 0; i < in; ++i) s += x[r * in + i] * w[o * in + i];
            y[r * out + o] = s;
        }
}

static void ref_layer_norm(const double *x, int64_t rows, int64_t e, const double *w, const double *b, double *y) {
    for (int64_t r = 0; r < rows; ++r) {
        double mean = 0, var = 0;
        for (int64_t i = 0; i < e; ++i) mean += x[r * e + i] / (double)e;
        for (int64_t i = 0; i < e; ++i) var += (x[r * e + i] - mean) * (x[r * e + i] - mean) / (double)e;
        for (int64_t i = 0; i < e; ++i) y[r * e + i] = (x[r * e + i] - mean) / sqrt(var + 1e-5) * w[i] + b[i];
    }
}

/* Self-attention of x [b, t, e] with h heads, given the packed projection
 * and out_proj (biases may be NULL). */
static void ref_mha(const double *x, int64_t b, int64_t t, int64_t e, int64_t h, bool causal, const double *w_in,
                    const double *b_in, const double *w_out, const double *b_out, double *y) {
    const int64_t d = e / h, rows = b * t;
    double *qkv = malloc((size_t)(rows * 3 * e) * sizeof *qkv), *o = calloc((size_t)(rows * e), sizeof *o);
    double *p = malloc((size_t)t * sizeof *p);
    ref_linear(x, rows, e, w_in, b_in, 3 * e, qkv);
    for (int64_t n = 0; n < b; ++n)
        for (int64_t hd = 0; hd < h; ++hd)
            for (int64_t i = 0; i < t; ++i) {
                const double *q = &qkv[(n * t + i) * 3 * e + hd * d];
                double mx = -INFINITY, z = 0;
                const int64_t last = causal ? i : t - 1;
                for (int64_t j = 0; j <= last; ++j) {
                    const double *k = &qkv[(n * t + j) * 3 * e + e + hd * d];
                    double s = 0;
                    for (int64_t c = 0; c < d; ++c) s += q[c] * k[c];
                    p[j] = s / sqrt((double)d);
                    mx = p[j] > mx ? p[j] : mx;
                }
                for (int64_t j = 0; j <= last; ++j) z += p[j] = exp(p[j] - mx);
                for (int64_t j = 0; j <= last; ++j) {
                    const double *v = &qkv[(n * t + j) * 3 * e + 2 * e + hd * d];
                    for (int64_t c = 0; c < d; ++c) o[(n * t + i) * e + hd * d + c] += p[j] / z * v[c];
                }
            }
    ref_linear(o, rows, e, w_out, b_out, e, y);
    free(qkv);
    free(o);
    free(p);
}

/* ---- Embedding ---- */

static void test_embedding(void) {
    NN_CHECK(!pt_embedding(0, 4) && pt_last_status() == PT_ERR_INVALID_ARGUMENT &&
                 strstr(pt_last_error(), "pt_embedding") && strstr(pt_last_error(), "num_embeddings 0"),
             "an empty table is refused");
    pt_clear_error();
    pt_module *e = pt_embedding(10, 3);
    const char *names[2];
    NN_CHECK(e && pt_module_parameters(e, names, NULL, 2) == 1 && strcmp(names[0], "weight") == 0, "one 'weight'");
    NN_CHECK(pt_module_to(e, dev) == PT_OK, "to %s", pt_device_name(dev));
    double w[30];
    NN_CHECK(nn_to_doubles(pt_module_parameter(e, "weight"), w, 30) == 0, "read the table");
    const int64_t idx64[6] = {3, 0, 9, 3, 7, 1};
    const int32_t idx32[6] = {3, 0, 9, 3, 7, 1};
    const int64_t shape[2] = {2, 3};
    pt_scope s = pt_scope_begin();
    for (int k = 0; k < 2; ++k) {
        pt_tensor *idx = k ? pt_from_data(dev, PT_I32, 2, shape, idx32) : pt_from_data(dev, PT_I64, 2, shape, idx64);
        pt_tensor *y = pt_module_forward(e, idx);
        double got[18];
        NN_CHECK(y && pt_tensor_ndim(y) == 3 && pt_tensor_shape(y)[2] == 3 && nn_to_doubles(y, got, 18) == 0,
                 "%s indices [2, 3] give [2, 3, 3]", k ? "i32" : "i64");
        bool same = true;
        for (int i = 0; i < 6; ++i)
            for (int c = 0; c < 3; ++c) same &= got[i * 3 + c] == w[idx64[i] * 3 + c];
        NN_CHECK(same, "each output row is its index's row of the table (%s)", k ? "i32" : "i64");
        if (k == 0) { /* d sum / d weight[r] counts r's occurrences */
            NN_CHECK(pt_backward(pt_sum(y, PT_ALL, false)) == PT_OK, "backward");
            double g[30];
            NN_CHECK(nn_to_doubles(pt_grad(pt_module_parameter(e, "weight")), g, 30) == 0, "read the gradient");
            const double count[10] = {1, 1, 0, 2, 0, 0, 0, 1, 0, 1};
            bool ok = true;
            for (int r = 0; r < 10; ++r) ok &= g[r * 3] == count[r] && g[r * 3 + 2] == count[r];
            NN_CHECK(ok, "the table's gradient counts each row's uses");
        }
    }
    pt_tensor *bad = pt_zeros(dev, PT_F32, 2, shape);
    NN_CHECK(!pt_module_forward(e, bad) && pt_last_status() == PT_ERR_DTYPE &&
                 strstr(pt_last_error(), "pt_module_forward") && strstr(pt_last_error(), "i32 or i64"),
             "f32 indices are refused, naming the fix: %s", pt_last_error());
    pt_clear_error();
    pt_scope_end(s);
    pt_module_free(e);

    /* N(0, 1): 64000 draws, mean and deviation well within 0.02 of 0 and 1 */
    pt_module *big = pt_embedding(16000, 4);
    double *v = param_values(big, "weight", 64000);
    double mean = 0, sq = 0;
    for (int i = 0; v && i < 64000; ++i) mean += v[i] / 64000;
    for (int i = 0; v && i < 64000; ++i) sq += (v[i] - mean) * (v[i] - mean) / 64000;
    NN_CHECK(v && fabs(mean) < 0.02 && fabs(sqrt(sq) - 1) < 0.02, "weight ~ N(0, 1): mean %g, std %g", mean, sqrt(sq));
    free(v);
    pt_module_free(big);
}

/* ---- Multi-head attention ---- */

enum { B = 2, T = 5, E = 8, H = 2 };

static void check_mha_against_reference(bool bias, bool causal) {
    pt_module *m = pt_multihead_attention(E, H, bias, 0.0, causal);
    NN_CHECK(m && pt_module_to(m, dev) == PT_OK, "made and moved");
    if (!m) return;
    /* random biases too, so that their place in the sum is checked */
    pt_scope s = pt_scope_begin();
    nn_rng r = {bias * 2 + causal + 1};
    if (bias) {
        pt_copy_(pt_module_parameter(m, "in_proj_bias"), uniform_tensor(&r, 1, (int64_t[]){3 * E}, -0.5f, 0.5f));
        pt_copy_(pt_module_parameter(m, "out_proj.bias"), uniform_tensor(&r, 1, (int64_t[]){E}, -0.5f, 0.5f));
    }
    double *w_in = param_values(m, "in_proj_weight", 3 * E * E), *w_out = param_values(m, "out_proj.weight", E * E);
    double *b_in = bias ? param_values(m, "in_proj_bias", 3 * E) : NULL;
    double *b_out = bias ? param_values(m, "out_proj.bias", E) : NULL;
    pt_tensor *x = uniform_tensor(&r, 3, (int64_t[]){B, T, E}, -2, 2);
    double xh[B * T * E], want[B * T * E], got[B * T * E];
    NN_CHECK(nn_to_doubles(x, xh, B * T * E) == 0, "read x");
    ref_mha(xh, B, T, E, H, causal, w_in, b_in, w_out, b_out, want);
    pt_tensor *y = pt_module_forward(m, x);
    NN_CHECK(y && pt_tensor_ndim(y) == 3 && nn_to_doubles(y, got, B * T * E) == 0, "forward [2, 5, 8]");
    double err = worst_rel(got, want, B * T * E);
    NN_CHECK(err < 1e-5, "bias %d causal %d: worst error %g against the host reference", bias, causal, err);
    /* unbatched: [T, E] is batch row 1 */
    pt_tensor *x1 = pt_reshape(pt_contiguous(pt_narrow(x, 0, 1, 1)), 2, (int64_t[]){T, E});
    pt_tensor *y1 = pt_module_forward(m, x1);
    double one[T * E];
    NN_CHECK(y1 && pt_tensor_ndim(y1) == 2 && nn_to_doubles(y1, one, T * E) == 0 &&
                 worst_rel(one, &want[T * E], T * E) < 1e-5,
             "an unbatched [T, E] input gives the batch row's output as [T, E]");
    pt_scope_end(s);
    free(w_in);
    free(w_out);
    free(b_in);
    free(b_out);
    pt_module_free(m);
}

static void test_mha(void) {
    NN_CHECK(!pt_multihead_attention(10, 3, true, 0, false) && pt_last_status() == PT_ERR_INVALID_ARGUMENT &&
                 strstr(pt_last_error(), "embed_dim 10") && strstr(pt_last_error(), "num_heads 3") &&
                 strstr(pt_last_error(), "divide"),
             "3 heads cannot split 10 channels: %s", pt_last_error());
    pt_clear_error();
    NN_CHECK(!pt_multihead_attention(8, 2, true, 1.5, false) && strstr(pt_last_error(), "dropout is 1.5"),
             "dropout 1.5 is refused");
    pt_clear_error();

    pt_module *m = pt_multihead_attention(E, H, true, 0.0, false);
    const char *names[8];
    pt_tensor *ts[8];
    static const char *want[4] = {"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"};
    static const int64_t rows[4] = {3 * E, 3 * E, E, E};
    NN_CHECK(pt_module_parameters(m, names, ts, 8) == 4, "4 parameters");
    for (int i = 0; i < 4; ++i)
        NN_CHECK(strcmp(names[i], want[i]) == 0 && pt_tensor_shape(ts[i])[0] == rows[i] &&
                     pt_tensor_ndim(ts[i]) == (i % 2 ? 1 : 2),
                 "parameter %d is %s of PyTorch's shape", i, want[i]);
    double *w = param_values(m, "in_proj_weight", 3 * E * E), *b = param_values(m, "in_proj_bias", 3 * E);
    double *ob = param_values(m, "out_proj.bias", E);
    bool xavier = w != NULL, zeros = b && ob;
    const double bound = sqrt(6.0 / (4 * E));
    for (int i = 0; w && i < 3 * E * E; ++i) xavier &= fabs(w[i]) <= bound;
    for (int i = 0; zeros && i < 3 * E; ++i) zeros &= b[i] == 0 && (i >= E || ob[i] == 0);
    NN_CHECK(xavier && zeros, "Xavier-uniform in_proj_weight within %g, zero biases", bound);
    free(w);
    free(b);
    free(ob);
    pt_module_free(m);

    m = pt_multihead_attention(E, H, false, 0.0, true);
    NN_CHECK(pt_module_parameters(m, names, NULL, 8) == 2 && strcmp(names[0], "in_proj_weight") == 0 &&
                 strcmp(names[1], "out_proj.weight") == 0,
             "bias false: in_proj_weight and out_proj.weight only");
    pt_module_free(m);

    for (int k = 0; k < 4; ++k) check_mha_against_reference(k & 1, k & 2);

    /* input errors */
    m = pt_multihead_attention(E, H, true, 0.5, true);
    pt_module_to(m, dev);
    pt_scope s = pt_scope_begin();
    NN_CHECK(!pt_module_forward(m, pt_zeros(dev, PT_F32, 3, (int64_t[]){B, T, E + 1})) &&
                 pt_last_status() == PT_ERR_SHAPE && strstr(pt_last_error(), "9 features") &&
                 strstr(pt_last_error(), "in_proj_weight"),
             "9 features for an 8-wide layer: %s", pt_last_error());
    pt_clear_error();
    NN_CHECK(!pt_module_forward(m, pt_zeros(dev, PT_I32, 3, (int64_t[]){B, T, E})) &&
                 strstr(pt_last_error(), "f32/f64"),
             "integer input is refused: %s", pt_last_error());
    pt_clear_error();
    /* dropout 0.5 on the weights: training draws masks, evaluation is deterministic */
    nn_rng r = {9};
    pt_tensor *x = uniform_tensor(&r, 3, (int64_t[]){B, T, E}, -1, 1);
    double a[B * T * E], c[B * T * E];
    nn_to_doubles(pt_module_forward(m, x), a, B * T * E);
    nn_to_doubles(pt_module_forward(m, x), c, B * T * E);
    NN_CHECK(memcmp(a, c, sizeof a) != 0, "training: two forwards drop different weights");
    pt_module_train(m, false);
    nn_to_doubles(pt_module_forward(m, x), a, B * T * E);
    nn_to_doubles(pt_module_forward(m, x), c, B * T * E);
    NN_CHECK(memcmp(a, c, sizeof a) == 0, "evaluation: no dropout");
    pt_scope_end(s);
    pt_module_free(m);
}

/* ---- Transformer block ---- */

static void test_block(bool causal) {
    enum { F = 4 * E };
    NN_CHECK(!pt_transformer_block(E, 3, F, 0, causal) && strstr(pt_last_error(), "pt_transformer_block") &&
                 strstr(pt_last_error(), "num_heads 3"),
             "3 heads for 8 channels: %s", pt_last_error());
    pt_clear_error();
    NN_CHECK(!pt_transformer_block(E, H, 0, 0, causal) && strstr(pt_last_error(), "dim_feedforward is 0"),
             "no feed-forward width");
    pt_clear_error();
    pt_module *m = pt_transformer_block(E, H, F, 0.0, causal);
    static const char *want[12] = {"self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                                   "self_attn.out_proj.bias",  "linear1.weight",         "linear1.bias",
                                   "linear2.weight",           "linear2.bias",           "norm1.weight",
                                   "norm1.bias",               "norm2.weight",           "norm2.bias"};
    const char *names[16];
    NN_CHECK(pt_module_parameters(m, names, NULL, 16) == 12, "12 parameters");
    for (int i = 0; i < 12; ++i) NN_CHECK(strcmp(names[i], want[i]) == 0, "name %d: %s, want %s", i, names[i], want[i]);
    NN_CHECK(pt_module_to(m, dev) == PT_OK, "moved");
    pt_scope s = pt_scope_begin();
    nn_rng r = {causal ? 21u : 22u};
    /* non-trivial norms, so that their weights and biases are checked */
    for (int i = 8; i < 12; ++i)
        pt_copy_(pt_module_parameter(m, want[i]), uniform_tensor(&r, 1, (int64_t[]){E}, 0.5f, 1.5f));
    double *p[12];
    static const int64_t sizes[12] = {3 * E * E, 3 * E, E * E, E, F * E, F, E * F, E, E, E, E, E};
    for (int i = 0; i < 12; ++i) p[i] = param_values(m, want[i], sizes[i]);
    pt_tensor *x = uniform_tensor(&r, 3, (int64_t[]){B, T, E}, -2, 2);
    enum { N = B * T * E };
    double xh[N], n1[N], a[N], hh[N], n2[N], f[B * T * F], f2[N], want_y[N], got[N];
    nn_to_doubles(x, xh, N);
    ref_layer_norm(xh, B * T, E, p[8], p[9], n1);
    ref_mha(n1, B, T, E, H, causal, p[0], p[1], p[2], p[3], a);
    for (int i = 0; i < N; ++i) hh[i] = xh[i] + a[i];
    ref_layer_norm(hh, B * T, E, p[10], p[11], n2);
    ref_linear(n2, B * T, E, p[4], p[5], F, f);
    for (int i = 0; i < B * T * F; ++i) f[i] = 0.5 * f[i] * (1 + erf(f[i] / sqrt(2.0)));
    ref_linear(f, B * T, F, p[6], p[7], E, f2);
    for (int i = 0; i < N; ++i) want_y[i] = hh[i] + f2[i];
    pt_tensor *y = pt_module_forward(m, x);
    NN_CHECK(y && nn_to_doubles(y, got, N) == 0, "forward");
    const double err = worst_rel(got, want_y, N);
    NN_CHECK(err < 1e-5, "causal %d: worst error %g against the pre-norm host reference", causal, err);
    pt_scope_end(s);
    for (int i = 0; i < 12; ++i) free(p[i]);
    pt_module_free(m);
}

int main(void) {
    nn_begin();
    dev = nn_device_or_skip();
    printf("transformer layers on %s\n", pt_device_name(dev));
    pt_manual_seed(11);
    test_embedding();
    test_mha();
    test_block(false);
    test_block(true);
    return nn_finish();
}
