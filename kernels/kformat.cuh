// kernels/kformat.cuh: the numeric formats of cplab/kvformat.h on the device.
//
// Written from the rules in cplab/kvformat.h and cplab/fp8.h, not from the C
// code (the executor and the simulator must stay two implementations). The
// conversions are CUDA's own (cuda_fp8.h, cuda_bf16.h): tests/numeric proved
// them bit-identical to cplab/fp8.h on every input, so the bytes and bf16
// patterns produced here equal the C generators' as long as the float values
// fed to them are equal; they are, because every float operation below is
// exact (integer -> float of values below 2^24, products by powers of two
// that stay normal) and device code is built without fast-math (no FTZ).
#ifndef CPLAB_KERNELS_KFORMAT_CUH
#define CPLAB_KERNELS_KFORMAT_CUH

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <stdint.h>
#include <string.h>

#include "cplab/kvformat.h"

// float -> e4m3 byte: round to nearest even, saturating (never reached for
// scaled tiles, whose magnitudes are at most 448).
static __device__ __forceinline__ uint32_t kf_e4m3(float x) {
  return (uint32_t)__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
}

// e4m3 byte -> float, exact.
static __device__ __forceinline__ float kf_e4m3_to_f32(uint32_t byte) {
  __nv_fp8_e4m3 e;
  e.__x = (__nv_fp8_storage_t)byte;
  return static_cast<float>(e);
}

// float -> bf16 bit pattern, round to nearest even (NaN -> 0x7FFF).
static __device__ __forceinline__ uint32_t kf_bf16(float x) { return (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(x)); }

// bf16 bit pattern -> float, exact.
static __device__ __forceinline__ float kf_bf16_to_f32(uint32_t b) { return __uint_as_float(b << 16); }

// The tile exponent of kvformat.h from the bits of a (finite, non-negative)
// amax: amax = f·2^E, f in [1, 2): k = E - 8 if f <= 1.75 else E - 7; 0 for
// amax == 0; never below CPLAB_KV_SCALE_EXP_MIN.
static __device__ __forceinline__ int kf_scale_exp(uint32_t amax_bits) {
  if (amax_bits == 0) return 0;
  int e = (int)(amax_bits >> 23) - 127;
  uint32_t mant = amax_bits & 0x007FFFFFu;
  if ((amax_bits >> 23) == 0) { // subnormal: shift the leading one into bit 23
    int shift = __clz(mant) - 8;
    mant = (mant << shift) & 0x007FFFFFu;
    e = -126 - shift;
  }
  int k = e - 8 + (mant > 0x00600000u ? 1 : 0); // 0x600000: the mantissa field of 1.75
  return k < CPLAB_KV_SCALE_EXP_MIN ? CPLAB_KV_SCALE_EXP_MIN : k;
}

// 2^k as a float, built from bits (k in [-126, 127]).
static __device__ __forceinline__ float kf_pow2(int k) { return __uint_as_float((uint32_t)(k + 127) << 23); }

// Largest of the lanes' v (non-negative float bit patterns order like
// unsigned integers), over the whole warp.
static __device__ __forceinline__ uint32_t kf_warp_max_u32(uint32_t v) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
  return v;
}

// Quantise one 128-value tile held by a full warp, 4 consecutive values per
// lane (x[0..3] = tile elements 4·lane .. 4·lane + 3): the lane's 4 e4m3
// bytes packed little-endian, and the tile's exponent k in *k_out.
static __device__ __forceinline__ uint32_t kf_quantize_tile4(const float x[4], int *k_out) {
  uint32_t a = 0;
  for (int i = 0; i < 4; i++) a = max(a, __float_as_uint(x[i]) & 0x7FFFFFFFu);
  int k = kf_scale_exp(kf_warp_max_u32(a));
  float inv = kf_pow2(-k); // -k <= 117: a normal float, the product is exact
  uint32_t word = 0;
  for (int i = 0; i < 4; i++) word |= kf_e4m3(x[i] * inv) << (8 * i);
  *k_out = k;
  return word;
}

// Dequantise 4 e4m3 bytes (little-endian in word) times a power-of-two scale
// into 4 bf16 patterns, packed as two words (element 0 in the low half).
static __device__ __forceinline__ uint2 kf_dequant4_bf16(uint32_t word, float scale) {
  uint32_t b[4];
  for (int i = 0; i < 4; i++) b[i] = kf_bf16(kf_e4m3_to_f32((word >> (8 * i)) & 0xFFu) * scale);
  return make_uint2(b[0] | (b[1] << 16), b[2] | (b[3] << 16));
}

