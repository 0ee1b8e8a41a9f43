/* Conformance suite — shared declarations.
 *
 * One program runs every op of include/portable/ops.h (plus creation, RNG and
 * error paths) on the device PORTABLE_BACKEND picks, over dtypes and shape
 * families, and compares each result with a float64 reference computed here
 * on the host (never with the cpu backend). Two checks tie it to the op
 * table (include/portable/op_table.h), as ggml's test-backend-ops does:
 *   coverage  a run with no case filter ends by checking that every op kind
 *             reached a backend in every dtype of its row's dtypes column
 *             (pt_op_dtypes_reached); a pair no case sends is a FAIL.
 *   --support `conformance --support` runs no case: it prints the device's
 *             kind x dtype grid (pt_device_supports) as a Markdown table,
 *             yes / no (PT_ERR_UNSUPPORTED) / - (the core never sends it).
 * Files by job:
 *   runner.c        main, case lifecycle, poisoning, comparison, reporting
 *   host_tensor.c   host tensors (float64 values), LCG data, upload in layouts
 *   reference.c     float64 reference implementations
 *   families.c      shape families (which shapes/layouts each kind of op sees)
 *   op_table.c      the op table and the tolerance table, and the drivers
 *                   that walk op x dtype x family (computing ops)
 *   special_cases.c creation ops, views and data movement, in-place ops,
 *                   transfers to the cpu and back
 *   rng_errors.c    RNG against philox.h, error paths (statuses, messages)
 *   coverage.c      the coverage check
 *   support.c       the support grid (check_support_grid.sh tests its shape)
 *   fused.c         graphs whose element-wise chains run as FUSED ops
 *   embedding.c     the embedding lookup and its deterministic gradient */
#ifndef CONFORMANCE_H
#define CONFORMANCE_H

#include <stdbool.h>
#include <stdint.h>

#include <portable/portable.h>

/* ---- dtypes: the table of include/portable/types.h ----
 * Sets of dtypes are its masks (PT_DTYPES_FLOAT, PT_DTYPES_NUMERIC,
 * PT_DTYPES_ANY, PT_DTYPE_BIT(t)); loops over dtypes walk it in its order
 * (f32, f64, i32, i64, u8), so a new row is run without editing the suite.
 * The body runs for each dtype t in mask. */
#define FOR_EACH_DTYPE_IN(t, mask)                                                          \
    for (pt_dtype t = (pt_dtype)0; t < PT_DTYPE_COUNT; t = (pt_dtype)(t + 1))            \
        if (!(PT_DTYPE_BIT(t) & (mask))) {                                                 \
        } else

/* ---- Host tensors: logical C-order values as float64 ---- */
typedef struct ht {
    pt_dtype dtype;
    int ndim;
    int64_t shape[PT_MAX_DIMS];
    int64_t numel;
    double *v;
} ht;

ht *ht_new(pt_dtype t, int ndim, const int64_t *shape); /* zero-filled */
ht *ht_clone(const ht *h);
void ht_free(ht *h);
/* "[7, 13]" */
char *shape_str(int ndim, const int64_t *shape, char *buf, size_t cap);
void contiguous_strides(int ndim, const int64_t *shape, int64_t *strides);
/* The value v as dtype t stores it (f32 rounding, integer truncation). */
double quantize(pt_dtype t, double v);
void to_raw(pt_dtype t, double v, void *dst, int64_t i);
double from_raw(pt_dtype t, const void *src, int64_t i);

/* ---- Deterministic data ---- */
typedef struct lcg {
    uint64_t s;
} lcg;
void lcg_seed(lcg *g, uint64_t seed);
double lcg_unit(lcg *g); /* [0, 1) */

typedef enum dom_kind {
    DOM_UNIFORM, /* real in [lo, hi) */
    DOM_LOGU,    /* positive, log-uniform in [lo, hi) */
    DOM_AWAY,    /* real with |v| in [lo, hi), random sign (divisors) */
    DOM_INT,     /* integers lo..hi inclusive */
    DOM_GRID,    /* multiples of 0.5 in [lo, hi] (ties and equalities) */
    DOM_HALF_EDGES /* where rounding to 16 bits is delicate: f16 subnormals and their ties,
                    * the smallest normals, the largest finite values and past them, bf16
                    * ties, +-0, +-inf and NaN, either sign (lo and hi unused) */
} dom_kind;
typedef struct domain {
    dom_kind kind;
    double lo, hi;
} domain;
/* Fills h with values from d (clamped to h's dtype range), quantized. */
void ht_fill(ht *h, domain d, lcg *g);

