/* tests/unit/testutil.h: what the cmocka test programs share.
 *
 * Property tests draw their cases from GSL's mt19937 seeded by
 * CPLAB_TEST_SEED (default: a fixed seed, so runs are reproducible); a failing
 * case prints the seed and trial so it can be replayed alone with
 *   CPLAB_TEST_SEED=<seed> CPLAB_TEST_TRIAL=<trial> ./tests/unit/<program>
 */
#ifndef CPLAB_TESTUTIL_H
#define CPLAB_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the three headers above first. */
#include <cmocka.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CPLAB_TEST_DEFAULT_SEED 20261129UL

/* A property run: trials drawn from one seeded stream, or one replayed trial. */
typedef struct prop_run {
  unsigned long seed;
  long only_trial; /* -1: all */
  gsl_rng *rng;
} prop_run;

static inline void prop_begin(prop_run *p) {
  const char *s = getenv("CPLAB_TEST_SEED"), *t = getenv("CPLAB_TEST_TRIAL");
  p->seed = s ? strtoul(s, NULL, 10) : CPLAB_TEST_DEFAULT_SEED;
  p->only_trial = t ? strtol(t, NULL, 10) : -1;
  p->rng = gsl_rng_alloc(gsl_rng_mt19937);
  assert_non_null(p->rng);
}

/* Seed the stream for one trial (each trial is independent, so any one can be
 * replayed); returns 0 when the trial is to be skipped. */
static inline int prop_trial(prop_run *p, long trial) {
  if (p->only_trial >= 0 && trial != p->only_trial) return 0;
  gsl_rng_set(p->rng, p->seed * 1000003UL + (unsigned long)trial);
  return 1;
}

static inline void prop_end(prop_run *p) { gsl_rng_free(p->rng); }

/* Uniform integer in [lo, hi]. */
static inline long prop_int(prop_run *p, long lo, long hi) {
  return lo + (long)gsl_rng_uniform_int(p->rng, (unsigned long)(hi - lo + 1));
}

/* Fail the current cmocka test with the replay line. */
#define prop_fail(p, trial, ...)                                                                    \
  do {                                                                                              \
    print_error("property failed (replay: CPLAB_TEST_SEED=%lu CPLAB_TEST_TRIAL=%ld): ", (p)->seed, \
                (long)(trial));                                                                     \
    print_error(__VA_ARGS__);                                                                       \
    print_error("\n");                                                                              \
    fail();                                                                                         \
  } while (0)

#define prop_check(p, trial, cond, ...)            \
  do {                                             \
    if (!(cond)) prop_fail(p, trial, __VA_ARGS__); \
  } while (0)

#endif
