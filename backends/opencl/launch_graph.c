/* libportable OpenCL backend — graphs recorded into command buffers
 * (cl_khr_command_buffer) or listed as pre-bound kernels: while a graph's
 * ops are dispatched (exec.c), every kernel launch (ocl_enqueue_at,
 * launch.c) is recorded here instead of queued, each with a kernel object
 * of its own that carries the arguments ocl_set_args set for it. A replay
 * is then one clEnqueueCommandBufferKHR on the device's queue, or one
 * clEnqueueNDRangeKernel per listed kernel, instead of a clSetKernelArg
 * and clEnqueueNDRangeKernel per kernel. Lists serve devices without
 * command buffers, and those whose command buffers cost more per command
 * than queuing the kernels (device.c chooses). The command buffers' entry
 * points come from the platform (device.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

pt_status ocl_record_begin(ocl_device *d, ocl_graph **out, char *why, size_t cap) {
    *out = NULL;
    const cl_command_queue_properties have = d->profiling ? CL_QUEUE_PROFILING_ENABLE : 0;
    ocl_graph *g = NULL;
    if (!d->cb.create && !d->graph_kernels)
        snprintf(why, cap, "%s", d->no_graphs);
    else if (d->cb.create && (d->cb.queue_props & ~have))
        snprintf(why, cap, "%s's command buffers need queue properties 0x%llx, its queue has 0x%llx",
                 d->name, (unsigned long long)d->cb.queue_props, (unsigned long long)have);
    else if (!(g = calloc(1, sizeof *g)))
        snprintf(why, cap, "out of host memory");
    if (!g) return PT_ERR_UNSUPPORTED;
    if (d->cb.create) {
        /* Simultaneous use: a replay may be queued while the last one runs. */
        const ocl_cb_properties props[] = {OCL_COMMAND_BUFFER_FLAGS, OCL_COMMAND_BUFFER_SIMULTANEOUS_USE, 0};
        cl_int err = CL_SUCCESS;
        g->cb = d->cb.create(1, &d->queue, props, &err);
        if (!g->cb) {
            free(g);
            snprintf(why, cap, "clCreateCommandBufferKHR failed: %s", ocl_error_name(err));
            return PT_ERR_UNSUPPORTED;
        }
    }
    d->recording = g;
    *out = g;
    return PT_OK;
}

/* Appends an object g holds until it is released: a buffer or a kernel. */
static pt_status ocl_hold(ocl_graph *g, cl_mem mem, cl_kernel kernel) {
    if (g->n_held == g->cap_held) {
        int cap = g->cap_held ? 2 * g->cap_held : 16;
        ocl_held *m = realloc(g->held, (size_t)cap * sizeof *m);
        if (!m) return ocl_fail(PT_ERR_OUT_OF_MEMORY, "out of host memory for a graph");
        g->held = m;
        g->cap_held = cap;
    }
    g->held[g->n_held++] = (ocl_held){mem, kernel};
    return PT_OK;
}

/* Holds the device's scratch buffer as it is now, if the graph does not
 * yet: a reduction recorded from here on may use it, and a later op may
 * replace it with a larger one (memory.c) while the graph lives. */
static pt_status ocl_hold_scratch(ocl_device *d, ocl_graph *g) {
    if (!d->scratch || g->scratch == d->scratch) return PT_OK;
    pt_status s = ocl_hold(g, d->scratch, NULL);
    if (s != PT_OK) return s;
    clRetainMemObject(d->scratch);
    g->scratch = d->scratch;
    return PT_OK;
}

pt_status ocl_record_args(ocl_graph *g, cl_kernel k, const char *name, int n, const ocl_arg *args) {
    g->args_of = NULL;
    if (n > OCL_REC_MAX_ARGS)
        return ocl_fail(PT_ERR_UNSUPPORTED, "%s: %d arguments, more than a recording keeps", name, n);
    for (int i = 0; i < n; ++i) {
        g->arg_size[i] = args[i].size;
        g->arg_local[i] = !args[i].value;
        if (!args[i].value) continue;
        if (args[i].size > OCL_REC_MAX_ARG_BYTES)
            return ocl_fail(PT_ERR_UNSUPPORTED, "%s: argument %d has %zu bytes, more than a recording keeps",
                            name, i, args[i].size);
        memcpy(g->arg_value[i], args[i].value, args[i].size);
    }
    g->args_of = k;
    g->n_args = n;
    return PT_OK;
}

/* Records what failed first (the reason a graph then replays op by op). */
static pt_status ocl_record_failed(ocl_graph *g, cl_int err, const char *call, const char *name,
                                   const ocl_device *d) {
    if (g->err == CL_SUCCESS) {
        g->err = err;
        g->err_what = call;
    }
    return ocl_cl_fail(err, "%s(%s) on %s", call, name, d->name);
}

