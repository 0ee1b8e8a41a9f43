/* libportable OpenCL backend — the OpenCL C of a fused chain (backend.h's
 * FUSED family), written from the rows of portable/ew_math.h, and the
 * chain's structure that its kernels are looked up by.
 *
 * Each step becomes a function returning its value from its inputs, whose
 * body is the row's expression as the eager kernel ew_<name> has it
 * (elementwise.cl), then a line of the kernel body calling it: external
 * inputs are loaded at the element (through their strides where they are
 * not contiguous), earlier steps' values are passed on, stored steps are
 * written. The program is the embedded sources up to ew_math.h with this
 * text after them, built with the options of one element type T (common.cl
 * and the ew_math.h helpers take one type per program): the type the
 * arithmetic steps compute in. Steps of other types (comparisons, where,
 * casts) work because their expressions call no helper and name no T: a
 * chain with arithmetic in two types is refused (the core then runs its
 * parts apart). Values are rounded to each step's dtype exactly as the
 * eager kernels round them: 16-bit floats are carried as their bits and
 * converted with half.h's functions, as copy_to_<dst> converts them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "portable/ew_math.h"

/* The OpenCL C type a value of t is held in: 16-bit floats as their bits. */
static const char *ocl_ctype(pt_dtype t) {
    switch (t) {
    case PT_F32: return "float";
    case PT_F64: return "double";
    case PT_I32: return "int";
    case PT_I64: return "long";
    case PT_U8: return "uchar";
    default: return "ushort"; /* f16, bf16 */
    }
}

