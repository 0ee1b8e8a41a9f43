/* pt_matmul: NumPy's matmul semantics described as one batched GEMM,
 * [B, M, K] x [B, K, N] -> [B, M, N].
 *
 * Each input is passed with its own strides when BLAS can read it directly:
 * its matrix is row-major (column stride 1) or column-major (row stride 1,
 * so a pt_transpose'd matrix costs no copy) with a valid leading dimension,
 * and its batch dims walk memory with one stride (or are all broadcast,
 * stride 0). Anything else is copied into a contiguous (batch-expanded when
 * needed) tensor first. */
#include <string.h>

#include "ops/ops_internal.h"

/* One input seen as a matrix stack: batch dims + [rows, cols]. A 1-D input
 * is [1, K] (left) or [K, 1] (right) without batch dims. */
typedef struct mm_view {
    int nbatch;
    int64_t batch[PT_MAX_DIMS], batch_strides[PT_MAX_DIMS];
    int64_t rows, cols, rs, cs;
} mm_view;

static void mm_view_of(const pt_tensor *x, bool left, mm_view *v) {
    if (x->ndim == 1) {
        v->nbatch = 0;
        if (left) {
            v->rows = 1;
            v->cols = x->shape[0];
            v->rs = x->shape[0] * x->strides[0];
            v->cs = x->strides[0];
        } else {
            v->rows = x->shape[0];
            v->cols = 1;
            v->rs = x->strides[0];
            v->cs = 1;
        }
        return;
    }
    v->nbatch = x->ndim - 2;
    for (int i = 0; i < v->nbatch; ++i) {
        v->batch[i] = x->shape[i];
        v->batch_strides[i] = x->strides[i];
    }
    v->rows = x->shape[x->ndim - 2];
    v->cols = x->shape[x->ndim - 1];
    v->rs = x->strides[x->ndim - 2];
    v->cs = x->strides[x->ndim - 1];
}

/* Matrix strides BLAS accepts: row-major (cs == 1, rs >= max(1, cols)) or
 * column-major (rs == 1, cs >= max(1, rows)). The stride of an extent-1 axis
 * is free, so it is set to whatever makes the leading-dimension rule hold. */
static bool blas_strides(const mm_view *v, int64_t *rs, int64_t *cs) {
    const int64_t r = v->rows, c = v->cols;
    int64_t rrs = r == 1 ? (c > 1 ? c : 1) : v->rs; /* row-major candidate */
    int64_t rcs = c == 1 ? 1 : v->cs;
    if (rcs == 1 && rrs >= (c > 1 ? c : 1)) {
        *rs = rrs;
        *cs = 1;
        return true;
    }
    int64_t crs = r == 1 ? 1 : v->rs; /* column-major candidate */
    int64_t ccs = c == 1 ? (r > 1 ? r : 1) : v->cs;
    if (crs == 1 && ccs >= (r > 1 ? r : 1)) {
        *rs = 1;
        *cs = ccs;
        return true;
    }
    return false;
}

/* The one batch stride of v broadcast to the output batch dims, if any. */
static bool batch_stride(const mm_view *v, int nb, const int64_t *bshape, int64_t *stride) {
    int64_t st[PT_MAX_DIMS];
    const int lead = nb - v->nbatch;
    for (int j = 0; j < nb; ++j) {
        int i = j - lead;
        st[j] = i < 0 || v->batch[i] == 1 ? 0 : v->batch_strides[i];
    }
    return pt__merge_dims(nb, bshape, st, stride);
}

/* Fills o with x as [B, rows, cols] when BLAS can read it in place. */
static bool mm_operand(const pt_tensor *x, bool left, int nb, const int64_t *bshape, int64_t B,
                       pt_operand *o) {
    mm_view v;
    mm_view_of(x, left, &v);
    int64_t bs, rs, cs;
    if (!batch_stride(&v, nb, bshape, &bs) || !blas_strides(&v, &rs, &cs)) return false;
    pt__operand(x, o);
    o->ndim = 3;
    o->shape[0] = B;
    o->shape[1] = v.rows;
    o->shape[2] = v.cols;
    o->strides[0] = B == 1 ? 0 : bs;
    o->strides[1] = rs;
    o->strides[2] = cs;
    return true;
}

