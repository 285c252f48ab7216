/* The shared schedule of a step (§3.6, §3.7, §8, §9) and the PCP split of one
 * rank (§3.1, §3.5). Both depend only on the scheduler output, the parallel
 * layout and the layout plugin, so every rank derives the same schedule and
 * any rank can derive any other rank's rows. */
#include <gsl/gsl_rng.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/kv.h"
#include "cplab/plan.h"
#include "cplab/seed.h"

/* DualChunkSwap: chunk i of a request with q new tokens cut into 2P chunks. */
static void chunk_bounds(int64_t q, int P, int i, int64_t *begin, int64_t *len) {
  int64_t C = 2 * (int64_t)P, cs = (q + C - 1) / C;
  int64_t b = i * cs, e = (i + 1) * cs < q ? (i + 1) * cs : q;
  *begin = b;
  *len = e > b ? e - b : 0;
}

/* Rows, tokens and longest row of PCP rank r, without building them. */
static void rank_shape(const cplab_schedule *s, const cplab_step *step, int P, int r, int *rows, int64_t *tokens,
                       int64_t *longest, int64_t *prefill_tokens) {
  *rows = 0;
  *tokens = *longest = *prefill_tokens = 0;
  for (int g = 0; g < s->num_requests; g++) {
    const cplab_request *q = &step->requests[g];
    int64_t lens[2] = {q->new_tokens, 0};
    if (!s->replicated[g]) {
      int64_t b;
      chunk_bounds(q->new_tokens, P, r, &b, &lens[0]);
      chunk_bounds(q->new_tokens, P, 2 * P - 1 - r, &b, &lens[1]);
    }
    for (int k = 0; k < 2; k++) {
      if (lens[k] <= 0) continue;
      (*rows)++;
      *tokens += lens[k];
      if (q->phase == CPLAB_PHASE_PREFILL) *prefill_tokens += lens[k];
      if (lens[k] > *longest) *longest = lens[k];
    }
  }
  if (*rows == 0) *rows = 1; /* the dummy 0-token row */
}

/* Physical block ids: request g gets ceil(seq_len / (B·D)) logical blocks;
 * ids are a seeded permutation of 1..N (0 is the null block that pads rows),
 * the same on every rank because every rank draws them from the same seed. */
static int build_block_table(cplab_schedule *s, const cplab_step_input *in, cplab_diag *d) {
  const cplab_parallel *par = in->par;
  int64_t span = (int64_t)par->block_size * par->dcp, total = 0;
  s->max_blocks = cplab_kv_max_blocks(par);
  for (int g = 0; g < s->num_requests; g++) total += (s->seq_len[g] + span - 1) / span;
  s->block_table = calloc((size_t)s->num_requests * (size_t)s->max_blocks, sizeof(int32_t));
  int32_t *ids = malloc((size_t)(total ? total : 1) * sizeof(int32_t));
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  if (!s->block_table || !ids || !rng) {
    free(ids);
    gsl_rng_free(rng);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for the block table");
  }
  for (int64_t i = 0; i < total; i++) ids[i] = (int32_t)(i + 1);
  gsl_rng_set(rng, cplab_seed_stream(in->seed, 1 + (uint64_t)in->step_index));
  for (int64_t i = total - 1; i > 0; i--) { /* Fisher-Yates */
    int64_t j = (int64_t)gsl_rng_uniform_int(rng, (unsigned long)(i + 1));
    int32_t t = ids[i];
    ids[i] = ids[j];
    ids[j] = t;
  }
  int64_t next = 0;
  for (int g = 0; g < s->num_requests; g++) {
    int64_t nb = (s->seq_len[g] + span - 1) / span;
    for (int64_t b = 0; b < nb && b < s->max_blocks; b++) s->block_table[(size_t)g * s->max_blocks + b] = ids[next + b];
    next += nb;
  }
  free(ids);
  gsl_rng_free(rng);
  return 0;
}

