/* Fused chains that mix dtypes (casts to f16, bf16, i32, u8, f64; a
 * comparison feeding where; i32 arithmetic; f16 inputs computed in f32;
 * broadcast and transposed inputs), at sizes with and without a partial
 * work-group: each replayed graph equals its eager run bit for bit. Where
 * the backend fuses (the opencl plugin), every chain must become one
 * kernel; elsewhere the graph's ops run apart and must equal all the same.
 * The conformance group `fused` covers the single-dtype patterns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "portable/portable.h"

typedef pt_tensor *(*chain_fn)(pt_tensor **in);

static pt_tensor *to_f16(pt_tensor **x) { return pt_cast(pt_relu(pt_add(pt_mul(x[0], x[1]), x[2])), PT_F16); }
static pt_tensor *to_i32(pt_tensor **x) { return pt_cast(pt_add_scalar(pt_mul_scalar(x[0], 3.7), -0.25), PT_I32); }
static pt_tensor *compare_where(pt_tensor **x) {
    return pt_where(pt_gt(x[0], x[1]), pt_exp(x[0]), pt_mul(x[1], x[2]));
}
static pt_tensor *strided(pt_tensor **x) { return pt_tanh(pt_add(pt_mul(x[0], pt_transpose(x[3], 0, 1)), x[4])); }
static pt_tensor *int_math(pt_tensor **x) {
    pt_tensor *a = pt_cast(x[0], PT_I32), *b = pt_cast(x[1], PT_I32);
    return pt_lt(pt_add(pt_mul(a, b), a), b);
}
static pt_tensor *f16_math(pt_tensor **x) { return pt_sigmoid(pt_add(pt_cast(x[0], PT_F16), pt_cast(x[1], PT_F16))); }
static pt_tensor *to_bf16(pt_tensor **x) { return pt_cast(pt_clamp(pt_gelu(x[0]), -0.5, 0.75), PT_BF16); }
static pt_tensor *via_f64(pt_tensor **x) { return pt_cast(pt_cast(pt_sqrt(pt_abs(x[0])), PT_F64), PT_U8); }

static const struct {
    const char *name;
    chain_fn fn;
} cases[] = {{"f32 -> f16", to_f16}, {"f32 -> i32", to_i32},   {"gt + where", compare_where},
             {"strided", strided},   {"i32", int_math},        {"f16 via f32", f16_math},
             {"f32 -> bf16", to_bf16}, {"f32 -> f64 -> u8", via_f64}};

static void run_case(pt_device *d, pt_tensor **in, int k, int64_t n, bool fuses) {
    pt_scope scope = pt_scope_begin();
    pt_tensor *e = cases[k].fn(in);
    if (!e) { /* a dtype the backend lacks (f64) */
        printf("%s: not run eagerly here: %s\n", cases[k].name, pt_last_error());
        pt_scope_end(scope);
        return;
    }
    const size_t bytes = (size_t)pt_tensor_numel(e) * pt_dtype_size(pt_tensor_dtype(e));
    char *he = malloc(bytes), *hg = malloc(bytes);
    CHECK_OK(pt_to_host(e, he, bytes));
    CHECK_OK(pt_graph_capture_begin(d));
    pt_tensor *g = cases[k].fn(in);
    pt_graph *gr = pt_graph_capture_end(d);
    CHECK_NOT_NULL(gr);
    if (gr && g) {
        memset(hg, 0x55, bytes);
        CHECK_OK(pt_graph_replay(gr));
        CHECK_OK(pt_graph_replay(gr));
        CHECK_OK(pt_to_host(g, hg, bytes));
        pt_graph_stats st;
        CHECK_OK(pt_graph_info(gr, &st));
        char what[160];
        snprintf(what, sizeof what, "%s, %lld elements: replay == eager bit for bit", cases[k].name, (long long)n);
        check_report(!memcmp(he, hg, bytes), __FILE__, __LINE__, what);
        if (fuses) {
            snprintf(what, sizeof what, "%s: %lld ops fused into one kernel (%lld)", cases[k].name,
                     (long long)st.ops, (long long)st.kernels);
            check_report(st.kernels == 1, __FILE__, __LINE__, what);
        }
    }
    pt_graph_free(gr);
    free(he);
    free(hg);
    pt_scope_end(scope);
}

int main(void) {
    pt_device *d = pt_default_device();
    if (!d) {
        printf("skip: %s\n", pt_last_error());
        return 77;
    }
    /* the plugins that run FUSED chains */
    const bool fuses = !strncmp(pt_device_name(d), "opencl", 6);
    const int64_t sizes[] = {600, 40 * 1000}; /* 600: two whole groups of 256 and a tail */
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; ++z) {
        const int64_t n = sizes[z];
        int64_t sh[2] = {n / 40, 40}, sht[2] = {40, n / 40}, shb[1] = {40};
        pt_manual_seed(7);
        pt_tensor *in[5];
        for (int i = 0; i < 3; ++i) in[i] = pt_randn(d, PT_F32, 2, sh);
        in[3] = pt_randn(d, PT_F32, 2, sht);
        in[4] = pt_randn(d, PT_F32, 1, shb);
        for (int k = 0; k < (int)(sizeof cases / sizeof cases[0]); ++k) run_case(d, in, k, n, fuses);
        for (int i = 0; i < 5; ++i) pt_release(in[i]);
    }
    return check_summary();
}
