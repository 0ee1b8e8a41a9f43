/** @file
 * libportable — the one table of backend op kinds.
 *
 * Every fact about an op kind that more than one place needs lives in its row:
 * the pt_op_kind enum (backend.h), the names in the core's and the plugins'
 * messages, the core's dtype validation, each plugin's dispatch, and the
 * conformance suite's coverage check and support grid all expand from it.
 * Adding an op starts here (docs/adding-an-op.md).
 *
 * X(KIND, name, family, arity, dtypes, result, grad, saves):
 *   KIND    enum suffix: PT_OP_<KIND>
 *   name    lower-case name used in messages ("add")
 *   family  operand layout (backend.h documents each): CREATION, ELEMENTWISE,
 *           REDUCE, SOFTMAX, MATMUL, INDEX, WINDOW, CONV, NORM, ATTENTION
 *   arity   number of inputs (pt_op.n_inputs)
 *   dtypes  the compute dtypes (pt_op.dtype) the core may send:
 *           ANY, NUMERIC (not u8), FLOAT or WIDE_FLOAT (f32, f64: the core
 *           computes 16-bit tensors in f32 itself) (pt_dtype bit masks, types.h)
 *   result  the output dtype: SAME (the compute dtype), U8 (comparisons),
 *           I64 (argmax), CAST (any dtype: copy converts)
 *   grad    1 when the public op that sends this kind is differentiable:
 *           then autograd has its rule (core/autograd/rules.c), and only
 *           then (tests/lint/check_grad_column.sh holds the two together)
 *   saves   what that rule reads from the forward pass, which recording
 *           keeps (core/ops/tape.h): NONE, or the inputs (IN0, IN1) and the
 *           output (OUT) joined by _ (PT_OP_SAVES_<saves> below); PARTNER
 *           keeps an input only when the other one needs a gradient (the
 *           product rules: y = x W^T with x plain data keeps x, not W).
 *           NONE where grad is 0
 *
 * Rows are append only: the enum values are part of the plugin ABI, so a new
 * kind goes at the end, whatever its family. */
#ifndef PORTABLE_OP_TABLE_H
#define PORTABLE_OP_TABLE_H

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The op table itself: one X(KIND, name, family, arity, dtypes, result, grad,
 * saves) row per kind, as described at the top of this file. */
