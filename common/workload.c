/* Workload generator: a seeded GSL mt19937 stream expands a cplab_generator
 * into explicit steps. Same (generator, layout, seed) -> same steps, on every
 * machine: only integer draws and GSL's documented samplers are used, and each
 * draw is clamped before rounding. */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>

#include "cplab/scenario.h"
#include "cplab/seed.h"

static int64_t clamp_round(double x, int64_t lo, int64_t hi) {
  if (!(x >= (double)lo)) return lo; /* also NaN */
  if (x >= (double)hi) return hi;
  return (int64_t)llround(x);
}

static int64_t draw(gsl_rng *r, const cplab_dist *dist) {
  switch (dist->kind) {
    case CPLAB_DIST_CONST: return dist->value;
    case CPLAB_DIST_UNIFORM: {
      /* Ranges are at most max_model_len wide, far below mt19937's 2^32. */
      uint64_t span = (uint64_t)(dist->max - dist->min) + 1;
      return dist->min + (int64_t)gsl_rng_uniform_int(r, (unsigned long)span);
    }
    case CPLAB_DIST_LOGNORMAL:
      return clamp_round(gsl_ran_lognormal(r, dist->mu, dist->sigma), dist->min, dist->max);
    case CPLAB_DIST_EXPONENTIAL: return clamp_round(gsl_ran_exponential(r, dist->mean), dist->min, dist->max);
  }
  return dist->min;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

void cplab_steps_free(cplab_step *steps, size_t num_steps) {
  if (!steps) return;
  for (size_t i = 0; i < num_steps; i++) free(steps[i].requests);
  free(steps);
}

int cplab_workload_generate(const cplab_generator *g, const cplab_parallel *p, uint64_t seed, cplab_step **steps,
                            size_t *num_steps, cplab_diag *d) {
  *steps = NULL;
  *num_steps = 0;
  if (g->steps < 1 || g->steps > CPLAB_MAX_STEPS)
    CPLAB_FAIL(d, CPLAB_ERANGE, "workload.generator.steps: must be in [1, %d]", CPLAB_MAX_STEPS);
  if (g->requests.max - g->requests.min >= (int64_t)UINT32_MAX ||
      g->context.max - g->context.min >= (int64_t)UINT32_MAX ||
      g->prefill_tokens.max - g->prefill_tokens.min >= (int64_t)UINT32_MAX)
    CPLAB_FAIL(d, CPLAB_ERANGE, "workload.generator: a uniform range is wider than 2^32");
  gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
  cplab_step *out = calloc((size_t)g->steps, sizeof *out);
  if (!r || !out) {
    gsl_rng_free(r);
    free(out);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory generating %lld steps", (long long)g->steps);
  }
  gsl_rng_set(r, cplab_seed_stream(seed, 0));
  int64_t mml = p->max_model_len, next_id = 0;
  for (int64_t s = 0; s < g->steps; s++) {
    int64_t n = max64(1, min64(draw(r, &g->requests), CPLAB_MAX_REQUESTS_PER_STEP));
    cplab_request *reqs = calloc((size_t)n, sizeof *reqs);
    if (!reqs) {
      cplab_steps_free(out, (size_t)s);
      gsl_rng_free(r);
      CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory generating step %lld", (long long)s);
    }
    for (int64_t i = 0; i < n; i++) {
      cplab_request *q = &reqs[i];
      q->id = next_id++ % ((int64_t)CPLAB_MAX_REQUEST_ID + 1);
      /* A decode needs one computed token and room for its 1 + num_spec_tokens new ones (MTP). */
      int64_t dq = 1 + p->num_spec_tokens;
      int decode = mml >= 1 + dq && gsl_rng_uniform(r) < g->decode_fraction;
      if (decode) {
        /* Near max_model_len the scheduler drops the drafts that would not
         * fit: a context past mml - dq keeps only mml - num_computed tokens. */
        q->phase = CPLAB_PHASE_DECODE;
        q->num_computed = max64(1, min64(draw(r, &g->context), mml - 1));
        q->new_tokens = min64(dq, mml - q->num_computed);
      } else {
        q->phase = CPLAB_PHASE_PREFILL;
        q->new_tokens = max64(1, min64(draw(r, &g->prefill_tokens), mml));
        int chunked = gsl_rng_uniform(r) < g->chunked_fraction;
        int64_t ctx = chunked ? draw(r, &g->context) : 0;
        q->num_computed = max64(0, min64(ctx, mml - q->new_tokens));
      }
    }
    out[s].num_requests = (size_t)n;
    out[s].requests = reqs;
  }
  gsl_rng_free(r);
  *steps = out;
  *num_steps = (size_t)g->steps;
  return 0;
}
