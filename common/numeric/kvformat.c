/* fp8_ds_mla KV entries and indexer-key entries: see cplab/kvformat.h. */
#include "cplab/kvformat.h"

#include <string.h>

#include "cplab/fp8.h"
#include "cplab/philox.h"

#define F32_ABS 0x7FFFFFFFu
#define F32_INF 0x7F800000u
#define F32_MANT 0x007FFFFFu
#define F32_MANT_1_75 0x00600000u /* mantissa field of 1.75 */
#define F32_EXP_MAX 127

static void put_le32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int cplab_kvformat_scale_exp(float amax) {
  uint32_t a = cplab_f32_bits(amax) & F32_ABS;
  if (a >= F32_INF) return CPLAB_KV_SCALE_EXP_INVALID;
  if (a == 0) return 0;
  /* amax = f * 2^e with f = 1.mant: normalise subnormals first. */
  int e = (int)(a >> 23) - 127;
  uint32_t mant = a & F32_MANT;
  if ((a >> 23) == 0) {
    e = -126;
    while (!(mant & 0x00800000u)) {
      mant <<= 1;
      e--;
    }
    mant &= F32_MANT;
  }
  int k = e - 8 + (mant > F32_MANT_1_75 ? 1 : 0);
  return k < CPLAB_KV_SCALE_EXP_MIN ? CPLAB_KV_SCALE_EXP_MIN : k;
}

float cplab_kvformat_pow2(int k) { return cplab_f32_from_bits((uint32_t)(k + 127) << 23); }

/* Largest magnitude of x[0..n-1] as bits (non-negative floats order like
 * their bits); F32_INF or more when some value is not finite, with *bad its
 * index. */
static uint32_t amax_bits(const float *x, int n, int *bad) {
  uint32_t m = 0;
  *bad = -1;
  for (int i = 0; i < n; i++) {
    uint32_t a = cplab_f32_bits(x[i]) & F32_ABS;
    if (a >= F32_INF && *bad < 0) *bad = i;
    if (a > m) m = a;
  }
  return m;
}

/* The tile rule on finite input: bytes and scale. */
static float quantize_finite(const float *x, int n, uint8_t *bytes) {
  int bad;
  int k = cplab_kvformat_scale_exp(cplab_f32_from_bits(amax_bits(x, n, &bad)));
  float inv = cplab_kvformat_pow2(-k); /* -k <= 117: a normal float */
  for (int i = 0; i < n; i++) bytes[i] = cplab_e4m3_from_f32(x[i] * inv);
  return cplab_kvformat_pow2(k);
}

static int check_finite(const float *x, int n, const char *what, cplab_diag *d) {
  int bad;
  amax_bits(x, n, &bad);
  if (bad >= 0)
    CPLAB_FAIL(d, CPLAB_ERANGE, "%s[%d]: must be finite to be quantised, got %s", what, bad,
               (cplab_f32_bits(x[bad]) & F32_ABS) == F32_INF ? "an infinity" : "NaN");
  return 0;
}

int cplab_kvformat_quantize_tile(const float *x, int n, uint8_t *bytes, float *scale, cplab_diag *d) {
  if (n < 0 || n > CPLAB_KV_TILE)
    CPLAB_FAIL(d, CPLAB_EINVAL, "tile length: must be in [0, %d], got %d", CPLAB_KV_TILE, n);
  int rc = check_finite(x, n, "tile", d);
  if (rc) return rc;
  *scale = quantize_finite(x, n, bytes);
  return 0;
}

static void mla_quantize_finite(const float *nope, const float *rope, uint8_t *entry) {
  for (int t = 0; t < CPLAB_MLA_TILES; t++) {
    float s = quantize_finite(nope + t * CPLAB_KV_TILE, CPLAB_KV_TILE,
                              entry + CPLAB_MLA_NOPE_OFFSET + t * CPLAB_KV_TILE);
    put_le32(entry + CPLAB_MLA_SCALE_OFFSET + 4 * t, cplab_f32_bits(s));
  }
  for (int j = 0; j < CPLAB_MLA_ROPE_DIM; j++) {
    uint16_t b = cplab_bf16_from_f32(rope[j]);
    entry[CPLAB_MLA_ROPE_OFFSET + 2 * j] = (uint8_t)b;
    entry[CPLAB_MLA_ROPE_OFFSET + 2 * j + 1] = (uint8_t)(b >> 8);
  }
}

int cplab_kvformat_mla_quantize(const float nope[CPLAB_MLA_NOPE_DIM], const float rope[CPLAB_MLA_ROPE_DIM],
                                uint8_t entry[CPLAB_MLA_ENTRY_BYTES], cplab_diag *d) {
  int rc = check_finite(nope, CPLAB_MLA_NOPE_DIM, "nope", d);
  if (!rc) rc = check_finite(rope, CPLAB_MLA_ROPE_DIM, "rope", d);
  if (rc) return rc;
  mla_quantize_finite(nope, rope, entry);
  return 0;
}

