/* libportable null backend — the device queue.
 *
 * A real backend keeps its queue here (a CUDA stream, an OpenCL command
 * queue), with the helpers its exec files launch work through and the
 * waits: synchronize, markers, trace stamps. Every member of this one
 * completes before returning, so there is nothing to wait for. */
#include "internal.h"

pt_status null_synchronize(int dev) {
    (void)dev;
    return PT_OK;
}
