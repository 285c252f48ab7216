/* The ordered collectives a rank issues in a step (§10.1, 14): one sparse-MLA
 * MoE layer's worth, then the step's final PCP gather. Every member of a group
 * must issue the same sequence on that group with the same sizes, or a real
 * run hangs; checks compare these lists. Sizes are elements this rank sends. */
#include <stdlib.h>

#include "cplab/plan.h"

#define MLA_ROW 576      /* kv_lora 512 + rope 64: one latent K row, bf16 */
#define INDEX_K_ROW 128  /* one indexer key, bf16 before quantisation */
#define INDEX_ENTRY 132  /* one quantised indexer key: 128 e4m3 + fp32 scale */
#define LATENT_OUT 512   /* decode output per head in the latent space */

const char *cplab_coll_kind_name(cplab_coll_kind k) {
  switch (k) {
    case CPLAB_COLL_ALL_GATHER: return "all_gather";
    case CPLAB_COLL_ALL_REDUCE: return "all_reduce";
    case CPLAB_COLL_REDUCE_SCATTER: return "reduce_scatter";
  }
  return "?";
}

const char *cplab_dtype_name(cplab_dtype t) {
  switch (t) {
    case CPLAB_DT_BF16: return "bf16";
    case CPLAB_DT_FP32: return "fp32";
    case CPLAB_DT_U8: return "u8";
  }
  return "?";
}

int cplab_dtype_bytes(cplab_dtype t) { return t == CPLAB_DT_FP32 ? 4 : t == CPLAB_DT_BF16 ? 2 : 1; }

static const char *const what_names[CPLAB_CW_COUNT] = {
    "kv_insert_gather",
    "index_k_insert_gather",
    "indexer_k_gather",
    "mla_kv_gather",
    "decode_q_gather",
    "decode_lse_gather",
    "decode_out_combine",
    "o_proj_allreduce",
    "moe_fast_allreduce",
    "moe_hidden_gather",
    "moe_router_gather",
    "moe_reduce_scatter",
    "output_gather",
    "moe_tp_allreduce",
};

const char *cplab_coll_what_name(cplab_coll_what w) { return w >= 0 && w < CPLAB_CW_COUNT ? what_names[w] : "?"; }

typedef struct coll_list {
  cplab_collective *items;
  int count, cap;
} coll_list;

static int push(coll_list *l, cplab_coll_kind kind, cplab_group_kind group, cplab_dtype dtype, int64_t count,
                cplab_coll_what what) {
  if (l->count == l->cap) {
    int cap = l->cap ? 2 * l->cap : 16;
    cplab_collective *n = realloc(l->items, (size_t)cap * sizeof *n);
    if (!n) return CPLAB_ENOMEM;
    l->items = n;
    l->cap = cap;
  }
  l->items[l->count++] = (cplab_collective){kind, group, dtype, count, what};
  return 0;
}

/* Attention over the local shard under DCP (§1.4, §7): query heads gathered
 * where needed, LSE all-gathered, partial outputs combined. Decode rows; under
 * DCP without PCP every row (the mixed-batch path returns the LSE of every
 * token, and DeepseekV32Attention._sparse_indexer_and_attn combines them all). */
static int decode_collectives(coll_list *l, const cplab_rank_plan *rp, const cplab_model *m) {
  const cplab_parallel *par = &rp->env.par;
  int64_t T = cplab_split_shard_tokens(&rp->split, par), heads = m->num_heads / par->tp;
  if (T == 0 || par->dcp == 1) return 0;
  int rc = 0;
  switch (cplab_q_gather_group(par)) {
    case CPLAB_Q_GATHER_TP:
      rc = push(l, CPLAB_COLL_ALL_GATHER, CPLAB_GROUP_TP, CPLAB_DT_BF16, T * heads * MLA_ROW, CPLAB_CW_DECODE_Q_GATHER);
      heads *= par->tp;
      break;
    case CPLAB_Q_GATHER_DCP:
      rc = push(l, CPLAB_COLL_ALL_GATHER, CPLAB_GROUP_DCP, CPLAB_DT_BF16, T * heads * MLA_ROW, CPLAB_CW_DECODE_Q_GATHER);
      heads *= par->dcp;
      break;
    case CPLAB_Q_GATHER_NONE: break;
  }
  if (!rc) rc = push(l, CPLAB_COLL_ALL_GATHER, CPLAB_GROUP_DCP, CPLAB_DT_FP32, T * heads, CPLAB_CW_DECODE_LSE_GATHER);
  if (!rc)
    rc = push(l, par->pcp > 1 ? CPLAB_COLL_ALL_REDUCE : CPLAB_COLL_REDUCE_SCATTER, CPLAB_GROUP_DCP, CPLAB_DT_BF16,
              T * heads * LATENT_OUT, CPLAB_CW_DECODE_OUT_COMBINE);
  return rc;
}

