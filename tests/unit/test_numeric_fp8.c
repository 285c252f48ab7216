/* bf16 and fp8 e4m3 conversions (cplab/fp8.h): the digests of the full
 * conversion tables, pinned from CUDA's own conversions (see
 * tests/numeric/fp8_digests.h), plus checks that need no reference at all:
 * hand-worked values at every special case and rounding rule, exact decoding
 * against a formula, round trips, round-to-nearest against brute force, and
 * monotonicity. */
#include <float.h>
#include <math.h>

#include "../numeric/fp8_digests.h"
#include "../numeric/fp8_tables.h"
#include "cplab/fp8.h"
#include "testutil.h"

static float f_of(uint32_t u) { return cplab_f32_from_bits(u); }
static uint32_t u_of(float x) { return cplab_f32_bits(x); }

static void test_pinned_digests(void **state) {
  (void)state;
  size_t n = 0;
  uint32_t *s = fp8t_sweep_alloc(&n);
  assert_non_null(s);
  assert_int_equal(n, fp8t_sweep_count());
  uint64_t d[FP8T_NDIGESTS];
  assert_int_equal(fp8t_digests(&fp8t_cplab, s, n, d), 0);
  int bad = 0;
  for (int i = 0; i < FP8T_NDIGESTS; i++)
    if (d[i] != fp8t_pinned[i]) {
      print_error("%s: digest 0x%016llx, pinned 0x%016llx\n", fp8t_digest_names[i], (unsigned long long)d[i],
                  (unsigned long long)fp8t_pinned[i]);
      bad++;
    }
  free(s);
  assert_int_equal(bad, 0);
}

typedef struct e4m3_case {
  uint32_t in;
  uint8_t out;
} e4m3_case;

static void test_e4m3_known_values(void **state) {
  (void)state;
  static const e4m3_case cases[] = {
      {0x00000000u, 0x00}, /* +0 */
      {0x80000000u, 0x80}, /* -0 keeps its sign */
      {0x3F800000u, 0x38}, /* 1.0 */
      {0xBF800000u, 0xB8}, /* -1.0 */
      {0x3F880000u, 0x38}, /* 1.0625: tie between 1 (even) and 1.125 */
      {0x3F880001u, 0x39}, /* just above the tie */
      {0x3F980000u, 0x3A}, /* 1.1875: tie between 1.125 (odd) and 1.25 (even) */
      {0x43E00000u, 0x7E}, /* 448, the largest finite */
      {0x43E40000u, 0x7E}, /* 456 */
      {0x43E80000u, 0x7E}, /* 464: tie between 448 (even) and 480: 448 */
      {0x43E80001u, 0x7E}, /* above 464: would be 480, saturates */
      {0x43F00000u, 0x7E}, /* 480 */
      {0x7F7FFFFFu, 0x7E}, /* FLT_MAX */
      {0xFF7FFFFFu, 0xFE}, /* -FLT_MAX */
      {0x7F800000u, 0x7E}, /* +inf saturates */
      {0xFF800000u, 0xFE}, /* -inf saturates */
      {0x7FC00000u, 0x7F}, /* NaN */
      {0xFFC00000u, 0x7F}, /* -NaN: sign dropped */
      {0x7F800001u, 0x7F}, /* signalling NaN */
      {0x3C800000u, 0x08}, /* 2^-6, smallest normal */
      {0x3C7FFFFFu, 0x08}, /* just below 2^-6 rounds up to it */
      {0x3B000000u, 0x01}, /* 2^-9, smallest subnormal */
      {0x3A800000u, 0x00}, /* 2^-10: tie between 0 (even) and 2^-9: 0 */
      {0x3A800001u, 0x01}, /* just above 2^-10 */
      {0xBA800000u, 0x80}, /* -2^-10: -0 */
      {0xBA800001u, 0x81}, /* just below -2^-10 */
      {0x3B400000u, 0x02}, /* 1.5 * 2^-9: tie between 1 (odd) and 2 (even) subnormal steps */
      {0x3BA00000u, 0x02}, /* 2.5 * 2^-9: tie between 2 (even) and 3 */
      {0x3C700000u, 0x08}, /* 7.5 * 2^-9: tie between 7 (odd) and 8 = 2^-6 */
      {0x00000001u, 0x00}, /* smallest float subnormal */
      {0x80000001u, 0x80},
      {0x41700000u, 0x57}, /* 15 = 1.875 * 2^3 */
      {0x41780000u, 0x58}, /* 15.5: tie between 15 (odd) and 16 (even) */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint8_t got = cplab_e4m3_from_f32(f_of(cases[i].in));
    if (got != cases[i].out) print_error("e4m3(0x%08x) = 0x%02x, expected 0x%02x\n", cases[i].in, got, cases[i].out);
    assert_int_equal(got, cases[i].out);
  }
}

