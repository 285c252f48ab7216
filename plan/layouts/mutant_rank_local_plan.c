/* The mutant "mutant-rank-local-plan": a real bug, reproduced to prove the checks (what must
 * catch it: .caught, as cplab/layout.h says). Never use it for results. */
#include "cplab/kv.h"
#include "cplab/layout.h"

/* Rows per rank from this rank's own share instead of the largest one. */
static int64_t rows_per_rank_local(const cplab_layout_env *env, int64_t extent, const cplab_rank_ids *self) {
  return cplab_kv_local_len(extent, self->dcp_rank, env->par.interleave, env->par.dcp);
}

const cplab_layout cplab_layout_mutant_rank_local_plan = {
    .name = "mutant-rank-local-plan",
    .summary = "chunk plan from a rank-local quantity",
    .mutant = 1,
    .reproduces = "rows_per_rank from the deriving rank's own local length instead of the largest shard: the "
                  "ranks derive different chunk plans and all-gather sizes (a hang)",
    .breaks = "plan-identity",
    .needs = "pcp>1 dcp>1",
    .caught = {
        [CPLAB_CATCH_SIM] = "pr56157 0; "
                            "smoke 1; "
                            "mixed 1",
        [CPLAB_CATCH_SIM_CHECK] = "pr56157 0; "
                                  "smoke 1 plan-identity, workspace, conversion, collectives; "
                                  "mixed 1 plan-identity, workspace, conversion, collectives",
        [CPLAB_CATCH_DIFF_RANKS] = "pr56157 0; "
                                   "smoke 1 plan-identity, workspace, conversion, collectives; "
                                   "mixed 1 plan-identity, workspace, conversion, collectives",
        [CPLAB_CATCH_DIFF_VLLM_PLANS] = "pr56157 0; "
                                        "smoke 0; "
                                        "mixed 0",
        [CPLAB_CATCH_DIFF_VLLM_NUMERIC] = "smoke 1 attn_out, attn_lse",
        [CPLAB_CATCH_EXEC_PLANS_ONLY] = "pr56157 0; "
                                        "smoke 1 gathered prefill plan; "
                                        "mixed 1 gathered prefill plan",
    },
    .rows_per_rank = rows_per_rank_local,
};
