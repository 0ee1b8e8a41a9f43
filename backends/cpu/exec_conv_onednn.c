/* libportable cpu backend — CONV2D, CONV2D_BWD_DATA and CONV2D_BWD_WEIGHT
 * (backend.h, CONV family) on oneDNN, the library PyTorch runs its CPU
 * convolutions on. oneDNN's JIT picks the widest ISA the CPU has at run time
 * (AVX-512 where present; ONEDNN_MAX_CPU_ISA caps it).
 *
 * What a call costs beyond the primitive itself is kept small: each shape's
 * primitive, its reorders between the core's plain NCHW/OIHW layouts and the
 * blocked ones the primitive chose, and its memory objects are built once
 * and cached (a small LRU table keyed by the whole descriptor); a call only
 * points the memory objects at its buffers. Scratch space (the primitive's
 * scratchpad, in user mode, and the blocked copies) comes from the core's
 * caching allocator in one block per call. Debian's oneDNN uses the OpenMP
 * runtime (libgomp), the same team as the plugin's own loops: no second
 * thread pool. One lock serialises the table and the execution, since
 * memory objects are shared by every caller of a shape. */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "exec_conv.h"
#include "internal.h"

/* Shapes a training step keeps alive at once (each layer's three passes,
 * a few nets) fit with room to spare; the least recently used goes. */
#define CONV_CACHE 48
#define KEY_N 19

/* One operand of the primitive: the layout the core sends and, when the
 * primitive wants another, a reorder through a scratch copy. */
typedef struct conv_slot {
    int arg;                  /* DNNL_ARG_SRC, ... */
    bool output;              /* written by the primitive (out) */
    dnnl_memory_t user;       /* the core's buffer, plain layout */
    dnnl_memory_t inner;      /* the primitive's layout; == user when no reorder */
    dnnl_primitive_t reorder; /* user -> inner (inputs) or inner -> user (out) */
    size_t inner_bytes;       /* scratch bytes for inner, 0 when no reorder */
    int blk;                  /* an activation in nChw16c / nChw8c: the plugin's own copy (8 or 16), else 0 */
    int64_t dims[4];          /* the user layout's N, C, H, W */
} conv_slot;

typedef struct conv_entry {
    int64_t key[KEY_N];
    uint64_t last_use;        /* 0: empty */
    bool refused;             /* oneDNN has no implementation: the core composes it */
    bool own_winograd;        /* oneDNN has no Winograd here: exec_conv_winograd.c runs it, no primitive */
    char why[160];            /* the refusal */
    dnnl_primitive_t prim;
    conv_slot slot[3];        /* in[0], in[1], out */
    dnnl_memory_t scratch;
    size_t scratch_bytes;
} conv_entry;

