// tests/emu/include/cuda_fp8.h: fp8 of the CPU emulation (E4M3 "FN" and
// E5M2), written from the rules of CUDA's cuda_fp8.h:
//   float -> fp8 (__nv_cvt_float_to_fp8): round to nearest, ties to even, at
//   every exponent (subnormals too); values beyond the largest finite give
//   +-max with __NV_SATFINITE, else NaN (E4M3, which has no infinity) or +-inf
//   (E5M2); +-inf likewise; NaN gives 0x7F; +-0 keeps its sign.
//   fp8 -> float is exact (E4M3 0x7F/0xFF: the NaN 0x7FFFFFFF); fp8 -> bf16
//   is exact too (through float; NaN -> 0x7FFF), and so is fp8x2 -> f16x2.
// tests/emu/test_emu_self.cu checks E4M3 against cplab/fp8.h (proved equal
// to CUDA's on a GPU, tests/numeric). E5M2 is not checked against anything.
#ifndef CPLAB_TESTS_EMU_CUDA_FP8_H
#define CPLAB_TESTS_EMU_CUDA_FP8_H
#include "../cuda_emu.h"
#include "cuda_bf16.h"

typedef unsigned char __nv_fp8_storage_t;
typedef unsigned short __nv_fp8x2_storage_t;
typedef enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE } __nv_saturation_t;
typedef enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 } __nv_fp8_interpretation_t;

static inline __nv_fp8_storage_t __nv_cvt_float_to_fp8(float x, __nv_saturation_t sat,
                                                       __nv_fp8_interpretation_t fmt) {
  const int mbits = fmt == __NV_E4M3 ? 3 : 2, bias = fmt == __NV_E4M3 ? 7 : 15;
  const unsigned max_code = fmt == __NV_E4M3 ? 0x7Eu : 0x7Bu; // 448, 57344
  const unsigned over_code = fmt == __NV_E4M3 ? 0x7Fu : 0x7Cu; // NaN, inf
  unsigned u = __float_as_uint(x), sign = (u >> 24) & 0x80u, a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return 0x7F; // NaN
  if (a == 0x7F800000u) return (__nv_fp8_storage_t)(sign | (sat == __NV_SATFINITE ? max_code : over_code));
  if (a < 0x00800000u) return (__nv_fp8_storage_t)sign; // float subnormals are far below half the least fp8
  int e = (int)(a >> 23) - 127, emin = 1 - bias;
  unsigned m = (a & 0x007FFFFFu) | 0x00800000u; // 24 significant bits: value m·2^(e-23)
  int shift = 23 - mbits + (e < emin ? emin - e : 0);
  unsigned code;
  if (shift > 25) {
    code = 0; // below a quarter of the least subnormal
  } else {
    unsigned q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    // Normal: biased exponent (e + bias) above the implicit bit of q; a
    // rounding carry (q = 2^(mbits+1)) steps the exponent. Subnormal: q alone.
    code = e < emin ? q : ((unsigned)(e + bias - 1) << mbits) + q;
  }
  if (code > max_code) {
    if (sat == __NV_SATFINITE) code = max_code;
    else return fmt == __NV_E4M3 ? 0x7F : (__nv_fp8_storage_t)(sign | over_code);
  }
  return (__nv_fp8_storage_t)(sign | code);
}

static inline float cuda_emu_fp8_to_float(__nv_fp8_storage_t b, __nv_fp8_interpretation_t fmt) {
  const int mbits = fmt == __NV_E4M3 ? 3 : 2, ebits = fmt == __NV_E4M3 ? 4 : 5, bias = fmt == __NV_E4M3 ? 7 : 15;
  unsigned sign = b & 0x80u, mag = b & 0x7Fu;
  unsigned ef = mag >> mbits, mf = mag & ((1u << mbits) - 1u);
  if (fmt == __NV_E4M3 && mag == 0x7Fu) return __uint_as_float(0x7FFFFFFFu);
  if (fmt == __NV_E5M2 && ef == (1u << ebits) - 1u)
    return mf ? __uint_as_float(0x7FFFFFFFu) : (sign ? -INFINITY : INFINITY);
  float v = ef == 0 ? std::ldexp((float)mf, 1 - bias - mbits)
                    : std::ldexp((float)((1u << mbits) | mf), (int)ef - bias - mbits);
  return sign ? -v : v;
}

// fp8x2 -> f16x2 (cvt.rn.f16x2.e4m3x2 / e5m2x2): exact, every fp8 value
// being an f16; element 0 (low byte) in x. NaN gives 0x7FFF, +-inf (E5M2)
// the f16 infinities, +-0 keeps its sign.
struct __half2_raw {
  unsigned short x, y;
};
static inline unsigned short cuda_emu_float_to_half_exact(float v) {
  unsigned u = __float_as_uint(v), sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return 0x7FFF;
  if (a == 0x7F800000u) return (unsigned short)(sign | 0x7C00u);
  if (a == 0) return (unsigned short)sign;
  int e = (int)(a >> 23) - 127; // fp8 values are normal floats
  unsigned m = a & 0x007FFFFFu;
  if (e >= -14) return (unsigned short)(sign | (unsigned)(e + 15) << 10 | m >> 13);
  return (unsigned short)(sign | ((m | 0x00800000u) >> (13 + (-14 - e)))); // f16 subnormal (E5M2 only)
}
static inline __half2_raw __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t x, __nv_fp8_interpretation_t fmt) {
  __half2_raw r;
  r.x = cuda_emu_float_to_half_exact(cuda_emu_fp8_to_float((__nv_fp8_storage_t)(x & 0xFFu), fmt));
  r.y = cuda_emu_float_to_half_exact(cuda_emu_fp8_to_float((__nv_fp8_storage_t)(x >> 8), fmt));
  return r;
}

struct __nv_fp8_e4m3 {
  __nv_fp8_storage_t __x;
  __nv_fp8_e4m3() = default;
  explicit __nv_fp8_e4m3(float f) : __x(__nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E4M3)) {}
  explicit operator float() const { return cuda_emu_fp8_to_float(__x, __NV_E4M3); }
  explicit operator __nv_bfloat16() const { return __float2bfloat16_rn(cuda_emu_fp8_to_float(__x, __NV_E4M3)); }
};
struct __nv_fp8_e5m2 {
  __nv_fp8_storage_t __x;
  __nv_fp8_e5m2() = default;
  explicit __nv_fp8_e5m2(float f) : __x(__nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E5M2)) {}
  explicit operator float() const { return cuda_emu_fp8_to_float(__x, __NV_E5M2); }
  explicit operator __nv_bfloat16() const { return __float2bfloat16_rn(cuda_emu_fp8_to_float(__x, __NV_E5M2)); }
};
#endif
