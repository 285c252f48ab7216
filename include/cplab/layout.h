/* cplab/layout.h: layouts as plugins.
 *
 * A layout decides how a step is cut over PCP ranks, how the gathered prefill
 * workspace is laid out and chunked, how indexer keys are de-interleaved and
 * how top-k indices are converted into workspace rows or cache slots. It is an
 * ops table in one file under plan/layouts/; every op a layout leaves NULL
 * takes the vLLM behaviour (cplab_layout_vllm_*). Ops receive only what one
 * rank can know: the shared environment and, where noted, its own ids.
 * Mutants are layouts that reproduce real bugs, flagged so that tools can
 * refuse them where a correct layout is required. docs/layouts.md shows how
 * to write one.
 */
#ifndef CPLAB_LAYOUT_H
#define CPLAB_LAYOUT_H

#include <stdint.h>
#include <stdio.h>

#include "cplab/error.h"
#include "cplab/parallel.h"
#include "cplab/ranks.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What every op may read: the layout of the run and the budgets (§4.1, §4.3). */
typedef struct cplab_layout_env {
  cplab_parallel par;
  int64_t max_gathered_rows;  /* FlashMLA gathered workspace: 5·max_model_len rows */
  int64_t indexer_key_rows;   /* indexer workspace: 40·max_model_len key rows */
  int64_t max_logits_bytes;   /* indexer logits budget (VLLM_SPARSE_INDEXER_MAX_LOGITS_MB) */
  int max_blocks;             /* block-table width: logical blocks of B·D tokens */
} cplab_layout_env;

void cplab_layout_env_init(cplab_layout_env *env, const cplab_parallel *par);

struct cplab_prefill_plan;
struct cplab_indexer_plan;

/* The maps over the gathered arrangement (§4.2, §4.3, §5.2). */
typedef enum cplab_layout_map {
  CPLAB_MAP_WORKSPACE_ROW = 0, /* gathered workspace row of a token of a region */
  CPLAB_MAP_DEINTERLEAVE,      /* gathered indexer-key row of a token of a region */
  CPLAB_MAP_CONVERT_PREFILL,   /* a prefill row's top-k entry into the workspace */
  CPLAB_MAP_CONVERT_DECODE,    /* a decode row's top-k entry into the local cache */
} cplab_layout_map;

/* A layout's own maps, where it departs from the arrangement (NULL: it does not). */
typedef struct cplab_layout_maps {
  /* §4.2: workspace row of request-relative token t of region k of its chunk. */
  int64_t (*workspace_row)(const cplab_layout_env *env, const struct cplab_prefill_plan *plan, int region,
                           int64_t t);
  /* §4.3: row of the gathered rank-major indexer keys (of the region's
   * chunk) that holds request-relative token t of region r. */
  int64_t (*deinterleave)(const cplab_layout_env *env, const struct cplab_indexer_plan *plan, int region, int64_t t);
  /* §5.2: one converted top-k entry of a prefill row of region (-1 = none). */
  int32_t (*convert_prefill)(const cplab_layout_env *env, const struct cplab_prefill_plan *plan, int region,
                             int32_t tok, int dcp_rank);
  /* §5.2: one converted top-k entry of a decode row through its block-table row. */
  int32_t (*convert_decode)(const cplab_layout_env *env, const int32_t *block_row, int max_blocks, int32_t tok,
                            int dcp_rank);
} cplab_layout_maps;

/* The commands of the catalogue of mutants, in its column order. */
typedef enum cplab_layout_catch {
  CPLAB_CATCH_SIM = 0,           /* cplab-sim: the ranks' plan digests */
  CPLAB_CATCH_SIM_CHECK,         /* cplab-sim --check: the rules with violations */
  CPLAB_CATCH_DIFF_RANKS,        /* cplab-diff --ranks of the run's trace: the rules reported */
  CPLAB_CATCH_DIFF_VLLM_PLANS,   /* cplab-diff of the vllm layout's trace and the run's: the datasets */
  CPLAB_CATCH_DIFF_VLLM_NUMERIC, /* the same of two --numeric runs */
  CPLAB_CATCH_EXEC_PLANS_ONLY,   /* cplab-exec --plans-only: what the plan consensus names */
  CPLAB_CATCH_COUNT
} cplab_layout_catch;

