/* The numeric pass's sampled rows (numeric.h): chosen among the step's
 * global tokens, then mapped to each rank's local tokens. */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <stdlib.h>

#include "cplab/seed.h"
#include "numeric.h"

/* Draw min(want, n) of the n tokens in pool (ascending stays ascending). */
static int64_t choose(gsl_rng *rng, const int64_t *pool, int64_t n, int64_t want, int64_t *dest) {
  if (want >= n) {
    for (int64_t i = 0; i < n; i++) dest[i] = pool[i];
    return n;
  }
  if (want > 0) gsl_ran_choose(rng, dest, (size_t)want, (void *)pool, (size_t)n, sizeof *pool);
  return want;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Global tokens sampled in the step, ascending. */
static int sample_global(const cplab_step_input *in, const cplab_schedule *sc, int64_t sampled_rows, int64_t **out,
                         int64_t *n, cplab_diag *d) {
  int64_t total = sc->token_offset[sc->num_requests];
  int64_t *decode = malloc(sizeof(int64_t) * (size_t)(total + 1)), *prefill = malloc(sizeof(int64_t) * (size_t)(total + 1));
  int64_t *pick = malloc(sizeof(int64_t) * (size_t)(total + 1));
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  if (!decode || !prefill || !pick || !rng) {
    free(decode), free(prefill), free(pick);
    if (rng) gsl_rng_free(rng);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory sampling %lld tokens", (long long)total);
  }
  int64_t nd = 0, np = 0;
  for (int g = 0; g < sc->num_requests; g++)
    for (int64_t t = sc->token_offset[g]; t < sc->token_offset[g + 1]; t++) {
      if (in->step->requests[g].phase == CPLAB_PHASE_DECODE) decode[nd++] = t;
      else prefill[np++] = t;
    }
  gsl_rng_set(rng, cplab_seed_stream(in->seed, CPLAB_SEED_STREAM_SAMPLE + in->step_index));
  int64_t want_d = (sampled_rows + 1) / 2;
  if (want_d > nd) want_d = nd;
  int64_t want_p = sampled_rows - want_d;
  if (want_p > np) { /* too few prefill tokens: give the rest to decodes */
    want_d += want_p - np;
    want_p = np;
  }
  int64_t got = choose(rng, decode, nd, want_d, pick);
  got += choose(rng, prefill, np, want_p, pick + got);
  qsort(pick, (size_t)got, sizeof *pick, cmp_i64);
  gsl_rng_free(rng);
  free(decode);
  free(prefill);
  *out = pick;
  *n = got;
  return 0;
}

int sim_numeric_sample(const cplab_step_input *in, const cplab_rank_plan *rp, int64_t sampled_rows, int64_t **tokens,
                       int64_t *n, cplab_diag *d) {
  *tokens = NULL;
  *n = 0;
  int64_t *global = NULL, ng = 0;
  int rc = sample_global(in, &rp->sched, sampled_rows, &global, &ng, d);
  if (rc) return rc;
  int64_t *local = malloc(sizeof(int64_t) * (size_t)(ng + 1)), m = 0;
  if (!local) {
    free(global);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  }
  /* Rows are in local token order; a row's tokens are a contiguous run of
   * its request's global tokens. */
  for (int i = 0; i < rp->split.num_rows; i++) {
    const cplab_row *row = &rp->split.rows[i];
    if (row->dummy || row->len == 0) continue;
    int64_t g0 = rp->sched.token_offset[row->req] + row->start, g1 = g0 + row->len;
    for (int64_t j = 0; j < ng; j++)
      if (global[j] >= g0 && global[j] < g1) local[m++] = row->token_offset + (global[j] - g0);
  }
  free(global);
  qsort(local, (size_t)m, sizeof *local, cmp_i64);
  if (m == 0) {
    free(local);
    local = NULL;
  }
  *tokens = local;
  *n = m;
  return 0;
}
