/* libportable OpenCL kernels — the program's element type and shared helpers.
 *
 * Every program is this file plus the kernel files, compiled once per element
 * type with -DPT_DTYPE=<PT_K_* code> (and -DPT_FP64 where the device has
 * cl_khr_fp64). prelude.cl (which enables cl_khr_fp64 there), kernel_abi.h,
 * philox.h and numeric_rules.h come before this file. */

/* T: element type. UT: its unsigned twin, where integer arithmetic wraps
 * (signed overflow is undefined in OpenCL C as in C). ACC: what reductions
 * accumulate in (the type itself for floats, 64-bit for integers). */
#if PT_DTYPE == PT_K_F32
typedef float T;
typedef float ACC;
#define PT_IS_FLOAT 1
#define PT_ACC_LOWEST (-INFINITY)
#elif PT_DTYPE == PT_K_F64
typedef double T;
typedef double ACC;
#define PT_IS_FLOAT 1
#define PT_ACC_LOWEST (-(double)INFINITY)
#elif PT_DTYPE == PT_K_I32
typedef int T;
typedef uint UT;
typedef long ACC;
#define PT_IS_FLOAT 0
#define PT_IS_SIGNED 1
#define PT_T_MIN INT_MIN
#define PT_ACC_LOWEST LONG_MIN
#elif PT_DTYPE == PT_K_I64
typedef long T;
typedef ulong UT;
typedef long ACC;
#define PT_IS_FLOAT 0
#define PT_IS_SIGNED 1
#define PT_T_MIN LONG_MIN
#define PT_ACC_LOWEST LONG_MIN
#elif PT_DTYPE == PT_K_F16 || PT_DTYPE == PT_K_BF16
/* 16-bit storage: the program moves bit patterns (fill, copy, where,
 * gather, one_hot) and converts them (copy_to_<dst>); the plugin sends it
 * no arithmetic, which the core runs in f32 (half_widen.c). */
typedef ushort T;
typedef ushort UT;
typedef long ACC;
#define PT_IS_FLOAT 0
#define PT_IS_SIGNED 0
#define PT_IS_HALF 1
#define PT_ACC_LOWEST LONG_MIN
#elif PT_DTYPE == PT_K_U8
typedef uchar T;
typedef uchar UT;
typedef long ACC;
#define PT_IS_FLOAT 0
#define PT_IS_SIGNED 0
#define PT_ACC_LOWEST LONG_MIN
#else
#error "PT_DTYPE must be one of the PT_K_* dtype codes"
#endif

/* NaN test that is simply false for integer types. */
#if PT_IS_FLOAT
#define PT_ISNAN(x) isnan(x)
#else
#define PT_ISNAN(x) 0
#endif

/* Float to integer as portable/numeric_rules.h (embedded before this file)
 * says, for values of the program's float type: saturating to i32/i64 (NaN
 * gives 0), wrapping to u8 through i64. */
#if PT_DTYPE == PT_K_F32
#define PT_SAT_I32(x) pt_sat_i32_f32(x)
#define PT_SAT_I64(x) pt_sat_i64_f32(x)
#define PT_WRAP_U8(x) pt_wrap_u8_f32(x)
#elif PT_DTYPE == PT_K_F64
#define PT_SAT_I32(x) pt_sat_i32_f64(x)
#define PT_SAT_I64(x) pt_sat_i64_f64(x)
#define PT_WRAP_U8(x) pt_wrap_u8_f64(x)
#endif

/* ---- Strided element-wise addressing ----
 *
 * The host collapses an element-wise launch to at most 8 dimensions and
 * passes the shape and each operand's element strides (0 on broadcast
 * dimensions) as long8 vectors, innermost dimension in component 0: vectors
 * have the same layout on every host and device, unlike structs. nd >= 1:
 * when every operand is contiguous the host runs the kernels' _contig form
 * instead, which takes no layout (elementwise.cl); nd == 1 is a single strided
 * dimension. The decomposition is unrolled
 * over the vector components so that no private array is needed (CPU
 * implementations such as PoCL keep private arrays per work-item in memory). */
#define PT_LAYOUT_PARAMS int nd, long8 shape, long8 st_o, long8 st_a, long8 st_b, long8 st_c

typedef struct pt_pos {
    long o, a, b, c;
} pt_pos;

/* Peels dimension k off the remaining index i; the outermost dimension takes
 * what remains without a division. */
#define PT_LOCATE_DIM(k)                                                                         \
    if (nd > k) {                                                                                \
        long c = i;                                                                              \
        if (nd > k + 1) {                                                                        \
            long q = i / shape.s##k;                                                             \
            c = i - q * shape.s##k;                                                              \
            i = q;                                                                               \
        }                                                                                        \
        p.o += c * st_o.s##k;                                                                    \
        p.a += c * st_a.s##k;                                                                    \
        p.b += c * st_b.s##k;                                                                    \
        p.c += c * st_c.s##k;                                                                    \
    }

