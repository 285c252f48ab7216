// The device side of tests/numeric/fp8_on_device.c: CUDA's own conversions
// and the header-only cplab/philox.h, executed by the GPU (sm_89+ convert
// e4m3 with the cvt.*.e4m3x2 instructions, bf16 with cvt.rn.bf16.f32), so
// the host test can compare them bit for bit with cplab's C code.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <stdio.h>
#include <string.h>

#include "cplab/philox.h"
#include "fp8_device.h"

#define TRY(call)                                                                                \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      snprintf(err, errlen, "%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      rc = 1;                                                                                    \
      goto done;                                                                                 \
    }                                                                                            \
  } while (0)

__global__ void convert_kernel(const uint32_t *in, size_t n, uint16_t *bf16, uint8_t *e4m3) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = __uint_as_float(in[i]);
  __nv_bfloat16_raw b = __float2bfloat16(x);
  bf16[i] = b.x;
  e4m3[i] = (uint8_t)__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
}

__global__ void bf16_decode_kernel(uint32_t *f32) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= 65536u) return;
  __nv_bfloat16_raw r;
  r.x = (unsigned short)i;
  f32[i] = __float_as_uint(__bfloat162float(__nv_bfloat16(r)));
}

__global__ void e4m3_decode_kernel(uint32_t *f32, uint16_t *bf16) {
  unsigned i = threadIdx.x;
  __nv_fp8_e4m3 e;
  e.__x = (__nv_fp8_storage_t)i;
  f32[i] = __float_as_uint(static_cast<float>(e));
  __nv_bfloat16_raw r = static_cast<__nv_bfloat16>(e);
  bf16[i] = r.x;
}

__global__ void realistic_kernel(uint64_t seed, uint32_t layer, uint32_t tensor, uint32_t request, uint32_t pos0,
                                 uint32_t npos, uint32_t n, uint32_t threshold, float *out, uint32_t *src) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)npos * n) return;
  uint32_t p = (uint32_t)(i / n), e = (uint32_t)(i % n);
  out[i] = cplab_rand_realistic_at(seed, layer, tensor, request, pos0 + p, e);
  if (e == 0) src[p] = cplab_rand_row_source(seed, layer, tensor, request, pos0 + p, threshold);
}

static int no_device(char *err, size_t errlen) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    snprintf(err, errlen, "no CUDA device: %s", cudaGetErrorString(e));
    return 1;
  }
  return 0;
}

extern "C" int fp8dev_probe(char *name, size_t len, int *cc_major, int *cc_minor, char *err, size_t errlen) {
  int rc = 0;
  cudaDeviceProp prop;
  if (no_device(err, errlen)) return 77;
  TRY(cudaGetDeviceProperties(&prop, 0));
  snprintf(name, len, "%s", prop.name);
  *cc_major = prop.major;
  *cc_minor = prop.minor;
done:
  return rc;
}

extern "C" int fp8dev_convert(const uint32_t *in, size_t n, uint16_t *bf16, uint8_t *e4m3, char *err, size_t errlen) {
  int rc = 0;
  uint32_t *d_in = NULL;
  uint16_t *d_bf16 = NULL;
  uint8_t *d_e4m3 = NULL;
  if (no_device(err, errlen)) return 77;
  TRY(cudaMalloc(&d_in, n * sizeof *d_in));
  TRY(cudaMalloc(&d_bf16, n * sizeof *d_bf16));
  TRY(cudaMalloc(&d_e4m3, n * sizeof *d_e4m3));
  TRY(cudaMemcpy(d_in, in, n * sizeof *d_in, cudaMemcpyHostToDevice));
  convert_kernel<<<(unsigned)((n + 255) / 256), 256>>>(d_in, n, d_bf16, d_e4m3);
  TRY(cudaGetLastError());
  TRY(cudaMemcpy(bf16, d_bf16, n * sizeof *d_bf16, cudaMemcpyDeviceToHost));
  TRY(cudaMemcpy(e4m3, d_e4m3, n * sizeof *d_e4m3, cudaMemcpyDeviceToHost));
done:
  cudaFree(d_in);
  cudaFree(d_bf16);
  cudaFree(d_e4m3);
  return rc;
}

extern "C" int fp8dev_bf16_decode(uint32_t f32[65536], char *err, size_t errlen) {
  int rc = 0;
  uint32_t *d = NULL;
  if (no_device(err, errlen)) return 77;
  TRY(cudaMalloc(&d, 65536 * sizeof *d));
  bf16_decode_kernel<<<256, 256>>>(d);
  TRY(cudaGetLastError());
  TRY(cudaMemcpy(f32, d, 65536 * sizeof *d, cudaMemcpyDeviceToHost));
done:
  cudaFree(d);
  return rc;
}

extern "C" int fp8dev_e4m3_decode(uint32_t f32[256], uint16_t bf16[256], char *err, size_t errlen) {
  int rc = 0;
  uint32_t *d_f = NULL;
  uint16_t *d_b = NULL;
  if (no_device(err, errlen)) return 77;
  TRY(cudaMalloc(&d_f, 256 * sizeof *d_f));
  TRY(cudaMalloc(&d_b, 256 * sizeof *d_b));
  e4m3_decode_kernel<<<1, 256>>>(d_f, d_b);
  TRY(cudaGetLastError());
  TRY(cudaMemcpy(f32, d_f, 256 * sizeof *d_f, cudaMemcpyDeviceToHost));
  TRY(cudaMemcpy(bf16, d_b, 256 * sizeof *d_b, cudaMemcpyDeviceToHost));
done:
  cudaFree(d_f);
  cudaFree(d_b);
  return rc;
}

extern "C" int fp8dev_realistic(uint64_t seed, uint32_t layer, uint32_t tensor, uint32_t request, uint32_t pos0,
                                uint32_t npos, uint32_t n, uint32_t threshold, float *out, uint32_t *src, char *err,
                                size_t errlen) {
  int rc = 0;
  size_t total = (size_t)npos * n;
  float *d_out = NULL;
  uint32_t *d_src = NULL;
  if (no_device(err, errlen)) return 77;
  TRY(cudaMalloc(&d_out, total * sizeof *d_out));
  TRY(cudaMalloc(&d_src, npos * sizeof *d_src));
  realistic_kernel<<<(unsigned)((total + 255) / 256), 256>>>(seed, layer, tensor, request, pos0, npos, n, threshold,
                                                             d_out, d_src);
  TRY(cudaGetLastError());
  TRY(cudaMemcpy(out, d_out, total * sizeof *d_out, cudaMemcpyDeviceToHost));
  TRY(cudaMemcpy(src, d_src, npos * sizeof *d_src, cudaMemcpyDeviceToHost));
done:
  cudaFree(d_out);
  cudaFree(d_src);
  return rc;
}
