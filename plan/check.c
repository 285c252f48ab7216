/* Invariant checks over all ranks' plans of a step: see check.h. Written from
 * the rules of the reference, not from the layout code: where a layout op is
 * called it is the thing under test, and its answer is compared with tags or
 * with formulas spelled out here. */
#include "check.h"

#include <gsl/gsl_rng.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/kv.h"
#include "cplab/seed.h"

static const char *const rule_names[CPLAB_RULE_COUNT] = {
    "groups",       "ownership",      "per-block-slots", "query-partition", "row-order",
    "schedule",     "plan-identity",  "workspace",       "indexer-gather",  "indexer-bounds",
    "conversion",   "moe-path",       "collectives",     "empty-context"};

const char *cplab_check_rule_name(cplab_check_rule r) { return r >= 0 && r < CPLAB_RULE_COUNT ? rule_names[r] : "?"; }

typedef struct ctx {
  const cplab_step_input *in;
  cplab_rank_plan *const *plans;
  int world;
  const cplab_parallel *par;
  cplab_check *c;
} ctx;

static void violate(cplab_check *c, cplab_check_rule rule, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void violate(cplab_check *c, cplab_check_rule rule, const char *fmt, ...) {
  c->violations++;
  c->by_rule[rule]++;
  if (c->kept >= CPLAB_CHECK_KEEP) return;
  char msg[288];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(c->first[c->kept++], sizeof c->first[0], "%s: %s", rule_names[rule], msg);
}

/* Count a check; report it when it fails. Stops one loop early on failure to
 * keep reports short: callers use the value. */
#define CHECK(c, cond, rule, ...)                 \
  ((c)->checks++, (cond) ? 1 : (violate((c), (rule), __VA_ARGS__), 0))

/* Tag of request-relative token t of region k, as a shard row would hold it. */
static int64_t tag(int k, int64_t t) { return ((int64_t)k << 40) + t + 1; }

/* Request-relative token at local index j of DCP rank o (inverse of local_idx). */
static int64_t token_of(int64_t j, int o, int I, int D) { return (j / I) * I * D + (int64_t)o * I + j % I; }

/* ---- 1. groups ----------------------------------------------------------- */
static void check_groups(ctx *x) {
  const cplab_parallel *p = x->par;
  CHECK(x->c, x->world == p->pp * p->tp * p->pcp, CPLAB_RULE_GROUPS, "world %d != pp·tp·pcp", x->world);
  for (int r = 0; r < x->world; r++) {
    const cplab_rank_ids *id = &x->plans[r]->ids;
    CHECK(x->c, id->dcp_rank == (id->tp * p->pcp + id->pcp) % p->dcp, CPLAB_RULE_GROUPS,
          "rank %d: dcp_rank %d != (tp·pcp + pcp) mod dcp", r, id->dcp_rank);
  }
}

/* ---- 2, 3. ownership, slots ------------------------------------------------ */
static void check_ownership(ctx *x, int r, int64_t *marks, int64_t mark_cap) {
  const cplab_rank_plan *p = x->plans[r];
  const cplab_schedule *s = &p->sched;
  const cplab_parallel *par = x->par;
  int I = par->interleave, D = par->dcp, B = par->block_size, d = p->ids.dcp_rank;
  for (int g = 0; g < s->num_requests; g++) {
    int64_t L = s->seq_len[g], n = p->local_len[g];
    if (!CHECK(x->c, n == cplab_kv_local_len(L, d, I, D) && n <= mark_cap, CPLAB_RULE_OWNERSHIP,
               "rank %d request %d: local length %lld", r, g, (long long)n))
      continue;
    memset(marks, 0, (size_t)n * sizeof *marks);
    int64_t owned = 0;
    for (int64_t pos = 0; pos < L; pos++) {
      if (cplab_kv_owner(pos, I, D) != d) continue;
      int64_t li = cplab_kv_local_idx(pos, I, D);
      owned++;
      if (!CHECK(x->c, li < n && !marks[li], CPLAB_RULE_OWNERSHIP,
                 "rank %d request %d: local index %lld of position %lld repeated or past local length %lld", r, g,
                 (long long)li, (long long)pos, (long long)n))
        break;
      marks[li] = 1;
    }
    CHECK(x->c, owned == n, CPLAB_RULE_OWNERSHIP, "rank %d request %d owns %lld positions, local length %lld", r, g,
          (long long)owned, (long long)n);
    /* New tokens: the slot mapping agrees with the per-block form and stays in
     * this request's blocks. */
    const cplab_request *q = &x->in->step->requests[g];
    const int32_t *row = s->block_table + (size_t)g * s->max_blocks;
    int64_t nb = (L + (int64_t)B * D - 1) / ((int64_t)B * D);
    for (int64_t j = 0; j < q->new_tokens; j++) {
      int64_t pos = q->num_computed + j, slot = p->slot_mapping[s->token_offset[g] + j];
      int64_t per_block = cplab_kv_slot_per_block(par, d, row, s->max_blocks, pos);
      if (!CHECK(x->c, slot == per_block, CPLAB_RULE_PER_BLOCK,
                 "rank %d request %d position %lld: global slot %lld != per-block slot %lld", r, g, (long long)pos,
                 (long long)slot, (long long)per_block))
        break;
      if (slot < 0) continue;
      int in_blocks = 0;
      for (int64_t b = 0; b < nb && !in_blocks; b++) in_blocks = slot / B == row[b];
      if (!CHECK(x->c, in_blocks, CPLAB_RULE_OWNERSHIP, "rank %d request %d position %lld: slot %lld outside its blocks",
                 r, g, (long long)pos, (long long)slot))
        break;
    }
  }
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Each new token is written by exactly one rank of every DCP group, and a
 * rank never uses a slot twice. */
static int check_dcp_partition(ctx *x) {
  int64_t T = x->plans[0]->total_tokens;
  int64_t *slots = malloc((size_t)(T ? T : 1) * sizeof *slots);
  int *members = malloc((size_t)x->par->dcp * sizeof *members);
  if (!slots || !members) {
    free(slots);
    free(members);
    return CPLAB_ENOMEM;
  }
  for (int r = 0; r < x->world; r++) {
    cplab_group_members(x->par, CPLAB_GROUP_DCP, r, members, NULL);
    if (members[0] == r) {
      for (int64_t t = 0; t < T; t++) {
        int writers = 0;
        for (int m = 0; m < x->par->dcp; m++) writers += x->plans[members[m]]->slot_mapping[t] >= 0;
        if (!CHECK(x->c, writers == 1, CPLAB_RULE_OWNERSHIP, "token %lld (global order) has %d owners in the DCP group of rank %d",
                   (long long)t, writers, r))
          break;
      }
    }
    int64_t n = 0;
    for (int64_t t = 0; t < T; t++)
      if (x->plans[r]->slot_mapping[t] >= 0) slots[n++] = x->plans[r]->slot_mapping[t];
    qsort(slots, (size_t)n, sizeof *slots, cmp_i64);
    for (int64_t i = 1; i < n; i++)
      if (!CHECK(x->c, slots[i] != slots[i - 1], CPLAB_RULE_OWNERSHIP, "rank %d uses slot %lld twice", r, (long long)slots[i]))
        break;
  }
  free(slots);
  free(members);
  return 0;
}

/* ---- 4, 5. query partition, row order ------------------------------------------ */
static int reference_replicated(const cplab_parallel *p, const cplab_request *q) {
  if (q->phase == CPLAB_PHASE_DECODE) return 1;
  int64_t C = 2 * (int64_t)p->pcp, cs = (q->new_tokens + C - 1) / C;
  return p->dcp > 1 && (C - 1) * cs >= q->new_tokens;
}

static int check_query_partition(ctx *x) {
  const cplab_parallel *par = x->par;
  if (par->pcp == 1) return 0;
  int64_t maxq = 0;
  for (size_t g = 0; g < x->in->step->num_requests; g++)
    if (x->in->step->requests[g].new_tokens > maxq) maxq = x->in->step->requests[g].new_tokens;
  int *cover = malloc((size_t)(maxq ? maxq : 1) * sizeof *cover), *members = malloc((size_t)par->pcp * sizeof(int));
  if (!cover || !members) {
    free(cover);
    free(members);
    return CPLAB_ENOMEM;
  }
  for (int r = 0; r < x->world; r++) {
    cplab_group_members(par, CPLAB_GROUP_PCP, r, members, NULL);
    if (members[0] != r) continue; /* once per PCP group */
    for (int g = 0; g < (int)x->in->step->num_requests; g++) {
      const cplab_request *q = &x->in->step->requests[g];
      int rep = x->plans[r]->sched.replicated[g];
      CHECK(x->c, rep == reference_replicated(par, q), CPLAB_RULE_QUERY_PARTITION,
            "request %d (q=%lld, %s): replicated=%d, the rule says %d", g, (long long)q->new_tokens,
            q->phase == CPLAB_PHASE_DECODE ? "decode" : "prefill", rep, reference_replicated(par, q));
      memset(cover, 0, (size_t)q->new_tokens * sizeof *cover);
      for (int m = 0; m < par->pcp; m++) {
        const cplab_split *sp = &x->plans[members[m]]->split;
        int rows = 0;
        for (int i = 0; i < sp->num_rows; i++) {
          const cplab_row *row = &sp->rows[i];
          if (row->dummy || row->req != g) continue;
          rows++;
          for (int64_t j = row->start; j < row->start + row->len; j++) cover[j]++;
        }
        if (rep)
          CHECK(x->c, rows == 1, CPLAB_RULE_QUERY_PARTITION, "replicated request %d has %d rows on rank %d", g, rows,
                members[m]);
        else if (par->dcp > 1)
          CHECK(x->c, rows == 2, CPLAB_RULE_QUERY_PARTITION,
                "split request %d (q=%lld) has %d rows on rank %d: every rank needs a row of every prefill", g,
                (long long)q->new_tokens, rows, members[m]);
      }
      int want = rep ? par->pcp : 1;
      for (int64_t j = 0; j < q->new_tokens; j++)
        if (!CHECK(x->c, cover[j] == want, CPLAB_RULE_QUERY_PARTITION,
                   "request %d token %lld covered %d times over the PCP group of rank %d, expected %d", g,
                   (long long)j, cover[j], r, want))
          break;
    }
  }
  free(cover);
  free(members);
  return 0;
}

static void check_row_order(ctx *x, int r) {
  const cplab_split *sp = &x->plans[r]->split;
  for (int i = 1; i < sp->num_rows; i++) {
    const cplab_row *a = &sp->rows[i - 1], *b = &sp->rows[i];
    int ordered = a->is_prefill < b->is_prefill ||
                  (a->is_prefill == b->is_prefill && (a->req < b->req || (a->req == b->req && a->start < b->start)));
    if (!CHECK(x->c, ordered, CPLAB_RULE_ROW_ORDER, "rank %d rows %d, %d out of (phase, request, start) order", r, i - 1, i))
      break;
  }
  CHECK(x->c, sp->num_decode_tokens == (sp->num_decode_rows ? sp->rows[sp->num_decode_rows - 1].token_offset +
                                                                  sp->rows[sp->num_decode_rows - 1].len
                                                            : 0),
        CPLAB_RULE_ROW_ORDER, "rank %d: decode tokens do not lead", r);
}

/* ---- 6, 7. identities ------------------------------------------------------------ */
#define SAME_ARRAY(x, rule, r, a, b, n, what)                                                           \
  CHECK((x)->c, memcmp((a), (b), (size_t)(n) * sizeof *(a)) == 0, (rule), "rank %d: %s differs from rank 0's", \
        (r), (what))
#define SAME_FIELD(x, rule, r, a, b, what) \
  CHECK((x)->c, (a) == (b), (rule), "rank %d: %s %lld, rank 0 has %lld", (r), (what), (long long)(a), (long long)(b))

static void check_schedule_identity(ctx *x, int r) {
  const cplab_schedule *s = &x->plans[r]->sched, *s0 = &x->plans[0]->sched;
  int R = s0->num_requests;
  SAME_FIELD(x, CPLAB_RULE_SCHEDULE, r, s->num_requests, s0->num_requests, "request count");
  if (s->num_requests != R) return;
  SAME_ARRAY(x, CPLAB_RULE_SCHEDULE, r, s->seq_len, s0->seq_len, R, "seq_lens");
  SAME_ARRAY(x, CPLAB_RULE_SCHEDULE, r, s->replicated, s0->replicated, R, "replication");
  SAME_ARRAY(x, CPLAB_RULE_SCHEDULE, r, s->nominal_q, s0->nominal_q, R, "nominal chunk query lengths");
  SAME_FIELD(x, CPLAB_RULE_SCHEDULE, r, s->all_rows_replicated, s0->all_rows_replicated, "all_rows_replicated");
  SAME_FIELD(x, CPLAB_RULE_SCHEDULE, r, s->padded_num_tokens, s0->padded_num_tokens, "padded tokens");
  SAME_FIELD(x, CPLAB_RULE_SCHEDULE, r, s->dispatch_rows, s0->dispatch_rows, "dispatch rows");
  SAME_FIELD(x, CPLAB_RULE_SCHEDULE, r, s->dispatch_tokens, s0->dispatch_tokens, "dispatch tokens");
  SAME_FIELD(x, CPLAB_RULE_SCHEDULE, r, s->dispatch_longest, s0->dispatch_longest, "dispatch longest row");
  SAME_FIELD(x, CPLAB_RULE_SCHEDULE, r, s->moe_fast_path, s0->moe_fast_path, "MoE path");
  SAME_ARRAY(x, CPLAB_RULE_SCHEDULE, r, s->block_table, s0->block_table, (size_t)R * s0->max_blocks, "block table");
}

/* vLLM gathers prefill KV only under PCP + DCP (pcp_dcp_kv_gather in
 * FlashMLASparseMetadataBuilder.__init__, the same condition in the indexer's
 * builder): with DCP and no PCP neither gathered plan may exist. */
static void check_gather_rule(ctx *x, int r) {
  const cplab_rank_plan *p = x->plans[r];
  /* Checked where the rule decides something: DCP without PCP. Under PCP +
   * DCP the workspace and indexer checks below use the plan, and with DCP 1
   * there is nothing to gather (the check counts of those runs stay as they
   * were). */
  if (x->par->pcp != 1 || x->par->dcp <= 1) return;
  int prefill = 0;
  for (int i = 0; i < p->split.num_rows; i++) prefill |= p->split.rows[i].is_prefill && !p->split.rows[i].dummy;
  CHECK(x->c, !p->prefill.active && !p->indexer.active, CPLAB_RULE_PLAN,
        "rank %d: a gathered prefill plan (%d) or indexer plan (%d) with pcp = 1 and dcp = %d (%s prefill rows); vLLM "
        "gathers prefill KV only when pcp > 1 and dcp > 1",
        r, p->prefill.active, p->indexer.active, x->par->dcp, prefill ? "with" : "without");
}

static void check_plan_identity(ctx *x, int r) {
  const cplab_rank_plan *p = x->plans[r], *p0 = x->plans[0];
  const cplab_prefill_plan *a = &p->prefill, *b = &p0->prefill;
  check_gather_rule(x, r);
  SAME_FIELD(x, CPLAB_RULE_PLAN, r, a->active, b->active, "gathered-prefill activity");
  SAME_FIELD(x, CPLAB_RULE_PLAN, r, a->num_regions, b->num_regions, "region count");
  SAME_FIELD(x, CPLAB_RULE_PLAN, r, a->num_chunks, b->num_chunks, "prefill chunk count");
  if (a->num_regions == b->num_regions && a->num_regions > 0) {
    int K = a->num_regions;
    SAME_ARRAY(x, CPLAB_RULE_PLAN, r, a->region_req, b->region_req, K, "region request order");
    SAME_ARRAY(x, CPLAB_RULE_PLAN, r, a->extent, b->extent, K, "region extents");
    SAME_ARRAY(x, CPLAB_RULE_PLAN, r, a->rows_per_rank, b->rows_per_rank, K, "rows_per_rank");
    SAME_ARRAY(x, CPLAB_RULE_PLAN, r, a->workspace_start, b->workspace_start, K, "workspace_starts");
  }
  for (int c = 0; c < a->num_chunks && c < b->num_chunks; c++) {
    SAME_FIELD(x, CPLAB_RULE_PLAN, r, a->chunks[c].shard_rows, b->chunks[c].shard_rows, "shard_rows");
    SAME_FIELD(x, CPLAB_RULE_PLAN, r, a->chunks[c].first_region, b->chunks[c].first_region, "chunk boundary");
  }
  for (int k = 0; k < a->num_regions; k++) {
    int64_t need = 0;
    for (int o = 0; o < x->par->dcp; o++) {
      int64_t n = cplab_kv_local_len(a->extent[k], o, x->par->interleave, x->par->dcp);
      if (n > need) need = n;
    }
    CHECK(x->c, a->rows_per_rank[k] >= need, CPLAB_RULE_PLAN,
          "rank %d region %d: rows_per_rank %lld < largest shard %lld (extent %lld)", r, k,
          (long long)a->rows_per_rank[k], (long long)need, (long long)a->extent[k]);
  }
  for (int c = 0; c < a->num_chunks; c++)
    CHECK(x->c, a->chunks[c].shard_rows <= p->env.max_gathered_rows / x->par->dcp, CPLAB_RULE_PLAN,
          "rank %d chunk %d: shard_rows %lld over the budget", r, c, (long long)a->chunks[c].shard_rows);
  const cplab_indexer_plan *ia = &p->indexer, *ib = &p0->indexer;
  SAME_FIELD(x, CPLAB_RULE_PLAN, r, ia->num_chunks, ib->num_chunks, "indexer chunk count");
  if (ia->num_regions == ib->num_regions && ia->num_regions > 0) {
    SAME_ARRAY(x, CPLAB_RULE_PLAN, r, ia->padded, ib->padded, ia->num_regions, "indexer padded shard rows");
    SAME_ARRAY(x, CPLAB_RULE_PLAN, r, ia->nominal_q, ib->nominal_q, ia->num_regions, "indexer query lengths");
  }
  for (int c = 0; c < ia->num_chunks && c < ib->num_chunks; c++) {
    SAME_FIELD(x, CPLAB_RULE_PLAN, r, ia->chunks[c].padded_total, ib->chunks[c].padded_total, "indexer shard rows");
    SAME_FIELD(x, CPLAB_RULE_PLAN, r, ia->chunks[c].skip_kv_gather, ib->chunks[c].skip_kv_gather, "skip_kv_gather");
  }
}

/* ---- 8, 11. workspace and conversion -------------------------------------------- */
/* Fill the rank-major workspace of prefill chunk c the way the all-gather
 * does: rank o's shard holds its tokens of each region in local order at
 * workspace_start; tokens past rows_per_rank or the shard are violations. */
static int64_t *gather_workspace(ctx *x, int r, const cplab_prefill_plan *pl, int c) {
  int I = x->par->interleave, W = x->par->dcp;
  const cplab_prefill_chunk *ch = &pl->chunks[c];
  int64_t S = ch->shard_rows;
  int64_t *ws = calloc((size_t)(W * S > 0 ? W * S : 1), sizeof *ws);
  if (!ws) return NULL;
  for (int o = 0; o < W; o++)
    for (int k = ch->first_region; k < ch->first_region + ch->num_regions; k++) {
      int64_t n = cplab_kv_local_len(pl->extent[k], o, I, W);
      for (int64_t j = 0; j < n; j++) {
        int64_t row = o * S + pl->workspace_start[k] + j;
        if (!CHECK(x->c, j < pl->rows_per_rank[k] && pl->workspace_start[k] + j < S && !ws[row], CPLAB_RULE_WORKSPACE,
                   "rank %d chunk %d: shard row %lld of DCP rank %d (region %d, local index %lld) is past the "
                   "region's rows or overlaps another region",
                   r, c, (long long)(pl->workspace_start[k] + j), o, k, (long long)j))
          break;
        ws[row] = tag(k, token_of(j, o, I, W));
      }
    }
  return ws;
}

static void check_region_rows(ctx *x, int r, const cplab_rank_plan *p, int c, const int64_t *ws) {
  const cplab_prefill_plan *pl = &p->prefill;
  const cplab_prefill_chunk *ch = &pl->chunks[c];
  int64_t size = (int64_t)x->par->dcp * ch->shard_rows;
  for (int k = ch->first_region; k < ch->first_region + ch->num_regions; k++)
    for (int64_t t = 0; t < pl->extent[k]; t++) {
      int64_t row = cplab_layout_workspace_row(p->layout, &p->env, pl, k, t);
      if (!CHECK(x->c, row >= 0 && row < size && ws[row] == tag(k, t), CPLAB_RULE_WORKSPACE,
                 "rank %d chunk %d: token %lld of region %d (request %d) maps to workspace row %lld, which does not "
                 "hold it",
                 r, c, (long long)t, k, pl->region_req[k], (long long)row))
        break;
    }
}

/* Random top-k entries of local prefill tokens of chunk c: -1 stays -1,
 * anything else must land on the row holding that token of its region. */
static void check_prefill_conversion(ctx *x, int r, const cplab_rank_plan *p, int c, const int64_t *ws, gsl_rng *rng) {
  const cplab_prefill_plan *pl = &p->prefill;
  const cplab_prefill_chunk *ch = &pl->chunks[c];
  const cplab_split *sp = &p->split;
  int64_t size = (int64_t)x->par->dcp * ch->shard_rows;
  int k = ch->first_region;
  for (int i = pl->region_first_row[k]; i < sp->num_rows && k < ch->first_region + ch->num_regions; i++) {
    if (k + 1 < pl->num_regions && i == pl->region_first_row[k + 1]) k++;
    if (k >= ch->first_region + ch->num_regions) break;
    const cplab_row *row = &sp->rows[i];
    for (int64_t j = 0; j < row->len && j < 4; j++) {
      for (int e = 0; e < 16; e++) {
        int32_t tok = gsl_rng_uniform(rng) < 0.15 ? -1 : (int32_t)gsl_rng_uniform_int(rng, (unsigned long)pl->extent[k]);
        int32_t out = cplab_layout_convert_prefill(p->layout, &p->env, pl, k, tok, p->ids.dcp_rank);
        int ok = tok < 0 ? out == -1 : (out >= 0 && out < size && ws[out] == tag(k, tok));
        if (!CHECK(x->c, ok, CPLAB_RULE_CONVERSION,
                   "rank %d prefill token %lld (request %d, region %d): top-k %d converted to %d, expected the "
                   "workspace row holding that token",
                   r, (long long)(row->token_offset + j), row->req, k, tok, out))
          return;
      }
    }
  }
}

static int check_workspace_and_conversion(ctx *x, int r, gsl_rng *rng) {
  const cplab_rank_plan *p = x->plans[r];
  for (int c = 0; c < p->prefill.num_chunks; c++) {
    int64_t *ws = gather_workspace(x, r, &p->prefill, c);
    if (!ws) return CPLAB_ENOMEM;
    check_region_rows(x, r, p, c, ws);
    check_prefill_conversion(x, r, p, c, ws, rng);
    free(ws);
  }
  return 0;
}

/* Rows on the local shard (decodes; every row under DCP without PCP): -1 for
 * -1, remote owners and blocks past the table, else the slot of the token in
 * this rank's cache. */
static void check_decode_conversion(ctx *x, int r, gsl_rng *rng) {
  const cplab_rank_plan *p = x->plans[r];
  const cplab_schedule *s = &p->sched;
  for (int i = 0; i < p->split.num_rows; i++) {
    const cplab_row *row = &p->split.rows[i];
    if (row->dummy || !cplab_row_on_local_shard(x->par, row)) continue;
    const int32_t *bt = s->block_table + (size_t)row->req * s->max_blocks;
    int64_t beyond = (int64_t)s->max_blocks * x->par->block_size * x->par->dcp;
    for (int e = 0; e < 24; e++) {
      double u = gsl_rng_uniform(rng);
      int32_t tok = u < 0.1   ? -1
                    : u < 0.15 ? (int32_t)(beyond + (int64_t)gsl_rng_uniform_int(rng, 1000))
                               : (int32_t)gsl_rng_uniform_int(rng, (unsigned long)row->seq_len);
      int32_t out = cplab_layout_convert_decode(p->layout, &p->env, bt, s->max_blocks, tok, p->ids.dcp_rank);
      int64_t want = tok < 0 ? -1 : cplab_kv_slot_global(x->par, p->ids.dcp_rank, bt, s->max_blocks, tok);
      if (!CHECK(x->c, out == want, CPLAB_RULE_CONVERSION,
                 "rank %d decode row of request %d: top-k %d converted to %d, expected %lld", r, row->req, tok, out,
                 (long long)want))
        return;
    }
  }
}

/* ---- 9, 10. indexer ------------------------------------------------------------------ */
static int check_indexer(ctx *x, int r) {
  const cplab_rank_plan *p = x->plans[r];
  const cplab_indexer_plan *ip = &p->indexer;
  int I = x->par->interleave, W = x->par->dcp;
  for (int c = 0; c < ip->num_chunks; c++) {
    const cplab_indexer_chunk *ch = &ip->chunks[c];
    if (ch->skip_kv_gather) continue;
    int64_t S = ch->padded_total;
    int64_t *keys = calloc((size_t)(W * S > 0 ? W * S : 1), sizeof *keys);
    if (!keys) return CPLAB_ENOMEM;
    for (int o = 0; o < W; o++)
      for (int k = ch->first_region; k < ch->first_region + ch->num_regions; k++)
        for (int64_t j = 0; j < cplab_kv_local_len(ip->extent[k], o, I, W); j++) {
          int64_t row = o * S + ip->padded_cu[k] + j;
          if (!CHECK(x->c, j < ip->padded[k] && !keys[row], CPLAB_RULE_INDEXER_GATHER,
                     "rank %d indexer chunk %d: key shard row %lld of DCP rank %d overflows region %d", r, c,
                     (long long)(ip->padded_cu[k] + j), o, k))
            break;
          keys[row] = tag(k, token_of(j, o, I, W));
        }
    for (int k = ch->first_region; k < ch->first_region + ch->num_regions; k++)
      for (int64_t t = 0; t < ip->extent[k]; t++) {
        int64_t row = cplab_layout_deinterleave(p->layout, &p->env, ip, k, t);
        if (!CHECK(x->c, row >= 0 && row < W * S && keys[row] == tag(k, t), CPLAB_RULE_INDEXER_GATHER,
                   "rank %d indexer chunk %d: deinterleaved key %lld of region %d (request %d) reads gathered row "
                   "%lld, which holds another key",
                   r, c, (long long)t, k, ip->region_req[k], (long long)row))
          break;
      }
    free(keys);
  }
  /* Key bounds: ks = region start, ke = ks + position + 1, within the region. */
  const cplab_split *sp = &p->split;
  for (int k = 0; k < ip->num_regions; k++) {
    int first = p->prefill.region_first_row[k], last = k + 1 < ip->num_regions ? p->prefill.region_first_row[k + 1] : sp->num_rows;
    for (int i = first; i < last; i++)
      for (int64_t j = 0; j < sp->rows[i].len; j++) {
        int64_t m = sp->rows[i].token_offset + j, pos = sp->rows[i].start_pos + j;
        if (!CHECK(x->c, ip->ks[m] == ip->region_start[k] && ip->ke[m] == ip->ks[m] + pos + 1 &&
                             ip->ke[m] - ip->ks[m] <= ip->extent[k],
                   CPLAB_RULE_INDEXER_BOUNDS, "rank %d local token %lld: ks %lld ke %lld for position %lld of region %d",
                   r, (long long)m, (long long)ip->ks[m], (long long)ip->ke[m], (long long)pos, k))
          break;
      }
  }
  return 0;
}

/* ---- 13, 14. MoE path and collectives ------------------------------------------------------- */
static void check_moe(ctx *x, int r) {
  const cplab_schedule *s = &x->plans[r]->sched;
  int want = x->par->pcp > 1 && s->all_rows_replicated && s->runtime_mode != CPLAB_GRAPH_PIECEWISE;
  CHECK(x->c, s->moe_fast_path == want, CPLAB_RULE_MOE, "rank %d: MoE fast path %d, rule says %d", r, s->moe_fast_path, want);
  CHECK(x->c, !(x->par->pcp > 1 && s->runtime_mode == CPLAB_GRAPH_FULL && !s->uniform_decode), CPLAB_RULE_MOE,
        "rank %d: a FULL graph over a mixed batch under PCP", r);
}

static int same_collective(const cplab_collective *a, const cplab_collective *b) {
  return a->kind == b->kind && a->group == b->group && a->dtype == b->dtype && a->count == b->count &&
         a->what == b->what;
}

static const cplab_collective *nth_on_group(const cplab_rank_plan *p, cplab_group_kind g, int n) {
  for (int i = 0; i < p->num_collectives; i++)
    if (p->collectives[i].group == g && n-- == 0) return &p->collectives[i];
  return NULL;
}

static int check_collectives(ctx *x, int r) {
  for (int k = 0; k < 3; k++) {
    int size = cplab_group_size(x->par, (cplab_group_kind)k);
    int *m = malloc((size_t)size * sizeof *m);
    if (!m) return CPLAB_ENOMEM;
    cplab_group_members(x->par, (cplab_group_kind)k, r, m, NULL);
    for (int j = 0; j < size; j++) {
      if (m[j] == r) continue;
      for (int n = 0;; n++) {
        const cplab_collective *a = nth_on_group(x->plans[r], (cplab_group_kind)k, n);
        const cplab_collective *b = nth_on_group(x->plans[m[j]], (cplab_group_kind)k, n);
        if (!a && !b) break;
        if (!CHECK(x->c, a && b && same_collective(a, b), CPLAB_RULE_COLLECTIVES,
                   "%s collective #%d: rank %d issues %s %s[%lld], rank %d issues %s %s[%lld]: a real run hangs here",
                   cplab_group_name((cplab_group_kind)k), n, r, a ? cplab_coll_what_name(a->what) : "nothing",
                   a ? cplab_coll_kind_name(a->kind) : "", a ? (long long)a->count : 0LL, m[j], b ? cplab_coll_what_name(b->what) : "nothing",
                   b ? cplab_coll_kind_name(b->kind) : "", b ? (long long)b->count : 0LL))
          break;
      }
    }
    free(m);
  }
  return 0;
}

int cplab_check_step(const cplab_step_input *in, cplab_rank_plan *const *plans, int world, uint64_t topk_seed,
                   cplab_check *out, cplab_diag *d) {
  ctx x = {in, plans, world, in->par, out};
  for (int r = 0; r < world; r++)
    if (!plans[r] || !plans[r]->slot_mapping) CPLAB_FAIL(d, CPLAB_EINVAL, "rank %d has no plan with token maps", r);
  int64_t max_len = 0;
  for (int g = 0; g < plans[0]->sched.num_requests; g++)
    if (plans[0]->sched.seq_len[g] > max_len) max_len = plans[0]->sched.seq_len[g];
  int64_t *marks = malloc((size_t)(max_len ? max_len : 1) * sizeof *marks);
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  int rc = marks && rng ? 0 : CPLAB_ENOMEM;
  if (!rc) gsl_rng_set(rng, cplab_seed_stream(topk_seed, 0x70CC));
  if (!rc) check_groups(&x);
  if (!rc) rc = check_dcp_partition(&x);
  if (!rc) rc = check_query_partition(&x);
  for (int r = 0; !rc && r < world; r++) {
    check_ownership(&x, r, marks, max_len);
    check_row_order(&x, r);
    check_schedule_identity(&x, r);
    check_plan_identity(&x, r);
    check_moe(&x, r);
    check_decode_conversion(&x, r, rng);
    rc = check_workspace_and_conversion(&x, r, rng);
    if (!rc) rc = check_indexer(&x, r);
    if (!rc) rc = check_collectives(&x, r);
  }
  free(marks);
  gsl_rng_free(rng);
  if (rc) CPLAB_FAIL(d, rc, "out of memory while checking a step");
  return 0;
}

int cplab_check_empty_context(const cplab_layout *layout, const cplab_parallel *par, const cplab_model *model,
                            cplab_check *out, cplab_diag *d) {
  if (!cplab_parallel_gathers_prefill(par)) return 0; /* no gathered prefill plan to build */
  cplab_request req = {.id = 0, .num_computed = 0, .new_tokens = 0, .phase = CPLAB_PHASE_PREFILL};
  cplab_step step = {1, &req};
  cplab_step_input in = {&step, 0, 1, par, model, layout};
  cplab_rank_plan *p = NULL;
  cplab_diag local = {0};
  int rc = cplab_rank_plan_derive(&in, 0, 0, &p, &local);
  (void)d;
  CHECK(out, rc != 0 && strstr(local.msg, "empty") != NULL, CPLAB_RULE_EMPTY_CONTEXT,
        "layout %s accepted a prefill region of extent 0", layout->name);
  cplab_rank_plan_free(p);
  return 0;
}
