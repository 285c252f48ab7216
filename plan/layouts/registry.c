/* The layouts every program knows: correct ones first, then mutants. A new
 * layout is one file in this folder plus one line here (docs/layouts.md). */
#include <string.h>

#include "cplab/layout.h"

extern const cplab_layout cplab_layout_vllm, cplab_layout_block_aligned;
extern const cplab_layout cplab_mutant_prefill_block_bound, cplab_mutant_rank_local_plan,
    cplab_mutant_no_short_replication, cplab_mutant_bad_deinterleave, cplab_mutant_shard_rows_ceil,
    cplab_mutant_empty_context;

static const cplab_layout *const registry[] = {
    &cplab_layout_vllm,
    &cplab_layout_block_aligned,
    &cplab_mutant_prefill_block_bound,
    &cplab_mutant_rank_local_plan,
    &cplab_mutant_no_short_replication,
    &cplab_mutant_bad_deinterleave,
    &cplab_mutant_shard_rows_ceil,
    &cplab_mutant_empty_context,
    NULL,
};

const cplab_layout *const *cplab_layouts(void) { return registry; }

const cplab_layout *cplab_layout_find(const char *name) {
  for (const cplab_layout *const *l = registry; *l; l++)
    if (strcmp((*l)->name, name) == 0) return *l;
  return NULL;
}
