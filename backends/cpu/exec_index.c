/* libportable cpu backend — GATHER and ONE_HOT: ops driven by an integer
 * index tensor. An index outside the valid range never reads or writes out
 * of bounds: gather writes 0, one_hot leaves the row all zero. */
#include <string.h>

#include "internal.h"

/* ---- GATHER: out[o][j][i] = x[o][index[o][j][i]][i] ----
 * Values are moved as bit patterns, so one kernel per element size serves
 * every dtype; TI is the index type. Rows are (o, j) pairs. */

typedef struct gather_job {
    const char *x, *idx;
    char *out;
    int64_t r_in, r_idx, inner;
    int64_t xs0, xs1, xs2, is0, is1, is2;
} gather_job;

typedef void (*gather_rows_fn)(const gather_job *g, int64_t row0, int64_t row1);

typedef struct gather_piece_ctx {
    const gather_job *g;
    gather_rows_fn fn;
} gather_piece_ctx;

static void gather_piece(void *ctx, int64_t r0, int64_t r1) {
    const gather_piece_ctx *c = ctx;
    c->fn(c->g, r0, r1);
}

void pt_cpu_rows_over_team(int64_t rows, int64_t width, pt_cpu_piece_fn piece, void *ctx) {
    const int64_t grain = width > 0 ? (PT_CPU_GRAIN_CHEAP + width - 1) / width : rows + 1;
    pt_cpu_parallel_ranges(rows, grain < 2 ? 2 : grain, 1, piece, ctx);
}

#define PT_CPU_GATHER(NAME, TV, TI)                                                            \
    static void NAME(const gather_job *g, int64_t row0, int64_t row1) {                        \
        const TV *x = (const TV *)g->x;                                                       \
        const TI *ix = (const TI *)g->idx;                                                    \
        TV *out = (TV *)g->out;                                                               \
        /* (o, j) of row0 by one division; later rows step it, as rows of   \
         * one element (a max pool's values) made the division per row the   \
         * most of the time. */                                               \
        int64_t o = row0 / g->r_idx, j = row0 % g->r_idx;                                     \
        for (int64_t row = row0; row < row1; ++row) {                                         \
            const TI *irow = ix + o * g->is0 + j * g->is1;                                    \
            const TV *xo = x + o * g->xs0;                                                    \
            TV *orow = out + row * g->inner;                                                  \
            for (int64_t i = 0; i < g->inner; ++i) {                                          \
                const int64_t k = (int64_t)irow[i * g->is2];                                  \
                orow[i] = (k >= 0 && k < g->r_in) ? xo[k * g->xs1 + i * g->xs2] : (TV)0;      \
            }                                                                                 \
            if (++j == g->r_idx) {                                                            \
                j = 0;                                                                        \
                ++o;                                                                          \
            }                                                                                 \
        }                                                                                     \
    }

PT_CPU_GATHER(gather_1_i32, uint8_t, int32_t)
PT_CPU_GATHER(gather_2_i32, uint16_t, int32_t)
PT_CPU_GATHER(gather_2_i64, uint16_t, int64_t)
PT_CPU_GATHER(gather_4_i32, uint32_t, int32_t)
PT_CPU_GATHER(gather_8_i32, uint64_t, int32_t)
PT_CPU_GATHER(gather_1_i64, uint8_t, int64_t)
PT_CPU_GATHER(gather_4_i64, uint32_t, int64_t)
PT_CPU_GATHER(gather_8_i64, uint64_t, int64_t)