/* Whether expr names the identifier id (a whole token). */
static bool ocl_names(const char *expr, const char *id) {
    const size_t n = strlen(id);
    for (const char *p = expr; *p;) {
        if (*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')) {
            const char *q = p;
            while (*q == '_' || (*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z') ||
                   (*q >= '0' && *q <= '9'))
                ++q;
            if ((size_t)(q - p) == n && !strncmp(p, id, n)) return true;
            p = q;
        } else {
            ++p;
        }
    }
    return false;
}

bool ocl_is_contiguous(const pt_operand *o) {
    int64_t expect = 1;
    for (int i = o->ndim - 1; i >= 0; --i) {
        if (o->shape[i] != 1 && o->strides[i] != expect) return false;
        expect *= o->shape[i];
    }
    return true;
}

/* Whether every element of o is the same one (all its strides 0). */
static bool ocl_is_broadcast_scalar(const pt_operand *o) {
    for (int i = 0; i < o->ndim; ++i)
        if (o->shape[i] != 1 && o->strides[i] != 0) return false;
    return true;
}

/* How a step's external input is loaded: at the element, once (every
 * element reads the same one), or through a walk of its strides. */
typedef enum { OCL_LOAD_AT_I, OCL_LOAD_ONE, OCL_LOAD_WALK } ocl_load;

static ocl_load ocl_load_of(const pt_operand *x) {
    return ocl_is_contiguous(x) ? OCL_LOAD_AT_I : ocl_is_broadcast_scalar(x) ? OCL_LOAD_ONE : OCL_LOAD_WALK;
}

void ocl_fused_signature(const pt_fused_chain *c, ocl_fused_sig *sig) {
    memset(sig, 0, sizeof *sig);
    const int32_t n = c->n_steps < OCL_FUSED_MAX_STEPS ? c->n_steps : OCL_FUSED_MAX_STEPS;
    sig->b[0] = (unsigned char)n;
    for (int32_t k = 0; k < n; ++k) {
        const pt_fused_step *st = &c->steps[k];
        unsigned char *b = &sig->b[1 + k * OCL_FUSED_SIG_STEP];
        b[0] = (unsigned char)st->op.kind;
        b[1] = (unsigned char)st->op.out.dtype;
        for (int j = 0; j < PT_OP_MAX_INPUTS; ++j) {
            const bool has = j < st->op.n_inputs;
            b[2 + j] = has ? (unsigned char)st->op.in[j].dtype : 0xff;
            b[5 + j] = has ? (unsigned char)(st->src[j] + 1) : 0;
            b[9 + j] = has && st->src[j] < 0 ? (unsigned char)ocl_load_of(&st->op.in[j]) : 0;
        }
        b[8] = st->store;
    }
    sig->b[1 + n * OCL_FUSED_SIG_STEP] = c->reduce != NULL;
    sig->len = 2 + n * OCL_FUSED_SIG_STEP;
}

int64_t ocl_fused_strided_inner(const pt_fused_chain *c, int *max_nd) {
    int64_t g = 0;
    *max_nd = 0;
    for (int32_t k = 0; k < c->n_steps; ++k) {
        const pt_op *op = &c->steps[k].op;
        for (int j = 0; j < op->n_inputs; ++j) {
            const pt_operand *x = &op->in[j];
            if (c->steps[k].src[j] >= 0 || ocl_load_of(x) != OCL_LOAD_WALK) continue;
            if (x->ndim > *max_nd) *max_nd = x->ndim;
            int64_t a = x->ndim > 0 ? x->shape[x->ndim - 1] : 1, b = g;
            while (b) {
                const int64_t t = a % b;
                a = b;
                b = t;
            }
            g = a;
        }
    }
    return g;
}

/* The conversion copy_to_<to> of elementwise.cl does from `from`, applied
 * to the value x, into out; false for the casts not generated here. */
static bool ocl_cast_text(pt_dtype from, pt_dtype to, const char *x, char *out, size_t cap) {
    static const char *const sat[PT_DTYPE_COUNT] = {[PT_I32] = "pt_sat_i32", [PT_I64] = "pt_sat_i64",
                                                    [PT_U8] = "pt_wrap_u8"};
    char f[160]; /* x as a float or double, for the sources that are floats */
    const char *fs = NULL;
    if (from == to) {
        snprintf(out, cap, "%s", x);
        return true;
    }
    switch (from) {
    case PT_F16: snprintf(f, sizeof f, "pt_fused_from_f16(%s)", x); fs = "f32"; break;
    case PT_BF16: snprintf(f, sizeof f, "as_float((uint)(%s) << 16)", x); fs = "f32"; break;
    case PT_F32: snprintf(f, sizeof f, "%s", x); fs = "f32"; break;
    case PT_F64: snprintf(f, sizeof f, "%s", x); fs = "f64"; break;
    default: break;
    }
    if (fs) { /* from a float: numeric_rules.h for integers, one rounding for floats */
        if (sat[to]) {
            snprintf(out, cap, "%s_%s(%s)", sat[to], fs, f);
            return true;
        }
        /* to 16 bits: from a float "rounded to odd" (elementwise.cl says why) */
        char odd[200];
        snprintf(odd, sizeof odd, from == PT_F64 ? "pt_f64_to_f32_odd(%s)" : "(float)(%s)", f);
        switch (to) {
        case PT_F32: snprintf(out, cap, "(float)(%s)", f); return true;
        case PT_F64: snprintf(out, cap, "(double)(%s)", f); return true;
        case PT_F16: snprintf(out, cap, "pt_fused_to_f16(%s)", odd); return true;
        case PT_BF16: snprintf(out, cap, "pt_f32_to_bf16_bits(%s)", odd); return true;
        default: return false;
        }
    }
    /* from an integer: C conversions; to 16 bits only from u8, which a
     * float holds exactly (i32, i64 need elementwise.cl's rounding to odd) */
    switch (to) {
    case PT_F16:
    case PT_BF16:
        if (from != PT_U8) return false;
        snprintf(out, cap, to == PT_F16 ? "pt_fused_to_f16((float)(%s))" : "pt_f32_to_bf16_bits((float)(%s))",
                 x);
        return true;
    default: snprintf(out, cap, "(%s)(%s)", ocl_ctype(to), x); return true;
    }
}

/* The step forms, as ew_math.h names them. */
typedef enum { OCL_UNARY, OCL_BINARY, OCL_COMPARE, OCL_WHERE, OCL_CAST } ocl_form;

static bool ocl_form_of(const pt_fused_step *st, ocl_form *form, const pt_ew_row **row) {
    *row = pt_ew_row_of(st->op.kind);
    if (st->op.kind == PT_OP_COPY) {
        *form = OCL_CAST;
        return st->op.n_inputs == 1;
    }
    if (!*row) return false;
    static const struct {
        const char *name;
        ocl_form form;
        int arity;
    } forms[] = {{"UNARY", OCL_UNARY, 1}, {"BINARY", OCL_BINARY, 2}, {"COMPARE", OCL_COMPARE, 2},
                 {"WHERE", OCL_WHERE, 3}};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; ++i)
        if (!strcmp((*row)->form, forms[i].name)) {
            *form = forms[i].form;
            return st->op.n_inputs == forms[i].arity;
        }
    return false;
}

