/* The mutant "mutant-no-short-replication": a real bug, reproduced to prove the checks (what must
 * catch it: .caught, as cplab/layout.h says). Never use it for results. */
#include "cplab/kv.h"
#include "cplab/layout.h"

/* Issue #53573: short prefills split like long ones, so some ranks get no row. */
static int replicated_decodes_only(const cplab_layout_env *env, int64_t q, int is_prefill) {
  (void)q;
  return !is_prefill || env->par.pcp == 1;
}

const cplab_layout cplab_layout_mutant_no_short_replication = {
    .name = "mutant-no-short-replication",
    .summary = "short prefills are not replicated",
    .mutant = 1,
    .reproduces = "issue #53573: a short prefill ((2P-1)·ceil(q/2P) >= q) split like a long one under DCP, so a"
                  " rank holds no row of it and skips a collective (a hang)",
    .breaks = "query-partition",
    .needs = "pcp>1 dcp>1",
    .caught = {
        [CPLAB_CATCH_SIM] = "pr56157 0; "
                            "smoke 0; "
                            "mixed 1",
        [CPLAB_CATCH_SIM_CHECK] = "pr56157 1 empty-context; "
                                  "smoke 1 query-partition, empty-context; "
                                  "mixed 1 query-partition, plan-identity, collectives, empty-context",
        [CPLAB_CATCH_DIFF_RANKS] = "pr56157 1 empty-context; "
                                   "smoke 1 query-partition, empty-context; "
                                   "mixed 1 query-partition, plan-identity, collectives, empty-context",
        [CPLAB_CATCH_DIFF_VLLM_PLANS] = "pr56157 0; "
                                        "smoke 0; "
                                        "mixed 0",
        [CPLAB_CATCH_DIFF_VLLM_NUMERIC] = "smoke 1 topk, topk_converted, topk_scores, kth_score, sampled_tokens, "
                                          "attn_out, attn_lse, topk_valid",
        [CPLAB_CATCH_EXEC_PLANS_ONLY] = "pr56157 0; "
                                        "smoke 0; "
                                        "mixed 1 gathered prefill plan",
    },
    .replicated = replicated_decodes_only,
};
