/* Views: transpose / narrow / reshape / permute / expand share storage with
 * their base, read the right values, carry the right strides, and writes
 * through pt_copy_ / pt_fill_ / pt_axpy_ into a view land in the base only
 * where the view is. Reshape of a non-contiguous tensor copies. */
#include "check.h"

static pt_device *cpu;

/* base [3, 4] = 0..11 */
static pt_tensor *iota34(pt_dtype t) {
    pt_tensor *a = pt_arange(cpu, t, 0, 12, 1);
    int64_t s[2] = {3, 4};
    pt_tensor *b = pt_reshape(a, 2, s);
    pt_release(a);
    return b;
}

static void check_values(pt_tensor *x, const double *expected, int64_t n, int line) {
    double got[256];
    char what[160];
    snprintf(what, sizeof what, "values readable (line %d)", line);
    int ok = check_read(x, got, 256) && pt_tensor_numel(x) == n;
    check_report(ok, __FILE__, line, what);
    if (!ok) return;
    for (int64_t i = 0; i < n; ++i) {
        if (got[i] != expected[i]) {
            snprintf(what, sizeof what, "element %lld: got %g, expected %g", (long long)i, got[i], expected[i]);
            check_report(0, __FILE__, line, what);
            return;
        }
    }
    check_report(1, __FILE__, line, "values");
}

