/* The fp8_ds_mla KV entry and the indexer-key entry (cplab/kvformat.h): byte
 * layouts, the power-of-two scale rule (against an independent search in
 * double arithmetic, at its boundaries and edges), quantisation as the nearest
 * grid value (brute force), exact dequantisation, errors, and the generators
 * (determinism, keying, ties, range coverage, pinned digests). */
#include <float.h>
#include <math.h>
#include <xxhash.h>

#include "cplab/fp8.h"
#include "cplab/kvformat.h"
#include "cplab/philox.h"
#include "testutil.h"

static float f_of(uint32_t u) { return cplab_f32_from_bits(u); }
static uint32_t u_of(float x) { return cplab_f32_bits(x); }
static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The rule from its definition: the smallest k >= -117 with amax <= 448 * 2^k
 * (0 for amax = 0), searched in double, where 448 * 2^k is exact. */
static int scale_exp_ref(float amax) {
  double a = fabs((double)amax);
  if (a == 0.0) return 0;
  int e;
  frexp(a, &e); /* a in [2^(e-1), 2^e): start the search a little below the answer */
  int k = e - 11 < CPLAB_KV_SCALE_EXP_MIN ? CPLAB_KV_SCALE_EXP_MIN : e - 11;
  assert_true(k == CPLAB_KV_SCALE_EXP_MIN || a > ldexp(448.0, k));
  while (a > ldexp(448.0, k)) k++;
  return k;
}

static void test_scale_rule_boundaries(void **state) {
  (void)state;
  assert_int_equal(CPLAB_MLA_ENTRY_BYTES, 512 + 4 * 4 + 64 * 2);
  assert_int_equal(CPLAB_IDX_ENTRY_BYTES, 128 + 4);
  for (int j = -117; j <= 119; j++) {
    float at = (float)ldexp(448.0, j); /* amax exactly a power of two times 448 (finite up to 2^119) */
    assert_int_equal(cplab_kvformat_scale_exp(at), j);
    assert_int_equal(cplab_kvformat_scale_exp(-at), j); /* sign ignored */
    assert_int_equal(cplab_kvformat_scale_exp(f_of(u_of(at) + 1)), j + 1); /* one ulp above */
    assert_int_equal(cplab_kvformat_scale_exp(f_of(u_of(at) - 1)), j);     /* one ulp below */
    float pow2 = (float)ldexp(1.0, j + 8);                                    /* 2^(j+8) = 448 * 2^j / 1.75 */
    assert_int_equal(cplab_kvformat_scale_exp(pow2), j);
    assert_true(cplab_kvformat_pow2(j) == (float)ldexp(1.0, j));
    /* amax / scale lands in (224, 448]: the scale is the smallest that fits. */
    double q = (double)at / ldexp(1.0, cplab_kvformat_scale_exp(at));
    assert_true(q > 224.0 && q <= 448.0);
  }
  /* Edges. */
  assert_int_equal(cplab_kvformat_scale_exp(0.0f), 0);
  assert_int_equal(cplab_kvformat_scale_exp(-0.0f), 0);
  assert_true(cplab_kvformat_pow2(cplab_kvformat_scale_exp(0.0f)) == 1.0f);
  assert_int_equal(cplab_kvformat_scale_exp(1.0f), -8);   /* 1 / 2^-8 = 256 <= 448 < 512 */
  assert_int_equal(cplab_kvformat_scale_exp(448.0f), 0);
  assert_int_equal(cplab_kvformat_scale_exp(449.0f), 1);
  assert_int_equal(cplab_kvformat_scale_exp(FLT_MAX), 120);
  assert_int_equal(cplab_kvformat_scale_exp(f_of(1)), CPLAB_KV_SCALE_EXP_MIN);          /* 2^-149 */
  assert_int_equal(cplab_kvformat_scale_exp(FLT_MIN), CPLAB_KV_SCALE_EXP_MIN);          /* 2^-126 */
  assert_int_equal(cplab_kvformat_scale_exp((float)ldexp(448.0, -118)), CPLAB_KV_SCALE_EXP_MIN);
  assert_int_equal(cplab_kvformat_scale_exp(f_of(u_of((float)ldexp(448.0, -117)) + 1)), -116);
  assert_int_equal(cplab_kvformat_scale_exp(INFINITY), CPLAB_KV_SCALE_EXP_INVALID);
  assert_int_equal(cplab_kvformat_scale_exp(-INFINITY), CPLAB_KV_SCALE_EXP_INVALID);
  assert_int_equal(cplab_kvformat_scale_exp(NAN), CPLAB_KV_SCALE_EXP_INVALID);
}