/* clang-format off */
#define PT_OP_TABLE(X)                                                                      \
    X(FILL,         "fill",         CREATION,    0, ANY,     SAME, 0, NONE)                 \
    X(ARANGE,       "arange",       CREATION,    0, ANY,     SAME, 0, NONE)                 \
    X(RAND_UNIFORM, "rand_uniform", CREATION,    0, FLOAT,   SAME, 0, NONE)                 \
    X(RAND_NORMAL,  "rand_normal",  CREATION,    0, FLOAT,   SAME, 0, NONE)                 \
    X(COPY,         "copy",         ELEMENTWISE, 1, ANY,     CAST, 1, NONE)                 \
    X(ADD,          "add",          ELEMENTWISE, 2, NUMERIC, SAME, 1, NONE)                 \
    X(SUB,          "sub",          ELEMENTWISE, 2, NUMERIC, SAME, 1, NONE)                 \
    X(MUL,          "mul",          ELEMENTWISE, 2, NUMERIC, SAME, 1, IN0_IN1_PARTNER)      \
    X(DIV,          "div",          ELEMENTWISE, 2, NUMERIC, SAME, 1, IN1_OUT)              \
    X(POW,          "pow",          ELEMENTWISE, 2, FLOAT,   SAME, 1, IN0_IN1_OUT)          \
    X(MAXIMUM,      "maximum",      ELEMENTWISE, 2, NUMERIC, SAME, 1, IN0_IN1)              \
    X(MINIMUM,      "minimum",      ELEMENTWISE, 2, NUMERIC, SAME, 1, IN0_IN1)              \
    X(EQ,           "eq",           ELEMENTWISE, 2, ANY,     U8,   0, NONE)                 \
    X(LT,           "lt",           ELEMENTWISE, 2, ANY,     U8,   0, NONE)                 \
    X(GT,           "gt",           ELEMENTWISE, 2, ANY,     U8,   0, NONE)                 \
    X(ADD_SCALAR,   "add_scalar",   ELEMENTWISE, 1, NUMERIC, SAME, 1, NONE)                 \
    X(MUL_SCALAR,   "mul_scalar",   ELEMENTWISE, 1, NUMERIC, SAME, 1, NONE)                 \
    X(NEG,          "neg",          ELEMENTWISE, 1, NUMERIC, SAME, 1, NONE)                 \
    X(ABS,          "abs",          ELEMENTWISE, 1, NUMERIC, SAME, 1, IN0)                  \
    X(EXP,          "exp",          ELEMENTWISE, 1, FLOAT,   SAME, 1, OUT)                  \
    X(LOG,          "log",          ELEMENTWISE, 1, FLOAT,   SAME, 1, IN0)                  \
    X(SQRT,         "sqrt",         ELEMENTWISE, 1, FLOAT,   SAME, 1, OUT)                  \
    X(RELU,         "relu",         ELEMENTWISE, 1, NUMERIC, SAME, 1, OUT)                  \
    X(SIGMOID,      "sigmoid",      ELEMENTWISE, 1, FLOAT,   SAME, 1, OUT)                  \
    X(TANH,         "tanh",         ELEMENTWISE, 1, FLOAT,   SAME, 1, OUT)                  \
    X(WHERE,        "where",        ELEMENTWISE, 3, ANY,     SAME, 1, IN0)                  \
    X(AXPY,         "axpy",         ELEMENTWISE, 2, FLOAT,   SAME, 0, NONE)                 \
    X(SUM,          "sum",          REDUCE,      1, NUMERIC, SAME, 1, NONE)                 \
    X(MEAN,         "mean",         REDUCE,      1, FLOAT,   SAME, 1, NONE)                 \
    X(MAX,          "max",          REDUCE,      1, ANY,     SAME, 1, IN0)                  \
    X(ARGMAX,       "argmax",       REDUCE,      1, NUMERIC, I64,  0, NONE)                 \
    X(SOFTMAX,      "softmax",      SOFTMAX,     1, FLOAT,   SAME, 1, OUT)                  \
    X(LOG_SOFTMAX,  "log_softmax",  SOFTMAX,     1, FLOAT,   SAME, 1, OUT)                  \
    X(MATMUL,       "matmul",       MATMUL,      2, FLOAT,   SAME, 1, IN0_IN1_PARTNER)      \
    X(GATHER,       "gather",       INDEX,       2, ANY,     SAME, 1, IN1)                  \
    X(ONE_HOT,      "one_hot",      INDEX,       1, ANY,     SAME, 0, NONE)                 \
    X(SIN,          "sin",          ELEMENTWISE, 1, FLOAT,   SAME, 1, IN0)                  \
    X(COS,          "cos",          ELEMENTWISE, 1, FLOAT,   SAME, 1, IN0)                  \
    X(CLAMP,        "clamp",        ELEMENTWISE, 1, NUMERIC, SAME, 1, IN0)                  \
    X(LE,           "le",           ELEMENTWISE, 2, ANY,     U8,   0, NONE)                 \
    X(GE,           "ge",           ELEMENTWISE, 2, ANY,     U8,   0, NONE)                 \
    X(NE,           "ne",           ELEMENTWISE, 2, ANY,     U8,   0, NONE)                 \
    X(IM2COL,       "im2col",       WINDOW,      1, FLOAT,   SAME, 1, NONE)                 \
    X(COL2IM,       "col2im",       WINDOW,      1, FLOAT,   SAME, 1, NONE)                 \
    X(GELU,         "gelu",         ELEMENTWISE, 1, FLOAT,   SAME, 1, IN0)                  \
    X(GELU_GRAD,    "gelu_grad",    ELEMENTWISE, 1, FLOAT,   SAME, 0, NONE)                 \
    X(MAX_POOL2D,   "max_pool2d",   WINDOW,      1, FLOAT,   SAME, 1, IN1)                  \
    X(MAX_POOL2D_INDEX, "max_pool2d_index", WINDOW, 1, FLOAT, I64, 0, NONE)                 \
    X(MAX_UNPOOL2D, "max_unpool2d", WINDOW,      2, FLOAT,   SAME, 0, NONE)                 \
    X(CONV2D,       "conv2d",       CONV,        2, FLOAT,   SAME, 1, IN0_IN1_PARTNER)      \
    X(CONV2D_BWD_DATA, "conv2d_bwd_data", CONV,  2, FLOAT,   SAME, 0, NONE)                 \
    X(CONV2D_BWD_WEIGHT, "conv2d_bwd_weight", CONV, 2, FLOAT, SAME, 0, NONE)                 \
    X(CHANNEL_STATS, "channel_stats", NORM,      1, FLOAT,   SAME, 1, IN0_OUT)              \
    X(RSQRT,        "rsqrt",        ELEMENTWISE, 1, FLOAT,   SAME, 1, OUT)                  \
    X(FUSED,        "fused",        FUSED,       0, ANY,     CAST, 0, NONE)                 \
    X(ATTENTION,    "attention",    ATTENTION,   3, WIDE_FLOAT, SAME, 1, ALL_IN_OUT)     \
    X(ATTENTION_BACKWARD, "attention_backward", ATTENTION, 3, WIDE_FLOAT, SAME, 0, NONE) \
    X(EMBEDDING,    "embedding",    INDEX,       2, FLOAT,   SAME, 1, IN1)                  \
    X(EMBEDDING_BACKWARD, "embedding_backward", INDEX, 2, FLOAT, SAME, 0, NONE)
