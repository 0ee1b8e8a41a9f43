/* libportable CUDA backend — the CUDA C++ source of a fused chain's kernel.
 *
 * One kernel per chain structure (kinds, dtypes, links, stores, how each
 * input is read); the values that vary between graphs of one structure
 * (sizes, addresses, strides, scalars) are its parameter (fused_abi.h), so
 * the text, and the compiled code cached by it, is the same for them.
 *
 * Each step is one line of the chain's loop body computing its value as
 * the eager kernel does (kernels_elementwise_*.cu, k_common.cuh): the row
 * of portable/ew_math.h (pt_ew_row_of) in the compute type T (f32 for
 * f16/bf16 operands, widened on reading), rounded once to the step's out
 * dtype (narrow), the scalars converted with from_double; COPY is
 * k_values.cuh's convert; WHERE selects stored values bit for bit;
 * comparisons give 0 or 1. A value is kept in its out dtype, exactly as
 * the eager kernel wrote it, and ptcu_fused_rounded keeps the compiler
 * from contracting one step's multiply into the next step's add (which
 * eager kernels, storing every value, never see). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../shared/text_builder.h"
#include "fused.h"
#include "portable/ew_math.h"

/* The C++ type a dtype is stored as (k_values.cuh). */
static const char *stored(pt_dtype t) {
    switch (t) {
    case PT_F32: return "float";
    case PT_F64: return "double";
    case PT_I32: return "int32_t";
    case PT_I64: return "int64_t";
    case PT_U8: return "u8";
    case PT_F16: return "f16";
    case PT_BF16: return "bf16";
    default: return "void";
    }
}

/* The type arithmetic on a dtype computes in. */
static const char *computed(pt_dtype t) { return pt_dtype_is_half(t) ? "float" : stored(t); }

/* Input j of step k: an earlier value or a loaded one. */
static void operand(pt_text *t, const ptcu_fused_plan *plan, const pt_fused_step *s, int k, int j) {
    if (s->src[j] >= 0) pt_text_put(t, "v%d", (int)s->src[j]);
    else pt_text_put(t, "l%d", (int)plan->load_of[k][j]);
}

static void step(pt_text *t, const ptcu_fused_plan *plan, const pt_fused_step *s, int k) {
    const pt_op *op = &s->op;
    const pt_ew_row *row = pt_ew_row_of(op->kind);
    const char *out = stored(op->out.dtype);
    pt_text_put(t, "        %s v%d; /* %s */\n        {\n", out, k, pt_op_name(op->kind));
    if (!row) { /* COPY: any dtype pair */
        pt_text_put(t, "            v%d = convert<%s, %s>(", k, out, stored(op->in[0].dtype));
        operand(t, plan, s, k, 0);
        pt_text_put(t, ");\n");
    } else if (!strcmp(row->form, "WHERE")) { /* stored values, selected as they are */
        pt_text_put(t, "            typedef %s T;\n            const u8 c = ", out);
        operand(t, plan, s, k, 0);
        pt_text_put(t, ";\n            const T x = ");
        operand(t, plan, s, k, 1);
        pt_text_put(t, ";\n            const T y = ");
        operand(t, plan, s, k, 2);
        pt_text_put(t, ";\n            v%d = %s;\n", k, row->expr);
    } else {
        const bool compare = !strcmp(row->form, "COMPARE");
        const bool binary = compare || !strcmp(row->form, "BINARY");
        pt_text_put(t, "            typedef %s T;\n            const T x = widen(", computed(compare ? op->in[0].dtype : op->dtype));
        operand(t, plan, s, k, 0);
        pt_text_put(t, ");\n");
        if (binary) {
            pt_text_put(t, "            const T y = widen(");
            operand(t, plan, s, k, 1);
            pt_text_put(t, ");\n");
        }
        if (compare) {
            pt_text_put(t, "            v%d = (%s) ? 1 : 0;\n", k, row->expr);
        } else {
            pt_text_put(t, "            const T s = from_double<T>(p.scalar[%d][0]), s2 = from_double<T>(p.scalar[%d][1]);\n"
                   "            (void)s;\n            (void)s2;\n", k, k);
            pt_text_put(t, "            v%d = narrow<%s>((T)(%s));\n", k, out, row->expr);
        }
    }
    pt_text_put(t, "        }\n        ptcu_fused_rounded(v%d);\n", k);
}

