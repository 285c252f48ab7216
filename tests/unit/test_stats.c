/* The statistics module (common/stats.c): quantiles on known data, the
 * single-sample case, errors, determinism, and the property a confidence
 * interval must have: over many seeded samples of a known distribution, the
 * 95% bootstrap interval of the median covers the true median about 95% of
 * the time; ratios of medians and their intervals likewise. */
#include <gsl/gsl_randist.h>
#include <math.h>

#include "cplab/stats.h"
#include "testutil.h"

static void test_known_quantiles(void **state) {
  (void)state;
  double x[100];
  for (int i = 0; i < 100; i++) x[99 - i] = i + 1; /* unsorted on purpose */
  cplab_stats s;
  cplab_diag d = {0};
  assert_int_equal(cplab_stats_summarize(x, 100, 1, 500, &s, &d), 0);
  assert_true(fabs(s.median - 50.5) < 1e-12);
  assert_true(fabs(s.p99 - 99.01) < 1e-9); /* (n - 1)·0.99 = 98.01 between 99 and 100 */
  assert_true(fabs(s.mean - 50.5) < 1e-12 && s.min == 1 && s.max == 100 && s.n == 100);
  assert_true(s.ci_low < s.median && s.median < s.ci_high);
  assert_true(x[0] == 100); /* the samples are not modified */
  double one = 7.5;
  assert_int_equal(cplab_stats_summarize(&one, 1, 1, 100, &s, &d), 0);
  assert_true(s.median == 7.5 && s.p99 == 7.5 && s.ci_low == 7.5 && s.ci_high == 7.5 && s.stddev == 0);
}

/* The median sorts in place: odd and even counts, unsorted input, none. */
static void test_median(void **state) {
  (void)state;
  double odd[] = {5, 1, 4, 2, 3}, even[] = {10, 2, 8, 4}, one[] = {7};
  assert_true(cplab_stats_median(odd, 5) == 3.0);
  assert_true(odd[0] == 1.0 && odd[4] == 5.0);
  assert_true(cplab_stats_median(even, 4) == 6.0);
  assert_true(cplab_stats_median(one, 1) == 7.0);
  assert_true(isnan(cplab_stats_median(NULL, 0)));
}

/* The benchmarks' spread: GSL's interpolated quantiles ((n - 1)·q) of the
 * sorted samples, which it leaves sorted; one sample is its own spread. */
static void test_spread(void **state) {
  (void)state;
  double x[] = {9, 1, 5, 3, 7, 2, 8, 4, 6, 10, 0};
  cplab_spread s = cplab_stats_spread(x, 11);
  assert_true(s.median == 5.0 && s.min == 0.0 && s.max == 10.0);
  assert_true(fabs(s.p10 - 1.0) < 1e-12 && fabs(s.p90 - 9.0) < 1e-12);
  for (int i = 0; i < 11; i++) assert_true(x[i] == (double)i);
  double y[] = {4, 1, 3, 2}; /* (n - 1)·q = 0.3 and 2.7: between order statistics */
  s = cplab_stats_spread(y, 4);
  assert_true(s.median == 2.5 && fabs(s.p10 - 1.3) < 1e-12 && fabs(s.p90 - 3.7) < 1e-12);
  double one[] = {42};
  s = cplab_stats_spread(one, 1);
  assert_true(s.median == 42 && s.p10 == 42 && s.p90 == 42 && s.min == 42 && s.max == 42);
}

