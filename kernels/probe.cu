// Device query and toolchain self-test: see cplab_kernels.h.
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab_kernels.h"

#define CPLAB_CUDA_TRY(d, call)                                                                     \
  do {                                                                                              \
    cudaError_t err_ = (call);                                                                      \
    if (err_ != cudaSuccess)                                                                        \
      return cplab_diag_set((d), CPLAB_ECUDA, "%s:%d: %s: %s", __FILE__, __LINE__, #call,           \
                            cudaGetErrorString(err_));                                              \
  } while (0)

extern "C" int cplab_gpu_query(cplab_gpu_info *info, cplab_diag *d) {
  memset(info, 0, sizeof *info);
  cudaError_t err = cudaGetDeviceCount(&info->device_count);
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver || info->device_count == 0)
    return cplab_diag_set(d, CPLAB_ENODEV, "no CUDA device: %s", cudaGetErrorString(err));
  CPLAB_CUDA_TRY(d, err);
  cudaDeviceProp prop;
  CPLAB_CUDA_TRY(d, cudaGetDeviceProperties(&prop, 0));
  snprintf(info->name, sizeof info->name, "%s", prop.name);
  info->cc_major = prop.major;
  info->cc_minor = prop.minor;
  info->sm_count = prop.multiProcessorCount;
  info->global_mem_bytes = (unsigned long long)prop.totalGlobalMem;
  CPLAB_CUDA_TRY(d, cudaRuntimeGetVersion(&info->runtime_version));
  CPLAB_CUDA_TRY(d, cudaDriverGetVersion(&info->driver_version));
  return 0;
}

__global__ void selftest_kernel(int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 3 * i + 1;
}

static int selftest_run(int *dev, int *host, int n, cplab_diag *d) {
  CPLAB_CUDA_TRY(d, cudaMemset(dev, 0xff, (size_t)n * sizeof(int)));
  selftest_kernel<<<(n + 255) / 256, 256>>>(dev, n);
  CPLAB_CUDA_TRY(d, cudaGetLastError());
  CPLAB_CUDA_TRY(d, cudaMemcpy(host, dev, (size_t)n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++)
    if (host[i] != 3 * i + 1)
      return cplab_diag_set(d, CPLAB_ECUDA, "self-test kernel wrote %d at element %d, expected %d", host[i], i,
                            3 * i + 1);
  return 0;
}

extern "C" int cplab_gpu_selftest(int n, cplab_diag *d) {
  if (n <= 0) return cplab_diag_set(d, CPLAB_EINVAL, "self-test size must be positive, got %d", n);
  cplab_gpu_info info;
  int rc = cplab_gpu_query(&info, d);
  if (rc) return rc;
  int *dev = NULL;
  int *host = (int *)malloc((size_t)n * sizeof(int));
  if (!host) return cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  cudaError_t err = cudaMalloc(&dev, (size_t)n * sizeof(int));
  if (err != cudaSuccess) {
    free(host);
    return cplab_diag_set(d, CPLAB_ECUDA, "cudaMalloc(%d ints): %s", n, cudaGetErrorString(err));
  }
  rc = selftest_run(dev, host, n, d);
  err = cudaFree(dev);
  free(host);
  if (!rc && err != cudaSuccess) rc = cplab_diag_set(d, CPLAB_ECUDA, "cudaFree: %s", cudaGetErrorString(err));
  return rc;
}
