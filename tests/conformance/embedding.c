/* pt_f_embedding against float64 references: the looked-up rows and the
 * weight's gradient of sum(out * w) (each row the sum of w's rows of its
 * index's occurrences), in every float dtype with i32 and i64 indices,
 * repeated indices (one row picked by every position, too), a transposed
 * and a narrowed weight, transposed indices, empty indices and an empty
 * row width; an out-of-range index (an error where the indices are
 * host-visible, a zero row that adds nothing elsewhere); two backward runs
 * giving the same bits; and a captured graph replayed with new indices.
 * Devices with the EMBEDDING kinds run them; elsewhere the gather
 * composition must give the same numbers. The "embedding long" case (a
 * GPT's 50257 rows, 4096 positions) runs only in the filtered
 * `embedding_*` tests. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

typedef struct emb_case {
    bool grad; /* the weight's gradient of sum(out * w), else the rows */
} emb_case;

/* in: indices, weight, then w for a gradient. */
static pt_tensor *call_embedding(pt_tensor **in, const void *params) {
    const emb_case *c = params;
    if (!c->grad) return pt_f_embedding(in[0], in[1]);
    pt_tensor *leaf = pt_contiguous(in[1]), *got = NULL;
    if (!leaf) return NULL; /* keeps the refusal's status: a skip where unsupported */
    pt_set_requires_grad(leaf, true);
    pt_tensor *out = pt_f_embedding(in[0], leaf);
    pt_tensor *prod = pt_mul(out, in[2]), *s = pt_sum(prod, PT_ALL, false);
    if (s && pt_backward(s) == PT_OK) got = pt_grad(leaf);
    pt_release(s);
    pt_release(prod);
    pt_release(out);
    pt_release(leaf);
    return got;
}

/* The rows (exact copies; an index outside [0, V) gives a zero row). */
static void ref_rows(const ht *idx, const ht *weight, expect *e) {
    const int64_t v = weight->shape[0], d = weight->shape[1];
    int64_t s[PT_MAX_DIMS];
    memcpy(s, idx->shape, sizeof(int64_t) * (size_t)idx->ndim);
    s[idx->ndim] = d;
    e->val = ht_new(weight->dtype, idx->ndim + 1, s);
    for (int64_t n = 0; n < idx->numel; ++n) {
        const int64_t k = (int64_t)idx->v[n];
        if (k >= 0 && k < v) memcpy(e->val->v + n * d, weight->v + k * d, sizeof(double) * (size_t)d);
    }
}

/* [V, D]: row v the sum of w's rows whose index is v; acc their magnitudes. */
static void ref_grad(const ht *idx, const ht *weight, const ht *w, expect *e) {
    const int64_t v = weight->shape[0], d = weight->shape[1];
    e->val = ht_new(weight->dtype, 2, weight->shape);
    e->acc = calloc((size_t)(v * d > 0 ? v * d : 1), sizeof(double));
    e->K = 1;
    for (int64_t n = 0; n < idx->numel; ++n) {
        const int64_t k = (int64_t)idx->v[n];
        if (k < 0 || k >= v) continue;
        for (int64_t x = 0; x < d; ++x) {
            e->val->v[k * d + x] += w->v[n * d + x];
            e->acc[k * d + x] += fabs(w->v[n * d + x]);
        }
    }
    for (int64_t i = 0; i < e->val->numel; ++i) e->val->v[i] = quantize(weight->dtype, e->val->v[i]);
}

typedef struct emb_shape {
    int ndim;              /* of the indices */
    int64_t ishape[2];
    int64_t rows, width;
    int64_t hi;            /* indices drawn from 0..hi (hi < rows) */
} emb_shape;

