/* libportable cpu backend — element-wise arithmetic, comparisons, unary
 * math, WHERE and AXPY.
 *
 * Each op's math is its row of portable/ew_math.h (shared with the OpenCL
 * and CUDA kernels), turned into row kernels per dtype by the ROW macros; strided.c walks the operands and calls a row kernel per
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
#include "internal.h"
#include "portable/ew_math.h"
#include "vecmath.h"

/* ---- Row kernels ----
 * EXPR computes one output from x (input 0), y (input 1), s and s2 (the
 * op's scalars in the input dtype) and T, the input dtype (ew_math.h). */

#define PT_CPU_ROW1(NAME, TO, TI, S, EXPR)                                                     \
    static void NAME(int64_t n, char *const *p, const int64_t *st, const pt_cpu_scalar *scp) { \
        TO *o = (TO *)p[0];                                                                   \
        const TI *a = (const TI *)p[1];                                                       \
        typedef TI T;                                                                         \
        const T s = scp[0].S, s2 = scp[1].S;                                                  \
        (void)s;                                                                              \
        (void)s2;                                                                             \
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
        typedef TI T;                                                                         \
        const T s = scp[0].S, s2 = scp[1].S;                                                  \
        (void)s;                                                                              \
        (void)s2;                                                                             \
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

/* where copies bit patterns, so one kernel per element size serves every
 * dtype. The choice is a mask, not a branch: a condition from data (relu's
 * gradient, y > 0) is random, and the branch the compiler made of the
 * ternary mispredicted on about every other element; masks also vectorise. */
#define PT_CPU_PICK(T, cond, x, y) (((x) & ((T)0 - (T)((cond) != 0))) | ((y) & ~((T)0 - (T)((cond) != 0))))
#define PT_CPU_WHERE_ROW(NAME, T)                                                              \
    static void NAME(int64_t n, char *const *p, const int64_t *st, const pt_cpu_scalar *scp) { \
        (void)scp;                                                                            \
        T *o = (T *)p[0];                                                                     \
        const uint8_t *c = (const uint8_t *)p[1];                                             \
        const T *a = (const T *)p[2];                                                         \
        const T *b = (const T *)p[3];                                                         \
        const int64_t so = st[0], sc = st[1], sa = st[2], sb = st[3];                         \
        if (so == 1 && sc == 1 && sa == 1 && sb == 1) {                                       \
            _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) o[i] = PT_CPU_PICK(T, c[i], a[i], b[i]); \
        } else if (so == 1 && sc == 1 && sa == 1 && sb == 0) {                                \
            const T y = b[0];                                                                 \
            _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) o[i] = PT_CPU_PICK(T, c[i], a[i], y); \
        } else if (so == 1 && sc == 1 && sa == 0 && sb == 1) {                                \
            const T x = a[0];                                                                 \
            _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) o[i] = PT_CPU_PICK(T, c[i], x, b[i]); \
        } else {                                                                              \
            for (int64_t i = 0; i < n; ++i) o[i * so] = PT_CPU_PICK(T, c[i * sc], a[i * sa], b[i * sb]); \
        }                                                                                     \
    }

/* One row kernel per (row of ew_math.h, dtype of its DOMAIN); WHERE copies
 * bits (above). Every dtype: f32 f64 i32 i64 u8; FLOAT: f32 f64. */
#define PT_CPU_DTYPES_ALL(X, ...)                                                              \
    X(f32, float, __VA_ARGS__) X(f64, double, __VA_ARGS__) X(i32, int32_t, __VA_ARGS__)        \
    X(i64, int64_t, __VA_ARGS__) X(u8, uint8_t, __VA_ARGS__)