/* clang-format on */

/** The saves column's values: bit i for input i, bit 8 for the output,
 * bit 9 for PARTNER (core/ops/tape.h reads them). */
#define PT_OP_SAVES_IN(i) (1u << (i))
#define PT_OP_SAVES_OUTPUT (1u << 8)      /**< the output */
#define PT_OP_SAVES_FOR_PARTNER (1u << 9) /**< inputs only for the other's gradient */
#define PT_OP_SAVES_NONE 0u               /**< nothing */
#define PT_OP_SAVES_IN0 PT_OP_SAVES_IN(0) /**< input 0 */
#define PT_OP_SAVES_IN1 PT_OP_SAVES_IN(1) /**< input 1 */
#define PT_OP_SAVES_OUT PT_OP_SAVES_OUTPUT /**< the output */
#define PT_OP_SAVES_IN0_IN1 (PT_OP_SAVES_IN(0) | PT_OP_SAVES_IN(1)) /**< both inputs */
#define PT_OP_SAVES_IN1_OUT (PT_OP_SAVES_IN(1) | PT_OP_SAVES_OUTPUT) /**< input 1, the output */
#define PT_OP_SAVES_IN0_OUT (PT_OP_SAVES_IN(0) | PT_OP_SAVES_OUTPUT) /**< input 0, the output */
#define PT_OP_SAVES_IN0_IN1_OUT (PT_OP_SAVES_IN0_IN1 | PT_OP_SAVES_OUTPUT) /**< all three */
/** Every input the op was recorded with (up to 8) and the output. */
#define PT_OP_SAVES_ALL_IN_OUT (0xffu | PT_OP_SAVES_OUTPUT)
/** Both inputs, each only when the other one needs a gradient. */
#define PT_OP_SAVES_IN0_IN1_PARTNER (PT_OP_SAVES_IN0_IN1 | PT_OP_SAVES_FOR_PARTNER)

