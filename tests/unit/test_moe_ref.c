/* MoE under PCP (§8): on steps whose rows are all replicated, the fast path
 * (local rows, all-reduce) and the general path (all-gather, reduce-scatter)
 * give the unsharded block's result on every rank; the general path also
 * does for split rows. Relative error <= 1e-12 in double. */
#include <math.h>

#include "moe_ref.h"
#include "testutil.h"

enum { DIM = 16, EXPERTS = 8, TOPK = 3, MAX_ROWS = 24 };

static double rel(const double *a, const double *b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) num += (a[i] - b[i]) * (a[i] - b[i]), den += b[i] * b[i];
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

static void test_paths_agree(void **state) {
  (void)state;
  static double router[EXPERTS * DIM], weights[EXPERTS * DIM * DIM], rows[MAX_ROWS * DIM], ref[MAX_ROWS * DIM];
  static double outs[8][MAX_ROWS * DIM];
  prop_run pr;
  prop_begin(&pr);
  double worst = 0;
  for (long trial = 0; trial < 200; trial++) {
    if (!prop_trial(&pr, trial)) continue;
    for (int i = 0; i < EXPERTS * DIM; i++) router[i] = gsl_rng_uniform(pr.rng) - 0.5;
    for (int i = 0; i < EXPERTS * DIM * DIM; i++) weights[i] = (gsl_rng_uniform(pr.rng) - 0.5) / DIM;
    sim_moe m = {DIM, EXPERTS, TOPK, router, weights};
    static const int Ps[] = {2, 3, 4, 8};
    int P = Ps[prop_int(&pr, 0, 3)];
    size_t n = (size_t)prop_int(&pr, 1, MAX_ROWS);
    for (size_t i = 0; i < n * DIM; i++) rows[i] = gsl_rng_uniform(pr.rng) * 2 - 1;
    sim_moe_forward(&m, rows, n, ref);
    double *out[8];
    for (int r = 0; r < P; r++) out[r] = outs[r];
    /* Replicated rows: both paths. */
    sim_moe_fast(&m, P, rows, n, out);
    for (int r = 0; r < P; r++) {
      double e = rel(out[r], ref, n * DIM);
      worst = e > worst ? e : worst;
      prop_check(&pr, trial, e <= 1e-12, "fast path, P=%d rank %d: relative error %.3g", P, r, e);
    }
    const double *same[8];
    size_t counts[8];
    for (int r = 0; r < P; r++) same[r] = rows, counts[r] = n;
    sim_moe_general(&m, P, same, counts, out);
    for (int r = 0; r < P; r++) {
      double e = rel(out[r], ref, n * DIM);
      worst = e > worst ? e : worst;
      prop_check(&pr, trial, e <= 1e-12, "general path (replicated), P=%d rank %d: relative error %.3g", P, r, e);
    }
    /* Split rows: rank r holds a slice; the general path returns each its own. */
    size_t start = 0;
    const double *slices[8];
    for (int r = 0; r < P; r++) {
      counts[r] = n / (size_t)P + ((size_t)r < n % (size_t)P);
      slices[r] = rows + start * DIM;
      start += counts[r];
    }
    sim_moe_general(&m, P, slices, counts, out);
    start = 0;
    for (int r = 0; r < P; r++) {
      double e = counts[r] ? rel(out[r], ref + start * DIM, counts[r] * DIM) : 0;
      prop_check(&pr, trial, e <= 1e-12, "general path (split), P=%d rank %d: relative error %.3g", P, r, e);
      start += counts[r];
    }
  }
  prop_end(&pr);
  print_message("# worst relative error %.3g\n", worst);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_paths_agree)};
  return cmocka_run_group_tests_name("moe", tests, NULL, NULL);
}
