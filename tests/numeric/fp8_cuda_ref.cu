// CUDA's own conversions, as the reference for cplab/fp8.h: thin extern "C"
// wrappers over cuda_bf16.h / cuda_fp8.h, compiled by nvcc for the host
// (these functions are __host__ __device__; here they run on the CPU).
// Bit patterns in and out, so no value passes through the C side's FPU.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <stdint.h>
#include <string.h>

#include "fp8_cuda_ref.h"

static float f_of(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

static uint32_t u_of(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

extern "C" uint16_t fp8_cuda_bf16_from_f32(uint32_t f) {
  __nv_bfloat16_raw r = __float2bfloat16(f_of(f));
  return r.x;
}

extern "C" uint32_t fp8_cuda_bf16_to_f32(uint16_t b) {
  __nv_bfloat16_raw r;
  r.x = b;
  return u_of(__bfloat162float(__nv_bfloat16(r)));
}

extern "C" uint8_t fp8_cuda_e4m3_from_f32(uint32_t f) {
  return (uint8_t)__nv_cvt_float_to_fp8(f_of(f), __NV_SATFINITE, __NV_E4M3);
}

extern "C" uint8_t fp8_cuda_e4m3_from_bf16(uint16_t b) {
  __nv_bfloat16_raw r;
  r.x = b;
  return (uint8_t)__nv_cvt_bfloat16raw_to_fp8(r, __NV_SATFINITE, __NV_E4M3);
}

extern "C" uint32_t fp8_cuda_e4m3_to_f32(uint8_t b) {
  __nv_fp8_e4m3 e;
  e.__x = (__nv_fp8_storage_t)b;
  return u_of(static_cast<float>(e));
}

extern "C" uint16_t fp8_cuda_e4m3_to_bf16(uint8_t b) {
  __nv_fp8_e4m3 e;
  e.__x = (__nv_fp8_storage_t)b;
  __nv_bfloat16_raw r = static_cast<__nv_bfloat16>(e);
  return r.x;
}