/* Every positive finite float (in a stride walk, subnormals included) against
 * the reference search, plus random patterns. */
static void test_scale_rule_property(void **state) {
  (void)state;
  for (uint32_t u = 1; u < 0x7F800000u; u += 0x1001u) {
    int k = cplab_kvformat_scale_exp(f_of(u));
    if (k != scale_exp_ref(f_of(u))) print_error("amax 0x%08x: k %d, expected %d\n", u, k, scale_exp_ref(f_of(u)));
    assert_int_equal(k, scale_exp_ref(f_of(u)));
  }
  prop_run pr;
  prop_begin(&pr);
  for (long trial = 0; trial < 20000; trial++) {
    if (!prop_trial(&pr, trial)) continue;
    uint32_t u = (uint32_t)gsl_rng_get(pr.rng) % 0x7F800000u;
    prop_check(&pr, trial, cplab_kvformat_scale_exp(f_of(u)) == scale_exp_ref(f_of(u)), "amax 0x%08x", u);
  }
  prop_end(&pr);
}

/* Hand-built entry: every byte where the layout says. */
static void test_mla_layout(void **state) {
  (void)state;
  float nope[CPLAB_MLA_NOPE_DIM], rope[CPLAB_MLA_ROPE_DIM];
  /* Tile t: amax 448 * 2^t at element 128t + 5, 1.0 * 2^t elsewhere, -0 at 128t. */
  for (int t = 0; t < 4; t++)
    for (int i = 0; i < 128; i++) nope[128 * t + i] = (float)ldexp(i == 5 ? 448.0 : i == 0 ? -0.0 : 1.0, t);
  nope[128 * 2 + 7] = -3.0f * 4.0f; /* -3 in tile 2's units */
  for (int j = 0; j < 64; j++) rope[j] = (float)(j - 32) * 0.5f;
  rope[1] = 1.0f + 0x1p-8f; /* rounds to bf16 1.0 (tie to even) */
  uint8_t e[CPLAB_MLA_ENTRY_BYTES];
  memset(e, 0xAA, sizeof e);
  cplab_diag d = {0};
  assert_int_equal(cplab_kvformat_mla_quantize(nope, rope, e, &d), 0);
  for (int t = 0; t < 4; t++) {
    assert_int_equal(e[128 * t + 0], 0x80); /* -0 */
    assert_int_equal(e[128 * t + 5], 0x7E); /* 448 */
    assert_int_equal(e[128 * t + 1], 0x38); /* 1.0 */
    /* Scale 2^t, little-endian float: 1.0 = 00 00 80 3F, 2.0 = 00 00 00 40, ... */
    uint32_t bits = le32(e + 512 + 4 * t);
    assert_int_equal(bits, (uint32_t)(127 + t) << 23);
    assert_int_equal(e[512 + 4 * t + 3], (127 + t) >> 1);
    assert_true(cplab_kvformat_mla_scale(e, t) == (float)ldexp(1.0, t));
  }
  assert_int_equal(e[128 * 2 + 7], 0xC4); /* -3 = -1.5 * 2^1: sign, exponent 8, mantissa 4 */
  for (int j = 0; j < 64; j++) {
    uint16_t want = j == 1 ? 0x3F80 : cplab_bf16_from_f32(rope[j]);
    assert_int_equal(e[528 + 2 * j] | e[528 + 2 * j + 1] << 8, want);
  }
  assert_int_equal(e[528 + 2 * 34], 0x80); /* rope[34] = 1.0 = 0x3F80 */
  assert_int_equal(e[528 + 2 * 34 + 1], 0x3F);
  /* The workspace row. */
  uint16_t row[CPLAB_MLA_ROW_DIM];
  cplab_kvformat_mla_dequantize(e, row);
  for (int i = 0; i < 512; i++) assert_int_equal(row[i], cplab_bf16_from_f32(nope[i])); /* all exact here */
  for (int j = 0; j < 64; j++) assert_int_equal(row[512 + j], e[528 + 2 * j] | e[528 + 2 * j + 1] << 8);
}