static struct {
    pthread_mutex_t lock;
    bool ready;
    char init_error[160];
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    conv_entry cache[CONV_CACHE];
    uint64_t clock;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The convolution's image x, filters w and result y, whichever of op's
 * operands each kind makes them: CONV2D reads x and w into y, the
 * backward-data pass reads dY and w into dX, the backward-weights pass x
 * and dY into dW. */
typedef struct conv_roles {
    const pt_operand *x, *w, *y;
} conv_roles;

static conv_roles roles_of(const pt_op *op) {
    switch (op->kind) {
    case PT_OP_CONV2D_BWD_DATA: return (conv_roles){&op->out, &op->in[1], &op->in[0]};
    case PT_OP_CONV2D_BWD_WEIGHT: return (conv_roles){&op->in[0], &op->out, &op->in[1]};
    default: return (conv_roles){&op->in[0], &op->in[1], &op->out};
    }
}

/* Multiply-adds below which a convolution runs on the calling thread. A
 * small layer split over two cores gains less than the ops after it lose:
 * they run on the calling thread and read the activation from the other
 * core's cache. Measured on the digits CNN (16 channels, 8x8 images, batch
 * 64: 0.6M-2.4M multiply-adds a pass; 2-core Zen 4 VM, 2026-12-02): its
 * epoch took 19-26 ms on one thread and 25-41 ms with oneDNN on two,
 * though its convolutions were 30% faster; the [32, 64, 32, 32] x 64
 * benchmark layer (1.2G) runs 1.7x faster on two. */
#define CONV_GRAIN_MACS ((int64_t)32 << 20)

static int64_t conv_macs(const pt_op *op) {
    const conv_roles r = roles_of(op);
    const pt_operand *x = r.x, *w = r.w;
    const int64_t *y = r.y->shape;
    /* w is [O, C / groups, KH, KW]: each output element takes C / groups * KH * KW */
    return x->shape[0] * w->shape[0] * w->shape[1] * w->shape[2] * w->shape[3] * y[2] * y[3];
}

/* The team oneDNN sizes op's work for: the plugin's (OMP_NUM_THREADS capped
 * by the cores this process may run on), or one thread for a small layer;
 * set around oneDNN's calls and put back after, since it reads
 * omp_get_max_threads. */
static int team_size(const pt_op *op) {
    if (conv_macs(op) < CONV_GRAIN_MACS) return 1;
#ifdef PT_CPU_ONEDNN_ONE_THREAD
    return 1; /* the sanitizer builds: CMakeLists.txt says why */
#else
    return pt_cpu_max_threads();
#endif
}
static int team_enter(const pt_op *op) {
    const int before = omp_get_max_threads();
    omp_set_num_threads(team_size(op));
    return before;
}
static void team_leave(int before) { omp_set_num_threads(before); }

/* A reorder is a copy: below the copy grain (a layer's activations in a
 * small CNN) it runs on the calling thread, as the plugin's own copies do,
 * rather than pay a parallel region that costs more than it saves, and
 * every one of them when a busy machine holds the team's other cores. */
static void reorder_team(const pt_op *op, const conv_slot *s) {
    omp_set_num_threads(s->inner_bytes / sizeof(float) < PT_CPU_GRAIN_CHEAP ? 1 : team_size(op));
}

static bool engine_up(void) {
    if (g.ready) return true;
    if (g.init_error[0]) return false;
    dnnl_status_t s = dnnl_engine_create(&g.engine, dnnl_cpu, 0);
    if (s == dnnl_success) s = dnnl_stream_create(&g.stream, g.engine, dnnl_stream_default_flags);
    if (s != dnnl_success) {
        snprintf(g.init_error, sizeof g.init_error, "oneDNN's cpu engine failed to start (%s)", dnnl_status2str(s));
        return false;
    }
    g.ready = true;
    return true;
}

static void key_of(const pt_op *op, bool direct_only, int64_t key[KEY_N]) {
    const conv_roles r = roles_of(op);
    const pt_operand *x = r.x, *w = r.w;
    const int64_t *y = r.y->shape;
    const int64_t k[KEY_N] = {op->kind, x->shape[0], x->shape[1], x->shape[2], x->shape[3], w->shape[0],
                              w->shape[2], w->shape[3], y[2], y[3], op->window[0], op->window[1],
                              op->window[2], op->window[3], op->window[4], op->window[5], op->count,
                              team_size(op), direct_only};
    memcpy(key, k, sizeof k);
}

static void entry_free(conv_entry *e) {
    for (int k = 0; k < 3; ++k) {
        conv_slot *s = &e->slot[k];
        if (s->reorder) dnnl_primitive_destroy(s->reorder);
        if (s->inner && s->inner != s->user) dnnl_memory_destroy(s->inner);
        if (s->user) dnnl_memory_destroy(s->user);
    }
    if (e->scratch) dnnl_memory_destroy(e->scratch);
    if (e->prim) dnnl_primitive_destroy(e->prim);
    memset(e, 0, sizeof *e);
}

/* The plain layout of an operand as the core sends it: 4-D contiguous, the
 * weight as goihw when grouped (the same bytes). */
static void user_md(dnnl_memory_desc_t *md, const pt_operand *o, bool weight, int64_t groups) {
    if (weight && groups > 1) {
        const dnnl_dims_t d = {groups, o->shape[0] / groups, o->shape[1], o->shape[2], o->shape[3]};
        dnnl_memory_desc_init_by_tag(md, 5, d, dnnl_f32, dnnl_goihw);
    } else {
        const dnnl_dims_t d = {o->shape[0], o->shape[1], o->shape[2], o->shape[3]};
        dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32, weight ? dnnl_oihw : dnnl_nchw);
    }
}