typedef struct bf16_case {
  uint32_t in;
  uint16_t out;
} bf16_case;

static void test_bf16_known_values(void **state) {
  (void)state;
  static const bf16_case cases[] = {
      {0x00000000u, 0x0000}, {0x80000000u, 0x8000}, /* signed zeros */
      {0x3F800000u, 0x3F80},                        /* 1.0 */
      {0x3F808000u, 0x3F80},                        /* tie, even stays */
      {0x3F818000u, 0x3F82},                        /* tie, odd rounds up */
      {0x3F808001u, 0x3F81},                        /* above the tie */
      {0x3F807FFFu, 0x3F80},                        /* below the tie */
      {0x3FFFFFFFu, 0x4000},                        /* carry into the exponent */
      {0x7F7F7FFFu, 0x7F7F},                        /* largest that stays finite */
      {0x7F7F8000u, 0x7F80},                        /* tie above the largest bf16: +inf */
      {0x7F7FFFFFu, 0x7F80},                        /* FLT_MAX: +inf */
      {0xFF7FFFFFu, 0xFF80},                        /* -FLT_MAX: -inf */
      {0x7F800000u, 0x7F80}, {0xFF800000u, 0xFF80}, /* infinities */
      {0x7FC00000u, 0x7FFF}, {0xFFC00000u, 0x7FFF}, /* NaNs: the canonical quiet NaN */
      {0x7F800001u, 0x7FFF}, {0xFF800001u, 0x7FFF}, /* signalling NaNs too */
      {0x00008000u, 0x0000},                        /* subnormal tie, even */
      {0x00018000u, 0x0002},                        /* subnormal tie, odd */
      {0x00008001u, 0x0001},                        /* not flushed */
      {0x007FFFFFu, 0x0080},                        /* largest subnormal rounds to the smallest normal */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint16_t got = cplab_bf16_from_f32(f_of(cases[i].in));
    if (got != cases[i].out) print_error("bf16(0x%08x) = 0x%04x, expected 0x%04x\n", cases[i].in, got, cases[i].out);
    assert_int_equal(got, cases[i].out);
  }
  /* bf16 -> float is a shift, NaN payloads and signs included. */
  assert_int_equal(u_of(cplab_bf16_to_f32(0xFFC1)), 0xFFC10000u);
  assert_int_equal(u_of(cplab_bf16_to_f32(0x7F81)), 0x7F810000u);
  assert_int_equal(u_of(cplab_bf16_to_f32(0x0001)), 0x00010000u);
}

/* Decoding against the formula (-1)^s * 2^(e-7) * (1 + m/8), subnormals
 * 2^-6 * m/8, in double arithmetic. */
static void test_e4m3_decode_formula(void **state) {
  (void)state;
  for (unsigned b = 0; b < 256; b++) {
    float f = cplab_e4m3_to_f32((uint8_t)b);
    uint16_t h = cplab_e4m3_to_bf16((uint8_t)b);
    if ((b & 0x7F) == 0x7F) {
      assert_int_equal(u_of(f), CPLAB_F32_NAN_BITS);
      assert_int_equal(h, CPLAB_BF16_NAN_BITS);
      continue;
    }
    unsigned e = (b >> 3) & 15, m = b & 7;
    double v = e ? ldexp(1.0 + m / 8.0, (int)e - 7) : ldexp(m / 8.0, -6);
    if (b & 0x80) v = -v;
    assert_true((double)f == v);
    assert_int_equal(u_of(f) >> 31, b >> 7); /* signed zero too */
    assert_int_equal((uint32_t)h << 16, u_of(f)); /* bf16 holds it exactly */
  }
  assert_true(cplab_e4m3_to_f32(0x7E) == CPLAB_E4M3_MAX);
  assert_true(cplab_e4m3_to_f32(0x01) == 0x1p-9f);
}

