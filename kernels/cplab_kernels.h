/* kernels/cplab_kernels.h: extern "C" launchers of cplab's CUDA kernels.
 * Host code includes only this header; every launcher checks its CUDA calls
 * and returns 0 or a negative cplab error code with a message in d. */
#ifndef CPLAB_KERNELS_H
#define CPLAB_KERNELS_H

#include "cplab/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cplab_gpu_info {
  int device_count;
  char name[256];
  int cc_major, cc_minor;
  int sm_count;
  unsigned long long global_mem_bytes;
  int runtime_version, driver_version;
} cplab_gpu_info;

/* Describe device 0. CPLAB_ENODEV when the process sees no GPU (or no
 * driver): callers that are tests turn that into a skip. */
int cplab_gpu_query(cplab_gpu_info *info, cplab_diag *d);

/* Toolchain probe: runs a kernel over n elements (out[i] = 3i + 1 computed on
 * the device), copies back and checks every element. Proves that this build's
 * device code matches the card (right SASS or PTX) and that launches work. */
int cplab_gpu_selftest(int n, cplab_diag *d);

#ifdef __cplusplus
}
#endif
#endif
