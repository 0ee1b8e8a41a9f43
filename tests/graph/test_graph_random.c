/* Random steps, captured and replayed against the same steps run eagerly:
 * a differential test of the whole graph path (recording, the memory plan,
 * constant folding, fusion, the OpenCL plugin's group kernels) on shapes
 * and orders no hand-written case thought of.
 *
 * Each seed draws a program of up to 40 instructions over four state
 * buffers (12, 40, 256 and 1000 floats, read and written in place at every
 * replay) and four inputs (new values copied in before each round):
 * unary and binary element-wise ops, scalars broadcast, casts through f16
 * and i32, comparisons into where, transposed and narrowed views, sums and
 * maxima, copies and axpys into the state, into views of it and into an
 * overlapping part of the same buffer. Which results stay referenced at
 * the capture's end (outputs) and which are released (intermediates the
 * plan places) is drawn too. Two rounds of new inputs each replay the
 * graph and run the program eagerly on a twin state; every state buffer
 * and output must hold the same bits. On cuda a reduction joined to a
 * chain sums in its own order (docs/graphs.md), so there its values are
 * held to PT_TEST_GRAPH_RANDOM_TOL (relative) instead.
 *
 *   test_graph_random [seeds] [first seed]     (default 200 from 1)
 * PT_TEST_GRAPH_RANDOM_SAY=1 prints each seed's ops and kernels. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "portable/portable.h"

#define N_STATE 4
#define MAX_INSTR 40
#define MAX_VALUES 128

static const int64_t state_numel[N_STATE] = {12, 40, 256, 1000};
static const int64_t state_rows[N_STATE] = {3, 5, 16, 25}; /* the 2-D shape its transposed views have */

/* A value's shape class: two values of one class have one shape, so every
 * binary op of the program is valid. */
enum { CLS_SCALAR = -1, CLS_NONE = -100 /* a write into a value: no new one */ };
#define CLS_NARROW(len) (-2 - (int)(len))      /* 1-D, len elements */
#define CLS_TRANSPOSED(k) (1000 + (k))        /* [numel / rows, rows], state size k's */
#define CLS_IS_NARROW(c) ((c) <= -2)
#define NARROW_LEN(c) (-2 - (c))

typedef enum {
    I_NEG, I_TANH, I_SIGMOID, I_RELU, I_EXP, I_MUL_SCALAR, I_ADD_SCALAR, I_CAST_F16, I_CAST_I32, I_ADD, I_MUL,
    I_SUB, I_MAXIMUM, I_WHERE, I_ADD_BROADCAST, I_NARROW, I_TRANSPOSE, I_SUM, I_MAX, I_COPY_STATE, I_AXPY_STATE,
    I_COPY_VIEW, I_SHIFT_STATE, I_SUM_ROWS, I_MEAN_COLUMNS, I_ADD_ROW, I_COPY_TRANSPOSED, I_COUNT
} instr_kind;

typedef struct instr {
    instr_kind kind;
    int a, b, c; /* value indices: operands, and the destination of a write */
    int64_t at;  /* I_NARROW: the view's first element */
    double s;
} instr;

/* The values a program's run holds: the state, the inputs, then each result. */
typedef struct values {
    pt_tensor *t[MAX_VALUES];
    int n;
} values;