/* a [..., M, K] as one [B M, K] row-major matrix, when its batch dims and
 * rows walk memory as one evenly strided run of rows (a contiguous stack, a
 * view of one): then a stack of matrices times one matrix b [K, N] is a
 * single GEMM of B M rows, which BLAS runs faster than B products of M rows
 * each, reading b once. */
static bool folded_rows(const pt_tensor *a, int64_t B, int64_t M, pt_operand *o) {
    int64_t shape[PT_MAX_DIMS], strides[PT_MAX_DIMS], rs;
    const int n = a->ndim - 1;
    const int64_t cols = a->shape[a->ndim - 1], ld = cols > 1 ? cols : 1;
    memcpy(shape, a->shape, (size_t)n * sizeof(int64_t));
    memcpy(strides, a->strides, (size_t)n * sizeof(int64_t));
    if ((cols > 1 && a->strides[a->ndim - 1] != 1) || !pt__merge_dims(n, shape, strides, &rs)) return false;
    if (rs < ld) return false; /* rows that overlap (a broadcast stack): no leading dimension */
    const int64_t rows = B * M;
    pt__operand(a, o);
    o->ndim = 3;
    o->shape[0] = 1;
    o->shape[1] = rows;
    o->shape[2] = cols;
    o->strides[0] = 0;
    o->strides[1] = rs;
    o->strides[2] = 1;
    return true;
}

/* x as a GEMM operand, copying it when needed (the copy, if any, goes to
 * *copy). A contiguous copy fixes the matrix strides; a batch that is
 * broadcast along some dims but not others needs the expanded copy. */
static pt_status gemm_input(const char *fn, pt_tensor *x, bool left, int nb, const int64_t *bshape,
                            int64_t B, pt_operand *o, pt_tensor **copy) {
    *copy = NULL;
    if (mm_operand(x, left, nb, bshape, B, o)) return PT_OK;
    pt_tensor *c = pt__copy_new(fn, x, x->dtype, x->ndim, x->shape);
    if (!c) return pt_last_status();
    if (!mm_operand(c, left, nb, bshape, B, o)) {
        pt_release(c);
        int64_t shape[PT_MAX_DIMS];
        memcpy(shape, bshape, (size_t)nb * sizeof(int64_t));
        shape[nb] = x->shape[x->ndim - 2];
        shape[nb + 1] = x->shape[x->ndim - 1];
        c = pt__copy_new(fn, x, x->dtype, nb + 2, shape);
        if (!c) return pt_last_status();
        if (!mm_operand(c, left, nb, bshape, B, o)) { /* cannot happen: contiguous, full batch */
            pt_release(c);
            return pt__error(PT_ERR_INTERNAL, fn, "no GEMM layout for a contiguous operand");
        }
    }
    *copy = c;
    return PT_OK;
}

