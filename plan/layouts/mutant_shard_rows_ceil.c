/* The mutant "mutant-shard-rows-ceil": a real bug, reproduced to prove the checks (what must
 * catch it: .caught, as cplab/layout.h says). Never use it for results. */
#include "cplab/kv.h"
#include "cplab/layout.h"

/* ceil(extent / W) rows per rank: too few for rank 0 when I > 1. */
static int64_t rows_per_rank_ceil(const cplab_layout_env *env, int64_t extent, const cplab_rank_ids *self) {
  (void)self;
  return (extent + env->par.dcp - 1) / env->par.dcp;
}

const cplab_layout cplab_layout_mutant_shard_rows_ceil = {
    .name = "mutant-shard-rows-ceil",
    .summary = "ceil(extent / W) rows per rank",
    .mutant = 1,
    .reproduces = "ceil(extent / W) rows per rank: too few for rank 0 when I > 1, so its shard runs into the "
                  "next region's rows",
    .breaks = "workspace",
    .needs = "pcp>1 dcp>1 interleave>1",
    .caught = {
        [CPLAB_CATCH_SIM] = "pr56157 0; "
                            "smoke 0; "
                            "mixed 0",
        [CPLAB_CATCH_SIM_CHECK] = "pr56157 0; "
                                  "smoke 0; "
                                  "mixed 1 plan-identity, workspace, conversion",
        [CPLAB_CATCH_DIFF_RANKS] = "pr56157 0; "
                                   "smoke 0; "
                                   "mixed 1 plan-identity, workspace, conversion",
        [CPLAB_CATCH_DIFF_VLLM_PLANS] = "pr56157 0; "
                                        "smoke 0; "
                                        "mixed 0",
        [CPLAB_CATCH_DIFF_VLLM_NUMERIC] = "smoke 0",
        [CPLAB_CATCH_EXEC_PLANS_ONLY] = "pr56157 0; "
                                        "smoke 0; "
                                        "mixed 0",
    },
    .rows_per_rank = rows_per_rank_ceil,
};