static uint64_t rng_state;
static uint64_t draw(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static int draw_below(int n) { return (int)(draw() % (uint64_t)n); }

/* State size k's 2-D shape [rows, columns]. */
static int64_t columns_of(int k) { return state_numel[k] / state_rows[k]; }

static int64_t numel_of_class(int cls) {
    if (cls == CLS_SCALAR) return 1;
    if (CLS_IS_NARROW(cls)) return NARROW_LEN(cls);
    return state_numel[cls >= 1000 ? cls - 1000 : cls];
}

/* A value of class cls other than avoid, or -1. */
static int any_of(const int *cls, int n, int want, int avoid) {
    int at[MAX_VALUES], m = 0;
    for (int i = 0; i < n; ++i)
        if (cls[i] == want && i != avoid) at[m++] = i;
    return m ? at[draw_below(m)] : -1;
}

/* Draws a program: valid by construction (operands of one class, writes
 * into values of the source's class). Returns its length. */
static int draw_program(instr *p) {
    int cls[MAX_VALUES], nv = 0;
    for (int k = 0; k < 2 * N_STATE; ++k) cls[nv++] = k % N_STATE;
    const int len = 8 + draw_below(MAX_INSTR - 8);
    int n = 0;
    while (n < len && nv < MAX_VALUES) {
        instr q = {.kind = (instr_kind)draw_below(I_COUNT), .s = (double)(draw_below(9) - 4) / 4.0};
        q.a = draw_below(nv);
        const int ca = cls[q.a];
        q.b = any_of(cls, nv, ca, -1);
        int out = ca;
        switch (q.kind) {
        case I_ADD_BROADCAST:
            if ((q.b = any_of(cls, nv, CLS_SCALAR, -1)) < 0) q.kind = I_ADD, q.b = any_of(cls, nv, ca, -1);
            break;
        case I_NARROW:
        case I_TRANSPOSE:
            if (q.kind == I_TRANSPOSE && (ca < 0 || ca >= 1000)) q.kind = I_NEG;
            if (q.kind == I_NARROW && (ca == CLS_SCALAR || ca >= 1000)) q.kind = I_TANH; /* 1-D only */
            if (q.kind == I_NARROW) {
                const int64_t whole = numel_of_class(ca), part = whole > 1 ? whole / 2 : 1;
                q.at = (int64_t)draw_below((int)(whole - part + 1));
                out = CLS_NARROW(part);
            } else if (q.kind == I_TRANSPOSE) {
                out = CLS_TRANSPOSED(ca);
            }
            break;
        case I_SUM:
        case I_MAX: out = CLS_SCALAR; break;
        case I_COPY_STATE:
        case I_AXPY_STATE:
        case I_SHIFT_STATE:
            if (ca < 0 || ca >= N_STATE) { q.kind = I_SIGMOID; break; }
            q.c = ca; /* the state buffer of the source's size */
            out = CLS_NONE;
            break;
        case I_COPY_VIEW:
            if (!CLS_IS_NARROW(ca) || (q.c = any_of(cls, nv, ca, q.a)) < 0) { q.kind = I_RELU; break; }
            out = CLS_NONE;
            break;
        case I_SUM_ROWS: /* [rows, columns] summed over dim 1: rows long */
        case I_MEAN_COLUMNS: /* averaged over dim 0: columns long */
            if (ca < 0 || ca >= N_STATE) { q.kind = I_NEG; break; }
            out = CLS_NARROW(q.kind == I_SUM_ROWS ? state_rows[ca] : columns_of(ca));
            break;
        case I_ADD_ROW: /* [rows, columns] + a row of columns, broadcast */
            if (ca < 0 || ca >= N_STATE || (q.b = any_of(cls, nv, CLS_NARROW(columns_of(ca)), -1)) < 0) {
                q.kind = I_NEG;
                break;
            }
            break;
        case I_COPY_TRANSPOSED: /* into the state through its transposed view */
            if (ca < 1000) { q.kind = I_NEG; break; }
            q.c = ca - 1000;
            out = CLS_NONE;
            break;
        default: break;
        }
        p[n++] = q;
        if (out != CLS_NONE) cls[nv++] = out;
    }
    return n;
}

/* The state size of a 1-D value of one (its class), or 0. */
static int size_class(pt_tensor *x) {
    for (int k = 0; k < N_STATE; ++k)
        if (state_numel[k] == pt_tensor_numel(x)) return k;
    return 0;
}

/* Runs program p on state and inputs, the results appended to v. */
static bool run(const instr *p, int n, pt_tensor *const *state, pt_tensor *const *inputs, values *v) {
    memset(v, 0, sizeof *v);
    for (int k = 0; k < N_STATE; ++k) v->t[v->n++] = state[k];
    for (int k = 0; k < N_STATE; ++k) v->t[v->n++] = inputs[k];
    for (int i = 0; i < n; ++i) {
        const instr *q = &p[i];
        pt_tensor *a = v->t[q->a], *b = q->b >= 0 ? v->t[q->b] : NULL, *r = NULL;
        switch (q->kind) {
        case I_NEG: r = pt_neg(a); break;
        case I_TANH: r = pt_tanh(a); break;
        case I_SIGMOID: r = pt_sigmoid(a); break;
        case I_RELU: r = pt_relu(a); break;
        case I_EXP: { /* bounded, so values stay finite */
            pt_tensor *c = pt_clamp(a, -4, 4);
            r = pt_exp(c);
            pt_release(c);
            break;
        }
        case I_MUL_SCALAR: r = pt_mul_scalar(a, q->s); break;
        case I_ADD_SCALAR: r = pt_add_scalar(a, q->s); break;
        case I_CAST_F16:
        case I_CAST_I32: { /* there and back: the rounding and saturation of each cast */
            /* no pt_retain of a: released in the scope, it would give back
             * the scope's reference and leave the retained one (tensor.h) */
            pt_tensor *scaled = q->kind == I_CAST_I32 ? pt_mul_scalar(a, 1000.0) : NULL;
            pt_tensor *c = pt_cast(scaled ? scaled : a, q->kind == I_CAST_I32 ? PT_I32 : PT_F16);
            r = pt_cast(c, PT_F32);
            pt_release(c);
            pt_release(scaled);
            break;
        }
        case I_ADD:
        case I_ADD_BROADCAST: r = pt_add(a, b); break;
        case I_MUL: r = pt_mul(a, b); break;
        case I_SUB: r = pt_sub(a, b); break;
        case I_MAXIMUM: r = pt_maximum(a, b); break;
        case I_WHERE: {
            pt_tensor *g = pt_gt(a, b), *h = pt_mul_scalar(b, 0.5);
            r = pt_where(g, a, h);
            pt_release(g);
            pt_release(h);
            break;
        }
        case I_NARROW: {
            const int64_t whole = pt_tensor_numel(a), part = whole > 1 ? whole / 2 : 1;
            r = pt_narrow(a, 0, q->at, part);
            break;
        }
        case I_TRANSPOSE: {
            int64_t rows = 1;
            for (int s = 0; s < N_STATE; ++s)
                if (state_numel[s] == pt_tensor_numel(a)) rows = state_rows[s];
            const int64_t shape[2] = {rows, pt_tensor_numel(a) / rows};
            pt_tensor *m = pt_reshape(a, 2, shape);
            r = pt_transpose(m, 0, 1);
            pt_release(m);
            break;
        }
        case I_SUM: r = pt_sum(a, PT_ALL, false); break;
        case I_MAX: r = pt_max(a, PT_ALL, false); break;
        case I_COPY_STATE:
        case I_COPY_VIEW:
            if (pt_copy_(v->t[q->c], a) != PT_OK) return false;
            continue;
        case I_AXPY_STATE:
            if (pt_axpy_(v->t[q->c], q->s, a) != PT_OK) return false;
            continue;
        case I_SHIFT_STATE: { /* state[1:] = state[:-1]: a copy over itself, shifted */
            pt_tensor *s = v->t[q->c];
            const int64_t m = pt_tensor_numel(s) - 1;
            pt_tensor *dst = pt_narrow(s, 0, 1, m), *src = pt_narrow(s, 0, 0, m);
            const pt_status st = dst && src ? pt_copy_(dst, src) : pt_last_status();
            pt_release(dst);
            pt_release(src);
            if (st != PT_OK) return false;
            continue;
        }
        case I_SUM_ROWS:
        case I_MEAN_COLUMNS:
        case I_ADD_ROW:
        case I_COPY_TRANSPOSED: {
            const int k = q->kind == I_COPY_TRANSPOSED ? q->c : size_class(a);
            const int64_t shape[2] = {state_rows[k], columns_of(k)}, flat = state_numel[k];
            pt_tensor *m = pt_reshape(q->kind == I_COPY_TRANSPOSED ? v->t[q->c] : a, 2, shape);
            if (q->kind == I_COPY_TRANSPOSED) {
                pt_tensor *t = pt_transpose(m, 0, 1);
                const pt_status st = t ? pt_copy_(t, a) : pt_last_status();
                pt_release(t);
                pt_release(m);
                if (st != PT_OK) return false;
                continue;
            }
            if (q->kind == I_ADD_ROW) {
                pt_tensor *sum = pt_add(m, b);
                r = pt_reshape(sum, 1, &flat);
                pt_release(sum);
            } else {
                r = q->kind == I_SUM_ROWS ? pt_sum(m, 1, false) : pt_mean(m, 0, false);
            }
            pt_release(m);
            break;
        }
        case I_COUNT: break;
        }
        if (!r) return false;
        v->t[v->n++] = r;
    }
    return true;
}

static pt_tensor *filled(pt_device *d, int64_t n, uint64_t seed) {
    float *x = malloc((size_t)n * sizeof *x);
    if (!x) return NULL;
    for (int64_t i = 0; i < n; ++i)
        x[i] = (float)((int64_t)((seed * 7919 + (uint64_t)i * 104729) % 2001) - 1000) / 400.0f;
    pt_tensor *t = pt_from_data(d, PT_F32, 1, &n, x);
    free(x);
    return t;
}

/* Whether a (replayed) and b (eager) hold the same values: the same bits,
 * or within tol relative where tol > 0. */
static bool same(pt_tensor *a, pt_tensor *b, double tol, int seed, const char *what, int index) {
    const int64_t n = pt_tensor_numel(a);
    if (n != pt_tensor_numel(b)) return false;
    float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    pt_tensor *ac = pt_contiguous(a), *bc = pt_contiguous(b);
    bool ok = x && y && ac && bc && pt_to_host(ac, x, (size_t)n * sizeof *x) == PT_OK &&
              pt_to_host(bc, y, (size_t)n * sizeof *y) == PT_OK;
    for (int64_t i = 0; ok && i < n; ++i) {
        if (!memcmp(&x[i], &y[i], sizeof x[i])) continue;
        if (tol > 0 && fabs((double)x[i] - y[i]) <= tol * (1 + fabs((double)y[i]))) continue;
        printf("seed %d, %s %d, element %lld: replayed %.9g, eagerly %.9g\n", seed, what, index, (long long)i, x[i],
               y[i]);
        ok = false;
    }
    pt_release(ac);
    pt_release(bc);
    free(x);
    free(y);
    return ok;
}

/* One seed: false when the replays and the eager runs differ (or a run failed). */
static bool run_seed(pt_device *d, int seed, double tol) {
    rng_state = 0x9E3779B97F4A7C15ull ^ ((uint64_t)seed * 0x2545F4914F6CDD1Dull);
    instr p[MAX_INSTR];
    const int n = draw_program(p);
    const uint64_t kept = draw();
    pt_tensor *se[N_STATE], *sg[N_STATE], *ie[N_STATE], *ig[N_STATE];
    for (int k = 0; k < N_STATE; ++k) {
        se[k] = filled(d, state_numel[k], (uint64_t)seed * 10 + (uint64_t)k);
        sg[k] = filled(d, state_numel[k], (uint64_t)seed * 10 + (uint64_t)k);
        ie[k] = pt_zeros(d, PT_F32, 1, &state_numel[k]);
        ig[k] = pt_zeros(d, PT_F32, 1, &state_numel[k]);
    }
    values vg = {0}, ve = {0};
    pt_scope scope = pt_scope_begin();
    bool ok = pt_graph_capture_begin(d) == PT_OK;
    const bool recorded = ok && run(p, n, sg, ig, &vg);
    for (int i = 2 * N_STATE; i < vg.n; ++i) vg.t[i] = (kept >> (i % 64)) & 1 ? pt_keep(vg.t[i]) : NULL;
    pt_scope_end(scope);
    pt_graph *g = ok ? pt_graph_capture_end(d) : NULL;
    if (!recorded || !g) {
        printf("seed %d: the capture failed: %s\n", seed, pt_last_error());
        ok = false;
    }
    if (ok && getenv("PT_TEST_GRAPH_RANDOM_SAY")) {
        pt_graph_stats st;
        if (pt_graph_info(g, &st) == PT_OK)
            printf("seed %d: %d instructions, %lld ops, %lld kernels, %lld intermediates, %lld outputs\n", seed, n,
                   (long long)st.ops, (long long)st.kernels, (long long)st.intermediates, (long long)st.outputs);
    }
    for (int round = 0; ok && round < 2; ++round) {
        for (int k = 0; k < N_STATE; ++k) {
            pt_tensor *h = filled(pt_cpu(), state_numel[k], 500 + (uint64_t)round * 3 + (uint64_t)k);
            ok = ok && h && pt_copy_(ie[k], h) == PT_OK && pt_copy_(ig[k], h) == PT_OK;
            pt_release(h);
        }
        if (ok && pt_graph_replay(g) != PT_OK) {
            printf("seed %d: replay %d failed: %s\n", seed, round + 1, pt_last_error());
            ok = false;
        }
        scope = pt_scope_begin();
        if (ok && !run(p, n, se, ie, &ve)) {
            printf("seed %d: the eager run failed: %s\n", seed, pt_last_error());
            ok = false;
        }
        for (int k = 0; ok && k < N_STATE; ++k) ok = same(sg[k], se[k], tol, seed, "state buffer", k);
        for (int i = 2 * N_STATE; ok && i < vg.n; ++i)
            if (vg.t[i]) ok = same(vg.t[i], ve.t[i], tol, seed, "output", i);
        pt_scope_end(scope);
    }
    for (int i = 2 * N_STATE; i < vg.n; ++i) pt_release(vg.t[i]);
    pt_graph_free(g);
    for (int k = 0; k < N_STATE; ++k) {
        pt_release(se[k]);
        pt_release(sg[k]);
        pt_release(ie[k]);
        pt_release(ig[k]);
    }
    return ok;
}

int main(int argc, char **argv) {
    const int seeds = argc > 1 ? atoi(argv[1]) : 200, first = argc > 2 ? atoi(argv[2]) : 1;
    const char *tol_env = getenv("PT_TEST_GRAPH_RANDOM_TOL");
    const double tol = tol_env ? atof(tol_env) : 0;
    pt_device *d = pt_default_device();
    if (!d) {
        printf("skip: %s\n", pt_last_error());
        return 77;
    }
    int failed = 0;
    for (int seed = first; seed < first + seeds; ++seed) {
        const bool ok = run_seed(d, seed, tol);
        CHECK(ok);
        failed += !ok;
    }
    printf("%d random programs on %s, %d differ from their eager runs%s\n", seeds, pt_device_name(d), failed,
           tol > 0 ? " beyond the tolerance" : "");
    return check_summary();
}
