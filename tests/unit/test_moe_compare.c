/* cplab-kernel-bench's moe_paths check (once cplab-moe-bench's) of the MoE fast path against the general path
 * (bench/moe_compare.h): worked cases for each way the paths may differ, then
 * seeded properties over thousands of random rows: perturbations well inside
 * the tolerance pass, one element well beyond it fails, swapped experts pass
 * only at a near-tie of the logits. */
#include <math.h>

#include "cplab/fp8.h"
#include "moe_compare.h"
#include "testutil.h"

enum { N = 3, DIM = 8, E = 6, K = 2, TRIALS = 4000 };

typedef struct sides { /* both paths' arrays; the general side starts as a copy of the fast one */
  float out[2][N * DIM];
  int32_t experts[2][N * K];
  uint16_t logits[2][N * E];
} sides;

static void fill(sides *x) {
  for (int i = 0; i < N * DIM; i++) x->out[0][i] = x->out[1][i] = (float)((i % 7) - 3) * 0.25f + 0.1f;
  for (int r = 0; r < N; r++) {
    for (int e = 0; e < E; e++) /* logits 2.0, 1.5, 1.0, ...: experts 0, 1 chosen */
      x->logits[0][r * E + e] = x->logits[1][r * E + e] = cplab_bf16_from_f32(2.0f - 0.5f * (float)e);
    x->experts[0][r * K] = x->experts[1][r * K] = 0;
    x->experts[0][r * K + 1] = x->experts[1][r * K + 1] = 1;
  }
}

static moe_verdict compare(const sides *x) {
  moe_side g = {x->out[0], x->experts[0], x->logits[0]}, f = {x->out[1], x->experts[1], x->logits[1]};
  return moe_compare(&g, &f, N, DIM, E, K);
}

static void test_worked_cases(void **state) {
  (void)state;
  sides x;
  fill(&x);
  moe_verdict v = compare(&x);
  assert_true(moe_verdict_ok(&v) && v.identical == N * DIM && v.elems == N * DIM && v.worst == 0 && v.cos_diff == 0);
  /* a rounding-sized difference: passes, one element no longer identical */
  x.out[0][5] = nextafterf(x.out[0][5], 10.0f);
  v = compare(&x);
  assert_true(moe_verdict_ok(&v) && v.identical == N * DIM - 1 && v.worst > 0 && v.worst < 1e-3);
  /* a wrong element: beyond 3e-2 of (|ref| + rms) */
  fill(&x);
  x.out[0][DIM + 2] += 1.0f;
  v = compare(&x);
  assert_false(moe_verdict_ok(&v));
  assert_true(v.values_bad && v.worst > 1 && v.bad_rows == 0);
  /* a NaN (an output never written: poison) */
  fill(&x);
  x.out[0][0] = NAN;
  v = compare(&x);
  assert_false(moe_verdict_ok(&v));
  /* row 1 routed to expert 2 instead of 1 on one side, far from a tie: a bad row */
  fill(&x);
  x.experts[0][K + 1] = 2;
  v = compare(&x);
  assert_true(!moe_verdict_ok(&v) && v.route_differs == 1 && v.bad_rows == 1 && v.near_ties == 0);
  /* the same with logits 1 and 2 tied: a near-tie, excluded from the values (which differ wildly) */
  for (int s = 0; s < 2; s++) x.logits[s][E + 2] = x.logits[s][E + 1];
  x.out[0][DIM + 3] += 100.0f;
  v = compare(&x);
  assert_true(moe_verdict_ok(&v) && v.route_differs == 1 && v.near_ties == 1 && v.bad_rows == 0);
  assert_true(v.identical == (N - 1) * DIM);
}

/* Random rows: a perturbation of at most half the allowance passes; one
 * element pushed to twice its allowance fails; a swapped expert passes only
 * when its logit ties the k-th. */
static void test_properties(void **state) {
  (void)state;
  prop_run p;
  prop_begin(&p);
  for (long trial = 0; trial < TRIALS; trial++) {
    if (!prop_trial(&p, trial)) continue;
    sides x;
    fill(&x);
    for (int i = 0; i < N * DIM; i++) x.out[0][i] = x.out[1][i] = (float)(gsl_rng_uniform(p.rng) * 8.0 - 4.0);
    double rms[N];
    for (int r = 0; r < N; r++) {
      double ms = 0;
      for (int i = 0; i < DIM; i++) ms += (double)x.out[1][r * DIM + i] * x.out[1][r * DIM + i];
      rms[r] = sqrt(ms / DIM);
    }
    for (int i = 0; i < N * DIM; i++) {
      double allow = MOE_TOL_REL * (fabs(x.out[1][i]) + rms[i / DIM]);
      x.out[0][i] = (float)(x.out[1][i] + (gsl_rng_uniform(p.rng) - 0.5) * allow * 0.2);
    }
    moe_verdict v = compare(&x);
    prop_check(&p, trial, moe_verdict_ok(&v) && v.worst <= 0.11, "small perturbations failed (worst %g)", v.worst);
    int at = (int)prop_int(&p, 0, N * DIM - 1);
    double allow = MOE_TOL_REL * (fabs(x.out[1][at]) + rms[at / DIM]);
    x.out[0][at] = (float)(x.out[1][at] + (prop_int(&p, 0, 1) ? 2 : -2) * allow);
    v = compare(&x);
    prop_check(&p, trial, !moe_verdict_ok(&v) && v.worst > 1.5, "element %d at twice its allowance passed", at);
    fill(&x);
    int r = (int)prop_int(&p, 0, N - 1), tie = (int)prop_int(&p, 0, 1);
    if (tie)
      for (int s = 0; s < 2; s++) x.logits[s][r * E + 3] = x.logits[s][r * E + 1];
    x.experts[(int)prop_int(&p, 0, 1)][r * K + 1] = 3;
    v = compare(&x);
    prop_check(&p, trial, moe_verdict_ok(&v) == tie && v.route_differs == 1 && v.near_ties == tie,
               "row %d's swapped expert (tie %d): ok %d, near-ties %lld", r, tie, moe_verdict_ok(&v),
               (long long)v.near_ties);
  }
  prop_end(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_worked_cases), cmocka_unit_test(test_properties)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