#define PT_CPU_DTYPES_FLOAT(X, ...) X(f32, float, __VA_ARGS__) X(f64, double, __VA_ARGS__)
#define PT_CPU_ROW_UNARY(S, T, name, EXPR) PT_CPU_ROW1(name##_##S##_row, T, T, S, EXPR)
#define PT_CPU_ROW_BINARY(S, T, name, EXPR) PT_CPU_ROW2(name##_##S##_row, T, T, S, EXPR)
#define PT_CPU_ROW_COMPARE(S, T, name, EXPR)                                                   \
    PT_CPU_ROW2(name##_##S##_row, uint8_t, T, S, (uint8_t)((EXPR) ? 1 : 0))
#define PT_CPU_ROW_WHERE(S, T, name, EXPR)
#define PT_CPU_EW_ROWS(KIND, name, FORM, DOMAIN, EXPR)                                         \
    PT_CPU_DTYPES_##DOMAIN(PT_CPU_ROW_##FORM, name, EXPR)
PT_EW_MATH(PT_CPU_EW_ROWS)

/* Elements gathered per vecmath call on a strided row. */
#define PT_CPU_VM_BUF 256

/* A unary vecmath op: the contiguous row in one call; a strided one through
 * a stack buffer (in place, which vecmath allows). */
#define PT_CPU_VM_UNARY(OP, VMOP, S, T)                                                        \
    static void OP##_vm_##S##_row(int64_t n, char *const *p, const int64_t *st,               \
                                  const pt_cpu_scalar *scp) {                                 \
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
    static void pow_vm_##S##_row(int64_t n, char *const *p, const int64_t *st,                \
                                 const pt_cpu_scalar *scp) {                                  \
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

/* The vectorised functions: exp, log, tanh, sigmoid, sin, cos and pow
 * (PT_CPU_VM_FUNCS, vecmath.h) run through vecmath instead of their
 * scalar rows. */
#define PT_CPU_VM_ROWS(name, KIND, ...)                                                        \
    PT_CPU_VM_UNARY(name, PT_CPU_VM_##KIND, f32, float)                                        \
    PT_CPU_VM_UNARY(name, PT_CPU_VM_##KIND, f64, double)
PT_CPU_VM_FUNCS(PT_CPU_VM_ROWS)
PT_CPU_VM_POW(f32, float)
PT_CPU_VM_POW(f64, double)

/* add, sub, mul and div of floats: contiguous rows at the vecmath level's
 * width (vecmath.h, PT_CPU_VM_ARITH), others through the generic rows. */
#define PT_CPU_VM_ARITH_ROW(name, KIND, S, T)                                                  \
    static void name##_vm_##S##_row(int64_t n, char *const *p, const int64_t *st,             \
                                    const pt_cpu_scalar *scp) {                               \
        if (st[0] == 1 && st[1] == 1 && st[2] == 1)                                           \
            pt_cpu_vm.arith_##S[PT_CPU_VM_##KIND](n, (T *)p[0], (const T *)p[1], (const T *)p[2]); \
        else                                                                                  \
            name##_##S##_row(n, p, st, scp);                                                  \
    }
#define PT_CPU_VM_ARITH_ROWS(name, KIND, OP)                                                   \
    PT_CPU_VM_ARITH_ROW(name, KIND, f32, float)                                                \
    PT_CPU_VM_ARITH_ROW(name, KIND, f64, double)
PT_CPU_VM_ARITH(PT_CPU_VM_ARITH_ROWS)
PT_CPU_WHERE_ROW(where_1_row, uint8_t)
PT_CPU_WHERE_ROW(where_2_row, uint16_t)
PT_CPU_WHERE_ROW(where_4_row, uint32_t)
PT_CPU_WHERE_ROW(where_8_row, uint64_t)

#define PT_CPU_ROWS_ALL(name)                                                                  \
    {[PT_F32] = name##_f32_row, [PT_F64] = name##_f64_row, [PT_I32] = name##_i32_row,          \
     [PT_I64] = name##_i64_row, [PT_U8] = name##_u8_row}
#define PT_CPU_ROWS_FLOAT(name) {[PT_F32] = name##_f32_row, [PT_F64] = name##_f64_row}
#define PT_CPU_ROWS_OF(KIND, name, FORM, DOMAIN, EXPR) PT_CPU_ROWS_OF_##FORM(KIND, name, DOMAIN)
#define PT_CPU_ROWS_OF_UNARY(KIND, name, DOMAIN) [PT_OP_##KIND] = PT_CPU_ROWS_##DOMAIN(name),
#define PT_CPU_ROWS_OF_BINARY PT_CPU_ROWS_OF_UNARY
#define PT_CPU_ROWS_OF_COMPARE PT_CPU_ROWS_OF_UNARY
#define PT_CPU_ROWS_OF_WHERE(KIND, name, DOMAIN)

static const pt_cpu_row_fn ew_rows[PT_OP_COUNT][PT_DTYPE_COUNT] = {PT_EW_MATH(PT_CPU_ROWS_OF)};

/* The kinds vecmath runs (floats only); they take precedence over ew_rows. */
static const pt_cpu_row_fn vm_rows[PT_OP_COUNT][PT_DTYPE_COUNT] = {
#define PT_CPU_VM_ROWS_OF(name, KIND, ...) [PT_OP_##KIND] = PT_CPU_ROWS_FLOAT(name##_vm),
    PT_CPU_VM_FUNCS(PT_CPU_VM_ROWS_OF)
#undef PT_CPU_VM_ROWS_OF
    [PT_OP_POW] = PT_CPU_ROWS_FLOAT(pow_vm),
};

/* The float arithmetic rows above; they take precedence over ew_rows but
 * are as cheap as theirs (not vm_rows, which mark costly kinds). */
static const pt_cpu_row_fn arith_rows[PT_OP_COUNT][PT_DTYPE_COUNT] = {
#define PT_CPU_VM_ARITH_ROWS_OF(name, KIND, OP) [PT_OP_##KIND] = PT_CPU_ROWS_FLOAT(name##_vm),
    PT_CPU_VM_ARITH(PT_CPU_VM_ARITH_ROWS_OF)
#undef PT_CPU_VM_ARITH_ROWS_OF
};

/* ---- Descriptor checks and dispatch ---- */

/* Per-element cost decides how small an op may be and still go parallel:
 * the vectorised functions and the erfc-based GELU rows are costly. */
static int64_t ew_grain(pt_op_kind k, pt_dtype t) {
    if ((unsigned)t < PT_DTYPE_COUNT && vm_rows[k][t]) return PT_CPU_GRAIN_COSTLY;
    switch (k) {
    case PT_OP_GELU: case PT_OP_GELU_GRAD:
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

pt_status pt_cpu_elementwise_row(const pt_op *op, pt_cpu_row_fn *row, pt_cpu_scalar sc[2],
                                 int64_t *grain) {
    const pt_op_kind k = op->kind;
    const pt_dtype t = op->dtype;
    const pt_op_info *info = pt_op_info_of(k); /* the dispatchers send only known kinds */
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
            fn = vm_rows[k][t] ? vm_rows[k][t] : arith_rows[k][t] ? arith_rows[k][t] : ew_rows[k][t];
        }
    }
    if (!fn) return pt_cpu_unsupported(op, t);
    *row = fn;
    sc[0] = sc[1] = (pt_cpu_scalar){.f64 = 0}; /* scalar, scalar2 */
    if (k == PT_OP_ADD_SCALAR || k == PT_OP_MUL_SCALAR || k == PT_OP_AXPY || k == PT_OP_CLAMP)
        pt_cpu_scalar_from_double(op->scalar, &sc[0]);
    if (k == PT_OP_CLAMP) pt_cpu_scalar_from_double(op->scalar2, &sc[1]);
    *grain = ew_grain(k, t);
    return PT_OK;
}

pt_status pt_cpu_elementwise(const pt_op *op, bool run) {
    pt_cpu_row_fn fn = NULL;
    pt_cpu_scalar sc[2];
    int64_t grain = 0;
    pt_status s = pt_cpu_elementwise_row(op, &fn, sc, &grain);
    if (s != PT_OK || !run) return s;
    const int arity = op->n_inputs;
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
