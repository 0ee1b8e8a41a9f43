/* Fuzz target: an interpreter of API-call sequences on the cpu backend.
 *
 * Each input decodes to at most MAX_CALLS calls. The first byte of a call
 * picks the operation, the following bytes its operands: which of SLOTS
 * tensor slots to read and write, dtypes, small shapes (extents 0..4, now
 * and then a hostile one: -1, -2, 2^32, 2^40, 2^62 + 1, INT64_MAX), dims,
 * scalars. Input that runs out reads as zeros. The calls: creation
 * (empty/zeros/ones/full/arange/rand/randn/from_data), views (reshape,
 * transpose, permute, narrow, expand, detach), element-wise unary, binary
 * and where, comparisons, reductions, softmax, norms, matmul, cast,
 * contiguous, cat/stack, gather, one_hot, in-place copy/axpy/fill, reading
 * back, retain/release, scopes (begin, keep, end, always well nested),
 * no-grad, requires-grad, backward, grad, zero_grad.
 *
 * What it checks: no crash, leak or sanitizer report; an op that returns
 * NULL (or a failing status) leaves a status and a message naming the
 * function; a result's numel agrees with its shape. Ops may fail: the
 * operands are mostly nonsense. Everything is released at the end of each
 * input (scopes ended, no-grad closed), so LeakSanitizer sees a clean slate.
 *
 * Tensors with more than MAX_NUMEL elements are dropped on arrival and
 * creations that would allocate more are not made: the fuzzer looks for
 * wrong answers to bad arguments, not for slow big ones. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "portable/portable.h"

enum { SLOTS = 16, MAX_CALLS = 64, MAX_NUMEL = 256, MAX_SCOPES = 4, MAX_NDIM = 4, PENDING = 256 };

typedef struct reader {
    const uint8_t *p;
    size_t n, at;
} reader;

static unsigned byte(reader *r) { return r->at < r->n ? r->p[r->at++] : 0; }

/* A tensor the interpreter holds and who owns the reference: depth 0 is
 * the interpreter itself (released with pt_release), depth d > 0 the scope
 * begun at that depth (released by its pt_scope_end). */
typedef struct slot {
    pt_tensor *t;
    int depth;
} slot;

typedef struct state {
    reader r;
    slot s[SLOTS];
    pt_scope scopes[MAX_SCOPES];
    int depth;    /* scopes open */
    int no_grad;  /* no-grad sections open */
    pt_tensor *pending[PENDING]; /* our references to release when no scope is open */
    int n_pending;
    pt_device *cpu;
} state;

/* FUZZ_CALLS_TRACE=1 prints each call and its outcome (to check what a
 * corpus file does). */
static int tracing = -1;

static bool trace_on(void) {
    if (tracing < 0) tracing = getenv("FUZZ_CALLS_TRACE") != NULL;
    return tracing;
}

/* ---- invariants ---- */

static void die(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_calls: contract broken: %s (%s)\n", what, detail ? detail : "");
    abort();
}

/* A failure must leave a status and a message that names a function. */
static void check_failure(const char *call) {
    pt_status s = pt_last_status();
    const char *msg = pt_last_error();
    if (s == PT_OK) die("a call failed with no status set", call);
    if (!msg || !msg[0]) die("a call failed with an empty message", call);
    if (!strstr(msg, "pt_")) die("the message does not name the function", msg);
}

static int64_t checked_numel(pt_tensor *t, const char *call) {
    int nd = pt_tensor_ndim(t);
    if (nd < 0 || nd > PT_MAX_DIMS) die("ndim out of range", call);
    const int64_t *shape = pt_tensor_shape(t);
    int64_t n = 1;
    bool overflow = false;
    for (int d = 0; d < nd; ++d) {
        if (shape[d] < 0) die("negative extent", call);
        if (shape[d] && n > INT64_MAX / shape[d]) overflow = true;
        if (!overflow) n *= shape[d];
    }
    bool empty = false;
    for (int d = 0; d < nd; ++d) empty = empty || shape[d] == 0;
    if (empty) n = 0, overflow = false;
    if (overflow) die("a tensor whose shape's element count overflows int64", call);
    if (pt_tensor_numel(t) != n) die("numel disagrees with the shape", call);
    return n;
}

