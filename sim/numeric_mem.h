/* sim/numeric_mem.h: the numeric pass's model of device memory (numeric.h).
 * What every DCP peer's caches hold after the slot-mapping writes, what the
 * gathered prefill workspace and indexer key buffers hold after the shard
 * gathers and all-gathers: each read follows the path the executor's data
 * takes (block table, shard layout of the plan), and a read of memory that
 * nothing wrote returns the poison the executor fills it with. */
#ifndef CPLAB_SIM_NUMERIC_MEM_H
#define CPLAB_SIM_NUMERIC_MEM_H

#include <stdint.h>

#include "cplab/error.h"
#include "cplab/kv.h"
#include "cplab/kvformat.h"
#include "cplab/plan.h"

#define SIM_BF16_NAN 0x7FC0u /* poison of the bf16 workspace */

typedef struct sim_mem_block {
  int32_t phys; /* physical block id */
  int32_t req;  /* global request index g */
  int32_t j;    /* logical block in the request's block-table row */
} sim_mem_block;

typedef struct sim_mem {
  const cplab_step_input *in;
  const cplab_rank_plan *rp;
  int layer;
  int64_t nblocks;
  sim_mem_block *blocks;   /* every block-table entry, by phys */
  uint16_t **workspace;    /* [prefill chunk] W·shard_rows rows of 576 bf16, built on first use */
  int64_t *workspace_rows;
  float **keys;            /* [indexer chunk] W·padded_total rows of 129 floats (128 values, then scale) */
  int64_t *keys_rows;
} sim_mem;


int sim_mem_init(sim_mem *m, const cplab_step_input *in, const cplab_rank_plan *rp, int layer, cplab_diag *d);
void sim_mem_fini(sim_mem *m);

/* Token position p of request g that DCP peer o holds at local index li. */
static inline int64_t sim_mem_position(int64_t li, int o, int interleave, int dcp) {
  return cplab_kv_position(li, o, interleave, dcp);
}

/* Peer o's KV (656 bytes) and indexer (132 bytes) entries at slot; 0 when
 * no token was written there (entries all 0xFF: e4m3 and fp32 NaN). */
int sim_mem_kv_entry(const sim_mem *m, int o, int64_t slot, uint8_t entry[CPLAB_MLA_ENTRY_BYTES]);
int sim_mem_idx_entry(const sim_mem *m, int o, int64_t slot, uint8_t entry[CPLAB_IDX_ENTRY_BYTES]);

/* An indexer entry as the logits read it: 128 e4m3 values as floats, then
 * the key scale. */
void sim_mem_key_row(const uint8_t e[CPLAB_IDX_ENTRY_BYTES], float k[CPLAB_IDX_DIM + 1]);

/* The gathered workspace of prefill chunk c (W·shard_rows rows of 576 bf16). */
int sim_mem_workspace(sim_mem *m, int c, const uint16_t **ws, int64_t *rows, cplab_diag *d);
/* The gathered indexer keys of indexer chunk c (rows of 129 floats as
 * sim_mem_key_row makes them; padding rows all 0). */
int sim_mem_keys(sim_mem *m, int c, const float **keys, int64_t *rows, cplab_diag *d);


/* XXH3-64 of this rank's KV (which = 0) or indexer (which = 1) cache: the
 * written slots ascending, each as int64 slot LE then its entry. */
int sim_mem_cache_digest(const sim_mem *m, int which, uint64_t *out, cplab_diag *d);

#endif
