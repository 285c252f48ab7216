// tests/emu/stream_host.cpp: the stream, event and graph functions of
// kernels/stream.cu (cplab_stream.h) for the CPU emulation, whose runtime has
// no streams, events or graphs. Same extern "C" functions, argument checks
// and error codes as stream.cu; what differs follows from the emulation
// executing every launch synchronously (tests/emu/cuda_emu.h):
//   - streams are distinct non-NULL dummy handles (the emulation's
//     cudaStreamCreate); destroying one does nothing;
//   - cplab_dev_copy_async is an immediate copy through the emulation's
//     cudaMemcpyAsync (device -> device), with its range checks: a range
//     outside a cudaMalloc'd allocation is CPLAB_ECUDA;
//   - cplab_dev_hold_async sleeps the host for its microseconds (the
//     stream busy that long: a launch behind it runs after it);
//   - an event records a host steady_clock time: the work queued before it
//     has already run. Elapsed time of a never-recorded event is CPLAB_ECUDA,
//     as cudaEventElapsedTime's cudaErrorInvalidResourceHandle;
//   - cplab_graph_capture stores (body, ctx) without calling body, and
//     cplab_graph_launch calls body(ctx, stream): the work runs at each
//     launch, never at capture, as on a GPU. Host side effects of the body
//     (its reads of ctx included) happen at each launch here but once, at
//     capture, on a GPU, so a body must have none (cplab_stream.h). For the
//     same reason a failing body's error surfaces at the first
//     cplab_graph_launch here, at cplab_graph_capture on a GPU.
// A test of these functions under emulation (tests/gpu/test_gpu_stream.c)
// checks this stand-in, not CUDA's streams and graphs.
#include <cuda_runtime.h>

#include <stdlib.h>

#include <chrono>
#include <new>
#include <thread>

#include "check.cuh"
#include "cplab_stream.h"
#include "dev_copy.cuh"

struct cplab_event {
  bool recorded;
  std::chrono::steady_clock::time_point t;
};

struct cplab_graph {
  cplab_graph_body body;
  void *ctx;
};

// ---- streams -----------------------------------------------------------------

extern "C" int cplab_stream_create(void **stream, cplab_diag *d) {
  KCHECK_ARG(d, stream, "cplab_stream_create: NULL result pointer");
  *stream = NULL;
  cudaStream_t s = NULL;
  KCHECK_CUDA(d, cudaStreamCreate(&s));
  *stream = (void *)s;
  return 0;
}

extern "C" int cplab_stream_destroy(void *stream, cplab_diag *d) {
  if (!stream) return 0;
  KCHECK_CUDA(d, cudaStreamDestroy(kstream(stream)));
  return 0;
}

// ---- holding a stream ------------------------------------------------------------

extern "C" int cplab_dev_hold_async(void *, unsigned us, cplab_diag *d) {
  KCHECK_ARG(d, us <= CPLAB_HOLD_MAX_US, "cplab_dev_hold_async: %u us is more than %u", us, CPLAB_HOLD_MAX_US);
  std::this_thread::sleep_for(std::chrono::microseconds(us));
  return 0;
}

// ---- timing events -------------------------------------------------------------

extern "C" int cplab_event_create(cplab_event **e, cplab_diag *d) {
  KCHECK_ARG(d, e, "cplab_event_create: NULL result pointer");
  *e = NULL;
  cplab_event *ev = new (std::nothrow) cplab_event{false, {}};
  if (!ev) return cplab_diag_set(d, CPLAB_ENOMEM, "cplab_event_create: out of host memory");
  *e = ev;
  return 0;
}

extern "C" void cplab_event_destroy(cplab_event *e) { delete e; }

extern "C" int cplab_event_record(cplab_event *e, void *, cplab_diag *d) {
  KCHECK_ARG(d, e, "cplab_event_record: NULL event");
  e->t = std::chrono::steady_clock::now();
  e->recorded = true;
  return 0;
}

extern "C" int cplab_event_elapsed_ms(cplab_event *start, cplab_event *end, float *ms, cplab_diag *d) {
  KCHECK_ARG(d, start && end && ms, "cplab_event_elapsed_ms: NULL argument");
  if (!start->recorded || !end->recorded)
    return cplab_diag_set(d, CPLAB_ECUDA, "cplab_event_elapsed_ms: cudaEventElapsedTime: %s",
                          cudaGetErrorString(cudaErrorInvalidResourceHandle));
  *ms = std::chrono::duration<float, std::milli>(end->t - start->t).count();
  return 0;
}

// ---- CUDA graphs -------------------------------------------------------------------

extern "C" int cplab_graph_capture(void *stream, cplab_graph_body body, void *ctx, cplab_graph **out,
                                   cplab_diag *d) {
  KCHECK_ARG(d, out, "cplab_graph_capture: NULL result pointer");
  *out = NULL;
  KCHECK_ARG(d, body, "cplab_graph_capture: NULL body");
  KCHECK_ARG(d, stream, "cplab_graph_capture: the legacy default stream (NULL) cannot be captured");
  cplab_graph *g = (cplab_graph *)calloc(1, sizeof *g);
  if (!g) return cplab_diag_set(d, CPLAB_ENOMEM, "cplab_graph_capture: out of host memory");
  g->body = body;
  g->ctx = ctx;
  *out = g;
  return 0;
}

extern "C" int cplab_graph_launch(cplab_graph *g, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, g, "cplab_graph_launch: NULL graph");
  return g->body(g->ctx, stream, d);
}

extern "C" void cplab_graph_destroy(cplab_graph *g) { free(g); }
