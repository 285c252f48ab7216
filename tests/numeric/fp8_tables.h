/* tests/numeric/fp8_tables.h: the inputs on which cplab's bf16/e4m3
 * conversions are compared with CUDA's (tests/numeric/fp8_vs_cuda.c) and the
 * digests of the resulting tables (pinned in fp8_digests.h and checked by
 * tests/unit/test_numeric_fp8.c where CUDA is absent).
 *
 * Inputs:
 *   - every bf16 pattern (2^16) and every e4m3 byte (256);
 *   - a float sweep, built here without the code under test:
 *       * a stride-2^11 walk over all 2^32 patterns, pattern k << 11 with a
 *         varying in-stride offset (k * 1103) mod 2^11 (2^21 patterns);
 *       * every bf16 rounding boundary: for each bf16 pattern b the floats
 *         (b << 16) | {0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
 *       * every e4m3 rounding boundary: for each pair of adjacent e4m3
 *         magnitudes (0 .. 448, and 448 to the would-be 480) the midpoint
 *         and its neighbours at 1 and 2 float ulps, and each e4m3 value's
 *         neighbours at 1 ulp, both signs;
 *       * specials: signed zeros, infinities, NaNs (quiet, signalling,
 *         both signs), the extremes of the float range.
 *
 * Tables (each serialised little-endian, XXH3-64 with seed 0):
 *   FP8T_BF16_TO_F32     bf16 -> float over all bf16 (4 bytes each)
 *   FP8T_BF16_ROUNDTRIP  float -> bf16 of the above (2 bytes each)
 *   FP8T_BF16_TO_E4M3    float -> e4m3 of the above (1 byte each)
 *   FP8T_SWEEP_INPUTS    the sweep's float patterns (4 bytes each)
 *   FP8T_SWEEP_TO_BF16   float -> bf16 over the sweep (2 bytes each)
 *   FP8T_SWEEP_TO_E4M3   float -> e4m3 over the sweep (1 byte each)
 *   FP8T_E4M3_TO_F32     e4m3 -> float over all bytes (4 bytes each)
 *   FP8T_E4M3_TO_BF16    e4m3 -> bf16 over all bytes (2 bytes each)
 */
#ifndef CPLAB_TESTS_FP8_TABLES_H
#define CPLAB_TESTS_FP8_TABLES_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cplab/fp8.h"

enum {
  FP8T_BF16_TO_F32,
  FP8T_BF16_ROUNDTRIP,
  FP8T_BF16_TO_E4M3,
  FP8T_SWEEP_INPUTS,
  FP8T_SWEEP_TO_BF16,
  FP8T_SWEEP_TO_E4M3,
  FP8T_E4M3_TO_F32,
  FP8T_E4M3_TO_BF16,
  FP8T_NDIGESTS
};

static const char *const fp8t_digest_names[FP8T_NDIGESTS] = {
    "bf16->f32 (all bf16)",  "f32->bf16 (all bf16)", "f32->e4m3 (all bf16)", "sweep inputs",
    "f32->bf16 (sweep)",     "f32->e4m3 (sweep)",    "e4m3->f32 (all e4m3)", "e4m3->bf16 (all e4m3)",
};

/* A set of conversions, bit patterns in and out. */
typedef struct fp8t_convs {
  uint16_t (*bf16_from_f32)(uint32_t f);
  uint32_t (*bf16_to_f32)(uint16_t b);
  uint8_t (*e4m3_from_f32)(uint32_t f);
  uint32_t (*e4m3_to_f32)(uint8_t b);
  uint16_t (*e4m3_to_bf16)(uint8_t b);
} fp8t_convs;

