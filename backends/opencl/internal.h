/* libportable OpenCL backend — state and helpers shared by the plugin's files.
 *
 * The files follow the backends' one skeleton (docs/backends.md). Calls run
 * this way and form no circle between files (lint_backend_layout):
 * plugin.c (the vtable and pt_backend_entry only) -> exec.c (supports and
 * execute: dispatch by op family) -> exec_<family>*.c -> launch*.c
 * (arguments and work sizes, programs and their disk cache, the queue's
 * waits and trace stamps, graphs recorded into command buffers) ->
 * memory.c -> device*.c -> errors.c. exec.c's graph members record a
 * graph by dispatching its ops while launch_graph.c captures the launches.
 *
 * Symbol prefix: ocl_ (every non-static name). Nothing here is exported:
 * the plugin's only public symbol is pt_backend_entry (plugin.c). */
#ifndef PT_OCL_INTERNAL_H
#define PT_OCL_INTERNAL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "../shared/text_builder.h"
#include "kernels/kernel_abi.h"
#include "portable/backend.h"

/* The host's CLOCK_MONOTONIC in nanoseconds: the clock of trace stamps, of
 * program build times and of the upload probe. */
static inline int64_t ocl_host_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- Kernels of a per-dtype program: id and entry name ----
 * The first ids are the op table's kinds in order (OCL_K_OP_<KIND> ==
 * PT_OP_<KIND>): an element-wise kind with a row in portable/ew_math.h runs
 * the kernel "ew_<name>" of elementwise.cl, its name from the op table's
 * name column and its body from that row, so a new element-wise op needs
 * nothing here. The other kinds' ids are unused. */
/* The other kernels (after the op table's ids). The
 * copy_to_<dst> entries are in pt_dtype order (OCL_K_COPY_TO_F32 + dst). */
#define OCL_KERNELS(X)                                                                           \
    X(EW_WHERE, "ew_where") X(FILL, "fill") X(COPY_TO_F32, "copy_to_f32")                        \
    X(COPY_TO_F64, "copy_to_f64") X(COPY_TO_I32, "copy_to_i32") X(COPY_TO_I64, "copy_to_i64")    \
    X(COPY_TO_U8, "copy_to_u8") X(COPY_TO_F16, "copy_to_f16") X(COPY_TO_BF16, "copy_to_bf16")    \
    X(ARANGE, "arange") X(RAND_UNIFORM, "rand_uniform")              \
    X(RAND_NORMAL, "rand_normal") X(REDUCE, "reduce") X(REDUCE_SERIAL, "reduce_serial")         \
    X(REDUCE_COLUMNS, "reduce_columns")                                                           \
    X(SOFTMAX, "softmax")                                                                         \
    X(GATHER, "gather") X(ONE_HOT, "one_hot") X(IM2COL, "im2col") X(COL2IM, "col2im")  \
    X(MAX_POOL2D, "max_pool2d") X(MAX_POOL2D_INDEX, "max_pool2d_index") X(MAX_UNPOOL2D, "max_unpool2d") \
    X(EMBEDDING_LINKS, "embedding_links") X(EMBEDDING_SUM, "embedding_sum") X(EMBEDDING_ZERO, "embedding_zero")

typedef enum ocl_kernel_id {
#define OCL_OP_KERNEL_ENUM(kind, ...) OCL_K_OP_##kind,
#define OCL_KERNEL_ENUM(id, name) OCL_K_##id,
    PT_OP_TABLE(OCL_OP_KERNEL_ENUM)
    OCL_KERNELS(OCL_KERNEL_ENUM)
#undef OCL_KERNEL_ENUM
#undef OCL_OP_KERNEL_ENUM
        OCL_K__COUNT
} ocl_kernel_id;

/* The kernel's entry name ("ew_add"). */
const char *ocl_kernel_name(ocl_kernel_id k);

/* Which form of a kernel: the element-wise kernels (ew_*, fill, copy_to_*)
 * have a general one (any strides, broadcasts), two for operands that are
 * all contiguous: entry name + "_contig" for whole work-groups, + "_tail"
 * for any number of items, and + "_rows", the general one's arguments
 * walked a row per work-group (elementwise.cl and common.cl say why). */
typedef enum ocl_variant { OCL_GENERAL, OCL_CONTIG, OCL_TAIL, OCL_ROWS, OCL_VARIANT__COUNT } ocl_variant;

/* ---- cl_khr_command_buffer (device.c finds it, launch_graph.c uses it) ----
 * The extension's types and entry points, spelled out here (as in the
 * cl_ext.h of 2023; PoCL 3.1's version 0.9.0 and Intel's CPU runtime's
 * 1.0.0 both take these signatures) so the plugin builds with headers that
 * predate it; the entry points come from
 * clGetExtensionFunctionAddressForPlatform, never from the loader's symbols,
 * so the plugin loads with ICD loaders and drivers that lack them. */
typedef struct ocl_cl_command_buffer *ocl_command_buffer;
typedef cl_uint ocl_sync_point;
typedef cl_bitfield ocl_cb_properties;
#define OCL_CB_EXTENSION "cl_khr_command_buffer"
#define OCL_DEVICE_COMMAND_BUFFER_CAPABILITIES 0x12A9
#define OCL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES 0x12AA
#define OCL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE (1 << 2)
#define OCL_COMMAND_BUFFER_FLAGS 0x1293
#define OCL_COMMAND_BUFFER_SIMULTANEOUS_USE (1 << 0)