/* Parameter bytes every device takes (CL_DEVICE_MAX_PARAMETER_SIZE's least). */
#define OCL_FUSED_MAX_PARAM_BYTES 1024

void ocl_fused_plan_add(ocl_fused_text *x, ocl_fused_arg_kind kind, int part, int step, int input, size_t bytes) {
    if (x->n >= OCL_REC_MAX_ARGS) {
        x->over = true;
        return;
    }
    if (x->args)
        x->args[x->n] = (ocl_fused_arg){(unsigned char)kind, (unsigned char)part, (unsigned char)step,
                                        (unsigned char)input};
    ++x->n;
    x->bytes += bytes;
}

/* The parameter names of a parameter list ", type name, type name...". */
static void ocl_param_names(const char *params, pt_text *names) {
    for (const char *p = params ? params : ""; *p;) {
        const char *end = strchr(p + 1, ',');
        if (!end) end = p + strlen(p);
        const char *q = end;
        while (q > p && (q[-1] == '_' || (q[-1] >= '0' && q[-1] <= '9') || (q[-1] >= 'a' && q[-1] <= 'z') ||
                         (q[-1] >= 'A' && q[-1] <= 'Z')))
            --q;
        pt_text_put(names, ", %.*s", (int)(end - q), q);
        p = end;
    }
}

/* A chain with a reduction after it: its last value as a function of the
 * element, and the three definitions reduce.cl takes it through (the
 * program appends reduce.cl after this text: launch_fused_program.c). */
static void ocl_fused_reduce_text(const pt_fused_chain *c, ocl_fused_text *x) {
    pt_text names = {0};
    ocl_param_names(x->params.s, &names);
    const pt_dtype last = c->steps[c->n_steps - 1].op.out.dtype;
    if (x->strided) pt_text_put(&x->fn, "#define PT_FUSED_AT(nd, sh, st) pt_locate(i, nd, sh, st, st, st, st).o\n");
    pt_text_put(&x->fn,
                "static inline %s pt_fused_value(long i%s) {\n%s        return v%d;\n}\n"
                "#define PT_REDUCE_CHAIN_PARAMS %s\n"
                "#define PT_REDUCE_CHAIN_ARGS %s\n"
                "#define PT_REDUCE_LOAD(k) ((ACC)pt_fused_value((k) - io PT_REDUCE_CHAIN_ARGS))\n",
                ocl_ctype(last), x->params.s ? x->params.s : "", x->body.s ? x->body.s : "", (int)c->n_steps - 1,
                x->params.s ? x->params.s : "", names.s ? names.s : "");
    if (names.failed) x->fn.failed = true;
    free(names.s);
}

void ocl_fused_text_free(ocl_fused_text *x) {
    free(x->fn.s);
    free(x->params.s);
    free(x->body.s);
    x->fn = x->params = x->body = (pt_text){.off = x->fn.off};
}

