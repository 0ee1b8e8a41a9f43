/* libportable cpu backend — FUSED: a graph's chain of element-wise steps
 * run as one pass over memory (backend.h, the FUSED family).
 *
 * The elements are walked in blocks of PT_CPU_FUSED_BLOCK. For each block
 * every step in turn computes its values into a slot of a small per-thread
 * scratch (in L1/L2), reading external inputs through their own strides and
 * the values of earlier steps from their slots; a stored step's block is
 * then copied to its output (with streaming stores when the output is
 * large, as the eager kernels do), or, when the output is not streamed and
 * no later step reads the value, computed straight into the output (one
 * pass over the block fewer). Only the external inputs and the stored
 * values cross memory, where the eager ops write and re-read every
 * intermediate.
 *
 * Each step calls the row kernel its eager op would run
 * (pt_cpu_elementwise_row, pt_cpu_copy_row: the same vectorised functions
 * and conversions, chosen by the same strides), so every value rounds
 * exactly as the eager op's and the chain equals the eager ops bit for bit.
 * 16-bit steps reach this plugin as conversions around f32 steps (the core
 * widens them, half_widen.c), which round after every step as eager does.
 *
 * A reduction after the chain (SUM, MEAN, MAX) runs through the eager
 * reduce kernel with its input made on demand by the chain
 * (pt_cpu_reduce_filled): the same loop shape and summation order, so the
 * same bits; the last value is never stored unless the chain must store it.
 * A reduction whose pieces would not fit in cache (a long full reduction)
 * is refused, and the core runs it apart. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Elements per block: a slot of 8-byte values is 16 KiB, so a chain's few
 * live values stay in L2, and each step's row kernel is called half as
 * often as with 1024: the 4-op chain of bench_fuse over 16M floats ran
 * 1.06-1.10x faster (alternated, 2-core AVX-512 Xeon), 4096 no faster. */
#define PT_CPU_FUSED_BLOCK 2048
#define PT_CPU_FUSED_SLOT_BYTES (PT_CPU_FUSED_BLOCK * 8)
/* The largest piece of a reduction's input made at once (elements a
 * thread): past it the core sends the reduction apart. */
#define PT_CPU_FUSED_REDUCE_MAX 65536

typedef struct fused_step {
    const pt_op *op;
    pt_cpu_row_fn fn;
    pt_cpu_scalar sc[2];
    int slot;                         /* where its block of values lives */
    int src_slot[PT_OP_MAX_INPUTS];   /* an earlier step's slot, or -1: op->in[j] */
    int64_t es;                       /* out's element size */
    bool store, stream;
    bool direct; /* stored, not streamed, and read by no later step: computed straight into out */
    pt_cpu_iter it; /* the step's walk: out and earlier values dense, external inputs their strides */
} fused_step;

typedef struct fused_run {
    const pt_fused_chain *chain;
    fused_step *steps;
    int n_slots;
    int threads;     /* scratch areas */
    char *scratch;   /* threads * n_slots slots */
} fused_run;

/* Checks step k of chain and picks its row kernel and scalars. */
static pt_status check_step(const pt_op *fop, const pt_fused_chain *chain, int32_t k, fused_step *f,
                            int64_t *grain) {
    const pt_fused_step *s = &chain->steps[k];
    const pt_op *op = &s->op;
    const pt_op_info *info = pt_op_info_of(op->kind);
    if (!info || info->family != PT_OP_FAMILY_ELEMENTWISE)
        return pt_cpu_bad_op(fop, "a step of the chain is not an element-wise op");
    if (op->out.ndim < 1 || op->out.ndim > PT_MAX_DIMS || !pt_cpu_dense_with(&op->out, chain->numel))
        return pt_cpu_bad_op(fop, "a step's out is not contiguous with the chain's element count");
    f->op = op;
    *grain = PT_CPU_GRAIN_CHEAP;
    pt_status st = op->kind == PT_OP_COPY ? pt_cpu_copy_row(op, &f->fn)
                                          : pt_cpu_elementwise_row(op, &f->fn, f->sc, grain);
    if (st != PT_OK) return st;
    for (int j = 0; j < PT_OP_MAX_INPUTS; ++j) {
        const int32_t src = s->src[j];
        f->src_slot[j] = -1;
        if (j >= op->n_inputs || src < 0) continue;
        if (src >= k) return pt_cpu_bad_op(fop, "a step reads a value of a step at or after it");
        if (chain->steps[src].op.out.dtype != op->in[j].dtype)
            return pt_cpu_bad_op(fop, "a step reads an earlier value as another dtype");
    }
    f->es = (int64_t)pt_dtype_table_size(op->out.dtype);
    pt_cpu_iter *it = &f->it;
    it->ndim = op->out.ndim;
    it->nops = 1 + op->n_inputs;
    it->numel = chain->numel;
    int64_t dense = 1;
    for (int d = op->out.ndim - 1; d >= 0; --d) {
        it->shape[d] = op->out.shape[d];
        for (int k = 0; k < it->nops; ++k)
            it->strides[k][d] = k > 0 && s->src[k - 1] < 0 ? op->in[k - 1].strides[d] : dense;
        dense *= op->out.shape[d];
    }
    it->elsize[0] = (size_t)f->es;
    for (int j = 0; j < op->n_inputs; ++j) {
        it->elsize[j + 1] = pt_dtype_table_size(op->in[j].dtype);
        it->base[j + 1] = s->src[j] < 0 ? pt_cpu_base(&op->in[j]) : NULL; /* earlier values: their slots */
    }
    f->store = s->store;
    f->stream = s->store && chain->numel * f->es >= PT_CPU_STREAM_MIN_BYTES;
    return PT_OK;
}

