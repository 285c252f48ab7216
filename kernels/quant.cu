// Per-tensor e4m3 quantisation of activations, the step before an fp8 GEMM
// (cplab-bench's fp8 projections): out = e4m3(x · inv_scale) for fp32 or
// bf16 inputs, element-wise, grid-stride. Contracts in cplab_kernels.h.
#include <cuda_runtime.h>

#include <math.h>

#include "check.cuh"
#include "cplab_kernels.h"
#include "kformat.cuh"

#define QUANT_THREADS 256
#define QUANT_MAX_BLOCKS 65536u

__global__ void quant_f32_kernel(const float *in, int64_t count, float inv_scale, uint8_t *out) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
    out[i] = (uint8_t)kf_e4m3(in[i] * inv_scale);
}

__global__ void quant_bf16_kernel(const uint16_t *in, int64_t count, float inv_scale, uint8_t *out) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
    out[i] = (uint8_t)kf_e4m3(kf_bf16_to_f32(in[i]) * inv_scale);
}

static unsigned quant_blocks(int64_t count) {
  int64_t blocks = (count + QUANT_THREADS - 1) / QUANT_THREADS;
  return (unsigned)(blocks > QUANT_MAX_BLOCKS ? QUANT_MAX_BLOCKS : blocks);
}

extern "C" int cplab_f32_to_e4m3(const float *in, int64_t count, float inv_scale, uint8_t *out, void *stream,
                                 cplab_diag *d) {
  KCHECK_ARG(d, count >= 0, "cplab_f32_to_e4m3: negative count %lld", (long long)count);
  KCHECK_ARG(d, isfinite(inv_scale), "cplab_f32_to_e4m3: inv_scale must be finite, got %g", (double)inv_scale);
  if (count == 0) return 0;
  KCHECK_ARG(d, in && out, "cplab_f32_to_e4m3: NULL argument");
  quant_f32_kernel<<<quant_blocks(count), QUANT_THREADS, 0, kstream(stream)>>>(in, count, inv_scale, out);
  return kcheck_launch(d, "quant_f32_kernel");
}

extern "C" int cplab_bf16_to_e4m3(const uint16_t *in, int64_t count, float inv_scale, uint8_t *out, void *stream,
                                  cplab_diag *d) {
  KCHECK_ARG(d, count >= 0, "cplab_bf16_to_e4m3: negative count %lld", (long long)count);
  KCHECK_ARG(d, isfinite(inv_scale), "cplab_bf16_to_e4m3: inv_scale must be finite, got %g", (double)inv_scale);
  if (count == 0) return 0;
  KCHECK_ARG(d, in && out && kaligned(in, 2), "cplab_bf16_to_e4m3: NULL or misaligned argument");
  quant_bf16_kernel<<<quant_blocks(count), QUANT_THREADS, 0, kstream(stream)>>>(in, count, inv_scale, out);
  return kcheck_launch(d, "quant_bf16_kernel");
}