/* Every non-NaN byte survives e4m3 -> float -> e4m3 and e4m3 -> bf16 ->
 * float -> e4m3; every non-NaN bf16 survives bf16 -> float -> bf16. */
static void test_round_trips(void **state) {
  (void)state;
  for (unsigned b = 0; b < 256; b++) {
    if ((b & 0x7F) == 0x7F) continue;
    assert_int_equal(cplab_e4m3_from_f32(cplab_e4m3_to_f32((uint8_t)b)), b);
    assert_int_equal(cplab_e4m3_from_f32(cplab_bf16_to_f32(cplab_e4m3_to_bf16((uint8_t)b))), b);
  }
  for (uint32_t b = 0; b < 65536u; b++) {
    uint16_t back = cplab_bf16_from_f32(cplab_bf16_to_f32((uint16_t)b));
    int nan = (b & 0x7FFFu) > 0x7F80u;
    assert_int_equal(back, nan ? CPLAB_BF16_NAN_BITS : b);
  }
}

/* Round to nearest, checked by brute force over the grid in double: for every
 * finite sweep input, no representable value is nearer than the result; at a
 * tie the result's mantissa is even. Results are monotone in the input. */
static void test_nearest_and_monotone(void **state) {
  (void)state;
  double grid[127];
  for (unsigned c = 0; c < 127; c++) grid[c] = (double)cplab_e4m3_to_f32((uint8_t)c);
  size_t n = 0;
  uint32_t *s = fp8t_sweep_alloc(&n);
  assert_non_null(s);
  for (size_t i = 0; i < n; i++) {
    uint32_t a = s[i] & 0x7FFFFFFFu;
    if (a >= 0x7F800000u) continue;
    double x = fabs((double)f_of(s[i]));
    uint8_t code = cplab_e4m3_from_f32(f_of(s[i]));
    assert_int_equal(code >> 7, s[i] >> 31);
    unsigned c = code & 0x7Fu;
    assert_true(c <= 0x7E);
    if (x >= 448.0) {
      assert_int_equal(c, 0x7E);
      continue;
    }
    double err = fabs(x - grid[c]);
    if (c > 0) assert_true(fabs(x - grid[c - 1]) >= err);
    if (c < 0x7E) assert_true(fabs(x - grid[c + 1]) >= err);
    if ((c > 0 && fabs(x - grid[c - 1]) == err) || (c < 0x7E && fabs(x - grid[c + 1]) == err))
      assert_int_equal(c & 1u, 0); /* a tie went to the even mantissa */
    /* bf16: nearest too, relative to the float's own neighbours. */
    uint16_t h = cplab_bf16_from_f32(f_of(s[i]));
    double hv = fabs((double)cplab_bf16_to_f32(h));
    if ((h & 0x7FFFu) < 0x7F80u) { /* neighbours by magnitude: h + 1 (maybe inf) and h - 1 */
      double up = fabs((double)cplab_bf16_to_f32((uint16_t)(h + 1)));
      double dn = (h & 0x7FFFu) ? fabs((double)cplab_bf16_to_f32((uint16_t)(h - 1))) : 0.0;
      assert_true(fabs(x - hv) <= fabs(x - up));
      assert_true(fabs(x - hv) <= fabs(x - dn));
    }
  }
  /* Monotone over all positive finite floats reached by the stride walk. */
  uint8_t prev = 0;
  for (uint32_t u = 0; u < 0x7F800000u; u += 0x800u) {
    uint8_t c = cplab_e4m3_from_f32(f_of(u));
    assert_true(c >= prev);
    prev = c;
  }
  free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pinned_digests),   cmocka_unit_test(test_e4m3_known_values),
      cmocka_unit_test(test_bf16_known_values), cmocka_unit_test(test_e4m3_decode_formula),
      cmocka_unit_test(test_round_trips),      cmocka_unit_test(test_nearest_and_monotone),
  };
  return cmocka_run_group_tests_name("numeric_fp8", tests, NULL, NULL);
}
