/* cplab/fp8.h: bit-exact bf16 and fp8 e4m3 conversions, as NVIDIA does them.
 *
 * The simulator's reference for the numeric formats of the cache. Each
 * function equals, bit for bit over every input, CUDA's own conversion
 * (cuda_bf16.h / cuda_fp8.h, CUDA 13): tests/numeric/fp8_vs_cuda.cu compares
 * them over all 2^16 bf16 patterns, all 256 e4m3 bytes and a dense sweep of
 * float patterns including every rounding boundary; a cmocka test pins digests
 * of the same tables for builds without CUDA. Pure integer code: no libm, no
 * dependence on the FPU rounding mode or flush-to-zero. The executor does not
 * call these: it uses CUDA's conversions, and the diff proves agreement.
 *
 * Values are passed as their bit patterns: bf16 as uint16_t, e4m3 as uint8_t.
 *
 * bf16 (1 sign, 8 exponent, 7 mantissa bits; __float2bfloat16):
 *   - round to nearest, ties to even, on the full float (subnormals included;
 *     never flushed); finite values beyond the largest bf16 round to +-inf;
 *   - +-inf stay +-inf; every NaN becomes the quiet NaN 0x7FFF (sign and
 *     payload dropped);
 *   - -0 stays -0 (0x8000).
 *   bf16 -> float is exact: the bits shifted left by 16 (NaN payloads kept).
 *
 * e4m3 (OCP FP8 "E4M3FN": 1 sign, 4 exponent bits with bias 7, 3 mantissa
 * bits; no infinities; NaN = 0x7F / 0xFF; largest finite 448 = 0x7E;
 * smallest subnormal 2^-9 = 0x01). float -> e4m3 is
 * __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3):
 *   - round to nearest, ties to even (at every exponent, subnormals too);
 *   - saturation: +-inf and every finite |x| >= 448 give +-448 (0x7E /
 *     0xFE): up to 464 (the midpoint to the would-be 480, which ties to
 *     even, to 448) by rounding, above it by saturation;
 *   - magnitudes up to 2^-10 (half the smallest subnormal; the tie rounds to
 *     even, i.e. to 0) give a signed zero: 0x00 or 0x80; -0 gives 0x80;
 *   - every NaN gives 0x7F (sign dropped).
 *   e4m3 -> float is exact; 0x7F and 0xFF give the NaN 0x7FFFFFFF
 *   (as CUDA's float(__nv_fp8_e4m3)). e4m3 -> bf16 is exact too (3 mantissa
 *   bits fit in 7); 0x7F and 0xFF give 0x7FFF.
 */
#ifndef CPLAB_FP8_H
#define CPLAB_FP8_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CPLAB_E4M3_MAX 448.0f      /* largest finite e4m3 */
#define CPLAB_E4M3_MAX_BITS 0x7Eu  /* its byte */
#define CPLAB_E4M3_NAN_BITS 0x7Fu  /* the NaN float -> e4m3 produces */
#define CPLAB_BF16_NAN_BITS 0x7FFFu /* the NaN float -> bf16 produces */
#define CPLAB_F32_NAN_BITS 0x7FFFFFFFu /* the NaN e4m3 -> float produces */

/* Bits of a float and back (memcpy; no aliasing games). */
uint32_t cplab_f32_bits(float x);
float cplab_f32_from_bits(uint32_t u);

/* float -> bf16, round to nearest even (NaN -> 0x7FFF). */
uint16_t cplab_bf16_from_f32(float x);
/* bf16 -> float, exact. */
float cplab_bf16_to_f32(uint16_t b);

/* float -> e4m3, round to nearest even, saturating to +-448 (NaN -> 0x7F). */
uint8_t cplab_e4m3_from_f32(float x);
/* e4m3 -> float, exact (NaN -> 0x7FFFFFFF). */
float cplab_e4m3_to_f32(uint8_t b);
/* e4m3 -> bf16, exact (NaN -> 0x7FFF). */
uint16_t cplab_e4m3_to_bf16(uint8_t b);

#ifdef __cplusplus
}
#endif
#endif /* CPLAB_FP8_H */
