/* Conformance runner: picks the device under test, runs every case group,
 * and reports PASS / FAIL / SKIP per case and a summary line:
 *   conformance(cpu:0): 812 passed, 0 failed, 3 skipped
 * Exit status: 0 all passed (or skipped), 1 any failure, 77 the backend is
 * unavailable. An optional argument runs only cases whose name contains it;
 * without one the run ends with the coverage check (coverage.c).
 * `conformance --support` prints the support grid (support.c) instead;
 * `conformance --cases FILE` runs the cases named (exactly) in FILE. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

pt_device *g_dev;
const char *g_filter;
static int n_pass, n_fail, n_skip;

/* --cases FILE: the exact case names to run, one a line (the Oclgrind subset
 * of scripts/opencl-matrix.sh picks them from a full run's output). */
static char **g_cases;
static int g_n_cases;

bool case_selected(const char *name) {
    if (g_cases) {
        for (int i = 0; i < g_n_cases; ++i)
            if (strcmp(g_cases[i], name) == 0) return true;
        return false;
    }
    return !g_filter || strstr(name, g_filter) != NULL;
}

static bool load_case_list(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0]) continue;
        char **grown = realloc(g_cases, (size_t)(g_n_cases + 1) * sizeof *grown);
        char *copy = strdup(line);
        if (!grown || !copy) {
            free(copy);
            fclose(f);
            return false;
        }
        g_cases = grown;
        g_cases[g_n_cases++] = copy;
    }
    fclose(f);
    return g_n_cases > 0;
}

void report_pass(const char *name) {
    ++n_pass;
    printf("PASS %s\n", name);
}