typedef struct ocl_cb_api {
    ocl_command_buffer(CL_API_CALL *create)(cl_uint n_queues, const cl_command_queue *queues,
                                            const ocl_cb_properties *props, cl_int *err);
    cl_int(CL_API_CALL *finalize)(ocl_command_buffer cb);
    cl_int(CL_API_CALL *release)(ocl_command_buffer cb);
    cl_int(CL_API_CALL *enqueue)(cl_uint n_queues, cl_command_queue *queues, ocl_command_buffer cb,
                                 cl_uint n_wait, const cl_event *wait, cl_event *event);
    cl_int(CL_API_CALL *ndrange)(ocl_command_buffer cb, cl_command_queue queue,
                                 const cl_bitfield *props, cl_kernel k, cl_uint work_dim,
                                 const size_t *offset, const size_t *global, const size_t *local,
                                 cl_uint n_wait, const ocl_sync_point *wait,
                                 ocl_sync_point *sync_point, void **mutable_handle);
    cl_command_queue_properties queue_props; /* what the device requires of the queue */
} ocl_cb_api;

/* The most arguments, and the largest, a recorded kernel may take (a
 * reduce kernel with a fused chain before it takes its own 25 and the
 * chain's; a group kernel its chains', 13 for each SGD parameter's step
 * with momentum). */
#define OCL_REC_MAX_ARGS 64
#define OCL_REC_MAX_ARG_BYTES 64

/* An object a graph holds: a buffer or a kernel (the other NULL). */
typedef struct ocl_held {
    cl_mem mem;
    cl_kernel kernel;
} ocl_held;

/* A run of a graph's ops recorded into a command buffer, or listed as
 * pre-bound kernels that a replay queues back to back with no argument
 * setting (launch_graph.c; a graph holds one per run of ops it can record,
 * exec.c): the buffer, the
 * last command's sync point (each command waits for the one before, so the
 * buffer keeps the queue's order on any implementation), a kernel object of
 * its own per command (PoCL 3.1 reads a recorded kernel's arguments when
 * the buffer runs, not when the command is recorded, so commands may not
 * share one whose arguments change), and the scratch buffers its
 * reductions use (a later, larger scratch replaces the device's own); all
 * held until the graph is released. */
/* One launch of a graph replayed as pre-bound kernels. */
typedef struct ocl_listed {
    cl_kernel k; /* the graph's own, its arguments set once */
    size_t offset, global, local;
} ocl_listed;

typedef struct ocl_graph {
    ocl_command_buffer cb; /* NULL: the launches are listed instead */
    ocl_listed *listed;
    int n_listed, cap_listed;
    ocl_sync_point last;
    bool has_last;
    cl_int err;            /* the first recording failure, CL_SUCCESS if none */
    const char *err_what;  /* the call that failed */
    ocl_held *held;
    int n_held, cap_held;
    cl_mem scratch; /* the scratch buffer held last */
    /* The arguments last set on args_of (ocl_set_args), for its next
     * recorded launch. */
    cl_kernel args_of;
    int n_args;
    size_t arg_size[OCL_REC_MAX_ARGS];
    bool arg_local[OCL_REC_MAX_ARGS];
    unsigned char arg_value[OCL_REC_MAX_ARGS][OCL_REC_MAX_ARG_BYTES];
} ocl_graph;

/* ---- Attention programs (launch_attention_program.c builds them,
 * exec_attention.c runs them) ---- */

/* The kernels of kernels/attention.cl. */
typedef enum ocl_attn_kernel {
    OCL_ATTN_FORWARD,
    OCL_ATTN_BACKWARD_KV,
    OCL_ATTN_BACKWARD_Q,
    OCL_ATTN__COUNT
} ocl_attn_kernel;

/* Width buckets: program b takes D and Dv up to 32 << b. */
#define OCL_ATTN_BUCKETS 4
#define OCL_ATTN_MAX_WIDTH (32 << (OCL_ATTN_BUCKETS - 1))

/* One attention program (an element type and a width bucket) and its
 * kernels, each with its work-group limit and the local memory it takes
 * before any __local argument (CL_KERNEL_LOCAL_MEM_SIZE when created). */
typedef struct ocl_attn_program {
    cl_program program;
    cl_kernel kernel[OCL_ATTN__COUNT];
    size_t wg[OCL_ATTN__COUNT];
    cl_ulong local_used[OCL_ATTN__COUNT];
} ocl_attn_program;

/* ---- The product program (launch_gemm_program.c builds it,
 * exec_matmul_own.c runs it): kernels/gemm.cl, f32 ---- */
typedef enum ocl_gemm_kernel { OCL_GEMM_ROWS, OCL_GEMM_DOTS, OCL_GEMM__COUNT } ocl_gemm_kernel;

/* Each kernel's entry name and the rows x columns of C one work-item owns
 * (handed to the program as GEMM_<ROWS|DOTS>_R and _C, so the kernels and
 * the launch's tile count come from one table), per vector width: [0] for
 * 8-float vectors, [1] for 16 (launch_gemm_program.c says which a device
 * gets). */
typedef struct ocl_gemm_form_info {
    const char *name;
    int rows, cols;
} ocl_gemm_form_info;
extern const ocl_gemm_form_info ocl_gemm_forms[2][OCL_GEMM__COUNT];

typedef struct ocl_gemm_program {
    cl_program program;
    cl_kernel kernel[OCL_GEMM__COUNT];
    size_t wg[OCL_GEMM__COUNT];
    int width;                        /* floats per vector: 8 or 16 */
    const ocl_gemm_form_info *forms;  /* ocl_gemm_forms' row for width */
} ocl_gemm_program;

/* Which products run on kernels/gemm.cl (PORTABLE_OPENCL_GEMM). */
typedef enum ocl_gemm_mode {
    OCL_GEMM_AUTO,    /* f32 products up to OCL_GEMM_OWN_MACS on CPU devices */
    OCL_GEMM_CLBLAST, /* every product on CLBlast */
    OCL_GEMM_OWN,     /* every f32 product it can lay out, on any device */
} ocl_gemm_mode;

/* ---- One OpenCL device (device.c) ---- */

/* The arguments last set on a kernel object (launch_args.c). */
typedef struct ocl_arg_memo ocl_arg_memo;
#define OCL_ARG_MEMO_SLOTS 128

