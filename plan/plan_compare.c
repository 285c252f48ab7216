/* Field-by-field comparison of two rank plans (e.g. derived vs read back from
 * a trace). Reports the first difference by name. */
#include <stdio.h>
#include <string.h>

#include "cplab/plan.h"

/* Equal arrays of n elements; two absent arrays are equal too. */
#define SAME_N(a, b, n) \
  ((n) == 0 || (!(a) && !(b)) || ((a) && (b) && memcmp((a), (b), (size_t)(n) * sizeof *(a)) == 0))

static int differ(char *out, size_t cap, const char *what) {
  if (out && cap) snprintf(out, cap, "%s", what);
  return 0;
}

#define FIELD(cond, what) \
  if (!(cond)) return differ(out, cap, what)

int cplab_rank_plan_equal(const cplab_rank_plan *a, const cplab_rank_plan *b, char *out, size_t cap) {
  const cplab_schedule *s = &a->sched, *t = &b->sched;
  FIELD(a->ids.rank == b->ids.rank && a->ids.dcp_rank == b->ids.dcp_rank, "rank ids");
  FIELD(s->num_requests == t->num_requests && s->max_blocks == t->max_blocks, "request count or block-table width");
  int R = s->num_requests;
  FIELD(SAME_N(s->seq_len, t->seq_len, R) && SAME_N(s->replicated, t->replicated, R) &&
            SAME_N(s->nominal_q, t->nominal_q, R) && SAME_N(s->token_offset, t->token_offset, R + 1),
        "schedule arrays");
  FIELD(SAME_N(s->block_table, t->block_table, (size_t)R * s->max_blocks), "block table");
  FIELD(s->all_rows_replicated == t->all_rows_replicated && s->uniform_decode == t->uniform_decode &&
            s->runtime_mode == t->runtime_mode && s->moe_fast_path == t->moe_fast_path &&
            s->padded_num_tokens == t->padded_num_tokens && s->padded_prefill_tokens == t->padded_prefill_tokens &&
            s->dispatch_rows == t->dispatch_rows && s->dispatch_tokens == t->dispatch_tokens &&
            s->dispatch_longest == t->dispatch_longest,
        "schedule scalars");
  FIELD(SAME_N(a->local_len, b->local_len, R), "local lengths");
  const cplab_split *x = &a->split, *y = &b->split;
  FIELD(x->num_rows == y->num_rows && x->num_decode_rows == y->num_decode_rows && x->num_tokens == y->num_tokens &&
            x->num_decode_tokens == y->num_decode_tokens,
        "row counts");
  for (int i = 0; i < x->num_rows; i++) {
    const cplab_row *p = &x->rows[i], *q = &y->rows[i];
    FIELD(p->req == q->req && p->is_prefill == q->is_prefill && p->replicated == q->replicated &&
              p->dummy == q->dummy && p->start == q->start && p->len == q->len && p->start_pos == q->start_pos &&
              p->seq_len == q->seq_len && p->dcp_local_seq_len == q->dcp_local_seq_len &&
              p->token_offset == q->token_offset,
          "rows");
  }
  const cplab_prefill_plan *f = &a->prefill, *g = &b->prefill;
  int K = f->num_regions;
  FIELD(f->active == g->active && f->W == g->W && f->budget == g->budget && K == g->num_regions &&
            f->num_chunks == g->num_chunks,
        "prefill plan header");
  FIELD(SAME_N(f->region_req, g->region_req, K) && SAME_N(f->region_first_row, g->region_first_row, K) &&
            SAME_N(f->region_chunk, g->region_chunk, K) && SAME_N(f->extent, g->extent, K) &&
            SAME_N(f->rows_per_rank, g->rows_per_rank, K) && SAME_N(f->workspace_start, g->workspace_start, K),
        "prefill regions");
  for (int c = 0; c < f->num_chunks; c++)
    FIELD(f->chunks[c].first_region == g->chunks[c].first_region && f->chunks[c].num_regions == g->chunks[c].num_regions &&
              f->chunks[c].shard_rows == g->chunks[c].shard_rows && f->chunks[c].token_begin == g->chunks[c].token_begin &&
              f->chunks[c].token_end == g->chunks[c].token_end,
          "prefill chunks");
  const cplab_indexer_plan *u = &a->indexer, *v = &b->indexer;
  K = u->num_regions;
  FIELD(u->active == v->active && K == v->num_regions && u->num_chunks == v->num_chunks, "indexer plan header");
  FIELD(SAME_N(u->region_req, v->region_req, K) && SAME_N(u->region_chunk, v->region_chunk, K) &&
            SAME_N(u->extent, v->extent, K) && SAME_N(u->nominal_q, v->nominal_q, K) && SAME_N(u->padded, v->padded, K) &&
            SAME_N(u->padded_cu, v->padded_cu, K) && SAME_N(u->region_start, v->region_start, K),
        "indexer regions");
  for (int c = 0; c < u->num_chunks; c++) {
    const cplab_indexer_chunk *p = &u->chunks[c], *q = &v->chunks[c];
    FIELD(p->first_region == q->first_region && p->num_regions == q->num_regions && p->key_rows == q->key_rows &&
              p->padded_total == q->padded_total && p->q_begin == q->q_begin && p->q_end == q->q_end &&
              p->query_split == q->query_split && p->skip_kv_gather == q->skip_kv_gather &&
              p->token_begin == q->token_begin && p->token_end == q->token_end,
          "indexer chunks");
  }
  FIELD((u->ks == NULL) == (v->ks == NULL), "presence of indexer key bounds");
  FIELD(SAME_N(u->ks, v->ks, x->num_tokens) && SAME_N(u->ke, v->ke, x->num_tokens), "indexer key bounds");
  FIELD(a->num_collectives == b->num_collectives, "collective count");
  for (int i = 0; i < a->num_collectives; i++) {
    const cplab_collective *p = &a->collectives[i], *q = &b->collectives[i];
    FIELD(p->kind == q->kind && p->group == q->group && p->dtype == q->dtype && p->count == q->count && p->what == q->what,
          "collectives");
  }
  FIELD((a->slot_mapping == NULL) == (b->slot_mapping == NULL), "presence of token maps");
  int64_t slots = (int64_t)a->env.par.pcp * s->padded_num_tokens;
  FIELD(a->total_tokens == b->total_tokens, "total tokens");
  FIELD(SAME_N(a->slot_mapping, b->slot_mapping, a->slot_mapping ? a->total_tokens : 0) &&
            SAME_N(a->restore_idx, b->restore_idx, a->slot_mapping ? a->total_tokens : 0) &&
            SAME_N(a->gather_idx, b->gather_idx, a->slot_mapping ? slots : 0) &&
            SAME_N(a->write_mask, b->write_mask, a->slot_mapping ? slots : 0),
        "token maps");
  return 1;
}