/* ---- slots ---- */

static pt_tensor *get(state *st) {
    slot *s = &st->s[byte(&st->r) % SLOTS];
    return s->t;
}

/* Lets go of a slot's reference. A scope-owned one is the scope's to
 * release. Our own are released at once outside scopes, but only once every
 * scope has ended while one is open: pt_release of a reference the caller
 * owns (from pt_retain, or made before the scope) takes away the record of
 * an open scope that the same tensor was also returned to (pt_contiguous,
 * pt_cast, pt_to, pt_grad can return their argument), and the scope's
 * reference then leaks (core/tensor/tensor.c pt_release). */
static void drop(state *st, slot *s) {
    if (s->t && s->depth == 0) {
        if (st->depth == 0 || st->n_pending == PENDING)
            pt_release(s->t);
        else
            st->pending[st->n_pending++] = s->t;
    }
    s->t = NULL;
}

static void release_pending(state *st) {
    while (st->n_pending > 0) pt_release(st->pending[--st->n_pending]);
}

/* Stores a call's result (a new reference owned by the innermost scope, or
 * by us outside any) in the slot the next byte names. */
static void put(state *st, pt_tensor *t, const char *call) {
    unsigned where = byte(&st->r) % SLOTS;
    if (!t) {
        check_failure(call);
        if (trace_on()) fprintf(stderr, "  %s -> %s\n", call, pt_last_error());
        pt_clear_error();
        return;
    }
    if (trace_on()) {
        char text[96];
        fprintf(stderr, "  %s -> slot %u: %s\n", call, where, pt_tensor_describe(t, text, sizeof text));
    }
    slot fresh = {t, st->depth};
    if (checked_numel(t, call) > MAX_NUMEL) {
        drop(st, &fresh);
        return;
    }
    drop(st, &st->s[where]);
    st->s[where] = fresh;
}

static void status_ok_or_reported(pt_status s, const char *call) {
    if (trace_on()) fprintf(stderr, "  %s -> %s\n", call, s ? pt_last_error() : "ok");
    if (s == PT_OK) return;
    if (pt_last_status() != s) die("a returned status differs from pt_last_status", call);
    check_failure(call);
    pt_clear_error();
}

/* ---- operands ---- */

static pt_dtype dtype(reader *r) {
    unsigned b = byte(r) % 7;
    return b < 5 ? (pt_dtype)b : b == 5 ? PT_F32 : (pt_dtype)(40 + (int)byte(r)); /* 40+: invalid */
}

/* FUZZ_CALLS_NO_HUGE=1 leaves out the extents from 2^32 up, to look for
 * other bugs while a shape-overflow one is open. */
static int no_huge = -1;

static int64_t extent(reader *r) {
    static const int64_t odd[] = {-1, -2, INT64_MAX, (INT64_C(1) << 62) + 1, INT64_C(1) << 32, INT64_C(1) << 40,
                                  INT64_MIN, 7};
    if (no_huge < 0) no_huge = getenv("FUZZ_CALLS_NO_HUGE") != NULL;
    unsigned b = byte(r);
    if (b >= 248 && no_huge && odd[b - 248] > 7) return 3;
    return b >= 248 ? odd[b - 248] : (int64_t)(b % 5);
}

static int ndim(reader *r) {
    unsigned b = byte(r);
    return b >= 250 ? (int)(b - 250) * 3 - 1 : (int)(b % (MAX_NDIM + 1)); /* -1, 2, 5, 8, 11, 14 now and then */
}

static int read_shape(reader *r, int64_t *shape) {
    int nd = ndim(r);
    for (int d = 0; d < nd && d < PT_MAX_DIMS + 8; ++d) shape[d] = extent(r);
    return nd;
}

/* Small dims, negative ones and PT_ALL now and then. */
static int dim(reader *r) {
    unsigned b = byte(r);
    return b == 255 ? PT_ALL : b >= 240 ? (int)b - 230 : (int)(b % 9) - 4;
}