/* A new kernel object of k's program and entry point, with the arguments
 * last set on k, owned by g. */
static pt_status ocl_own_kernel(ocl_device *d, ocl_graph *g, cl_kernel k, const char *name,
                                cl_kernel *out) {
    if (g->args_of != k)
        return ocl_fail(PT_ERR_INTERNAL, "%s launched without its arguments set for the recording", name);
    cl_program prog = NULL;
    char entry[128];
    cl_int err = clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof prog, &prog, NULL);
    if (err == CL_SUCCESS) err = clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof entry, entry, NULL);
    cl_kernel own = err == CL_SUCCESS ? clCreateKernel(prog, entry, &err) : NULL;
    if (!own) return ocl_record_failed(g, err, "clCreateKernel", name, d);
    pt_status s = ocl_hold(g, NULL, own);
    if (s != PT_OK) {
        clReleaseKernel(own);
        return s;
    }
    for (int i = 0; i < g->n_args; ++i) {
        err = clSetKernelArg(own, (cl_uint)i, g->arg_size[i], g->arg_local[i] ? NULL : g->arg_value[i]);
        if (err != CL_SUCCESS) return ocl_record_failed(g, err, "clSetKernelArg", name, d);
    }
    *out = own;
    return PT_OK;
}

pt_status ocl_record_kernel(ocl_device *d, cl_kernel k, const char *name, size_t offset,
                            size_t global, size_t local) {
    ocl_graph *g = d->recording;
    cl_kernel own = NULL;
    pt_status s = ocl_hold_scratch(d, g);
    if (s == PT_OK) s = ocl_own_kernel(d, g, k, name, &own);
    if (s != PT_OK) return s;
    if (!g->cb) {
        if (g->n_listed == g->cap_listed) {
            const int grown = g->cap_listed ? 2 * g->cap_listed : 16;
            ocl_listed *l = realloc(g->listed, (size_t)grown * sizeof *l);
            if (!l) return ocl_fail(PT_ERR_OUT_OF_MEMORY, "out of host memory for a graph");
            g->listed = l;
            g->cap_listed = grown;
        }
        g->listed[g->n_listed++] = (ocl_listed){own, offset, global, local};
        return PT_OK;
    }
    ocl_sync_point point = 0;
    const size_t off[1] = {offset};
    cl_int err = d->cb.ndrange(g->cb, NULL, NULL, own, 1, offset ? off : NULL, &global, &local,
                               g->has_last ? 1 : 0, g->has_last ? &g->last : NULL, &point, NULL);
    if (err != CL_SUCCESS) return ocl_record_failed(g, err, "clCommandNDRangeKernelKHR", name, d);
    g->last = point;
    g->has_last = true;
    return PT_OK;
}

pt_status ocl_record_end(ocl_device *d, ocl_graph *g, const char *failed, char *why, size_t cap) {
    d->recording = NULL;
    cl_int err = g->err;
    const char *what = g->err_what;
    if (!failed && err == CL_SUCCESS) {
        if (!g->cb) return PT_OK;
        err = d->cb.finalize(g->cb);
        what = "clFinalizeCommandBufferKHR";
        if (err == CL_SUCCESS) return PT_OK;
    }
    ocl_record_release(d, g);
    if (err == CL_SUCCESS)
        snprintf(why, cap, "recording %s failed", failed);
    else
        snprintf(why, cap, "%s failed: %s", what, ocl_error_name(err));
    return PT_ERR_UNSUPPORTED;
}

pt_status ocl_graph_enqueue(ocl_device *d, ocl_graph *g) {
    for (int i = 0; !g->cb && i < g->n_listed; ++i) {
        const ocl_listed *l = &g->listed[i];
        const size_t off[1] = {l->offset};
        cl_int err = clEnqueueNDRangeKernel(d->queue, l->k, 1, l->offset ? off : NULL, &l->global, &l->local, 0,
                                            NULL, NULL);
        if (err != CL_SUCCESS)
            return ocl_cl_fail(err, "clEnqueueNDRangeKernel of a graph's kernel %d of %d on %s", i, g->n_listed,
                               d->name);
    }
    if (!g->cb) return PT_OK;
    cl_int err = d->cb.enqueue(1, &d->queue, g->cb, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return ocl_cl_fail(err, "clEnqueueCommandBufferKHR on %s", d->name);
    return PT_OK;
}

void ocl_record_release(const ocl_device *d, ocl_graph *g) {
    if (!d->no_calls_at_exit) {
        if (g->cb) d->cb.release(g->cb);
        for (int i = 0; i < g->n_held; ++i) {
            if (g->held[i].mem) clReleaseMemObject(g->held[i].mem);
            if (g->held[i].kernel) clReleaseKernel(g->held[i].kernel);
        }
    }
    free(g->held);
    free(g->listed);
    free(g);
}