static void test_transpose(void) {
    pt_tensor *a = iota34(PT_F32);
    REQUIRE(a);
    pt_tensor *t = pt_transpose(a, 0, 1);
    REQUIRE(t);
    CHECK(pt_tensor_shares_storage(a, t));
    CHECK(!pt_tensor_is_contiguous(t));
    CHECK_INT(pt_tensor_shape(t)[0], 4);
    CHECK_INT(pt_tensor_shape(t)[1], 3);
    CHECK_INT(pt_tensor_strides(t)[0], 1);
    CHECK_INT(pt_tensor_strides(t)[1], 4);
    double e[12] = {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11};
    check_values(t, e, 12, __LINE__);
    /* transposing back gives a contiguous view again */
    pt_tensor *tt = pt_transpose(t, -1, -2);
    CHECK(pt_tensor_is_contiguous(tt));
    CHECK(pt_tensor_shares_storage(tt, a));
    double e2[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    check_values(tt, e2, 12, __LINE__);
    /* the view outlives a released base (storage is reference counted) */
    pt_release(a);
    check_values(t, e, 12, __LINE__);
    /* an op on the view computes through the strides */
    pt_tensor *s = pt_sum(t, 1, false);
    double es[4] = {12, 15, 18, 21};
    check_values(s, es, 4, __LINE__);
    pt_release(s);
    pt_release(tt);
    pt_release(t);
}

static void test_narrow(void) {
    pt_tensor *a = iota34(PT_I32);
    REQUIRE(a);
    pt_tensor *n = pt_narrow(a, 1, 1, 2);
    REQUIRE(n);
    CHECK(pt_tensor_shares_storage(a, n));
    CHECK_INT(pt_tensor_shape(n)[0], 3);
    CHECK_INT(pt_tensor_shape(n)[1], 2);
    CHECK_INT(pt_tensor_strides(n)[0], 4);
    CHECK(!pt_tensor_is_contiguous(n));
    double e[6] = {1, 2, 5, 6, 9, 10};
    check_values(n, e, 6, __LINE__);
    /* narrow rows: contiguous at an offset */
    pt_tensor *r = pt_narrow(a, 0, 1, 2);
    CHECK(pt_tensor_is_contiguous(r));
    double er[8] = {4, 5, 6, 7, 8, 9, 10, 11};
    check_values(r, er, 8, __LINE__);
    /* narrow of a narrow */
    pt_tensor *nn = pt_narrow(n, 0, 2, 1);
    double enn[2] = {9, 10};
    check_values(nn, enn, 2, __LINE__);
    CHECK(pt_tensor_shares_storage(nn, a));
    /* zero-length narrow */
    pt_tensor *z = pt_narrow(a, 1, 4, 0);
    CHECK_NOT_NULL(z);
    CHECK_INT(pt_tensor_numel(z), 0);
    pt_release(z);
    pt_release(nn);
    pt_release(r);
    pt_release(n);
    pt_release(a);
}

static void test_reshape_permute_expand(void) {
    pt_tensor *a = iota34(PT_F64);
    int64_t s26[2] = {2, 6}, s12[1] = {12}, s_1[2] = {-1, 3};
    REQUIRE(a);
    pt_tensor *r = pt_reshape(a, 2, s26);
    REQUIRE(r);
    CHECK(pt_tensor_shares_storage(a, r));
    CHECK(pt_tensor_is_contiguous(r));
    CHECK_INT(pt_tensor_shape(r)[1], 6);
    pt_tensor *ri = pt_reshape(a, 2, s_1);
    REQUIRE(ri);
    CHECK_INT(pt_tensor_shape(ri)[0], 4);
    CHECK(pt_tensor_shares_storage(a, ri));
    /* reshape of a non-contiguous tensor copies, in logical order */
    pt_tensor *t = pt_transpose(a, 0, 1);
    pt_tensor *rt = pt_reshape(t, 1, s12);
    CHECK_NOT_NULL(rt);
    CHECK(!pt_tensor_shares_storage(rt, a));
    CHECK(pt_tensor_is_contiguous(rt));
    double e[12] = {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11};
    check_values(rt, e, 12, __LINE__);
    /* ... unless its strides allow a view: its own shape, or dims split
     * within an evenly strided run (torch's view rule) */
    int64_t s43[2] = {4, 3}, s223[3] = {2, 2, 3};
    pt_tensor *own = pt_reshape(t, 2, s43), *split = pt_reshape(t, 3, s223);
    REQUIRE(own);
    REQUIRE(split);
    CHECK(pt_tensor_shares_storage(own, a));
    CHECK(pt_tensor_shares_storage(split, a));
    CHECK_INT(pt_tensor_strides(split)[0], 2);
    CHECK_INT(pt_tensor_strides(split)[1], 1);
    CHECK_INT(pt_tensor_strides(split)[2], 4);
    check_values(own, e, 12, __LINE__);
    check_values(split, e, 12, __LINE__);
    pt_release(own);
    pt_release(split);
    /* permute [2, 3, 2] -> perm {2, 0, 1} */
    int64_t s232[3] = {2, 3, 2};
    pt_tensor *a3 = pt_reshape(a, 3, s232);
    int perm[3] = {2, 0, 1};
    pt_tensor *p = pt_permute(a3, perm);
    REQUIRE(p);
    CHECK(pt_tensor_shares_storage(p, a));
    CHECK_INT(pt_tensor_shape(p)[0], 2);
    CHECK_INT(pt_tensor_shape(p)[1], 2);
    CHECK_INT(pt_tensor_shape(p)[2], 3);
    CHECK_INT(pt_tensor_strides(p)[0], 1);
    CHECK_INT(pt_tensor_strides(p)[1], 6);
    CHECK_INT(pt_tensor_strides(p)[2], 2);
    double ep[12] = {0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11};
    check_values(p, ep, 12, __LINE__);
    /* expand [3, 1] -> [3, 4]: stride 0 */
    pt_tensor *col = pt_narrow(a, 1, 3, 1);
    int64_t s34[2] = {3, 4};
    pt_tensor *x = pt_expand(col, 2, s34);
    REQUIRE(x);
    CHECK(pt_tensor_shares_storage(x, a));
    CHECK_INT(pt_tensor_strides(x)[1], 0);
    double ex[12] = {3, 3, 3, 3, 7, 7, 7, 7, 11, 11, 11, 11};
    check_values(x, ex, 12, __LINE__);
    int64_t s234[3] = {2, 3, 4};
    pt_tensor *x3 = pt_expand(x, 3, s234);
    REQUIRE(x3);
    CHECK_INT(pt_tensor_strides(x3)[0], 0);
    pt_tensor *c = pt_contiguous(x3);
    CHECK(pt_tensor_is_contiguous(c));
    CHECK(!pt_tensor_shares_storage(c, a));
    CHECK_INT(pt_tensor_numel(c), 24);
    /* contiguous of a contiguous tensor is the tensor itself */
    pt_tensor *same = pt_contiguous(a);
    CHECK(same == a);
    pt_release(same);
    /* 0-D views */
    pt_tensor *flat = pt_reshape(a, 1, s12);
    pt_tensor *s = pt_narrow(flat, 0, 5, 1);
    int64_t none[1] = {0};
    pt_tensor *s0 = pt_reshape(s, 0, none);
    CHECK_INT(pt_tensor_ndim(s0), 0);
    CHECK_DBL(pt_item(s0), 5, 0);
    char buf[64];
    CHECK_STR(pt_tensor_describe(s0, buf, sizeof buf), "f64[] on cpu:0");
    CHECK_STR(pt_tensor_describe(a, buf, sizeof buf), "f64[3, 4] on cpu:0");
    pt_release(s0);
    pt_release(s);
    pt_release(flat);
    pt_release(c);
    pt_release(x3);
    pt_release(x);
    pt_release(col);
    pt_release(p);
    pt_release(a3);
    pt_release(rt);
    pt_release(t);
    pt_release(ri);
    pt_release(r);
    pt_release(a);
}

static void test_writes_through_views(void) {
    int64_t s45[2] = {4, 5}, s43[2] = {4, 3};
    pt_tensor *base = pt_zeros(cpu, PT_F32, 2, s45);
    REQUIRE(base);
    pt_tensor *v = pt_narrow(base, 1, 1, 3);
    REQUIRE(v);
    pt_tensor *sevens = pt_full(cpu, PT_F32, 2, s43, 7);
    CHECK_OK(pt_copy_(v, sevens));
    double e[20] = {0, 7, 7, 7, 0, 0, 7, 7, 7, 0, 0, 7, 7, 7, 0, 0, 7, 7, 7, 0};
    check_values(base, e, 20, __LINE__);
    /* through a transposed view: base^T[i][j] = src[i][j] */
    pt_tensor *t = pt_transpose(base, 0, 1); /* [5, 4] */
    pt_tensor *src = pt_arange(cpu, PT_F32, 0, 20, 1);
    int64_t s54[2] = {5, 4};
    pt_tensor *src54 = pt_reshape(src, 2, s54);
    CHECK_OK(pt_copy_(t, src54));
    double et[20];
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 5; ++j) et[i * 5 + j] = j * 4 + i;
    check_values(base, et, 20, __LINE__);
    /* fill_ into a row view; axpy_ into a column view */
    pt_tensor *row = pt_narrow(base, 0, 2, 1);
    CHECK_OK(pt_fill_(row, -1));
    for (int j = 0; j < 5; ++j) et[2 * 5 + j] = -1;
    check_values(base, et, 20, __LINE__);
    pt_tensor *colv = pt_narrow(base, 1, 4, 1);
    int64_t s41[2] = {4, 1};
    pt_tensor *ones = pt_ones(cpu, PT_F32, 2, s41);
    CHECK_OK(pt_axpy_(colv, 10, ones));
    for (int i = 0; i < 4; ++i) et[i * 5 + 4] += 10;
    check_values(base, et, 20, __LINE__);
    /* copy_ broadcasting a row into a view and casting from i32 */
    pt_tensor *r3 = pt_arange(cpu, PT_I32, 100, 103, 1);
    CHECK_OK(pt_copy_(v, r3));
    for (int i = 0; i < 4; ++i)
        for (int j = 1; j < 4; ++j) et[i * 5 + j] = 100 + j - 1;
    check_values(base, et, 20, __LINE__);
    pt_release(r3);
    pt_release(ones);
    pt_release(colv);
    pt_release(row);
    pt_release(src54);
    pt_release(src);
    pt_release(t);
    pt_release(sevens);
    pt_release(v);
    pt_release(base);
}

/* copy_ from an overlapping view of the same storage is well defined only
 * without overlap; a shifted copy between disjoint halves must work. */
static void test_disjoint_self_copy(void) {
    pt_tensor *a = pt_arange(cpu, PT_F32, 0, 8, 1);
    pt_tensor *lo = pt_narrow(a, 0, 0, 4), *hi = pt_narrow(a, 0, 4, 4);
    CHECK_OK(pt_copy_(lo, hi));
    double e[8] = {4, 5, 6, 7, 4, 5, 6, 7};
    check_values(a, e, 8, __LINE__);
    pt_release(lo);
    pt_release(hi);
    pt_release(a);
}

int main(void) {
    cpu = pt_cpu();
    if (!cpu) {
        printf("no cpu device: %s\n", pt_last_error());
        return 1;
    }
    test_transpose();
    test_narrow();
    test_reshape_permute_expand();
    test_writes_through_views();
    test_disjoint_self_copy();
    return check_summary();
}
