/* cplab/philox.h: deterministic tensor inputs, generated twice.
 *
 * Tensor contents of the testbed are a pure function of
 * (seed, layer, tensor, request, position, element): the simulator (C, CPU)
 * and the executor (CUDA, GPU) each include this one header and produce
 * bit-identical values without exchanging data. Everything is static inline
 * and CPLAB_HD (__host__ __device__ under nvcc).
 *
 * Bit-identity rules kept by every function below: only integer operations,
 * integer -> float conversions of integers below 2^24 in magnitude (exact),
 * and float multiplications by powers of two that neither overflow nor
 * underflow (exact). No libm calls, no divisions, no a*b+c shapes a compiler
 * could contract into an FMA. The results therefore do not depend on libm,
 * -ffp-contract, --use_fast_math, FTZ or the rounding of any instruction.
 *
 * 1. Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as
 *    easy as 1, 2, 3", SC'11), the Random123 definition: 128-bit counter,
 *    64-bit key, ten rounds, the key bumped by the Weyl constants before
 *    rounds 2..10. Pinned by Random123's known-answer vectors in
 *    tests/unit/test_numeric_philox.c.
 *
 * 2. Keying (cplab_rand_u32x4): the six fields map to counter and key as
 *      key[0] = low 32 bits of seed        key[1] = high 32 bits of seed
 *      ctr[0] = block                      ctr[1] = position
 *      ctr[2] = request                    ctr[3] = (layer << 16) | tensor
 *    layer and tensor are taken modulo 2^16 (the map is one-to-one while
 *    layer < 65536 and tensor < 65536). Element e of a tensor row (one row per
 *    (request, position); a multi-dimensional per-token tensor such as the
 *    indexer query, heads x 128, is flattened row-major) takes lane e % 4 of
 *    block e / 4. Tensor ids below CPLAB_TENSOR_AUX name tensors
 *    (cplab_tensor_id); id | CPLAB_TENSOR_AUX is the auxiliary stream of the
 *    same tensor, whose lane e decides element e's outlier and whose block
 *    CPLAB_RAND_ROW_BLOCK decides the row's tie (rows therefore hold fewer
 *    than 4 * (2^32 - 1) elements).
 *
 * 3. Value distributions.
 *    cplab_rand_unit     (u >> 8) * 2^-24: uniform on [0, 1), 24 bits.
 *    cplab_rand_sym      odd multiples of 2^-24 in (-1, 1): uniform,
 *                        symmetric, exactly zero mean.
 *    cplab_rand_irwin3   sum of three 10-bit uniforms (bits 0-9, 10-19,
 *                        20-29 of u), centred: (2a+1 + 2b+1 + 2c+1 - 3072)
 *                        * 2^-10. Odd multiples of 2^-10 in (-3, 3), bell
 *                        shaped (Irwin-Hall n=3), mean exactly 0, variance
 *                        1 - 2^-20: "unit scale", never exactly 0, with
 *                        about 11 significant bits near 1 (so rounding to
 *                        bf16 is exercised).
 *    cplab_rand_realistic irwin3(u), and with probability
 *                        CPLAB_RAND_OUTLIER_THRESHOLD / 2^32 (= 1.0000%,
 *                        decided by the auxiliary word v) an outlier: the
 *                        value times 16, 32 or 64 (((v >> 8) mod 3) picks
 *                        the power). About 72% of 128-value tiles hold an
 *                        outlier (amax up to 192); their power-of-two fp8
 *                        scale pushes the ordinary values into e4m3's lower
 *                        binades and subnormals, while tiles without one
 *                        scale them up to about 300..448: quantisation
 *                        sees its whole range.
 *    Ties (cplab_rand_row_source): for a row at position p > 0 the word pair
 *    (w0, w1) = lanes 0 and 1 of block CPLAB_RAND_ROW_BLOCK of the auxiliary
 *    stream at (request, p) decides whether the row is a copy: if
 *    w0 < threshold it copies the row at position w1 mod p of the same
 *    request (and, if that row is a copy too, its source, and so on).
 *    Identical indexer keys give exactly tied indexer logits for every query.
 *    The indexer key uses CPLAB_RAND_TIE_THRESHOLD (1/32 of the rows).
 */
