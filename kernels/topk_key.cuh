// The 64-bit top-k key (kernels/topk.cu's "Keys"): the high word the
// logit's bits made order-preserving as an unsigned integer, the low word
// 0xFFFFFFFF - index, so that "larger key" is "higher logit, then lower
// index". Shared by the top-k (topk.cu) and the DCP merge (topk_merge.cu),
// whose outputs must order keys the same way.
#ifndef CPLAB_TOPK_KEY_CUH
#define CPLAB_TOPK_KEY_CUH

#include <cuda_runtime.h>

#include <stdint.h>

// Order-preserving map of float bits to unsigned (-0 is first made +0, so
// that equal logits compare equal and fall to the index rule). NaNs order by
// their bits: +NaN above +inf, -NaN below -inf.
static __device__ __forceinline__ uint32_t topk_ord_bits(uint32_t b) {
  b = b == 0x80000000u ? 0u : b;
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

static __device__ __forceinline__ uint32_t topk_ord(float f) { return topk_ord_bits(__float_as_uint(f)); }

// The float of an order word (topk_ord_bits' inverse; -0 comes back +0).
static __device__ __forceinline__ float topk_unord(uint32_t o) {
  return __uint_as_float((o & 0x80000000u) ? (o & 0x7FFFFFFFu) : ~o);
}

// The key of a logit given by its bits b, at request-relative index rel.
static __device__ __forceinline__ uint64_t topk_key_bits(uint32_t b, uint32_t rel) {
  return ((uint64_t)topk_ord_bits(b) << 32) | (uint64_t)(0xFFFFFFFFu - rel);
}

static __device__ __forceinline__ uint64_t topk_key(float f, uint32_t rel) { return topk_key_bits(__float_as_uint(f), rel); }

#endif