static double scalar(reader *r) {
    static const double odd[] = {NAN, INFINITY, -INFINITY, 1e300, -1e300, 4294967296.0, -0.0, 1e-310};
    unsigned b = byte(r);
    return b >= 248 ? odd[b - 248] : ((double)b - 100.0) / 8.0;
}

/* The element count of a valid shape, or -1 when the shape is invalid (bad
 * ndim, a negative extent) or its count overflows int64: the library must
 * refuse those. */
static int64_t shape_numel(int nd, const int64_t *shape) {
    if (nd < 0 || nd > PT_MAX_DIMS) return -1;
    int64_t n = 1;
    bool overflow = false;
    for (int d = 0; d < nd; ++d) {
        if (shape[d] < 0) return -1;
        if (shape[d] == 0) return 0;
        if (n > INT64_MAX / shape[d]) overflow = true;
        if (!overflow) n *= shape[d];
    }
    return overflow ? -1 : n;
}

/* Creations of valid shapes over MAX_NUMEL elements are skipped (real
 * allocations); invalid and overflowing ones are made, to be refused. */
static bool too_big(int nd, const int64_t *shape) { return shape_numel(nd, shape) > MAX_NUMEL; }

/* ---- calls ---- */

enum {
    OP_CREATE, OP_ARANGE, OP_FROM_DATA, OP_RESHAPE, OP_TRANSPOSE, OP_PERMUTE, OP_NARROW, OP_EXPAND,
    OP_UNARY, OP_BINARY, OP_WHERE, OP_SCALAR, OP_CLAMP, OP_REDUCE, OP_NORM_DIMS, OP_SOFTMAX, OP_MATMUL,
    OP_CAST, OP_CONTIGUOUS, OP_CAT, OP_GATHER, OP_ONE_HOT, OP_COPY, OP_AXPY, OP_FILL, OP_READ, OP_RETAIN,
    OP_RELEASE, OP_SCOPE_BEGIN, OP_SCOPE_END, OP_KEEP, OP_NO_GRAD, OP_REQUIRES_GRAD, OP_BACKWARD, OP_GRAD,
    OP_DETACH, OP_LOSS, OP_COUNT
};

