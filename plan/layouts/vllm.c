/* The "vllm" layout: the design of vLLM PR 56157 as later main generalised it
 * to interleave I > 1 (rows_per_rank = rank 0's local length, interleave-aware
 * indexer plan). Every other layout falls back to these ops. */
#include "cplab/kv.h"
#include "cplab/layout.h"
#include "cplab/plan.h"

/* §3.2: decodes always; with DCP a prefill whose last DualChunkSwap chunk would
 * be empty, so that every rank holds a row of every prefill request. With one
 * PCP rank there is nothing to split. */
int cplab_layout_vllm_replicated(const cplab_layout_env *env, int64_t q, int is_prefill) {
  int P = env->par.pcp;
  if (!is_prefill || P == 1) return 1;
  if (env->par.dcp <= 1) return 0;
  int64_t C = 2 * (int64_t)P, cs = (q + C - 1) / C;
  return (C - 1) * cs >= q;
}

/* §4.1, §2.2: the largest shard, which is rank 0's (ceil(extent / W) for I = 1,
 * possibly more for I > 1). */
int64_t cplab_layout_vllm_rows_per_rank(const cplab_layout_env *env, int64_t extent, const cplab_rank_ids *self) {
  (void)self;
  return cplab_kv_local_len(extent, 0, env->par.interleave, env->par.dcp);
}

/* §10.2: the scheduler never schedules an empty context; the plan builder
 * asserts it. */
int cplab_layout_vllm_check_extent(const cplab_layout_env *env, int64_t extent, cplab_diag *d) {
  (void)env;
  if (extent <= 0) CPLAB_FAIL(d, CPLAB_EINVAL, "empty scheduled context: a prefill region has extent %lld", (long long)extent);
  return 0;
}

/* §4.2: rank-major workspace, owner's slice first. */
int64_t cplab_layout_vllm_workspace_row(const cplab_layout_env *env, const cplab_prefill_plan *plan, int region,
                                        int64_t t) {
  int I = env->par.interleave, D = env->par.dcp;
  int64_t shard_rows = plan->chunks[plan->region_chunk[region]].shard_rows;
  return cplab_kv_owner(t, I, D) * shard_rows + plan->workspace_start[region] + cplab_kv_local_idx(t, I, D);
}

/* §4.3, interleave-aware: the owner's block of the gathered keys, the region's
 * offset in the shard, the token's local index. */
int64_t cplab_layout_vllm_deinterleave(const cplab_layout_env *env, const cplab_indexer_plan *plan, int region,
                                       int64_t t) {
  int I = env->par.interleave, D = env->par.dcp;
  int64_t padded_total = plan->chunks[plan->region_chunk[region]].padded_total;
  return cplab_kv_owner(t, I, D) * padded_total + plan->padded_cu[region] + cplab_kv_local_idx(t, I, D);
}

/* §5.2 after the fix: a prefill entry is -1 only when its input is -1; remote
 * tokens stay valid because they sit in other ranks' slices of the workspace. */
int32_t cplab_layout_vllm_convert_prefill(const cplab_layout_env *env, const cplab_prefill_plan *plan, int region,
                                          int32_t tok, int dcp_rank) {
  (void)dcp_rank;
  if (tok < 0) return -1;
  return (int32_t)cplab_layout_vllm_workspace_row(env, plan, region, tok);
}

/* §5.2: decode entries go through the block table of this rank's shard; -1
 * for -1, remote owners and blocks past the table. */
int32_t cplab_layout_vllm_convert_decode(const cplab_layout_env *env, const int32_t *block_row, int max_blocks,
                                         int32_t tok, int dcp_rank) {
  int I = env->par.interleave, D = env->par.dcp, B = env->par.block_size;
  if (tok < 0 || cplab_kv_owner(tok, I, D) != dcp_rank) return -1;
  int64_t lidx = cplab_kv_local_idx(tok, I, D), blk = lidx / B;
  if (blk >= max_blocks) return -1;
  return (int32_t)((int64_t)block_row[blk] * B + lidx % B);
}

const cplab_layout cplab_layout_vllm = {
    .name = "vllm",
    .summary = "vLLM PR 56157 (interleave-aware): DualChunkSwap + short-prefill replication, rank-major workspace",
};