static void one_case(pt_dtype t, pt_dtype it, const emb_shape *sh, layout wlay, layout ilay, const char *tag,
                     lcg *g) {
    const int64_t ws[2] = {sh->rows, sh->width};
    ht *idx = ht_new(it, sh->ndim, sh->ishape), *weight = ht_new(t, 2, ws);
    ht_fill(idx, (domain){DOM_INT, 0, (double)sh->hi}, g);
    ht_fill(weight, (domain){DOM_UNIFORM, -2, 2}, g);
    int64_t os[PT_MAX_DIMS];
    memcpy(os, sh->ishape, sizeof(int64_t) * (size_t)sh->ndim);
    os[sh->ndim] = sh->width;
    ht *w = ht_new(t, sh->ndim + 1, os);
    ht_fill(w, (domain){DOM_UNIFORM, -1, 1}, g);
    char in_s[64], w_s[64], name[200];
    operand_str(idx, ilay, in_s, sizeof in_s);
    operand_str(weight, wlay, w_s, sizeof w_s);
    for (int grad = 0; grad < 2; ++grad) {
        const emb_case c = {grad != 0};
        expect e = {0};
        if (grad) ref_grad(idx, weight, w, &e);
        else ref_rows(idx, weight, &e);
        ht *in[3] = {idx, weight, w};
        const layout lays[3] = {ilay, wlay, LAY_C};
        snprintf(name, sizeof name, "embedding%s %s %s indices=%s weight=%s%s", tag, pt_dtype_name(t),
                 pt_dtype_name(it), in_s, w_s, grad ? " grad" : "");
        /* Without the backward kind the gradient is a one-hot product of
         * indices x rows x width: 49 GiB at the long case's shape. */
        if (grad && *tag && case_selected(name) && pt_device_supports(g_dev, PT_OP_EMBEDDING_BACKWARD, t) != PT_OK) {
            report_skip(name, "the device refuses embedding_backward, and its fallback's one-hot product does not "
                              "fit at this shape");
            pt_clear_error();
            expect_free(&e);
            continue;
        }
        run_case(name, grad ? 3 : 2, in, lays, call_embedding, &c, &e, grad ? TOL_SUM : TOL_EXACT, 0);
        expect_free(&e);
    }
    ht_free(idx);
    ht_free(weight);
    ht_free(w);
}

/* ---- An index outside [0, V) ---- */