typedef struct ocl_host_block {
    void *ptr;  /* the mapped host pointer handed out by host_alloc */
    cl_mem mem; /* the CL_MEM_ALLOC_HOST_PTR buffer behind it */
} ocl_host_block;

typedef struct ocl_device {
    /* Filled at enumeration (init), never changed afterwards. */
    cl_platform_id platform;
    cl_device_id id;
    cl_device_type cl_type;
    char name[128];
    char vendor[128];
    char platform_name[128];
    char platform_version[128];
    char device_version[128];
    char driver_version[64];
    cl_uint compute_units;
    cl_ulong global_mem;
    cl_ulong max_alloc;         /* CL_DEVICE_MAX_MEM_ALLOC_SIZE, 0 if not reported */
    size_t max_work_group;
    cl_ulong local_mem;         /* CL_DEVICE_LOCAL_MEM_SIZE, 0 if not reported */
    /* Loop iterations a work-item may make in all, 0: no limit. Mesa's
     * llvmpipe (rusticl's CPU device) ends every loop of a work-item once
     * 65535 iterations have run in the whole invocation (gallivm's loop
     * limiter, there against endless shaders), silently, so kernels whose
     * work-items loop longer compute wrong results there. */
    int64_t loop_budget;
    bool fp64;
    bool fp16;                  /* cl_khr_fp16 and PORTABLE_OPENCL_HGEMM=1: f16 MATMUL through CLBlastHgemm */
    /* No OpenCL call may be made from exit handlers: Oclgrind keeps its API
     * call stack in a thread_local that glibc destroys before it runs them,
     * so a clFinish or clRelease* there writes freed memory (valgrind shows
     * it; the heap then aborts). Its kernels run synchronously, so nothing
     * is left to wait for, and the process's end frees the rest. */
    bool no_calls_at_exit;
    /* Host transfers run blocking even when asked to queue them: on Mesa's
     * rusticl (22.3, Debian 12) a clFinish after clFlush returns before a
     * non-blocking clEnqueueReadBuffer's bytes are in host memory (20 of 20
     * reads of a standalone loop were stale), so pt_to_async's results and
     * staged uploads' reuse of their blocks could not be trusted there. */
    bool blocking_transfers;
    bool fp32_correct_div_sqrt; /* -cl-fp32-correctly-rounded-divide-sqrt is allowed */
    bool opencl_c_12;           /* device compiles OpenCL C 1.2 (-cl-std=CL1.2) */
    bool half_native;           /* kernels build with -DPT_HALF_NATIVE (device_half.c) */
    /* Graph replays as command buffers: the entry points, where the device
     * has cl_khr_command_buffer with simultaneous use (a replay may be
     * queued while the last one runs) and PORTABLE_OPENCL_GRAPHS is not
     * off; otherwise cb.create is NULL and no_graphs says why. */
    ocl_cb_api cb;
    char no_graphs[160];
    /* Graphs replay as lists of pre-bound kernels (cb.create NULL, no_graphs
     * empty): where the device has no command buffers, or
     * PORTABLE_OPENCL_GRAPHS=kernels asks for them. */
    bool graph_kernels;

    /* Created at first use under lock (ocl_device_ready). lock also
     * serialises kernel argument setting and launches: cl_kernel objects
     * are not thread-safe. */
    pthread_mutex_t lock;
    _Atomic bool ready; /* set once (release) after ctx and queue exist */
    cl_context ctx;
    cl_command_queue queue;
    cl_program programs[PT_DTYPE_COUNT];
    cl_kernel kernels[PT_DTYPE_COUNT][OCL_K__COUNT][OCL_VARIANT__COUNT];
    size_t kernel_wg[PT_DTYPE_COUNT][OCL_K__COUNT][OCL_VARIANT__COUNT]; /* CL_KERNEL_WORK_GROUP_SIZE */
    cl_mem scratch; /* two-pass reduction partials; grown on demand */
    size_t scratch_bytes;
    ocl_graph *recording; /* set (under lock) while a graph is recorded: kernels go into it */
    ocl_arg_memo *arg_memo[OCL_ARG_MEMO_SLOTS]; /* the arguments set last (launch_args.c) */
    /* Buffers the plugin has created (memory.c, the casts through the
     * host): one may come back with a released buffer's handle, which a
     * kernel object's arguments then name without holding it, so the
     * memos above are forgotten when this changes. */
    _Atomic uint64_t buffers_made;
    struct ocl_fused_kernel *fused; /* generated chain kernels, one per chain structure */
    ocl_attn_program attn[2][OCL_ATTN_BUCKETS]; /* [f64?][width bucket], built at first use */
    ocl_gemm_program gemm; /* built at the first product it runs */
    ocl_gemm_mode gemm_mode;
    int gemm_width; /* the own products' floats per vector, 8 or 16 (device.c) */
    bool cpu_forms; /* the kernel forms for CPU devices (device.c's ocl_describe) */
    bool new_kernels; /* a kernel object was created since the last launch */
    /* Bytes of device buffers (alloc and scratch) this process holds: what
     * memory.c checks a new buffer against before asking the driver. */
    _Atomic cl_ulong held;

    /* Pinned host blocks (host_alloc); own lock so host_free never waits on
     * a launch. */
    pthread_mutex_t host_lock;
    ocl_host_block *host_blocks;
    int n_host_blocks, cap_host_blocks;

    /* Trace stamps (launch_stamps.c): host CLOCK_MONOTONIC ns minus the
     * device's profiling clock, measured once, under clock_lock: a lock of
     * its own, as the core reads stamps while it waits for the device, and
     * it waits from inside an op that holds lock (an allocation of the
     * op's scratch that collects the cache first). */
    pthread_mutex_t clock_lock;
    int64_t clock_offset;
    bool clock_known;
    bool profiling; /* the queue has CL_QUEUE_PROFILING_ENABLE (set with it) */
} ocl_device;

typedef struct ocl_state {
    ocl_device *devices;
    int n_devices;
    char reason[512]; /* why n_devices is 0 */
} ocl_state;