static cplab_graph_mode runtime_mode(cplab_graph_mode configured, int uniform_decode) {
  switch (configured) {
    case CPLAB_GRAPH_FULL_DECODE_ONLY: return uniform_decode ? CPLAB_GRAPH_FULL : CPLAB_GRAPH_NONE;
    case CPLAB_GRAPH_FULL_AND_PIECEWISE: return uniform_decode ? CPLAB_GRAPH_FULL : CPLAB_GRAPH_PIECEWISE;
    default: return configured;
  }
}

void cplab_schedule_free(cplab_schedule *s) {
  free(s->seq_len);
  free(s->replicated);
  free(s->nominal_q);
  free(s->token_offset);
  free(s->block_table);
  memset(s, 0, sizeof *s);
}

int cplab_schedule_derive(const cplab_step_input *in, const cplab_layout_env *env, cplab_schedule *s, cplab_diag *d) {
  const cplab_step *step = in->step;
  int R = (int)step->num_requests, P = in->par->pcp;
  memset(s, 0, sizeof *s);
  s->num_requests = R;
  s->seq_len = calloc((size_t)R + 1, sizeof(int64_t));
  s->replicated = calloc((size_t)R + 1, 1);
  s->nominal_q = calloc((size_t)R + 1, sizeof(int64_t));
  s->token_offset = calloc((size_t)R + 1, sizeof(int64_t));
  if (!s->seq_len || !s->replicated || !s->nominal_q || !s->token_offset) {
    cplab_schedule_free(s);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for the schedule");
  }
  s->all_rows_replicated = 1;
  s->uniform_decode = 1;
  for (int g = 0; g < R; g++) {
    const cplab_request *q = &step->requests[g];
    int prefill = q->phase == CPLAB_PHASE_PREFILL;
    s->seq_len[g] = q->num_computed + q->new_tokens;
    s->replicated[g] = (uint8_t)(cplab_layout_replicated(in->layout, env, q->new_tokens, prefill) != 0);
    s->nominal_q[g] = s->replicated[g] ? q->new_tokens : (q->new_tokens + 2 * P - 1) / (2 * P);
    s->token_offset[g + 1] = s->token_offset[g] + q->new_tokens;
    s->all_rows_replicated &= s->replicated[g];
    s->uniform_decode &= !prefill && q->new_tokens == 1 + in->par->num_spec_tokens; /* decode_threshold */
  }
  s->padded_num_tokens = 0;
  for (int r = 0; r < P; r++) {
    int rows;
    int64_t tokens, longest, prefill_tokens;
    rank_shape(s, step, P, r, &rows, &tokens, &longest, &prefill_tokens);
    if (tokens > s->padded_num_tokens) s->padded_num_tokens = tokens;
    if (tokens > s->dispatch_tokens) s->dispatch_tokens = (int)tokens;
    if (rows > s->dispatch_rows) s->dispatch_rows = rows;
    if (longest > s->dispatch_longest) s->dispatch_longest = longest;
    if (prefill_tokens > s->padded_prefill_tokens) s->padded_prefill_tokens = prefill_tokens;
  }
  s->runtime_mode = runtime_mode(in->par->graph_mode, s->uniform_decode);
  s->moe_fast_path = P > 1 && s->all_rows_replicated && s->runtime_mode != CPLAB_GRAPH_PIECEWISE;
  int rc = build_block_table(s, in, d);
  if (rc) cplab_schedule_free(s);
  return rc;
}

void cplab_split_free(cplab_split *s) {
  free(s->rows);
  memset(s, 0, sizeof *s);
}

static void add_row(cplab_split *sp, const cplab_schedule *s, const cplab_request *q, int g, int64_t start,
                    int64_t len, int dcp_rank, const cplab_parallel *par) {
  cplab_row *r = &sp->rows[sp->num_rows++];
  r->req = g;
  r->is_prefill = q->phase == CPLAB_PHASE_PREFILL;
  r->replicated = s->replicated[g];
  r->dummy = 0;
  r->start = start;
  r->len = len;
  r->start_pos = q->num_computed + start;
  r->seq_len = r->start_pos + len;
  r->dcp_local_seq_len = cplab_kv_local_len(r->seq_len, dcp_rank, par->interleave, par->dcp);
  r->token_offset = sp->num_tokens;
  sp->num_tokens += len;
}