static void any_md(dnnl_memory_desc_t *any, const dnnl_memory_desc_t *user) {
    dnnl_memory_desc_init_by_tag(any, user->ndims, user->dims, dnnl_f32, dnnl_format_tag_any);
}

/* The channel block of want when it is user (an NCHW activation) with its
 * channels in blocks of 16 or 8 that divide them, else 0: those copies
 * are exec_conv_reorder.c's, the rest (weights, padded blocks) oneDNN's. */
static int channel_block(const dnnl_memory_desc_t *want, const dnnl_memory_desc_t *user, bool weight) {
    if (weight || user->ndims != 4) return 0;
    static const struct {
        int blk;
        dnnl_format_tag_t tag;
    } blocked[] = {{16, dnnl_nChw16c}, {8, dnnl_nChw8c}};
    for (size_t i = 0; i < sizeof blocked / sizeof *blocked; ++i) {
        dnnl_memory_desc_t b;
        if (user->dims[1] % blocked[i].blk == 0 &&
            dnnl_memory_desc_init_by_tag(&b, 4, user->dims, dnnl_f32, blocked[i].tag) == dnnl_success &&
            dnnl_memory_desc_equal(want, &b))
            return blocked[i].blk;
    }
    return 0;
}

/* The slot for operand md of the primitive: a reorder when its layout
 * differs from the core's. */
static dnnl_status_t slot_init(conv_slot *s, int arg, bool output, bool weight, const dnnl_memory_desc_t *user,
                               const_dnnl_primitive_desc_t pd) {
    s->arg = arg;
    s->output = output;
    const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
    dnnl_status_t st = dnnl_memory_create(&s->user, user, g.engine, DNNL_MEMORY_NONE);
    if (st != dnnl_success || !want || dnnl_memory_desc_equal(want, user)) {
        s->inner = s->user;
        return st;
    }
    s->inner_bytes = dnnl_memory_desc_get_size(want);
    if ((st = dnnl_memory_create(&s->inner, want, g.engine, DNNL_MEMORY_NONE)) != dnnl_success) return st;
    if ((s->blk = channel_block(want, user, weight))) {
        memcpy(s->dims, user->dims, sizeof s->dims);
        return dnnl_success;
    }
    dnnl_primitive_desc_t rpd = NULL;
    st = output ? dnnl_reorder_primitive_desc_create(&rpd, want, g.engine, user, g.engine, NULL)
                : dnnl_reorder_primitive_desc_create(&rpd, user, g.engine, want, g.engine, NULL);
    if (st == dnnl_success) st = dnnl_primitive_create(&s->reorder, rpd);
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    return st;
}

/* The convolution descriptor of op in prop (forward or one adjoint), every
 * operand's layout left to oneDNN, in algorithm alg: convolution_winograd
 * (F(4x4, 3x3), AVX-512 only, 3x3 stride 1), whose error is in
 * backends/cpu/README.md, or convolution_direct, what PyTorch asks for. */
static dnnl_status_t conv_desc(const pt_op *op, dnnl_prop_kind_t prop, dnnl_alg_kind_t alg,
                               const dnnl_memory_desc_t *x, const dnnl_memory_desc_t *w, const dnnl_memory_desc_t *y,
                               dnnl_convolution_desc_t *cd) {
    dnnl_memory_desc_t xa, wa, ya;
    any_md(&xa, x);
    any_md(&wa, w);
    any_md(&ya, y);
    const dnnl_dims_t strides = {op->window[0], op->window[1]};
    const dnnl_dims_t dil = {op->window[4] - 1, op->window[5] - 1}; /* oneDNN counts the gap */
    /* The padding on both sides, as torch passes it; oneDNN's size check
     * rounds down like the core's. */
    const dnnl_dims_t pad = {op->window[2], op->window[3]};
    switch (prop) {
    case dnnl_backward_data:
        return dnnl_dilated_convolution_backward_data_desc_init(cd, alg, &xa, &wa, &ya, strides, dil, pad, pad);
    case dnnl_backward_weights:
        return dnnl_dilated_convolution_backward_weights_desc_init(cd, alg, &xa, &wa, NULL, &ya, strides, dil, pad,
                                                                   pad);
    default:
        return dnnl_dilated_convolution_forward_desc_init(cd, dnnl_forward_training, alg, &xa, &wa, NULL, &ya,
                                                          strides, dil, pad, pad);
    }
}

