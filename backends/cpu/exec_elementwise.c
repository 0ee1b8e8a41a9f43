/* libportable cpu backend — element-wise arithmetic, comparisons, unary
 * math, WHERE and AXPY.
 *
 * Each op is a scalar function per dtype (below), turned into row kernels by
 * the ROW macros; strided.c walks the operands and calls a row kernel per
 * row. Row kernels have straight loops for the contiguous and the
 * scalar-broadcast cases so the compiler vectorises them ("omp simd" also
 * says an output that aliases an input exactly, as AXPY's does, is fine).
 *
 * exp, log, tanh, sigmoid, sin, cos and pow go to vecmath (SLEEF's 1.0-ULP
 * vector functions for the CPU's widest vector unit, vecmath.h): a
 * contiguous row in one call, a strided one gathered into a small buffer.
 *
 * Integer semantics never trap: add/sub/mul/neg/abs wrap (computed in the
 * unsigned twin type, so no signed overflow exists), division truncates,
 * x / 0 == 0, and INT_MIN / -1 wraps to INT_MIN. Floats follow IEEE-754;
 * maximum/minimum propagate NaN; relu keeps NaN. */
#include "cpu_internal.h"
#include "vecmath.h"

/* ---- Scalar functions: name_<dtype>(x[, y]) ---- */

#define PT_CPU_FLOAT_OPS(S, T, F)                                                              \
    static inline T add_##S(T x, T y) { return x + y; }                                       \
    static inline T sub_##S(T x, T y) { return x - y; }                                       \
    static inline T mul_##S(T x, T y) { return x * y; }                                       \
    static inline T div_##S(T x, T y) { return x / y; }                                       \
    static inline T maximum_##S(T x, T y) { return (x > y || x != x) ? x : y; }               \
    static inline T minimum_##S(T x, T y) { return (x < y || x != x) ? x : y; }               \
    static inline T neg_##S(T x) { return -x; }                                               \
    static inline T abs_##S(T x) { return fabs##F(x); }                                       \
    static inline T relu_##S(T x) { return x < (T)0 ? (T)0 : x; }                             \
    static inline T sqrt_##S(T x) { return sqrt##F(x); }

#define PT_CPU_SIGNED_OPS(S, T, U)                                                             \
    static inline T add_##S(T x, T y) { return (T)((U)x + (U)y); }                            \
    static inline T sub_##S(T x, T y) { return (T)((U)x - (U)y); }                            \
    static inline T mul_##S(T x, T y) { return (T)((U)x * (U)y); }                            \
    static inline T div_##S(T x, T y) {                                                       \
        if (y == 0) return 0;                                                                 \
        if (y == -1) return (T)((U)0 - (U)x); /* INT_MIN / -1 wraps instead of trapping */    \
        return (T)(x / y);                                                                    \
    }                                                                                         \
    static inline T maximum_##S(T x, T y) { return x > y ? x : y; }                           \
    static inline T minimum_##S(T x, T y) { return x < y ? x : y; }                           \
    static inline T neg_##S(T x) { return (T)((U)0 - (U)x); }                                 \
    static inline T abs_##S(T x) { return x < 0 ? (T)((U)0 - (U)x) : x; }                     \
    static inline T relu_##S(T x) { return x < 0 ? (T)0 : x; }

/* u8 promotes to int, so + - * cannot overflow before the wrap to 8 bits. */
#define PT_CPU_UNSIGNED_OPS(S, T)                                                              \
    static inline T add_##S(T x, T y) { return (T)(x + y); }                                  \
    static inline T sub_##S(T x, T y) { return (T)(x - y); }                                  \
    static inline T mul_##S(T x, T y) { return (T)((unsigned)x * (unsigned)y); }              \
    static inline T div_##S(T x, T y) { return y == 0 ? (T)0 : (T)(x / y); }                  \
    static inline T maximum_##S(T x, T y) { return x > y ? x : y; }                           \
    static inline T minimum_##S(T x, T y) { return x < y ? x : y; }                           \
    static inline T neg_##S(T x) { return (T)(0u - x); }                                      \
    static inline T abs_##S(T x) { return x; }                                                \
    static inline T relu_##S(T x) { return x; }