static inline float fp8t_f(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

static inline uint32_t fp8t_u(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

/* Magnitude of e4m3 code c (0..0x7E), and 480 for c = 0x7F (the value the
 * format would have there without NaN): m * 2^-9 or (8 + m) * 2^(e - 10). */
static inline float fp8t_e4m3_magnitude(unsigned c) {
  unsigned e = c >> 3, m = c & 7u;
  if (e == 0) return (float)m * 0x1p-9f;
  return (float)(8u + m) * fp8t_f((uint32_t)(e - 10u + 127u) << 23);
}

#define FP8T_STRIDE_COUNT (UINT32_C(1) << 21)
#define FP8T_BF16_OFFSETS 5
#define FP8T_E4M3_PAIRS 127 /* codes 0..0x7E, each with its successor */
#define FP8T_E4M3_PER_PAIR 7 /* midpoint +-0, 1, 2 ulps; value +-1 ulp */
#define FP8T_SPECIALS 22

static const uint32_t fp8t_specials[FP8T_SPECIALS] = {
    0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u,
    0x7FBFFFFFu, 0x7FFFFFFFu, 0xFFFFFFFFu, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x00000001u, 0x80000001u, 0x007FFFFFu,
    0x00800000u, 0x80800000u, 0x3F800000u, 0xBF800000u, 0x43E00000u, 0xC3E00000u,
};

static inline size_t fp8t_sweep_count(void) {
  return FP8T_STRIDE_COUNT + (size_t)65536 * FP8T_BF16_OFFSETS + 2u * FP8T_E4M3_PAIRS * FP8T_E4M3_PER_PAIR +
         FP8T_SPECIALS;
}

/* The sweep's float patterns; free() the result. NULL when out of memory. */
static inline uint32_t *fp8t_sweep_alloc(size_t *n) {
  static const uint32_t offs[FP8T_BF16_OFFSETS] = {0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu};
  uint32_t *s = (uint32_t *)malloc(fp8t_sweep_count() * sizeof *s);
  size_t k = 0;
  if (!s) return NULL;
  for (uint32_t i = 0; i < FP8T_STRIDE_COUNT; i++) s[k++] = (i << 11) | ((i * 1103u) & 0x7FFu);
  for (uint32_t b = 0; b < 65536u; b++)
    for (int j = 0; j < FP8T_BF16_OFFSETS; j++) s[k++] = (b << 16) | offs[j];
  for (unsigned c = 0; c < FP8T_E4M3_PAIRS; c++) {
    float lo = fp8t_e4m3_magnitude(c), hi = fp8t_e4m3_magnitude(c + 1u);
    uint32_t mid = fp8t_u((lo + hi) * 0.5f), v = fp8t_u(lo); /* both exact */
    uint32_t pts[FP8T_E4M3_PER_PAIR] = {mid, mid - 1u, mid + 1u, mid - 2u, mid + 2u, v + 1u,
                                        v ? v - 1u : 0x80000001u};
    for (int j = 0; j < FP8T_E4M3_PER_PAIR; j++) {
      s[k++] = pts[j];
      s[k++] = pts[j] ^ 0x80000000u;
    }
  }
  for (int j = 0; j < FP8T_SPECIALS; j++) s[k++] = fp8t_specials[j];
  *n = k;
  return s;
}

/* Little-endian serialisation into a chunk buffer hashed as it fills. */
typedef struct fp8t_hasher {
  XXH3_state_t *st;
  unsigned char buf[4096];
  size_t len;
} fp8t_hasher;

static inline int fp8t_hash_begin(fp8t_hasher *h) {
  h->len = 0;
  h->st = XXH3_createState();
  return h->st && XXH3_64bits_reset(h->st) == XXH_OK;
}

static inline void fp8t_hash_put(fp8t_hasher *h, uint32_t v, int bytes) {
  if (h->len + 4 > sizeof h->buf) {
    XXH3_64bits_update(h->st, h->buf, h->len);
    h->len = 0;
  }
  for (int i = 0; i < bytes; i++) h->buf[h->len++] = (unsigned char)(v >> (8 * i));
}

static inline uint64_t fp8t_hash_end(fp8t_hasher *h) {
  XXH3_64bits_update(h->st, h->buf, h->len);
  uint64_t d = XXH3_64bits_digest(h->st);
  XXH3_freeState(h->st);
  return d;
}

/* Digests of the tables of `c` over the sweep s[0..n-1]; 0 on success. */
static inline int fp8t_digests(const fp8t_convs *c, const uint32_t *s, size_t n, uint64_t out[FP8T_NDIGESTS]) {
  fp8t_hasher h[FP8T_NDIGESTS];
  for (int i = 0; i < FP8T_NDIGESTS; i++)
    if (!fp8t_hash_begin(&h[i])) return -1;
  for (uint32_t b = 0; b < 65536u; b++) {
    uint32_t f = c->bf16_to_f32((uint16_t)b);
    fp8t_hash_put(&h[FP8T_BF16_TO_F32], f, 4);
    fp8t_hash_put(&h[FP8T_BF16_ROUNDTRIP], c->bf16_from_f32(f), 2);
    fp8t_hash_put(&h[FP8T_BF16_TO_E4M3], c->e4m3_from_f32(f), 1);
  }
  for (size_t i = 0; i < n; i++) {
    fp8t_hash_put(&h[FP8T_SWEEP_INPUTS], s[i], 4);
    fp8t_hash_put(&h[FP8T_SWEEP_TO_BF16], c->bf16_from_f32(s[i]), 2);
    fp8t_hash_put(&h[FP8T_SWEEP_TO_E4M3], c->e4m3_from_f32(s[i]), 1);
  }
  for (unsigned b = 0; b < 256u; b++) {
    fp8t_hash_put(&h[FP8T_E4M3_TO_F32], c->e4m3_to_f32((uint8_t)b), 4);
    fp8t_hash_put(&h[FP8T_E4M3_TO_BF16], c->e4m3_to_bf16((uint8_t)b), 2);
  }
  for (int i = 0; i < FP8T_NDIGESTS; i++) out[i] = fp8t_hash_end(&h[i]);
  return 0;
}

/* cplab's conversions (cplab/fp8.h) in the same shape. */
static inline uint16_t fp8t_cplab_bf16_from_f32(uint32_t f) { return cplab_bf16_from_f32(cplab_f32_from_bits(f)); }
static inline uint32_t fp8t_cplab_bf16_to_f32(uint16_t b) { return cplab_f32_bits(cplab_bf16_to_f32(b)); }
static inline uint8_t fp8t_cplab_e4m3_from_f32(uint32_t f) { return cplab_e4m3_from_f32(cplab_f32_from_bits(f)); }
static inline uint32_t fp8t_cplab_e4m3_to_f32(uint8_t b) { return cplab_f32_bits(cplab_e4m3_to_f32(b)); }

static const fp8t_convs fp8t_cplab = {fp8t_cplab_bf16_from_f32, fp8t_cplab_bf16_to_f32, fp8t_cplab_e4m3_from_f32,
                                      fp8t_cplab_e4m3_to_f32, cplab_e4m3_to_bf16};

#endif
