/* tests/unit/sweep.h: random steps for property tests (shared by the
 * invariant sweep and the trace round trip). P in {1,2,3,4,8}, TP in {1,2},
 * D in {1, P, TP·P}, I in {1,2,4,64}, B = 64, short and long prefills,
 * chunked prefills and decodes; draws from a prop_run (testutil.h). */
#ifndef CPLAB_TEST_SWEEP_H
#define CPLAB_TEST_SWEEP_H

#include "cplab/plan.h"
#include "testutil.h"

#define SWEEP_MAX_REQS 8

typedef struct sweep_case {
  cplab_parallel par;
  cplab_request reqs[SWEEP_MAX_REQS];
  size_t n;
} sweep_case;

static inline void sweep_random_case(prop_run *pr, sweep_case *c) {
  static const int pcps[] = {1, 2, 3, 4, 8}, ils[] = {1, 2, 4, 64}, mmls[] = {256, 1024, 2048};
  cplab_parallel *p = &c->par;
  cplab_parallel_defaults(p);
  p->pcp = pcps[prop_int(pr, 0, 4)];
  p->tp = (int)prop_int(pr, 1, 2);
  long dcp_pick = prop_int(pr, 0, 2);
  p->dcp = dcp_pick == 0 ? 1 : dcp_pick == 1 ? p->pcp : p->tp * p->pcp;
  if (p->pcp == 1 && p->tp % p->dcp) p->dcp = 1;
  p->interleave = ils[prop_int(pr, 0, 3)];
  p->block_size = 64;
  p->max_model_len = mmls[prop_int(pr, 0, 2)];
  p->indexer_max_logits_mb = prop_int(pr, 0, 1) ? 1 : 512;
  p->graph_mode = (cplab_graph_mode)prop_int(pr, 0, 3);
  int64_t mml = p->max_model_len;
  c->n = (size_t)prop_int(pr, 1, SWEEP_MAX_REQS);
  for (size_t g = 0; g < c->n; g++) {
    cplab_request *q = &c->reqs[g];
    q->id = (int64_t)g;
    double u = gsl_rng_uniform(pr->rng);
    if (u < 0.3) {
      q->phase = CPLAB_PHASE_DECODE;
      q->new_tokens = 1;
      q->num_computed = prop_int(pr, 1, mml - 1);
    } else {
      q->phase = CPLAB_PHASE_PREFILL;
      q->new_tokens = u < 0.6 ? prop_int(pr, 1, 4 * p->pcp) : prop_int(pr, 1, mml);
      q->num_computed = prop_int(pr, 0, 3) ? 0 : prop_int(pr, 0, mml - q->new_tokens);
    }
  }
}

#endif
