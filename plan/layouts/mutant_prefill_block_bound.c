/* The mutant "mutant-prefill-block-bound": a real bug, reproduced to prove the checks (what must
 * catch it: .caught, as cplab/layout.h says). Never use it for results. */
#include "cplab/kv.h"
#include "cplab/layout.h"
#include "cplab/plan.h"

/* The conversion before PR 56157: block-table bound and remote owner applied
 * to prefill rows too, so remote tokens of the gathered workspace became -1. */
static int32_t convert_prefill_block_bound(const cplab_layout_env *env, const cplab_prefill_plan *plan, int region,
                                           int32_t tok, int dcp_rank) {
  int I = env->par.interleave, D = env->par.dcp, B = env->par.block_size;
  if (tok < 0 || cplab_kv_owner(tok, I, D) != dcp_rank) return -1;
  if (cplab_kv_local_idx(tok, I, D) / B >= env->max_blocks) return -1;
  return cplab_layout_vllm_convert_prefill(env, plan, region, tok, dcp_rank);
}

const cplab_layout cplab_layout_mutant_prefill_block_bound = {
    .name = "mutant-prefill-block-bound",
    .summary = "the pre-fix top-k conversion",
    .mutant = 1,
    .reproduces = "the top-k conversion before PR 56157: the block-table bound and the remote-owner rule "
                  "applied to prefill rows, so remote tokens of the gathered workspace become -1",
    .breaks = "conversion",
    .needs = "pcp>1 dcp>1",
    .caught = {
        [CPLAB_CATCH_SIM] = "pr56157 0; "
                            "smoke 0; "
                            "mixed 0",
        [CPLAB_CATCH_SIM_CHECK] = "pr56157 1 conversion; "
                                  "smoke 1 conversion; "
                                  "mixed 1 conversion",
        [CPLAB_CATCH_DIFF_RANKS] = "pr56157 1 conversion; "
                                   "smoke 1 conversion; "
                                   "mixed 1 conversion",
        [CPLAB_CATCH_DIFF_VLLM_PLANS] = "pr56157 0; "
                                        "smoke 0; "
                                        "mixed 0",
        [CPLAB_CATCH_DIFF_VLLM_NUMERIC] = "smoke 1 attn_out, attn_lse",
        [CPLAB_CATCH_EXEC_PLANS_ONLY] = "pr56157 0; "
                                        "smoke 0; "
                                        "mixed 0",
    },
    .departs.convert_prefill = convert_prefill_block_bound,
};
