/* Statistics of the benchmarks and the diff: see include/cplab/stats.h. */
#include "cplab/stats.h"

#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/seed.h"

double cplab_stats_quantile_sorted(const double *sorted, size_t n, double q) {
  return gsl_stats_quantile_from_sorted_data(sorted, 1, n, q);
}

double cplab_stats_worst(double worst, double v) { return isnan(worst) || v <= worst ? worst : v; }

double cplab_stats_median(double *x, size_t n) {
  if (n == 0) return NAN;
  gsl_sort(x, 1, n);
  return cplab_stats_quantile_sorted(x, n, 0.5);
}

cplab_spread cplab_stats_spread(double *x, size_t n) {
  gsl_sort(x, 1, n);
  return (cplab_spread){.median = cplab_stats_quantile_sorted(x, n, 0.5),
                        .p10 = cplab_stats_quantile_sorted(x, n, 0.1),
                        .p90 = cplab_stats_quantile_sorted(x, n, 0.9),
                        .min = x[0],
                        .max = x[n - 1]};
}

static int check_samples(const double *x, size_t n, int resamples, cplab_diag *d) {
  if (!x || n == 0) CPLAB_FAIL(d, CPLAB_EINVAL, "statistics need at least one sample");
  if (resamples < 100) CPLAB_FAIL(d, CPLAB_EINVAL, "a bootstrap needs at least 100 resamples, got %d", resamples);
  for (size_t i = 0; i < n; i++)
    if (!isfinite(x[i])) CPLAB_FAIL(d, CPLAB_EINVAL, "sample %zu is not a finite number", i);
  return 0;
}

/* The median of n values drawn with replacement from x, using scratch[n]. */
static double resampled_median(const double *x, size_t n, gsl_rng *rng, double *scratch) {
  for (size_t i = 0; i < n; i++) scratch[i] = x[gsl_rng_uniform_int(rng, (unsigned long)n)];
  gsl_sort(scratch, 1, n);
  return gsl_stats_median_from_sorted_data(scratch, 1, n);
}

static gsl_rng *bootstrap_rng(uint64_t seed) {
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  if (rng) gsl_rng_set(rng, cplab_seed_stream(seed, UINT64_C(0xB007)));
  return rng;
}

/* 2.5% and 97.5% points of m bootstrap statistics (sorted in place). */
static void interval(double *boot, int m, double *low, double *high) {
  gsl_sort(boot, 1, (size_t)m);
  *low = gsl_stats_quantile_from_sorted_data(boot, 1, (size_t)m, 0.025);
  *high = gsl_stats_quantile_from_sorted_data(boot, 1, (size_t)m, 0.975);
}

int cplab_stats_summarize(const double *x, size_t n, uint64_t seed, int resamples, cplab_stats *out, cplab_diag *d) {
  int rc = check_samples(x, n, resamples, d);
  if (rc) return rc;
  double *sorted = malloc(sizeof *sorted * n), *scratch = malloc(sizeof *scratch * n);
  double *boot = malloc(sizeof *boot * (size_t)resamples);
  gsl_rng *rng = bootstrap_rng(seed);
  if (!sorted || !scratch || !boot || !rng) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory for %zu samples", n);
  if (!rc) {
    memcpy(sorted, x, sizeof *sorted * n);
    gsl_sort(sorted, 1, n);
    *out = (cplab_stats){.n = n,
                         .median = gsl_stats_median_from_sorted_data(sorted, 1, n),
                         .p99 = gsl_stats_quantile_from_sorted_data(sorted, 1, n, 0.99),
                         .mean = gsl_stats_mean(x, 1, n),
                         .stddev = n > 1 ? gsl_stats_sd(x, 1, n) : 0,
                         .min = sorted[0],
                         .max = sorted[n - 1]};
    for (int b = 0; b < resamples; b++) boot[b] = resampled_median(x, n, rng, scratch);
    interval(boot, resamples, &out->ci_low, &out->ci_high);
  }
  free(sorted), free(scratch), free(boot);
  if (rng) gsl_rng_free(rng);
  return rc;
}

int cplab_stats_ratio(const double *a, size_t na, const double *b, size_t nb, uint64_t seed, int resamples,
                      cplab_ratio *out, cplab_diag *d) {
  int rc = check_samples(a, na, resamples, d);
  if (!rc) rc = check_samples(b, nb, resamples, d);
  if (rc) return rc;
  size_t nmax = na > nb ? na : nb;
  double *scratch = malloc(sizeof *scratch * nmax), *boot = malloc(sizeof *boot * (size_t)resamples);
  double *sa = malloc(sizeof *sa * na), *sb = malloc(sizeof *sb * nb);
  gsl_rng *rng = bootstrap_rng(seed ^ UINT64_C(0x5A710));
  if (!scratch || !boot || !sa || !sb || !rng) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  if (!rc) {
    memcpy(sa, a, sizeof *sa * na), memcpy(sb, b, sizeof *sb * nb);
    gsl_sort(sa, 1, na), gsl_sort(sb, 1, nb);
    double mb = gsl_stats_median_from_sorted_data(sb, 1, nb);
    if (mb <= 0) rc = cplab_diag_set(d, CPLAB_EINVAL, "a ratio needs a positive reference median, got %g", mb);
    if (!rc) out->ratio = gsl_stats_median_from_sorted_data(sa, 1, na) / mb;
    for (int i = 0; !rc && i < resamples; i++) {
      double ra = resampled_median(a, na, rng, scratch), rb = resampled_median(b, nb, rng, scratch);
      boot[i] = rb > 0 ? ra / rb : INFINITY;
    }
    if (!rc) interval(boot, resamples, &out->ci_low, &out->ci_high);
  }
  free(scratch), free(boot), free(sa), free(sb);
  if (rng) gsl_rng_free(rng);
  return rc;
}