static pt_tensor *matmul_raw(const char *fn, pt_tensor *a, pt_tensor *b) {
    pt_tensor *in[2] = {a, b};
    if (pt__check_same_device(fn, 2, in)) return NULL;
    if (a->dtype != b->dtype) {
        pt__error(PT_ERR_DTYPE, fn, "dtypes %s and %s differ; cast one with pt_cast()",
                  pt_dtype_name(a->dtype), pt_dtype_name(b->dtype));
        return NULL;
    }
    const pt_dtype t = a->dtype;
    if (!pt__is_float(t)) {
        pt__dtype_unsupported(fn, t, PT_F32);
        return NULL;
    }
    char sa[PT__SHAPE_STR_CAP], sb[PT__SHAPE_STR_CAP];
    if (a->ndim == 0 || b->ndim == 0) {
        pt__error(PT_ERR_SHAPE, fn, "shapes %s and %s: matmul needs at least 1-D operands; use pt_mul for scalars",
                  pt__shape_str(a->ndim, a->shape, sa, sizeof sa),
                  pt__shape_str(b->ndim, b->shape, sb, sizeof sb));
        return NULL;
    }
    const int64_t M = a->ndim == 1 ? 1 : a->shape[a->ndim - 2];
    const int64_t K = a->shape[a->ndim - 1];
    const int64_t Kb = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];
    const int64_t N = b->ndim == 1 ? 1 : b->shape[b->ndim - 1];
    if (K != Kb) {
        pt__error(PT_ERR_SHAPE, fn, "shapes %s and %s do not match: a has %lld columns, b has %lld rows",
                  pt__shape_str(a->ndim, a->shape, sa, sizeof sa),
                  pt__shape_str(b->ndim, b->shape, sb, sizeof sb), (long long)K, (long long)Kb);
        return NULL;
    }
    /* Batch dims: all but the last two of an N-D operand. */
    const int nba = a->ndim > 2 ? a->ndim - 2 : 0, nbb = b->ndim > 2 ? b->ndim - 2 : 0;
    const int ndims[2] = {nba, nbb};
    const int64_t *shapes[2] = {a->shape, b->shape};
    int nb;
    int64_t bshape[PT_MAX_DIMS], ca, cb;
    int bad = pt__broadcast_shapes(2, ndims, shapes, &nb, bshape, &ca, &cb);
    if (bad) {
        pt__error(PT_ERR_SHAPE, fn, "shapes %s and %s: batch dims cannot broadcast (batch dim %d: %lld vs %lld)",
                  pt__shape_str(a->ndim, a->shape, sa, sizeof sa),
                  pt__shape_str(b->ndim, b->shape, sb, sizeof sb), bad, (long long)ca,
                  (long long)cb);
        return NULL;
    }
    int ond = nb;
    int64_t oshape[PT_MAX_DIMS];
    memcpy(oshape, bshape, (size_t)nb * sizeof(int64_t));
    if (a->ndim > 1) oshape[ond++] = M;
    if (b->ndim > 1) oshape[ond++] = N;

    pt_tensor *out = pt__tensor_new(fn, pt__dev(a), t, ond, oshape);
    if (!out || pt__tensor_numel(out) == 0) return out;
    if (K == 0) { /* a sum of no products */
        if (pt__fill(fn, out, 0.0) != PT_OK) {
            pt_release(out);
            return NULL;
        }
        return out;
    }
    const int64_t B = pt__numel(nb, bshape);
    pt_op op;
    pt__op_init(&op, PT_OP_MATMUL, t, 2);
    pt_tensor *copy_a = NULL, *copy_b = NULL;
    /* out is contiguous, so its [B, M, N] is the folded [1, B M, N] too */
    const bool fold = b->ndim == 2 && nba > 0 && B > 1 && folded_rows(a, B, M, &op.in[0]);
    pt_status s = fold ? PT_OK : gemm_input(fn, a, true, nb, bshape, B, &op.in[0], &copy_a);
    if (s == PT_OK) s = gemm_input(fn, b, false, fold ? 0 : nb, bshape, fold ? 1 : B, &op.in[1], &copy_b);
    if (s == PT_OK) {
        const int64_t shape[3] = {fold ? 1 : B, fold ? B * M : M, N};
        pt__operand_packed(out, 3, shape, &op.out);
        s = pt__execute(fn, pt__dev(a), &op);
    }
    pt_release(copy_a);
    pt_release(copy_b);
    return pt__result_or_release(s, out);
}

pt_tensor *pt_matmul(pt_tensor *a, pt_tensor *b) {
    if (!a) return pt__null_input("pt_matmul", "a");
    if (!b) return pt__null_input("pt_matmul", "b");
    pt_tensor *out = matmul_raw("pt_matmul", a, b);
    pt_tensor *in[2] = {a, b};
    return pt__ret(pt__record(out, PT__G_MATMUL, 2, in, &pt__no_grad_args));
}