/* ---- Device operands in layouts ---- */
typedef enum layout {
    LAY_C,      /* contiguous, pt_from_data */
    LAY_T,      /* pt_transpose view of the last two dims of a contiguous upload */
    LAY_N,      /* pt_narrow view of the last dim (offset, gaps filled with poison) */
    LAY_O,      /* pt_narrow view of dim 0 (contiguous rows at a byte offset) */
    LAY_X       /* pt_expand view of one slice along dim 0 (stride 0): see ht_for_layout */
} layout;
/* Makes h's values representable in layout lay: for LAY_X every slice along
 * dim 0 becomes a copy of the first one. */
void ht_for_layout(ht *h, layout lay);
/* Uploads h onto d presented in layout lay (logical shape = h's). NULL with
 * the last error set on failure. */
pt_tensor *ht_upload(pt_device *d, const ht *h, layout lay);
/* Reads t back (waits). NULL + message in err on failure. */
ht *ht_download(pt_tensor *t, char *err, size_t cap);
/* "[7, 13]" plus a layout suffix ("T", "n", "o") */
char *operand_str(const ht *h, layout lay, char *buf, size_t cap);

/* ---- Tolerances ---- */
/* An element passes when |got - exp| <= atol + rtol * |exp| + racc * f(K) * acc
 * where acc is the reference's accumulated magnitude for that element (sum of
 * |terms|; 0 where every partial result is exactly representable) and f(K)
 * is sqrt(K) for sqrtk entries (K = terms per element), else 1. Integer
 * results are always compared exactly. */
typedef struct tolerance {
    const char *name;
    double rtol32, racc32, rtol64, racc64, atol32, atol64;
    bool sqrtk;
} tolerance;
typedef enum tol_id {
    TOL_EXACT,
    TOL_ARITH,
    TOL_TRANSC,
    TOL_POW,
    TOL_SUM,
    TOL_MEAN,
    TOL_NORM,
    TOL_SOFTMAX,
    TOL_LOG_SOFTMAX,
    TOL_MATMUL,
    TOL_AXPY,
    TOL_RANDN,
    TOL_CONV, /* matmul's, plus one more rounding in 16 bits (runner.c) */
    TOL_EXP,  /* the f32 transcendentals: their ULP bounds (op_table.c) */
    TOL_LOG,
    TOL_TANH,
    TOL_SIGMOID,
    TOL_SINCOS,
    TOL_CHAIN, /* fused.c: chains whose last step may cancel the terms before it */
    TOL_ATTENTION, /* softmax's scores times matmul's sums (attention.c) */
    TOL__COUNT
} tol_id;
extern const tolerance tolerances[TOL__COUNT];

/* ---- Expected results ---- */
typedef struct expect {
    ht *val;      /* dtype and shape the result must have; values */
    double *acc;  /* per element, or NULL */
    double K;     /* terms per element for sqrtk tolerances */
} expect;
void expect_free(expect *e);

/* ---- Running cases (runner.c) ---- */
extern pt_device *g_dev;
extern const char *g_filter;

/* Whether a case name passes the command-line filter. */
bool case_selected(const char *name);
void report_pass(const char *name);
void report_fail(const char *name, const char *fmt, ...) PT_PRINTF(2, 3);
void report_skip(const char *name, const char *why);

/* What run_case checks beyond values. */
enum case_flags {
    CF_VIEW_OF_IN0 = 1,    /* the result must share storage with input 0 */
    CF_COPY_OF_IN0 = 2,    /* the result must not share storage with input 0 */
    CF_CONTIGUOUS = 4,     /* the result must be contiguous */
    CF_SAME_AS_IN0 = 8,    /* the result must be input 0 itself */
    CF_NO_POISON = 16      /* views: nothing is allocated, so nothing to poison */
};
typedef pt_tensor *(*case_fn)(pt_tensor **in, const void *params);
/* Uploads the inputs in their layouts, poisons the allocator, runs fn and
 * compares with e. Reports PASS/FAIL/SKIP. Returns nothing: counts are global. */
void run_case(const char *name, int nin, ht *const *in, const layout *lays, case_fn fn,
              const void *params, const expect *e, tol_id tol, unsigned flags);
/* Compares got with e under tolerance; on mismatch writes a message. */
bool compare_result(const ht *got, const expect *e, tol_id tol, char *msg, size_t cap);
/* Allocates and releases a NaN (float) / 0xAB (integer) block of the size a
 * result of dtype t and numel n takes, so the caching allocator hands it to
 * the next allocation of that size. */
void poison_allocator(pt_dtype t, int64_t n);
/* Whether the last failure means "backend lacks this": then reports SKIP. */
bool skip_if_unsupported(const char *name);

/* CONV2D and its adjoints directly and through pt_f_conv2d's autograd, for
 * x [N, C, H, W] (in layout lay) and weight [CO, C/groups, KH, KW] under w;
 * name describes them. conv_grads.c */