static dnnl_status_t entry_build(conv_entry *e, const pt_op *op, dnnl_alg_kind_t alg) {
    const conv_roles r = roles_of(op);
    const pt_operand *x = r.x, *w = r.w, *y = r.y;
    dnnl_memory_desc_t xm, wm, ym;
    user_md(&xm, x, false, op->count);
    user_md(&wm, w, true, op->count);
    user_md(&ym, y, false, op->count);
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t fwd = NULL, pd = NULL;
    dnnl_convolution_desc_t fd, cd;
    dnnl_status_t st = dnnl_primitive_attr_create(&attr);
    if (st == dnnl_success) st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    /* The adjoints are created against the forward pass they belong to. */
    if (st == dnnl_success) st = conv_desc(op, dnnl_forward_training, alg, &xm, &wm, &ym, &fd);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(&fwd, &fd, attr, g.engine, NULL);
    if (st == dnnl_success && op->kind != PT_OP_CONV2D) {
        const dnnl_prop_kind_t prop = op->kind == PT_OP_CONV2D_BWD_DATA ? dnnl_backward_data : dnnl_backward_weights;
        st = conv_desc(op, prop, alg, &xm, &wm, &ym, &cd);
        if (st == dnnl_success) st = dnnl_primitive_desc_create(&pd, &cd, attr, g.engine, fwd);
    } else if (st == dnnl_success) {
        pd = fwd;
        fwd = NULL;
    }
    if (st == dnnl_success) st = dnnl_primitive_create(&e->prim, pd);
    if (st == dnnl_success) {
        switch (op->kind) {
        case PT_OP_CONV2D:
            if ((st = slot_init(&e->slot[0], DNNL_ARG_SRC, false, false, &xm, pd)) == dnnl_success &&
                (st = slot_init(&e->slot[1], DNNL_ARG_WEIGHTS, false, true, &wm, pd)) == dnnl_success)
                st = slot_init(&e->slot[2], DNNL_ARG_DST, true, false, &ym, pd);
            break;
        case PT_OP_CONV2D_BWD_DATA:
            if ((st = slot_init(&e->slot[0], DNNL_ARG_DIFF_DST, false, false, &ym, pd)) == dnnl_success &&
                (st = slot_init(&e->slot[1], DNNL_ARG_WEIGHTS, false, true, &wm, pd)) == dnnl_success)
                st = slot_init(&e->slot[2], DNNL_ARG_DIFF_SRC, true, false, &xm, pd);
            break;
        default:
            if ((st = slot_init(&e->slot[0], DNNL_ARG_SRC, false, false, &xm, pd)) == dnnl_success &&
                (st = slot_init(&e->slot[1], DNNL_ARG_DIFF_DST, false, false, &ym, pd)) == dnnl_success)
                st = slot_init(&e->slot[2], DNNL_ARG_DIFF_WEIGHTS, true, true, &wm, pd);
            break;
        }
    }
    if (st == dnnl_success) {
        const dnnl_memory_desc_t *sm = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        e->scratch_bytes = sm ? dnnl_memory_desc_get_size(sm) : 0;
        if (e->scratch_bytes) st = dnnl_memory_create(&e->scratch, sm, g.engine, DNNL_MEMORY_NONE);
    }
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (fwd) dnnl_primitive_desc_destroy(fwd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return st;
}

/* Whether Winograd is worth asking oneDNN for on op: its transforms cost in
 * proportion to the channels and its savings to their product, so it pays
 * only on wide layers, and on batches of 16 or more (below that oneDNN's
 * own choice, convolution_auto, keeps to direct). Measured on AVX-512 (one
 * thread, forward + both adjoints, 2026-12-01): 1.2-1.7x faster than direct
 * from 64 channels in and out on 8x8 images and from 32 on 16x16 up,
 * 1.2-4x slower at 16 (a small CNN's layers, which oneDNN's heuristic,
 * counting only the batch, would send to it). It is asked for by name, not
 * through convolution_auto, because auto's heuristic also counts threads:
 * on two it sent the backward-weights pass of [32, 64, 32, 32] x 64 to the
 * direct algorithm, 13.4 ms against Winograd's 7.2 (Zen 4, 2026-12-02). */
static bool winograd_pays(const pt_op *op) {
    const conv_roles r = roles_of(op);
    const pt_operand *x = r.x, *w = r.w;
    const int64_t c = x->shape[1], o = w->shape[0], hw = x->shape[2] * x->shape[3];
    const int64_t narrow = c < o ? c : o;
    return op->count == 1 && x->shape[0] >= 16 && (narrow >= 64 || (narrow >= 32 && hw >= 256));
}

/* The entry of op's shape, built on first use (g.lock held). */
static conv_entry *entry_for(const pt_op *op, bool direct_only) {
    int64_t key[KEY_N];
    key_of(op, direct_only, key);
    conv_entry *victim = &g.cache[0];
    for (int i = 0; i < CONV_CACHE; ++i) {
        conv_entry *e = &g.cache[i];
        if (e->last_use && memcmp(e->key, key, sizeof key) == 0) {
            e->last_use = ++g.clock;
            return e;
        }
        if (e->last_use < victim->last_use) victim = e;
    }
    entry_free(victim);
    const int team = team_enter(op); /* JIT kernels are generated for this team size */
    const bool offer = !direct_only && winograd_pays(op);
    dnnl_status_t st = entry_build(victim, op, offer ? dnnl_convolution_winograd : dnnl_convolution_direct);
    if (st != dnnl_success && offer) { /* no Winograd for this shape or ISA (AVX2 has none) */
        entry_free(victim);
        /* The forward pass and the backward-data one take the plugin's own
         * Winograd instead of the direct algorithm; the backward-weights
         * pass (and what it does not take) stays direct. */
        if (pt_cpu_conv_winograd_fits(op)) victim->own_winograd = true;
        else st = entry_build(victim, op, dnnl_convolution_direct);
    }
    team_leave(team);
    if (st != dnnl_success && !victim->own_winograd) {
        entry_free(victim);
        victim->refused = true;
        snprintf(victim->why, sizeof victim->why, "oneDNN has no implementation of it (%s)", dnnl_status2str(st));
    }
    /* entry_free clears the key, so it is written once the entry is final */
    memcpy(victim->key, key, sizeof key);
    victim->last_use = ++g.clock;
    return victim;
}

static pt_status refused(const pt_op *op, const char *why) {
    const pt_operand *x = roles_of(op).x;
    return pt_cpu_fail(PT_ERR_UNSUPPORTED,
                       "%s of [%lld, %lld, %lld, %lld] with groups %lld: %s; pt_f_conv2d composes it from im2col "
                       "and a GEMM",
                       pt_op_name(op->kind), (long long)x->shape[0], (long long)x->shape[1],
                       (long long)x->shape[2], (long long)x->shape[3], (long long)op->count, why);
}

/* An activation slot's copy from src to dst: to the blocked layout for an
 * input, back for the output. */
static void copy_blocks(const conv_slot *s, const void *src, void *dst) {
    pt_cpu_reorder_channel_blocks(src, dst, s->dims[0], s->dims[1], s->dims[2] * s->dims[3], s->blk, !s->output);
}

/* Runs e on op's buffers: reorders in, the primitive, the reorder out. */
static pt_status entry_run(conv_entry *e, int dev, const pt_op *op) {
    const pt_operand *operand[3] = {&op->in[0], &op->in[1], &op->out};
    size_t total = 0, at[4];
    for (int k = 0; k < 3; ++k) {
        at[k] = total;
        total += (e->slot[k].inner_bytes + 63) & ~(size_t)63;
    }
    at[3] = total;
    total += e->scratch_bytes;
    void *buf = NULL, *block = NULL;
    size_t off = 0;
    if (total) {
        pt_status s = pt_cpu_host->device_alloc("cpu", dev, total, &buf, &off, &block);
        if (s != PT_OK) return s;
    }
    char *base = (char *)buf + off;
    dnnl_exec_arg_t args[4];
    int nargs = 0;
    dnnl_status_t st = dnnl_success;
    for (int k = 0; k < 3 && st == dnnl_success; ++k) {
        conv_slot *s = &e->slot[k];
        st = dnnl_memory_set_data_handle(s->user, pt_cpu_base(operand[k]));
        if (st == dnnl_success && s->inner_bytes) st = dnnl_memory_set_data_handle(s->inner, base + at[k]);
        args[nargs++] = (dnnl_exec_arg_t){s->arg, s->inner};
    }
    if (st == dnnl_success && e->scratch) {
        st = dnnl_memory_set_data_handle(e->scratch, base + at[3]);
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, e->scratch};
    }
    const int team = team_enter(op);
    for (int k = 0; k < 2 && st == dnnl_success; ++k)
        if (e->slot[k].blk) {
            copy_blocks(&e->slot[k], pt_cpu_base(operand[k]), base + at[k]);
        } else if (e->slot[k].reorder) {
            dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, e->slot[k].user}, {DNNL_ARG_TO, e->slot[k].inner}};
            reorder_team(op, &e->slot[k]);
            st = dnnl_primitive_execute(e->slot[k].reorder, g.stream, 2, r);
        }
    omp_set_num_threads(team_size(op));
    if (st == dnnl_success) st = dnnl_primitive_execute(e->prim, g.stream, nargs, args);
    if (st == dnnl_success && e->slot[2].blk) {
        copy_blocks(&e->slot[2], base + at[2], pt_cpu_base(operand[2]));
    } else if (st == dnnl_success && e->slot[2].reorder) {
        dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, e->slot[2].inner}, {DNNL_ARG_TO, e->slot[2].user}};
        reorder_team(op, &e->slot[2]);
        st = dnnl_primitive_execute(e->slot[2].reorder, g.stream, 2, r);
    }
    if (st == dnnl_success) st = dnnl_stream_wait(g.stream);
    team_leave(team);
    if (block) pt_cpu_host->device_free("cpu", dev, block);
    if (st != dnnl_success)
        return pt_cpu_fail(PT_ERR_BACKEND, "%s: oneDNN failed executing it (%s)", pt_op_name(op->kind),
                           dnnl_status2str(st));
    return PT_OK;
}