extern ocl_state ocl_g;

/* The members of pt_device_props past the first release's: versions,
 * limits, fp16 and the extension list, read from the driver. */
void ocl_device_props_extra(const ocl_device *d, pt_device_props *out);

/* Enumerates every device of every platform: GPUs, accelerators, CPUs, other,
 * each group in platform/device order. Never fails: no platform gives 0
 * devices and a reason. */
pt_status ocl_devices_enumerate(void);
void ocl_devices_release(void);
/* *out = the device, once dev is in range and its context and queue exist
 * (created at first use); else the failure, reported naming `what`. */
pt_status ocl_device_ready(int dev, const char *what, ocl_device **out);
/* After launches that used kernel objects created for them (caller holds
 * d->lock): waits for them and registers an exit handler that waits for
 * every queue (device.c says why). */
void ocl_after_new_kernels(ocl_device *d);
/* The vtable's device members. */
pt_status ocl_init(void);
void ocl_shutdown(void);
int ocl_device_count(void);
const char *ocl_unavailable_reason(void);
pt_status ocl_device_info(int dev, pt_device_props *out);
/* CLBlast tuning overrides for d (device_tuning.c); called once at device init. */
void ocl_tuning_apply(const ocl_device *d);
/* Sets d->half_native: whether float -> f16 in d's kernels may use the
 * compiler's conversion (device_half.c probes it). At device init, under
 * d->lock, after the queue exists. */
void ocl_half_decide(ocl_device *d);

/* ---- Trace stamps (launch_stamps.c): markers with profiling times ---- */

pt_status ocl_stamp_record(int dev, void **stamp);
pt_status ocl_stamp_time(int dev, void *stamp, int64_t *ns);
void ocl_stamp_release(int dev, void *stamp);

/* ---- Queue markers (launch_markers.c): for the core's pinned-block cache ---- */

pt_status ocl_marker_record(int dev, void **marker);
bool ocl_marker_passed(int dev, void *marker);
void ocl_marker_release(int dev, void *marker);

/* ---- Errors (errors.c) ---- */

/* The host API handed to pt_backend_entry (NULL before it ran). */
extern const pt_host_api *ocl_host;

/* "CL_INVALID_WORK_GROUP_SIZE" etc.; "CL_UNKNOWN_ERROR(<code>)" otherwise
 * (the buffer is static per thread). */
const char *ocl_error_name(cl_int err);
/* The status an OpenCL error becomes: allocation failures are
 * PT_ERR_OUT_OF_MEMORY, everything else PT_ERR_BACKEND. */
pt_status ocl_status_of(cl_int err);
/* Reports "<what> failed: <CL name>" through the host and returns the status. */
pt_status ocl_cl_fail(cl_int err, const char *what_fmt, ...) PT_PRINTF(2, 3);
/* Reports a formatted message with status s and returns s. */
pt_status ocl_fail(pt_status s, const char *fmt, ...) PT_PRINTF(2, 3);
void ocl_log(pt_log_level level, const char *fmt, ...) PT_PRINTF(2, 3);

/* ---- Program build and the on-disk cache (launch_program.c, launch_cache.c) ---- */

/* The kernel id of dtype's program on d, building (or loading from the disk
 * cache) the program at first use. Caller holds d->lock. */
pt_status ocl_kernel(ocl_device *d, pt_dtype t, ocl_kernel_id k, cl_kernel *out, size_t *wg);
/* The same for a form of the kernel (OCL_CONTIG: "<name>_contig", OCL_TAIL: "<name>_tail"). */
pt_status ocl_kernel_variant(ocl_device *d, pt_dtype t, ocl_kernel_id k, ocl_variant v,
                             cl_kernel *out, size_t *wg);
void ocl_programs_release(ocl_device *d);
/* A program of d built from texts[0..n-1] with the build options of dtype
 * t's program (-DPT_DTYPE=t, fp64, ...), or loaded from the disk cache,
 * where it is keyed by the SHA-256 of the texts, options and device; what
 * names it in messages ("f32 kernels"). Caller holds d->lock. */
pt_status ocl_program_build(ocl_device *d, const char *what, pt_dtype t, int n,
                            const char *const *texts, cl_program *out);
/* Kernel `name` of program p (what names the program in messages), with
 * its work-group limit (CL_KERNEL_WORK_GROUP_SIZE, at most the device's).
 * Caller holds d->lock. */
pt_status ocl_kernel_create(ocl_device *d, cl_program p, const char *name, const char *what,
                            cl_kernel *out, size_t *wg);
/* The texts of the embedded sources names[0..n-1] (file names), in that
 * order, into texts; returns how many were found. */
int ocl_embedded_texts(int n, const char *const *names, const char **texts);
/* A program of d from the embedded sources names[0..n-1] (at most
 * OCL_MAX_PROGRAM_SOURCES) after the text define: ocl_program_build's
 * program, or PT_ERR_INTERNAL naming what when a source is not embedded.
 * Caller holds d->lock. */
#define OCL_MAX_PROGRAM_SOURCES 8
pt_status ocl_program_from_sources(ocl_device *d, const char *what, pt_dtype t, const char *define, int n,
                                   const char *const *names, cl_program *out);

/* A program's identity: the SHA-256 of everything its binary depends on
 * (launch_program.c: format, sources, build options, device, driver,
 * platform). It names the cache file and is bound into its digest. */
typedef struct ocl_cache_key {
    unsigned char id[32];
} ocl_cache_key;
/* The cache directory ($XDG_CACHE_HOME/portable, else $HOME/.cache/portable),
 * created if missing; false when neither is usable, or when it is not the
 * user's own or others may write it (a warning says so): programs are then
 * built from source every time. */
bool ocl_cache_dir(char *out, size_t cap);
/* The cached binary stored under key, or NULL (missing, unreadable,
 * corrupt, another entry's, or a file the user does not own or others may
 * write: a warning says which, and the program is rebuilt). Caller frees. */
