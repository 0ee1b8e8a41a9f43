/* The op and dtype tables as the public API sees them: every row has a name
 * and a family, pt_device_supports answers from the plugin's supports for
 * pairs the core sends and refuses the rest with the fix, and
 * pt_op_dtypes_reached records what reached a backend. Every element-wise
 * kind but COPY has its math in ew_math.h, under the op table's name (the
 * OpenCL kernels are named from the table and defined from the row). */
#include "check.h"
#include "portable/ew_math.h"

static void table_rows(void) {
    for (int k = 0; k < PT_OP_COUNT; ++k) {
        const pt_op_info *i = pt_op_info_of((pt_op_kind)k);
        CHECK_NOT_NULL(i);
        if (!i) continue;
        CHECK(i->name && i->name[0] && strcmp(i->name, "?") != 0);
        CHECK(i->arity >= 0 && i->arity <= 3);
        CHECK(i->dtypes != 0 && (i->dtypes & ~(unsigned)PT_DTYPES_ANY) == 0);
    }
    CHECK(pt_op_info_of(PT_OP_COUNT) == NULL);
    CHECK_STR(pt_op_name(PT_OP_LOG_SOFTMAX), "log_softmax");
    CHECK_STR(pt_op_name((pt_op_kind)-1), "?");
    CHECK_INT(pt_op_result_dtype(PT_OP_LT, PT_F64), PT_U8);
    CHECK_INT(pt_op_result_dtype(PT_OP_ARGMAX, PT_I32), PT_I64);
    CHECK(pt_op_takes_dtype(PT_OP_ADD, PT_I64));
    CHECK(!pt_op_takes_dtype(PT_OP_EXP, PT_I32));
    for (int t = 0; t < PT_DTYPE_COUNT; ++t) {
        CHECK_STR(pt_dtype_name((pt_dtype)t), pt_dtype_table_name((pt_dtype)t));
        CHECK_INT(pt_dtype_size((pt_dtype)t), pt_dtype_table_size((pt_dtype)t));
    }
}

static void supports(void) {
    pt_device *cpu = pt_cpu();
    CHECK_NOT_NULL(cpu);
    /* Every pair the core sends: the cpu backend has them all, except the
     * convolution kinds, which any backend may refuse per call (pt_f_conv2d
     * then composes im2col and matmul; the cpu plugin takes f32 only, on
     * oneDNN): checked below for f64. */
    for (int k = 0; k < PT_OP_COUNT; ++k)
        for (int t = 0; t < PT_DTYPE_COUNT; ++t)
            if (pt_op_takes_dtype((pt_op_kind)k, (pt_dtype)t)) {
                if (pt_op_info_of((pt_op_kind)k)->family == PT_OP_FAMILY_CONV) continue;
                pt_status s = pt_device_supports(cpu, (pt_op_kind)k, (pt_dtype)t);
                if (s != PT_OK)
                    printf("cpu refuses %s in %s: %s\n", pt_op_name((pt_op_kind)k),
                           pt_dtype_name((pt_dtype)t), pt_last_error());
                CHECK_INT(s, PT_OK);
            }
    for (int k = PT_OP_CONV2D; k <= PT_OP_CONV2D_BWD_WEIGHT; ++k) {
        CHECK_INT(pt_device_supports(cpu, (pt_op_kind)k, PT_F64), PT_ERR_UNSUPPORTED);
        CHECK_HAS(pt_last_error(), "pt_f_conv2d composes it from im2col and a GEMM");
    }
    CHECK_INT(pt_device_supports(cpu, PT_OP_EXP, PT_I32), PT_ERR_DTYPE);
    CHECK_HAS(pt_last_error(), "pt_device_supports: the core never sends exp in i32 (it sends f32, f64, f16, bf16)");
    CHECK_INT(pt_device_supports(cpu, PT_OP_COUNT, PT_F32), PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "outside the op table");
    CHECK_INT(pt_device_supports(cpu, PT_OP_ADD, (pt_dtype)99), PT_ERR_INVALID_ARGUMENT);
    CHECK_HAS(pt_last_error(), "dtype 99");
    CHECK_INT(pt_device_supports(NULL, PT_OP_ADD, PT_F32), PT_ERR_INVALID_ARGUMENT);
    pt_clear_error();
}

static void ew_math_rows(void) {
    for (int k = 0; k < PT_OP_COUNT; ++k) {
        const pt_op_info *i = pt_op_info_of((pt_op_kind)k);
        const pt_ew_row *r = pt_ew_row_of((pt_op_kind)k);
        const bool want = i->family == PT_OP_FAMILY_ELEMENTWISE && k != PT_OP_COPY;
        CHECK((r != NULL) == want);
        if (!r) continue;
        CHECK_STR(r->name, i->name);
        CHECK(r->expr[0] != '\0');
        /* A FLOAT row's expression is written for floats only. */
        if (strcmp(r->domain, "FLOAT") == 0) CHECK_INT(i->dtypes & ~(unsigned)PT_DTYPES_FLOAT, 0);
    }
    CHECK_STR(pt_ew_row_of(PT_OP_ADD)->expr, "pt_ew_add(x, y)");
    CHECK(pt_ew_row_of(PT_OP_COUNT) == NULL);
}

static void reached(void) {
    CHECK_INT(pt_op_dtypes_reached(PT_OP_COUNT), 0);
    CHECK_INT(pt_op_dtypes_reached(PT_OP_TANH) & PT_DTYPE_BIT(PT_F64), 0);
    int64_t shape[1] = {3};
    pt_tensor *x = pt_ones(pt_cpu(), PT_F64, 1, shape);
    pt_tensor *y = pt_tanh(x);
    CHECK_NOT_NULL(y);
    CHECK(pt_op_dtypes_reached(PT_OP_TANH) & PT_DTYPE_BIT(PT_F64));
    CHECK_INT(pt_op_dtypes_reached(PT_OP_TANH) & PT_DTYPE_BIT(PT_F32), 0);
    pt_release(y);
    pt_release(x);
}

int main(void) {
    table_rows();
    supports();
    ew_math_rows();
    reached();
    return check_summary();
}