#ifndef CPLAB_PHILOX_H
#define CPLAB_PHILOX_H

#include <stddef.h>
#include <stdint.h>

#ifndef CPLAB_HD
#if defined(__CUDACC__)
#define CPLAB_HD __host__ __device__
#else
#define CPLAB_HD
#endif
#endif

#define CPLAB_PHILOX_M0 UINT32_C(0xD2511F53)
#define CPLAB_PHILOX_M1 UINT32_C(0xCD9E8D57)
#define CPLAB_PHILOX_W0 UINT32_C(0x9E3779B9) /* golden ratio */
#define CPLAB_PHILOX_W1 UINT32_C(0xBB67AE85) /* sqrt(3) - 1 */

/* Tensor ids (the `tensor` field). Values are stable: they select inputs. */
typedef enum cplab_tensor_id {
  CPLAB_TENSOR_KV_NOPE = 1,   /* latent (NoPE) part of a KV cache row, 512 values */
  CPLAB_TENSOR_KV_ROPE = 2,   /* RoPE part of a KV cache row, 64 values */
  CPLAB_TENSOR_INDEX_K = 3,   /* indexer key, 128 values (with ties) */
  CPLAB_TENSOR_INDEX_Q = 4,   /* indexer query, index_n_heads x 128 values */
  CPLAB_TENSOR_Q_MLA = 5,     /* absorbed MLA query, heads x 576 values */
} cplab_tensor_id;

/* Auxiliary stream of a tensor: tensor | CPLAB_TENSOR_AUX. */
#define CPLAB_TENSOR_AUX 0x8000u
/* Block of the auxiliary stream that holds per-row decisions (ties). */
#define CPLAB_RAND_ROW_BLOCK UINT32_C(0xFFFFFFFF)
/* Outlier probability: threshold / 2^32 = 1.0000% (ceil(2^32 / 100)). */
#define CPLAB_RAND_OUTLIER_THRESHOLD UINT32_C(42949673)
/* Indexer-key tie probability: threshold / 2^32 = 1/32. */
#define CPLAB_RAND_TIE_THRESHOLD UINT32_C(0x08000000)

/* Four 32-bit words, returned by value (C and CUDA alike). */
typedef struct cplab_u32x4 {
  uint32_t v[4];
} cplab_u32x4;

/* Philox4x32 with `rounds` rounds (the Random123 schedule: the key is bumped
 * before every round but the first). */
