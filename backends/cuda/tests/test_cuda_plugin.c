/* libportable CUDA backend — the plugin as the core's loader sees it.
 *
 * Loads libportable-cuda.so with dlopen, checks the entry point, the ABI
 * refusal and the vtable, runs init and then, depending on the machine:
 *  - no usable GPU (CI): init succeeds with 0 devices and a reason; without
 *    libcuda.so.1 the reason says exactly that and what cudaGetDeviceCount
 *    returned;
 *  - a GPU: device_info is filled in, memory round-trips through
 *    alloc/copy_h2d/copy_d2d/copy_d2h (sync and async with pinned memory),
 *    and FILL, ADD, SUM and MATMUL execute with the right values.
 * supports() is checked on both (it needs no device). */
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "portable/backend.h"

#ifndef PTCU_PLUGIN_FILE
#define PTCU_PLUGIN_FILE "libportable-cuda.so"
#endif

static char g_error[4096];
static int g_pass, g_fail;

static void set_error(pt_status s, const char *fmt, ...) {
    (void)s;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_error, sizeof g_error, fmt, ap);
    va_end(ap);
}

static void logger(pt_log_level level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[plugin log %d] ", (int)level);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

#define CHECK(c)                                                              \
    do {                                                                      \
        if (c) {                                                              \
            ++g_pass;                                                         \
        } else {                                                              \
            ++g_fail;                                                         \
            printf("FAIL %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #c, g_error); \
        }                                                                     \
    } while (0)

static pt_operand vec(void *buf, pt_dtype t, int64_t n) {
    pt_operand o;
    memset(&o, 0, sizeof o);
    o.buf = buf;
    o.dtype = t;
    o.ndim = 1;
    o.shape[0] = n;
    o.strides[0] = 1;
    return o;
}

static pt_op ew_op(pt_op_kind k, pt_dtype out, pt_dtype a, pt_dtype b, int n) {
    pt_op op;
    memset(&op, 0, sizeof op);
    op.kind = k;
    op.dtype = a;
    op.n_inputs = n;
    op.out = vec(NULL, out, 4);
    for (int i = 0; i < n; ++i) op.in[i] = vec(NULL, i == 0 ? a : b, 4);
    return op;
}

static void check_supports(const pt_backend_vtable *vt) {
    static const struct {
        pt_op_kind kind;
        pt_dtype out, a, b;
        int n_inputs;
        pt_status want;
    } cases[] = {
        {PT_OP_ADD, PT_F32, PT_F32, PT_F32, 2, PT_OK},
        {PT_OP_ADD, PT_I64, PT_I64, PT_I64, 2, PT_OK},
        {PT_OP_ADD, PT_U8, PT_U8, PT_U8, 2, PT_ERR_UNSUPPORTED},
        {PT_OP_POW, PT_I32, PT_I32, PT_I32, 2, PT_ERR_UNSUPPORTED},
        {PT_OP_EXP, PT_I32, PT_I32, PT_I32, 1, PT_ERR_UNSUPPORTED},
        {PT_OP_EQ, PT_U8, PT_U8, PT_U8, 2, PT_OK},
        {PT_OP_COPY, PT_U8, PT_F64, PT_F64, 1, PT_OK},
        {PT_OP_RAND_NORMAL, PT_I32, PT_I32, PT_I32, 0, PT_ERR_UNSUPPORTED},
        {PT_OP_MEAN, PT_I32, PT_I32, PT_I32, 1, PT_ERR_UNSUPPORTED},
        {PT_OP_SUM, PT_I64, PT_I32, PT_I32, 1, PT_OK},
        {PT_OP_MAX, PT_U8, PT_U8, PT_U8, 1, PT_OK},
        {PT_OP_MATMUL, PT_I32, PT_I32, PT_I32, 2, PT_ERR_UNSUPPORTED},
        {PT_OP_GATHER, PT_U8, PT_U8, PT_I64, 2, PT_OK},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        pt_op op = ew_op(cases[i].kind, cases[i].out, cases[i].a, cases[i].b, cases[i].n_inputs);
        g_error[0] = '\0';
        const pt_status got = vt->supports(0, &op);
        if (got != cases[i].want)
            printf("  case %zu: %s %s -> %s gave %d\n", i, pt_op_name(cases[i].kind),
                   pt_dtype_table_name(cases[i].a), pt_dtype_table_name(cases[i].out), (int)got);
        CHECK(got == cases[i].want);
        /* A refusal names the op (op_table.h's name) and the dtype. */
        if (cases[i].want != PT_OK)
            CHECK(strstr(g_error, pt_op_name(cases[i].kind)) && strstr(g_error, pt_dtype_table_name(cases[i].a)));
    }
}

/* An ATTENTION descriptor of [1, 2, 8, d] operands (no buffers: supports()
 * reads shapes only), q of q_ndim dims. */
static pt_op attention_op(pt_dtype t, int64_t d, int q_ndim) {
    pt_op op;
    memset(&op, 0, sizeof op);
    op.kind = PT_OP_ATTENTION;
    op.dtype = t;
    op.n_inputs = 3;
    op.n_extra = PT_OP_MAX_EXTRA;
    op.scalar = 1.0;
    pt_operand *four[] = {&op.in[0], &op.in[1], &op.in[2], &op.out};
    for (int i = 0; i < 4; ++i) {
        const int64_t shape[4] = {1, 2, 8, d};
        four[i]->dtype = t;
        four[i]->ndim = 4;
        for (int j = 0; j < 4; ++j) four[i]->shape[j] = shape[j];
        four[i]->strides[3] = 1;
        four[i]->strides[2] = d;
        four[i]->strides[1] = 8 * d;
        four[i]->strides[0] = 16 * d;
    }
    op.in[0].ndim = q_ndim;
    op.extra[PT_ATTN_X_LSE] = vec(NULL, t, 16);
    return op;
}

/* The ATTENTION kinds: f32 and f64 heads up to 256 wide; wider ones and
 * 16-bit dtypes are refused (the core composes them) with the op and the
 * reason named; a descriptor off backend.h's layout is an invalid argument. */
static void check_attention_supports(const pt_backend_vtable *vt) {
    pt_op op = attention_op(PT_F32, 256, 4);
    CHECK(vt->supports(0, &op) == PT_OK);
    op = attention_op(PT_F64, 64, 4);
    CHECK(vt->supports(0, &op) == PT_OK);
    g_error[0] = '\0';
    op = attention_op(PT_F32, 300, 4);
    CHECK(vt->supports(0, &op) == PT_ERR_UNSUPPORTED);
    CHECK(strstr(g_error, "attention") && strstr(g_error, "D = 300") && strstr(g_error, "256"));
    g_error[0] = '\0';
    op = attention_op(PT_F16, 64, 4);
    CHECK(vt->supports(0, &op) == PT_ERR_UNSUPPORTED);
    CHECK(strstr(g_error, "attention") && strstr(g_error, "f16"));
    g_error[0] = '\0';
    op = attention_op(PT_F32, 64, 3);
    CHECK(vt->supports(0, &op) == PT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(g_error, "attention") && strstr(g_error, "3, 4 and 4 dims"));
}

/* Contexts come up per device on first use, every entry puts the thread's
 * current device back (where that device has a context), and queue markers
 * pass once the queue has. The simulator exports hooks to look at contexts
 * and the thread's device; with the real runtime cudaGetDevice is found
 * through the plugin's own dependencies. */
static void check_contexts_and_markers(const pt_backend_vtable *vt, void *h, int n) {
    int (*context_made)(int) = (int (*)(int))dlsym(h, "ptcu_sim_context_made");
    int (*thread_device)(void) = (int (*)(void))dlsym(h, "ptcu_sim_thread_device");
    int (*get_device)(int *) = (int (*)(int *))dlsym(h, "cudaGetDevice");
    int cur = -1;
    if (context_made) CHECK(!context_made(0) && (n < 2 || !context_made(1))); /* init made none */
    void *buf = NULL;
    if (n >= 2) {
        CHECK(vt->alloc(1, 256, &buf) == PT_OK);
        if (context_made) CHECK(context_made(1) && !context_made(0)); /* only the device used */
        vt->free(1, buf);
    }
    CHECK(vt->alloc(0, 256, &buf) == PT_OK);
    if (context_made) CHECK(context_made(0));
    /* Both devices have contexts now: whichever device the thread is on, an
     * entry working on the other one switches back before returning. (The
     * first alloc above left the thread on device 1: its device 0 had no
     * context, and switching "back" would have made one.) */
    for (int round = 0; n >= 2 && round < 2; ++round) {
        int before = thread_device ? thread_device() : (get_device && get_device(&before) == 0 ? before : -2);
        const int other_dev = before == 0 ? 1 : 0;
        void *other = NULL;
        CHECK(vt->alloc(other_dev, 256, &other) == PT_OK);
        cur = thread_device ? thread_device() : (get_device && get_device(&cur) == 0 ? cur : -1);
        CHECK(cur == before);
        CHECK(vt->synchronize(other_dev) == PT_OK);
        cur = thread_device ? thread_device() : (get_device && get_device(&cur) == 0 ? cur : -1);
        CHECK(cur == before);
        vt->free(other_dev, other);
        /* The next round starts from the other device (an entry that does
         * not switch back: a plain cudaSetDevice through the plugin is not
         * exported, so use the device the thread is not on via alloc). */
        if (thread_device && round == 0) {
            int (*set_device)(int) = (int (*)(int))dlsym(h, "ptcu_sim_set_thread_device");
            if (set_device) set_device(other_dev);
        }
    }
    /* A marker behind a copy: passed once the queue is done with it. */
    CHECK(vt->marker_record && vt->marker_passed && vt->marker_release);
    static float host[4096];
    void *marker = NULL;
    CHECK(vt->copy_h2d(0, buf, 0, host, 256, true) == PT_OK);
    CHECK(vt->marker_record(0, &marker) == PT_OK && marker != NULL);
    CHECK(vt->synchronize(0) == PT_OK);
    CHECK(vt->marker_passed(0, marker));
    vt->marker_release(0, marker);
    vt->free(0, buf);
}

/* On a GPU: memory, copies and a few ops with known results. */
static void check_device(const pt_backend_vtable *vt) {
    pt_device_props p;
    CHECK(vt->device_info(0, &p) == PT_OK);
    printf("device 0: %s, %s, driver %s, %d SMs, %lld of %lld bytes free\n", p.name, p.platform,
           p.driver_version, p.compute_units, (long long)p.memory_free, (long long)p.memory_total);
    CHECK(p.name[0] && strcmp(p.backend, "cuda") == 0 && strcmp(p.vendor, "NVIDIA") == 0);
    CHECK(p.compute_units > 0 && p.memory_total > 0 && p.memory_free > 0 && p.supports_f64);
    int64_t fr = 0, tot = 0;
    CHECK(vt->memory_info(0, &fr, &tot) == PT_OK && tot > 0 && fr > 0);

    enum { N = 1000 };
    void *a = NULL, *b = NULL, *c = NULL, *pinned = NULL;
    CHECK(vt->alloc(0, N * sizeof(float), &a) == PT_OK);
    CHECK(vt->alloc(0, N * sizeof(float), &b) == PT_OK);
    CHECK(vt->alloc(0, N * sizeof(float), &c) == PT_OK);
    CHECK(vt->host_alloc(0, N * sizeof(float), &pinned) == PT_OK);
    void *huge = NULL;
    CHECK(vt->alloc(0, (size_t)1 << 50, &huge) == PT_ERR_OUT_OF_MEMORY); /* 1 PiB */
    if (!a || !b || !c || !pinned) return;
    float host[N], back[N];
    for (int i = 0; i < N; ++i) host[i] = (float)i;
    CHECK(vt->copy_h2d(0, a, 0, host, sizeof host, false) == PT_OK);
    CHECK(vt->copy_d2d(0, b, 4, a, 0, sizeof host - 4) == PT_OK); /* b[i + 1] = a[i] */
    memset(back, 0, sizeof back);
    CHECK(vt->copy_d2h(0, back, b, 4, sizeof host - 4, false) == PT_OK);
    CHECK(back[0] == 0.0f && back[N - 2] == (float)(N - 2));

    /* FILL b with 2, ADD c = a + b, read back through pinned memory, async. */
    pt_op op;
    memset(&op, 0, sizeof op);
    op.kind = PT_OP_FILL;
    op.dtype = PT_F32;
    op.out = vec(b, PT_F32, N);
    op.scalar = 2.0;
    CHECK(vt->execute(0, &op) == PT_OK);
    memset(&op, 0, sizeof op);
    op.kind = PT_OP_ADD;
    op.dtype = PT_F32;
    op.n_inputs = 2;
    op.out = vec(c, PT_F32, N);
    op.in[0] = vec(a, PT_F32, N);
    op.in[1] = vec(b, PT_F32, N);
    CHECK(vt->execute(0, &op) == PT_OK);
    CHECK(vt->copy_d2h(0, pinned, c, 0, N * sizeof(float), true) == PT_OK);
    CHECK(vt->synchronize(0) == PT_OK);
    int ok = 1;
    for (int i = 0; i < N; ++i) ok = ok && ((float *)pinned)[i] == (float)i + 2.0f;
    CHECK(ok);

    /* SUM over everything: [1, N, 1] -> [1, 1] (c = i + 2). */
    memset(&op, 0, sizeof op);
    op.kind = PT_OP_SUM;
    op.dtype = PT_F32;
    op.n_inputs = 1;
    op.in[0].buf = c;
    op.in[0].dtype = PT_F32;
    op.in[0].ndim = 3;
    op.in[0].shape[0] = 1;
    op.in[0].shape[1] = N;
    op.in[0].shape[2] = 1;
    op.in[0].strides[0] = N;
    op.in[0].strides[1] = 1;
    op.in[0].strides[2] = 1;
    op.out.buf = a;
    op.out.dtype = PT_F32;
    op.out.ndim = 2;
    op.out.shape[0] = 1;
    op.out.shape[1] = 1;
    op.out.strides[0] = 1;
    op.out.strides[1] = 1;
    CHECK(vt->execute(0, &op) == PT_OK);
    float sum = 0;
    CHECK(vt->copy_d2h(0, &sum, a, 0, sizeof sum, false) == PT_OK);
    CHECK(sum == (float)(N * (N - 1) / 2 + 2 * N));

    /* MATMUL [1, 2, 3] x [1, 3, 2], the second operand a transposed view. */
    float A[6] = {1, 2, 3, 4, 5, 6}, Bt[6] = {1, 0, -1, 2, 1, 0}; /* B = Bt^T: [[1,2],[0,1],[-1,0]] */
    float C[4] = {0};
    CHECK(vt->copy_h2d(0, a, 0, A, sizeof A, false) == PT_OK);
    CHECK(vt->copy_h2d(0, b, 0, Bt, sizeof Bt, false) == PT_OK);
    memset(&op, 0, sizeof op);
    op.kind = PT_OP_MATMUL;
    op.dtype = PT_F32;
    op.n_inputs = 2;
    pt_operand *x = &op.in[0], *y = &op.in[1], *z = &op.out;
    x->buf = a;
    x->dtype = PT_F32;
    x->ndim = 3;
    x->shape[0] = 1;
    x->shape[1] = 2;
    x->shape[2] = 3;
    x->strides[0] = 6;
    x->strides[1] = 3;
    x->strides[2] = 1;
    *y = *x;
    y->buf = b;
    y->shape[1] = 3;
    y->shape[2] = 2;
    y->strides[1] = 1; /* column-major: element (k, n) at k + 3 n */
    y->strides[2] = 3;
    *z = *x;
    z->buf = c;
    z->shape[1] = 2;
    z->shape[2] = 2;
    z->strides[0] = 4;
    z->strides[1] = 2;
    CHECK(vt->execute(0, &op) == PT_OK);
    CHECK(vt->copy_d2h(0, C, c, 0, sizeof C, false) == PT_OK);
    CHECK(C[0] == -2 && C[1] == 4 && C[2] == -2 && C[3] == 13);

    vt->free(0, a);
    vt->free(0, b);
    vt->free(0, c);
    vt->host_free(0, pinned);
}

/* usage: test_cuda_plugin [plugin file] (default: the one built beside it) */
int main(int argc, char **argv) {
    const char *file = argc > 1 ? argv[1] : PTCU_PLUGIN_FILE;
    void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("FAIL: dlopen(%s): %s\n0 passed, 1 failed\n", file, dlerror());
        return 1;
    }
    pt_backend_entry_fn entry = (pt_backend_entry_fn)dlsym(h, PT_BACKEND_ENTRY_SYMBOL);
    CHECK(entry != NULL);
    if (!entry) return 1;
    /* No device_alloc: the plugin falls back to cudaMalloc for its scratch. */
    pt_host_api host = {sizeof(pt_host_api), PT_BACKEND_ABI_VERSION, set_error, logger, NULL, NULL, NULL, NULL};
    CHECK(entry(&host, PT_BACKEND_ABI_VERSION + 1) == NULL);
    const pt_backend_vtable *vt = entry(&host, PT_BACKEND_ABI_VERSION);
    CHECK(vt != NULL);
    if (!vt) return 1;
    CHECK(vt->struct_size == sizeof(pt_backend_vtable) && vt->abi_version == PT_BACKEND_ABI_VERSION);
    CHECK(strcmp(vt->name, "cuda") == 0 && !vt->host_visible);
    CHECK(vt->init && vt->shutdown && vt->device_count && vt->unavailable_reason && vt->device_info &&
          vt->alloc && vt->free && vt->memory_info && vt->host_alloc && vt->host_free && vt->copy_h2d &&
          vt->copy_d2h && vt->copy_d2d && vt->copy_peer && vt->supports && vt->execute && vt->synchronize);
    CHECK(vt->init() == PT_OK);
    const int n = vt->device_count();
    printf("device_count: %d\n", n);
    if (n == 0) {
        const char *reason = vt->unavailable_reason();
        printf("unavailable_reason: %s\n", reason ? reason : "(null)");
        CHECK(reason != NULL && reason[0] != '\0');
        void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!driver) {
            CHECK(strstr(reason, "libcuda.so.1") != NULL);
            CHECK(strstr(reason, "cudaGetDeviceCount returned") != NULL);
        } else {
            dlclose(driver);
        }
    } else {
        check_contexts_and_markers(vt, h, n);
        check_device(vt);
    }
    check_supports(vt);
    check_attention_supports(vt);
    vt->shutdown();
    dlclose(h);
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