typedef struct cplab_layout {
  const char *name;
  const char *summary;   /* one line */
  int mutant;            /* 1: reproduces a bug; must be caught by the checks */
  /* A mutant declares, in its own file, what must catch it; tests/cli/mutants.sh
   * and tests/unit/test_invariants.c run every claim, tests/exec/exec_consensus.sh
   * the consensus's under mpirun, and README.md's catalogue is rendered from it
   * (cplab-sim --list-mutants, tools/mutants-table.sh). A correct layout leaves
   * all of these NULL. */
  const char *reproduces; /* the real bug, one sentence */
  const char *breaks;     /* the rule of plan/check.c that must catch it (cplab_check_rule_name) */
  const char *needs;      /* where it can show: space-separated pcp>1, dcp>1, interleave>1 */
  /* Per command of the catalogue: "SCENARIO EXIT [NAMES]; ...", the command's
   * exit on each built-in scenario and, for 1, everything it names (exactly). */
  const char *caught[CPLAB_CATCH_COUNT];

  /* Decisions. The plans follow from these, and so do the gathered
   * arrangement (rank-major: the owner's slice, the region's start, the local
   * index; §4.2, §4.3) and every map over it, by dispatch: the conversion of a
   * prefill row is its token's workspace row, the decode conversion is the
   * block table's slot. No map is a separate answer that could disagree with
   * another. */
  /* §3.2: is a request with q new tokens replicated on every PCP rank? */
  int (*replicated)(const cplab_layout_env *env, int64_t q, int is_prefill);
  /* §4.1: rows each DCP rank contributes to a region of this extent. self is
   * the deriving rank (a correct layout must not depend on it). */
  int64_t (*rows_per_rank)(const cplab_layout_env *env, int64_t extent, const cplab_rank_ids *self);
  /* §10.2: accept a region of this extent, or fail with a message. */
  int (*check_extent)(const cplab_layout_env *env, int64_t extent, cplab_diag *d);

  /* Departures from the gathered arrangement: each replaces one map with the
   * layout's own, and the maps derived from it follow (a workspace_row of its
   * own is also the prefill conversion's). A correct layout sets none; mutants
   * use them to reproduce a wrong map. cplab-exec's kernels express the
   * arrangement only: it refuses a conversion that departs, naming the layout
   * and the op (cplab_layout_departure), rather than run the layout's rule on
   * the host, which the diff would then compare with itself. */
  cplab_layout_maps departs;
} cplab_layout;

/* Registry: NULL-terminated, vllm first, the other correct layouts, then the
 * mutants; generated from the files of plan/layouts/ (one a layout). */
const cplab_layout *const *cplab_layouts(void);
const cplab_layout *cplab_layout_find(const char *name);

/* The command of a catalogue column as the catalogue names it ("cplab-sim --check"). */
const char *cplab_layout_catch_name(cplab_layout_catch c);
/* The catalogue of mutants as the mutants declare it, tab-separated: a header
 * line "# mutant, bug, breaks, needs, then the commands", one line a mutant. */
int cplab_layout_catalogue_write(FILE *out);

/* NULL when the layout's map m is the arrangement's, derived from its
 * decisions (what cplab-exec's kernels express); else the op it departs with:
 * "convert_prefill", or "workspace_row" for a prefill conversion that follows
 * a workspace row of the layout's own. */
const char *cplab_layout_departure(const cplab_layout *l, cplab_layout_map m);

/* The vLLM behaviour each op falls back to. */
int cplab_layout_vllm_replicated(const cplab_layout_env *env, int64_t q, int is_prefill);
int64_t cplab_layout_vllm_rows_per_rank(const cplab_layout_env *env, int64_t extent, const cplab_rank_ids *self);
int cplab_layout_vllm_check_extent(const cplab_layout_env *env, int64_t extent, cplab_diag *d);
int64_t cplab_layout_vllm_workspace_row(const cplab_layout_env *env, const struct cplab_prefill_plan *plan, int region,
                                        int64_t t);
int64_t cplab_layout_vllm_deinterleave(const cplab_layout_env *env, const struct cplab_indexer_plan *plan,
                                       int region, int64_t t);
int32_t cplab_layout_vllm_convert_prefill(const cplab_layout_env *env, const struct cplab_prefill_plan *plan,
                                          int region, int32_t tok, int dcp_rank);
int32_t cplab_layout_vllm_convert_decode(const cplab_layout_env *env, const int32_t *block_row, int max_blocks,
                                         int32_t tok, int dcp_rank);

/* Dispatch through a layout: its decisions and departures, vLLM's for NULL
 * ops, and the maps derived from them (convert_prefill from workspace_row). */
int cplab_layout_replicated(const cplab_layout *l, const cplab_layout_env *env, int64_t q, int is_prefill);
int64_t cplab_layout_rows_per_rank(const cplab_layout *l, const cplab_layout_env *env, int64_t extent,
                                   const cplab_rank_ids *self);
int cplab_layout_check_extent(const cplab_layout *l, const cplab_layout_env *env, int64_t extent, cplab_diag *d);
int64_t cplab_layout_workspace_row(const cplab_layout *l, const cplab_layout_env *env,
                                   const struct cplab_prefill_plan *plan, int region, int64_t t);
int64_t cplab_layout_deinterleave(const cplab_layout *l, const cplab_layout_env *env,
                                  const struct cplab_indexer_plan *plan, int region, int64_t t);
int32_t cplab_layout_convert_prefill(const cplab_layout *l, const cplab_layout_env *env,
                                     const struct cplab_prefill_plan *plan, int region, int32_t tok, int dcp_rank);
int32_t cplab_layout_convert_decode(const cplab_layout *l, const cplab_layout_env *env, const int32_t *block_row,
                                    int max_blocks, int32_t tok, int dcp_rank);

#ifdef __cplusplus
}
#endif
#endif
