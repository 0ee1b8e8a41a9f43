/* libportable CUDA backend — trace stamps (backend.h stamp_*).
 *
 * A stamp is a timing event recorded on the device's stream. CUDA gives
 * only the time between two events, so each device has an anchor: an event
 * recorded on its idle stream (the first stamp waits for the stream once)
 * with the host's CLOCK_MONOTONIC read just before it was queued. A stamp's
 * host time is the anchor's plus the elapsed time between them. The anchor
 * really passed after that host reading, so mapped times are never later
 * than the true ones (backend.h asks for that); cudaEventElapsedTime's
 * float milliseconds lose about 0.1 ppm of the distance to the anchor. */
#include <time.h>

#include "internal.h"

static int64_t host_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Caller holds d->clock_lock and has selected d. */
static pt_status set_anchor(ptcu_device *d) {
    cudaError_t e = cudaStreamSynchronize(d->stream);
    if (e != cudaSuccess)
        return ptcu_cuda_error(e, "stamp_record: waiting for CUDA device %d", d->ordinal);
    const int64_t before = host_ns();
    cudaEvent_t ev = NULL;
    pt_status s = ptcu_record_event(d, cudaEventDefault, "stamp_record", &ev);
    if (s != PT_OK) return s;
    e = cudaEventSynchronize(ev);
    if (e != cudaSuccess) {
        cudaEventDestroy(ev);
        return ptcu_cuda_error(e, "stamp_record: the clock anchor on CUDA device %d", d->ordinal);
    }
    d->clock_anchor = ev;
    d->clock_anchor_ns = before;
    return PT_OK;
}

pt_status ptcu_vt_stamp_record(int dev, void **stamp) {
    ptcu_device *d = ptcu_dev(dev);
    pt_status s = ptcu_select(d, "stamp_record");
    if (s != PT_OK) return s;
    pthread_mutex_lock(&d->clock_lock);
    if (!d->clock_anchor) s = set_anchor(d);
    pthread_mutex_unlock(&d->clock_lock);
    if (s != PT_OK) return s;
    cudaEvent_t ev = NULL;
    s = ptcu_record_event(d, cudaEventDefault, "stamp_record", &ev);
    if (s == PT_OK) *stamp = ev;
    return s;
}

pt_status ptcu_vt_stamp_time(int dev, void *stamp, int64_t *ns) {
    ptcu_device *d = ptcu_dev(dev);
    pthread_mutex_lock(&d->clock_lock);
    cudaEvent_t anchor = d->clock_anchor;
    const int64_t anchor_ns = d->clock_anchor_ns;
    pthread_mutex_unlock(&d->clock_lock);
    float ms = 0;
    cudaError_t e = anchor ? cudaEventElapsedTime(&ms, anchor, (cudaEvent_t)stamp)
                           : cudaErrorInvalidResourceHandle;
    if (e != cudaSuccess)
        return ptcu_cuda_error(e, "stamp_time: cudaEventElapsedTime on CUDA device %d", d->ordinal);
    *ns = anchor_ns + (int64_t)((double)ms * 1e6); /* truncated: never later */
    return PT_OK;
}

void ptcu_vt_stamp_release(int dev, void *stamp) {
    (void)dev;
    if (stamp && cudaEventDestroy((cudaEvent_t)stamp) != cudaSuccess) (void)cudaGetLastError();
}