unsigned char *ocl_cache_load(const ocl_cache_key *key, size_t *size);
/* Stores a binary under key atomically (temp file + rename). Failures are
 * logged, never fatal: the cache is only an optimisation. */
void ocl_cache_store(const ocl_cache_key *key, const unsigned char *data, size_t size);

/* ---- Embedded sources (generated at build time: launch_sources.c) ---- */

typedef struct ocl_source {
    const char *name; /* file name, for messages */
    const char *text;
} ocl_source;
extern const ocl_source ocl_sources[];
extern const int ocl_n_sources;

/* ---- Launching kernels (launch.c) ---- */

typedef struct ocl_arg {
    size_t size;
    const void *value; /* NULL: a __local buffer of `size` bytes */
} ocl_arg;

#define OCL_ARG(v) {sizeof(v), &(v)}
#define OCL_LOCAL(bytes) {(bytes), NULL}

/* A scalar of the program's element type, converted from the op's double. */
typedef struct ocl_scalar {
    union {
        cl_float f32;
        cl_double f64;
        cl_int i32;
        cl_long i64;
        cl_uchar u8;
        cl_ushort u16; /* f16 / bf16 bits */
    } v;
    size_t size;
} ocl_scalar;

/* Element offset of an operand (its byte offset must be a multiple of the
 * element size; the core only makes such views). */
pt_status ocl_elem_offset(const pt_operand *x, cl_long *out);
int64_t ocl_numel(const pt_operand *x);
/* Integer scalars convert as portable/numeric_rules.h says (as in copy_to_<dst>). */
ocl_scalar ocl_make_scalar(pt_dtype t, double v);
/* ---- Kernel arguments (launch_args.c); the caller holds d->lock ---- */

/* Sets k's arguments, skipping those k holds already from the last call
 * (while d records a graph, also kept for the recording: ocl_record_args). */
pt_status ocl_set_args(ocl_device *d, cl_kernel k, const char *name, int n, const ocl_arg *args);
/* Forgets what ocl_set_args set on k (a new kernel object at the address of
 * a released one), or on every kernel object of d (they are released). */
void ocl_args_forget(ocl_device *d, cl_kernel k);
void ocl_args_release(ocl_device *d);

/* One 1-D launch of global work-items (from global id `offset`) in groups of
 * local. */
pt_status ocl_enqueue_at(ocl_device *d, cl_kernel k, const char *name, size_t offset, size_t global,
                         size_t local);
pt_status ocl_enqueue(ocl_device *d, cl_kernel k, const char *name, size_t global, size_t local);
/* Work sizes of a one-work-item-per-element kernel over n items: groups of
 * up to 256, n rounded up to a whole number of groups. */
pt_status ocl_launch_items(ocl_device *d, cl_kernel k, const char *name, size_t wg, int64_t n);
size_t ocl_pow2_floor(size_t x);
size_t ocl_pow2_ceil(int64_t x);
/* Runs one of the element-wise kernels (kid of program prog) over out and
 * n_in inputs, with up to two scalars carried in the position vector: the
 * _contig form over whole work-groups when every operand is contiguous, the
 * general form (shape and strides as long8 vectors) for the rest. Caller
 * holds d->lock. */
pt_status ocl_pointwise(ocl_device *d, pt_dtype prog, ocl_kernel_id kid, const pt_operand *out,
                        int n_in, const pt_operand *const *in, int n_scalars, const ocl_scalar *scalars);
/* The program whose type moves t's bytes: f64 data on a device without fp64
 * moves through the i64 program (same 8 bytes, no double arithmetic). */
pt_dtype ocl_storage_dtype(const ocl_device *d, pt_dtype t);
/* dst = src element for element, same dtype and shape, any strides: moved by
 * element size (an f64 move on a device without fp64 runs the i64 program).
 * Caller holds d->lock. */
pt_status ocl_move(ocl_device *d, const pt_operand *dst, const pt_operand *src);
/* [outer, r, inner] row kernels (reduce, softmax; kernels/reduce.cl):
 * whether rows walk contiguous runs of r (CPU devices), the work-group shape
 * (local size *L, *tx_n columns), and kernel kid of in[0]'s program with
 * the element offsets of in[0] (*io) and out (*oo). */
cl_int ocl_blocked_rows(const ocl_device *d);
void ocl_reduce_shape(size_t wg, int64_t outer, int64_t r, int64_t inner, size_t *L, cl_int *tx_n);
void ocl_cpu_rows_shape(const ocl_device *d, size_t wg, int64_t outputs, size_t *L, cl_int *tx_n);
pt_status ocl_row_kernel(ocl_device *d, ocl_kernel_id kid, const pt_op *op, cl_kernel *k,
                         size_t *wg, cl_long *io, cl_long *oo);
/* Waits for everything queued on device dev. */
pt_status ocl_synchronize(int dev);

/* ---- Graphs as command buffers (launch_graph.c); the caller holds d->lock ---- */

/* Starts recording into a new command buffer on d's queue, or a new list
 * of pre-bound kernels (d->graph_kernels): from now on, until
 * ocl_record_end, ocl_enqueue_at records kernels into *out instead of
 * queueing them. PT_ERR_UNSUPPORTED, with the reason in why, when d
 * replays graphs op by op or its queue lacks what command buffers require. */
pt_status ocl_record_begin(ocl_device *d, ocl_graph **out, char *why, size_t cap);
/* Keeps the n arguments just set on k for its next recorded launch. */
pt_status ocl_record_args(ocl_graph *g, cl_kernel k, const char *name, int n, const ocl_arg *args);
/* Records one launch (ocl_enqueue_at's arguments) into d->recording. */
pt_status ocl_record_kernel(ocl_device *d, cl_kernel k, const char *name, size_t offset,
                            size_t global, size_t local);
/* Stops recording and finalizes g, unless failed names the op whose
 * recording failed; on any failure g is released and the result is
 * PT_ERR_UNSUPPORTED with the reason in why. */
