/* The CUDA plugin's generated kernels for fused chains, compiled by NVRTC
 * here, where there is no GPU: NVRTC compiles on the host, so a chain whose
 * text NVRTC refuses (a header it lacks, a name the simulator's host
 * compiler allows and NVRTC does not) fails this test rather than a replay
 * on someone's GPU. Each chain is planned as the plugin plans it
 * (exec_fused_plan.c), written as the plugin writes it
 * (exec_fused_source.c) and compiled as the plugin compiles it
 * (launch_nvrtc.c) for sm_80 and sm_90, with and without a reduction after
 * it; a reduction the kernels do not end in is refused with its name.
 * PT_TEST_PRINT_SOURCE=1 prints each kernel's text. Exits 77 (a skip)
 * only where NVRTC cannot be loaded. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fused.h"

static char g_error[2048];
static int g_failures;

static void set_error(pt_status s, const char *fmt, ...) {
    (void)s;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_error, sizeof g_error, fmt, ap);
    va_end(ap);
}

static void log_line(pt_log_level level, const char *fmt, ...) {
    (void)level;
    (void)fmt;
}

static const pt_host_api host = {.struct_size = sizeof(pt_host_api), .set_error = set_error, .log = log_line};

/* A contiguous operand of shape (n dims); never dereferenced here. */
static pt_operand dense(pt_dtype t, int n, const int64_t *shape) {
    pt_operand o;
    memset(&o, 0, sizeof o);
    o.buf = (void *)(uintptr_t)0x1000;
    o.dtype = t;
    o.ndim = n;
    int64_t stride = 1;
    for (int d = n - 1; d >= 0; --d) {
        o.shape[d] = shape[d];
        o.strides[d] = stride;
        stride *= shape[d];
    }
    return o;
}

static pt_op ew(pt_op_kind kind, pt_dtype t, pt_dtype out_t, int n_inputs, int nd, const int64_t *shape) {
    pt_op op;
    memset(&op, 0, sizeof op);
    op.kind = kind;
    op.dtype = t;
    op.n_inputs = n_inputs;
    op.out = dense(out_t, nd, shape);
    for (int j = 0; j < n_inputs; ++j) op.in[j] = dense(t, nd, shape);
    op.scalar = 1.5;
    return op;
}

/* The reduction of [outer, r, inner] (the chain's last value, of dtype t)
 * into out_t. */
static pt_op reduction(pt_op_kind kind, pt_dtype t, pt_dtype out_t, int64_t outer, int64_t r, int64_t inner) {
    pt_op op;
    memset(&op, 0, sizeof op);
    op.kind = kind;
    op.dtype = t;
    op.n_inputs = 1;
    const int64_t in_shape[3] = {outer, r, inner}, out_shape[2] = {outer, inner};
    op.in[0] = dense(t, 3, in_shape);
    op.out = dense(out_t, 2, out_shape);
    return op;
}

/* Plans, writes and compiles chain c for sm_80 and sm_90. want: the status
 * planning must give; why: a phrase its reason must hold (refusals). */
static void check(const char *name, const pt_fused_chain *c, pt_status want, const char *why) {
    pt_op op;
    memset(&op, 0, sizeof op);
    op.kind = PT_OP_FUSED;
    op.fused = c;
    ptcu_fused_plan plan;
    g_error[0] = '\0';
    const pt_status s = ptcu_fused_plan_of(&op, &plan);
    if (s != want || (why && !strstr(g_error, why))) {
        printf("FAIL %s: planning gave status %d (%s), expected %d%s%s\n", name, (int)s, g_error,
               (int)want, why ? " naming " : "", why ? why : "");
        ++g_failures;
        return;
    }
    if (s != PT_OK) {
        printf("PASS %s: refused: %s\n", name, g_error);
        return;
    }
    char *source = ptcu_fused_source(c, &plan);
    if (!source) {
        printf("FAIL %s: no source (out of memory)\n", name);
        ++g_failures;
        return;
    }
    if (getenv("PT_TEST_PRINT_SOURCE")) printf("--- %s ---\n%s\n", name, source);
    static const int archs[][2] = {{8, 0}, {9, 0}};
    for (int a = 0; a < 2; ++a) {
        void *image = NULL;
        size_t size = 0;
        g_error[0] = '\0';
        const pt_status cs = ptcu_compile(source, archs[a][0], archs[a][1], &image, &size);
        free(image);
        if (cs != PT_OK) {
            printf("FAIL %s for sm_%d%d: %s\n--- source ---\n%s\n", name, archs[a][0], archs[a][1], g_error, source);
            ++g_failures;
            free(source);
            return;
        }
        printf("PASS %s for sm_%d%d: %zu bytes of source, an image of %zu bytes\n", name, archs[a][0], archs[a][1],
               strlen(source), size);
    }
    free(source);
}