static void test_idx_layout(void **state) {
  (void)state;
  float k[CPLAB_IDX_DIM];
  /* Integers -8..7 times 2^-3 (all exact in e4m3 after scaling): amax 1 -> scale 2^-8. */
  for (int i = 0; i < 128; i++) k[i] = (float)(i % 16 - 8) * 0x1p-3f;
  uint8_t e[CPLAB_IDX_ENTRY_BYTES];
  cplab_diag d = {0};
  assert_int_equal(cplab_kvformat_idx_quantize(k, e, &d), 0);
  assert_int_equal(le32(e + 128), 0x3B800000u); /* 2^-8 */
  assert_true(cplab_kvformat_idx_scale(e) == 0x1p-8f);
  assert_int_equal(e[0], 0xF8);  /* -1 / 2^-8 = -256 = -1.0 * 2^8: sign, exponent 15, mantissa 0 */
  assert_int_equal(e[8], 0x00);  /* 0 */
  assert_int_equal(e[9], 0x60);  /* 2^-3 / 2^-8 = 32 = 2^5: exponent 12 */
  assert_int_equal(e[15], 0x76); /* 7 * 2^-3 / 2^-8 = 224 = 1.75 * 2^7: exponent 14, mantissa 6 */
  float back[CPLAB_IDX_DIM];
  cplab_kvformat_idx_dequantize(e, back);
  for (int i = 0; i < 128; i++) assert_true(back[i] == k[i]); /* exact */
}

/* Quantisation = the nearest grid value, from brute force in double; the
 * dequantised row is that value exactly. */
static void check_nearest(const float *x, const uint8_t *bytes, float scale) {
  for (int i = 0; i < CPLAB_KV_TILE; i++) {
    double xs = (double)x[i] / (double)scale, got = (double)cplab_e4m3_to_f32(bytes[i]);
    assert_true(fabs(xs) <= 448.0);
    double best = INFINITY;
    for (unsigned c = 0; c < 0x7F; c++) {
      double g = (double)cplab_e4m3_to_f32((uint8_t)c);
      double err = fmin(fabs(xs - g), fabs(xs + g));
      if (err < best) best = err;
    }
    assert_true(fabs(xs - got) == best);
    if (xs != 0.0 && got != 0.0) assert_true((xs < 0) == (got < 0));
  }
}

static void test_quantize_nearest_and_dequantize_exact(void **state) {
  (void)state;
  for (uint32_t p = 0; p < 48; p++) {
    float nope[512], rope[64];
    cplab_kvformat_mla_values(5, 1, 2, p, nope, rope);
    uint8_t e[CPLAB_MLA_ENTRY_BYTES];
    cplab_diag d = {0};
    assert_int_equal(cplab_kvformat_mla_quantize(nope, rope, e, &d), 0);
    uint16_t row[CPLAB_MLA_ROW_DIM];
    cplab_kvformat_mla_dequantize(e, row);
    for (int t = 0; t < 4; t++) {
      float s = cplab_kvformat_mla_scale(e, t);
      float amax = 0;
      for (int i = 0; i < 128; i++) amax = fmaxf(amax, fabsf(nope[128 * t + i]));
      assert_true(s == cplab_kvformat_pow2(scale_exp_ref(amax)));
      check_nearest(nope + 128 * t, e + 128 * t, s);
      for (int i = 128 * t; i < 128 * (t + 1); i++) /* bf16(e4m3 * scale) is the exact product */
        assert_true((double)cplab_bf16_to_f32(row[i]) == (double)cplab_e4m3_to_f32(e[i]) * (double)s);
    }
    for (int j = 0; j < 64; j++) assert_int_equal(row[512 + j], cplab_bf16_from_f32(rope[j]));
    /* The same through the tile function. */
    uint8_t b[128];
    float s1;
    assert_int_equal(cplab_kvformat_quantize_tile(nope + 256, 128, b, &s1, &d), 0);
    assert_memory_equal(b, e + 256, 128);
    assert_true(s1 == cplab_kvformat_mla_scale(e, 2));
  }
}

