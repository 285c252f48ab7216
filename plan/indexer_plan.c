/* The indexer's gathered prefill plan (§4.3): one region per prefill request
 * with its extent N and nominal query length M (identical on every rank),
 * greedy chunks under the key-row workspace and the logits budget, a region
 * too big for the logits budget split along the query dimension (later
 * sub-chunks reuse the gathered keys), the rank-major shard offsets that the
 * deinterleave index undoes, and key bounds ks/ke for every local query token. */
#include <stdlib.h>
#include <string.h>

#include "cplab/kv.h"
#include "cplab/plan.h"

void cplab_indexer_plan_free(cplab_indexer_plan *p) {
  free(p->region_req);
  free(p->region_chunk);
  free(p->extent);
  free(p->nominal_q);
  free(p->padded);
  free(p->padded_cu);
  free(p->region_start);
  free(p->chunks);
  free(p->ks);
  free(p->ke);
  memset(p, 0, sizeof *p);
}

/* Local tokens of region k on this rank: [begin, end). */
static void region_tokens(const cplab_rank_plan *rp, int k, int64_t *begin, int64_t *end) {
  const cplab_prefill_plan *pp = &rp->prefill;
  const cplab_split *sp = &rp->split;
  int first = pp->region_first_row[k];
  int last = k + 1 < pp->num_regions ? pp->region_first_row[k + 1] : sp->num_rows;
  *begin = sp->rows[first].token_offset;
  *end = sp->rows[last - 1].token_offset + sp->rows[last - 1].len;
}

static cplab_indexer_chunk *open_chunk(cplab_indexer_plan *p, int first) {
  cplab_indexer_chunk *c = &p->chunks[p->num_chunks++];
  *c = (cplab_indexer_chunk){.first_region = first};
  return c;
}

/* Region k joins chunk c: its keys follow those already there. */
static void add_region(cplab_indexer_plan *p, cplab_indexer_chunk *c, int k) {
  p->region_chunk[k] = (int32_t)(c - p->chunks);
  p->padded_cu[k] = c->padded_total;
  p->region_start[k] = c->key_rows;
  c->padded_total += p->padded[k];
  c->key_rows += p->extent[k];
  c->num_regions++;
}

/* M of request g: the nominal query rows every rank counts for it (2·cs if
 * split, q if replicated), identical on all ranks. */
static int64_t nominal_query_len(const cplab_rank_plan *rp, int g) {
  return rp->sched.replicated[g] ? rp->sched.nominal_q[g] : 2 * rp->sched.nominal_q[g];
}

int cplab_indexer_plan_derive(const cplab_rank_plan *rp, cplab_indexer_plan *p, cplab_diag *d) {
  const cplab_prefill_plan *pp = &rp->prefill;
  const cplab_layout_env *env = &rp->env;
  memset(p, 0, sizeof *p);
  if (!pp->active) return 0;
  int K = pp->num_regions;
  int64_t logits_budget = env->max_logits_bytes / 4, T = rp->split.num_tokens;
  int max_chunks = 0;
  for (int k = 0; k < K; k++) {
    int64_t max_q = pp->extent[k] > 0 && logits_budget / pp->extent[k] > 0 ? logits_budget / pp->extent[k] : 1;
    int64_t M = nominal_query_len(rp, pp->region_req[k]);
    max_chunks += 1 + (int)((M + max_q - 1) / max_q); /* at most: one packed chunk, or its query sub-chunks */
  }
  p->region_req = calloc((size_t)K, sizeof(int32_t));
  p->region_chunk = calloc((size_t)K, sizeof(int32_t));
  p->extent = calloc((size_t)K, sizeof(int64_t));
  p->nominal_q = calloc((size_t)K, sizeof(int64_t));
  p->padded = calloc((size_t)K, sizeof(int64_t));
  p->padded_cu = calloc((size_t)K, sizeof(int64_t));
  p->region_start = calloc((size_t)K, sizeof(int64_t));
  p->chunks = calloc((size_t)max_chunks, sizeof(cplab_indexer_chunk));
  int maps = (rp->flags & CPLAB_PLAN_TOKEN_MAPS) != 0;
  if (maps) {
    p->ks = malloc((size_t)(T ? T : 1) * sizeof(int64_t));
    p->ke = malloc((size_t)(T ? T : 1) * sizeof(int64_t));
  }
  if (!p->region_req || !p->region_chunk || !p->extent || !p->nominal_q || !p->padded || !p->padded_cu ||
      !p->region_start || !p->chunks || (maps && (!p->ks || !p->ke))) {
    cplab_indexer_plan_free(p);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for the indexer plan");
  }
  p->active = 1;
  p->num_regions = K;
  for (int k = 0; k < K; k++) {
    int g = pp->region_req[k];
    p->region_req[k] = g;
    p->extent[k] = pp->extent[k];
    p->nominal_q[k] = nominal_query_len(rp, g);
    p->padded[k] = cplab_kv_local_len(p->extent[k], 0, env->par.interleave, env->par.dcp);
  }
  /* Greedy packing by (sum N, sum M · sum N); oversized regions go alone, in
   * query sub-chunks. */
  cplab_indexer_chunk *open = NULL;
  for (int k = 0; k < K; k++) {
    int64_t N = p->extent[k], M = p->nominal_q[k];
    if (M * N > logits_budget) {
      int64_t max_q = logits_budget / N > 0 ? logits_budget / N : 1; /* N > 0 here: M·N > 0 */
      for (int64_t qb = 0; qb < M; qb += max_q) {
        cplab_indexer_chunk *c = open_chunk(p, k);
        if (qb == 0) add_region(p, c, k);
        else *c = p->chunks[p->region_chunk[k]]; /* same keys, already gathered */
        c->query_split = 1;
        c->skip_kv_gather = qb > 0;
        c->q_begin = qb;
        c->q_end = qb + max_q < M ? qb + max_q : M;
      }
      open = NULL;
      continue;
    }
    if (!open || open->key_rows + N > env->indexer_key_rows ||
        (open->q_end + M) * (open->key_rows + N) > logits_budget)
      open = open_chunk(p, k);
    add_region(p, open, k);
    open->q_end += M;
  }
  /* Local query tokens of each chunk, then (token maps) the key bounds of each token. */
  for (int c = 0; c < p->num_chunks; c++) {
    cplab_indexer_chunk *ch = &p->chunks[c];
    int64_t b0, e0, b1, e1;
    region_tokens(rp, ch->first_region, &b0, &e0);
    region_tokens(rp, ch->first_region + ch->num_regions - 1, &b1, &e1);
    if (ch->query_split) {
      int64_t local_q = e0 - b0; /* clamp the nominal slice to the real local rows */
      ch->token_begin = b0 + (ch->q_begin < local_q ? ch->q_begin : local_q);
      ch->token_end = b0 + (ch->q_end < local_q ? ch->q_end : local_q);
    } else {
      ch->token_begin = b0;
      ch->token_end = e1;
    }
  }
  if (!maps) return 0;
  for (int64_t m = 0; m < T; m++) p->ks[m] = p->ke[m] = -1;
  const cplab_split *sp = &rp->split;
  for (int k = 0; k < K; k++) {
    int first = pp->region_first_row[k], last = k + 1 < K ? pp->region_first_row[k + 1] : sp->num_rows;
    for (int i = first; i < last; i++) {
      const cplab_row *row = &sp->rows[i];
      for (int64_t j = 0; j < row->len; j++) {
        p->ks[row->token_offset + j] = p->region_start[k];
        p->ke[row->token_offset + j] = p->region_start[k] + row->start_pos + j + 1;
      }
    }
  }
  return 0;
}