void report_fail(const char *name, const char *fmt, ...) {
    ++n_fail;
    printf("FAIL %s: ", name);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

void report_skip(const char *name, const char *why) {
    ++n_skip;
    printf("SKIP %s: %s\n", name, why);
}

bool skip_if_unsupported(const char *name) {
    if (pt_last_status() != PT_ERR_UNSUPPORTED) return false;
    report_skip(name, pt_last_error());
    return true;
}

/* ---- Tolerance comparison ---- */

bool compare_result(const ht *got, const expect *e, tol_id tol, char *msg, size_t cap) {
    const ht *exp = e->val;
    char s1[96], s2[96];
    if (got->dtype != exp->dtype) {
        snprintf(msg, cap, "dtype %s, expected %s", pt_dtype_name(got->dtype),
                 pt_dtype_name(exp->dtype));
        return false;
    }
    bool same = got->ndim == exp->ndim;
    for (int i = 0; same && i < got->ndim; ++i) same = got->shape[i] == exp->shape[i];
    if (!same) {
        snprintf(msg, cap, "shape %s, expected %s", shape_str(got->ndim, got->shape, s1, sizeof s1),
                 shape_str(exp->ndim, exp->shape, s2, sizeof s2));
        return false;
    }
    const tolerance *t = &tolerances[tol];
    /* f16 and bf16 compute in f32 and round the result once: the f32
     * tolerance plus one unit roundoff u of the storage type (2^-11, 2^-8)
     * relative, and half the smallest subnormal absolute (where rounding
     * error stops being relative). Exact cases stay exact. */
    const bool half = exp->dtype == PT_F16 || exp->dtype == PT_BF16;
    const double u = exp->dtype == PT_F16 ? ldexp(1.0, -11) : exp->dtype == PT_BF16 ? ldexp(1.0, -8) : 0;
    const double sub_half = exp->dtype == PT_F16 ? ldexp(1.0, -25) : ldexp(1.0, -134);
    bool is32 = exp->dtype == PT_F32 || half, isf = pt_dtype_is_float(exp->dtype);
    double rtol = isf ? (is32 ? t->rtol32 : t->rtol64) : 0;
    double racc = isf ? (is32 ? t->racc32 : t->racc64) : 0;
    double atol = isf ? (is32 ? t->atol32 : t->atol64) : 0;
    if (half && tol != TOL_EXACT) {
        rtol += (tol == TOL_NORM ? 3 : 1) * u; /* norm: x*x, the sum and sqrt each round */
        atol = atol > sub_half ? atol : sub_half;
    }
    if (t->sqrtk) racc *= sqrt(e->K > 1 ? e->K : 1);
    /* conv2d with a bias is two ops in 16 bits, each rounding once: the
     * GEMM's result is rounded before the bias is added, an error of at
     * most u of that partial sum, which the accumulated magnitude bounds
     * (a bias that cancels the sum leaves it large relative to the result). */
    if (half && tol == TOL_CONV) racc += u;
    int64_t bad = 0, first = -1;
    double first_tol = 0;
    for (int64_t i = 0; i < exp->numel; ++i) {
        double g = got->v[i], x = exp->v[i];
        bool ok;
        if (isnan(x)) ok = isnan(g);
        else if (isinf(x)) ok = g == x;
        else {
            double lim = atol + rtol * fabs(x) + racc * (e->acc ? e->acc[i] : 0);
            ok = !isnan(g) && fabs(g - x) <= lim;
            if (!ok && first < 0) first_tol = lim;
        }
        if (!ok) {
            if (first < 0) first = i;
            ++bad;
        }
    }
    if (first < 0) return true;
    int64_t idx[PT_MAX_DIMS], f = first;
    for (int i = exp->ndim - 1; i >= 0; --i) {
        idx[i] = f % exp->shape[i];
        f /= exp->shape[i];
    }
    snprintf(msg, cap, "%lld of %lld elements differ; first at flat %lld %s: got %.17g, expected %.17g "
             "(tolerance %.3g, %s)",
             (long long)bad, (long long)exp->numel, (long long)first,
             shape_str(exp->ndim, idx, s1, sizeof s1), got->v[first], exp->v[first], first_tol,
             t->name);
    return false;
}

/* ---- Poisoning ---- */

void poison_allocator(pt_dtype t, int64_t n) {
    if (n <= 0) return;
    pt_tensor *p = NULL;
    if (pt_dtype_is_float(t)) {
        int64_t shape[1] = {n};
        p = pt_full(g_dev, t, 1, shape, NAN);
    }
    if (!p) { /* integer results, or a backend without this float dtype */
        int64_t shape[1] = {n * (int64_t)pt_dtype_size(t)};
        p = pt_full(g_dev, PT_U8, 1, shape, 0xAB);
    }
    pt_release(p);
    pt_clear_error();
}

/* ---- One case ---- */

void run_case(const char *name, int nin, ht *const *in, const layout *lays, case_fn fn,
              const void *params, const expect *e, tol_id tol, unsigned flags) {
    if (!case_selected(name)) return;
    pt_clear_error();
    pt_tensor *dev_in[8] = {NULL};
    for (int i = 0; i < nin; ++i) {
        dev_in[i] = ht_upload(g_dev, in[i], lays ? lays[i] : LAY_C);
        if (!dev_in[i]) {
            if (!skip_if_unsupported(name))
                report_fail(name, "uploading input %d failed: %s: %s", i,
                            pt_status_name(pt_last_status()), pt_last_error());
            goto done;
        }
    }
    if (!(flags & CF_NO_POISON) && e->val) poison_allocator(e->val->dtype, e->val->numel);
    pt_tensor *out = fn(dev_in, params);
    if (!out) {
        if (!skip_if_unsupported(name))
            report_fail(name, "returned NULL: %s: %s", pt_status_name(pt_last_status()),
                        pt_last_error());
        goto done;
    }
    char msg[512];
    if (pt_last_status() != PT_OK) {
        report_fail(name, "succeeded but left an error set: %s: %s",
                    pt_status_name(pt_last_status()), pt_last_error());
    } else if (pt_tensor_device(out) != g_dev) {
        report_fail(name, "result on %s, expected %s", pt_device_name(pt_tensor_device(out)),
                    pt_device_name(g_dev));
    } else if ((flags & CF_VIEW_OF_IN0) && !pt_tensor_shares_storage(out, dev_in[0])) {
        report_fail(name, "result is not a view of the input (no shared storage)");
    } else if ((flags & CF_COPY_OF_IN0) && pt_tensor_shares_storage(out, dev_in[0])) {
        report_fail(name, "result shares storage with the input, expected a copy");
    } else if ((flags & CF_SAME_AS_IN0) && out != dev_in[0]) {
        report_fail(name, "expected the input tensor itself to be returned");
    } else if ((flags & CF_CONTIGUOUS) && !pt_tensor_is_contiguous(out)) {
        report_fail(name, "result is not contiguous");
    } else {
        ht *got = ht_download(out, msg, sizeof msg);
        /* Reading a view back runs COPY on the device: a backend without it
         * skips the case rather than failing it. */
        if (!got) {
            if (!skip_if_unsupported(name)) report_fail(name, "%s", msg);
        }
        else if (!compare_result(got, e, tol, msg, sizeof msg)) report_fail(name, "%s", msg);
        else report_pass(name);
        ht_free(got);
    }
    pt_release(out);
done:
    for (int i = 0; i < nin; ++i) pt_release(dev_in[i]);
    pt_clear_error();
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    bool support = argc > 1 && strcmp(argv[1], "--support") == 0;
    bool cases = argc == 3 && strcmp(argv[1], "--cases") == 0;
    if ((argc > 2 && !cases) || (argc > 1 && !support && !cases && strncmp(argv[1], "--", 2) == 0)) {
        fprintf(stderr, "usage: conformance [CASE-NAME-PART | --support | --cases FILE]\n");
        return 2;
    }
    if (cases && !load_case_list(argv[2])) {
        fprintf(stderr, "conformance: --cases %s: cannot read a non-empty list of case names\n",
                argv[2]);
        return 2;
    }
    g_filter = argc > 1 && !support ? argv[argc - 1] : NULL; /* also no coverage check */
    g_dev = pt_default_device();
    if (!g_dev) {
        const char *b = getenv("PORTABLE_BACKEND");
        printf("conformance: backend '%s' unavailable: %s: %s\n", b ? b : "auto",
               pt_status_name(pt_last_status()), pt_last_error());
        return 77;
    }
    pt_device_props props;
    if (pt_device_info(g_dev, &props) == PT_OK)
        printf("conformance on %s: %s (%s, %s)\n", pt_device_name(g_dev), props.name,
               props.vendor, props.driver_version);
    pt_clear_error();
    if (support) return print_support_grid(g_dev);

    run_creation_cases();
    run_op_table();
    run_shape_cases();
    run_inplace_cases();
    run_transfer_cases();
    run_rng_cases();
    run_error_cases();
    run_cnn_cases();
    run_channel_stats_cases();
    run_fused_cases();
    run_attention_cases();
    run_embedding_cases();
    if (!g_filter) check_op_coverage(); /* a filtered run leaves pairs out on purpose */

    printf("conformance(%s): %d passed, %d failed, %d skipped\n", pt_device_name(g_dev), n_pass,
           n_fail, n_skip);
    return n_fail ? 1 : 0;
}