pt_status ocl_fused_text_done(ocl_fused_text *x, bool failed, pt_dtype arith, char **text, pt_dtype *t,
                              int *n_args, char *why, size_t cap) {
    if (failed || x->fn.failed || x->params.failed || x->body.failed) {
        ocl_fused_text_free(x);
        snprintf(why, cap, "out of host memory for a generated kernel's source");
        return PT_ERR_OUT_OF_MEMORY;
    }
    *text = x->fn.s;
    x->fn.s = NULL;
    ocl_fused_text_free(x);
    *t = arith;
    *n_args = x->n;
    return PT_OK;
}

pt_status ocl_fused_check(const ocl_device *d, const pt_fused_chain *c, pt_dtype *arith, bool *typed,
                          char *why, size_t cap) {
#define OCL_REFUSE(...)                                                                          \
    do {                                                                                         \
        snprintf(why, cap, __VA_ARGS__);                                                         \
        return PT_ERR_UNSUPPORTED;                                                               \
    } while (0)
    *arith = PT_F32;
    *typed = false;
    if (c->n_steps < 1 || c->n_steps > OCL_FUSED_MAX_STEPS)
        OCL_REFUSE("a chain of %d steps (this plugin fuses 1 to %d)", (int)c->n_steps, OCL_FUSED_MAX_STEPS);
    /* A reduction after the chain: reduce.cl's kernels with the chain's
     * last value computed in place of their load (the program's T is the
     * reduction's input type, as in the reduce kernel's own program). */
    const pt_op *red = c->reduce;
    if (red) {
        if (red->kind != PT_OP_SUM && red->kind != PT_OP_MEAN && red->kind != PT_OP_MAX)
            OCL_REFUSE("a %s after the chain (sum, mean and max are fused)", pt_op_name(red->kind));
        if (red->in[0].dtype != c->steps[c->n_steps - 1].op.out.dtype)
            OCL_REFUSE("the reduction reads %s, the chain's last value is %s",
                       pt_dtype_table_name(red->in[0].dtype),
                       pt_dtype_table_name(c->steps[c->n_steps - 1].op.out.dtype));
        if (pt_dtype_is_half(red->in[0].dtype))
            OCL_REFUSE("a reduction of %s, which this plugin computes in f32 through casts",
                       pt_dtype_table_name(red->in[0].dtype));
    }

    /* The program's type: that of the steps whose rows call the pt_ew_*
     * helpers or name T (one per program). */
    int t_step = -1;
    for (int32_t k = 0; k < c->n_steps; ++k) {
        const pt_fused_step *st = &c->steps[k];
        const pt_ew_row *row = NULL;
        ocl_form form = OCL_CAST;
        if (!ocl_form_of(st, &form, &row))
            OCL_REFUSE("step %d (%s) is not an element-wise row of ew_math.h or a cast", (int)k,
                       pt_op_name(st->op.kind));
        for (int j = -1; j < st->op.n_inputs; ++j) {
            const pt_dtype dt = j < 0 ? st->op.out.dtype : st->op.in[j].dtype;
            if (dt == PT_F64 && !d->fp64)
                OCL_REFUSE("step %d (%s) has f64 operands and %s lacks cl_khr_fp64", (int)k,
                           pt_op_name(st->op.kind), d->name);
            if (j >= 0 && st->src[j] >= k)
                OCL_REFUSE("step %d reads step %d's value, which is not an earlier step", (int)k,
                           (int)st->src[j]);
        }
        if (form == OCL_CAST) {
            char tmp[8];
            if (!ocl_cast_text(st->op.in[0].dtype, st->op.out.dtype, "x", tmp, sizeof tmp))
                OCL_REFUSE("step %d: the cast %s -> %s is not fused by this plugin", (int)k,
                           pt_dtype_table_name(st->op.in[0].dtype), pt_dtype_table_name(st->op.out.dtype));
            continue;
        }
        if (form == OCL_WHERE &&
            (st->op.in[0].dtype != PT_U8 || st->op.in[1].dtype != st->op.out.dtype ||
             st->op.in[2].dtype != st->op.out.dtype))
            OCL_REFUSE("step %d: where needs a u8 condition and values of its out dtype", (int)k);
        const pt_dtype ct = form == OCL_WHERE ? st->op.out.dtype : st->op.in[0].dtype;
        if (form == OCL_BINARY || form == OCL_COMPARE) {
            if (st->op.in[1].dtype != ct)
                OCL_REFUSE("step %d (%s): inputs of two dtypes", (int)k, pt_op_name(st->op.kind));
        }
        if ((form == OCL_UNARY || form == OCL_BINARY) && st->op.out.dtype != ct)
            OCL_REFUSE("step %d (%s): out dtype differs from its inputs'", (int)k, pt_op_name(st->op.kind));
        if (strstr(row->expr, "pt_ew_") || ocl_names(row->expr, "T")) {
            if (pt_dtype_is_half(ct))
                OCL_REFUSE("step %d (%s) computes on %s, which this plugin does in f32 through casts",
                           (int)k, pt_op_name(st->op.kind), pt_dtype_table_name(ct));
            if (t_step >= 0 && ct != *arith)
                OCL_REFUSE("steps %d and %d compute in %s and %s: a generated program has one "
                           "arithmetic type (ew_math.h's OpenCL helpers take the program's T)",
                           t_step, (int)k, pt_dtype_table_name(*arith), pt_dtype_table_name(ct));
            t_step = (int)k;
            *arith = ct;
        }
    }

    if (red) {
        if (t_step >= 0 && *arith != red->in[0].dtype)
            OCL_REFUSE("the chain computes in %s and its reduction in %s: a generated program has one "
                       "type", pt_dtype_table_name(*arith), pt_dtype_table_name(red->in[0].dtype));
        *arith = red->in[0].dtype;
        t_step = 0;
    }
    *typed = t_step >= 0;
    return PT_OK;
#undef OCL_REFUSE
}

