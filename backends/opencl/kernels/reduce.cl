/* libportable OpenCL kernels — reductions and softmax over the middle axis
 * of [outer, r, inner].
 *
 * Geometry shared by both kernels: the outputs q = o * inner + i are
 * numbered like the contiguous [outer, inner] result. A work-group is tx_n
 * consecutive outputs (columns) by ty_n = local size / tx_n rows, both powers
 * of two chosen by the host: many rows when r is long (each row strides over
 * r, then the rows combine in local memory as a tree), many columns when r is
 * short or inner is wide (consecutive i read consecutive addresses). For a
 * two-pass reduction group g also picks a slice s of r (S slices, chunk
 * elements each); the first pass writes one partial per (o, s, i).
 *
 * How a row's work-items share r: `blocked` == 0 interleaves them (element j
 * goes to row j % ty_n: neighbouring work-items read neighbouring addresses,
 * which GPUs coalesce); `blocked` == 1 gives each row one contiguous run of r
 * (CPU implementations run a group's work-items one after another, so
 * interleaving would touch every cache line once per work-item). */

/* The part [*j, *end) of [j0, j1) that row ty of ty_n walks, with step *step. */
static inline void pt_row_share(long j0, long j1, int ty, int ty_n, int blocked, long *j,
                                long *end, long *step) {
    if (blocked) {
        long per = (j1 - j0 + ty_n - 1) / ty_n;
        *j = j0 + ty * per;
        *end = min(j1, *j + per);
        *step = 1;
    } else {
        *j = j0 + ty;
        *end = j1;
        *step = ty_n;
    }
}

/* ---- Combining values: NaN wins for max, the first maximum for argmax ---- */
static inline ACC pt_max_nan(ACC a, ACC b) {
    return PT_ISNAN(a) ? a : PT_ISNAN(b) ? b : (b > a ? b : a);
}

/* Whether (vb, ib) beats (va, ia) for argmax: NaN counts as the maximum and
 * ties go to the smaller index, so the first maximum (or first NaN) wins
 * whatever the order of combination. */
static inline bool pt_argmax_takes_b(ACC va, long ia, ACC vb, long ib) {
    bool na = PT_ISNAN(va), nb = PT_ISNAN(vb);
    if (na || nb) return (na && nb) ? ib < ia : nb;
    if (vb != va) return vb > va;
    return ib < ia;
}

static inline ACC pt_acc_add(ACC a, ACC b) {
#if PT_IS_FLOAT
    return a + b;
#else
    return (ACC)((ulong)a + (ulong)b); /* integer sums wrap */
#endif
}

/* Stores an accumulator as the output dtype, converting like copy_to_<dst>
 * (elementwise.cl). */
static inline void pt_store_acc(__global uchar *out, long k, int dt, ACC v) {
    switch (dt) {
    case PT_K_F32: ((__global float *)out)[k] = (float)v; break;
#ifdef PT_FP64
    case PT_K_F64: ((__global double *)out)[k] = (double)v; break;
#endif
#if PT_IS_FLOAT
    case PT_K_I32: ((__global int *)out)[k] = PT_SAT_I32(v); break;
    case PT_K_I64: ((__global long *)out)[k] = PT_SAT_I64(v); break;
    case PT_K_U8: ((__global uchar *)out)[k] = PT_WRAP_U8(v); break;
#else
    case PT_K_I32: ((__global int *)out)[k] = (int)v; break;
    case PT_K_I64: ((__global long *)out)[k] = (long)v; break;
    case PT_K_U8: ((__global uchar *)out)[k] = (uchar)v; break;
#endif
    }
}

/* Folds (vb, ib) into (*va, *ia) as op combines values. */
static inline void pt_reduce_fold(ACC *va, long *ia, ACC vb, long ib, int op) {
    if (op == PT_K_ARGMAX) {
        if (pt_argmax_takes_b(*va, *ia, vb, ib)) {
            *va = vb;
            *ia = ib;
        }
    } else if (op == PT_K_MAX) {
        *va = pt_max_nan(*va, vb);
    } else {
        *va = pt_acc_add(*va, vb);
    }
}