/* The loop body for element i: every input read before any value is
 * written (a step may write in place over what an earlier step read), the
 * steps, the stores. */
static void body(pt_text *t, const pt_fused_chain *c, const ptcu_fused_plan *plan) {
    for (int n = 0; n < plan->n_loads; ++n) {
        const ptcu_fused_load *l = &plan->load[n];
        const char *ty = stored(c->steps[l->step].op.in[l->input].dtype);
        pt_text_put(t, "        const %s l%d = ((const %s *)p.load[%d])[", ty, n, ty, n);
        if (l->kind == PTCU_LOAD_CONTIGUOUS) pt_text_put(t, "i");
        else if (l->kind == PTCU_LOAD_ONE) pt_text_put(t, "0");
        else pt_text_put(t, "ptcu_fused_offset<%d>(i, p.strided[%d])", (int)l->ndim, (int)l->slot);
        pt_text_put(t, "];\n");
    }
    for (int k = 0; k < c->n_steps; ++k) step(t, plan, &c->steps[k], k);
    for (int k = 0; k < c->n_steps; ++k)
        if (plan->store_of[k] >= 0)
            pt_text_put(t, "        ((%s *)p.store[%d])[i] = v%d;\n", stored(c->steps[k].op.out.dtype),
                        (int)plan->store_of[k], k);
}

/* The kernel of a chain whose last value is reduced (fused_abi.h's
 * ptcu_fused_reduction): each lane folds its elements in the eager
 * reduction's accumulator (k_reduce_acc.cuh) and writes the result, or its
 * accumulator where several lanes share an output. */
static void reduce_kernel(pt_text *t, const pt_fused_chain *c, const ptcu_fused_plan *plan) {
    const pt_op *red = c->reduce;
    pt_text_put(t, "    typedef %s<%s> R;\n    typedef R::Acc Acc;\n", red->kind == PT_OP_MAX ? "MaxR" : "SumR",
                stored(red->in[0].dtype));
    pt_text_put(t, "    const int64_t n_outer = p.reduce.outer, n_r = p.reduce.r, n_inner = p.reduce.inner;\n"
                   "    const int64_t n_parts = p.reduce.parts;\n"
                   "    for (int64_t q = first; q < n_outer * n_parts * n_inner; q += every) {\n"
                   "        const int64_t li = q %% n_inner, lt = q / n_inner %% n_parts, lo = q / n_inner / n_parts;\n"
                   "        Acc acc = R::identity();\n"
                   "        for (int64_t j = lt; j < n_r; j += n_parts) {\n"
                   "        const int64_t i = (lo * n_r + j) * n_inner + li;\n");
    body(t, c, plan);
    pt_text_put(t, "        acc = R::combine(acc, R::lift(v%d, j));\n        }\n", (int)c->n_steps - 1);
    pt_text_put(t, "        if (n_parts == 1) store_result((%s *)p.reduce.out, q, acc, %s, p.reduce.count);\n"
                   "        else ((Acc *)p.reduce.out)[q] = acc;\n    }\n}\n",
                stored(red->out.dtype), red->kind == PT_OP_MEAN ? "true" : "false");
}

char *ptcu_fused_source(const pt_fused_chain *c, const ptcu_fused_plan *plan) {
    pt_text t = {0};
    pt_text_put(&t, "/* generated by libportable's cuda plugin (exec_fused_source.c): %d steps%s */\n"
            "#define PTCU_FUSED_KERNEL 1\n#include \"k_values.cuh\"\n#include \"portable/ew_math.h\"\n#include \"fused_abi.h\"\n%s\n"
            "using namespace ptcu;\n\n"
            "extern \"C\" __global__ void __launch_bounds__(PTCU_FUSED_THREADS)\n"
            "ptcu_fused_kernel(const ptcu_fused_params p) {\n"
            "    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    const int64_t every = (int64_t)gridDim.x * blockDim.x;\n",
        (int)c->n_steps, c->reduce ? " and a reduction" : "", c->reduce ? "#include \"k_reduce_acc.cuh\"\n" : "");
    if (c->reduce) {
        reduce_kernel(&t, c, plan);
    } else {
        pt_text_put(&t, "    for (int64_t i = first; i < p.numel; i += every) {\n");
        body(&t, c, plan);
        pt_text_put(&t, "    }\n}\n");
    }
    if (t.failed) {
        free(t.s);
        return NULL;
    }
    return t.s;
}