/* MoE under PCP (§8): the all-reduce fast path, or gather + reduce-scatter. */
static int moe_collectives(coll_list *l, const cplab_rank_plan *rp, const cplab_model *m) {
  const cplab_parallel *par = &rp->env.par;
  const cplab_schedule *s = &rp->sched;
  if (par->pcp == 1) return 0;
  if (s->moe_fast_path)
    return push(l, CPLAB_COLL_ALL_REDUCE, CPLAB_GROUP_PCP, CPLAB_DT_BF16, rp->split.num_tokens * m->hidden_size,
                CPLAB_CW_MOE_FAST_ALLREDUCE);
  int64_t T = s->padded_num_tokens;
  int rc = push(l, CPLAB_COLL_ALL_GATHER, CPLAB_GROUP_PCP, CPLAB_DT_BF16, T * m->hidden_size, CPLAB_CW_MOE_HIDDEN_GATHER);
  if (!rc)
    rc = push(l, CPLAB_COLL_ALL_GATHER, CPLAB_GROUP_PCP, CPLAB_DT_FP32, T * m->n_routed_experts, CPLAB_CW_MOE_ROUTER_GATHER);
  if (!rc)
    rc = push(l, CPLAB_COLL_REDUCE_SCATTER, CPLAB_GROUP_PCP, CPLAB_DT_BF16, par->pcp * T * m->hidden_size,
              CPLAB_CW_MOE_REDUCE_SCATTER);
  return rc;
}

int cplab_collectives_derive(cplab_rank_plan *rp, const cplab_model *m, cplab_diag *d) {
  const cplab_parallel *par = &rp->env.par;
  const cplab_schedule *s = &rp->sched;
  coll_list l = {0};
  int rc = 0;
  /* Cache insert: prefill rows' K gathered over PCP (decode rows are replicated). */
  if (par->pcp > 1 && s->padded_prefill_tokens > 0) {
    rc = push(&l, CPLAB_COLL_ALL_GATHER, CPLAB_GROUP_PCP, CPLAB_DT_BF16, s->padded_prefill_tokens * MLA_ROW,
              CPLAB_CW_KV_INSERT_GATHER);
    if (!rc)
      rc = push(&l, CPLAB_COLL_ALL_GATHER, CPLAB_GROUP_PCP, CPLAB_DT_BF16, s->padded_prefill_tokens * INDEX_K_ROW,
                CPLAB_CW_INDEX_K_INSERT_GATHER);
  }
  /* Indexer: one key gather per chunk, none for query sub-chunks that reuse it. */
  for (int c = 0; !rc && c < rp->indexer.num_chunks; c++)
    if (!rp->indexer.chunks[c].skip_kv_gather)
      rc = push(&l, CPLAB_COLL_ALL_GATHER, CPLAB_GROUP_DCP, CPLAB_DT_U8,
                rp->indexer.chunks[c].padded_total * INDEX_ENTRY, CPLAB_CW_INDEXER_K_GATHER);
  /* Sparse MLA prefill: one workspace gather per chunk. */
  for (int c = 0; !rc && c < rp->prefill.num_chunks; c++)
    rc = push(&l, CPLAB_COLL_ALL_GATHER, CPLAB_GROUP_DCP, CPLAB_DT_BF16, rp->prefill.chunks[c].shard_rows * MLA_ROW,
              CPLAB_CW_MLA_KV_GATHER);
  if (!rc) rc = decode_collectives(&l, rp, m);
  if (!rc && par->tp > 1)
    rc = push(&l, CPLAB_COLL_ALL_REDUCE, CPLAB_GROUP_TP, CPLAB_DT_BF16, rp->split.num_tokens * m->hidden_size,
              CPLAB_CW_O_PROJ_ALLREDUCE);
  if (!rc) rc = moe_collectives(&l, rp, m);
  /* The MoE's experts are sharded over TP too: its shards' partial outputs are summed over TP, the
   * second of the two all-reduces per layer TP makes (perf-anchors.md), after the PCP combine. */
  if (!rc && par->tp > 1)
    rc = push(&l, CPLAB_COLL_ALL_REDUCE, CPLAB_GROUP_TP, CPLAB_DT_BF16, rp->split.num_tokens * m->hidden_size,
              CPLAB_CW_MOE_TP_ALLREDUCE);
  /* After the last layer: every rank's hidden rows gathered to restore global order. */
  if (!rc && par->pcp > 1)
    rc = push(&l, CPLAB_COLL_ALL_GATHER, CPLAB_GROUP_PCP, CPLAB_DT_BF16, s->padded_num_tokens * m->hidden_size,
              CPLAB_CW_OUTPUT_GATHER);
  if (rc) {
    free(l.items);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for the collective list");
  }
  rp->collectives = l.items;
  rp->num_collectives = l.count;
  return 0;
}