pt_status ocl_record_end(ocl_device *d, ocl_graph *g, const char *failed, char *why, size_t cap);
/* Queues one run of g on d's queue. */
pt_status ocl_graph_enqueue(ocl_device *d, ocl_graph *g);
/* Releases g and what it holds; nothing queued may still use it (takes no
 * lock). */
void ocl_record_release(const ocl_device *d, ocl_graph *g);

/* ---- Fused chains: generated kernels (launch_fused_source.c writes
 * them, launch_fused_program.c builds and keeps them) ---- */

/* The most steps a generated chain kernel takes. */
#define OCL_FUSED_MAX_STEPS 32
/* Bytes of a chain's structure per step (launch_fused_source.c). */
#define OCL_FUSED_SIG_STEP 12

/* The most chains one group kernel runs (launch_fused_group.c). */
#define OCL_FUSED_MAX_PARTS 8

/* A chain's structure: what its generated kernel depends on (kinds,
 * dtypes, links, stores, which inputs are strided), never the buffers,
 * offsets, strides or scalars, which are arguments. A group's is its
 * chains' after a 0 (no chain has 0 steps) and their count. */
typedef struct ocl_fused_sig {
    int len;
    /* the steps, then whether a reduction follows */
    unsigned char b[2 + 2 * OCL_FUSED_MAX_PARTS + OCL_FUSED_MAX_STEPS * OCL_FUSED_SIG_STEP];
} ocl_fused_sig;

/* What one argument of a generated chain kernel carries, in order. */
typedef enum ocl_fused_arg_kind {
    OCL_FA_IN_BUF, OCL_FA_IN_OFF, OCL_FA_IN_ND, OCL_FA_IN_SHAPE, OCL_FA_IN_STRIDES, /* input j */
    OCL_FA_SCALAR, OCL_FA_SCALAR2, /* the step's scalars, as its compute type */
    OCL_FA_OUT_BUF, OCL_FA_OUT_OFF, /* a stored step's out */
    OCL_FA_N                        /* the element count */
} ocl_fused_arg_kind;

typedef struct ocl_fused_arg {
    unsigned char kind; /* ocl_fused_arg_kind */
    unsigned char part; /* the chain of a group it belongs to (0 for a lone chain) */
    unsigned char step, input;
} ocl_fused_arg;

/* A chain's kernels: "fused_whole" over whole work-groups, "fused_tail"
 * (bounds-checked) for the rest, with the same arguments; for a chain with
 * a reduction after it, only reduce.cl's kernel for the device instead
 * (reduce, or reduce_serial on CPU devices), the chain's arguments after
 * its own; for a group of chains, only "fused_group". */
typedef struct ocl_fused_kernel {
    ocl_fused_sig sig;
    cl_program program;
    cl_kernel whole, tail;
    cl_kernel group;  /* a group's only kernel */
    cl_kernel rows;   /* the row walk's form, for chains with strided inputs; else NULL */
    cl_kernel reduce; /* chains with a reduction: the only kernel */
    size_t wg;      /* the smallest CL_KERNEL_WORK_GROUP_SIZE of them */
    int n_args;
    ocl_fused_arg args[OCL_REC_MAX_ARGS];
    struct ocl_fused_kernel *next;
} ocl_fused_kernel;

/* Whether x's elements lie in row-major order without gaps (extent-1
 * dimensions' strides do not count). */
bool ocl_is_contiguous(const pt_operand *x);
/* The dimensions common.cl's row walk covers on CPU devices. */
#define OCL_ROWS_CPU_MAX_ND 3
/* The group size of a row-walk launch (common.cl's pt_locate_rows) over a
 * layout of nd dimensions whose innermost extent is inner: the largest of
 * at most cap that divides inner, or 0 where the row walk does not serve
 * (more dimensions than it covers on d, or a long row of a prime extent):
 * then the launch walks each element. */
size_t ocl_rows_group(const ocl_device *d, int nd, int64_t inner, size_t cap);
/* c's structure, for looking its kernels up without generating text. */
void ocl_fused_signature(const pt_fused_chain *c, ocl_fused_sig *sig);
/* The greatest common divisor of the innermost extents of c's external
 * inputs that its kernels walk (strided, not one element broadcast), 0
 * when it has none; *max_nd, the most dimensions one of them has. */
int64_t ocl_fused_strided_inner(const pt_fused_chain *c, int *max_nd);
/* Whether a generated kernel runs chain c on d: PT_OK, or
 * PT_ERR_UNSUPPORTED with the reason in why. With text non-NULL, also the
 * kernels' OpenCL C (*text, malloc'd, to follow the embedded sources up to
 * ew_math.h), the type the program is built for (*t: the arithmetic steps'
 * type) and the arguments' plan. */
pt_status ocl_fused_generate(const ocl_device *d, const pt_fused_chain *c, char **text, pt_dtype *t,
                             ocl_fused_arg *args, int *n_args, char *why, size_t cap);

/* A kernel's text as it is written: helper functions, its parameters
 * (", type name..."), one chain's body, and the arguments' plan (args may
 * be NULL: then only counted). Texts with off set only count. */
typedef struct ocl_fused_text {
    pt_text fn, params, body;
    ocl_fused_arg *args;
    int n;
    size_t bytes;
    bool over;    /* more than OCL_REC_MAX_ARGS arguments */
    bool strided; /* a body walks an input's strides (PT_FUSED_AT) */
} ocl_fused_text;
/* Whether d's generated kernels run chain c; *arith: the type its
 * arithmetic computes in (*typed: some step fixes it). */
pt_status ocl_fused_check(const ocl_device *d, const pt_fused_chain *c, pt_dtype *arith, bool *typed,
                          char *why, size_t cap);
/* Appends chain c's step functions to x->fn, its parameters to x->params,
 * its body (element i) to x->body and its arguments to the plan, its
 * steps named from base on, its arguments marked as part's. */
