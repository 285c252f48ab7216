/* cplab-bench --check's attention bounds (bench/layers/checkbound.h): worked
 * examples at the edges (NaN, -inf lse, all-zero rows, a swapped head), then
 * seeded properties over thousands of random rows: a perturbation of
 * relative L2 just inside the bound passes and one just outside fails, for
 * out and lse alike, whichever head carries it. */
#include <math.h>

#include "checkbound.h"
#include "testutil.h"

#define DV 16
#define HEADS 4

static void fill(float *out, float *lse, int seed) {
  for (int i = 0; i < HEADS * DV; i++) out[i] = (float)((i * 37 + seed * 11) % 23) - 11.0f;
  for (int h = 0; h < HEADS; h++) lse[h] = (float)(h * 3 + seed) - 4.0f;
}

static void test_edges(void **state) {
  (void)state;
  float a[HEADS * DV], b[HEADS * DV], la[HEADS], lb[HEADS];
  fill(a, la, 1);
  memcpy(b, a, sizeof a);
  memcpy(lb, la, sizeof la);
  assert_true(cplab_bench_attention_close(a, b, la, lb, HEADS, DV));
  /* a head's values swapped with another head's: far outside */
  memcpy(b, a + DV, DV * sizeof *a);
  assert_false(cplab_bench_attention_close(a, b, la, lb, HEADS, DV));
  memcpy(b, a, sizeof a);
  b[5] = NAN;
  assert_false(cplab_bench_attention_close(a, b, la, lb, HEADS, DV));
  memcpy(b, a, sizeof a);
  a[DV + 3] = NAN;
  assert_false(cplab_bench_attention_close(a, b, la, lb, HEADS, DV));
  fill(a, la, 1);
  /* an empty row: out 0 and lse -inf on both sides; a nonzero out against zeros fails */
  for (int i = 0; i < DV; i++) a[i] = b[i] = 0.0f;
  la[0] = lb[0] = -INFINITY;
  assert_true(cplab_bench_attention_close(a, b, la, lb, HEADS, DV));
  a[3] = 1e-30f;
  assert_false(cplab_bench_attention_close(a, b, la, lb, HEADS, DV));
  a[3] = 0.0f;
  la[0] = 0.0f; /* -inf against a finite lse */
  assert_false(cplab_bench_attention_close(a, b, la, lb, HEADS, DV));
  la[0] = -INFINITY;
  lb[2] = NAN;
  assert_false(cplab_bench_attention_close(a, b, la, lb, HEADS, DV));
  /* only the first `heads` heads count */
  lb[2] = la[2];
  lb[3] = la[3] + 1.0f;
  assert_false(cplab_bench_attention_close(a, b, la, lb, HEADS, DV));
  assert_true(cplab_bench_attention_close(a, b, la, lb, 3, DV));
}

/* want: random rows; got = want + e · d with d a random direction of unit
 * L2 and |e| = f · bound · ||want||, f just below or above 1. */
static void test_properties(void **state) {
  (void)state;
  prop_run p;
  prop_begin(&p);
  for (long trial = 0; trial < 4000; trial++) {
    if (!prop_trial(&p, trial)) continue;
    float want[HEADS * DV], got[HEADS * DV], wl[HEADS], gl[HEADS];
    double scale = pow(10.0, (double)prop_int(&p, -3, 3));
    for (int i = 0; i < HEADS * DV; i++) want[i] = (float)(scale * (gsl_rng_uniform(p.rng) * 2 - 1));
    for (int h = 0; h < HEADS; h++) wl[h] = (float)(gsl_rng_uniform(p.rng) * 400 - 100);
    memcpy(got, want, sizeof want);
    memcpy(gl, wl, sizeof wl);
    int h = (int)prop_int(&p, 0, HEADS - 1), inside = (int)prop_int(&p, 0, 1), on_lse = (int)prop_int(&p, 0, 1);
    double f = inside ? 0.98 : 1.02;
    if (on_lse) {
      double bound = CPLAB_BENCH_CHECK_LSE_ABS + CPLAB_BENCH_CHECK_LSE_REL * fabs(wl[h]);
      gl[h] = (float)(wl[h] + (prop_int(&p, 0, 1) ? f : -f) * bound);
      if (fabs((double)gl[h] - wl[h]) > bound * (1 + 1e-3) && inside) continue; /* float rounding past the edge */
    } else {
      double norm = 0, dn = 0, d[DV];
      for (int c = 0; c < DV; c++) norm += (double)want[h * DV + c] * want[h * DV + c];
      for (int c = 0; c < DV; c++) d[c] = gsl_rng_uniform(p.rng) * 2 - 1, dn += d[c] * d[c];
      double e = f * CPLAB_BENCH_CHECK_OUT_REL_L2 * sqrt(norm) / sqrt(dn);
      for (int c = 0; c < DV; c++) got[h * DV + c] = (float)(want[h * DV + c] + e * d[c]);
    }
    int close = cplab_bench_attention_close(got, want, gl, wl, HEADS, DV);
    prop_check(&p, trial, close == inside, "head %d, %s perturbed by %.2f of its bound: close %d", h,
               on_lse ? "lse" : "out", f, close);
  }
  prop_end(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_edges), cmocka_unit_test(test_properties)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
