/* The step-time arithmetic of cplab-bench's engine (bench/layers/steptime.h):
 * a worked example, then seeded properties over thousands of random unit
 * times: the slowest rank per segment, sums over segments and layers, the
 * output gather, phases blanked where a graph merged them. */
#include <math.h>

#include "steptime.h"
#include "testutil.h"

enum { ROW = CPLAB_BENCH_PHASES + 1, SEG = CPLAB_BENCH_SEGMENTS };

static double *cell(double *t, int world, int l, int r, int g) {
  return t + (((size_t)l * (size_t)world + (size_t)r) * SEG + (size_t)g) * ROW;
}

/* Two ranks, one layer: rank 1 is slower in segment 0, rank 0 in segment 3. */
static void test_worked_example(void **state) {
  (void)state;
  double t[2 * SEG * ROW] = {0}, out[2] = {0.5, 0.25}, total, ph[CPLAB_BENCH_PHASES];
  int mixed[CPLAB_BENCH_PHASES] = {0};
  double *a = cell(t, 2, 0, 0, 0), *b = cell(t, 2, 0, 1, 0);
  a[0] = 1, a[1] = 2, a[CPLAB_BENCH_PHASES] = 3; /* rank 0, segment 0: proj 1 + indexer 2 */
  b[0] = 2, b[1] = 2, b[CPLAB_BENCH_PHASES] = 4;
  double *c = cell(t, 2, 0, 0, 3), *e = cell(t, 2, 0, 1, 3);
  c[3] = 7, c[CPLAB_BENCH_PHASES] = 7; /* segment 3: MoE */
  e[3] = 5, e[CPLAB_BENCH_PHASES] = 5;
  cplab_bench_step_time(t, 1, 2, out, mixed, &total, ph);
  assert_true(total == 4 + 7 + 0.5);
  assert_true(ph[0] == 2 && ph[1] == 2 && ph[2] == 0 && ph[3] == 7 && ph[4] == 0.5);
  mixed[0] = mixed[1] = 1; /* a graph held proj and indexer together */
  cplab_bench_step_time(t, 1, 2, out, mixed, &total, ph);
  assert_true(total == 11.5 && isnan(ph[0]) && isnan(ph[1]) && ph[3] == 7);
}

/* A random step: each unit of one phase, times in [0, 10) ms. */
static void random_step(prop_run *p, double *t, int layers, int world, double *out) {
  for (int l = 0; l < layers; l++)
    for (int r = 0; r < world; r++)
      for (int g = 0; g < SEG; g++) {
        double *row = cell(t, world, l, r, g), sum = 0;
        for (int ph = 0; ph < CPLAB_BENCH_PHASES; ph++)
          sum += row[ph] = prop_int(p, 0, 3) == 0 ? 0 : (double)prop_int(p, 0, 9999) / 1000;
        row[CPLAB_BENCH_PHASES] = sum;
      }
  for (int r = 0; r < world; r++) out[r] = (double)prop_int(p, 0, 999) / 1000;
}

static void test_properties(void **state) {
  (void)state;
  enum { TRIALS = 4000, MAXL = 4, MAXW = 8 };
  static double t[MAXL * MAXW * SEG * ROW], u[MAXL * MAXW * SEG * ROW], many[3 * MAXL * MAXW * SEG * ROW];
  double out[MAXW], out2[MAXW];
  prop_run p;
  prop_begin(&p);
  for (long trial = 0; trial < TRIALS; trial++) {
    if (!prop_trial(&p, trial)) continue;
    int L = (int)prop_int(&p, 1, MAXL), W = (int)prop_int(&p, 1, MAXW);
    int mixed[CPLAB_BENCH_PHASES] = {0}, none[CPLAB_BENCH_PHASES] = {0};
    for (int ph = 0; ph < CPLAB_BENCH_PHASES; ph++) mixed[ph] = prop_int(&p, 0, 3) == 0;
    random_step(&p, t, L, W, out);
    double total, ph[CPLAB_BENCH_PHASES], total2, ph2[CPLAB_BENCH_PHASES];
    cplab_bench_step_time(t, L, W, out, none, &total, ph);
    /* the definition: per layer and segment the slowest rank, then the slowest output gather */
    double want = 0, slow_out = 0, phase_sum = 0;
    for (int l = 0; l < L; l++)
      for (int g = 0; g < SEG; g++) {
        double m = 0;
        for (int r = 0; r < W; r++) m = fmax(m, cell(t, W, l, r, g)[CPLAB_BENCH_PHASES]);
        want += m;
      }
    for (int r = 0; r < W; r++) slow_out = fmax(slow_out, out[r]);
    want += slow_out;
    prop_check(&p, trial, fabs(total - want) <= 1e-9 * want, "total %.17g, expected %.17g", total, want);
    /* no rank alone is slower than the step, and the step is no slower than all ranks one after another */
    double serial = 0;
    for (int r = 0; r < W; r++) {
      double own = out[r];
      for (int l = 0; l < L; l++)
        for (int g = 0; g < SEG; g++) own += cell(t, W, l, r, g)[CPLAB_BENCH_PHASES];
      serial += own;
      prop_check(&p, trial, own <= total + 1e-9, "rank %d alone takes %.6g, more than the step's %.6g", r, own, total);
    }
    prop_check(&p, trial, total <= serial + 1e-9, "step %.6g above the ranks in series %.6g", total, serial);
    /* phases of single-phase units sum to at least the step (the max of sums is at most the sum of maxima) */
    for (int q = 0; q < CPLAB_BENCH_PHASES; q++) phase_sum += ph[q];
    prop_check(&p, trial, phase_sum >= total - 1e-9, "phases sum to %.6g, below the step's %.6g", phase_sum, total);
    /* the ranks' order does not matter */
    int shift = (int)prop_int(&p, 0, W - 1);
    for (int l = 0; l < L; l++)
      for (int r = 0; r < W; r++) {
        memcpy(cell(u, W, l, (r + shift) % W, 0), cell(t, W, l, r, 0), sizeof(double) * SEG * ROW);
        out2[(r + shift) % W] = out[r];
      }
    cplab_bench_step_time(u, L, W, out2, none, &total2, ph2);
    prop_check(&p, trial, total2 == total, "rotating the ranks by %d changed the step", shift);
    /* k copies of the layers: the layers' part scales by k, the output gather stays */
    int k = (int)prop_int(&p, 2, 3);
    for (int c = 0; c < k; c++) memcpy(many + (size_t)c * L * W * SEG * ROW, t, sizeof(double) * L * W * SEG * ROW);
    cplab_bench_step_time(many, k * L, W, out, none, &total2, ph2);
    double scaled = k * (total - slow_out) + slow_out;
    prop_check(&p, trial, fabs(total2 - scaled) <= 1e-9 * scaled, "%d copies of the layers: %.17g, expected %.17g", k,
               total2, scaled);
    /* merged phases are blanked, the others and the total unchanged */
    cplab_bench_step_time(t, L, W, out, mixed, &total2, ph2);
    prop_check(&p, trial, total2 == total, "blanking phases changed the step");
    for (int q = 0; q < CPLAB_BENCH_PHASES; q++)
      prop_check(&p, trial, mixed[q] ? isnan(ph2[q]) : ph2[q] == ph[q], "phase %d: %g (merged %d)", q, ph2[q], mixed[q]);
  }
  prop_end(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_worked_example), cmocka_unit_test(test_properties)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