/* Slots by liveness: a value keeps its slot until its last reader has run.
 * A step never writes the slot of one of its inputs (a conversion to a
 * wider type would overwrite elements before reading them). */
static int assign_slots(const pt_fused_chain *chain, fused_step *f, int32_t *last_use, int *owner) {
    const int32_t n = chain->n_steps;
    for (int32_t k = 0; k < n; ++k) last_use[k] = k;
    for (int32_t k = 0; k < n; ++k)
        for (int j = 0; j < f[k].op->n_inputs; ++j)
            if (chain->steps[k].src[j] >= 0) last_use[chain->steps[k].src[j]] = k;
    int n_slots = 0;
    for (int32_t k = 0; k < n; ++k) { /* owner[slot]: the step whose value it holds, or -1 */
        int slot = -1;
        for (int i = 0; i < n_slots && slot < 0; ++i)
            if (owner[i] < 0 || last_use[owner[i]] < k) slot = i;
        if (slot < 0) slot = n_slots++;
        owner[slot] = k;
        f[k].slot = slot;
        for (int j = 0; j < f[k].op->n_inputs; ++j)
            if (chain->steps[k].src[j] >= 0) f[k].src_slot[j] = f[chain->steps[k].src[j]].slot;
    }
    for (int32_t k = 0; k < n; ++k) f[k].direct = f[k].store && !f[k].stream && last_use[k] == k;
    return n_slots;
}

/* Step f's values of elements [b0, b0 + n) into o: earlier values from
 * their slots, external inputs from their element b0, walked row by row
 * along the step's own (merged) dims as the eager kernels walk them. */
static void step_block(const fused_step *f, char *slots, int64_t b0, int64_t n, char *o) {
    const pt_op *op = f->op;
    char *p[PT_CPU_MAX_OPERANDS];
    int64_t idx[PT_MAX_DIMS];
    bool located = false;
    p[0] = o;
    for (int j = 0; j < op->n_inputs; ++j) {
        if (f->src_slot[j] >= 0) {
            p[j + 1] = slots + (size_t)f->src_slot[j] * PT_CPU_FUSED_SLOT_BYTES;
            continue;
        }
        if (!located) pt_cpu_iter_index(&f->it, b0, idx);
        located = true;
        p[j + 1] = pt_cpu_iter_at(&f->it, j + 1, idx);
    }
    pt_cpu_iter_walk(&f->it, p, b0, b0 + n, f->fn, f->sc, false);
}

/* This thread's scratch: its OpenMP thread number within the team running
 * the chain; outside a team of ours one thread uses it, whatever its number. */
static char *thread_slots(const fused_run *r) {
#ifdef _OPENMP
    const int tid = omp_get_thread_num() % r->threads;
#else
    const int tid = 0;
#endif
    return r->scratch + (size_t)tid * (size_t)r->n_slots * PT_CPU_FUSED_SLOT_BYTES;
}

/* Every step over elements [b0, b0 + n), n <= the block; the last value
 * goes to last_dst when given (a reduction's input). */
static void run_block(const fused_run *r, char *slots, int64_t b0, int64_t n, char *last_dst) {
    const int32_t n_steps = r->chain->n_steps;
    for (int32_t k = 0; k < n_steps; ++k) {
        const fused_step *f = &r->steps[k];
        char *dst = f->store ? pt_cpu_base(&f->op->out) + b0 * f->es : NULL;
        char *o = last_dst && k == n_steps - 1 ? last_dst
                  : f->direct                  ? dst
                                               : slots + (size_t)f->slot * PT_CPU_FUSED_SLOT_BYTES;
        step_block(f, slots, b0, n, o);
        if (!f->store || o == dst) continue;
        if (f->stream) pt_cpu_stream_copy(dst, o, (size_t)(n * f->es));
        else memcpy(dst, o, (size_t)(n * f->es));
    }
}