void ocl_fused_emit(const pt_fused_chain *c, int part, int base, ocl_fused_text *x) {
    for (int32_t k = 0; k < c->n_steps; ++k) {
        const pt_fused_step *st = &c->steps[k];
        const pt_ew_row *row = NULL;
        ocl_form form = OCL_CAST;
        (void)ocl_form_of(st, &form, &row);
        const int g = base + (int)k; /* the step's number in the program's names */
        const pt_dtype ct = form == OCL_WHERE ? st->op.out.dtype : st->op.in[0].dtype;
        const char *cts = ocl_ctype(ct), *vts = ocl_ctype(st->op.out.dtype);
        char v[PT_OP_MAX_INPUTS][48];
        for (int j = 0; j < st->op.n_inputs; ++j) {
            if (st->src[j] >= 0) {
                snprintf(v[j], sizeof v[j], "v%d", base + (int)st->src[j]);
                continue;
            }
            const char *its = ocl_ctype(st->op.in[j].dtype);
            snprintf(v[j], sizeof v[j], "x%d_%d", g, j);
            ocl_fused_plan_add(x, OCL_FA_IN_BUF, part, k, j, sizeof(cl_mem));
            ocl_fused_plan_add(x, OCL_FA_IN_OFF, part, k, j, sizeof(cl_long));
            pt_text_put(&x->params, ", __global const %s *a%d_%d, long a%d_%do", its, g, j, g, j);
            const ocl_load how = ocl_load_of(&st->op.in[j]);
            if (how != OCL_LOAD_WALK) {
                pt_text_put(&x->body, "        const %s x%d_%d = a%d_%d[a%d_%do%s];\n", its, g, j, g, j, g, j,
                            how == OCL_LOAD_AT_I ? " + i" : "");
                continue;
            }
            ocl_fused_plan_add(x, OCL_FA_IN_ND, part, k, j, sizeof(cl_int));
            ocl_fused_plan_add(x, OCL_FA_IN_SHAPE, part, k, j, sizeof(cl_long8));
            ocl_fused_plan_add(x, OCL_FA_IN_STRIDES, part, k, j, sizeof(cl_long8));
            pt_text_put(&x->params, ", int a%d_%dnd, long8 a%d_%dsh, long8 a%d_%dst", g, j, g, j, g, j);
            /* common.cl's walks (PT_FUSED_AT, defined by the kernels' text) */
            x->strided = true;
            pt_text_put(&x->body, "        const %s x%d_%d = a%d_%d[a%d_%do + PT_FUSED_AT(a%d_%dnd, a%d_%dsh, a%d_%dst)];\n",
                        its, g, j, g, j, g, j, g, j, g, j, g, j);
        }
        char s[2][48] = {"", ""};
        if (form == OCL_UNARY || form == OCL_BINARY) {
            for (int q = 0; q < (form == OCL_UNARY ? 2 : 1); ++q) {
                if (ocl_names(row->expr, q ? "s2" : "s")) {
                    snprintf(s[q], sizeof s[q], "s%d%s", g, q ? "b" : "");
                    ocl_fused_plan_add(x, q ? OCL_FA_SCALAR2 : OCL_FA_SCALAR, part, k, 0, pt_dtype_table_size(ct));
                    pt_text_put(&x->params, ", %s %s", cts, s[q]);
                } else {
                    snprintf(s[q], sizeof s[q], "(%s)0", cts);
                }
            }
        }
        if (form == OCL_CAST) {
            char conv[512];
            (void)ocl_cast_text(st->op.in[0].dtype, st->op.out.dtype, v[0], conv, sizeof conv);
            pt_text_put(&x->body, "        const %s v%d = %s;\n", vts, g, conv);
        } else {
            /* the step's function: its form's operands, the row's expression */
            char params_k[160], call[200];
            if (form == OCL_WHERE) {
                snprintf(params_k, sizeof params_k, "uchar c, %s x, %s y", cts, cts);
                snprintf(call, sizeof call, "%s, %s, %s", v[0], v[1], v[2]);
            } else if (form == OCL_UNARY) {
                snprintf(params_k, sizeof params_k, "%s x, %s s, %s s2", cts, cts, cts);
                snprintf(call, sizeof call, "%s, %s, %s", v[0], s[0], s[1]);
            } else { /* BINARY (x, y, s), COMPARE (x, y) */
                snprintf(params_k, sizeof params_k, form == OCL_BINARY ? "%s x, %s y, %s s" : "%s x, %s y",
                         cts, cts, cts);
                snprintf(call, sizeof call, form == OCL_BINARY ? "%s, %s, %s" : "%s, %s", v[0], v[1], s[0]);
            }
            pt_text_put(&x->fn, "static inline %s pt_fused_step%d(%s) { return (%s)%s; }\n", vts, g, params_k,
                        row->expr, form == OCL_COMPARE ? " ? (uchar)1 : (uchar)0" : "");
            pt_text_put(&x->body, "        const %s v%d = pt_fused_step%d(%s);\n", vts, g, g, call);
        }
        if (st->store) {
            ocl_fused_plan_add(x, OCL_FA_OUT_BUF, part, k, 0, sizeof(cl_mem));
            ocl_fused_plan_add(x, OCL_FA_OUT_OFF, part, k, 0, sizeof(cl_long));
            pt_text_put(&x->params, ", __global %s *o%d, long o%do", vts, g, g);
            pt_text_put(&x->body, "        o%d[o%do + i] = v%d;\n", g, g, g);
        }
    }
}