void ocl_fused_emit(const pt_fused_chain *c, int part, int base, ocl_fused_text *x);
void ocl_fused_plan_add(ocl_fused_text *x, ocl_fused_arg_kind kind, int part, int step, int input, size_t bytes);
/* The conversions every chain's text starts with. */
void ocl_fused_prelude(ocl_fused_text *x, int n_steps);
/* Whether x's arguments fit a recording and every device. */
pt_status ocl_fused_limits(const ocl_fused_text *x, bool reduce, char *why, size_t cap);
void ocl_fused_text_free(ocl_fused_text *x);
/* The end of a generator: x's text in *text (and arith, its argument
 * count), x freed; PT_ERR_OUT_OF_MEMORY with the reason where a text (or
 * failed) says memory ran out. */
pt_status ocl_fused_text_done(ocl_fused_text *x, bool failed, pt_dtype arith, char **text, pt_dtype *t,
                              int *n_args, char *why, size_t cap);
/* c's kernels on d, generated and built at the first chain of this
 * structure (or loaded from the disk cache), then kept. Caller holds d->lock. */
pt_status ocl_fused_kernels(ocl_device *d, const pt_fused_chain *c, ocl_fused_kernel **out);
/* The same for a group of n_parts chains (n_parts >= 2: its fused_group
 * kernel) or one (n_parts 1: ocl_fused_kernels). */
pt_status ocl_fused_kernels_of(ocl_device *d, const pt_fused_chain *const *parts, int n_parts,
                               ocl_fused_kernel **out);

/* One argument's value: the largest is a long8. */
typedef union ocl_fused_value {
    cl_mem mem;
    cl_long i64;
    cl_int i32;
    cl_long8 v8;
    ocl_scalar scalar;
} ocl_fused_value;
/* Argument a of a generated kernel for the chains parts[] (one, or a
 * group's): its value in *v, as ocl_set_args takes it in *arg. */
pt_status ocl_fused_arg_value(const ocl_fused_arg *a, const pt_fused_chain *const *parts, ocl_fused_value *v,
                              ocl_arg *arg);

/* ---- Groups of chains (launch_fused_group.c, exec_fused_group.c) ---- */

/* A group's structure (ocl_fused_signature's for each chain). */
void ocl_fused_group_signature(const pt_fused_chain *const *parts, int n, ocl_fused_sig *sig);
/* As ocl_fused_generate, for the kernel fused_group running chains
 * parts[0..n-1] (2 to OCL_FUSED_MAX_PARTS, none with a reduction). */
pt_status ocl_fused_group_generate(const ocl_device *d, const pt_fused_chain *const *parts, int n, char **text,
                                   pt_dtype *t, ocl_fused_arg *args, int *n_args, char *why, size_t cap);
/* How many of ops[0..n-1], from the first, run as one group kernel on d
 * (>= 2), or 1 where the first runs alone. Only for recordings: the ops
 * are FUSED chains the core has fused, consecutive in the graph's order. */
int ocl_fused_group_len(ocl_device *d, const pt_op *ops, int n);
/* Runs ops[0..n-1] (a group ocl_fused_group_len took) as one kernel. */
pt_status ocl_fused_group(ocl_device *d, const pt_op *ops, int n);
/* Frees d's chain kernels; releases their OpenCL objects when cl_calls. */
void ocl_fused_release(ocl_device *d, bool cl_calls);

/* ---- Attention programs (launch_attention_program.c) ---- */

/* The width bucket of programs taking rows of `width` elements, or -1
 * beyond OCL_ATTN_MAX_WIDTH. */
int ocl_attn_bucket(int64_t width);
/* The attention program of element type t (f32, f64) and bucket on d,
 * built (or loaded from the disk cache) at first use, then kept. Caller
 * holds d->lock. */
pt_status ocl_attn_program_get(ocl_device *d, pt_dtype t, int bucket, const ocl_attn_program **out);
/* Releases d's attention programs and kernels. */
void ocl_attn_release(ocl_device *d);

/* ---- The product program (launch_gemm_program.c) ---- */
/* d's product program, built (or loaded from the disk cache) at first use,
 * then kept. Caller holds d->lock. */
pt_status ocl_gemm_program_get(ocl_device *d, const ocl_gemm_program **out);
/* Releases it. */
void ocl_gemm_release(ocl_device *d);

/* ---- Execution (exec.c: supports, execute) ---- */

pt_status ocl_supports(int dev, const pt_op *op);
pt_status ocl_execute(int dev, const pt_op *op);
/* The vtable's graph_instantiate, graph_launch and graph_destroy: where the
 * device has command buffers, each run of ops that can be recorded is one,
 * and the others (CLBlast's products, random ops, casts through the host)
 * are queued one at a time between them; graph_destroy waits for d's queue. */
pt_status ocl_graph_instantiate(int dev, const pt_op *ops, int32_t n_ops, void **graph);
pt_status ocl_graph_launch(int dev, void *graph, const pt_op *ops, int32_t n_ops,
                           const int32_t *changed, int32_t n_changed);
void ocl_graph_destroy(int dev, void *graph);

/* ---- Op families (exec_<family>*.c); the caller holds d->lock ---- */

/* exec_fused.c: a FUSED chain. supports: what the generated kernel can
 * do, once exec.c found every step supported on its own. */
pt_status ocl_fused_supports(const ocl_device *d, const pt_op *op);
pt_status ocl_fused(ocl_device *d, const pt_op *op);
/* exec_elementwise.c: arithmetic, comparisons, WHERE, COPY. */
pt_status ocl_elementwise(ocl_device *d, const pt_op *op);
/* Whether an element-wise kind has a kernel (a row of portable/ew_math.h). */
bool ocl_has_ew_kernel(pt_op_kind k);
/* A cast that needs double arithmetic the device lacks: to or from f64. */
bool ocl_cast_needs_host(const ocl_device *d, const pt_op *op);
/* exec_creation.c: FILL, ARANGE, RAND_UNIFORM, RAND_NORMAL. */
pt_status ocl_creation(ocl_device *d, const pt_op *op);
/* exec_reduce.c: SUM, MEAN, MAX, ARGMAX. */
pt_status ocl_reduce(ocl_device *d, const pt_op *op);
/* The arguments of reduce.cl's group kernel (reduce_serial takes the first
 * OCL_REDUCE_ARGS - 2: no local memory), and a bound on their bytes. */
