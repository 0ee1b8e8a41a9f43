/* Trace stamps (backend.h stamp_*): a marker on the device's in-order
 * queue, whose CL_PROFILING_COMMAND_END says when the work before it was
 * done, on the device's profiling clock. That clock is mapped to the host's
 * CLOCK_MONOTONIC by an offset measured once per device on an idle queue:
 * host time read *before* a marker is queued, minus the marker's end. The
 * marker really ended later than that host reading, so every mapped time
 * is at most the true one (backend.h asks for that), early by the marker's
 * latency, a few microseconds. */
#define _POSIX_C_SOURCE 200809L


#include "internal.h"

pt_status ocl_stamp_record(int dev, void **stamp) {
    ocl_device *d = NULL;
    pt_status s = ocl_device_ready(dev, "stamp_record", &d);
    if (s != PT_OK) return s;
    if (!d->profiling)
        return ocl_fail(PT_ERR_UNSUPPORTED, "stamp_record: opencl:%d's driver refused a queue "
                                            "with profiling, so its work is not timed", dev);
    cl_event ev = NULL;
    cl_int err = clEnqueueMarkerWithWaitList(d->queue, 0, NULL, &ev);
    if (err != CL_SUCCESS)
        return ocl_cl_fail(err, "stamp_record: clEnqueueMarkerWithWaitList on opencl:%d", dev);
    *stamp = ev;
    return PT_OK;
}

static pt_status end_of(int dev, cl_event ev, cl_ulong *end) {
    cl_int err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof *end, end, NULL);
    if (err != CL_SUCCESS)
        return ocl_cl_fail(err, "stamp_time: clGetEventProfilingInfo(CL_PROFILING_COMMAND_END) "
                                "on opencl:%d", dev);
    return PT_OK;
}

/* Caller holds d->clock_lock. */
static pt_status measure_offset(ocl_device *d, int dev) {
    const int64_t before = ocl_host_ns();
    cl_event ev = NULL;
    cl_int err = clEnqueueMarkerWithWaitList(d->queue, 0, NULL, &ev);
    if (err == CL_SUCCESS) err = clWaitForEvents(1, &ev);
    if (err != CL_SUCCESS) {
        if (ev) clReleaseEvent(ev);
        return ocl_cl_fail(err, "stamp_time: a clock marker on opencl:%d", dev);
    }
    cl_ulong end = 0;
    pt_status s = end_of(dev, ev, &end);
    clReleaseEvent(ev);
    if (s != PT_OK) return s;
    d->clock_offset = before - (int64_t)end;
    d->clock_known = true;
    return PT_OK;
}

pt_status ocl_stamp_time(int dev, void *stamp, int64_t *ns) {
    ocl_device *d = NULL;
    pt_status s = ocl_device_ready(dev, "stamp_time", &d);
    if (s != PT_OK) return s;
    pthread_mutex_lock(&d->clock_lock);
    if (!d->clock_known) s = measure_offset(d, dev);
    const int64_t offset = d->clock_offset;
    pthread_mutex_unlock(&d->clock_lock);
    if (s != PT_OK) return s;
    cl_ulong end = 0;
    s = end_of(dev, (cl_event)stamp, &end);
    if (s == PT_OK) *ns = (int64_t)end + offset;
    return s;
}

void ocl_stamp_release(int dev, void *stamp) {
    (void)dev;
    if (stamp) clReleaseEvent((cl_event)stamp);
}