// The same bits in about a third of the instructions, for what the format
// writes (scale = 2^k, no NaN byte); kf_dequant8_bf16 picks the path.
//   e4m3 -> f16 is exact (cvt.rn.f16x2.e4m3x2, two values an instruction),
//   and every e4m3 value is a normal f16 (or zero) whose 10-bit mantissa
//   ends in 7 zero bits (3 for e4m3's subnormals, which f16 normalises). So
//   the f16 pattern shifted right by 3, sign kept, is a normal bf16 whose
//   value is v · 2^(15 - 127) = v · 2^-112, zero staying zero. One bf16x2
//   product by 2^(112 + k) then gives v · 2^k exactly (a product by a power
//   of two that stays normal, as the format guarantees for k >= -117): the
//   bits kf_bf16(v · scale) gives. 2^(112 + k) is a bf16 for k <= 15.
// The scale's bf16x2 multiplier, or 0 where the fast path does not apply
// (a scale other than 2^k with -117 <= k <= 15; a negative one too).
static __device__ __forceinline__ uint32_t kf_fast_mul2(float scale) {
  uint32_t b = __float_as_uint(scale), e = b >> 23;
  if ((b & 0x007FFFFFu) != 0 || e < 127 + CPLAB_KV_SCALE_EXP_MIN || e > 127 + 15) return 0;
  uint32_t m = (e + 112) << 7; // bf16 exponent field of 2^(112 + k): k + 239
  return m | m << 16;
}

// Nonzero when one of the 4 e4m3 bytes of w is a NaN (S.1111.111): adding 1
// to the 7 low bits carries into bit 7 only for 0x7F.
static __device__ __forceinline__ uint32_t kf_e4m3_nan4(uint32_t w) {
  return ((w & 0x7F7F7F7Fu) + 0x01010101u) & 0x80808080u;
}

// Two e4m3 bytes (element 0 low) -> bf16x2 of their values times 2^-112.
static __device__ __forceinline__ uint32_t kf_e4m3x2_bf16x2_scaled(uint32_t pair) {
  __half2_raw h = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)pair, __NV_E4M3);
  uint32_t x = (uint32_t)h.x | (uint32_t)h.y << 16;
  return ((x >> 3) & 0x0FFF0FFFu) | (x & 0x80008000u);
}

static __device__ __forceinline__ uint32_t kf_bf16x2_mul(uint32_t a, uint32_t b) {
  __nv_bfloat162 x, y;
  memcpy(&x, &a, 4);
  memcpy(&y, &b, 4);
  __nv_bfloat162 r = __hmul2(x, y);
  uint32_t out;
  memcpy(&out, &r, 4);
  return out;
}

// The fast path alone: 8 e4m3 bytes without a NaN under the scale whose
// multiplier kf_fast_mul2 gave (nonzero).
static __device__ __forceinline__ uint4 kf_dequant8_bf16_fast(uint2 w, uint32_t mul2) {
  return make_uint4(kf_bf16x2_mul(kf_e4m3x2_bf16x2_scaled(w.x & 0xFFFFu), mul2),
                    kf_bf16x2_mul(kf_e4m3x2_bf16x2_scaled(w.x >> 16), mul2),
                    kf_bf16x2_mul(kf_e4m3x2_bf16x2_scaled(w.y & 0xFFFFu), mul2),
                    kf_bf16x2_mul(kf_e4m3x2_bf16x2_scaled(w.y >> 16), mul2));
}

// 8 e4m3 bytes of one tile (w, little-endian) times its scale as 8 bf16
// patterns (one 16-byte word): kf_dequant4_bf16's bits on either path.
static __device__ __forceinline__ uint4 kf_dequant8_bf16(uint2 w, float scale) {
  uint32_t mul2 = kf_fast_mul2(scale);
  if (mul2 == 0 || (kf_e4m3_nan4(w.x) | kf_e4m3_nan4(w.y)) != 0) {
    uint2 a = kf_dequant4_bf16(w.x, scale), b = kf_dequant4_bf16(w.y, scale);
    return make_uint4(a.x, a.y, b.x, b.y);
  }
  return kf_dequant8_bf16_fast(w, mul2);
}

#endif