#define OCL_REDUCE_ARGS 25
#define OCL_REDUCE_ARG_BYTES 192
/* A fused chain's reduce kernel (its program's reduce or reduce_serial,
 * by ocl_blocked_rows), its work-group limit, and the chain's arguments
 * that follow the kernel's own. */
typedef struct ocl_reduce_chain {
    cl_kernel k;
    size_t wg;
    int n_args;
    const ocl_arg *args;
} ocl_reduce_chain;
/* op (a SUM, MEAN or MAX) with its first pass through ch's kernel, whose
 * chain computes the input it reads. */
pt_status ocl_reduce_chained(ocl_device *d, const pt_op *op, const ocl_reduce_chain *ch);
/* exec_softmax.c: SOFTMAX, LOG_SOFTMAX. */
pt_status ocl_softmax(ocl_device *d, const pt_op *op);
/* exec_attention.c: ATTENTION, ATTENTION_BACKWARD; supports says what
 * the kernels take (the core composes the rest). */
pt_status ocl_attention_supports(const ocl_device *d, const pt_op *op);
pt_status ocl_attention(ocl_device *d, const pt_op *op);
/* exec_index.c: GATHER, ONE_HOT, EMBEDDING, EMBEDDING_BACKWARD. */
pt_status ocl_index(ocl_device *d, const pt_op *op);
/* exec_matmul.c: CLBlast GEMM for PT_OP_MATMUL. Caller holds d->lock. */
pt_status ocl_matmul(ocl_device *d, const pt_op *op);

/* One CLBlast product: row-major c[M, N] = a[M, K] b[K, N] (+ c when
 * accumulate) for batch matrices a_stride, b_stride, c_stride elements
 * apart; each of a, b a buffer, an element offset and its element strides
 * (one of them 1: row- or column-major); c row-major with rows N apart. */
typedef struct ocl_gemm_call {
    pt_dtype dtype;
    bool accumulate;
    size_t batch, M, N, K;
    /* More than 1 (the own kernels only, batch 1): C gets the sum of the
     * products of `sums` matrices a_stride and b_stride apart, image after
     * image, as that many accumulating calls would add them. 0 means 1. */
    size_t sums;
    cl_mem a, b, c;
    size_t ao, bo, co;
    int64_t a_row, a_col, b_row, b_col;
    size_t a_stride, b_stride, c_stride;
} ocl_gemm_call;
/* Caller holds d->lock; op (the MATMUL or CONV) names the call in errors. */
pt_status ocl_gemm(ocl_device *d, const ocl_gemm_call *g, const pt_op *op);
/* MATMUL op as a call of ocl_gemm. */
pt_status ocl_matmul_call(const pt_op *op, ocl_gemm_call *g);
/* exec_matmul_own.c: whether call g runs on the plugin's own kernels
 * (kernels/gemm.cl) rather than CLBlast, and running it there. */
bool ocl_gemm_own_takes(const ocl_device *d, const ocl_gemm_call *g);
pt_status ocl_gemm_own(ocl_device *d, const ocl_gemm_call *g);
/* IM2COL, COL2IM and the max pools. Caller holds d->lock. */
pt_status ocl_window_run(ocl_device *d, const pt_op *op);
/* Whether d runs this CONV descriptor: PT_OK, or the reason recorded. */
pt_status ocl_conv_supports(const ocl_device *d, const pt_op *op);
/* A supported CONV op on device dev (d). Caller holds d->lock. */
pt_status ocl_conv(ocl_device *d, int dev, const pt_op *op);
/* A copy between f64 and another dtype on a device without fp64, converted
 * on the host (exec_elementwise_host_cast.c). Caller holds d->lock. */
pt_status ocl_cast_via_host(ocl_device *d, const pt_op *op);

/* ---- Memory and transfers (memory.c) ---- */

pt_status ocl_alloc(int dev, size_t bytes, void **buf);
void ocl_free(int dev, void *buf);
pt_status ocl_memory_info(int dev, int64_t *free_bytes, int64_t *total_bytes);
pt_status ocl_host_alloc(int dev, size_t bytes, void **ptr);
void ocl_host_free(int dev, void *ptr);
pt_status ocl_copy_h2d(int dev, void *dst, size_t dst_offset, const void *src, size_t bytes,
                       bool async);
pt_status ocl_copy_d2h(int dev, void *dst, const void *src, size_t src_offset, size_t bytes,
                       bool async);
/* The vtable's upload_staging (device_uploads.c): on a CPU device, 1 where
 * a synchronous upload waits long enough that staging pays, else -1; 0 on
 * other devices (the core's default, staged). */
int32_t ocl_upload_staging(int dev);
pt_status ocl_copy_d2d(int dev, void *dst, size_t dst_offset, const void *src, size_t src_offset,
                       size_t bytes);
/* Scratch buffer of at least bytes (caller holds d->lock). */
pt_status ocl_scratch(ocl_device *d, size_t bytes, cl_mem *out);
/* bytes of device dev (d) for one op's own use (a convolution's columns):
 * bytes [*offset, *offset + bytes) of *mem, from the core's caching
 * allocator (a buffer of its own without one); *block for ocl_temp_free.
 * Work queued before the free may still use it. */
pt_status ocl_temp_alloc(ocl_device *d, int dev, size_t bytes, cl_mem *mem, size_t *offset, void **block);
void ocl_temp_free(ocl_device *d, int dev, cl_mem mem, void *block);

#endif
