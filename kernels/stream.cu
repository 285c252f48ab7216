// Streams, timing events and CUDA graphs for C callers: the measurement
// engine of cplab-bench times and replays its work on streams it creates and
// captures into graphs (the legacy default stream cannot be captured).
// Contracts in cplab_stream.h. One kernel only (the hold): the CPU emulation
// replaces this file by tests/emu/stream_host.cpp.
#include <cuda_runtime.h>

#include <stdlib.h>

#include "check.cuh"
#include "cplab_stream.h"
#include "dev_copy.cuh"

struct cplab_event {
  cudaEvent_t ev;
};

struct cplab_graph {
  cudaGraphExec_t exec;
};

// ---- streams -----------------------------------------------------------------

extern "C" int cplab_stream_create(void **stream, cplab_diag *d) {
  KCHECK_ARG(d, stream, "cplab_stream_create: NULL result pointer");
  *stream = NULL;
  cudaStream_t s = NULL;
  KCHECK_CUDA(d, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  *stream = (void *)s;
  return 0;
}

extern "C" int cplab_stream_destroy(void *stream, cplab_diag *d) {
  if (!stream) return 0;
  KCHECK_CUDA(d, cudaStreamDestroy(kstream(stream)));
  return 0;
}

// ---- holding a stream ------------------------------------------------------------

// One thread reads the global timer (nanoseconds) until ns have passed;
// __nanosleep between reads leaves the SM's issue slots alone.
__global__ void hold_kernel(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

extern "C" int cplab_dev_hold_async(void *stream, unsigned us, cplab_diag *d) {
  KCHECK_ARG(d, us <= CPLAB_HOLD_MAX_US, "cplab_dev_hold_async: %u us is more than %u", us, CPLAB_HOLD_MAX_US);
  if (us == 0) return 0;
  hold_kernel<<<1, 1, 0, kstream(stream)>>>(1000ull * us);
  return kcheck_launch(d, "hold_kernel");
}

// ---- timing events -------------------------------------------------------------

extern "C" int cplab_event_create(cplab_event **e, cplab_diag *d) {
  KCHECK_ARG(d, e, "cplab_event_create: NULL result pointer");
  *e = NULL;
  cplab_event *ev = (cplab_event *)calloc(1, sizeof *ev);
  if (!ev) return cplab_diag_set(d, CPLAB_ENOMEM, "cplab_event_create: out of host memory");
  cudaError_t err = cudaEventCreate(&ev->ev);
  if (err != cudaSuccess) {
    free(ev);
    return cplab_diag_set(d, CPLAB_ECUDA, "cplab_event_create: cudaEventCreate: %s", cudaGetErrorString(err));
  }
  *e = ev;
  return 0;
}

extern "C" void cplab_event_destroy(cplab_event *e) {
  if (!e) return;
  (void)cudaEventDestroy(e->ev); // nothing to report to: the handle is gone either way
  free(e);
}

extern "C" int cplab_event_record(cplab_event *e, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, e, "cplab_event_record: NULL event");
  KCHECK_CUDA(d, cudaEventRecord(e->ev, kstream(stream)));
  return 0;
}

extern "C" int cplab_event_elapsed_ms(cplab_event *start, cplab_event *end, float *ms, cplab_diag *d) {
  KCHECK_ARG(d, start && end && ms, "cplab_event_elapsed_ms: NULL argument");
  KCHECK_CUDA(d, cudaEventSynchronize(end->ev));
  KCHECK_CUDA(d, cudaEventSynchronize(start->ev)); // done already when recorded before end on its stream
  KCHECK_CUDA(d, cudaEventElapsedTime(ms, start->ev, end->ev));
  return 0;
}

// ---- CUDA graphs -------------------------------------------------------------------

// End the capture of a failed body and discard what it captured. A body that
// called something the capture forbids has invalidated it (EndCapture then
// fails and returns no graph) and left that error for cudaGetLastError:
// both are cleared here, so the stream and the next launcher's launch check
// are clean. The body's error (already in d) is what the caller reports.
static void graph_discard_capture(cudaStream_t s) {
  cudaGraph_t graph = NULL;
  if (cudaStreamEndCapture(s, &graph) == cudaSuccess && graph) (void)cudaGraphDestroy(graph);
  (void)cudaGetLastError();
}

extern "C" int cplab_graph_capture(void *stream, cplab_graph_body body, void *ctx, cplab_graph **out,
                                   cplab_diag *d) {
  KCHECK_ARG(d, out, "cplab_graph_capture: NULL result pointer");
  *out = NULL;
  KCHECK_ARG(d, body, "cplab_graph_capture: NULL body");
  KCHECK_ARG(d, stream, "cplab_graph_capture: the legacy default stream (NULL) cannot be captured");
  cudaStream_t s = kstream(stream);
  KCHECK_CUDA(d, cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  int rc = body(ctx, stream, d);
  if (rc != 0) {
    graph_discard_capture(s);
    return rc;
  }
  cudaGraph_t graph = NULL;
  cudaError_t err = cudaStreamEndCapture(s, &graph);
  if (err != cudaSuccess) { // e.g. invalidated by a forbidden call of the body
    (void)cudaGetLastError();
    return cplab_diag_set(d, CPLAB_ECUDA,
                          "cplab_graph_capture: cudaStreamEndCapture: %s (did the body synchronise or allocate?)",
                          cudaGetErrorString(err));
  }
  cplab_graph *g = (cplab_graph *)calloc(1, sizeof *g);
  if (!g) {
    (void)cudaGraphDestroy(graph);
    return cplab_diag_set(d, CPLAB_ENOMEM, "cplab_graph_capture: out of host memory");
  }
  err = cudaGraphInstantiate(&g->exec, graph, 0);
  (void)cudaGraphDestroy(graph); // the executable graph keeps what it needs
  if (err != cudaSuccess) {
    free(g);
    return cplab_diag_set(d, CPLAB_ECUDA, "cplab_graph_capture: cudaGraphInstantiate: %s", cudaGetErrorString(err));
  }
  *out = g;
  return 0;
}

extern "C" int cplab_graph_launch(cplab_graph *g, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, g, "cplab_graph_launch: NULL graph");
  KCHECK_CUDA(d, cudaGraphLaunch(g->exec, kstream(stream)));
  return 0;
}

extern "C" void cplab_graph_destroy(cplab_graph *g) {
  if (!g) return;
  (void)cudaGraphExecDestroy(g->exec);
  free(g);
}
