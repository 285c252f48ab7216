/* exec/rank.h: one rank's numeric pass on the device, common to the
 * backends (rank.c), and the hooks where the backends differ (exec_ops):
 * where gathered buffers come from (device copies of the peers' shards, or
 * NCCL all-gathers), how a row's top-k is found (over all its keys, or local
 * top-k plus an exact merge across DCP), and how decode partials meet. */
#ifndef CPLAB_EXEC_RANK_H
#define CPLAB_EXEC_RANK_H

#include <stdint.h>

#include "arena.h"
#include "cplab/plan.h"
#include "exec.h"

typedef struct exec_rank exec_rank;

typedef struct exec_ops {
  /* Build c->ws[ch] (c->ws_rows[ch] rows of 576 bf16): prefill chunk ch's gathered workspace. */
  int (*workspace)(exec_rank *c, int ch, cplab_diag *d);
  /* Once per layer, before the rows: what the prefill rows' keys need. */
  int (*keys_prepare)(exec_rank *c, cplab_diag *d);
  /* The row's top-k over its keys 0 .. pos into dtopk, dscore (device, k each). */
  int (*topk)(exec_rank *c, const cplab_row *row, int64_t pos, int32_t *dtopk, float *dscore, exec_arena *a,
              cplab_diag *d);
  /* A decode row's partial results of every DCP peer for this rank's heads
   * (query dq, the token at pos): dout [D][heads][512], dl [D][heads]; and,
   * unless own is NULL, what this rank contributes to the combine (SCHEMA.md
   * attn_partial_out): its own shard's partial for each of `blocks` head
   * blocks (cplab_dcp_partial_blocks: its own heads, or block o = DCP member
   * o's), own [blocks][heads][512], own_lse [blocks][heads]. */
  int (*partials)(exec_rank *c, const cplab_row *row, int64_t pos, const int32_t *topk, const int32_t *dtopk,
                  const uint16_t *dq, float *dout, float *dl, float *own, float *own_lse, exec_arena *a,
                  cplab_diag *d);
  /* Index into kv_read / idx_read of DCP peer o's cache slot (-1: unreadable). */
  int64_t (*slot)(const exec_rank *c, int o, int64_t slot);
  /* Free what keys_prepare made. */
  void (*keys_free)(exec_rank *c);
} exec_ops;

struct exec_rank {
  const exec_ops *ops;
  void *be;                      /* the backend */
  void *keys;                    /* keys_prepare's state */
  const cplab_step_input *in;
  const cplab_rank_plan *rp;
  int layer, r, k, heads;
  uint8_t *kv_read, *idx_read;   /* caches the slot hook indexes into */
  int64_t read_slots;
  uint8_t *kv_own, *idx_own;     /* this rank's caches */
  int64_t num_slots;
  uint16_t **ws;                 /* [prefill chunk] gathered workspace */
  int64_t *ws_rows;
};

/* The layer on this rank: sampled rows, workspaces, each row, digests. */
int exec_rank_layer(exec_rank *c, int64_t sampled_rows, exec_layer *out, cplab_diag *d);

/* The output path (output.c): each local token's stand-in output row
 * (padded_num_tokens rows of 576 bf16, padding rows poison), and the check
 * of the PCP all-gather of those rows (gathered_rows rows, rank-major)
 * restored to global order through the plan's restore map (token maps
 * needed): CPLAB_EMISMATCH naming the first token out of place. */
int exec_output_rows(const cplab_step_input *in, const cplab_rank_plan *rp, uint16_t *rows, cplab_diag *d);
int exec_output_check(const cplab_step_input *in, const cplab_rank_plan *rp, const uint16_t *gathered,
                      int64_t gathered_rows, cplab_diag *d);

/* Top-k of a row over a device buffer of n logical keys (132-byte entries). */
int exec_indexer_topk(exec_rank *c, const cplab_row *row, int64_t pos, const uint8_t *dkeys, int64_t n, int32_t *dtopk,
                      float *dscore, exec_arena *a, cplab_diag *d);
/* Convert a row's top-k (host topk, device dtopk) for DCP rank o into dconv. */
int exec_row_convert(exec_rank *c, const cplab_row *row, const int32_t *topk, const int32_t *dtopk, int o,
                     int32_t *dconv, exec_arena *a, cplab_diag *d);
/* Poison a rank's caches and write its owned context (generation kernel). */
int exec_fill_cache(const cplab_step_input *in, const cplab_rank_plan *rp, int layer, uint8_t *kv, uint8_t *idx,
                    int64_t num_slots, cplab_diag *d);
/* Slots per rank cache: the largest physical block of any step, plus one, times B. */
int exec_num_slots(const cplab_scenario *s, const cplab_layout *layout, int64_t *out, cplab_diag *d);
/* The lse of a combined decode row from D shard lse values (stride H). */
double exec_merged_lse(const double *lse, int D, int H);

#endif
