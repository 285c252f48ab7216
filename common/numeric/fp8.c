/* bf16 and fp8 e4m3 conversions in integer arithmetic: see cplab/fp8.h. */
#include "cplab/fp8.h"

#include <string.h>

#define F32_SIGN 0x80000000u
#define F32_ABS 0x7FFFFFFFu
#define F32_INF 0x7F800000u
#define F32_MANT 0x007FFFFFu
#define F32_HIDDEN 0x00800000u

uint32_t cplab_f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

float cplab_f32_from_bits(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* sig / 2^shift rounded to the nearest integer, ties to even (shift >= 1). */
static uint32_t shift_rne(uint32_t sig, unsigned shift) {
  if (shift >= 32) return 0; /* sig < 2^24 < 2^31: below one half */
  uint32_t q = sig >> shift, rem = sig & ((UINT32_C(1) << shift) - 1u), half = UINT32_C(1) << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) q++;
  return q;
}

uint16_t cplab_bf16_from_f32(float x) {
  uint32_t u = cplab_f32_bits(x);
  if ((u & F32_ABS) > F32_INF) return (uint16_t)CPLAB_BF16_NAN_BITS;
  /* Dropping the low 16 bits with ties to even; a carry out of the mantissa
   * moves to the next binade (or to infinity) on its own. Infinities have zero
   * low bits and stay. */
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

float cplab_bf16_to_f32(uint16_t b) { return cplab_f32_from_bits((uint32_t)b << 16); }

uint8_t cplab_e4m3_from_f32(float x) {
  uint32_t u = cplab_f32_bits(x);
  uint32_t sign = (u & F32_SIGN) ? 0x80u : 0x00u, a = u & F32_ABS;
  if (a > F32_INF) return (uint8_t)CPLAB_E4M3_NAN_BITS;
  if (a == F32_INF) return (uint8_t)(sign | CPLAB_E4M3_MAX_BITS);
  uint32_t biased = a >> 23;                          /* float exponent field, 0..254 */
  uint32_t sig = (a & F32_MANT) | (biased ? F32_HIDDEN : 0u); /* |x| = sig * 2^(max(biased,1) - 150) */
  uint32_t code;
  if (biased >= 121) {
    /* |x| >= 2^-6, e4m3's normal range: keep 3 of the 23 mantissa bits. The
     * rounded significand q is in [8, 16]; q = 16 carries into the exponent,
     * which the sum below does by itself. */
    uint32_t e = biased - 120, q = shift_rne(sig, 20);
    code = (e << 3) + q - 8u;
    if (code > CPLAB_E4M3_MAX_BITS) code = CPLAB_E4M3_MAX_BITS; /* saturate */
  } else {
    /* |x| < 2^-6: a multiple of 2^-9, q = round(|x| * 2^9) in [0, 8]; q = 8 is
     * the smallest normal, whose byte is 0x08 as well. */
    uint32_t eff = biased ? biased : 1u; /* float subnormals scale like exponent 1 */
    code = shift_rne(sig, 141u - eff);
  }
  return (uint8_t)(sign | code);
}

float cplab_e4m3_to_f32(uint8_t b) {
  uint32_t sign = (b & 0x80u) ? F32_SIGN : 0u, e = (b >> 3) & 0xFu, m = b & 0x7u;
  if ((b & 0x7Fu) == 0x7Fu) return cplab_f32_from_bits(CPLAB_F32_NAN_BITS);
  if (e == 0) {
    if (m == 0) return cplab_f32_from_bits(sign);
    /* m * 2^-9: normalise the 3-bit mantissa (m = 1: 2^-9, 2..3: 2^-8, 4..7: 2^-7). */
    uint32_t p = m >= 4u ? 2u : (m >= 2u ? 1u : 0u);
    uint32_t frac = (m << (23u - p)) & F32_MANT;
    return cplab_f32_from_bits(sign | ((127u - 9u + p) << 23) | frac);
  }
  return cplab_f32_from_bits(sign | ((e + 120u) << 23) | (m << 20));
}

uint16_t cplab_e4m3_to_bf16(uint8_t b) {
  if ((b & 0x7Fu) == 0x7Fu) return (uint16_t)CPLAB_BF16_NAN_BITS;
  /* Exact: an e4m3 value has 3 mantissa bits, so its float has 16 zero low bits. */
  return (uint16_t)(cplab_f32_bits(cplab_e4m3_to_f32(b)) >> 16);
}
