/* Mutant layouts: each reproduces one real bug (or tempting mistake) by
 * replacing one vLLM op. They exist to prove the checks: every one must be
 * caught, with the rule it breaks. Which command catches each, on which
 * scenario, is tests/mutants.tsv (a new mutant needs its row there). Never
 * use them for results. */
#include "cplab/kv.h"
#include "cplab/layout.h"
#include "cplab/plan.h"

/* The conversion before PR 56157: block-table bound and remote owner applied
 * to prefill rows too, so remote tokens of the gathered workspace became -1. */
static int32_t convert_prefill_block_bound(const cplab_layout_env *env, const cplab_prefill_plan *plan, int region,
                                           int32_t tok, int dcp_rank) {
  int I = env->par.interleave, D = env->par.dcp, B = env->par.block_size;
  if (tok < 0 || cplab_kv_owner(tok, I, D) != dcp_rank) return -1;
  if (cplab_kv_local_idx(tok, I, D) / B >= env->max_blocks) return -1;
  return cplab_layout_vllm_convert_prefill(env, plan, region, tok, dcp_rank);
}

/* Rows per rank from this rank's own share instead of the largest one. */
static int64_t rows_per_rank_local(const cplab_layout_env *env, int64_t extent, const cplab_rank_ids *self) {
  return cplab_kv_local_len(extent, self->dcp_rank, env->par.interleave, env->par.dcp);
}

/* Issue #53573: short prefills split like long ones, so some ranks get no row. */
static int replicated_decodes_only(const cplab_layout_env *env, int64_t q, int is_prefill) {
  (void)q;
  return !is_prefill || env->par.pcp == 1;
}

/* The I = 1 deinterleave formula used with any interleave. */
static int64_t deinterleave_no_interleave(const cplab_layout_env *env, const cplab_indexer_plan *plan, int region,
                                          int64_t t) {
  int W = env->par.dcp;
  int64_t padded_total = plan->chunks[plan->region_chunk[region]].padded_total;
  return (t % W) * padded_total + plan->padded_cu[region] + t / W;
}

/* ceil(extent / W) rows per rank: too few for rank 0 when I > 1. */
static int64_t rows_per_rank_ceil(const cplab_layout_env *env, int64_t extent, const cplab_rank_ids *self) {
  (void)self;
  return (extent + env->par.dcp - 1) / env->par.dcp;
}

/* The indexer plan builder that silently accepted an empty context. */
static int accept_any_extent(const cplab_layout_env *env, int64_t extent, cplab_diag *d) {
  (void)env, (void)extent, (void)d;
  return 0;
}

const cplab_layout cplab_mutant_prefill_block_bound = {
    .name = "mutant-prefill-block-bound",
    .summary = "the pre-fix top-k conversion",
    .mutant = 1,
    .reproduces = "block-table bound and remote owner applied to prefill rows: conversion disagrees with the "
                  "reference (prefill outputs -1 for valid inputs)",
    .convert_prefill = convert_prefill_block_bound,
};

const cplab_layout cplab_mutant_rank_local_plan = {
    .name = "mutant-rank-local-plan",
    .summary = "chunk plan from a rank-local quantity",
    .mutant = 1,
    .reproduces = "rows_per_rank from the rank's own local length: plan not rank-invariant, collective sizes differ",
    .rows_per_rank = rows_per_rank_local,
};

const cplab_layout cplab_mutant_no_short_replication = {
    .name = "mutant-no-short-replication",
    .summary = "short prefills are not replicated",
    .mutant = 1,
    .reproduces = "a short prefill leaves ranks with 0 or 1 rows: per-region row count and collectives differ (hang)",
    .replicated = replicated_decodes_only,
};

const cplab_layout cplab_mutant_bad_deinterleave = {
    .name = "mutant-bad-deinterleave",
    .summary = "the interleave-1 deinterleave index with any interleave",
    .mutant = 1,
    .reproduces = "gathered indexer keys out of logical order when interleave > 1",
    .deinterleave = deinterleave_no_interleave,
};

const cplab_layout cplab_mutant_shard_rows_ceil = {
    .name = "mutant-shard-rows-ceil",
    .summary = "ceil(extent / W) rows per rank",
    .mutant = 1,
    .reproduces = "with interleave > 1 rank 0 holds more than ceil(extent / W) rows: rows past the shard overlap "
                  "the next region",
    .rows_per_rank = rows_per_rank_ceil,
};

const cplab_layout cplab_mutant_empty_context = {
    .name = "mutant-empty-context",
    .summary = "accepts a region of extent 0",
    .mutant = 1,
    .reproduces = "extent 0 must be rejected by the plan builder",
    .check_extent = accept_any_extent,
};