static void fused_piece(void *ctx, int64_t begin, int64_t end) {
    const fused_run *r = ctx;
    char *slots = thread_slots(r);
    for (int64_t b = begin; b < end; b += PT_CPU_FUSED_BLOCK)
        run_block(r, slots, b, end - b < PT_CPU_FUSED_BLOCK ? end - b : PT_CPU_FUSED_BLOCK, NULL);
    pt_cpu_stream_fence();
}

/* pt_cpu_fill_fn: the chain's last value for a reduction. */
static void fused_fill(void *ctx, int64_t begin, int64_t n, char *dst) {
    const fused_run *r = ctx;
    char *slots = thread_slots(r);
    const int64_t es = r->steps[r->chain->n_steps - 1].es;
    for (int64_t b = 0; b < n; b += PT_CPU_FUSED_BLOCK)
        run_block(r, slots, begin + b, n - b < PT_CPU_FUSED_BLOCK ? n - b : PT_CPU_FUSED_BLOCK,
                  dst + b * es);
    pt_cpu_stream_fence();
}

/* The chain's reduction: what pt_cpu_reduce_filled needs. */
static pt_status check_reduce(const pt_op *fop, const pt_fused_chain *chain) {
    const pt_op *red = chain->reduce;
    if (red->kind != PT_OP_SUM && red->kind != PT_OP_MEAN && red->kind != PT_OP_MAX)
        return pt_cpu_bad_op(fop, "a chain's reduction is not sum, mean or max");
    pt_status s = pt_cpu_reduce_filled(red, NULL, NULL, false);
    if (s != PT_OK) return s;
    const pt_operand *in = &red->in[0];
    if (in->dtype != chain->steps[chain->n_steps - 1].op.out.dtype || !pt_cpu_dense_with(in, chain->numel))
        return pt_cpu_bad_op(fop, "a chain's reduction does not read its last value");
    const int64_t region = pt_cpu_reduce_region(red);
    if (region > PT_CPU_FUSED_REDUCE_MAX)
        return pt_cpu_fail(PT_ERR_UNSUPPORTED,
                           "a fused %s reads %lld elements of the chain at once (more than %d would "
                           "leave the cache): the core runs it apart",
                           pt_op_name(red->kind), (long long)region, PT_CPU_FUSED_REDUCE_MAX);
    return PT_OK;
}

pt_status pt_cpu_fused(const pt_op *op, bool run) {
    const pt_fused_chain *chain = op->fused;
    if (!chain || chain->n_steps < 1 || !chain->steps || chain->numel < 1)
        return pt_cpu_bad_op(op, "a fused op without a chain of steps");
    const int32_t n = chain->n_steps;
    fused_step *steps = calloc((size_t)n, sizeof *steps);
    int32_t *last_use = malloc((size_t)n * sizeof *last_use);
    int *owner = malloc((size_t)n * sizeof *owner);
    pt_status s = PT_OK;
    if (!steps || !last_use || !owner) {
        s = pt_cpu_fail(PT_ERR_OUT_OF_MEMORY, "out of host memory for a fused chain of %d steps", (int)n);
        goto done;
    }
    int64_t grain = PT_CPU_GRAIN_CHEAP;
    for (int32_t k = 0; k < n && s == PT_OK; ++k) {
        int64_t g;
        s = check_step(op, chain, k, &steps[k], &g);
        if (g < grain) grain = g;
    }
    if (s == PT_OK && chain->reduce) s = check_reduce(op, chain);
    if (s != PT_OK || !run) goto done;

    fused_run r = {.chain = chain, .steps = steps, .threads = pt_cpu_max_threads()};
    r.n_slots = assign_slots(chain, steps, last_use, owner);
    const size_t bytes = (size_t)r.threads * (size_t)r.n_slots * PT_CPU_FUSED_SLOT_BYTES;
    r.scratch = malloc(bytes);
    if (!r.scratch) {
        s = pt_cpu_fail(PT_ERR_OUT_OF_MEMORY, "out of host memory for a fused chain's %zu bytes of scratch",
                        bytes);
        goto done;
    }
    if (chain->reduce) {
        s = pt_cpu_reduce_filled(chain->reduce, fused_fill, &r, true);
    } else {
        /* The chain costs about its steps together: a smaller grain than
         * any one of them goes parallel where their sum of work pays. */
        grain /= n;
        if (grain < PT_CPU_FUSED_BLOCK * 16) grain = PT_CPU_FUSED_BLOCK * 16;
        pt_cpu_parallel_ranges(chain->numel, grain, 64, fused_piece, &r);
    }
    free(r.scratch);
done:
    free(steps);
    free(last_use);
    free(owner);
    return s;
}