void ocl_fused_prelude(ocl_fused_text *x, int n_steps) {
    /* f16 bits through half.h's branchless conversions (the same bits
     * as vload_half / vstore_half_rte): a store through a private half
     * pointer kept PoCL from vectorising the chain's loop. */
    pt_text_put(&x->fn, "/* A fused chain of %d steps (launch_fused_source.c). */\n"
                        "static inline float pt_fused_from_f16(ushort b) { return pt_f16_bits_to_f32(b); }\n"
                        "static inline ushort pt_fused_to_f16(float f) { return pt_f32_to_f16_bits(f); }\n",
                n_steps);
}

pt_status ocl_fused_limits(const ocl_fused_text *x, bool reduce, char *why, size_t cap) {
    /* the reduce kernels' own arguments come first */
    const int max_args = reduce ? OCL_REC_MAX_ARGS - OCL_REDUCE_ARGS : OCL_REC_MAX_ARGS;
    const size_t max_bytes = OCL_FUSED_MAX_PARAM_BYTES - (reduce ? OCL_REDUCE_ARG_BYTES : 0);
    if (!x->over && x->n <= max_args && x->bytes <= max_bytes) return PT_OK;
    snprintf(why, cap,
             "the chain's kernel would take %s%d arguments of %zu bytes (at most %d, of %zu bytes: "
             "what a recorded graph keeps and every device takes%s)",
             x->over ? "over " : "", x->n, x->bytes, max_args, max_bytes,
             reduce ? ", less the reduce kernel's own" : "");
    return PT_ERR_UNSUPPORTED;
}

