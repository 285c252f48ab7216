// Poison fills for unused memory: bytes through cudaMemsetAsync, bf16 NaN
// rows through a grid-stride kernel. Contracts in cplab_kernels.h.
#include <cuda_runtime.h>

#include "check.cuh"
#include "cplab_kernels.h"

#define POISON_THREADS 256
#define POISON_MAX_BLOCKS 65536u

__global__ void poison_u16_kernel(uint16_t *buf, size_t count, uint16_t value) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) buf[i] = value;
}

extern "C" int cplab_poison_bytes(void *buf, size_t bytes, uint8_t value, void *stream, cplab_diag *d) {
  if (bytes == 0) return 0;
  KCHECK_ARG(d, buf, "cplab_poison_bytes: NULL buffer");
  KCHECK_CUDA(d, cudaMemsetAsync(buf, value, bytes, kstream(stream)));
  return 0;
}

extern "C" int cplab_poison_bf16(uint16_t *buf, size_t count, void *stream, cplab_diag *d) {
  if (count == 0) return 0;
  KCHECK_ARG(d, buf && kaligned(buf, 2), "cplab_poison_bf16: NULL or misaligned buffer");
  size_t blocks = (count + POISON_THREADS - 1) / POISON_THREADS;
  if (blocks > POISON_MAX_BLOCKS) blocks = POISON_MAX_BLOCKS;
  poison_u16_kernel<<<(unsigned)blocks, POISON_THREADS, 0, kstream(stream)>>>(buf, count, (uint16_t)CPLAB_BF16_POISON);
  return kcheck_launch(d, "poison_u16_kernel");
}
