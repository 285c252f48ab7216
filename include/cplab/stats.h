/* include/cplab/stats.h: the one statistics module of the benchmarks and the
 * diff (issue 22: median and quantile summaries had six homes), with GSL:
 * median, p99, mean and spread of repeated timings, a
 * percentile-bootstrap 95% confidence interval for the median, and ratios of
 * two configurations measured in the same run with their own bootstrap
 * interval. Deterministic: the bootstrap draws from GSL's mt19937 on a seed
 * the caller gives (so a report can be reproduced from its inputs). */
#ifndef CPLAB_STATS_H
#define CPLAB_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "cplab/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cplab_stats {
  size_t n;
  double median, p99, mean, stddev, min, max;
  double ci_low, ci_high; /* 95% percentile-bootstrap interval of the median */
} cplab_stats;

/* Quantile q in [0, 1] of n sorted values, by linear interpolation between
 * order statistics (GSL's definition: (n - 1)·q). */
double cplab_stats_quantile_sorted(const double *sorted, size_t n, double q);
/* The median of x[0 .. n), sorting x in place (NAN when n == 0). */
double cplab_stats_median(double *x, size_t n);
/* The worse of an error so far and a new one: the larger, and NaN once
 * either is NaN (so that one NaN anywhere fails a check; `if (!(v <= w)) w
 * = v` lets a later finite error replace a NaN). */
double cplab_stats_worst(double worst, double v);

/* The spread of repeated timings the benchmark tables show (nccl-tests'
 * style): median, 10th and 90th percentiles (cplab_stats_quantile_sorted)
 * and the extremes, in the samples' unit. */
typedef struct cplab_spread {
  double median, p10, p90, min, max;
} cplab_spread;
/* The spread of x[0 .. n), n >= 1, sorting x in place. */
cplab_spread cplab_stats_spread(double *x, size_t n);

/* Summary of n samples (n >= 1; the samples are not modified) with a
 * bootstrap of `resamples` draws (>= 100; 2000 is a good default). With n = 1
 * the interval is the single value. CPLAB_EINVAL on bad arguments or a
 * non-finite sample. */
int cplab_stats_summarize(const double *x, size_t n, uint64_t seed, int resamples, cplab_stats *out, cplab_diag *d);

/* Ratio of the medians of a over b (e.g. a layout's TTFT against tp's),
 * with a 95% bootstrap interval from resampling both independently. */
typedef struct cplab_ratio {
  double ratio, ci_low, ci_high;
} cplab_ratio;
int cplab_stats_ratio(const double *a, size_t na, const double *b, size_t nb, uint64_t seed, int resamples,
                      cplab_ratio *out, cplab_diag *d);

#ifdef __cplusplus
}
#endif

#endif