/* amax = 0, tiny and huge tiles. */
static void test_scale_edges_in_entries(void **state) {
  (void)state;
  float x[128];
  uint8_t b[128];
  float s;
  cplab_diag d = {0};
  /* All zeros (with signs): scale 1.0, bytes 0x00 / 0x80. */
  for (int i = 0; i < 128; i++) x[i] = i % 2 ? -0.0f : 0.0f;
  assert_int_equal(cplab_kvformat_quantize_tile(x, 128, b, &s, &d), 0);
  assert_true(s == 1.0f);
  for (int i = 0; i < 128; i++) assert_int_equal(b[i], i % 2 ? 0x80 : 0x00);
  /* Tiny: 2^-120 and subnormal inputs; the scale stops at 2^-117. */
  for (int i = 0; i < 128; i++) x[i] = i == 0 ? 0x1p-120f : i == 1 ? f_of(1) : -0x1p-121f;
  assert_int_equal(cplab_kvformat_quantize_tile(x, 128, b, &s, &d), 0);
  assert_true(s == 0x1p-117f);
  assert_int_equal(b[0], 0x20); /* 2^-3: exponent 4 */
  assert_int_equal(b[1], 0x00); /* 2^-149 / 2^-117 = 2^-32: zero */
  assert_int_equal(b[2], 0x98); /* -2^-4: sign, exponent 3 */
  /* Huge: amax = FLT_MAX gives 2^120; values >= 248 * 2^120 dequantise to inf. */
  float nope[512], rope[64];
  for (int i = 0; i < 512; i++) nope[i] = 0.0f;
  for (int j = 0; j < 64; j++) rope[j] = 0.0f;
  nope[0] = FLT_MAX;
  nope[1] = 1.5f * 0x1p127f; /* 192 * 2^120 */
  nope[2] = -0x1p100f;
  nope[128] = 448.0f * 0x1p119f; /* tile 1: exactly 448 * 2^119 */
  rope[0] = FLT_MAX;            /* rounds to bf16 inf */
  uint8_t e[CPLAB_MLA_ENTRY_BYTES];
  assert_int_equal(cplab_kvformat_mla_quantize(nope, rope, e, &d), 0);
  assert_true(cplab_kvformat_mla_scale(e, 0) == 0x1p120f);
  assert_true(cplab_kvformat_mla_scale(e, 1) == 0x1p119f);
  assert_true(cplab_kvformat_mla_scale(e, 2) == 1.0f);
  assert_int_equal(e[0], 0x78); /* FLT_MAX / 2^120 = 255.99... -> 256 = 2^8 */
  assert_int_equal(e[1], 0x74); /* 192 = 1.5 * 2^7 */
  assert_int_equal(e[2], 0x80); /* -2^-20 is below 2^-10: -0 */
  assert_int_equal(e[128], 0x7E);
  uint16_t row[CPLAB_MLA_ROW_DIM];
  cplab_kvformat_mla_dequantize(e, row);
  assert_int_equal(row[0], 0x7F80);       /* 256 * 2^120 = 2^128: inf, as documented */
  assert_int_equal(row[1], 0x7F40);       /* 1.5 * 2^127 */
  assert_int_equal(row[2], 0x8000);       /* -0 */
  assert_int_equal(row[128], 0x7F60);     /* 448 * 2^119 = 1.75 * 2^127 */
  assert_int_equal(row[512], 0x7F80);     /* rope FLT_MAX -> bf16 inf */
}

static void test_errors(void **state) {
  (void)state;
  float nope[512] = {0}, rope[64] = {0}, k[128] = {0};
  uint8_t e[CPLAB_MLA_ENTRY_BYTES], ie[CPLAB_IDX_ENTRY_BYTES], b[128];
  float s;
  cplab_diag d = {0};
  nope[37] = NAN;
  assert_int_equal(cplab_kvformat_mla_quantize(nope, rope, e, &d), CPLAB_ERANGE);
  assert_string_equal(d.msg, "nope[37]: must be finite to be quantised, got NaN");
  cplab_diag_clear(&d);
  nope[37] = 0;
  rope[63] = -INFINITY;
  assert_int_equal(cplab_kvformat_mla_quantize(nope, rope, e, &d), CPLAB_ERANGE);
  assert_string_equal(d.msg, "rope[63]: must be finite to be quantised, got an infinity");
  cplab_diag_clear(&d);
  k[0] = INFINITY;
  assert_int_equal(cplab_kvformat_idx_quantize(k, ie, &d), CPLAB_ERANGE);
  assert_string_equal(d.msg, "k[0]: must be finite to be quantised, got an infinity");
  cplab_diag_clear(&d);
  assert_int_equal(cplab_kvformat_quantize_tile(k, 129, b, &s, &d), CPLAB_EINVAL);
  assert_string_equal(d.msg, "tile length: must be in [0, 128], got 129");
  assert_int_equal(cplab_kvformat_quantize_tile(k, 1, b, &s, NULL), CPLAB_ERANGE); /* diag optional */
}

