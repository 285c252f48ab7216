/* kernels/cplab_stream.h: streams, timing events and CUDA graphs for C
 * callers (kernels/stream.cu). The measurement engine of cplab-bench times
 * its work on a stream it created and replays it as a CUDA graph; the legacy
 * default stream (NULL) cannot be captured, so it needs streams of its own.
 * Conventions of cplab_kernels.h: a stream is a cudaStream_t passed as
 * void *, every function returns 0 or a negative cplab error code with a
 * message in d: CPLAB_EINVAL for NULL or bad arguments, CPLAB_ECUDA for a
 * failed CUDA call.
 *
 * The CPU emulation of tests/emu replaces this file by a host stand-in
 * (tests/emu/stream_host.cpp): launches run synchronously there, events read
 * a host clock, and a graph calls its body at every launch, not at capture
 * (so a failing body's error comes from the first launch there). */
#ifndef CPLAB_STREAM_H
#define CPLAB_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "cplab/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- streams ------------------------------------------------------------ */

/* *stream = a new non-blocking stream (cudaStreamNonBlocking: it does not
 * synchronise with the legacy default stream). */
int cplab_stream_create(void **stream, cplab_diag *d);
/* Destroy the stream (NULL: no-op); work already queued still completes. */
int cplab_stream_destroy(void *stream, cplab_diag *d);

/* Asynchronous device -> device copy of bytes bytes on stream (bytes 0:
 * nothing, NULL pointers allowed then). */
int cplab_dev_copy_async(void *dst, const void *src, size_t bytes, void *stream, cplab_diag *d);
/* Asynchronous strided device -> device copy (cudaMemcpy2DAsync): `rows`
 * rows of `width` bytes, row i from src + i·spitch to dst + i·dpitch (width
 * <= each pitch; width or rows 0: nothing, NULL pointers allowed then). One
 * call where a loop of cplab_dev_copy_async would make one a row. */
int cplab_dev_copy2d_async(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t rows,
                           void *stream, cplab_diag *d);

/* Keep stream busy for `us` microseconds (one GPU thread waiting on the
 * global timer; us 0: nothing; more than CPLAB_HOLD_MAX_US: CPLAB_EINVAL).
 * What the host queues behind it meanwhile then runs back to back: the
 * timing loops (bench/ceilings.h, cplab_bench_time) start with one, so that
 * no event pair holds the host's launch time where the host enqueues a run
 * more slowly than the GPU runs it. */
#define CPLAB_HOLD_MAX_US 10000000u
int cplab_dev_hold_async(void *stream, unsigned us, cplab_diag *d);

/* ---- timing events -------------------------------------------------------- */

typedef struct cplab_event cplab_event;

/* *e = a new timing event. */
int cplab_event_create(cplab_event **e, cplab_diag *d);
/* Free the event (NULL: no-op). */
void cplab_event_destroy(cplab_event *e);
/* Record e on stream (NULL: the legacy default stream). Not inside a graph
 * body: a timing event cannot be captured. */
int cplab_event_record(cplab_event *e, void *stream, cplab_diag *d);
/* *ms = milliseconds between two recorded events (end after start); waits for
 * `end` first (then for start, should it be on another stream). CPLAB_ECUDA
 * when either was never recorded. */
int cplab_event_elapsed_ms(cplab_event *start, cplab_event *end, float *ms, cplab_diag *d);

/* ---- CUDA graphs ------------------------------------------------------------ */

/* A graph body launches work on `stream` through the launchers (and must do
 * nothing else that a capture forbids: no synchronisation, no allocation, no
 * copies to or from pageable host memory). It must have no host side
 * effects either: on a GPU it runs once, at capture, and the launches it
 * queued replay with the same arguments at each launch; the CPU emulation
 * calls it at each launch instead. 0 or a negative cplab error code. */
typedef int (*cplab_graph_body)(void *ctx, void *stream, cplab_diag *d);

/* An instantiated graph (cudaGraphExec_t). */
typedef struct cplab_graph cplab_graph;

/* Capture body's launches on stream (cudaStreamBeginCapture in mode
 * cudaStreamCaptureModeThreadLocal), end the capture and instantiate the
 * graph into *out. Capture queues nothing: the work runs only at
 * cplab_graph_launch. If body fails, the capture is ended and discarded,
 * body's error is returned (its message kept) and the stream is usable
 * again. stream must not be NULL: the legacy stream cannot be captured
 * (CPLAB_EINVAL). */
int cplab_graph_capture(void *stream, cplab_graph_body body, void *ctx, cplab_graph **out, cplab_diag *d);
/* Launch the graph on stream (asynchronous; NULL: the legacy stream). */
int cplab_graph_launch(cplab_graph *g, void *stream, cplab_diag *d);
/* Free the graph (NULL: no-op). */
void cplab_graph_destroy(cplab_graph *g);

#ifdef __cplusplus
}
#endif
#endif
