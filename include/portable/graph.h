/** @file
 * libportable — capture a step once, replay it (graphs).
 *
 * Between pt_graph_capture_begin(d) and pt_graph_capture_end(d), the ops
 * this thread sends to device d are recorded instead of run; the graph
 * returned replays them all with one call, with the memory of the step's
 * temporaries planned ahead in one block and no validation, allocation or
 * autograd work per op. Other threads, and this thread's work on other
 * devices before or after, run eagerly as always. docs/graphs.md states
 * what a replay reads and writes; in short, as CUDA graphs teach it:
 * - tensors that exist before the capture are read and written in place at
 *   each replay (copy each new batch into the same input tensors); the
 *   graph holds their memory until pt_graph_free, so releasing one is
 *   harmless (the replays then write memory nobody else sees);
 * - tensors made during the capture and still referenced at its end keep
 *   the latest replay's values (outputs, gradients, optimizer state);
 * - tensors made and released during the capture are intermediates whose
 *   memory the graph plans;
 * - random ops draw fresh numbers at each replay: the bits an eager run
 *   with the same seed would draw.
 * Reading a value on the host (pt_item, pt_to_host), an op on another
 * device, an upload of host data or an op the backend refuses, during the
 * capture, is refused: the call fails with a message that says why and what
 * to do, and the capture is invalid; pt_graph_capture_end then returns NULL
 * with that reason. A graph replays only the shapes it captured: keep one
 * graph per shape (a short last batch gets its own). */
#ifndef PORTABLE_GRAPH_H
#define PORTABLE_GRAPH_H

#include <stdint.h>

#include "device.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A captured step: opaque; made by pt_graph_capture_end, freed by
 * pt_graph_free. Used by one thread at a time. */
typedef struct pt_graph pt_graph;

/** What pt_graph_info reports of a graph. */
typedef struct pt_graph_stats {
    int64_t ops; /**< ops recorded (each one an execute call of an eager run) */
    int64_t kernels; /**< ops a replay launches after fusion: below ops where element-wise chains were fused (docs/graphs.md, "Fusion") */
    int64_t bytes_planned; /**< bytes of the graph's arena, where its intermediates live */
    int64_t bytes_eager_peak; /**< the most bytes those intermediates held at once in the eager run */
    int64_t intermediates; /**< tensors made and released during the capture (planned into the arena) */
    int64_t outputs; /**< tensors made during the capture and still referenced at its end */
    int64_t random_ops; /**< ops that draw fresh random numbers at each replay */
    int64_t replays; /**< pt_graph_replay calls that succeeded so far */
} pt_graph_stats;

/** Starts recording this thread's ops on d: from now until
 * pt_graph_capture_end(d), they are recorded, not run (tensors are made as
 * usual, their values undefined until the first replay). Waits for
 * nothing. PT_ERR_INVALID_ARGUMENT for a NULL d, or when this thread is
 * already capturing (on d or on another device: end that capture first). */
PT_API pt_status pt_graph_capture_begin(pt_device *d);
/** Ends this thread's capture on d, always (the next pt_graph_capture_begin
 * starts clean), and returns the graph, owned by the caller (pt_graph_free),
 * with its memory plan made (one arena allocated on d). NULL when the
 * capture was refused (the last error is the refusal: the function that
 * was refused, why, and what to do), when it recorded no op, when d is NULL
 * or not the device this thread captures on (PT_ERR_INVALID_ARGUMENT; a
 * capture on another device goes on), or when the arena does not fit
 * (PT_ERR_OUT_OF_MEMORY). */
PT_API pt_graph *pt_graph_capture_end(pt_device *d);
/** Enqueues the whole captured step on its device and returns at once (as
 * eager ops do; pt_item, pt_to_host and pt_device_synchronize wait). The
 * tensors the step read and wrote are read and written in place.
 * PT_ERR_INVALID_ARGUMENT for a NULL g, or when this thread is capturing on
 * g's device (a graph does not nest); a backend failure names the device
 * and the op. */
PT_API pt_status pt_graph_replay(pt_graph *g);
/** Fills *out with g's figures (pt_graph_stats). PT_ERR_INVALID_ARGUMENT
 * for a NULL g or out. Waits for nothing. */
PT_API pt_status pt_graph_info(const pt_graph *g, pt_graph_stats *out);
/** Frees g, its arena and what it kept alive: the outputs' memory, and its
 * references to the memory of the tensors made before the capture that it
 * read or wrote (queued replays finish first: the memory is reused in queue
 * order). NULL is fine. */
PT_API void pt_graph_free(pt_graph *g);

#ifdef __cplusplus
}
#endif
#endif