/* A fused chain's program (launch_fused_source.c) puts this file after
 * its generated text, which defines these three: the chain's parameters
 * (after each reduce kernel's own), their names, and element k of the
 * input, computed by the chain at k - io instead of loaded, so the chain's
 * last value is reduced in the reduce kernel's order without being stored.
 * Alone, the input is read from in. */
#ifndef PT_REDUCE_CHAIN_PARAMS
#define PT_REDUCE_CHAIN_PARAMS
#define PT_REDUCE_CHAIN_ARGS
#define PT_REDUCE_LOAD(k) (in_acc ? ((__global const ACC *)in)[k] : (ACC)((__global const T *)in)[k])
#endif

/* A row's share [j, end) by step (pt_row_share) of output (o, i), folded
 * from the identity: what one work-item of the group kernel holds before
 * the rows combine. */
static inline void pt_reduce_row(__global const uchar *in, long io, int in_acc, __global const long *in_idx,
                                 long iio, long s_o, long s_r, long s_i, long o, long i, long j, long end,
                                 long step, int op, ACC *acc, long *idx PT_REDUCE_CHAIN_PARAMS) {
    *acc = (op == PT_K_MAX || op == PT_K_ARGMAX) ? PT_ACC_LOWEST : (ACC)0;
    *idx = LONG_MAX;
    for (; j < end; j += step) {
        long k = io + o * s_o + j * s_r + i * s_i;
        ACC x = PT_REDUCE_LOAD(k);
        long xi = (op == PT_K_ARGMAX && in_acc) ? in_idx[iio + k - io] : j;
        pt_reduce_fold(acc, idx, x, xi, op);
    }
}

/* Writes output q = (o, i) of slice s: see the kernels' stages. */
static inline void pt_reduce_store(__global uchar *out, long oo, int out_dtype, __global long *out_idx, long oio,
                                   int op, int stage, long count, long q, long o, long i, long s, long S,
                                   long inner, ACC acc, long idx) {
    if (stage == PT_K_STAGE_PARTIAL) {
        long k = (o * S + s) * inner + i;
        ((__global ACC *)out)[k] = acc;
        if (op == PT_K_ARGMAX) out_idx[oio + k] = idx;
        return;
    }
    long k = oo + q;
    if (op == PT_K_ARGMAX) {
        ((__global long *)out)[k] = idx;
    } else {
#if PT_IS_FLOAT
        if (op == PT_K_MEAN) acc = acc / (ACC)count;
#endif
        pt_store_acc(out, k, out_dtype, acc);
    }
}

/* in: the program's type T, or (in_acc) accumulators from a partial pass
 * with their argmax indices in in_idx. stage FINAL writes out[oo + o*inner
 * + i] as out_dtype (ARGMAX: the i64 index; MEAN: sum / count). stage
 * PARTIAL writes the accumulator to ((ACC *)out)[(o*S + s)*inner + i] and the
 * index to out_idx at the same position. */
__kernel void reduce(__global const uchar *in, long io, int in_acc, __global const long *in_idx,
                     long iio, long s_o, long s_r, long s_i, long r, long outer, long inner,
                     long chunk, long S, int tx_n, int blocked, __global uchar *out, long oo,
                     int out_dtype, __global long *out_idx, long oio, int op, int stage,
                     long count, __local ACC *lv, __local long *li PT_REDUCE_CHAIN_PARAMS) {
    const int lid = (int)get_local_id(0);
    const int ty_n = (int)get_local_size(0) / tx_n;
    const int ty = lid / tx_n, tx = lid - ty * tx_n;
    const long nq = outer * inner;
    const long nqb = (nq + tx_n - 1) / tx_n;
    const long g = (long)get_group_id(0);
    const long s = g / nqb;
    const long q = (g - s * nqb) * tx_n + tx;
    const bool live = q < nq;
    const long o = live ? q / inner : 0;
    const long i = live ? q - o * inner : 0;
    const long j0 = s * chunk, j1 = min(r, j0 + chunk);

    ACC acc = (op == PT_K_MAX || op == PT_K_ARGMAX) ? PT_ACC_LOWEST : (ACC)0;
    long idx = LONG_MAX;
    if (live) {
        long j, end, step;
        pt_row_share(j0, j1, ty, ty_n, blocked, &j, &end, &step);
        pt_reduce_row(in, io, in_acc, in_idx, iio, s_o, s_r, s_i, o, i, j, end, step, op, &acc,
                      &idx PT_REDUCE_CHAIN_ARGS);
    }
    lv[lid] = acc;
    li[lid] = idx;
    for (int h = ty_n / 2; h > 0; h >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (ty < h) {
            ACC va = lv[lid];
            long ia = li[lid];
            pt_reduce_fold(&va, &ia, lv[lid + h * tx_n], li[lid + h * tx_n], op);
            lv[lid] = va;
            li[lid] = ia;
        }
    }
    if (ty != 0 || !live) return;
    pt_reduce_store(out, oo, out_dtype, out_idx, oio, op, stage, count, q, o, i, s, S, inner, lv[lid], li[lid]);
}

