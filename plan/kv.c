/* DCP ownership and slot mapping: see include/cplab/kv.h. */
#include "cplab/kv.h"

int cplab_kv_max_blocks(const cplab_parallel *par) {
  int64_t span = (int64_t)par->block_size * par->dcp;
  return (int)((par->max_model_len + span - 1) / span);
}

int64_t cplab_kv_slot_global(const cplab_parallel *par, int dcp_rank, const int32_t *block_row, int max_blocks,
                             int64_t p) {
  if (cplab_kv_owner(p, par->interleave, par->dcp) != dcp_rank) return CPLAB_PAD_SLOT;
  int64_t local = cplab_kv_local_idx(p, par->interleave, par->dcp);
  int64_t blk = local / par->block_size;
  if (blk >= max_blocks) return CPLAB_PAD_SLOT;
  return (int64_t)block_row[blk] * par->block_size + local % par->block_size;
}

int64_t cplab_kv_slot_per_block(const cplab_parallel *par, int dcp_rank, const int32_t *block_row, int max_blocks,
                                int64_t p) {
  int64_t span = (int64_t)par->block_size * par->dcp;
  int64_t vb = p / span, off = p % span;
  int owner = (int)((off / par->interleave) % par->dcp);
  if (owner != dcp_rank || vb >= max_blocks) return CPLAB_PAD_SLOT;
  int64_t local = (off / ((int64_t)par->interleave * par->dcp)) * par->interleave + off % par->interleave;
  return (int64_t)block_row[vb] * par->block_size + local;
}
