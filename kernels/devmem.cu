// Device memory for C callers (the executor and the GPU tests), so that they
// need no CUDA headers. Contracts in cplab_kernels.h.
#include <cuda_runtime.h>

#include "check.cuh"
#include "cplab_kernels.h"

extern "C" int cplab_dev_alloc(void **ptr, size_t bytes, cplab_diag *d) {
  KCHECK_ARG(d, ptr, "cplab_dev_alloc: NULL result pointer");
  *ptr = NULL;
  if (bytes == 0) return 0;
  cudaError_t err = cudaMalloc(ptr, bytes);
  if (err != cudaSuccess) {
    *ptr = NULL;
    return cplab_diag_set(d, err == cudaErrorMemoryAllocation ? CPLAB_ENOMEM : CPLAB_ECUDA,
                          "cudaMalloc(%zu bytes): %s", bytes, cudaGetErrorString(err));
  }
  return 0;
}

extern "C" int cplab_dev_free(void *ptr, cplab_diag *d) {
  if (!ptr) return 0;
  KCHECK_CUDA(d, cudaFree(ptr));
  return 0;
}

extern "C" int cplab_dev_upload(void *dev, const void *host, size_t bytes, cplab_diag *d) {
  if (bytes == 0) return 0;
  KCHECK_ARG(d, dev && host, "cplab_dev_upload: NULL pointer");
  KCHECK_CUDA(d, cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));
  // From pageable memory cudaMemcpy returns once the data is staged; the DMA
  // may still be in flight, and kernels on a non-blocking stream would race it.
  KCHECK_CUDA(d, cudaDeviceSynchronize());
  return 0;
}

extern "C" int cplab_dev_download(void *host, const void *dev, size_t bytes, cplab_diag *d) {
  if (bytes == 0) return 0;
  KCHECK_ARG(d, dev && host, "cplab_dev_download: NULL pointer");
  KCHECK_CUDA(d, cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
  return 0;
}

extern "C" int cplab_dev_copy(void *dst, const void *src, size_t bytes, cplab_diag *d) {
  if (bytes == 0) return 0;
  KCHECK_ARG(d, dst && src, "cplab_dev_copy: NULL pointer");
  KCHECK_CUDA(d, cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
  return 0;
}

extern "C" int cplab_dev_sync(void *stream, cplab_diag *d) {
  KCHECK_CUDA(d, cudaStreamSynchronize(kstream(stream)));
  KCHECK_CUDA(d, cudaGetLastError());
  return 0;
}
