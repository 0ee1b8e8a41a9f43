/* Queue markers (backend.h marker_*) for the core's pinned host-block cache:
 * an event at the end of the device's in-order queue, asked for its status
 * without waiting. With them a pinned block released while queued uploads
 * still read it is reused as soon as the queue passes it, rather than only
 * after the next synchronize, so a loop that uploads each batch through a
 * pinned block and never synchronises keeps reusing a few blocks. */
#include "internal.h"

pt_status ocl_marker_record(int dev, void **marker) {
    ocl_device *d = NULL;
    pt_status s = ocl_device_ready(dev, "marker_record", &d);
    if (s != PT_OK) return s;
    cl_event ev = NULL;
    cl_int err = clEnqueueMarkerWithWaitList(d->queue, 0, NULL, &ev);
    if (err != CL_SUCCESS)
        return ocl_cl_fail(err, "marker_record: clEnqueueMarkerWithWaitList on opencl:%d", dev);
    /* A marker nobody waits on must still reach the device to complete. */
    clFlush(d->queue);
    *marker = ev;
    return PT_OK;
}

bool ocl_marker_passed(int dev, void *marker) {
    (void)dev;
    cl_int status = CL_QUEUED;
    cl_int err = clGetEventInfo((cl_event)marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                                &status, NULL);
    /* A negative status is a command that ended in an error: nothing before
     * it runs any more, so the block is free as well. */
    return err == CL_SUCCESS && status <= CL_COMPLETE;
}

void ocl_marker_release(int dev, void *marker) {
    (void)dev;
    if (marker) clReleaseEvent((cl_event)marker);
}
