/* tests/numeric/fp8_cuda_ref.h: CUDA's host-side conversions (fp8_cuda_ref.cu,
 * built by nvcc), bit patterns in and out. */
#ifndef CPLAB_TESTS_FP8_CUDA_REF_H
#define CPLAB_TESTS_FP8_CUDA_REF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

uint16_t fp8_cuda_bf16_from_f32(uint32_t f);  /* __float2bfloat16 */
uint32_t fp8_cuda_bf16_to_f32(uint16_t b);    /* __bfloat162float */
uint8_t fp8_cuda_e4m3_from_f32(uint32_t f);   /* __nv_cvt_float_to_fp8(SATFINITE, E4M3) */
uint8_t fp8_cuda_e4m3_from_bf16(uint16_t b);  /* __nv_cvt_bfloat16raw_to_fp8(SATFINITE, E4M3) */
uint32_t fp8_cuda_e4m3_to_f32(uint8_t b);     /* float(__nv_fp8_e4m3) */
uint16_t fp8_cuda_e4m3_to_bf16(uint8_t b);    /* __nv_bfloat16(__nv_fp8_e4m3) */

#ifdef __cplusplus
}
#endif
#endif