static void out_of_range(pt_dtype it, double bad) {
    char name[96];
    snprintf(name, sizeof name, "embedding out of range %s index %g", pt_dtype_name(it), bad);
    if (!case_selected(name)) return;
    pt_clear_error();
    const double iv[3] = {1, bad, 0};
    int32_t i32[3];
    int64_t i64[3];
    for (int i = 0; i < 3; ++i) {
        i32[i] = (int32_t)iv[i];
        i64[i] = (int64_t)iv[i];
    }
    const int64_t is[1] = {3}, ws[2] = {4, 2};
    const float wv[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    pt_tensor *idx = pt_from_data(g_dev, it, 1, is, it == PT_I32 ? (const void *)i32 : (const void *)i64);
    pt_tensor *weight = pt_from_data(g_dev, PT_F32, 2, ws, wv);
    pt_tensor *out = idx && weight ? pt_f_embedding(idx, weight) : NULL;
    pt_device_props props;
    const bool host = pt_device_info(g_dev, &props) == PT_OK && strcmp(props.backend, "cpu") == 0;
    char want[32];
    snprintf(want, sizeof want, "value %lld", (long long)bad);
    if (!idx || !weight) {
        if (!skip_if_unsupported(name)) report_fail(name, "set-up failed: %s", pt_last_error());
    } else if (!out && skip_if_unsupported(name)) {
    } else if (!out) {
        /* where the values are host-visible: pt_gather's error */
        const char *m = pt_last_error();
        if (pt_last_status() != PT_ERR_INVALID_ARGUMENT || !strstr(m, "pt_f_embedding") || !strstr(m, want) ||
            !strstr(m, "position [1]") || !strstr(m, "0..3"))
            report_fail(name, "%s: \"%s\" should name pt_f_embedding, the %s at position [1] and 0..3",
                        pt_status_name(pt_last_status()), m, want);
        else report_pass(name);
    } else if (host) {
        report_fail(name, "the cpu took index %g of 4 rows; it must refuse it", bad);
    } else { /* accelerators: a zero row, the others looked up */
        float got[6] = {0};
        const float exp[6] = {3, 4, 0, 0, 1, 2};
        if (pt_to_host(out, got, sizeof got) != PT_OK) report_fail(name, "read back: %s", pt_last_error());
        else if (memcmp(got, exp, sizeof got) != 0)
            report_fail(name, "rows %g %g | %g %g | %g %g, expected 3 4 | 0 0 | 1 2", got[0], got[1], got[2], got[3],
                        got[4], got[5]);
        else report_pass(name);
    }
    pt_release(out);
    pt_release(idx);
    pt_release(weight);
    pt_clear_error();
}

/* ---- The same bits run to run ---- */

/* The gradient of sum(f_embedding(idx, weight) * w) in weight, as bytes. */
static bool grad_bits(pt_tensor *idx, const ht *weight, pt_tensor *w, float *bits, size_t bytes) {
    pt_tensor *leaf = ht_upload(g_dev, weight, LAY_C); /* a fresh leaf: no gradient to add into */
    if (!leaf) return false;
    pt_set_requires_grad(leaf, true);
    pt_tensor *out = pt_f_embedding(idx, leaf), *prod = pt_mul(out, w), *s = pt_sum(prod, PT_ALL, false);
    pt_tensor *grad = s && pt_backward(s) == PT_OK ? pt_grad(leaf) : NULL;
    bool ok = grad && pt_to_host(grad, bits, bytes) == PT_OK;
    pt_release(grad);
    pt_release(s);
    pt_release(prod);
    pt_release(out);
    pt_release(leaf);
    return ok;
}

static void determinism(lcg *g) {
    const char *name = "embedding determinism f32 indices=[3000] weight=[10, 40] grad twice";
    if (!case_selected(name)) return;
    pt_clear_error();
    const int64_t n = 3000, rows = 10, d = 40, is[1] = {n}, ws[2] = {rows, d}, os[2] = {n, d};
    ht *hi = ht_new(PT_I64, 1, is), *hw = ht_new(PT_F32, 2, ws), *hg = ht_new(PT_F32, 2, os);
    ht_fill(hi, (domain){DOM_INT, 0, (double)rows - 1}, g);
    ht_fill(hw, (domain){DOM_UNIFORM, -1, 1}, g);
    ht_fill(hg, (domain){DOM_UNIFORM, -1, 1}, g); /* 300 terms a row in any order would round differently */
    pt_tensor *idx = ht_upload(g_dev, hi, LAY_C), *w = ht_upload(g_dev, hg, LAY_C);
    float *a = malloc(sizeof(float) * (size_t)(rows * d)), *b = malloc(sizeof(float) * (size_t)(rows * d));
    const size_t bytes = sizeof(float) * (size_t)(rows * d);
    if (!idx || !w || !grad_bits(idx, hw, w, a, bytes) || !grad_bits(idx, hw, w, b, bytes)) {
        if (!skip_if_unsupported(name)) report_fail(name, "%s: %s", pt_status_name(pt_last_status()), pt_last_error());
    } else if (memcmp(a, b, bytes) != 0) {
        report_fail(name, "two backward runs gave different bits");
    } else {
        report_pass(name);
    }
    free(a);
    free(b);
    pt_release(idx);
    pt_release(w);
    ht_free(hi);
    ht_free(hw);
    ht_free(hg);
    pt_clear_error();
}

/* ---- Inside a captured graph ---- */

/* Captures the rows and the weight's gradient for idx, then replays with
 * the values of next copied into idx: both must follow the new indices. */
static void captured(lcg *g) {
    const char *name = "embedding graph f32 indices=[6, 5] weight=[9, 7] replayed with new indices";
    if (!case_selected(name)) return;
    pt_clear_error();
    const int64_t is[2] = {6, 5}, ws[2] = {9, 7}, os[3] = {6, 5, 7};
    ht *h1 = ht_new(PT_I32, 2, is), *h2 = ht_new(PT_I32, 2, is), *hw = ht_new(PT_F32, 2, ws), *hg = ht_new(PT_F32, 3, os);
    ht_fill(h1, (domain){DOM_INT, 0, 8}, g);
    ht_fill(h2, (domain){DOM_INT, 0, 3}, g); /* more repeats than the captured ones */
    ht_fill(hw, (domain){DOM_UNIFORM, -2, 2}, g);
    ht_fill(hg, (domain){DOM_UNIFORM, -1, 1}, g);
    pt_tensor *idx = ht_upload(g_dev, h1, LAY_C), *next = ht_upload(g_dev, h2, LAY_C);
    pt_tensor *weight = ht_upload(g_dev, hw, LAY_C), *w = ht_upload(g_dev, hg, LAY_C);
    pt_tensor *rows = NULL, *grad = NULL;
    pt_graph *graph = NULL;
    if (idx && next && weight && w && pt_set_requires_grad(weight, true) == PT_OK &&
        pt_graph_capture_begin(g_dev) == PT_OK) {
        rows = pt_f_embedding(idx, weight);
        pt_tensor *prod = pt_mul(rows, w), *s = pt_sum(prod, PT_ALL, false);
        if (s) pt_backward(s);
        pt_release(prod);
        pt_release(s);
        graph = pt_graph_capture_end(g_dev);
        grad = pt_grad(weight);
    }
    bool ok = graph && rows && grad && pt_copy_(idx, next) == PT_OK && pt_graph_replay(graph) == PT_OK;
    if (!ok) {
        if (!skip_if_unsupported(name)) report_fail(name, "%s: %s", pt_status_name(pt_last_status()), pt_last_error());
    } else {
        expect er = {0}, eg = {0};
        ref_rows(h2, hw, &er);
        ref_grad(h2, hw, hg, &eg);
        char msg[512];
        ht *got_r = ht_download(rows, msg, sizeof msg), *got_g = got_r ? ht_download(grad, msg, sizeof msg) : NULL;
        if (!got_g) report_fail(name, "read back: %s", msg);
        else if (!compare_result(got_r, &er, TOL_EXACT, msg, sizeof msg)) report_fail(name, "rows: %s", msg);
        else if (!compare_result(got_g, &eg, TOL_SUM, msg, sizeof msg)) report_fail(name, "gradient: %s", msg);
        else report_pass(name);
        ht_free(got_r);
        ht_free(got_g);
        expect_free(&er);
        expect_free(&eg);
    }
    pt_graph_free(graph);
    pt_release(grad);
    pt_release(rows);
    pt_release(idx);
    pt_release(next);
    pt_release(weight);
    pt_release(w);
    ht_free(h1);
    ht_free(h2);
    ht_free(hw);
    ht_free(hg);
    pt_clear_error();
}

/* ---- Errors ---- */

static void error_case(const char *name, pt_tensor *got, pt_status want, const char *n1, const char *n2) {
    if (!case_selected(name)) return;
    const char *m = pt_last_error();
    if (got) report_fail(name, "succeeded; expected %s", pt_status_name(want));
    else if (pt_last_status() != want || !strstr(m, "pt_f_embedding") || (n1 && !strstr(m, n1)) ||
             (n2 && !strstr(m, n2)))
        report_fail(name, "%s: \"%s\"; expected %s naming pt_f_embedding%s%s%s%s", pt_status_name(pt_last_status()),
                    m, pt_status_name(want), n1 ? ", " : "", n1 ? n1 : "", n2 ? ", " : "", n2 ? n2 : "");
    else report_pass(name);
    pt_release(got);
    pt_clear_error();
}

static void errors(void) {
    const int64_t s2[2] = {4, 3}, s3[3] = {2, 4, 3}, s0[2] = {0, 3}, is[1] = {2};
    pt_tensor *weight = pt_zeros(g_dev, PT_F32, 2, s2), *w3 = pt_zeros(g_dev, PT_F32, 3, s3);
    pt_tensor *w0 = pt_zeros(g_dev, PT_F32, 2, s0), *idx = pt_zeros(g_dev, PT_I64, 1, is);
    pt_tensor *fidx = pt_zeros(g_dev, PT_F32, 1, is);
    if (!weight || !w3 || !w0 || !idx || !fidx) {
        if (!skip_if_unsupported("embedding errors")) report_fail("embedding errors", "set-up: %s", pt_last_error());
    } else {
        pt_clear_error();
        error_case("embedding error f32 indices", pt_f_embedding(fidx, weight), PT_ERR_DTYPE, "f32", "i32 or i64");
        error_case("embedding error 3-D weight", pt_f_embedding(idx, w3), PT_ERR_SHAPE, "[2, 4, 3]",
                   "[num_embeddings, embedding_dim]");
        error_case("embedding error weight without rows", pt_f_embedding(idx, w0), PT_ERR_INVALID_ARGUMENT,
                   "[0, 3]", "num_embeddings >= 1");
        error_case("embedding error NULL weight", pt_f_embedding(idx, NULL), PT_ERR_INVALID_ARGUMENT, "weight",
                   NULL);
    }
    pt_release(weight);
    pt_release(w3);
    pt_release(w0);
    pt_release(idx);
    pt_release(fidx);
    pt_clear_error();
}

void run_embedding_cases(void) {
    static const emb_shape shapes[] = {
        {2, {3, 4}, 7, 5, 6},       /* [B, T] with repeats */
        {1, {5, 0}, 1, 3, 0},       /* every position picks row 0 */
        {2, {2, 65}, 50, 33, 40},   /* rows 41..49 picked by none */
        {1, {0, 0}, 6, 4, 5},       /* no indices */
        {2, {3, 0}, 5, 4, 4},       /* [3, 0] indices */
        {1, {4, 0}, 5, 0, 4},       /* rows of width 0 */
    };
    lcg g;
    lcg_seed(&g, 4711);
    FOR_EACH_DTYPE_IN(t, PT_DTYPES_FLOAT) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
            one_case(t, PT_I64, &shapes[s], LAY_C, LAY_C, "", &g);
            if (s == 0 || s == 2) one_case(t, PT_I32, &shapes[s], LAY_C, LAY_C, "", &g);
        }
        one_case(t, PT_I32, &shapes[0], LAY_T, LAY_C, "", &g); /* a transposed weight */
        one_case(t, PT_I64, &shapes[2], LAY_N, LAY_T, "", &g); /* a narrowed weight, transposed indices */
    }
    /* Many positions, a vocabulary's worth of rows. */
    const emb_shape big = {2, {8, 300}, 5000, 24, 4999};
    one_case(PT_F32, PT_I64, &big, LAY_C, LAY_C, "", &g);
    if (g_filter) {
        const emb_shape gpt = {2, {4, 1024}, 50257, 64, 50256};
        one_case(PT_F32, PT_I64, &gpt, LAY_C, LAY_C, " long", &g);
    }
    out_of_range(PT_I64, 4);
    out_of_range(PT_I32, -1);
    determinism(&g);
    captured(&g);
    errors();
}