/* The most rows a group of the reduce kernel has (its largest local size). */
#define PT_REDUCE_ROWS_MAX 256

/* The reduce kernel's sums on CPU devices (the host's choice): one work
 * item per output and slice, running the ty_n rows the host gives it in turn
 * and combining them in the group kernel's tree order, without its barriers
 * and local memory: PoCL runs each barrier
 * region as a loop of its own over the group, and a sum over 8 elements of
 * [64, 16, 8, 8] took 340 us on 65K elements this way. The reduce kernel's
 * arguments, with ty_n in place of tx_n and no local memory. */
__kernel void reduce_serial(__global const uchar *in, long io, int in_acc, __global const long *in_idx,
                            long iio, long s_o, long s_r, long s_i, long r, long outer, long inner,
                            long chunk, long S, int ty_n, int blocked, __global uchar *out, long oo,
                            int out_dtype, __global long *out_idx, long oio, int op, int stage,
                            long count PT_REDUCE_CHAIN_PARAMS) {
    const long nq = outer * inner, w = (long)get_global_id(0);
    if (w >= nq * S || ty_n > PT_REDUCE_ROWS_MAX) return;
    const long s = w / nq, q = w - s * nq;
    const long o = q / inner, i = q - o * inner;
    const long j0 = s * chunk, j1 = min(r, j0 + chunk);
    ACC lv[PT_REDUCE_ROWS_MAX];
    long li[PT_REDUCE_ROWS_MAX];
    /* pt_row_share's shares, its division made once */
    const long per = blocked ? (j1 - j0 + ty_n - 1) / ty_n : 0;
    for (int ty = 0; ty < ty_n; ++ty) {
        const long j = blocked ? j0 + ty * per : j0 + ty, end = blocked ? min(j1, j + per) : j1;
        pt_reduce_row(in, io, in_acc, in_idx, iio, s_o, s_r, s_i, o, i, j, end, blocked ? 1 : ty_n, op, &lv[ty],
                      &li[ty] PT_REDUCE_CHAIN_ARGS);
    }
    for (int h = ty_n / 2; h > 0; h >>= 1)
        for (int ty = 0; ty < h; ++ty) pt_reduce_fold(&lv[ty], &li[ty], lv[ty + h], li[ty + h], op);
    pt_reduce_store(out, oo, out_dtype, out_idx, oio, op, stage, count, q, o, i, s, S, inner, lv[0], li[0]);
}

#if PT_IS_FLOAT
#if PT_DTYPE == PT_K_F32
typedef float8 PT_T8;
#else
typedef double8 PT_T8;
#endif
/* The most rows reduce_columns takes (the host runs reduce_serial beyond). */
#define PT_COLUMNS_ROWS_MAX 16

/* reduce_serial for eight neighbouring outputs at once where they are
 * neighbours in memory too (s_i == 1, inner a multiple of 8): a sum over the
 * batch of [N, C*H*W] read each column with a stride, one element at a time
 * (42 us for [64, 1024] on PoCL). Each lane walks reduce_serial's rows in
 * the same order and the lanes combine in its tree, so every output has its
 * bits; sums and means of the program's type only (no chain, no partials
 * read back). */
