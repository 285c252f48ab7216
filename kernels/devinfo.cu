// The facts of the current device the launchers size their grids by: see
// cplab_device_facts in cplab_kernels.h.
#include <cuda_runtime.h>

#include "check.cuh"
#include "cplab_kernels.h"

// No cache: cudaDeviceGetAttribute reads the driver's table (far below a
// launch's cost), and a cache keyed by device would be mutable global state.
// A caller that launches often obtains the facts once and keeps them.
extern "C" int cplab_device_facts_get(cplab_device_facts *f, cplab_diag *d) {
  KCHECK_ARG(d, f, "cplab_device_facts_get: NULL facts");
  KCHECK_CUDA(d, cudaGetDevice(&f->device));
  KCHECK_CUDA(d, cudaDeviceGetAttribute(&f->sm_count, cudaDevAttrMultiProcessorCount, f->device));
  KCHECK_CUDA(d, cudaDeviceGetAttribute(&f->smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, f->device));
  if (f->sm_count < 1) f->sm_count = 1; // grids are sized by it: never zero waves
  return 0;
}
