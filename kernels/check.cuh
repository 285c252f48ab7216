// kernels/check.cuh: what every kernel file shares: CUDA error checking that
// turns a failed call into CPLAB_ECUDA with a message naming the call, the
// argument checks of the launchers, the launch-error check, and the stream
// cast (launchers take the stream as void * so that C callers need no CUDA
// headers; NULL is the legacy default stream).
#ifndef CPLAB_KERNELS_CHECK_CUH
#define CPLAB_KERNELS_CHECK_CUH

#include <cuda_runtime.h>

#include <stdint.h>

#include "cplab/error.h"

// Return CPLAB_ECUDA from the enclosing launcher when call fails.
#define KCHECK_CUDA(d, call)                                                                                  \
  do {                                                                                                        \
    cudaError_t kerr_ = (call);                                                                               \
    if (kerr_ != cudaSuccess)                                                                                 \
      return cplab_diag_set((d), CPLAB_ECUDA, "%s:%d: %s: %s", __FILE__, __LINE__, #call,                     \
                            cudaGetErrorString(kerr_));                                                       \
  } while (0)

// Return CPLAB_EINVAL from the enclosing launcher unless cond holds.
#define KCHECK_ARG(d, cond, ...)                                                                              \
  do {                                                                                                        \
    if (!(cond)) return cplab_diag_set((d), CPLAB_EINVAL, __VA_ARGS__);                                       \
  } while (0)

// After a <<<...>>> launch: a bad configuration shows up here, not at the
// launch statement. Errors of the kernel's execution surface at the next
// synchronising call of the caller.
static inline int kcheck_launch(cplab_diag *d, const char *kernel) {
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return cplab_diag_set(d, CPLAB_ECUDA, "launch of %s: %s", kernel, cudaGetErrorString(err));
  return 0;
}

static inline cudaStream_t kstream(void *stream) { return (cudaStream_t)stream; }

// Is p aligned to `bytes` (a power of two)? The vectorised loads and stores
// of the kernels rely on it; cudaMalloc gives 256.
static inline bool kaligned(const void *p, uintptr_t bytes) { return ((uintptr_t)p & (bytes - 1)) == 0; }

// Blocks for n items of `per_block` each (n > 0), as the unsigned grid size.
static inline unsigned kblocks(int64_t n, int64_t per_block) { return (unsigned)((n + per_block - 1) / per_block); }

// Largest grid.x the kernels use (the hardware allows 2^31 - 1).
#define KGRID_MAX_X INT32_MAX

// Kernels whose dynamic shared memory exceeds the default 48 KiB must opt in.
template <typename K>
static inline int kset_smem(cplab_diag *d, K kernel, size_t bytes, const char *name) {
  int dev = 0, max_optin = 0;
  KCHECK_CUDA(d, cudaGetDevice(&dev));
  KCHECK_CUDA(d, cudaDeviceGetAttribute(&max_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  if (bytes > (size_t)max_optin)
    return cplab_diag_set(d, CPLAB_EUNSUPPORTED, "%s needs %zu bytes of shared memory per block, the device allows %d",
                          name, bytes, max_optin);
  KCHECK_CUDA(d, cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
  return 0;
}

#endif
