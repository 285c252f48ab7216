/* Philox4x32-10 and the keyed input streams (cplab/philox.h): Random123's
 * published known answers, the documented counter/key map, pinned outputs of
 * the keyed helpers, the value distributions and the tie rule. */
#include <math.h>

#include "cplab/fp8.h"
#include "cplab/philox.h"
#include "testutil.h"

typedef struct kat {
  unsigned rounds;
  uint32_t ctr[4], key[2], out[4];
} kat;

/* Random123 tests/kat_vectors (DEShawResearch/random123), the philox4x32
 * lines: counter (4 words), key (2 words), expected output (4 words). */
static const kat kats[] = {
    {10, {0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
    {10,
     {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
     {0xffffffffu, 0xffffffffu},
     {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
    {10,
     {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
     {0xa4093822u, 0x299f31d0u},
     {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
    {7, {0, 0, 0, 0}, {0, 0}, {0x5f6fb709u, 0x0d893f64u, 0x4f121f81u, 0x4f730a48u}},
    {7,
     {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
     {0xffffffffu, 0xffffffffu},
     {0x5207ddc2u, 0x45165e59u, 0x4d8ee751u, 0x8c52f662u}},
    {7,
     {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
     {0xa4093822u, 0x299f31d0u},
     {0x4dfccabau, 0x190a87f0u, 0xc47362bau, 0xb6b5242au}},
};

static void test_random123_known_answers(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof kats / sizeof kats[0]; i++) {
    uint32_t out[4];
    if (kats[i].rounds == 10)
      cplab_philox4x32_10(kats[i].ctr, kats[i].key, out);
    else
      cplab_philox4x32_rounds(kats[i].rounds, kats[i].ctr, kats[i].key, out);
    for (int j = 0; j < 4; j++) assert_int_equal(out[j], kats[i].out[j]);
  }
}

/* cplab_rand_u32x4 is Philox4x32-10 at key {seed lo, seed hi} and counter
 * {block, position, request, layer << 16 | tensor}. */
static void test_keying_map(void **state) {
  (void)state;
  prop_run pr;
  prop_begin(&pr);
  for (long trial = 0; trial < 2000; trial++) {
    if (!prop_trial(&pr, trial)) continue;
    uint64_t seed = (uint64_t)gsl_rng_get(pr.rng) << 32 | gsl_rng_get(pr.rng);
    uint32_t layer = (uint32_t)gsl_rng_get(pr.rng), tensor = (uint32_t)gsl_rng_get(pr.rng),
             request = (uint32_t)gsl_rng_get(pr.rng), position = (uint32_t)gsl_rng_get(pr.rng),
             block = (uint32_t)gsl_rng_get(pr.rng);
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t ctr[4] = {block, position, request, (layer & 0xFFFFu) << 16 | (tensor & 0xFFFFu)}, want[4];
    cplab_philox4x32_10(ctr, key, want);
    cplab_u32x4 got = cplab_rand_u32x4(seed, layer, tensor, request, position, block);
    for (int j = 0; j < 4; j++)
      prop_check(&pr, trial, got.v[j] == want[j], "lane %d: 0x%08x, expected 0x%08x", j, got.v[j], want[j]);
    /* Element e: lane e % 4 of block e / 4. */
    uint32_t e = block & 0x3FFFFFFFu;
    cplab_u32x4 b = cplab_rand_u32x4(seed, layer, tensor, request, position, e / 4);
    prop_check(&pr, trial, cplab_rand_u32(seed, layer, tensor, request, position, e) == b.v[e % 4], "element %u", e);
  }
  prop_end(&pr);
}

/* Every field matters (within its documented width), and nothing else. */
static void test_fields_are_independent(void **state) {
  (void)state;
  const uint64_t seed = UINT64_C(0x0123456789ABCDEF);
  cplab_u32x4 base = cplab_rand_u32x4(seed, 3, 1, 7, 100, 5);
  cplab_u32x4 v[] = {
      cplab_rand_u32x4(seed ^ (UINT64_C(1) << 63), 3, 1, 7, 100, 5), cplab_rand_u32x4(seed ^ 1u, 3, 1, 7, 100, 5),
      cplab_rand_u32x4(seed, 4, 1, 7, 100, 5), cplab_rand_u32x4(seed, 3, 2, 7, 100, 5),
      cplab_rand_u32x4(seed, 3, 1, 8, 100, 5), cplab_rand_u32x4(seed, 3, 1, 7, 101, 5),
      cplab_rand_u32x4(seed, 3, 1, 7, 100, 6), cplab_rand_u32x4(seed, 3, 1 | CPLAB_TENSOR_AUX, 7, 100, 5),
      cplab_rand_u32x4(seed, 1, 3, 7, 100, 5), /* layer and tensor do not commute */
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) assert_memory_not_equal(&base, &v[i], sizeof base);
  /* Documented widths: layer and tensor are taken modulo 2^16. */
  cplab_u32x4 wrapped = cplab_rand_u32x4(seed, 3 + 0x10000u, 1 + 0x10000u, 7, 100, 5);
  assert_memory_equal(&base, &wrapped, sizeof base);
}

/* Pinned outputs of the keyed helpers: any change of the keying or of the
 * value functions changes every input of every trace. */
static void test_pinned_outputs(void **state) {
  (void)state;
  cplab_u32x4 a = cplab_rand_u32x4(42, 5, CPLAB_TENSOR_KV_NOPE, 3, 1000, 7);
  static const uint32_t a_want[4] = {0xdeeee096u, 0x77c127c5u, 0xffd67ec5u, 0xbb27bf57u};
  for (int j = 0; j < 4; j++) assert_int_equal(a.v[j], a_want[j]);
  assert_int_equal(cplab_rand_u32(UINT64_C(0xFFFFFFFF00000001), 77, CPLAB_TENSOR_INDEX_K, 9, 131071, 127), 0x9474f938u);
  float row[10];
  cplab_rand_realistic_row(7, 0, CPLAB_TENSOR_KV_ROPE, 0, 0, row, 10);
  static const uint32_t row_want[10] = {
      0x3f2bc000u, 0x3d8e0000u, 0xbdbe0000u, 0xbf334000u, 0xbda20000u, /* 0.6709, 0.0693, -0.0928, -0.7002, -0.0791 */
      0x3f774000u, 0xbf64c000u, 0xbf6a4000u, 0xbebd8000u, 0xbfcaa000u, /* 0.9658, -0.8936, -0.9150, -0.3701, -1.5830 */
  };
  for (int j = 0; j < 10; j++) assert_int_equal(cplab_f32_bits(row[j]), row_want[j]);
  assert_int_equal(cplab_rand_row_source(7, 1, CPLAB_TENSOR_INDEX_K, 2, 5000, CPLAB_RAND_TIE_THRESHOLD), 5000);
  assert_int_equal(cplab_rand_row_source(7, 1, CPLAB_TENSOR_INDEX_K, 2, 5063, CPLAB_RAND_TIE_THRESHOLD), 2825);
  assert_int_equal(cplab_rand_row_source(7, 1, CPLAB_TENSOR_INDEX_K, 2, 5075, CPLAB_RAND_TIE_THRESHOLD), 2567);
}

static void test_float_helpers_exact(void **state) {
  (void)state;
  /* Ends of the ranges. */
  assert_true(cplab_rand_unit(0) == 0.0f);
  assert_true(cplab_rand_unit(0xFFFFFFFFu) == 1.0f - 0x1p-24f);
  assert_true(cplab_rand_sym(0) == -1.0f + 0x1p-24f);
  assert_true(cplab_rand_sym(0xFFFFFFFFu) == 1.0f - 0x1p-24f);
  assert_true(cplab_rand_irwin3(0) == -3069.0f / 1024.0f);
  assert_true(cplab_rand_irwin3(0x3FFFFFFFu) == 3069.0f / 1024.0f);
  assert_true(cplab_rand_irwin3(0xC0000000u) == cplab_rand_irwin3(0)); /* bits 30-31 unused */
  /* a = 511, b = 512, c = 512: 2 * 1535 + 3 - 3072 = 1. */
  assert_true(cplab_rand_irwin3(511u | 512u << 10 | 512u << 20) == 0x1p-10f);
  assert_true(cplab_rand_outlier_factor(CPLAB_RAND_OUTLIER_THRESHOLD) == 1.0f);
  assert_true(cplab_rand_outlier_factor(0) == 16.0f);
  assert_true(cplab_rand_outlier_factor(1u << 8) == 32.0f);
  assert_true(cplab_rand_outlier_factor(2u << 8) == 64.0f);
  assert_true(cplab_rand_outlier_factor(CPLAB_RAND_OUTLIER_THRESHOLD - 1) >= 16.0f);
  /* Every output is exactly what integer arithmetic says it is. */
  prop_run pr;
  prop_begin(&pr);
  for (long trial = 0; trial < 20000; trial++) {
    if (!prop_trial(&pr, trial)) continue;
    uint32_t u = (uint32_t)gsl_rng_get(pr.rng), v = (uint32_t)gsl_rng_get(pr.rng);
    prop_check(&pr, trial, (double)cplab_rand_unit(u) == (double)(u >> 8) / 16777216.0, "unit(0x%08x)", u);
    prop_check(&pr, trial, (double)cplab_rand_sym(u) == ((double)(u >> 8) * 2.0 - 16777215.0) / 16777216.0,
               "sym(0x%08x)", u);
    double s = (double)((u & 1023u) + ((u >> 10) & 1023u) + ((u >> 20) & 1023u));
    prop_check(&pr, trial, (double)cplab_rand_irwin3(u) == (2.0 * s + 3.0 - 3072.0) / 1024.0, "irwin3(0x%08x)", u);
    double f = v < CPLAB_RAND_OUTLIER_THRESHOLD ? (double)(16u << ((v >> 8) % 3u)) : 1.0;
    prop_check(&pr, trial, (double)cplab_rand_realistic(u, v) == (double)cplab_rand_irwin3(u) * f,
               "realistic(0x%08x, 0x%08x)", u, v);
  }
  prop_end(&pr);
}

/* The row function equals the per-element one, for lengths that are and are
 * not multiples of 4; the values have the documented distribution. */
static void test_realistic_distribution(void **state) {
  (void)state;
  enum { N = 1030, ROWS = 400 };
  static float row[N];
  double sum = 0, sum2 = 0, max_plain = 0;
  long outliers = 0, by_factor[3] = {0, 0, 0}, total = 0;
  for (uint32_t p = 0; p < ROWS; p++) {
    uint32_t n = p % 2 ? N : N - 3;
    cplab_rand_realistic_row(99, 2, CPLAB_TENSOR_INDEX_Q, 4, p, row, n);
    for (uint32_t e = 0; e < n; e++) {
      float at = cplab_rand_realistic_at(99, 2, CPLAB_TENSOR_INDEX_Q, 4, p, e);
      assert_int_equal(cplab_f32_bits(row[e]), cplab_f32_bits(at));
      uint32_t v = cplab_rand_u32(99, 2, CPLAB_TENSOR_INDEX_Q | CPLAB_TENSOR_AUX, 4, p, e);
      float f = cplab_rand_outlier_factor(v);
      double x = (double)row[e] / (double)f;
      assert_true(x > -3.0 && x < 3.0 && x != 0.0);
      if (f > 1.0f) {
        outliers++;
        by_factor[f == 16.0f ? 0 : f == 32.0f ? 1 : 2]++;
      } else if (fabs(x) > max_plain) {
        max_plain = fabs(x);
      }
      sum += x;
      sum2 += x * x;
      total++;
    }
  }
  double mean = sum / (double)total, var = sum2 / (double)total - mean * mean;
  double rate = (double)outliers / (double)total;
  print_message("# %ld values: mean %.4f, variance %.4f, outliers %.3f%% (x16 %ld, x32 %ld, x64 %ld)\n", total, mean,
                var, 100.0 * rate, by_factor[0], by_factor[1], by_factor[2]);
  assert_true(fabs(mean) < 0.01);       /* 0 +- 5 sigma (sigma = 1/sqrt(411k)) */
  assert_true(fabs(var - 1.0) < 0.015); /* unit variance */
  assert_true(max_plain > 2.5);         /* the tails are reached */
  assert_true(rate > 0.0085 && rate < 0.0115);
  for (int i = 0; i < 3; i++) assert_true(by_factor[i] > outliers / 4 && by_factor[i] < outliers / 2);
}

/* Ties: a copy's source is earlier and not itself a copy; position 0 never
 * copies; the copy rate is the threshold's. */
static void test_row_source(void **state) {
  (void)state;
  enum { P = 20000 };
  long copies = 0;
  for (uint32_t p = 0; p < P; p++) {
    uint32_t src = cplab_rand_row_source(11, 3, CPLAB_TENSOR_INDEX_K, 6, p, CPLAB_RAND_TIE_THRESHOLD);
    assert_true(src <= p);
    if (src != p) {
      copies++;
      assert_int_equal(cplab_rand_row_source(11, 3, CPLAB_TENSOR_INDEX_K, 6, src, CPLAB_RAND_TIE_THRESHOLD), src);
    }
  }
  assert_int_equal(cplab_rand_row_source(11, 3, CPLAB_TENSOR_INDEX_K, 6, 0, UINT32_MAX), 0);
  /* threshold 0: no copies; threshold 2^32 - 1: nearly every row copies, back to 0. */
  assert_int_equal(cplab_rand_row_source(11, 3, CPLAB_TENSOR_INDEX_K, 6, 777, 0), 777);
  double rate = (double)copies / (double)(P - 1);
  print_message("# %ld of %d rows are copies (%.3f%%)\n", copies, P - 1, 100.0 * rate);
  assert_true(rate > 0.025 && rate < 0.038); /* 1/32 = 3.125% */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random123_known_answers), cmocka_unit_test(test_keying_map),
      cmocka_unit_test(test_fields_are_independent),  cmocka_unit_test(test_pinned_outputs),
      cmocka_unit_test(test_float_helpers_exact),     cmocka_unit_test(test_realistic_distribution),
      cmocka_unit_test(test_row_source),
  };
  return cmocka_run_group_tests_name("numeric_philox", tests, NULL, NULL);
}
