/* libportable OpenCL backend — whether the core should stage small uploads
 * to a device (the vtable's upload_staging; core/runtime/backend_calls.c
 * does the staging).
 *
 * A synchronous upload makes the host wait until the device's queue has
 * drained and the implementation has woken the waiting thread; a staged one
 * is copied into a pinned block and queued, and the host runs ahead. On a
 * GPU that always pays (the core's default, so GPUs get 0 here). On a CPU
 * device the host running ahead takes a core from the kernels, and which
 * costs more depends on how long the implementation takes to hand a
 * finished command back to a thread waiting for it. On one 2-core AMD EPYC
 * VM (2026-12-07) a blocking 64-byte clEnqueueWriteBuffer on an idle queue
 * took 24-125 us (medians of 7 probes, 6 runs) on PoCL 3.1, where staging
 * ran mlp_digits 1.14-1.4x faster eagerly and 1.18-1.4x with --graph, and
 * cnn_digits --graph 4-10% slower (bench/uploads_staging.sh), and 2-3 us on
 * Intel's CPU runtime 2026.2, where staging ran both examples eagerly at
 * 0.64-0.67x. So once per CPU device, at its first upload, the
 * plugin times a few such writes and asks for staging when their median
 * waited longer than OCL_STAGING_WAIT_US, several times what the host
 * spends queuing an op (3-7 us), which a waiting host loses at every
 * upload. The probe takes about a millisecond. */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

#define OCL_STAGING_WAIT_US 10.0
#define OCL_STAGING_PROBES 7
#define OCL_STAGING_GAP_US 50.0
#define OCL_STAGING_PROBE_BYTES 64

static double ocl_now_us(void) { return 1e-3 * (double)ocl_host_ns(); }

static int ocl_cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of OCL_STAGING_PROBES blocking writes of a few bytes to a
 * buffer of its own on d's drained queue, each after the host was busy for
 * OCL_STAGING_GAP_US, in us; a negative value when a call failed (the
 * reason is logged at debug). */
static double ocl_sync_upload_wait(ocl_device *d) {
    cl_int err = CL_SUCCESS;
    cl_mem probe = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, OCL_STAGING_PROBE_BYTES, NULL, &err);
    if (!probe) {
        ocl_log(PT_LOG_DEBUG, "%s: clCreateBuffer for the upload probe failed: %s", d->name, ocl_error_name(err));
        return -1.0;
    }
    unsigned char bytes[OCL_STAGING_PROBE_BYTES] = {0};
    double waited[OCL_STAGING_PROBES];
    err = clFinish(d->queue);
    for (int i = 0; err == CL_SUCCESS && i < OCL_STAGING_PROBES; ++i) {
        /* the host busy for a while first, as a training loop's host is
         * between uploads, so the device's threads may have gone idle */
        for (const double t = ocl_now_us(); ocl_now_us() - t < OCL_STAGING_GAP_US;) {
        }
        const double t0 = ocl_now_us();
        err = clEnqueueWriteBuffer(d->queue, probe, CL_TRUE, 0, sizeof bytes, bytes, 0, NULL, NULL);
        waited[i] = ocl_now_us() - t0;
    }
    clReleaseMemObject(probe);
    if (err != CL_SUCCESS) {
        ocl_log(PT_LOG_DEBUG, "%s: the upload probe's clEnqueueWriteBuffer failed: %s", d->name,
                ocl_error_name(err));
        return -1.0;
    }
    qsort(waited, OCL_STAGING_PROBES, sizeof waited[0], ocl_cmp_double);
    return waited[OCL_STAGING_PROBES / 2];
}

int32_t ocl_upload_staging(int dev) {
    ocl_device *d = NULL;
    if (ocl_device_ready(dev, "upload_staging", &d) != PT_OK) return 0;
    if (d->blocking_transfers) { /* transfers that always block gain nothing from staging */
        ocl_log(PT_LOG_INFO, "%s: small uploads synchronous: this implementation's transfers run blocking", d->name);
        return -1;
    }
    if (!(d->cl_type & CL_DEVICE_TYPE_CPU)) return 0;
    const double waited = ocl_sync_upload_wait(d);
    if (waited < 0) return -1; /* keep the CPU device's default: synchronous */
    const bool stage = waited > OCL_STAGING_WAIT_US;
    ocl_log(PT_LOG_INFO,
            "%s: small uploads %s: a synchronous %d-byte write on the idle queue took %.1f us (%s %.0f us; "
            "PORTABLE_STAGED_UPLOADS=on|off decides instead)",
            d->name, stage ? "staged through pinned blocks" : "synchronous", OCL_STAGING_PROBE_BYTES, waited,
            stage ? "above" : "at most", OCL_STAGING_WAIT_US);
    return stage ? 1 : -1;
}