/* Generators: pure functions of their keys, equal to quantising the values,
 * the values equal to the documented streams. */
static void test_generators(void **state) {
  (void)state;
  uint8_t a[CPLAB_MLA_ENTRY_BYTES], b[CPLAB_MLA_ENTRY_BYTES], q[CPLAB_MLA_ENTRY_BYTES];
  float nope[512], rope[64];
  cplab_diag d = {0};
  cplab_kvformat_mla_generate(9, 2, 3, 40, a);
  cplab_kvformat_mla_generate(9, 2, 3, 40, b);
  assert_memory_equal(a, b, sizeof a);
  cplab_kvformat_mla_values(9, 2, 3, 40, nope, rope);
  assert_int_equal(cplab_kvformat_mla_quantize(nope, rope, q, &d), 0);
  assert_memory_equal(a, q, sizeof a);
  for (uint32_t i = 0; i < 512; i++)
    assert_int_equal(u_of(nope[i]), u_of(cplab_rand_realistic_at(9, 2, CPLAB_TENSOR_KV_NOPE, 3, 40, i)));
  for (uint32_t j = 0; j < 64; j++)
    assert_int_equal(u_of(rope[j]), u_of(cplab_rand_realistic_at(9, 2, CPLAB_TENSOR_KV_ROPE, 3, 40, j)));
  /* Each key field changes the entry. */
  cplab_kvformat_mla_generate(10, 2, 3, 40, b);
  assert_memory_not_equal(a, b, sizeof a);
  cplab_kvformat_mla_generate(9, 3, 3, 40, b);
  assert_memory_not_equal(a, b, sizeof a);
  cplab_kvformat_mla_generate(9, 2, 4, 40, b);
  assert_memory_not_equal(a, b, sizeof a);
  cplab_kvformat_mla_generate(9, 2, 3, 41, b);
  assert_memory_not_equal(a, b, sizeof a);

  uint8_t ia[CPLAB_IDX_ENTRY_BYTES], iq[CPLAB_IDX_ENTRY_BYTES];
  float k[128];
  cplab_kvformat_idx_generate(9, 2, 3, 0, ia);
  cplab_kvformat_idx_values(9, 2, 3, 0, k);
  assert_int_equal(cplab_kvformat_idx_quantize(k, iq, &d), 0);
  assert_memory_equal(ia, iq, sizeof ia);
  for (uint32_t i = 0; i < 128; i++)
    assert_int_equal(u_of(k[i]), u_of(cplab_rand_realistic_at(9, 2, CPLAB_TENSOR_INDEX_K, 3, 0, i)));
}

/* Indexer ties: copies are byte-identical to their source entry, at the
 * documented rate; other rows differ from each other. KV entries have no ties. */
static void test_idx_ties(void **state) {
  (void)state;
  enum { P = 4096 };
  static uint8_t ent[P][CPLAB_IDX_ENTRY_BYTES];
  long copies = 0;
  for (uint32_t p = 0; p < P; p++) {
    cplab_kvformat_idx_generate(21, 4, 8, p, ent[p]);
    uint32_t src = cplab_kvformat_idx_source(21, 4, 8, p);
    assert_int_equal(src, cplab_rand_row_source(21, 4, CPLAB_TENSOR_INDEX_K, 8, p, CPLAB_RAND_TIE_THRESHOLD));
    if (src != p) {
      copies++;
      assert_true(src < p);
      assert_memory_equal(ent[p], ent[src], CPLAB_IDX_ENTRY_BYTES);
    }
  }
  assert_true(copies > P / 50 && copies < P / 20); /* 1/32 expected: 128 */
  /* Rows that are not copies are all distinct (checked through digests). */
  static uint64_t h[P];
  long uniq = 0;
  for (uint32_t p = 0; p < P; p++)
    if (cplab_kvformat_idx_source(21, 4, 8, p) == p) h[uniq++] = XXH3_64bits(ent[p], CPLAB_IDX_ENTRY_BYTES);
  for (long i = 0; i < uniq; i++)
    for (long j = i + 1; j < uniq; j++) assert_true(h[i] != h[j]);
  assert_int_equal(uniq + copies, P);
}

