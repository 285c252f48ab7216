/* The gathered sparse-MLA prefill plan (§4.1): regions (one per prefill
 * request, in the order of this rank's rows), rows each DCP rank contributes,
 * greedy chunks under the per-rank budget, workspace starts and the local
 * query tokens of every chunk. Everything but region_first_row and the token
 * slices is a function of shared data, hence identical on every rank. */
#include <stdlib.h>
#include <string.h>

#include "cplab/plan.h"

void cplab_prefill_plan_free(cplab_prefill_plan *p) {
  free(p->region_req);
  free(p->region_first_row);
  free(p->region_chunk);
  free(p->extent);
  free(p->rows_per_rank);
  free(p->workspace_start);
  free(p->chunks);
  memset(p, 0, sizeof *p);
}

static int alloc_regions(cplab_prefill_plan *p, int K) {
  p->region_req = calloc((size_t)K, sizeof(int32_t));
  p->region_first_row = calloc((size_t)K, sizeof(int32_t));
  p->region_chunk = calloc((size_t)K, sizeof(int32_t));
  p->extent = calloc((size_t)K, sizeof(int64_t));
  p->rows_per_rank = calloc((size_t)K, sizeof(int64_t));
  p->workspace_start = calloc((size_t)K, sizeof(int64_t));
  p->chunks = calloc((size_t)K, sizeof(cplab_prefill_chunk));
  return p->region_req && p->region_first_row && p->region_chunk && p->extent && p->rows_per_rank &&
         p->workspace_start && p->chunks;
}

/* Regions: maximal runs of prefill rows of one request; rows must ascend. */
static int find_regions(const cplab_rank_plan *rp, cplab_prefill_plan *p, cplab_diag *d) {
  const cplab_split *sp = &rp->split;
  int K = 0;
  for (int i = sp->num_decode_rows; i < sp->num_rows; i++) {
    const cplab_row *row = &sp->rows[i];
    if (row->dummy) continue;
    if (K > 0 && row->req < p->region_req[K - 1])
      CPLAB_FAIL(d, CPLAB_EINTERNAL, "prefill rows are not in ascending request order (row %d: request %d after %d)",
                 i, row->req, p->region_req[K - 1]);
    if (K > 0 && row->req == p->region_req[K - 1]) continue;
    p->region_req[K] = row->req;
    p->region_first_row[K] = i;
    p->extent[K] = rp->sched.seq_len[row->req];
    K++;
  }
  p->num_regions = K;
  return 0;
}

int cplab_prefill_plan_derive(const cplab_rank_plan *rp, cplab_prefill_plan *p, cplab_diag *d) {
  const cplab_split *sp = &rp->split;
  const cplab_layout_env *env = &rp->env;
  memset(p, 0, sizeof *p);
  int prefill_rows = sp->num_rows - sp->num_decode_rows;
  /* Only PCP + DCP gathers (cplab_parallel_gathers_prefill); under DCP
   * alone prefill rows stay on the local shard like decodes. */
  if (!cplab_parallel_gathers_prefill(&env->par) || prefill_rows <= 0 ||
      (prefill_rows == 1 && sp->rows[sp->num_decode_rows].dummy))
    return 0;
  if (!alloc_regions(p, prefill_rows)) {
    cplab_prefill_plan_free(p);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for the prefill plan");
  }
  int rc = find_regions(rp, p, d);
  p->active = 1;
  p->W = env->par.dcp;
  p->budget = env->max_gathered_rows / p->W;
  for (int k = 0; !rc && k < p->num_regions; k++) {
    rc = cplab_layout_check_extent(rp->layout, env, p->extent[k], d);
    if (rc) break;
    p->rows_per_rank[k] = cplab_layout_rows_per_rank(rp->layout, env, p->extent[k], &rp->ids);
    if (p->rows_per_rank[k] > p->budget)
      rc = cplab_diag_set(d, CPLAB_ERANGE,
                          "region %d (request %d, extent %lld) needs %lld contiguous KV rows per rank, over the "
                          "per-rank budget of %lld",
                          k, p->region_req[k], (long long)p->extent[k], (long long)p->rows_per_rank[k],
                          (long long)p->budget);
  }
  /* Greedy: a region joins the open chunk unless that overflows the budget. */
  int64_t used = 0;
  for (int k = 0; !rc && k < p->num_regions; k++) {
    if (p->num_chunks == 0 || used + p->rows_per_rank[k] > p->budget) {
      p->chunks[p->num_chunks++] = (cplab_prefill_chunk){.first_region = k};
      used = 0;
    }
    cplab_prefill_chunk *c = &p->chunks[p->num_chunks - 1];
    p->workspace_start[k] = used;
    p->region_chunk[k] = p->num_chunks - 1;
    used += p->rows_per_rank[k];
    c->num_regions++;
    c->shard_rows = used;
  }
  /* Local query tokens: from the chunk's first row to the next chunk's; they
   * must tile [num_decode_tokens, num_tokens). */
  int64_t covered = sp->num_decode_tokens;
  for (int c = 0; !rc && c < p->num_chunks; c++) {
    cplab_prefill_chunk *ch = &p->chunks[c];
    ch->token_begin = sp->rows[p->region_first_row[ch->first_region]].token_offset;
    ch->token_end = c + 1 < p->num_chunks ? sp->rows[p->region_first_row[p->chunks[c + 1].first_region]].token_offset
                                          : sp->num_tokens;
    if (ch->token_begin != covered)
      rc = cplab_diag_set(d, CPLAB_EINTERNAL, "prefill chunk %d starts at local token %lld, expected %lld", c,
                          (long long)ch->token_begin, (long long)covered);
    covered = ch->token_end;
  }
  if (rc) cplab_prefill_plan_free(p);
  return rc;
}