/** How an op's operands are laid out (backend.h describes each family). */
typedef enum pt_op_family {
    PT_OP_FAMILY_CREATION,    /**< no inputs: fill, arange, random */
    PT_OP_FAMILY_ELEMENTWISE, /**< inputs and output of one shape */
    PT_OP_FAMILY_REDUCE,      /**< over the middle axis of [outer, r, inner] */
    PT_OP_FAMILY_SOFTMAX,     /**< along the middle axis, same shape out */
    PT_OP_FAMILY_MATMUL,      /**< batched GEMM */
    PT_OP_FAMILY_INDEX,       /**< gather, one-hot, embedding rows and their sums */
    PT_OP_FAMILY_WINDOW,      /**< sliding 2-D windows: im2col, pooling */
    PT_OP_FAMILY_CONV,        /**< convolution and its two adjoints */
    PT_OP_FAMILY_NORM,        /**< per-channel statistics of [N, C, L] */
    PT_OP_FAMILY_FUSED,       /**< a graph's element-wise chain as one kernel */
    PT_OP_FAMILY_ATTENTION    /**< fused attention over [B, H, T, D] (pt_op.extra) */
} pt_op_family;

/** The dtype of an op's result. */
typedef enum pt_op_result {
    PT_OP_RESULT_SAME, /**< the inputs' dtype */
    PT_OP_RESULT_U8,   /**< PT_U8 (comparisons) */
    PT_OP_RESULT_I64,  /**< PT_I64 (argmax, max-pool indices) */
    PT_OP_RESULT_CAST  /**< the dtype asked for (copy between dtypes) */
} pt_op_result;

/** Every operation a backend may be asked to run: PT_OP_<kind> for each row
 * of PT_OP_TABLE, and PT_OP_COUNT, their number. Append only (plugin ABI). */
typedef enum pt_op_kind {
#define PT_OP_ENUM_ENTRY(kind, name, family, arity, dtypes, result, grad, saves) PT_OP_##kind,
    PT_OP_TABLE(PT_OP_ENUM_ENTRY)
#undef PT_OP_ENUM_ENTRY
        PT_OP_COUNT
} pt_op_kind;

/** One row of the table as data. */
typedef struct pt_op_info {
    const char *name;    /**< "add", "matmul", ... */
    pt_op_family family; /**< operand layout */
    int arity;           /**< number of inputs */
    unsigned dtypes;     /**< PT_DTYPES_* mask */
    pt_op_result result; /**< the result's dtype */
    bool grad;           /**< whether autograd has a rule for it */
} pt_op_info;

/** The row of kind k; NULL outside the enum (a kind from a newer core). Header
 * only, so plugins and tests read the same facts without linking the core. */
static inline const pt_op_info *pt_op_info_of(pt_op_kind k) {
    static const pt_op_info rows[] = {
#define PT_OP_INFO_ROW(kind, name, family, arity, dtypes, result, grad, saves)               \
    {name, PT_OP_FAMILY_##family, arity, PT_DTYPES_##dtypes, PT_OP_RESULT_##result, grad != 0},
        PT_OP_TABLE(PT_OP_INFO_ROW)
#undef PT_OP_INFO_ROW
    };
    return (unsigned)k < (unsigned)PT_OP_COUNT ? &rows[k] : (const pt_op_info *)0;
}

/** "add", ...; "?" outside the enum. */
static inline const char *pt_op_name(pt_op_kind k) {
    const pt_op_info *i = pt_op_info_of(k);
    return i ? i->name : "?";
}

/** Whether the core may send kind k with compute dtype t. */
static inline bool pt_op_takes_dtype(pt_op_kind k, pt_dtype t) {
    const pt_op_info *i = pt_op_info_of(k);
    return i && (unsigned)t < (unsigned)PT_DTYPE_COUNT && (i->dtypes & PT_DTYPE_BIT(t));
}

/** The output dtype of kind k computed in t (CAST: the caller's choice). */
static inline pt_dtype pt_op_result_dtype(pt_op_kind k, pt_dtype t) {
    const pt_op_info *i = pt_op_info_of(k);
    if (!i) return t;
    return i->result == PT_OP_RESULT_U8 ? PT_U8 : i->result == PT_OP_RESULT_I64 ? PT_I64 : t;
}

#ifdef __cplusplus
}
#endif
#endif