static void test_errors_and_determinism(void **state) {
  (void)state;
  double x[5] = {1, 2, 3, 4, 5}, bad[3] = {1, NAN, 2};
  cplab_stats s, t;
  cplab_diag d = {0};
  assert_int_equal(cplab_stats_summarize(x, 0, 1, 500, &s, &d), CPLAB_EINVAL);
  assert_int_equal(cplab_stats_summarize(x, 5, 1, 99, &s, &d), CPLAB_EINVAL);
  cplab_diag nan_d = {0}; /* a diag keeps its first error */
  assert_int_equal(cplab_stats_summarize(bad, 3, 1, 500, &s, &nan_d), CPLAB_EINVAL);
  assert_non_null(strstr(nan_d.msg, "sample 1 is not a finite number"));
  assert_int_equal(cplab_stats_summarize(x, 5, 42, 500, &s, NULL), 0);
  assert_int_equal(cplab_stats_summarize(x, 5, 42, 500, &t, NULL), 0);
  assert_true(s.ci_low == t.ci_low && s.ci_high == t.ci_high);
  cplab_ratio r;
  double zero[2] = {0, 0};
  assert_int_equal(cplab_stats_ratio(x, 5, zero, 2, 1, 500, &r, &d), CPLAB_EINVAL);
}

/* Coverage: lognormal timings (true median 1), 51 samples, 300 seeded trials. */
static void test_interval_coverage(void **state) {
  (void)state;
  enum { N = 51, TRIALS = 300 };
  prop_run pr;
  prop_begin(&pr);
  int covered = 0, ratio_covered = 0, done = 0;
  double x[N], y[N];
  for (long trial = 0; trial < TRIALS; trial++) {
    if (!prop_trial(&pr, trial)) continue;
    for (int i = 0; i < N; i++) x[i] = gsl_ran_lognormal(pr.rng, 0.0, 0.25), y[i] = 2 * gsl_ran_lognormal(pr.rng, 0.0, 0.25);
    cplab_stats s;
    cplab_ratio r;
    assert_int_equal(cplab_stats_summarize(x, N, (uint64_t)trial, 1000, &s, NULL), 0);
    assert_int_equal(cplab_stats_ratio(y, N, x, N, (uint64_t)trial, 1000, &r, NULL), 0);
    covered += s.ci_low <= 1.0 && 1.0 <= s.ci_high;
    ratio_covered += r.ci_low <= 2.0 && 2.0 <= r.ci_high;
    prop_check(&pr, trial, s.ci_low <= s.median && s.median <= s.ci_high, "the interval must hold the median");
    done++;
  }
  prop_end(&pr);
  print_message("# 95%% intervals: median covered in %d of %d trials, ratio in %d of %d\n", covered, done,
                ratio_covered, done);
  if (done == TRIALS) {
    assert_true(covered >= 0.88 * TRIALS && covered <= 0.995 * TRIALS);
    assert_true(ratio_covered >= 0.88 * TRIALS && ratio_covered <= 0.995 * TRIALS);
  }
}

/* cplab_stats_worst: the maximum of a sequence, NaN wherever a NaN stands
 * in it (first, middle or last), over 2000 seeded random sequences. */
static void test_worst_keeps_nan(void **state) {
  (void)state;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int t = 0; t < 2000; t++) {
    double v[9], worst = 0, want = 0;
    int n = 1 + t % 9, nan_at = t % 3 == 0 ? (int)(t / 3 % n) : -1;
    for (int i = 0; i < n; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      v[i] = i == nan_at ? NAN : (double)(x % 1000) / 7.0;
      if (v[i] > want) want = v[i];
    }
    for (int i = 0; i < n; i++) worst = cplab_stats_worst(worst, v[i]);
    if (nan_at >= 0) assert_true(isnan(worst));
    else assert_true(worst == want);
  }
  assert_true(cplab_stats_worst(1.0, 2.0) == 2.0 && cplab_stats_worst(2.0, 1.0) == 2.0);
  assert_true(isnan(cplab_stats_worst(NAN, 5.0)) && isnan(cplab_stats_worst(5.0, NAN)));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_known_quantiles),
      cmocka_unit_test(test_median),
      cmocka_unit_test(test_spread),
      cmocka_unit_test(test_errors_and_determinism),
      cmocka_unit_test(test_interval_coverage),
      cmocka_unit_test(test_worst_keeps_nan),
  };
  return cmocka_run_group_tests_name("stats", tests, NULL, NULL);
}
