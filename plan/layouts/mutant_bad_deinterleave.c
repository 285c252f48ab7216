/* The mutant "mutant-bad-deinterleave": a real bug, reproduced to prove the checks (what must
 * catch it: .caught, as cplab/layout.h says). Never use it for results. */
#include "cplab/kv.h"
#include "cplab/layout.h"
#include "cplab/plan.h"

/* The I = 1 deinterleave formula used with any interleave. */
static int64_t deinterleave_no_interleave(const cplab_layout_env *env, const cplab_indexer_plan *plan, int region,
                                          int64_t t) {
  int W = env->par.dcp;
  int64_t padded_total = plan->chunks[plan->region_chunk[region]].padded_total;
  return (t % W) * padded_total + plan->padded_cu[region] + t / W;
}

const cplab_layout cplab_layout_mutant_bad_deinterleave = {
    .name = "mutant-bad-deinterleave",
    .summary = "the interleave-1 deinterleave index with any interleave",
    .mutant = 1,
    .reproduces = "the interleave-1 deinterleave index used with any interleave: the gathered indexer keys are "
                  "out of logical order when I > 1",
    .breaks = "indexer-gather",
    .needs = "pcp>1 dcp>1 interleave>1",
    .caught = {
        [CPLAB_CATCH_SIM] = "pr56157 0; "
                            "smoke 0; "
                            "mixed 0",
        [CPLAB_CATCH_SIM_CHECK] = "pr56157 0; "
                                  "smoke 0; "
                                  "mixed 1 indexer-gather",
        [CPLAB_CATCH_DIFF_RANKS] = "pr56157 0; "
                                   "smoke 0; "
                                   "mixed 1 indexer-gather",
        [CPLAB_CATCH_DIFF_VLLM_PLANS] = "pr56157 0; "
                                        "smoke 0; "
                                        "mixed 0",
        [CPLAB_CATCH_DIFF_VLLM_NUMERIC] = "smoke 0",
        [CPLAB_CATCH_EXEC_PLANS_ONLY] = "pr56157 0; "
                                        "smoke 0; "
                                        "mixed 0",
    },
    .departs.deinterleave = deinterleave_no_interleave,
};