static pt_status gather(const pt_op *op, bool run) {
    const pt_dtype t = op->dtype;
    if (op->n_inputs != 2) return pt_cpu_bad_op(op, "gather takes two inputs");
    const pt_operand *x = &op->in[0], *ix = &op->in[1], *out = &op->out;
    if (x->ndim != 3 || ix->ndim != 3 || out->ndim != 3)
        return pt_cpu_bad_op(op, "expected [outer, r, inner] operands");
    if (x->shape[0] != out->shape[0] || ix->shape[0] != out->shape[0] ||
        ix->shape[1] != out->shape[1] || x->shape[2] != out->shape[2] ||
        ix->shape[2] != out->shape[2])
        return pt_cpu_bad_op(op, "operand shapes do not match");
    if ((unsigned)t >= PT_DTYPE_COUNT) return pt_cpu_unsupported(op, t);
    if (x->dtype != t || out->dtype != t) return pt_cpu_bad_op(op, "value dtype differs");
    if (ix->dtype != PT_I32 && ix->dtype != PT_I64)
        return pt_cpu_fail(PT_ERR_UNSUPPORTED, "gather not implemented for index dtype %s",
                           pt_dtype_table_name(ix->dtype));
    if (!run) return PT_OK;

    const size_t es = pt_dtype_table_size(t);
    const bool i64 = ix->dtype == PT_I64;
    gather_rows_fn fn = es == 1   ? (i64 ? gather_1_i64 : gather_1_i32)
                        : es == 2 ? (i64 ? gather_2_i64 : gather_2_i32)
                        : es == 4 ? (i64 ? gather_4_i64 : gather_4_i32)
                                  : (i64 ? gather_8_i64 : gather_8_i32);
    const gather_job g = {
        .x = pt_cpu_base(x), .idx = pt_cpu_base(ix), .out = pt_cpu_base(out),
        .r_in = x->shape[1], .r_idx = ix->shape[1], .inner = out->shape[2],
        .xs0 = x->strides[0], .xs1 = x->strides[1], .xs2 = x->strides[2],
        .is0 = ix->strides[0], .is1 = ix->strides[1], .is2 = ix->strides[2],
    };
    gather_piece_ctx ctx = {&g, fn};
    pt_cpu_rows_over_team(out->shape[0] * out->shape[1], g.inner, gather_piece, &ctx);
    return PT_OK;
}

/* ---- ONE_HOT: out[n][count] = (label[n] == c) ---- */

static void one_hot_rows(const pt_op *op, int64_t r0, int64_t r1) {
    const pt_operand *lab = &op->in[0];
    const char *lb = pt_cpu_base(lab);
    const int64_t ls = lab->strides[0], count = op->count;
    const size_t es = pt_dtype_table_size(op->out.dtype);
    char *out = pt_cpu_base(&op->out);
    /* Zero is all-zero bits in every dtype, so rows are cleared with memset. */
    memset(out + r0 * count * (int64_t)es, 0, (size_t)((r1 - r0) * count) * es);
    for (int64_t r = r0; r < r1; ++r) {
        int64_t c = lab->dtype == PT_I64 ? ((const int64_t *)lb)[r * ls]
                                         : (int64_t)((const int32_t *)lb)[r * ls];
        if (c < 0 || c >= count) continue;
        char *p = out + (r * count + c) * (int64_t)es;
        switch (op->out.dtype) {
        case PT_F32: *(float *)p = 1.0f; break;
        case PT_F64: *(double *)p = 1.0; break;
        case PT_I32: *(int32_t *)p = 1; break;
        case PT_I64: *(int64_t *)p = 1; break;
        case PT_U8: *(uint8_t *)p = 1; break;
        case PT_F16: *(uint16_t *)p = 0x3c00u; break;  /* 1.0 */
        case PT_BF16: *(uint16_t *)p = 0x3f80u; break; /* 1.0 */
        default: break;
        }
    }
}

static void one_hot_piece(void *op, int64_t r0, int64_t r1) { one_hot_rows(op, r0, r1); }

static pt_status one_hot(const pt_op *op, bool run) {
    const pt_dtype t = op->dtype;
    if (op->n_inputs != 1) return pt_cpu_bad_op(op, "one_hot takes one input");
    const pt_operand *lab = &op->in[0], *out = &op->out;
    if (lab->ndim != 1 || out->ndim != 2) return pt_cpu_bad_op(op, "expected [n] -> [n, count]");
    if (op->count < 1 || out->shape[0] != lab->shape[0] || out->shape[1] != op->count)
        return pt_cpu_bad_op(op, "output shape is not [n, count]");
    if ((unsigned)t >= PT_DTYPE_COUNT) return pt_cpu_unsupported(op, t);
    if (out->dtype != t) return pt_cpu_bad_op(op, "output dtype differs from the op's");
    if (lab->dtype != PT_I32 && lab->dtype != PT_I64)
        return pt_cpu_fail(PT_ERR_UNSUPPORTED, "one_hot not implemented for label dtype %s",
                           pt_dtype_table_name(lab->dtype));
    if (!run) return PT_OK;
    pt_cpu_rows_over_team(lab->shape[0], op->count, one_hot_piece, (void *)op);
    return PT_OK;
}

pt_status pt_cpu_index_op(const pt_op *op, bool run) {
    return op->kind == PT_OP_GATHER ? gather(op, run) : one_hot(op, run);
}