void conv_grad_cases(ht *x, ht *wt, const pt_window2d *w, int64_t groups, layout lay, const char *name,
                     lcg *rng);

/* ---- Reference implementations (reference.c) ---- */
bool broadcast_shape(int na, const int64_t *sa, int nb, const int64_t *sb, int *nout,
                     int64_t *out);
pt_dtype promote(pt_dtype a, pt_dtype b);
typedef double (*ref1_fn)(double x, pt_dtype t);
typedef double (*ref2_fn)(double a, double b, pt_dtype t);
/* Element-wise over the broadcast shape; f computes in dtype t, results are
 * stored as out_t. */
ht *ref_map1(const ht *x, ref1_fn f, pt_dtype t, pt_dtype out_t);
ht *ref_map2(const ht *a, const ht *b, ref2_fn f, pt_dtype t, pt_dtype out_t);
/* min(max(x, lo), hi) in dtype t, NaN kept. */
ht *ref_clamp(const ht *x, double lo, double hi, pt_dtype t);
ht *ref_where(const ht *c, const ht *a, const ht *b, pt_dtype out_t);
typedef enum red_kind { RED_SUM, RED_MEAN, RED_MAX, RED_ARGMAX } red_kind;
/* dim may be PT_ALL or negative. Fills e (val, acc, K). */
void ref_reduce(const ht *x, red_kind k, int dim, bool keepdim, pt_dtype out_t, expect *e);
void ref_norm_dims(const ht *x, int n, const int *dims, expect *e); /* n == 0: all */
void ref_softmax(const ht *x, int dim, bool log, expect *e);
void ref_matmul(const ht *a, const ht *b, expect *e);
ht *ref_permute(const ht *x, const int *perm);
ht *ref_narrow(const ht *x, int dim, int64_t start, int64_t len);
ht *ref_expand(const ht *x, int ndim, const int64_t *shape);
ht *ref_cast(const ht *x, pt_dtype t);
ht *ref_cat(int n, ht *const *xs, int dim);
ht *ref_stack(int n, ht *const *xs, int dim);
ht *ref_gather(const ht *x, int dim, const ht *idx);
ht *ref_one_hot(const ht *labels, int64_t classes, pt_dtype t);

/* ---- Families (families.c) ---- */
typedef struct operand_spec {
    int ndim;
    int64_t shape[4];
    layout lay;
} operand_spec;
typedef struct unary_family {
    operand_spec x;
    bool big;
} unary_family;
typedef struct binary_family {
    operand_spec a, b;
    bool big;
} binary_family;
typedef struct where_family {
    operand_spec c, a, b;
    bool big;
} where_family;
typedef struct reduce_family {
    operand_spec x;
    int dim;
    bool keepdim;
    bool big;
} reduce_family;
typedef struct matmul_family {
    operand_spec a, b;
    bool big;
} matmul_family;

extern const unary_family unary_families[];
extern const int n_unary_families;
extern const binary_family binary_families[];
extern const int n_binary_families;
extern const where_family where_families[];
extern const int n_where_families;
extern const reduce_family reduce_families[];
extern const int n_reduce_families;
extern const reduce_family softmax_families[];
extern const int n_softmax_families;
extern const matmul_family matmul_families[];
extern const int n_matmul_families;

/* Big sizes: just over a million elements. */
#define BIG_N ((int64_t)(1 << 20) + 37)

/* ---- Case groups ---- */
void run_op_table(void);      /* op_table.c: element-wise, reductions, matmul, softmax, norm */
void run_creation_cases(void); /* special_cases.c */
void run_shape_cases(void);
void run_inplace_cases(void);
void run_transfer_cases(void);
void run_rng_cases(void);      /* rng_errors.c */
void run_error_cases(void);
void run_cnn_cases(void);      /* cnn_ops.c: im2col, col2im, conv2d, pools, gelu */
void run_channel_stats_cases(void); /* channel_stats.c: CHANNEL_STATS and its gradient */
void run_fused_cases(void);    /* fused.c: captured element-wise chains (FUSED), replayed */
void run_attention_cases(void);     /* attention.c: ATTENTION (fused or composed) and its gradients */
void run_embedding_cases(void);     /* embedding.c: EMBEDDING, EMBEDDING_BACKWARD (or the gather composition) */

/* ---- The suite against the op table ---- */
/* coverage.c: one FAIL per (kind, dtype) pair of op_table.h that no case
 * handed to a backend (pt_op_dtypes_reached); run after a full run only. */
void check_op_coverage(void);
/* support.c: prints d's kind x dtype grid (pt_device_supports) as Markdown.
 * Returns the exit status: 0, or 1 when an answer is none of yes/no/-. */
int print_support_grid(pt_device *d);

#endif