/* Generated entries use e4m3's whole range: subnormals, the top binade, both
 * signs, scales from tiles with and without outliers. */
static void test_generated_range_coverage(void **state) {
  (void)state;
  long hist[256] = {0}, scales[256] = {0};
  for (uint32_t p = 0; p < 256; p++) {
    uint8_t e[CPLAB_MLA_ENTRY_BYTES];
    cplab_kvformat_mla_generate(3, 0, 1, p, e);
    for (int i = 0; i < 512; i++) hist[e[i]]++;
    for (int t = 0; t < 4; t++) scales[(u_of(cplab_kvformat_mla_scale(e, t)) >> 23) & 0xFF]++;
  }
  long sub = 0, top = 0, neg = 0, nan = hist[0x7F] + hist[0xFF];
  for (int c = 0; c < 256; c++) {
    if ((c & 0x78) == 0 && (c & 7)) sub += hist[c];
    if ((c & 0x78) == 0x78) top += hist[c];
    if (c & 0x80) neg += hist[c];
  }
  int distinct_scales = 0;
  for (int s = 0; s < 256; s++) distinct_scales += scales[s] > 0;
  print_message("# 256 KV entries: %ld subnormal bytes, %ld in the top binade, %ld negative, %d scales\n", sub, top,
                neg, distinct_scales);
  assert_int_equal(nan, 0);
  assert_true(sub > 0 && top > 0);
  assert_true(neg > 256 * 512 * 2 / 5 && neg < 256 * 512 * 3 / 5);
  assert_true(distinct_scales >= 3);
}

/* Pinned digests of generated entries: the generated inputs must never change
 * silently (traces written earlier are compared against them). */
static void test_pinned_entries(void **state) {
  (void)state;
  XXH3_state_t *st = XXH3_createState();
  assert_non_null(st);
  assert_int_equal(XXH3_64bits_reset(st), XXH_OK);
  XXH3_state_t *si = XXH3_createState();
  assert_non_null(si);
  assert_int_equal(XXH3_64bits_reset(si), XXH_OK);
  for (uint32_t layer = 0; layer < 3; layer++)
    for (uint32_t req = 0; req < 4; req++)
      for (uint32_t p = 0; p < 64; p++) {
        uint8_t e[CPLAB_MLA_ENTRY_BYTES], ie[CPLAB_IDX_ENTRY_BYTES];
        cplab_kvformat_mla_generate(1, layer, req, p, e);
        cplab_kvformat_idx_generate(1, layer, req, p, ie);
        XXH3_64bits_update(st, e, sizeof e);
        XXH3_64bits_update(si, ie, sizeof ie);
      }
  uint64_t dk = XXH3_64bits_digest(st), di = XXH3_64bits_digest(si);
  XXH3_freeState(st);
  XXH3_freeState(si);
  print_message("# KV digest 0x%016llx, indexer digest 0x%016llx\n", (unsigned long long)dk, (unsigned long long)di);
  assert_int_equal(dk, UINT64_C(0x148eedbcae1b4ee6));
  assert_int_equal(di, UINT64_C(0xd83046bfe6eeb8aa));
  /* A few bytes in the open. */
  uint8_t e[CPLAB_MLA_ENTRY_BYTES];
  cplab_kvformat_mla_generate(1, 0, 0, 0, e);
  /* nope[0..7] = 0.1963, -1.2373, -0.6494, -1.2354, 0.7705, -0.2861, -0.8486, 1.9697; tile 0 scale 2^-7 */
  static const uint8_t head[8] = {0x5d, 0xf2, 0xea, 0xf2, 0x6c, 0xe1, 0xee, 0x78};
  assert_memory_equal(e, head, sizeof head);
  assert_int_equal(le32(e + CPLAB_MLA_SCALE_OFFSET), 0x3C000000u);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scale_rule_boundaries),
      cmocka_unit_test(test_scale_rule_property),
      cmocka_unit_test(test_mla_layout),
      cmocka_unit_test(test_idx_layout),
      cmocka_unit_test(test_quantize_nearest_and_dequantize_exact),
      cmocka_unit_test(test_scale_edges_in_entries),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_generators),
      cmocka_unit_test(test_idx_ties),
      cmocka_unit_test(test_generated_range_coverage),
      cmocka_unit_test(test_pinned_entries),
  };
  return cmocka_run_group_tests_name("numeric_kvformat", tests, NULL, NULL);
}
