/* libportable OpenCL backend — kernel arguments: ocl_set_args sets on a
 * kernel object only the arguments that differ from what it set there
 * last.
 *
 * A kernel object keeps its arguments from one launch to the next (the
 * launch copies them), and PoCL 3.1 pays a posix_memalign and a free for
 * every clSetKernelArg (it copies the value), then another at every launch
 * for every argument. An element-wise op sets 9 to 15 arguments, most of
 * which (offsets, sizes, the op's scalars, the layout vectors) repeat from
 * one op to the next; setting them all cost about 8,000 instructions of a
 * 10-element pt_add's 20,000 in the plugin and PoCL (callgrind). Each
 * kernel object's last arguments are kept in a memo, one of
 * OCL_ARG_MEMO_SLOTS per device found by the object's address (a second
 * object on the same slot takes it over: its arguments are all set once).
 * A kernel object made later at a released one's address is forgotten at
 * its creation (launch_program.c). A buffer argument is known by its handle
 * only, and a kernel object does not hold the buffers it names: a buffer
 * released and a new one made at the same handle would pass for the old
 * one (Oclgrind, which keeps the old buffer's address in the kernel
 * object, then writes out of bounds). So every memo is forgotten once the
 * plugin has made a buffer since it was written (d->buffers_made): with
 * the core's caching allocator that is rare after the first steps, without
 * it (PORTABLE_NO_MEMORY_CACHING) nearly every op sets all its arguments.
 * Caller holds d->lock throughout. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct ocl_arg_memo {
    cl_kernel kernel; /* whose arguments these are */
    uint64_t made;    /* d->buffers_made when they were set */
    /* What argument i holds: size[i] bytes (0: unknown), a __local
     * buffer of that size or the value in value[i]. */
    size_t size[OCL_REC_MAX_ARGS];
    bool local[OCL_REC_MAX_ARGS];
    unsigned char value[OCL_REC_MAX_ARGS][OCL_REC_MAX_ARG_BYTES];
};

static ocl_arg_memo **ocl_memo_slot(ocl_device *d, cl_kernel k) {
    return &d->arg_memo[((uintptr_t)k >> 4) % OCL_ARG_MEMO_SLOTS];
}

/* k's memo, taken over (all unknown) if it held another kernel's; NULL
 * when out of host memory (every argument is then set). */
static ocl_arg_memo *ocl_memo_of(ocl_device *d, cl_kernel k) {
    ocl_arg_memo **slot = ocl_memo_slot(d, k);
    if (!*slot && !(*slot = calloc(1, sizeof **slot))) return NULL;
    ocl_arg_memo *m = *slot;
    const uint64_t made = atomic_load_explicit(&d->buffers_made, memory_order_relaxed);
    if (m->kernel != k || m->made != made) {
        memset(m->size, 0, sizeof m->size);
        m->kernel = k;
        m->made = made;
    }
    return m;
}

void ocl_args_forget(ocl_device *d, cl_kernel k) {
    ocl_arg_memo *m = *ocl_memo_slot(d, k);
    if (m && m->kernel == k) m->kernel = NULL;
}

void ocl_args_release(ocl_device *d) {
    for (int i = 0; i < OCL_ARG_MEMO_SLOTS; ++i) {
        free(d->arg_memo[i]);
        d->arg_memo[i] = NULL;
    }
}

static bool ocl_arg_known(const ocl_arg_memo *m, int i, const ocl_arg *a) {
    if (!m || i >= OCL_REC_MAX_ARGS || m->size[i] != a->size || m->local[i] != !a->value) return false;
    return !a->value || memcmp(m->value[i], a->value, a->size) == 0;
}

pt_status ocl_set_args(ocl_device *d, cl_kernel k, const char *name, int n, const ocl_arg *args) {
    ocl_arg_memo *m = ocl_memo_of(d, k);
    for (int i = 0; i < n; ++i) {
        if (ocl_arg_known(m, i, &args[i])) continue;
        cl_int err = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].value);
        if (err != CL_SUCCESS) {
            if (m) m->kernel = NULL;
            return ocl_cl_fail(err, "clSetKernelArg(%s, argument %d)", name, i);
        }
        if (!m || i >= OCL_REC_MAX_ARGS) continue;
        const bool kept = args[i].size <= OCL_REC_MAX_ARG_BYTES;
        m->size[i] = kept ? args[i].size : 0;
        m->local[i] = !args[i].value;
        if (kept && args[i].value) memcpy(m->value[i], args[i].value, args[i].size);
    }
    return d->recording ? ocl_record_args(d->recording, k, name, n, args) : PT_OK;
}