__kernel void reduce_columns(__global const T *in, long io, long s_o, long s_r, long r, long outer,
                             long inner, long chunk, long S, int ty_n, __global uchar *out, long oo,
                             int out_dtype, int op, int stage, long count) {
    const long groups = inner / 8, per_s = outer * groups, w = (long)get_global_id(0);
    if (w >= per_s * S || ty_n > PT_COLUMNS_ROWS_MAX) return;
    const long s = w / per_s, rest = w - s * per_s;
    const long o = rest / groups, i0 = (rest - o * groups) * 8;
    const long j0 = s * chunk, j1 = min(r, j0 + chunk);
    const long per = (j1 - j0 + ty_n - 1) / ty_n;
    PT_T8 lv[PT_COLUMNS_ROWS_MAX];
    for (int ty = 0; ty < ty_n; ++ty) {
        const long j = j0 + ty * per, end = min(j1, j + per);
        PT_T8 a = (PT_T8)(0);
        __global const T *p = in + io + o * s_o + j * s_r + i0;
        for (long jj = j; jj < end; ++jj, p += s_r) a += vload8(0, p);
        lv[ty] = a;
    }
    for (int h = ty_n / 2; h > 0; h >>= 1)
        for (int ty = 0; ty < h; ++ty) lv[ty] += lv[ty + h];
    T v[8];
    vstore8(lv[0], 0, v);
    for (int l = 0; l < 8; ++l)
        pt_reduce_store(out, oo, out_dtype, (__global long *)out, 0, op, stage, count, o * inner + i0 + l, o,
                        i0 + l, s, S, inner, v[l], LONG_MAX);
}

/* Reduces lv over the rows of the group and returns column tx's result to
 * every work-item of that column. */
static inline T pt_group_combine(__local T *lv, int lid, int tx, int ty, int tx_n, int ty_n,
                                 T v, bool is_max) {
    lv[lid] = v;
    for (int h = ty_n / 2; h > 0; h >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (ty < h) {
            T b = lv[lid + h * tx_n];
            lv[lid] = is_max ? pt_max_nan(lv[lid], b) : lv[lid] + b;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    T r = lv[tx];
    barrier(CLK_LOCAL_MEM_FENCE); /* everyone has read before lv is reused */
    return r;
}

/* out[o][j][i] (contiguous) = softmax over j of in[o][j][i], or its log. */
__kernel void softmax(__global const T *in, long io, long s_o, long s_r, long s_i, long r,
                      long outer, long inner, int tx_n, int blocked, __global T *out, long oo,
                      int log_mode, __local T *lv) {
    const int lid = (int)get_local_id(0);
    const int ty_n = (int)get_local_size(0) / tx_n;
    const int ty = lid / tx_n, tx = lid - ty * tx_n;
    const long q = (long)get_group_id(0) * tx_n + tx;
    const bool live = q < outer * inner;
    const long o = live ? q / inner : 0;
    const long i = live ? q - o * inner : 0;
    const long base = io + o * s_o + i * s_i;
    long j_begin, j_end, step;
    pt_row_share(0, r, ty, ty_n, blocked, &j_begin, &j_end, &step);

    T m = -INFINITY;
    if (live)
        for (long j = j_begin; j < j_end; j += step) m = pt_max_nan(m, in[base + j * s_r]);
    m = pt_group_combine(lv, lid, tx, ty, tx_n, ty_n, m, true);

    T sum = 0;
    if (live)
        for (long j = j_begin; j < j_end; j += step) sum += exp(in[base + j * s_r] - m);
    sum = pt_group_combine(lv, lid, tx, ty, tx_n, ty_n, sum, false);

    if (!live) return;
    const T log_sum = log(sum);
    for (long j = j_begin; j < j_end; j += step) {
        T y = in[base + j * s_r] - m;
        out[oo + (o * r + j) * inner + i] = log_mode ? y - log_sum : exp(y) / sum;
    }
}
#endif