/* A rank without rows still runs the step (its collectives must match the
 * others'): PCPManager.partition_batch gives it an empty slice of request 0,
 * which the batch then places at request 0's computed position (start_pos =
 * seq_len = num_computed) and marks prefilling when request 0 is. */
static void add_placeholder(cplab_split *sp, const cplab_schedule *s, const cplab_step *step, int dcp_rank,
                            const cplab_parallel *par) {
  const cplab_request *q = &step->requests[0];
  add_row(sp, s, q, 0, 0, 0, dcp_rank, par);
  sp->rows[0].dummy = 1;
  if (!sp->rows[0].is_prefill) sp->num_decode_rows = 1; /* decodes lead */
}

int cplab_split_derive(const cplab_schedule *s, const cplab_step *step, const cplab_layout_env *env, int pcp_rank,
                       int dcp_rank, cplab_split *sp, cplab_diag *d) {
  int P = env->par.pcp;
  memset(sp, 0, sizeof *sp);
  sp->rows = calloc(2 * (size_t)s->num_requests + 1, sizeof(cplab_row));
  if (!sp->rows) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for %d rows", 2 * s->num_requests + 1);
  /* Decodes first, then prefills; requests ascending; head chunk before tail. */
  for (int pass = 0; pass < 2; pass++) {
    for (int g = 0; g < s->num_requests; g++) {
      const cplab_request *q = &step->requests[g];
      if ((q->phase == CPLAB_PHASE_PREFILL) != pass) continue;
      if (s->replicated[g]) {
        add_row(sp, s, q, g, 0, q->new_tokens, dcp_rank, &env->par);
        continue;
      }
      int chunks[2] = {pcp_rank, 2 * P - 1 - pcp_rank};
      for (int k = 0; k < 2; k++) {
        int64_t b, len;
        chunk_bounds(q->new_tokens, P, chunks[k], &b, &len);
        if (len > 0) add_row(sp, s, q, g, b, len, dcp_rank, &env->par);
      }
    }
    if (pass == 0) {
      sp->num_decode_rows = sp->num_rows;
      sp->num_decode_tokens = sp->num_tokens;
    }
  }
  if (sp->num_rows == 0) add_placeholder(sp, s, step, dcp_rank, &env->par);
  return 0;
}

int cplab_row_on_local_shard(const cplab_parallel *par, const cplab_row *row) {
  return !row->is_prefill || (par->dcp > 1 && !cplab_parallel_gathers_prefill(par));
}

int cplab_row_dcp_combined(const cplab_parallel *par, const cplab_row *row) {
  return par->dcp > 1 && cplab_row_on_local_shard(par, row);
}

int64_t cplab_split_shard_tokens(const cplab_split *s, const cplab_parallel *par) {
  return par->dcp > 1 && !cplab_parallel_gathers_prefill(par) ? s->num_tokens : s->num_decode_tokens;
}

const cplab_row *cplab_split_row_of(const cplab_split *s, int64_t t) {
  for (int i = 0; i < s->num_rows; i++) {
    const cplab_row *r = &s->rows[i];
    if (!r->dummy && t >= r->token_offset && t < r->token_offset + r->len) return r;
  }
  return NULL;
}

int cplab_prefill_region_of(const cplab_prefill_plan *pl, int req) {
  for (int k = 0; k < pl->num_regions; k++)
    if (pl->region_req[k] == req) return k;
  return -1;
}

int cplab_indexer_region_of(const cplab_indexer_plan *pl, int req) {
  for (int k = 0; k < pl->num_regions; k++)
    if (pl->region_req[k] == req) return k;
  return -1;
}
