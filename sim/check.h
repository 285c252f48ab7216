/* sim/check.h: the invariants of shared/reference/vllm-pcp-dcp.md §10.1, checked
 * over the plans that every rank of a step derived on its own. Index maps are
 * exercised by simulating the data movement with tags (region, token): each
 * rank's shard is filled from the ownership rules, gathered rank-major, and
 * every map must find the right tag. Numeric invariants (decode combine
 * values, MoE equality) belong to the numeric reference and are not here. */
#ifndef CPLAB_SIM_CHECK_H
#define CPLAB_SIM_CHECK_H

#include <stdint.h>

#include "cplab/plan.h"

typedef enum sim_rule {
  SIM_RULE_GROUPS = 0,
  SIM_RULE_OWNERSHIP,
  SIM_RULE_PER_BLOCK,
  SIM_RULE_QUERY_PARTITION,
  SIM_RULE_ROW_ORDER,
  SIM_RULE_SCHEDULE,
  SIM_RULE_PLAN,
  SIM_RULE_WORKSPACE,
  SIM_RULE_INDEXER_GATHER,
  SIM_RULE_INDEXER_BOUNDS,
  SIM_RULE_CONVERSION,
  SIM_RULE_MOE,
  SIM_RULE_COLLECTIVES,
  SIM_RULE_EMPTY_CONTEXT,
  SIM_RULE_COUNT
} sim_rule;

const char *sim_rule_name(sim_rule r);

#define SIM_CHECK_KEEP 8

typedef struct sim_check {
  int64_t checks;                 /* assertions evaluated */
  int64_t violations;
  int64_t by_rule[SIM_RULE_COUNT];
  int kept;
  char first[SIM_CHECK_KEEP][320]; /* the first violations, with their meaning */
} sim_check;

/* Check one step: plans[r] is rank r's own derivation (all ranks, derived
 * with CPLAB_PLAN_TOKEN_MAPS). topk_seed seeds the random top-k rows that
 * exercise the conversion. Returns 0, or a negative code when the check
 * itself could not run (out of memory). */
int sim_check_step(const cplab_step_input *in, cplab_rank_plan *const *plans, int world, uint64_t topk_seed,
                   sim_check *out, cplab_diag *d);

/* The plan builder of a layout must reject a prefill region of extent 0. */
int sim_check_empty_context(const cplab_layout *layout, const cplab_parallel *par, const cplab_model *model,
                            sim_check *out, cplab_diag *d);

#endif