float cplab_kvformat_mla_scale(const uint8_t entry[CPLAB_MLA_ENTRY_BYTES], int t) {
  return cplab_f32_from_bits(get_le32(entry + CPLAB_MLA_SCALE_OFFSET + 4 * t));
}

void cplab_kvformat_mla_dequantize(const uint8_t entry[CPLAB_MLA_ENTRY_BYTES], uint16_t row[CPLAB_MLA_ROW_DIM]) {
  for (int t = 0; t < CPLAB_MLA_TILES; t++) {
    float s = cplab_kvformat_mla_scale(entry, t);
    for (int i = t * CPLAB_KV_TILE; i < (t + 1) * CPLAB_KV_TILE; i++)
      row[i] = cplab_bf16_from_f32(cplab_e4m3_to_f32(entry[CPLAB_MLA_NOPE_OFFSET + i]) * s);
  }
  for (int j = 0; j < CPLAB_MLA_ROPE_DIM; j++)
    row[CPLAB_MLA_NOPE_DIM + j] =
        (uint16_t)(entry[CPLAB_MLA_ROPE_OFFSET + 2 * j] | entry[CPLAB_MLA_ROPE_OFFSET + 2 * j + 1] << 8);
}

void cplab_kvformat_mla_values(uint64_t seed, uint32_t layer, uint32_t request, uint32_t position,
                               float nope[CPLAB_MLA_NOPE_DIM], float rope[CPLAB_MLA_ROPE_DIM]) {
  cplab_rand_realistic_row(seed, layer, CPLAB_TENSOR_KV_NOPE, request, position, nope, CPLAB_MLA_NOPE_DIM);
  cplab_rand_realistic_row(seed, layer, CPLAB_TENSOR_KV_ROPE, request, position, rope, CPLAB_MLA_ROPE_DIM);
}

void cplab_kvformat_mla_generate(uint64_t seed, uint32_t layer, uint32_t request, uint32_t position,
                                 uint8_t entry[CPLAB_MLA_ENTRY_BYTES]) {
  float nope[CPLAB_MLA_NOPE_DIM], rope[CPLAB_MLA_ROPE_DIM];
  cplab_kvformat_mla_values(seed, layer, request, position, nope, rope);
  mla_quantize_finite(nope, rope, entry); /* generated values are finite */
}

void cplab_kvformat_mla_query(uint64_t seed, uint32_t layer, uint32_t request, uint32_t position, uint32_t head,
                              uint16_t q[CPLAB_MLA_ROW_DIM]) {
  for (uint32_t c = 0; c < CPLAB_MLA_ROW_DIM; c++)
    q[c] = cplab_bf16_from_f32(
        cplab_rand_realistic_at(seed, layer, CPLAB_TENSOR_Q_MLA, request, position, head * CPLAB_MLA_ROW_DIM + c));
}

static void idx_quantize_finite(const float *k, uint8_t *entry) {
  float s = quantize_finite(k, CPLAB_IDX_DIM, entry);
  put_le32(entry + CPLAB_IDX_SCALE_OFFSET, cplab_f32_bits(s));
}

int cplab_kvformat_idx_quantize(const float k[CPLAB_IDX_DIM], uint8_t entry[CPLAB_IDX_ENTRY_BYTES], cplab_diag *d) {
  int rc = check_finite(k, CPLAB_IDX_DIM, "k", d);
  if (rc) return rc;
  idx_quantize_finite(k, entry);
  return 0;
}

float cplab_kvformat_idx_scale(const uint8_t entry[CPLAB_IDX_ENTRY_BYTES]) {
  return cplab_f32_from_bits(get_le32(entry + CPLAB_IDX_SCALE_OFFSET));
}

void cplab_kvformat_idx_dequantize(const uint8_t entry[CPLAB_IDX_ENTRY_BYTES], float k[CPLAB_IDX_DIM]) {
  float s = cplab_kvformat_idx_scale(entry);
  for (int i = 0; i < CPLAB_IDX_DIM; i++) k[i] = cplab_e4m3_to_f32(entry[i]) * s;
}

uint32_t cplab_kvformat_idx_source(uint64_t seed, uint32_t layer, uint32_t request, uint32_t position) {
  return cplab_rand_row_source(seed, layer, CPLAB_TENSOR_INDEX_K, request, position, CPLAB_RAND_TIE_THRESHOLD);
}

void cplab_kvformat_idx_values(uint64_t seed, uint32_t layer, uint32_t request, uint32_t position,
                               float k[CPLAB_IDX_DIM]) {
  uint32_t src = cplab_kvformat_idx_source(seed, layer, request, position);
  cplab_rand_realistic_row(seed, layer, CPLAB_TENSOR_INDEX_K, request, src, k, CPLAB_IDX_DIM);
}

void cplab_kvformat_idx_generate(uint64_t seed, uint32_t layer, uint32_t request, uint32_t position,
                                 uint8_t entry[CPLAB_IDX_ENTRY_BYTES]) {
  float k[CPLAB_IDX_DIM];
  cplab_kvformat_idx_values(seed, layer, request, position, k);
  idx_quantize_finite(k, entry);
}
