/* The "block-aligned" layout: an alternative a researcher might propose. Every
 * region's slice of the gathered workspace is rounded up to whole KV blocks
 * (B rows), so each region starts block-aligned in every rank's shard: copies
 * into and out of the workspace can move whole, aligned blocks (TMA-friendly)
 * at the price of up to B-1 padding rows per region and rank. Everything else
 * is vLLM's. It must pass every invariant, like any correct layout. */
#include "cplab/kv.h"
#include "cplab/layout.h"

static int64_t rows_per_rank(const cplab_layout_env *env, int64_t extent, const cplab_rank_ids *self) {
  (void)self;
  int64_t B = env->par.block_size;
  int64_t rows = cplab_kv_local_len(extent, 0, env->par.interleave, env->par.dcp);
  return (rows + B - 1) / B * B;
}

const cplab_layout cplab_layout_block_aligned = {
    .name = "block-aligned",
    .summary = "vLLM's design with each region's workspace slice padded to whole KV blocks (aligned copies)",
    .rows_per_rank = rows_per_rank,
};
