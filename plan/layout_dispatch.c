/* Layout environment and op dispatch: NULL ops fall back to vLLM's
 * (plan/layouts/vllm.c); the maps derived from the decisions follow them. */
#include "cplab/kv.h"
#include "cplab/layout.h"

void cplab_layout_env_init(cplab_layout_env *env, const cplab_parallel *par) {
  env->par = *par;
  env->max_gathered_rows = 5 * par->max_model_len;
  env->indexer_key_rows = 40 * par->max_model_len;
  env->max_logits_bytes = par->indexer_max_logits_mb << 20;
  env->max_blocks = cplab_kv_max_blocks(par);
}

int cplab_layout_replicated(const cplab_layout *l, const cplab_layout_env *env, int64_t q, int is_prefill) {
  return (l->replicated ? l->replicated : cplab_layout_vllm_replicated)(env, q, is_prefill);
}

int64_t cplab_layout_rows_per_rank(const cplab_layout *l, const cplab_layout_env *env, int64_t extent,
                                   const cplab_rank_ids *self) {
  return (l->rows_per_rank ? l->rows_per_rank : cplab_layout_vllm_rows_per_rank)(env, extent, self);
}

int cplab_layout_check_extent(const cplab_layout *l, const cplab_layout_env *env, int64_t extent, cplab_diag *d) {
  return (l->check_extent ? l->check_extent : cplab_layout_vllm_check_extent)(env, extent, d);
}

int64_t cplab_layout_workspace_row(const cplab_layout *l, const cplab_layout_env *env,
                                   const struct cplab_prefill_plan *plan, int region, int64_t t) {
  return (l->departs.workspace_row ? l->departs.workspace_row : cplab_layout_vllm_workspace_row)(env, plan, region, t);
}

int64_t cplab_layout_deinterleave(const cplab_layout *l, const cplab_layout_env *env,
                                  const struct cplab_indexer_plan *plan, int region, int64_t t) {
  return (l->departs.deinterleave ? l->departs.deinterleave : cplab_layout_vllm_deinterleave)(env, plan, region, t);
}

int32_t cplab_layout_convert_prefill(const cplab_layout *l, const cplab_layout_env *env,
                                     const struct cplab_prefill_plan *plan, int region, int32_t tok, int dcp_rank) {
  if (l->departs.convert_prefill) return l->departs.convert_prefill(env, plan, region, tok, dcp_rank);
  /* §5.2 after the fix, derived through this layout: -1 only for -1, else the
   * token's workspace row, so that a workspace_row of the layout's own cannot
   * go out of step with the conversion (vLLM's convert_prefill calls vLLM's). */
  return tok < 0 ? -1 : (int32_t)cplab_layout_workspace_row(l, env, plan, region, tok);
}

int32_t cplab_layout_convert_decode(const cplab_layout *l, const cplab_layout_env *env, const int32_t *block_row,
                                    int max_blocks, int32_t tok, int dcp_rank) {
  return (l->departs.convert_decode ? l->departs.convert_decode : cplab_layout_vllm_convert_decode)(
      env, block_row, max_blocks, tok, dcp_rank);
}

const char *cplab_layout_departure(const cplab_layout *l, cplab_layout_map m) {
  const cplab_layout_maps *own = &l->departs;
  switch (m) {
  case CPLAB_MAP_WORKSPACE_ROW: return own->workspace_row ? "workspace_row" : NULL;
  case CPLAB_MAP_DEINTERLEAVE: return own->deinterleave ? "deinterleave" : NULL;
  case CPLAB_MAP_CONVERT_PREFILL:
    return own->convert_prefill ? "convert_prefill" : own->workspace_row ? "workspace_row" : NULL;
  case CPLAB_MAP_CONVERT_DECODE: return own->convert_decode ? "convert_decode" : NULL;
  }
  return NULL;
}