static inline CPLAB_HD void cplab_philox4x32_rounds(unsigned rounds, const uint32_t ctr[4], const uint32_t key[2],
                                                    uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (unsigned r = 0; r < rounds; r++) {
    if (r > 0) {
      k0 += CPLAB_PHILOX_W0;
      k1 += CPLAB_PHILOX_W1;
    }
    uint64_t p0 = (uint64_t)CPLAB_PHILOX_M0 * c0;
    uint64_t p1 = (uint64_t)CPLAB_PHILOX_M1 * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
    uint32_t n1 = (uint32_t)p1;
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    uint32_t n3 = (uint32_t)p0;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* Philox4x32-10: out = bijection_key(ctr). */
static inline CPLAB_HD void cplab_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  cplab_philox4x32_rounds(10, ctr, key, out);
}

/* The keyed stream: see the header comment for the field map. */
static inline CPLAB_HD cplab_u32x4 cplab_rand_u32x4(uint64_t seed, uint32_t layer, uint32_t tensor, uint32_t request,
                                                    uint32_t position, uint32_t block) {
  uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  uint32_t ctr[4] = {block, position, request, ((layer & 0xFFFFu) << 16) | (tensor & 0xFFFFu)};
  cplab_u32x4 r;
  cplab_philox4x32_10(ctr, key, r.v);
  return r;
}

/* The word of element `element` of a row: lane element % 4 of block element / 4. */
static inline CPLAB_HD uint32_t cplab_rand_u32(uint64_t seed, uint32_t layer, uint32_t tensor, uint32_t request,
                                               uint32_t position, uint32_t element) {
  return cplab_rand_u32x4(seed, layer, tensor, request, position, element / 4u).v[element % 4u];
}

/* Uniform on [0, 1): the top 24 bits of u times 2^-24. */
static inline CPLAB_HD float cplab_rand_unit(uint32_t u) { return (float)(int32_t)(u >> 8) * 0x1p-24f; }

/* Uniform on (-1, 1), symmetric: odd multiples of 2^-24. */
static inline CPLAB_HD float cplab_rand_sym(uint32_t u) {
  return (float)((int32_t)(u >> 8) * 2 - 0xFFFFFF) * 0x1p-24f;
}

/* Irwin-Hall of three 10-bit uniforms, centred: odd multiples of 2^-10 in
 * (-3, 3), mean 0, variance 1 - 2^-20. Bits 30-31 of u are unused. */
static inline CPLAB_HD float cplab_rand_irwin3(uint32_t u) {
  int32_t a = (int32_t)(u & 0x3FFu), b = (int32_t)((u >> 10) & 0x3FFu), c = (int32_t)((u >> 20) & 0x3FFu);
  return (float)(2 * (a + b + c) + 3 - 3072) * 0x1p-10f;
}

/* The outlier multiplier chosen by the auxiliary word v: 1 (no outlier), or
 * 16, 32 or 64 when v < CPLAB_RAND_OUTLIER_THRESHOLD. */
static inline CPLAB_HD float cplab_rand_outlier_factor(uint32_t v) {
  if (v >= CPLAB_RAND_OUTLIER_THRESHOLD) return 1.0f;
  return (float)(int32_t)(16u << ((v >> 8) % 3u));
}

/* A "realistic" activation value from the value word u and the auxiliary word v. */
static inline CPLAB_HD float cplab_rand_realistic(uint32_t u, uint32_t v) {
  return cplab_rand_irwin3(u) * cplab_rand_outlier_factor(v);
}

/* Element `element` of the realistic row (tensor, request, position). */
static inline CPLAB_HD float cplab_rand_realistic_at(uint64_t seed, uint32_t layer, uint32_t tensor,
                                                     uint32_t request, uint32_t position, uint32_t element) {
  uint32_t u = cplab_rand_u32(seed, layer, tensor, request, position, element);
  uint32_t v = cplab_rand_u32(seed, layer, tensor | CPLAB_TENSOR_AUX, request, position, element);
  return cplab_rand_realistic(u, v);
}

/* Elements 0..n-1 of the realistic row; equal to cplab_rand_realistic_at for
 * every element, with one Philox call per four elements and stream. */
static inline CPLAB_HD void cplab_rand_realistic_row(uint64_t seed, uint32_t layer, uint32_t tensor, uint32_t request,
                                                     uint32_t position, float *out, uint32_t n) {
  for (uint32_t blk = 0; blk * 4u < n; blk++) {
    cplab_u32x4 u = cplab_rand_u32x4(seed, layer, tensor, request, position, blk);
    cplab_u32x4 v = cplab_rand_u32x4(seed, layer, tensor | CPLAB_TENSOR_AUX, request, position, blk);
    for (uint32_t l = 0; l < 4u && blk * 4u + l < n; l++) out[blk * 4u + l] = cplab_rand_realistic(u.v[l], v.v[l]);
  }
}

/* The position whose row the row at `position` copies (itself when it is not
 * a copy): copies form chains towards position 0, followed to their end, so
 * the result is never itself a copy. threshold / 2^32 is the copy
 * probability of every row at a position > 0. */
static inline CPLAB_HD uint32_t cplab_rand_row_source(uint64_t seed, uint32_t layer, uint32_t tensor, uint32_t request,
                                                      uint32_t position, uint32_t threshold) {
  while (position > 0) {
    cplab_u32x4 w = cplab_rand_u32x4(seed, layer, tensor | CPLAB_TENSOR_AUX, request, position, CPLAB_RAND_ROW_BLOCK);
    if (w.v[0] >= threshold) break;
    position = w.v[1] % position;
  }
  return position;
}

#endif /* CPLAB_PHILOX_H */
