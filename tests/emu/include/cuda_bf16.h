// tests/emu/include/cuda_bf16.h: bf16 of the CPU emulation, written from the
// rules of CUDA's cuda_bf16.h: float -> bf16 rounds to nearest even on the
// full float (subnormals kept, overflow to +-inf), every NaN becomes 0x7FFF;
// bf16 -> float is exact; bf16x2 products round once. tests/emu/test_emu_self.cu checks it against
// cplab/fp8.h, which tests/numeric proved equal to CUDA's on a GPU.
#ifndef CPLAB_TESTS_EMU_CUDA_BF16_H
#define CPLAB_TESTS_EMU_CUDA_BF16_H
#include "../cuda_emu.h"

struct __nv_bfloat16_raw {
  unsigned short x;
};

struct __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  explicit __nv_bfloat16(float f);
  __nv_bfloat16(const __nv_bfloat16_raw &r) : __x(r.x) {}
  operator __nv_bfloat16_raw() const { return {__x}; }
  explicit operator float() const { return __uint_as_float((unsigned)__x << 16); }
};
typedef __nv_bfloat16 nv_bfloat16;

static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short b) {
  __nv_bfloat16 r;
  r.__x = b;
  return r;
}
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.__x; }

static inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return __ushort_as_bfloat16(0x7FFF); // NaN
  u += 0x7FFFu + ((u >> 16) & 1u); // ties to even; carries into the exponent (to inf) as it should
  return __ushort_as_bfloat16((unsigned short)(u >> 16));
}
static inline __nv_bfloat16 __float2bfloat16(float f) { return __float2bfloat16_rn(f); }
static inline float __bfloat162float(__nv_bfloat16 b) { return __uint_as_float((unsigned)b.__x << 16); }
inline __nv_bfloat16::__nv_bfloat16(float f) : __x(__float2bfloat16_rn(f).__x) {}

// bf16x2 product (mul.rn.bf16x2): the product of two bf16 is exact in float
// (8 + 8 significant bits), so rounding it once gives the correctly rounded
// result, subnormals included.
struct __nv_bfloat162 {
  __nv_bfloat16 x, y;
};
static inline __nv_bfloat162 __hmul2(__nv_bfloat162 a, __nv_bfloat162 b) {
  __nv_bfloat162 r;
  r.x = __float2bfloat16_rn(__bfloat162float(a.x) * __bfloat162float(b.x));
  r.y = __float2bfloat16_rn(__bfloat162float(a.y) * __bfloat162float(b.y));
  return r;
}
#endif