/* Element offsets (before each operand's base offset) of element i of the
 * launch, counted in row-major order. */
static inline pt_pos pt_locate(long i, int nd, long8 shape, long8 st_o, long8 st_a, long8 st_b,
                               long8 st_c) {
    pt_pos p;
    if (nd == 1) {
        p.o = i * st_o.s0;
        p.a = i * st_a.s0;
        p.b = i * st_b.s0;
        p.c = i * st_c.s0;
        return p;
    }
    p.o = p.a = p.b = p.c = 0;
    PT_LOCATE_DIM(0) PT_LOCATE_DIM(1) PT_LOCATE_DIM(2) PT_LOCATE_DIM(3)
    PT_LOCATE_DIM(4) PT_LOCATE_DIM(5) PT_LOCATE_DIM(6) PT_LOCATE_DIM(7)
    return p;
}

/* The row walk: for launches whose work-groups each lie inside one row of
 * the innermost dimension (the host picks a group size that divides it,
 * and launches exactly the elements, from offset 0). Element i = g0 + lid,
 * g0 the group's first element: every division is of g0, the same for all
 * of the group's work-items. A CPU implementation runs a group's
 * work-items as a loop, which stays vectorised (stride-1 loads contiguous,
 * broadcast ones invariant) only where those divisions leave the loop.
 * PoCL moved them out when they were few and not behind a test: with the
 * walk of every dimension (tests of nd, or seven divisions), a broadcast
 * add of 16K floats ran 3-5x slower than a contiguous one, as slow as
 * pt_locate's per-element walk; with two divisions, as fast. So on CPU
 * devices (PT_CPU_DEVICE) the row walk covers three dimensions with two
 * divisions and no test: the layout pads the shape with 1s, and the host
 * launches it on layouts of at most OCL_ROWS_CPU_MAX_ND (internal.h) only,
 * so what is left of the row number after dimension 1 is dimension 2's
 * coordinate. GPUs run each work-item apart and walk every dimension there
 * is. */
#ifdef PT_CPU_DEVICE
#define PT_ROWS_HAS(k) 1
#define PT_ROWS_OUTER PT_ROWS_DIM(1) PT_ROWS_LAST(2)
#else
#define PT_ROWS_HAS(k) (nd > k)
#define PT_ROWS_OUTER                                                                            \
    PT_ROWS_DIM(1) PT_ROWS_DIM(2) PT_ROWS_DIM(3) PT_ROWS_DIM(4) PT_ROWS_DIM(5) PT_ROWS_DIM(6)     \
    PT_ROWS_DIM(7)
#endif
#define PT_ROWS_DIM(k)                                                                           \
    if (PT_ROWS_HAS(k)) {                                                                        \
        const long q = r / shape.s##k, c = r - q * shape.s##k;                                   \
        r = q;                                                                                   \
        p.o += c * st_o.s##k;                                                                    \
        p.a += c * st_a.s##k;                                                                    \
        p.b += c * st_b.s##k;                                                                    \
        p.c += c * st_c.s##k;                                                                    \
    }
/* The outermost dimension the walk covers: the rest of the row number. */
#define PT_ROWS_LAST(k)                                                                          \
    p.o += r * st_o.s##k;                                                                        \
    p.a += r * st_a.s##k;                                                                        \
    p.b += r * st_b.s##k;                                                                        \
    p.c += r * st_c.s##k;

static inline pt_pos pt_locate_rows(long g0, long lid, int nd, long8 shape, long8 st_o, long8 st_a,
                                    long8 st_b, long8 st_c) {
    long r = g0 / shape.s0;
    const long col = g0 - r * shape.s0 + lid;
    pt_pos p;
    p.o = col * st_o.s0;
    p.a = col * st_a.s0;
    p.b = col * st_b.s0;
    p.c = col * st_c.s0;
    PT_ROWS_OUTER
    (void)nd;
    return p;
}

/* One work-item per element: the host launches at least n work-items
 * (rounded up to the work-group size). This is the best pattern both for
 * GPUs (coalesced) and for CPU implementations, which run the work-items of a
 * group as a vectorisable loop. */
#define PT_FOR_EACH(i, n)                                                                        \
    const long i = (long)get_global_id(0);                                                       \
    if (i < (n))
/* The same for launches of exactly the items to do (the _contig kernels of
 * elementwise.cl: whole groups only): no `i < n` test, which on PoCL alone
 * kept the work-item loop from vectorising. */
#define PT_FOR_EACH_EXACT(i) const long i = (long)get_global_id(0);
