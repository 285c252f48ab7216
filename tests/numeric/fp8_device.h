/* tests/numeric/fp8_device.h: the GPU side of tests/numeric/fp8_on_device.c
 * (fp8_device.cu): CUDA's conversions and cplab/philox.h executed by the
 * device. Each returns 0, 77 when no GPU is visible, or 1 with a message. */
#ifndef CPLAB_TESTS_FP8_DEVICE_H
#define CPLAB_TESTS_FP8_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Name and compute capability of device 0 into name (77 when there is none). */
int fp8dev_probe(char *name, size_t len, int *cc_major, int *cc_minor, char *err, size_t errlen);

/* On the device, for each float pattern in[i]: bf16[i] = __float2bfloat16,
 * e4m3[i] = __nv_cvt_float_to_fp8(SATFINITE, E4M3). */
int fp8dev_convert(const uint32_t *in, size_t n, uint16_t *bf16, uint8_t *e4m3, char *err, size_t errlen);

/* On the device, for every bf16 pattern b: f32[b] = __bfloat162float(b). */
int fp8dev_bf16_decode(uint32_t f32[65536], char *err, size_t errlen);

/* On the device, for every e4m3 byte: float(__nv_fp8_e4m3) and __nv_bfloat16(__nv_fp8_e4m3). */
int fp8dev_e4m3_decode(uint32_t f32[256], uint16_t bf16[256], char *err, size_t errlen);

/* On the device, one thread per value: out[p * n + e] =
 * cplab_rand_realistic_at(seed, layer, tensor, request, pos0 + p, e) and
 * src[p] = cplab_rand_row_source(..., pos0 + p, threshold), p < npos. */
int fp8dev_realistic(uint64_t seed, uint32_t layer, uint32_t tensor, uint32_t request, uint32_t pos0, uint32_t npos,
                     uint32_t n, uint32_t threshold, float *out, uint32_t *src, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
