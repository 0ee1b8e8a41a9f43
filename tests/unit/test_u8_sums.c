/* u8 sums count in i64 and widen their input one block at a time
 * (core/ops/reduce.c): sums of tensors above the block size (2^24 elements)
 * over everything, over each dim, with keepdim, and through a transposed
 * view, all exact against values known in closed form. A block boundary
 * that drops, repeats or shifts a slice shows up as a wrong count. The
 * first sum also checks the memory it took: widened whole, the 52.7M-element
 * input would take 421 MB more at its peak; in blocks, 134 MB. */
#include "check.h"

#define R 251   /* row length: prime, so a shifted block cannot hide */
#define M 210011 /* rows: R * M = 52.7M elements, three blocks and a bit */

static pt_device *dev;

/* x[i, j] = j (mod 256) over [M, R]: a broadcast row, made contiguous. */
static pt_tensor *rows_of_iota(void) {
    const int64_t row_shape[2] = {1, R}, shape[2] = {M, R};
    pt_tensor *row = pt_reshape(pt_arange(dev, PT_U8, 0, R, 1), 2, row_shape);
    return pt_contiguous(pt_expand(row, 2, shape));
}

static void check_i64(pt_tensor *s, int64_t n, int64_t (*want)(int64_t), const char *what, int line) {
    static int64_t got[R];
    char msg[256];
    const bool ok = s && pt_tensor_dtype(s) == PT_I64 && pt_tensor_numel(s) == n && n <= R &&
                    pt_to_host(s, got, (size_t)n * sizeof got[0]) == PT_OK;
    snprintf(msg, sizeof msg, "%s: an i64 tensor of %lld elements (%s)", what, (long long)n,
             s ? "" : pt_last_error());
    check_report(ok, __FILE__, line, msg);
    if (!ok) return;
    for (int64_t i = 0; i < n; ++i) {
        if (got[i] != want(i)) {
            snprintf(msg, sizeof msg, "%s: element %lld is %lld, want %lld", what, (long long)i,
                     (long long)got[i], (long long)want(i));
            check_report(0, __FILE__, line, msg);
            return;
        }
    }
    check_report(1, __FILE__, line, what);
}

static int64_t all_sum(int64_t i) { return (void)i, (int64_t)M * (R * (R - 1) / 2); }
static int64_t column_sum(int64_t j) { return (int64_t)M * j; }
static int64_t row_sum(int64_t i) { return (void)i, (int64_t)R * (R - 1) / 2; }

int main(void) {
    dev = pt_default_device();
    CHECK(dev != NULL);
    pt_scope sc = pt_scope_begin();
    pt_tensor *x = rows_of_iota();
    CHECK(x != NULL);
    if (x) {
        pt_memory_usage before, after;
        CHECK(pt_memory_stats(dev, &before) == PT_OK);
        check_i64(pt_sum(x, PT_ALL, false), 1, all_sum, "sum of everything", __LINE__);
        CHECK(pt_memory_stats(dev, &after) == PT_OK);
        const int64_t extra = after.peak - before.in_use, widened = 8 * pt_tensor_numel(x);
        printf("sum of everything: peak %.0f MB above the input's %.0f MB (widened whole: %.0f MB)\n",
               extra / 1e6, pt_tensor_numel(x) / 1e6, widened / 1e6);
        CHECK(extra < widened / 2);
        check_i64(pt_sum(x, 0, false), R, column_sum, "sum over dim 0 (blocks of rows)", __LINE__);
        pt_tensor *kept = pt_sum(x, 0, true);
        CHECK(kept && pt_tensor_ndim(kept) == 2 && pt_tensor_shape(kept)[0] == 1);
        check_i64(kept, R, column_sum, "sum over dim 0, keepdim", __LINE__);
        /* dim 1 is short: the blocks run along dim 0, which is kept. Only
         * the first R row sums are read back. */
        pt_tensor *rs = pt_sum(x, 1, false);
        CHECK(rs && pt_tensor_numel(rs) == M);
        check_i64(pt_narrow(rs, 0, M - R, R), R, row_sum, "sum over dim 1 (last rows)", __LINE__);
        /* A transposed view: the same column sums, now over dim 1. */
        pt_tensor *t = pt_transpose(x, 0, 1);
        check_i64(pt_sum(t, 1, false), R, column_sum, "sum over dim 1 of the transposed view", __LINE__);
        check_i64(pt_sum(t, PT_ALL, false), 1, all_sum, "sum of everything, transposed", __LINE__);
    }
    pt_scope_end(sc);
    return check_summary();
}