pt_status pt_cpu_conv_onednn(int dev, const pt_op *op, bool run, bool direct_only) {
    if (pt_cpu_host->struct_size < offsetof(pt_host_api, device_free) + sizeof pt_cpu_host->device_free)
        return refused(op, "the core is too old to lend scratch memory (no device_alloc)");
    pthread_mutex_lock(&g.lock);
    pt_status s = PT_OK;
    bool own = false;
    if (!engine_up()) s = refused(op, g.init_error);
    else {
        conv_entry *e = entry_for(op, direct_only);
        if (e->refused) s = refused(op, e->why);
        else if (e->own_winograd) own = true;
        else if (run) s = entry_run(e, dev, op);
    }
    pthread_mutex_unlock(&g.lock);
    /* The plugin's Winograd shares nothing with the table: outside the lock */
    if (own && run) s = pt_cpu_conv_winograd(dev, op, team_size(op));
    return s;
}

const char *pt_cpu_onednn_isa(void) {
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic: case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "no JIT";
    }
}

void pt_cpu_onednn_version(char *dst, size_t cap) {
    const dnnl_version_t *v = dnnl_version();
    snprintf(dst, cap, "oneDNN %d.%d.%d %s", v->major, v->minor, v->patch, pt_cpu_onednn_isa());
}
