/* Plan digests: see cplab_rank_plan_shared_digest in include/cplab/plan.h.
 * Fields are fed one by one (never whole structs, whose padding bytes are
 * unspecified), as fixed-width integers. */
#include <xxhash.h>

#include "cplab/plan.h"

static void put(XXH3_state_t *h, int64_t v) { XXH3_64bits_update(h, &v, sizeof v); }

static void put_array64(XXH3_state_t *h, const int64_t *a, int n) {
  put(h, n);
  if (n > 0) XXH3_64bits_update(h, a, (size_t)n * sizeof *a);
}

static void put_array32(XXH3_state_t *h, const int32_t *a, size_t n) {
  put(h, (int64_t)n);
  if (n > 0) XXH3_64bits_update(h, a, n * sizeof *a);
}

/* The parts, fed in this order into the shared digest. */
static void feed_schedule(XXH3_state_t *h, const cplab_rank_plan *p) {
  const cplab_schedule *s = &p->sched;
  put_array64(h, s->seq_len, s->num_requests);
  put_array64(h, s->nominal_q, s->num_requests);
  for (int g = 0; g < s->num_requests; g++) put(h, s->replicated[g]);
  put(h, s->all_rows_replicated);
}

static void feed_dispatch(XXH3_state_t *h, const cplab_rank_plan *p) {
  const cplab_schedule *s = &p->sched;
  put(h, s->padded_num_tokens);
  put(h, s->padded_prefill_tokens);
  put(h, s->dispatch_rows);
  put(h, s->dispatch_tokens);
  put(h, s->dispatch_longest);
}

static void feed_modes(XXH3_state_t *h, const cplab_rank_plan *p) {
  put(h, p->sched.runtime_mode);
  put(h, p->sched.moe_fast_path);
}

static void feed_block_table(XXH3_state_t *h, const cplab_rank_plan *p) {
  const cplab_schedule *s = &p->sched;
  put_array32(h, s->block_table, (size_t)s->num_requests * (size_t)s->max_blocks);
}

static void feed_prefill(XXH3_state_t *h, const cplab_rank_plan *p) {
  const cplab_prefill_plan *f = &p->prefill;
  put(h, f->active);
  put_array32(h, f->region_req, (size_t)f->num_regions);
  put_array64(h, f->extent, f->num_regions);
  put_array64(h, f->rows_per_rank, f->num_regions);
  put_array64(h, f->workspace_start, f->num_regions);
  put(h, f->num_chunks);
  for (int c = 0; c < f->num_chunks; c++) {
    put(h, f->chunks[c].first_region);
    put(h, f->chunks[c].num_regions);
    put(h, f->chunks[c].shard_rows);
  }
}

static void feed_indexer(XXH3_state_t *h, const cplab_rank_plan *p) {
  const cplab_indexer_plan *x = &p->indexer;
  put(h, x->active);
  put_array64(h, x->nominal_q, x->num_regions);
  put_array64(h, x->padded, x->num_regions);
  put_array64(h, x->padded_cu, x->num_regions);
  put_array64(h, x->region_start, x->num_regions);
  put(h, x->num_chunks);
  for (int c = 0; c < x->num_chunks; c++) {
    const cplab_indexer_chunk *ch = &x->chunks[c];
    put(h, ch->first_region);
    put(h, ch->num_regions);
    put(h, ch->key_rows);
    put(h, ch->padded_total);
    put(h, ch->q_begin);
    put(h, ch->q_end);
    put(h, ch->skip_kv_gather);
  }
}

typedef void (*feed_fn)(XXH3_state_t *h, const cplab_rank_plan *p);
static const struct {
  feed_fn feed;
  const char *name;
} parts[CPLAB_PLAN_PART_COUNT] = {
    {feed_schedule, "schedule (seq_lens, nominal query lengths, replication)"},
    {feed_dispatch, "padding and dispatch shape"},
    {feed_modes, "graph mode and MoE path"},
    {feed_block_table, "block table"},
    {feed_prefill, "gathered prefill plan (regions, rows_per_rank, workspace_starts, chunks)"},
    {feed_indexer, "indexer plan (regions, padding, chunks)"},
};

const char *cplab_plan_part_name(cplab_plan_part part) {
  return part >= 0 && part < CPLAB_PLAN_PART_COUNT ? parts[part].name : "?";
}

void cplab_rank_plan_part_digests(const cplab_rank_plan *p, uint64_t out[CPLAB_PLAN_PART_COUNT]) {
  XXH3_state_t *h = XXH3_createState();
  for (int i = 0; i < CPLAB_PLAN_PART_COUNT; i++) {
    out[i] = 0;
    if (!h) continue;
    XXH3_64bits_reset(h);
    parts[i].feed(h, p);
    out[i] = XXH3_64bits_digest(h);
  }
  XXH3_freeState(h);
}

uint64_t cplab_rank_plan_shared_digest(const cplab_rank_plan *p) {
  XXH3_state_t *h = XXH3_createState();
  if (!h) return 0;
  XXH3_64bits_reset(h);
  for (int i = 0; i < CPLAB_PLAN_PART_COUNT; i++) parts[i].feed(h, p);
  uint64_t out = XXH3_64bits_digest(h);
  XXH3_freeState(h);
  return out;
}

uint64_t cplab_rank_plan_collective_digest(const cplab_rank_plan *p, cplab_group_kind group) {
  XXH3_state_t *h = XXH3_createState();
  if (!h) return 0;
  XXH3_64bits_reset(h);
  for (int i = 0; i < p->num_collectives; i++) {
    const cplab_collective *c = &p->collectives[i];
    if (c->group != group) continue;
    put(h, c->kind);
    put(h, c->dtype);
    put(h, c->count);
    put(h, c->what);
  }
  uint64_t out = XXH3_64bits_digest(h);
  XXH3_freeState(h);
  return out;
}