/* exp(x) * y + 1.5 over [64, 33] in t, y read through a transposed view,
 * the last value kept in t. */
static void three_steps(pt_fused_step *s, pt_dtype t) {
    const int64_t shape[2] = {64, 33};
    memset(s, 0, 3 * sizeof *s);
    s[0].op = ew(PT_OP_EXP, t, t, 1, 2, shape);
    s[1].op = ew(PT_OP_MUL, t, t, 2, 2, shape);
    s[1].op.in[1].strides[0] = 1;
    s[1].op.in[1].strides[1] = 64;
    s[2].op = ew(PT_OP_ADD_SCALAR, t, t, 1, 2, shape);
    for (int k = 0; k < 3; ++k) s[k].src[0] = s[k].src[1] = s[k].src[2] = -1;
    s[1].src[0] = 0;
    s[2].src[0] = 1;
}

int main(void) {
    ptcu_host = &host;
    pt_fused_step s[4];
    pt_fused_chain c = {.n_steps = 3, .steps = s, .numel = 64 * 33};

    /* Probe: where NVRTC cannot be loaded every compile says so; skip. */
    three_steps(s, PT_F32);
    {
        pt_op op = {.kind = PT_OP_FUSED, .fused = &c};
        ptcu_fused_plan plan;
        char *source = ptcu_fused_plan_of(&op, &plan) == PT_OK ? ptcu_fused_source(&c, &plan) : NULL;
        void *image = NULL;
        size_t size = 0;
        const pt_status cs = source ? ptcu_compile(source, 9, 0, &image, &size) : PT_ERR_INTERNAL;
        free(image);
        free(source);
        if (cs == PT_ERR_UNSUPPORTED && strstr(g_error, "NVRTC") && strstr(g_error, "load")) {
            printf("SKIP: %s\n", g_error);
            return 77;
        }
    }
    printf("compiler: %s\n", ptcu_compiler_identity());

    for (pt_dtype t = 0; t < PT_DTYPE_COUNT; ++t) {
        if (t != PT_F32 && t != PT_F64 && t != PT_F16 && t != PT_BF16) continue;
        char name[96];
        three_steps(s, t);
        c.reduce = NULL;
        snprintf(name, sizeof name, "%s chain", pt_dtype_table_name(t));
        check(name, &c, PT_OK, NULL);
        const pt_op_kind kinds[3] = {PT_OP_SUM, PT_OP_MEAN, PT_OP_MAX};
        for (int k = 0; k < 3; ++k) {
            const pt_op red = reduction(kinds[k], t, t, 64, 33, 1);
            c.reduce = &red;
            snprintf(name, sizeof name, "%s chain and %s over rows", pt_dtype_table_name(t), pt_op_name(kinds[k]));
            check(name, &c, PT_OK, NULL);
        }
    }

    /* Integers: (x + y) * y, then its sum into i64 and its max. */
    {
        const int64_t shape[1] = {1000};
        memset(s, 0, 2 * sizeof *s);
        s[0].op = ew(PT_OP_ADD, PT_I32, PT_I32, 2, 1, shape);
        s[1].op = ew(PT_OP_MUL, PT_I32, PT_I32, 2, 1, shape);
        for (int k = 0; k < 2; ++k) s[k].src[0] = s[k].src[1] = s[k].src[2] = -1;
        s[1].src[0] = 0;
        pt_fused_chain ci = {.n_steps = 2, .steps = s, .numel = 1000};
        const pt_op sum = reduction(PT_OP_SUM, PT_I32, PT_I64, 1, 1000, 1);
        ci.reduce = &sum;
        check("i32 chain and sum into i64", &ci, PT_OK, NULL);
        const pt_op max = reduction(PT_OP_MAX, PT_I32, PT_I32, 10, 10, 10);
        ci.reduce = &max;
        check("i32 chain and max over the middle", &ci, PT_OK, NULL);
        const pt_op mean = reduction(PT_OP_MEAN, PT_I32, PT_I32, 1, 1000, 1);
        ci.reduce = &mean;
        check("i32 chain and mean (refused)", &ci, PT_ERR_UNSUPPORTED, "mean");
        const pt_op argmax = reduction(PT_OP_ARGMAX, PT_I32, PT_I64, 1, 1000, 1);
        ci.reduce = &argmax;
        check("i32 chain and argmax (refused)", &ci, PT_ERR_UNSUPPORTED, "argmax");
    }

    /* A cast mid-chain: f64 -> f32, then gt and where, then a sum of f32. */
    {
        const int64_t shape[1] = {4096};
        memset(s, 0, 4 * sizeof *s);
        s[0].op = ew(PT_OP_COPY, PT_F64, PT_F32, 1, 1, shape);
        s[1].op = ew(PT_OP_GT, PT_F32, PT_U8, 2, 1, shape);
        s[1].op.in[1].strides[0] = 0; /* a broadcast scalar */
        s[2].op = ew(PT_OP_WHERE, PT_F32, PT_F32, 3, 1, shape);
        s[2].op.in[0].dtype = PT_U8;
        s[3].op = ew(PT_OP_MUL, PT_F32, PT_F32, 2, 1, shape);
        for (int k = 0; k < 4; ++k) s[k].src[0] = s[k].src[1] = s[k].src[2] = -1;
        s[1].src[0] = 0;
        s[2].src[0] = 1;
        s[2].src[1] = 0;
        s[3].src[0] = 2;
        s[3].src[1] = 2;
        s[3].store = true;
        pt_fused_chain cc = {.n_steps = 4, .steps = s, .numel = 4096};
        cc.reduce = NULL;
        check("cast, gt, where, mul", &cc, PT_OK, NULL);
        const pt_op sum = reduction(PT_OP_SUM, PT_F32, PT_F32, 1, 4096, 1);
        cc.reduce = &sum;
        check("cast, gt, where, mul, stored, and sum", &cc, PT_OK, NULL);
        const pt_op wrong = reduction(PT_OP_SUM, PT_F32, PT_F32, 1, 2048, 1);
        cc.reduce = &wrong;
        check("a sum of fewer values than the chain's (refused)", &cc, PT_ERR_INVALID_ARGUMENT, "contiguous");
    }

    /* An optimizer's momentum step, in place: m = m * s + g stored into m,
     * then p = p + s * m (AXPY, whose out is its first input), in f32 and
     * f64. */
    for (int ti = 0; ti < 2; ++ti) {
        const pt_dtype t = ti ? PT_F64 : PT_F32;
        const int64_t shape[2] = {64, 256};
        memset(s, 0, 4 * sizeof *s);
        s[0].op = ew(PT_OP_MUL_SCALAR, t, t, 1, 2, shape);
        s[1].op = ew(PT_OP_ADD, t, t, 2, 2, shape);
        s[2].op = ew(PT_OP_COPY, t, t, 1, 2, shape);
        s[3].op = ew(PT_OP_AXPY, t, t, 2, 2, shape);
        s[2].op.out.buf = s[0].op.in[0].buf = (void *)(uintptr_t)0x2000; /* m */
        s[3].op.out.buf = s[3].op.in[0].buf = (void *)(uintptr_t)0x3000; /* p */
        for (int k = 0; k < 4; ++k) s[k].src[0] = s[k].src[1] = s[k].src[2] = -1;
        s[1].src[0] = 0;
        s[2].src[0] = 1;
        s[3].src[1] = 2;
        s[2].store = s[3].store = true;
        pt_fused_chain cc = {.n_steps = 4, .steps = s, .numel = 64 * 256};
        check(ti ? "momentum step with axpy, f64" : "momentum step with axpy, f32", &cc, PT_OK, NULL);
    }

    printf("%s: %d failed\n", g_failures ? "FAIL" : "PASS", g_failures);
    return g_failures ? 1 : 0;
}