PT_CPU_FLOAT_OPS(f32, float, f)
PT_CPU_FLOAT_OPS(f64, double, )
PT_CPU_SIGNED_OPS(i32, int32_t, uint32_t)
PT_CPU_SIGNED_OPS(i64, int64_t, uint64_t)
PT_CPU_UNSIGNED_OPS(u8, uint8_t)

/* ---- Row kernels ----
 * EXPR computes one output from x (input 0), y (input 1) and sc (the op's
 * scalar in the input dtype). */

#define PT_CPU_ROW1(NAME, TO, TI, S, EXPR)                                                     \
    static void NAME(int64_t n, char *const *p, const int64_t *st, const pt_cpu_scalar *scp) { \
        TO *o = (TO *)p[0];                                                                   \
        const TI *a = (const TI *)p[1];                                                       \
        const TI sc = scp[0].S, sc2 = scp[1].S;                                               \
        (void)sc;                                                                             \
        (void)sc2;                                                                            \
        const int64_t so = st[0], sa = st[1];                                                 \
        if (so == 1 && sa == 1) {                                                             \
            _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) {                             \
                TI x = a[i];                                                                  \
                o[i] = (EXPR);                                                                \
            }                                                                                 \
        } else {                                                                              \
            for (int64_t i = 0; i < n; ++i) {                                                 \
                TI x = a[i * sa];                                                             \
                o[i * so] = (EXPR);                                                           \
            }                                                                                 \
        }                                                                                     \
    }

#define PT_CPU_ROW2(NAME, TO, TI, S, EXPR)                                                     \
    static void NAME(int64_t n, char *const *p, const int64_t *st, const pt_cpu_scalar *scp) { \
        TO *o = (TO *)p[0];                                                                   \
        const TI *a = (const TI *)p[1];                                                       \
        const TI *b = (const TI *)p[2];                                                       \
        const TI sc = scp[0].S, sc2 = scp[1].S;                                               \
        (void)sc;                                                                             \
        (void)sc2;                                                                            \
        const int64_t so = st[0], sa = st[1], sb = st[2];                                     \
        if (so == 1 && sa == 1 && sb == 1) {                                                  \
            _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) {                             \
                TI x = a[i], y = b[i];                                                        \
                o[i] = (EXPR);                                                                \
            }                                                                                 \
        } else if (so == 1 && sa == 1 && sb == 0) {                                           \
            const TI y = b[0];                                                                \
            _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) {                             \
                TI x = a[i];                                                                  \
                o[i] = (EXPR);                                                                \
            }                                                                                 \
        } else if (so == 1 && sa == 0 && sb == 1) {                                           \
            const TI x = a[0];                                                                \
            _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) {                             \
                TI y = b[i];                                                                  \
                o[i] = (EXPR);                                                                \
            }                                                                                 \
        } else {                                                                              \
            for (int64_t i = 0; i < n; ++i) {                                                 \
                TI x = a[i * sa], y = b[i * sb];                                              \
                o[i * so] = (EXPR);                                                           \
            }                                                                                 \
        }                                                                                     \
    }

/* where copies bit patterns, so one kernel per element size serves every dtype. */
#define PT_CPU_WHERE_ROW(NAME, T)                                                              \
    static void NAME(int64_t n, char *const *p, const int64_t *st, const pt_cpu_scalar *scp) { \
        (void)scp;                                                                            \
        T *o = (T *)p[0];                                                                     \
        const uint8_t *c = (const uint8_t *)p[1];                                             \
        const T *a = (const T *)p[2];                                                         \
        const T *b = (const T *)p[3];                                                         \
        const int64_t so = st[0], sc = st[1], sa = st[2], sb = st[3];                         \
        if (so == 1 && sc == 1 && sa == 1 && sb == 1) {                                       \
            _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? a[i] : b[i];    \
        } else if (so == 1 && sc == 1 && sa == 1 && sb == 0) {                                \
            const T y = b[0];                                                                 \
            _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? a[i] : y;       \
        } else if (so == 1 && sc == 1 && sa == 0 && sb == 1) {                                \
            const T x = a[0];                                                                 \
            _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? x : b[i];       \
        } else {                                                                              \
            for (int64_t i = 0; i < n; ++i) o[i * so] = c[i * sc] ? a[i * sa] : b[i * sb];    \
        }                                                                                     \
    }

