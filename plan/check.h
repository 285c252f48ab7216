/* plan/check.h: the invariants of shared/reference/vllm-pcp-dcp.md §10.1, checked
 * over the plans that every rank of a step derived on its own. Index maps are
 * exercised by simulating the data movement with tags (region, token): each
 * rank's shard is filled from the ownership rules, gathered rank-major, and
 * every map must find the right tag. Numeric invariants (decode combine
 * values, MoE equality) belong to the numeric reference and are not here. */
#ifndef CPLAB_PLAN_CHECK_H
#define CPLAB_PLAN_CHECK_H

#include <stdint.h>

#include "cplab/plan.h"

typedef enum cplab_check_rule {
  CPLAB_RULE_GROUPS = 0,
  CPLAB_RULE_OWNERSHIP,
  CPLAB_RULE_PER_BLOCK,
  CPLAB_RULE_QUERY_PARTITION,
  CPLAB_RULE_ROW_ORDER,
  CPLAB_RULE_SCHEDULE,
  CPLAB_RULE_PLAN,
  CPLAB_RULE_WORKSPACE,
  CPLAB_RULE_INDEXER_GATHER,
  CPLAB_RULE_INDEXER_BOUNDS,
  CPLAB_RULE_CONVERSION,
  CPLAB_RULE_MOE,
  CPLAB_RULE_COLLECTIVES,
  CPLAB_RULE_EMPTY_CONTEXT,
  CPLAB_RULE_COUNT
} cplab_check_rule;

const char *cplab_check_rule_name(cplab_check_rule r);

#define CPLAB_CHECK_KEEP 8

typedef struct cplab_check {
  int64_t checks;                 /* assertions evaluated */
  int64_t violations;
  int64_t by_rule[CPLAB_RULE_COUNT];
  int kept;
  char first[CPLAB_CHECK_KEEP][320]; /* the first violations, with their meaning */
} cplab_check;

/* Check one step: plans[r] is rank r's own derivation (all ranks, derived
 * with CPLAB_PLAN_TOKEN_MAPS). topk_seed seeds the random top-k rows that
 * exercise the conversion. Returns 0, or a negative code when the check
 * itself could not run (out of memory). */
int cplab_check_step(const cplab_step_input *in, cplab_rank_plan *const *plans, int world, uint64_t topk_seed,
                   cplab_check *out, cplab_diag *d);

/* The plan builder of a layout must reject a prefill region of extent 0. */
int cplab_check_empty_context(const cplab_layout *layout, const cplab_parallel *par, const cplab_model *model,
                            cplab_check *out, cplab_diag *d);

#endif