static void call(state *st) {
    reader *r = &st->r;
    int64_t shape[PT_MAX_DIMS + 8];
    unsigned op = byte(r) % OP_COUNT;
    if (trace_on()) fprintf(stderr, "call %u at byte %zu\n", op, r->at - 1);
    switch (op) {
    case OP_CREATE: {
        unsigned kind = byte(r) % 7;
        pt_dtype t = dtype(r);
        int nd = read_shape(r, shape);
        double v = scalar(r);
        if (too_big(nd, shape)) return;
        pt_tensor *x = kind == 0   ? pt_empty(st->cpu, t, nd, shape)
                       : kind == 1 ? pt_zeros(st->cpu, t, nd, shape)
                       : kind == 2 ? pt_ones(st->cpu, t, nd, shape)
                       : kind == 3 ? pt_full(st->cpu, t, nd, shape, v)
                       : kind == 4 ? pt_rand(st->cpu, t, nd, shape)
                       : kind == 5 ? pt_randn(st->cpu, t, nd, shape)
                                   : pt_full(st->cpu, t, nd, shape, floor(v));
        /* pt_empty's contents are indeterminate: filled before use. */
        if (x && kind == 0 && pt_fill_(x, v) != PT_OK) {
            check_failure("pt_fill_");
            pt_clear_error();
            slot gone = {x, st->depth};
            drop(st, &gone);
            x = NULL;
            byte(r); /* the slot byte */
            return;
        }
        put(st, x, "create");
        return;
    }
    case OP_ARANGE: {
        pt_dtype t = dtype(r);
        double a = scalar(r), b = scalar(r), step = scalar(r);
        if (isfinite(a) && isfinite(b) && isfinite(step) && step != 0 && fabs((b - a) / step) > MAX_NUMEL) return;
        put(st, pt_arange(st->cpu, t, a, b, step), "pt_arange");
        return;
    }
    case OP_FROM_DATA: {
        pt_dtype t = dtype(r);
        int nd = read_shape(r, shape);
        if (too_big(nd, shape)) return;
        int64_t n = shape_numel(nd, shape);
        if (n < 0) n = 0; /* refused before the data is read */
        uint8_t data[MAX_NUMEL * 8];
        for (int64_t i = 0; i < n * 8; ++i) data[i] = (uint8_t)byte(r);
        /* Any bit pattern is a valid f32/f64/integer (NaNs included). */
        put(st, pt_from_data(st->cpu, t, nd, shape, data), "pt_from_data");
        return;
    }
    case OP_RESHAPE: {
        pt_tensor *x = get(st);
        int nd = read_shape(r, shape);
        if (x) put(st, pt_reshape(x, nd, shape), "pt_reshape");
        return;
    }
    case OP_TRANSPOSE: {
        pt_tensor *x = get(st);
        int a = dim(r), b = dim(r);
        if (x) put(st, pt_transpose(x, a, b), "pt_transpose");
        return;
    }
    case OP_PERMUTE: {
        pt_tensor *x = get(st);
        int perm[PT_MAX_DIMS];
        for (int d = 0; d < PT_MAX_DIMS; ++d) perm[d] = dim(r);
        if (x) put(st, pt_permute(x, perm), "pt_permute");
        return;
    }
    case OP_NARROW: {
        pt_tensor *x = get(st);
        int d = dim(r);
        int64_t start = extent(r), back = (int64_t)(byte(r) % 3), len = extent(r);
        if (start > INT64_MIN + 2) start -= back; /* negative starts too */
        if (x) put(st, pt_narrow(x, d, start, len), "pt_narrow");
        return;
    }
    case OP_EXPAND: {
        pt_tensor *x = get(st);
        int nd = read_shape(r, shape);
        if (x) put(st, pt_expand(x, nd, shape), "pt_expand");
        return;
    }
    case OP_UNARY: {
        pt_tensor *x = get(st);
        static pt_tensor *(*const f[])(pt_tensor *) = {pt_neg,  pt_abs,     pt_exp,  pt_log, pt_sqrt,
                                                       pt_relu, pt_sigmoid, pt_tanh, pt_sin, pt_cos};
        unsigned k = byte(r) % (sizeof f / sizeof f[0]);
        if (x) put(st, f[k](x), "unary op");
        return;
    }
    case OP_BINARY: {
        pt_tensor *a = get(st), *b = get(st);
        static pt_tensor *(*const f[])(pt_tensor *, pt_tensor *) = {
            pt_add, pt_sub, pt_mul, pt_div, pt_pow, pt_maximum, pt_minimum,
            pt_eq,  pt_lt,  pt_gt,  pt_le,  pt_ge,  pt_ne,      pt_mse_loss};
        unsigned k = byte(r) % (sizeof f / sizeof f[0]);
        if (a && b) put(st, f[k](a, b), "binary op");
        return;
    }
    case OP_WHERE: {
        pt_tensor *c = get(st), *a = get(st), *b = get(st);
        if (c && a && b) put(st, pt_where(c, a, b), "pt_where");
        return;
    }
    case OP_SCALAR: {
        pt_tensor *x = get(st);
        bool mul = byte(r) & 1;
        double v = scalar(r);
        if (x) put(st, mul ? pt_mul_scalar(x, v) : pt_add_scalar(x, v), "scalar op");
        return;
    }
    case OP_CLAMP: {
        pt_tensor *x = get(st);
        double lo = scalar(r), hi = scalar(r);
        if (x) put(st, pt_clamp(x, lo, hi), "pt_clamp");
        return;
    }
    case OP_REDUCE: {
        pt_tensor *x = get(st);
        unsigned k = byte(r) % 5;
        int d = dim(r);
        bool keep = byte(r) & 1;
        if (!x) return;
        put(st,
            k == 0   ? pt_sum(x, d, keep)
            : k == 1 ? pt_mean(x, d, keep)
            : k == 2 ? pt_max(x, d, keep)
            : k == 3 ? pt_argmax(x, d, keep)
                     : pt_norm(x),
            "reduction");
        return;
    }
    case OP_NORM_DIMS: {
        pt_tensor *x = get(st);
        int n = (int)(byte(r) % 5) - 1, dims[4];
        for (int i = 0; i < 4; ++i) dims[i] = dim(r);
        if (x) put(st, pt_norm_dims(x, n, n >= 0 ? dims : NULL), "pt_norm_dims");
        return;
    }
    case OP_SOFTMAX: {
        pt_tensor *x = get(st);
        bool log = byte(r) & 1;
        int d = dim(r);
        if (x) put(st, log ? pt_log_softmax(x, d) : pt_softmax(x, d), "softmax");
        return;
    }
    case OP_MATMUL: {
        pt_tensor *a = get(st), *b = get(st);
        /* Work and output are at most numel(a) * numel(b). */
        if (a && b && pt_tensor_numel(a) * pt_tensor_numel(b) <= 4096) put(st, pt_matmul(a, b), "pt_matmul");
        return;
    }
    case OP_CAST: {
        pt_tensor *x = get(st);
        pt_dtype t = dtype(r);
        if (x) put(st, pt_cast(x, t), "pt_cast");
        return;
    }
    case OP_CONTIGUOUS: {
        pt_tensor *x = get(st);
        if (x) put(st, pt_contiguous(x), "pt_contiguous");
        return;
    }
    case OP_CAT: {
        bool stack = byte(r) & 1;
        int n = (int)(byte(r) % 5);
        pt_tensor *xs[4];
        bool all = true;
        for (int i = 0; i < n; ++i) all = (xs[i] = get(st)) != NULL && all;
        int d = dim(r);
        if (all) put(st, stack ? pt_stack(n, xs, d) : pt_cat(n, xs, d), stack ? "pt_stack" : "pt_cat");
        return;
    }
    case OP_GATHER: {
        pt_tensor *x = get(st), *index = get(st);
        int d = dim(r);
        if (x && index) put(st, pt_gather(x, d, index), "pt_gather");
        return;
    }
    case OP_ONE_HOT: {
        pt_tensor *labels = get(st);
        int64_t classes = extent(r);
        pt_dtype t = dtype(r);
        if (labels && classes <= 16 && pt_tensor_numel(labels) * (classes > 0 ? classes : 1) <= MAX_NUMEL)
            put(st, pt_one_hot(labels, classes, t), "pt_one_hot");
        return;
    }
    case OP_COPY: {
        pt_tensor *dst = get(st), *src = get(st);
        if (dst && src) status_ok_or_reported(pt_copy_(dst, src), "pt_copy_");
        return;
    }
    case OP_AXPY: {
        pt_tensor *y = get(st), *x = get(st);
        double a = scalar(r);
        if (x && y) status_ok_or_reported(pt_axpy_(y, a, x), "pt_axpy_");
        return;
    }
    case OP_FILL: {
        pt_tensor *x = get(st);
        double v = scalar(r);
        if (x) status_ok_or_reported(pt_fill_(x, v), "pt_fill_");
        return;
    }
    case OP_READ: {
        pt_tensor *x = get(st);
        unsigned short_by = byte(r) % 3;
        if (!x) return;
        int64_t n = checked_numel(x, "read");
        double buf[MAX_NUMEL];
        size_t need = (size_t)n * pt_dtype_size(pt_tensor_dtype(x));
        if (need > sizeof buf) return;
        status_ok_or_reported(pt_to_host(x, buf, need >= short_by ? need - short_by : 0), "pt_to_host");
        if (n == 1 || short_by == 2) {
            double v = pt_item(x);
            if (isnan(v) && pt_last_status() != PT_OK) check_failure("pt_item");
            pt_clear_error();
        }
        char text[96];
        pt_tensor_describe(x, text, sizeof text);
        return;
    }
    case OP_RETAIN: {
        pt_tensor *x = get(st);
        unsigned where = byte(r) % SLOTS;
        if (!x) return;
        /* pt_retain's reference is the caller's, scope or not. */
        slot *s = &st->s[where];
        pt_tensor *extra = pt_retain(x);
        drop(st, s);
        *s = (slot){extra, 0};
        return;
    }
    case OP_RELEASE: {
        drop(st, &st->s[byte(r) % SLOTS]);
        return;
    }
    case OP_SCOPE_BEGIN: {
        if (st->depth == MAX_SCOPES) return;
        st->scopes[st->depth++] = pt_scope_begin();
        return;
    }
    case OP_SCOPE_END: {
        if (st->depth == 0) return;
        pt_scope_end(st->scopes[--st->depth]);
        for (int i = 0; i < SLOTS; ++i)
            if (st->s[i].t && st->s[i].depth > st->depth) st->s[i].t = NULL; /* released by the scope */
        if (st->depth == 0) release_pending(st);
        return;
    }
    case OP_KEEP: {
        slot *s = &st->s[byte(r) % SLOTS];
        if (s->t && st->depth > 0 && s->depth == st->depth) {
            if (pt_keep(s->t) != s->t) die("pt_keep returned another tensor", NULL);
            s->depth = st->depth - 1;
        }
        return;
    }
    case OP_NO_GRAD: {
        if (byte(r) & 1) {
            pt_no_grad_begin();
            ++st->no_grad;
        } else {
            pt_status s = pt_no_grad_end();
            if (st->no_grad > 0) {
                --st->no_grad;
                status_ok_or_reported(s, "pt_no_grad_end");
                if (s) die("pt_no_grad_end failed with a section open", NULL);
            } else if (s != PT_ERR_INVALID_ARGUMENT) {
                die("pt_no_grad_end without a begin did not fail", NULL);
            } else {
                check_failure("pt_no_grad_end");
                pt_clear_error();
            }
        }
        return;
    }
    case OP_REQUIRES_GRAD: {
        pt_tensor *x = get(st);
        bool on = byte(r) % 4 != 0;
        if (x) status_ok_or_reported(pt_set_requires_grad(x, on), "pt_set_requires_grad");
        return;
    }
    case OP_BACKWARD: {
        pt_tensor *x = get(st);
        if (x) status_ok_or_reported(pt_backward(x), "pt_backward");
        return;
    }
    case OP_GRAD: {
        pt_tensor *x = get(st);
        bool zero = byte(r) % 4 == 0;
        if (!x) return;
        if (zero) {
            status_ok_or_reported(pt_zero_grad(x), "pt_zero_grad");
            return;
        }
        pt_tensor *g = pt_grad(x);
        if (g) put(st, g, "pt_grad");
        else byte(r); /* the slot byte put would have read */
        pt_clear_error();
        return;
    }
    case OP_DETACH: {
        pt_tensor *x = get(st);
        if (x) put(st, pt_detach(x), "pt_detach");
        return;
    }
    case OP_LOSS: {
        pt_tensor *logits = get(st), *labels = get(st);
        if (logits && labels) put(st, pt_cross_entropy(logits, labels), "pt_cross_entropy");
        return;
    }
    }
}

static pt_device *cpu_device(void) {
    static pt_device *cpu;
    if (!cpu) {
        cpu = pt_cpu();
        if (!cpu) {
            fprintf(stderr, "fuzz_calls: no cpu device: %s\n", pt_last_error());
            abort();
        }
    }
    return cpu;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    state st = {.r = {data, size, 0}, .cpu = cpu_device()};
    pt_manual_seed(size);
    pt_clear_error();
    for (int calls = 0; calls < MAX_CALLS && st.r.at < st.r.n; ++calls) call(&st);
    /* Leave nothing behind: our references, then the scopes (innermost
     * first), then the no-grad sections. */
    while (st.depth > 0) pt_scope_end(st.scopes[--st.depth]);
    for (int i = 0; i < SLOTS; ++i) drop(&st, &st.s[i]);
    release_pending(&st);
    for (; st.no_grad > 0; --st.no_grad)
        if (pt_no_grad_end() != PT_OK) die("pt_no_grad_end failed with a section open", pt_last_error());
    pt_clear_error();
    return 0;
}