/* One instantiation per (op, dtype) the backend supports. */
#define PT_CPU_BINARY(OP, S, T) PT_CPU_ROW2(OP##_##S##_row, T, T, S, OP##_##S(x, y))
#define PT_CPU_UNARY(OP, S, T) PT_CPU_ROW1(OP##_##S##_row, T, T, S, OP##_##S(x))
#define PT_CPU_COMPARE(S, T)                                                                   \
    PT_CPU_ROW2(eq_##S##_row, uint8_t, T, S, (uint8_t)(x == y))                                \
    PT_CPU_ROW2(lt_##S##_row, uint8_t, T, S, (uint8_t)(x < y))                                 \
    PT_CPU_ROW2(gt_##S##_row, uint8_t, T, S, (uint8_t)(x > y))                                 \
    PT_CPU_ROW2(le_##S##_row, uint8_t, T, S, (uint8_t)(x <= y))                                \
    PT_CPU_ROW2(ge_##S##_row, uint8_t, T, S, (uint8_t)(x >= y))                                \
    PT_CPU_ROW2(ne_##S##_row, uint8_t, T, S, (uint8_t)(x != y))
/* The ops every dtype has. */
#define PT_CPU_COMMON(S, T)                                                                    \
    PT_CPU_BINARY(add, S, T)                                                                   \
    PT_CPU_BINARY(sub, S, T)                                                                   \
    PT_CPU_BINARY(mul, S, T)                                                                   \
    PT_CPU_BINARY(div, S, T)                                                                   \
    PT_CPU_BINARY(maximum, S, T)                                                               \
    PT_CPU_BINARY(minimum, S, T)                                                               \
    PT_CPU_COMPARE(S, T)                                                                       \
    PT_CPU_ROW1(add_scalar_##S##_row, T, T, S, add_##S(x, sc))                                 \
    PT_CPU_ROW1(mul_scalar_##S##_row, T, T, S, mul_##S(x, sc))                                 \
    PT_CPU_UNARY(neg, S, T)                                                                    \
    PT_CPU_UNARY(abs, S, T)                                                                    \
    PT_CPU_UNARY(relu, S, T)                                                                   \
    PT_CPU_ROW1(clamp_##S##_row, T, T, S, minimum_##S(maximum_##S(x, sc), sc2))               \
    PT_CPU_ROW2(axpy_##S##_row, T, T, S, add_##S(x, mul_##S(sc, y)))

/* Elements gathered per vecmath call on a strided row. */
#define PT_CPU_VM_BUF 256

/* A unary vecmath op: the contiguous row in one call; a strided one through
 * a stack buffer (in place, which vecmath allows). */
#define PT_CPU_VM_UNARY(OP, VMOP, S, T)                                                        \
    static void OP##_##S##_row(int64_t n, char *const *p, const int64_t *st,                  \
                               const pt_cpu_scalar *scp) {                                    \
        (void)scp;                                                                            \
        T *o = (T *)p[0];                                                                     \
        const T *a = (const T *)p[1];                                                         \
        const int64_t so = st[0], sa = st[1];                                                 \
        const pt_cpu_vm_##S##_fn f = pt_cpu_vm.S[VMOP];                                       \
        if (so == 1 && sa == 1) {                                                             \
            f(n, o, a);                                                                       \
            return;                                                                           \
        }                                                                                     \
        T buf[PT_CPU_VM_BUF];                                                                 \
        for (int64_t i = 0; i < n; i += PT_CPU_VM_BUF) {                                      \
            const int64_t m = n - i < PT_CPU_VM_BUF ? n - i : PT_CPU_VM_BUF;                  \
            for (int64_t j = 0; j < m; ++j) buf[j] = a[(i + j) * sa];                         \
            f(m, buf, buf);                                                                   \
            for (int64_t j = 0; j < m; ++j) o[(i + j) * so] = buf[j];                         \
        }                                                                                     \
    }

/* pow: vecmath takes input strides of 0 or 1 with a contiguous output;
 * anything else goes through buffers. */
#define PT_CPU_VM_POW(S, T)                                                                    \
    static void pow_##S##_row(int64_t n, char *const *p, const int64_t *st,                   \
                              const pt_cpu_scalar *scp) {                                     \
        (void)scp;                                                                            \
        T *o = (T *)p[0];                                                                     \
        const T *a = (const T *)p[1], *b = (const T *)p[2];                                   \
        const int64_t so = st[0], sa = st[1], sb = st[2];                                     \
        if (so == 1 && (sa == 0 || sa == 1) && (sb == 0 || sb == 1)) {                        \
            pt_cpu_vm.pow_##S(n, o, a, sa, b, sb);                                            \
            return;                                                                           \
        }                                                                                     \
        T bx[PT_CPU_VM_BUF], by[PT_CPU_VM_BUF];                                               \
        for (int64_t i = 0; i < n; i += PT_CPU_VM_BUF) {                                      \
            const int64_t m = n - i < PT_CPU_VM_BUF ? n - i : PT_CPU_VM_BUF;                  \
            for (int64_t j = 0; j < m; ++j) {                                                 \
                bx[j] = a[(i + j) * sa];                                                      \
                by[j] = b[(i + j) * sb];                                                      \
            }                                                                                 \
            pt_cpu_vm.pow_##S(m, bx, bx, 1, by, 1);                                           \
            for (int64_t j = 0; j < m; ++j) o[(i + j) * so] = bx[j];                          \
        }                                                                                     \
    }

/* gelu through erfc, not 1 + erf: for x << 0 the sum cancels to noise
 * while erfc keeps Phi(x) to full relative precision. */
static inline float gelu_f32(float x) { return x * 0.5f * erfcf(-x * 0.70710678118654752f); }
static inline double gelu_f64(double x) { return x * 0.5 * erfc(-x * 0.70710678118654752440); }
static inline float gelu_grad_f32(float x) {
    return 0.5f * erfcf(-x * 0.70710678118654752f) + x * 0.39894228040143268f * expf(-0.5f * x * x);
}
static inline double gelu_grad_f64(double x) {
    return 0.5 * erfc(-x * 0.70710678118654752440) + x * 0.39894228040143267794 * exp(-0.5 * x * x);
}

/* Transcendental functions: floating point only. sqrt stays a compiler-
 * vectorised loop (-fno-math-errno makes it one instruction per vector). */
#define PT_CPU_FLOAT_ONLY(S, T)                                                                \
    PT_CPU_VM_POW(S, T)                                                                        \
    PT_CPU_VM_UNARY(exp, PT_CPU_VM_EXP, S, T)                                                  \
    PT_CPU_VM_UNARY(log, PT_CPU_VM_LOG, S, T)                                                  \
    PT_CPU_UNARY(sqrt, S, T)                                                                   \
    PT_CPU_VM_UNARY(sigmoid, PT_CPU_VM_SIGMOID, S, T)                                          \
    PT_CPU_VM_UNARY(tanh, PT_CPU_VM_TANH, S, T)                                                \
    PT_CPU_VM_UNARY(sin, PT_CPU_VM_SIN, S, T)                                                  \
    PT_CPU_VM_UNARY(cos, PT_CPU_VM_COS, S, T)                                                  \
    PT_CPU_UNARY(gelu, S, T)                                                                   \
    PT_CPU_UNARY(gelu_grad, S, T)

PT_CPU_COMMON(f32, float)
PT_CPU_COMMON(f64, double)
PT_CPU_COMMON(i32, int32_t)
PT_CPU_COMMON(i64, int64_t)
PT_CPU_COMMON(u8, uint8_t)
PT_CPU_FLOAT_ONLY(f32, float)
PT_CPU_FLOAT_ONLY(f64, double)
PT_CPU_WHERE_ROW(where_1_row, uint8_t)
PT_CPU_WHERE_ROW(where_2_row, uint16_t)
PT_CPU_WHERE_ROW(where_4_row, uint32_t)
PT_CPU_WHERE_ROW(where_8_row, uint64_t)

#define PT_CPU_ALL_DTYPES(OP)                                                                  \
    {[PT_F32] = OP##_f32_row, [PT_F64] = OP##_f64_row, [PT_I32] = OP##_i32_row,               \
     [PT_I64] = OP##_i64_row, [PT_U8] = OP##_u8_row}
#define PT_CPU_FLOAT_DTYPES(OP) {[PT_F32] = OP##_f32_row, [PT_F64] = OP##_f64_row}

static const pt_cpu_row_fn ew_rows[PT_OP_COUNT][PT_DTYPE_COUNT] = {
    [PT_OP_ADD] = PT_CPU_ALL_DTYPES(add),
    [PT_OP_SUB] = PT_CPU_ALL_DTYPES(sub),
    [PT_OP_MUL] = PT_CPU_ALL_DTYPES(mul),
    [PT_OP_DIV] = PT_CPU_ALL_DTYPES(div),
    [PT_OP_POW] = PT_CPU_FLOAT_DTYPES(pow),
    [PT_OP_MAXIMUM] = PT_CPU_ALL_DTYPES(maximum),
    [PT_OP_MINIMUM] = PT_CPU_ALL_DTYPES(minimum),
    [PT_OP_EQ] = PT_CPU_ALL_DTYPES(eq),
    [PT_OP_LT] = PT_CPU_ALL_DTYPES(lt),
    [PT_OP_GT] = PT_CPU_ALL_DTYPES(gt),
    [PT_OP_ADD_SCALAR] = PT_CPU_ALL_DTYPES(add_scalar),
    [PT_OP_MUL_SCALAR] = PT_CPU_ALL_DTYPES(mul_scalar),
    [PT_OP_NEG] = PT_CPU_ALL_DTYPES(neg),
    [PT_OP_ABS] = PT_CPU_ALL_DTYPES(abs),
    [PT_OP_EXP] = PT_CPU_FLOAT_DTYPES(exp),
    [PT_OP_LOG] = PT_CPU_FLOAT_DTYPES(log),
    [PT_OP_SQRT] = PT_CPU_FLOAT_DTYPES(sqrt),
    [PT_OP_RELU] = PT_CPU_ALL_DTYPES(relu),
    [PT_OP_SIGMOID] = PT_CPU_FLOAT_DTYPES(sigmoid),
    [PT_OP_TANH] = PT_CPU_FLOAT_DTYPES(tanh),
    [PT_OP_AXPY] = PT_CPU_ALL_DTYPES(axpy),
    [PT_OP_SIN] = PT_CPU_FLOAT_DTYPES(sin),
    [PT_OP_COS] = PT_CPU_FLOAT_DTYPES(cos),
    [PT_OP_CLAMP] = PT_CPU_ALL_DTYPES(clamp),
    [PT_OP_LE] = PT_CPU_ALL_DTYPES(le),
    [PT_OP_GE] = PT_CPU_ALL_DTYPES(ge),
    [PT_OP_NE] = PT_CPU_ALL_DTYPES(ne),
    [PT_OP_GELU] = PT_CPU_FLOAT_DTYPES(gelu),
    [PT_OP_GELU_GRAD] = PT_CPU_FLOAT_DTYPES(gelu_grad),
};

/* ---- Descriptor checks and dispatch ---- */

/* Per-element cost decides how small an op may be and still go parallel. */
static int64_t ew_grain(pt_op_kind k, pt_dtype t) {
    switch (k) {
    case PT_OP_POW: case PT_OP_EXP: case PT_OP_LOG: case PT_OP_SIGMOID: case PT_OP_TANH:
    case PT_OP_SIN: case PT_OP_COS: case PT_OP_GELU: case PT_OP_GELU_GRAD:
        return PT_CPU_GRAIN_COSTLY;
    case PT_OP_DIV: return (t == PT_F32 || t == PT_F64) ? PT_CPU_GRAIN_CHEAP : PT_CPU_GRAIN_COSTLY;
    default: return PT_CPU_GRAIN_CHEAP;
    }
}

static bool same_shape(const pt_operand *a, const pt_operand *b) {
    if (a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; ++d)
        if (a->shape[d] != b->shape[d]) return false;
    return true;
}

pt_status pt_cpu_elementwise(const pt_op *op, bool run) {
    const pt_op_kind k = op->kind;
    const pt_dtype t = op->dtype;
    const pt_op_info *info = pt_op_info_of(k); /* the dispatcher sends only known kinds */
    const int arity = info->arity;
    if (op->n_inputs != arity) return pt_cpu_bad_op(op, "wrong number of inputs");
    if (op->out.ndim < 0 || op->out.ndim > PT_MAX_DIMS) return pt_cpu_bad_op(op, "bad ndim");
    for (int i = 0; i < arity; ++i)
        if (!same_shape(&op->out, &op->in[i]))
            return pt_cpu_bad_op(op, "an input's shape differs from the output's");

    /* Expected dtypes: comparisons write u8 (op_table.h), where's condition is u8. */
    if (op->out.dtype != pt_op_result_dtype(k, t))
        return pt_cpu_bad_op(op, "output dtype does not match the op");
    for (int i = 0; i < arity; ++i) {
        pt_dtype want = (k == PT_OP_WHERE && i == 0) ? PT_U8 : t;
        if (op->in[i].dtype != want) return pt_cpu_bad_op(op, "input dtype does not match the op");
    }

    pt_cpu_row_fn fn = NULL;
    if ((unsigned)t < PT_DTYPE_COUNT) {
        if (k == PT_OP_WHERE) {
            size_t es = pt_dtype_table_size(t);
            fn = es == 1 ? where_1_row : es == 2 ? where_2_row : es == 4 ? where_4_row : where_8_row;
        } else {
            fn = ew_rows[k][t];
        }
    }
    if (!fn) return pt_cpu_unsupported(op, t);
    if (!run) return PT_OK;

    pt_cpu_scalar sc[2] = {{.f64 = 0}, {.f64 = 0}}; /* scalar, scalar2 */
    if (k == PT_OP_ADD_SCALAR || k == PT_OP_MUL_SCALAR || k == PT_OP_AXPY || k == PT_OP_CLAMP)
        pt_cpu_scalar_from_double(op->scalar, &sc[0]);
    if (k == PT_OP_CLAMP) pt_cpu_scalar_from_double(op->scalar2, &sc[1]);
    const int64_t grain = ew_grain(k, t);
    if (op->out.ndim == 1 && op->out.shape[0] < grain) {
        /* Small 1-D work (what the core's coalescing makes of any contiguous
         * op): one direct row call, skipping the N-d iterator's set-up,
         * which would cost more than adding ten numbers. */
        char *p[PT_CPU_MAX_OPERANDS];
        int64_t st[PT_CPU_MAX_OPERANDS];
        p[0] = pt_cpu_base(&op->out);
        st[0] = op->out.strides[0];
        for (int i = 0; i < arity; ++i) {
            p[i + 1] = pt_cpu_base(&op->in[i]);
            st[i + 1] = op->in[i].strides[0];
        }
        fn(op->out.shape[0], p, st, sc);
        return PT_OK;
    }
    pt_cpu_iter it;
    pt_cpu_iter_init(&it, &op->out, arity, op->in);
    pt_cpu_iter_run(&it, fn, sc, grain);
    return PT_OK;
}
