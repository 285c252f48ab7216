/* The mutant "mutant-empty-context": a real bug, reproduced to prove the checks (what must
 * catch it: .caught, as cplab/layout.h says). Never use it for results. */
#include "cplab/kv.h"
#include "cplab/layout.h"

/* The indexer plan builder that silently accepted an empty context. */
static int accept_any_extent(const cplab_layout_env *env, int64_t extent, cplab_diag *d) {
  (void)env, (void)extent, (void)d;
  return 0;
}

const cplab_layout cplab_layout_mutant_empty_context = {
    .name = "mutant-empty-context",
    .summary = "accepts a region of extent 0",
    .mutant = 1,
    .reproduces = "a plan builder that accepts a prefill region of extent 0, which must be rejected (§10.2)",
    .breaks = "empty-context",
    .needs = "pcp>1 dcp>1",
    .caught = {
        [CPLAB_CATCH_SIM] = "pr56157 0; "
                            "smoke 0; "
                            "mixed 0",
        [CPLAB_CATCH_SIM_CHECK] = "pr56157 1 empty-context; "
                                  "smoke 1 empty-context; "
                                  "mixed 1 empty-context",
        [CPLAB_CATCH_DIFF_RANKS] = "pr56157 1 empty-context; "
                                   "smoke 1 empty-context; "
                                   "mixed 1 empty-context",
        [CPLAB_CATCH_DIFF_VLLM_PLANS] = "pr56157 0; "
                                        "smoke 0; "
                                        "mixed 0",
        [CPLAB_CATCH_DIFF_VLLM_NUMERIC] = "smoke 0",
        [CPLAB_CATCH_EXEC_PLANS_ONLY] = "pr56157 0; "
                                        "smoke 0; "
                                        "mixed 0",
    },
    .check_extent = accept_any_extent,
};