pt_status ocl_fused_generate(const ocl_device *d, const pt_fused_chain *c, char **text, pt_dtype *t,
                             ocl_fused_arg *args, int *n_args, char *why, size_t cap) {
    pt_dtype arith = PT_F32;
    bool typed = false;
    pt_status s = ocl_fused_check(d, c, &arith, &typed, why, cap);
    if (s != PT_OK) return s;
    const bool on = text != NULL;
    ocl_fused_text x = {.fn = {.off = !on}, .params = {.off = !on}, .body = {.off = !on}, .args = args};
    if (on) ocl_fused_prelude(&x, (int)c->n_steps);
    ocl_fused_emit(c, 0, 0, &x);
    if (!c->reduce) {
        ocl_fused_plan_add(&x, OCL_FA_N, 0, 0, 0, sizeof(cl_long));
        pt_text_put(&x.params, ", long n");
    }
    if ((s = ocl_fused_limits(&x, c->reduce != NULL, why, cap)) != PT_OK || !on) {
        ocl_fused_text_free(&x);
        return s;
    }
    if (c->reduce) {
        ocl_fused_reduce_text(c, &x);
    } else {
        /* params starts with ", "; strided inputs are loaded through
         * pt_locate's walk in fused_whole and fused_tail, and through the
         * row walk in fused_rows, which the host launches where it can
         * (ocl_fused: groups that divide every strided input's innermost
         * dimension) */
        const char *all = x.params.s ? x.params.s + 2 : "long n";
        pt_text_put(&x.fn, "#define PT_FUSED_AT(nd, sh, st) pt_locate(i, nd, sh, st, st, st, st).o\n");
        for (int w = 0; w < 2; ++w)
            pt_text_put(&x.fn,
                        "__kernel void fused_%s(%s) {\n"
                        "    const long i = (long)get_global_id(0);\n"
                        "    %s{\n%s    }\n}\n",
                        w ? "tail" : "whole", all, w ? "if (i < n) " : "", x.body.s ? x.body.s : "");
        if (x.strided)
            pt_text_put(&x.fn,
                        "#undef PT_FUSED_AT\n"
                        "#define PT_FUSED_AT(nd, sh, st) pt_locate_rows(g0, lid, nd, sh, st, st, st, st).o\n"
                        "__kernel void fused_rows(%s) {\n"
                        "    const long g0 = (long)get_group_id(0) * (long)get_local_size(0);\n"
                        "    const long lid = (long)get_local_id(0), i = g0 + lid;\n"
                        "    {\n%s    }\n}\n",
                        all, x.body.s ? x.body.s : "");
    }
    return ocl_fused_text_done(&x, false, arith, text, t, n_args, why, cap);
}
