/* One rank's share of the measured layer (engine_internal.h): its buffers,
 * the index lists of its plan (built on the host from the same maps as the
 * executor, uploaded once before timing) and the launches of each piece.
 *
 * The attention path is the executor's, batched over the rank's tokens, with
 * the data movement of a multi-GPU run: each rank gathers its own blocks of
 * the rank-major workspaces and indexer keys from its own cache, and the
 * all-gathers over DCP fill in the peers' blocks (device copies from the
 * peers on one device, ncclAllGather in place on several GPUs). Every
 * kernel, map and conversion is the one cplab-exec runs row by row, so a
 * rank's top-k equals cplab-exec's bit for bit and its attention outputs
 * agree within the kernels' bounds (the split decode's rounding depends on
 * the batch; engine.c checks both with --check). Decode rows under DCP find their
 * top-k as vLLM's exact DCP mode does: each rank scores its own keys, and
 * the ranks merge their local top-k lists. The projections run at the
 * model's shapes on generated inputs (engine_proj.c); their outputs do not
 * feed the attention, whose queries are the generated ones the simulator
 * and executor use. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/kv.h"
#include "cplab/kvformat.h"
#include "cplab/layout.h"
#include "cplab/maps.h"
#include "engine_internal.h"

const int engine_segment_first[ENGINE_SEGMENTS + 1] = {PIECE_PRE_COMM,  PIECE_SHARD_COMM, PIECE_TOPK_COMM, PIECE_PART_COMM,
                                                       PIECE_MID_COMM,  PIECE_MOE_COMM,   PIECE_COUNT};
/* PRE_COMM .. MOE_COMM, in the order of the PIECE_ enum. */
const int engine_piece_phase[PIECE_COUNT] = {
    EXEC_PHASE_COMM,      EXEC_PHASE_PROJ,    EXEC_PHASE_INDEXER, EXEC_PHASE_ATTENTION, EXEC_PHASE_COMM,
    EXEC_PHASE_INDEXER,   EXEC_PHASE_COMM,    EXEC_PHASE_INDEXER, EXEC_PHASE_ATTENTION, EXEC_PHASE_COMM,
    EXEC_PHASE_ATTENTION, EXEC_PHASE_PROJ,    EXEC_PHASE_COMM,    EXEC_PHASE_MOE,       EXEC_PHASE_COMM};
const int engine_piece_is_attention[PIECE_COUNT] = {0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};

/* Tensor id of the generated MoE input (cplab_gen_bf16; the projections' are engine_proj.c's). */
enum { GEN_MOE_X = 100 };

void engine_rank_free(engine_rank *k) {
  cplab_moe_plan_destroy(k->moe_plan);
  exec_arena_free(&k->mem);
  free(k->prefill), free(k->ws), free(k->kb), free(k->copies);
  memset(k, 0, sizeof *k);
}

/* The piece a collective's stand-in copy runs in; -1 for the collectives the
 * engine carries out with real data (the workspace and indexer-key
 * all-gathers of SHARD_COMM, the decode partials' of PART_COMM);
 * PIECE_COUNT for the step's output gather after the layers. */
static int copy_piece(cplab_coll_what w) {
  switch (w) {
  case CPLAB_CW_KV_INSERT_GATHER: case CPLAB_CW_INDEX_K_INSERT_GATHER: case CPLAB_CW_DECODE_Q_GATHER:
    return PIECE_PRE_COMM;
  case CPLAB_CW_O_PROJ_ALLREDUCE: case CPLAB_CW_MOE_HIDDEN_GATHER: case CPLAB_CW_MOE_ROUTER_GATHER:
    return PIECE_MID_COMM;
  case CPLAB_CW_MOE_FAST_ALLREDUCE: case CPLAB_CW_MOE_REDUCE_SCATTER: case CPLAB_CW_MOE_TP_ALLREDUCE:
    return PIECE_MOE_COMM;
  case CPLAB_CW_OUTPUT_GATHER: return PIECE_COUNT;
  default: return -1;
  }
}

/* The bytes a rank receives in a ring implementation of the collective:
 * all-gather (G-1)·n, reduce-scatter (G-1)/G·n, all-reduce twice that. */
static size_t copy_bytes(const cplab_parallel *par, const cplab_collective *c) {
  double g = cplab_group_size(par, c->group), n = (double)c->count * cplab_dtype_bytes(c->dtype);
  double b = c->kind == CPLAB_COLL_ALL_GATHER ? (g - 1) * n : c->kind == CPLAB_COLL_REDUCE_SCATTER ? (g - 1) / g * n
                                                                                                 : 2 * (g - 1) / g * n;
  return (size_t)b;
}

static int setup_copies(engine_step *s, engine_rank *k, cplab_diag *d) {
  const cplab_rank_plan *rp = k->rp;
  if (!(k->copies = calloc((size_t)rp->num_collectives + 1, sizeof *k->copies))) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  for (int c = 0; c < rp->num_collectives; c++) {
    int piece = copy_piece(rp->collectives[c].what);
    size_t bytes = copy_bytes(k->in->par, &rp->collectives[c]);
    if (piece < 0 || bytes == 0) continue;
    k->copies[k->num_copies++] = (engine_copy){piece, bytes, rp->collectives[c]};
    if (bytes > s->copy_bytes) s->copy_bytes = bytes;
  }
  return 0;
}

/* Which heads this rank's DCP group attends with: the TP ranks of the group
 * must hold a contiguous range of heads (true of every layout vllm builds). */
static int group_heads(engine_step *s, engine_rank *k, int *tmin, cplab_diag *d) {
  const int *mem = cplab_rank_table_members(s->t, CPLAB_GROUP_DCP, k->r);
  int lo = INT_MAX, hi = -1, n = 0;
  int seen[1024] = {0};
  for (int j = 0; j < k->D; j++) {
    int tp = s->t->ids[mem[j]].tp;
    if (tp < 0 || tp >= 1024) CPLAB_FAIL(d, CPLAB_EUNSUPPORTED, "tp rank %d beyond 1023", tp);
    n += !seen[tp], seen[tp] = 1;
    lo = tp < lo ? tp : lo, hi = tp > hi ? tp : hi;
  }
  if (n != hi - lo + 1)
    CPLAB_FAIL(d, CPLAB_EUNSUPPORTED, "rank %d: its DCP group's TP ranks do not hold contiguous heads", k->r);
  *tmin = lo;
  k->Hg = n * k->Hl;
  k->head_off = (k->rp->ids.tp - lo) * k->Hl;
  return 0;
}

/* A row's keys 0 .. n-1 in this rank's own cache, in logical order (-1: none).
 * Only without DCP, where a rank's cache holds every key of its requests. */
static int own_key_slots(const engine_rank *k, const cplab_row *row, int64_t n, int64_t *slots, cplab_diag *d) {
  const cplab_schedule *sc = &k->rp->sched;
  if (k->D != 1) CPLAB_FAIL(d, CPLAB_EINTERNAL, "rank %d: request %d's keys need the gathered plan under DCP", k->r, row->req);
  const int32_t *brow = sc->block_table + (int64_t)row->req * sc->max_blocks;
  for (int64_t t = 0; t < n; t++) {
    int64_t slot = cplab_kv_slot_global(k->in->par, 0, brow, sc->max_blocks, t);
    slots[t] = slot >= 0 && slot < k->num_slots ? slot : -1;
  }
  return 0;
}

/* Under DCP a decode row's top-k is vLLM's exact DCP top-k: each rank scores
 * only its own keys of the row (its local keys, read from its own cache),
 * keeps its local top-k, the ranks all-gather those candidates (TOPK_COMM)
 * and merge them exactly (TOPK_MERGE). */
static int64_t decode_local_len(const engine_rank *k, int64_t len) {
  return cplab_kv_local_len(len, k->o, k->in->par->interleave, k->D);
}

/* Every DCP peer's local top-k candidates of the decode rows. */
static int decode_candidates(engine_rank *k, cplab_diag *d) {
  size_t cands = (size_t)k->D * (size_t)k->Tdec * (size_t)k->K;
  int rc = exec_arena_alloc(&k->mem, &k->cand, sizeof(int32_t) * cands, d);
  if (!rc) rc = exec_arena_alloc(&k->mem, &k->cand_score, sizeof(float) * cands, d);
  return rc;
}

/* Per token: request id and position (generation), key bounds. A decode
 * token sees keys [0, its visible keys) of its request, counted in this
 * rank's own keys under DCP; the decode logits read them through the block
 * table (decode_topk). */
static int token_lists(engine_rank *k, int32_t *id, int32_t *pos, int32_t *ks, int32_t *ke, int32_t *dec_req) {
  const cplab_split *sp = &k->rp->split;
  for (int i = 0; i < sp->num_rows; i++) {
    const cplab_row *row = &sp->rows[i];
    if (row->len <= 0 || !cplab_row_on_local_shard(k->in->par, row)) continue;
    for (int64_t t = 0; t < row->len; t++) {
      int64_t tok = row->token_offset + t, visible = row->start_pos + t + 1;
      dec_req[tok] = row->req;
      ks[tok] = 0, ke[tok] = (int32_t)(k->D == 1 ? visible : decode_local_len(k, visible));
    }
  }
  for (int i = 0; i < sp->num_rows; i++) {
    const cplab_row *row = &sp->rows[i];
    for (int64_t t = 0; t < row->len; t++) {
      int64_t tok = row->token_offset + t;
      id[tok] = (int32_t)k->in->step->requests[row->req].id, pos[tok] = (int32_t)(row->start_pos + t);
      if (!cplab_row_on_local_shard(k->in->par, row)) ks[tok] = 0, ke[tok] = (int32_t)(row->start_pos + t + 1);
    }
  }
  return 0;
}

/* A rank-major gathered buffer of src (W blocks): this rank's block's slots
 * in its own cache, and the buffer (row_bytes per row). */
static int gathered_alloc(engine_rank *k, const cplab_maps_sources *src, int W, size_t row_bytes, engine_gathered *g,
                          cplab_diag *d) {
  g->block = src->rows / W;
  int64_t *own = malloc(sizeof *own * (size_t)(g->block + 1));
  if (!own) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  for (int64_t i = 0; i < g->block; i++) {
    int64_t at = (int64_t)k->o * g->block + i;
    own[i] = src->peer[at] == k->o ? src->slot[at] : -1;
  }
  int rc = exec_arena_put(&k->mem, &g->own_slots, own, sizeof *own * (size_t)g->block, d);
  if (!rc) rc = exec_arena_alloc(&k->mem, &g->buf, row_bytes * (size_t)src->rows, d);
  free(own);
  return rc;
}

/* The plan's gathered workspaces (every prefill chunk) and indexer keys
 * (every indexer chunk a region starts in). */
static int setup_gathered(engine_rank *k, cplab_diag *d) {
  const cplab_prefill_plan *pl = &k->rp->prefill;
  const cplab_indexer_plan *ip = &k->rp->indexer;
  k->nws = pl->active ? pl->num_chunks : 0;
  k->nkb = ip->active ? ip->num_chunks : 0;
  k->ws = calloc((size_t)k->nws + 1, sizeof *k->ws);
  k->kb = calloc((size_t)k->nkb + 1, sizeof *k->kb);
  if (!k->ws || !k->kb) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  int rc = 0;
  for (int ch = 0; ch < k->nws && !rc; ch++) {
    cplab_maps_sources src;
    rc = cplab_maps_workspace_sources(k->rp, ch, &src, d);
    if (!rc) rc = gathered_alloc(k, &src, k->D, sizeof(uint16_t) * CPLAB_MLA_ROW_DIM, &k->ws[ch], d);
    cplab_maps_sources_free(&src);
  }
  for (int r = 0; r < (ip->active ? ip->num_regions : 0) && !rc; r++) {
    int c = ip->region_chunk[r];
    if (k->kb[c].buf) continue;
    cplab_maps_sources src;
    rc = cplab_maps_key_sources(k->rp, c, &src, d);
    if (!rc) rc = gathered_alloc(k, &src, k->D, CPLAB_IDX_ENTRY_BYTES, &k->kb[c], d);
    cplab_maps_sources_free(&src);
  }
  return rc;
}

/* Where prefill row pr's keys 0 .. nkeys-1 come from, in logical order:
 * rows of its indexer chunk's gathered keys through the layout's
 * de-interleave, or (no gathered keys: DCP 1) this rank's own cache. */
static int prefill_keys(engine_rank *k, const cplab_row *row, engine_prefill_row *pr, int64_t *rows,
                        cplab_diag *d) {
  const cplab_indexer_plan *ip = &k->rp->indexer;
  pr->key_chunk = -1;
  if (!ip->active) {
    int rc = own_key_slots(k, row, pr->nkeys, rows, d);
    return rc ? rc : exec_arena_put(&k->mem, &pr->key_slots, rows, sizeof *rows * (size_t)pr->nkeys, d);
  }
  int region = cplab_indexer_region_of(ip, row->req);
  if (region < 0) CPLAB_FAIL(d, CPLAB_EINTERNAL, "request %d has no indexer region", row->req);
  pr->key_chunk = ip->region_chunk[region];
  int64_t total = k->kb[pr->key_chunk].block * k->D;
  for (int64_t t = 0; t < pr->nkeys; t++) {
    int64_t g = cplab_layout_deinterleave(k->rp->layout, &k->rp->env, ip, region, t);
    rows[t] = g < 0 || g >= total ? -1 : g;
  }
  return exec_arena_put(&k->mem, &pr->key_rows, rows, sizeof *rows * (size_t)pr->nkeys, d);
}

/* Prefill rows: their keys in logical order and where they attend. */
static int setup_prefill_rows(engine_rank *k, int64_t *max_keys, int64_t *max_len, cplab_diag *d) {
  const cplab_rank_plan *rp = k->rp;
  const cplab_split *sp = &rp->split;
  int rc = 0;
  k->prefill = calloc((size_t)sp->num_rows + 1, sizeof *k->prefill);
  int64_t *slots = NULL;
  if (!k->prefill) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  for (int i = 0; i < sp->num_rows && !rc; i++) {
    const cplab_row *row = &sp->rows[i];
    if (row->len <= 0 || cplab_row_on_local_shard(k->in->par, row)) continue;
    engine_prefill_row *pr = &k->prefill[k->num_prefill++];
    pr->tok0 = row->token_offset, pr->len = row->len, pr->nkeys = row->seq_len;
    *max_keys = pr->nkeys > *max_keys ? pr->nkeys : *max_keys;
    *max_len = pr->len > *max_len ? pr->len : *max_len;
    if (!(slots = realloc(slots, sizeof *slots * (size_t)pr->nkeys))) {
      rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
      break;
    }
    rc = prefill_keys(k, row, pr, slots, d);
    int64_t start = 0, shard = 0;
    if (!rc && rp->prefill.active) {
      int region = cplab_prefill_region_of(&rp->prefill, row->req);
      if (region < 0) rc = cplab_diag_set(d, CPLAB_EINTERNAL, "request %d has no prefill region", row->req);
      else
        pr->ws = rp->prefill.region_chunk[region], start = rp->prefill.workspace_start[region],
        shard = rp->prefill.chunks[pr->ws].shard_rows;
    } else if (!rc) { /* no gathered plan (DCP 1): the request's context from this rank's cache, in order */
      pr->ws = -1;
      if (!pr->key_slots) rc = cplab_diag_set(d, CPLAB_EINTERNAL, "request %d: an indexer plan without a prefill plan",
                                              row->req);
      if (!rc)
        rc = exec_arena_alloc(&k->mem, &pr->own_ws, sizeof(uint16_t) * CPLAB_MLA_ROW_DIM * (size_t)pr->nkeys, d);
    }
    if (!rc) rc = exec_arena_put(&k->mem, &pr->ws_start, &start, sizeof start, d);
    if (!rc) rc = exec_arena_put(&k->mem, &pr->shard_rows, &shard, sizeof shard, d);
  }
  free(slots);
  return rc;
}

/* The MoE input rows: its own tokens on the fast path and without PCP, the
 * gathered P·padded rows on the general path. */
static int setup_moe(engine_step *s, engine_rank *k, cplab_moe *moe, cplab_diag *d) {
  const cplab_parallel *par = k->in->par;
  const cplab_schedule *sc = &k->rp->sched;
  int general = par->pcp > 1 && !sc->moe_fast_path;
  k->moe_rows = general ? (int64_t)par->pcp * sc->padded_num_tokens : k->T;
  int64_t dm = k->in->model->hidden_size;
  uint32_t tensor = GEN_MOE_X + (uint32_t)(general ? 0 : k->rp->ids.pcp);
  int rc = exec_arena_alloc(&k->mem, &k->moe_x, sizeof(uint16_t) * (size_t)(k->moe_rows * dm), d);
  if (!rc) rc = cplab_gen_bf16(k->in->seed, tensor, k->moe_x, k->moe_rows * dm, 1.0f, s->stream, d);
  if (!rc) rc = exec_arena_alloc(&k->mem, &k->moe_out, sizeof(float) * (size_t)(k->moe_rows * dm), d);
  if (!rc) rc = cplab_dev_sync(s->stream, d);
  if (!rc) rc = cplab_moe_plan_create(moe, s->gemm, k->moe_x, k->moe_rows, &k->moe_plan, d);
  return rc;
}

/* Decode tokens read their keys straight from this rank's cache through the
 * block table (cplab_indexer_logits_decode): token t sees dec_n[t] keys (its
 * request's visible keys, this rank's own under DCP), its top-k over
 * columns [0, dec_n[t]) of its logits row. */
static int setup_decode_indexer(engine_rank *k, const int32_t *ks, const int32_t *ke, cplab_diag *d) {
  int32_t *n = malloc(sizeof *n * (size_t)k->Tdec), *zero = calloc((size_t)k->Tdec, sizeof *zero);
  int rc = n && zero ? 0 : cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  k->dec_max_n = 0;
  for (int64_t t = 0; !rc && t < k->Tdec; t++) {
    n[t] = ke[t] - ks[t];
    k->dec_max_n = n[t] > k->dec_max_n ? n[t] : k->dec_max_n;
  }
  if (!rc) rc = exec_arena_put(&k->mem, &k->dec_n, n, sizeof *n * (size_t)k->Tdec, d);
  if (!rc) rc = exec_arena_put(&k->mem, &k->dec_zero, zero, sizeof *zero * (size_t)k->Tdec, d);
  free(n), free(zero);
  return rc;
}

/* Queries of `rows` tokens with `run` heads (the padding heads zero: the
 * real heads are copied in at each launch) and the kernels' results. */
static int pad_alloc(engine_step *s, engine_rank *k, int64_t rows, int run, uint16_t **q, float **out, float **lse,
                     cplab_diag *d) {
  size_t n = (size_t)rows * (size_t)run, qbytes = sizeof(uint16_t) * n * CPLAB_MLA_ROW_DIM;
  int rc = exec_arena_alloc(&k->mem, q, qbytes, d);
  if (!rc) rc = cplab_poison_bytes(*q, qbytes, 0, s->stream, d);
  if (!rc) rc = exec_arena_alloc(&k->mem, out, sizeof(float) * n * CPLAB_MLA_NOPE_DIM, d);
  if (!rc) rc = exec_arena_alloc(&k->mem, lse, sizeof(float) * n, d);
  return rc;
}

static int setup_attention(engine_step *s, engine_rank *k, cplab_diag *d) {
  const cplab_model *m = k->in->model;
  const cplab_rank_plan *rp = k->rp;
  int64_t T = k->T, IH = m->index_n_heads, max_keys = 0, max_len = 0;
  int32_t *id = calloc((size_t)T + 1, sizeof *id), *pos = calloc((size_t)T + 1, sizeof *pos);
  int32_t *ks = calloc((size_t)T + 1, sizeof *ks), *ke = calloc((size_t)T + 1, sizeof *ke);
  int32_t *dec_req = calloc((size_t)k->Tdec + 1, sizeof *dec_req);
  int32_t *did, *dpos;
  exec_arena *mm = &k->mem;
  int rc = id && pos && ks && ke && dec_req ? 0 : cplab_diag_set(d, CPLAB_ENOMEM, "out of memory"), tmin = 0;
  if (!rc) rc = group_heads(s, k, &tmin, d);
  k->Hp = cplab_heads_run(k->Hl, s->head_pad), k->Hgp = cplab_heads_run(k->Hg, s->head_pad);
  if (!rc) rc = token_lists(k, id, pos, ks, ke, dec_req);
  if (!rc && k->Tdec > 0) rc = setup_decode_indexer(k, ks, ke, d);
  if (!rc) rc = setup_gathered(k, d);
  if (!rc) rc = setup_prefill_rows(k, &max_keys, &max_len, d);
  if (!rc && k->D > 1 && k->Tdec > 0) rc = decode_candidates(k, d);
  max_keys = k->dec_max_n > max_keys ? k->dec_max_n : max_keys;
  max_len = k->Tdec > max_len ? k->Tdec : max_len;
  if (!rc) rc = exec_arena_put(mm, &did, id, sizeof *id * (size_t)T, d);
  if (!rc) rc = exec_arena_put(mm, &dpos, pos, sizeof *pos * (size_t)T, d);
  if (!rc) rc = exec_arena_put(mm, &k->ks, ks, sizeof *ks * (size_t)T, d);
  if (!rc) rc = exec_arena_put(mm, &k->ke, ke, sizeof *ke * (size_t)T, d);
  if (!rc) rc = exec_arena_put(mm, &k->dec_req, dec_req, sizeof *dec_req * (size_t)k->Tdec, d);
  if (!rc)
    rc = exec_arena_put(mm, &k->block_table, rp->sched.block_table,
                        sizeof(int32_t) * (size_t)rp->sched.num_requests * (size_t)rp->sched.max_blocks, d);
  /* Logits in launches of at most the plan's budget (vLLM's logits limit). */
  int64_t budget = (k->in->par->indexer_max_logits_mb > 0 ? k->in->par->indexer_max_logits_mb : 512) << 20;
  k->logit_rows = max_keys > 0 ? budget / (4 * max_keys) : 1;
  k->logit_rows = k->logit_rows < 1 ? 1 : k->logit_rows > max_len ? (max_len > 0 ? max_len : 1) : k->logit_rows;
  size_t tk = (size_t)T * (size_t)k->K;
  if (!rc && k->Tdec > 0) {
    int64_t rows = k->Tdec < k->logit_rows ? k->Tdec : k->logit_rows;
    rc = cplab_topk_scratch(rows, k->dec_max_n, k->K, &k->topk_scratch_bytes, d);
    if (!rc && k->topk_scratch_bytes) rc = exec_arena_alloc(mm, &k->topk_scratch, k->topk_scratch_bytes, d);
  }
  if (!rc) rc = exec_arena_alloc(mm, &k->keys, (size_t)max_keys * CPLAB_IDX_ENTRY_BYTES, d);
  if (!rc) rc = exec_arena_alloc(mm, &k->logits, sizeof(float) * (size_t)k->logit_rows * (size_t)max_keys, d);
  if (!rc) rc = exec_arena_alloc(mm, &k->topk, sizeof(int32_t) * tk, d);
  if (!rc) rc = exec_arena_alloc(mm, &k->conv, sizeof(int32_t) * tk, d);
  if (!rc) rc = exec_arena_alloc(mm, &k->score, sizeof(float) * tk, d);
  if (!rc) rc = exec_arena_alloc(mm, &k->iq, (size_t)(T * IH) * CPLAB_IDX_DIM, d);
  if (!rc) rc = exec_arena_alloc(mm, &k->iscale, sizeof(float) * (size_t)(T * IH), d);
  if (!rc) rc = exec_arena_alloc(mm, &k->iw, sizeof(float) * (size_t)(T * IH), d);
  if (!rc) rc = exec_arena_alloc(mm, &k->mla_q, sizeof(uint16_t) * (size_t)(T * k->Hl) * CPLAB_MLA_ROW_DIM, d);
  if (!rc) rc = exec_arena_alloc(mm, &k->attn_out, sizeof(float) * (size_t)(T * k->Hl) * CPLAB_MLA_NOPE_DIM, d);
  if (!rc) rc = exec_arena_alloc(mm, &k->attn_lse, sizeof(float) * (size_t)(T * k->Hl), d);
  /* Generated queries (the inputs the simulator and the executor use). */
  if (!rc)
    rc = cplab_gen_indexer_query(
        &(cplab_gen_indexer_query_params){.seed = k->in->seed, .layer = 0, .req = did, .pos = dpos, .m = T,
                                          .heads = (int)IH, .q = k->iq, .scale = k->iscale, .weight = k->iw},
        s->stream, d);
  if (!rc)
    rc = cplab_gen_mla_query(&(cplab_gen_mla_query_params){.seed = k->in->seed, .layer = 0, .req = did, .pos = dpos,
                                                           .m = T, .head0 = rp->ids.tp * k->Hl, .heads_local = k->Hl,
                                                           .q = k->mla_q}, s->stream, d);
  if (!rc && k->D > 1 && k->Tdec > 0) { /* decode rows attend with their DCP group's heads */
    size_t gq = (size_t)(k->Tdec * k->Hg);
    rc = exec_arena_alloc(mm, &k->qg, sizeof(uint16_t) * gq * CPLAB_MLA_ROW_DIM, d);
    if (!rc)
      rc = cplab_gen_mla_query(&(cplab_gen_mla_query_params){.seed = k->in->seed, .layer = 0, .req = did, .pos = dpos,
                                                             .m = k->Tdec, .head0 = tmin * k->Hl, .heads_local = k->Hg,
                                                             .q = k->qg}, s->stream, d);
    if (!rc) rc = exec_arena_alloc(mm, &k->gout, sizeof(float) * (size_t)k->D * gq * CPLAB_MLA_NOPE_DIM, d);
    if (!rc) rc = exec_arena_alloc(mm, &k->glse, sizeof(float) * (size_t)k->D * gq, d);
    if (!rc && (k->Hg != k->Hl || k->head_off != 0))
      rc = exec_arena_alloc(mm, &k->fin, sizeof(float) * gq * CPLAB_MLA_NOPE_DIM, d);
  }
  /* Padded copies where the padding goes past the kernels' own head blocks
   * (a 64-head block runs 16 heads as 64 already: the same work). */
  if (!rc && k->Hp > cplab_heads_run(k->Hl, CPLAB_MLA_HEAD_BLOCK))
    rc = pad_alloc(s, k, T, k->Hp, &k->q_pad, &k->out_pad, &k->lse_pad, d);
  if (!rc && k->D > 1 && k->Tdec > 0 && k->Hgp > cplab_heads_run(k->Hg, CPLAB_MLA_HEAD_BLOCK))
    rc = pad_alloc(s, k, k->Tdec, k->Hgp, &k->qg_pad, &k->gout_pad, &k->glse_pad, d);
  /* The split decode's scratch, for the heads the decode rows attend with. */
  if (!rc && k->Tdec > 0)
    rc = cplab_sparse_mla_decode_scratch(k->Tdec, k->D == 1 ? k->Hp : k->Hgp, k->K, 0, &k->dec_scratch_bytes, d);
  if (!rc && k->dec_scratch_bytes) rc = exec_arena_alloc(mm, &k->dec_scratch, k->dec_scratch_bytes, d);
  free(id), free(pos), free(ks), free(ke), free(dec_req);
  return rc;
}

int engine_rank_setup(engine_step *s, int r, const cplab_step_input *in, const cplab_rank_plan *rp, cplab_moe *moe,
                      cplab_diag *d) {
  engine_rank *k = &s->ranks[r];
  memset(k, 0, sizeof *k);
  const cplab_model *m = in->model;
  k->r = r, k->rp = rp, k->in = in;
  /* "Decode" tokens here are those on the local shard: every token under DCP without PCP (the plan's rule). */
  k->T = rp->split.num_tokens, k->Tdec = cplab_split_shard_tokens(&rp->split, in->par);
  k->K = (int)m->index_topk, k->Hl = (int)(m->num_heads / in->par->tp), k->D = in->par->dcp, k->o = rp->ids.dcp_rank;
  k->scale = (float)cplab_model_softmax_scale(m);
  k->num_slots = s->num_slots;
  size_t at = s->nccl ? 0 : (size_t)r * (size_t)s->num_slots; /* one device: rank r's slice */
  k->kv_own = s->kv + at * CPLAB_MLA_ENTRY_BYTES;
  k->idx_own = s->idx + at * CPLAB_IDX_ENTRY_BYTES;
  int rc = setup_copies(s, k, d);
  if (!rc) rc = engine_proj_setup(s, k, d);
  if (!rc) rc = setup_attention(s, k, d);
  if (!rc) rc = setup_moe(s, k, moe, d);
  if (!rc) rc = cplab_dev_sync(s->stream, d);
  if (rc) cplab_diag_prefix(d, "rank %d: ", r);
  return rc;
}

/* ---- the pieces ---------------------------------------------------------- */

static int piece_copies(engine_step *s, const engine_rank *k, int piece, cplab_diag *d) {
  if (s->nccl) return engine_nccl_calls(s, k, piece, d);
  int rc = 0;
  for (int c = 0; c < k->num_copies && !rc; c++)
    if (k->copies[c].piece == piece) rc = cplab_dev_copy_async(s->copy_dst, s->copy_src, k->copies[c].bytes, s->stream, d);
  return rc;
}

/* Logits and top-k of local tokens [tok0, tok0 + len) over n keys (132-byte
 * entries at keys), into rows 0 .. len-1 of idx and score (k each). */
static int topk_rows(engine_step *s, const engine_rank *k, const uint8_t *keys, int64_t tok0, int64_t len, int64_t n,
                     int32_t *idx, float *score, cplab_diag *d) {
  int IH = (int)k->in->model->index_n_heads, rc = 0;
  for (int64_t c = 0; c < len && !rc; c += k->logit_rows) {
    int64_t t = tok0 + c, m = len - c < k->logit_rows ? len - c : k->logit_rows;
    rc = cplab_indexer_logits(&(cplab_indexer_logits_params){.q = k->iq + (size_t)(t * IH) * CPLAB_IDX_DIM,
                                                             .weight = k->iw + t * IH, .m = m, .heads = IH,
                                                             .keys = keys, .n = n, .ks = k->ks + t, .ke = k->ke + t,
                                                             .logits = k->logits}, s->stream, d);
    if (!rc) rc = cplab_topk(&(cplab_topk_params){.logits = k->logits, .m = m, .n = n, .ks = k->ks + t, .ke = k->ke + t,
                                                  .k = k->K, .idx = idx + c * k->K, .score = score + c * k->K},
                             s->stream, d);
  }
  return rc;
}

/* This rank's blocks of the gathered keys (prefill chunks; decode rows' local keys under DCP). */
static int piece_key_shard(engine_step *s, const engine_rank *k, cplab_diag *d) {
  int rc = 0;
  for (int c = 0; c < k->nkb && !rc; c++) {
    const engine_gathered *g = &k->kb[c];
    if (g->buf)
      rc = cplab_gather_idx(&(cplab_gather_idx_params){.idx_cache = k->idx_own, .num_slots = k->num_slots,
                                                       .slot = g->own_slots, .rows = g->block,
                                                       .out = (uint8_t *)g->buf +
                                                              (size_t)k->o * (size_t)g->block * CPLAB_IDX_ENTRY_BYTES},
                            s->stream, d);
  }
  return rc;
}

/* This rank's blocks of the workspaces; without a gathered plan, each prefill row's context. */
static int piece_ws_shard(engine_step *s, const engine_rank *k, cplab_diag *d) {
  size_t row = sizeof(uint16_t) * CPLAB_MLA_ROW_DIM;
  int rc = 0;
  for (int ch = 0; ch < k->nws && !rc; ch++) {
    const engine_gathered *g = &k->ws[ch];
    rc = cplab_gather_mla(&(cplab_gather_mla_params){.kv_cache = k->kv_own, .num_slots = k->num_slots,
                                                     .slot = g->own_slots, .rows = g->block,
                                                     .out = (uint16_t *)(void *)((char *)g->buf + (size_t)k->o *
                                                                                      (size_t)g->block * row)},
                          s->stream, d);
  }
  for (int i = 0; i < k->num_prefill && !rc; i++) {
    const engine_prefill_row *pr = &k->prefill[i];
    if (pr->ws < 0)
      rc = cplab_gather_mla(&(cplab_gather_mla_params){.kv_cache = k->kv_own, .num_slots = k->num_slots,
                                                       .slot = pr->key_slots, .rows = pr->nkeys, .out = pr->own_ws},
                            s->stream, d);
  }
  return rc;
}

/* Peer block o of a gathered buffer, copied from the peer's own copy of it. */
static int copy_block(engine_step *s, const engine_gathered *mine, const engine_gathered *peer, int o, size_t row_bytes,
                      cplab_diag *d) {
  size_t at = (size_t)o * (size_t)mine->block * row_bytes;
  return cplab_dev_copy_async((char *)mine->buf + at, (const char *)peer->buf + at, (size_t)mine->block * row_bytes,
                              s->stream, d);
}

/* The all-gathers of the blocks over DCP (on one device: copies of the peers' blocks). */
static int piece_shard_comm(engine_step *s, const engine_rank *k, cplab_diag *d) {
  if (k->D == 1) return 0;
  if (s->nccl) return engine_nccl_shards(s, k, d);
  const int *mem = cplab_rank_table_members(s->t, CPLAB_GROUP_DCP, k->r);
  int rc = 0;
  for (int o = 0; o < k->D && !rc; o++) {
    if (o == k->o) continue;
    const engine_rank *p = &s->ranks[mem[o]];
    for (int ch = 0; ch < k->nws && !rc; ch++)
      rc = copy_block(s, &k->ws[ch], &p->ws[ch], o, sizeof(uint16_t) * CPLAB_MLA_ROW_DIM, d);
    for (int c = 0; c < k->nkb && !rc; c++)
      if (k->kb[c].buf) rc = copy_block(s, &k->kb[c], &p->kb[c], o, CPLAB_IDX_ENTRY_BYTES, d);
  }
  return rc;
}

/* The decode rows' conversion into this rank's cache slots (k->conv), as
 * the top-k (dcp 1) or the DCP merge writes it in its own launch. */
static cplab_topk_convert decode_conversion(const engine_rank *k) {
  const cplab_schedule *sc = &k->rp->sched;
  return (cplab_topk_convert){.row_req = k->dec_req, .block_table = k->block_table, .num_req = sc->num_requests,
                              .max_blocks = sc->max_blocks, .block_size = k->in->par->block_size,
                              .dcp_rank = k->o, .out = k->conv};
}

/* Decode tokens (tokens 0 .. Tdec - 1): logits straight from this rank's
 * cache, then the top-k, split over the GPU when the rows are few and long;
 * under DCP over its own keys, this rank's candidates. conv (dcp 1 only,
 * else NULL): the top-k converts its lists into slots as it writes them. */
static int decode_topk(engine_step *s, const engine_rank *k, int32_t *idx, float *score,
                       const cplab_topk_convert *conv, cplab_diag *d) {
  int IH = (int)k->in->model->index_n_heads, rc = 0;
  const cplab_schedule *sc = &k->rp->sched;
  for (int64_t t = 0; t < k->Tdec && !rc; t += k->logit_rows) {
    int64_t m = k->Tdec - t < k->logit_rows ? k->Tdec - t : k->logit_rows;
    rc = cplab_indexer_logits_decode(
        &(cplab_indexer_logits_decode_params){.q = k->iq + (size_t)(t * IH) * CPLAB_IDX_DIM, .weight = k->iw + t * IH,
                                              .m = m, .heads = IH, .idx_cache = k->idx_own, .num_slots = k->num_slots,
                                              .block_table = k->block_table, .num_req = sc->num_requests,
                                              .max_blocks = sc->max_blocks, .block_size = k->in->par->block_size,
                                              .row_req = k->dec_req + t, .row_keys = k->dec_n + t, .n = k->dec_max_n,
                                              .logits = k->logits}, s->stream, d);
    cplab_topk_convert ct = {0}; /* this slice of rows' */
    if (conv) ct = *conv, ct.row_req += t, ct.out += t * k->K;
    if (!rc)
      rc = cplab_topk_split(&(cplab_topk_params){.logits = k->logits, .m = m, .n = k->dec_max_n, .ks = k->dec_zero + t,
                                                 .ke = k->dec_n + t, .k = k->K, .idx = idx + t * k->K,
                                                 .score = score + t * k->K, .scratch = k->topk_scratch,
                                                 .scratch_bytes = k->topk_scratch_bytes, .convert = conv ? &ct : NULL},
                            s->stream, d);
  }
  return rc;
}

static int piece_indexer(engine_step *s, const engine_rank *k, cplab_diag *d) {
  int rc = 0;
  if (k->Tdec > 0 && k->D == 1) {
    cplab_topk_convert conv = decode_conversion(k);
    rc = decode_topk(s, k, k->topk, k->score, &conv, d);
  } else if (k->Tdec > 0) {
    size_t at = (size_t)k->o * (size_t)k->Tdec * (size_t)k->K;
    rc = decode_topk(s, k, k->cand + at, k->cand_score + at, NULL, d);
  }
  for (int i = 0; i < k->num_prefill && !rc; i++) {
    const engine_prefill_row *pr = &k->prefill[i];
    if (pr->key_chunk >= 0) {
      const engine_gathered *g = &k->kb[pr->key_chunk];
      rc = cplab_gather_idx(&(cplab_gather_idx_params){.idx_cache = g->buf, .num_slots = (int64_t)k->D * g->block,
                                                       .slot = pr->key_rows, .rows = pr->nkeys, .out = k->keys},
                            s->stream, d);
    } else {
      rc = cplab_gather_idx(&(cplab_gather_idx_params){.idx_cache = k->idx_own, .num_slots = k->num_slots,
                                                       .slot = pr->key_slots, .rows = pr->nkeys, .out = k->keys},
                            s->stream, d);
    }
    size_t at = (size_t)pr->tok0 * (size_t)k->K;
    if (!rc) rc = topk_rows(s, k, k->keys, pr->tok0, pr->len, pr->nkeys, k->topk + at, k->score + at, d);
  }
  return rc;
}

/* Rows [first, first + rows) of `heads` heads (head_bytes each) between
 * buffers of `from` and `to` heads a row: the real heads into the padded
 * queries and out of the padded results, one strided copy each. */
static int copy_heads(engine_step *s, void *dst, int to, const void *src, int from, int heads, size_t head_bytes,
                      int64_t first, int64_t rows, cplab_diag *d) {
  if (rows <= 0) return 0;
  return cplab_dev_copy2d_async((char *)dst + (size_t)first * (size_t)to * head_bytes, (size_t)to * head_bytes,
                                (const char *)src + (size_t)first * (size_t)from * head_bytes,
                                (size_t)from * head_bytes, (size_t)heads * head_bytes, (size_t)rows, s->stream, d);
}

static int piece_attention(engine_step *s, const engine_rank *k, cplab_diag *d) {
  const cplab_parallel *par = k->in->par;
  const size_t K = (size_t)k->K, QH = sizeof(uint16_t) * CPLAB_MLA_ROW_DIM, OH = sizeof(float) * CPLAB_MLA_NOPE_DIM;
  /* What the kernels run on: the real heads, or their padded copies. */
  int H = k->q_pad ? k->Hp : k->Hl, HG = k->qg_pad ? k->Hgp : k->Hg;
  const uint16_t *q = k->q_pad ? k->q_pad : k->mla_q, *qg = k->qg_pad ? k->qg_pad : k->qg;
  float *out = k->q_pad ? k->out_pad : k->attn_out, *lse = k->q_pad ? k->lse_pad : k->attn_lse;
  size_t gq = (size_t)(k->Tdec * k->Hg);
  float *gout = k->gout ? k->gout + (size_t)k->o * gq * CPLAB_MLA_NOPE_DIM : NULL; /* this rank's partials */
  float *glse = k->glse ? k->glse + (size_t)k->o * gq : NULL;
  /* Under DCP the decode rows attend with the group's queries and their results come from the combine. */
  int64_t first = k->D > 1 ? k->Tdec : 0;
  int rc = k->q_pad ? copy_heads(s, k->q_pad, k->Hp, k->mla_q, k->Hl, k->Hl, QH, first, k->T - first, d) : 0;
  if (!rc && k->qg_pad) rc = copy_heads(s, k->qg_pad, k->Hgp, k->qg, k->Hg, k->Hg, QH, 0, k->Tdec, d);
  if (!rc && k->Tdec > 0) { /* decode rows: this rank's DCP shard (converted by the top-k, under DCP by the merge) */
    /* Without DCP the rank's own heads; under DCP the group's, into this rank's partials. */
    cplab_sparse_mla_decode_params p = {.q = q, .m = k->Tdec, .heads = H, .kv_cache = k->kv_own,
                                        .num_slots = k->num_slots, .slot = k->conv, .k = k->K, .scale = k->scale,
                                        .out = out, .lse = lse, .scratch = k->dec_scratch,
                                        .scratch_bytes = k->dec_scratch_bytes};
    if (k->D > 1) {
      p.q = qg, p.heads = HG;
      p.out = k->qg_pad ? k->gout_pad : gout, p.lse = k->qg_pad ? k->glse_pad : glse;
    }
    if (!rc) rc = cplab_sparse_mla_decode_split(&p, s->stream, d);
  }
  for (int i = 0; i < k->num_prefill && !rc; i++) {
    const engine_prefill_row *pr = &k->prefill[i];
    const uint16_t *ws = pr->ws >= 0 ? k->ws[pr->ws].buf : pr->own_ws;
    int64_t rows = pr->ws >= 0 ? (int64_t)k->D * k->ws[pr->ws].block : pr->nkeys;
    int32_t *conv = k->conv + (size_t)pr->tok0 * K;
    /* One region: region_row 0 for every row, i.e. the zeros of ks. */
    rc = cplab_convert_prefill_topk(
        &(cplab_convert_prefill_topk_params){.topk = k->topk + (size_t)pr->tok0 * K, .m = pr->len, .k = k->K,
                                             .row_region = k->ks + pr->tok0, .ws_start = pr->ws_start,
                                             .shard_rows = pr->shard_rows, .extent = NULL, .num_regions = 1,
                                             .dcp = par->dcp, .interleave = par->interleave, .out = conv},
        s->stream, d);
    if (!rc)
      rc = cplab_sparse_mla_prefill(
          &(cplab_sparse_mla_prefill_params){.q = q + (size_t)pr->tok0 * (size_t)H * CPLAB_MLA_ROW_DIM, .m = pr->len,
                                             .heads = H, .workspace = ws, .rows = rows, .idx = conv, .k = k->K,
                                             .scale = k->scale,
                                             .out = out + (size_t)pr->tok0 * (size_t)H * CPLAB_MLA_NOPE_DIM,
                                             .lse = lse + (size_t)pr->tok0 * (size_t)H},
          s->stream, d);
  }
  /* The real heads of the padded results; the padding heads' are dropped. */
  if (!rc && k->q_pad) rc = copy_heads(s, k->attn_out, k->Hl, k->out_pad, k->Hp, k->Hl, OH, first, k->T - first, d);
  if (!rc && k->q_pad)
    rc = copy_heads(s, k->attn_lse, k->Hl, k->lse_pad, k->Hp, k->Hl, sizeof(float), first, k->T - first, d);
  if (!rc && k->qg_pad) rc = copy_heads(s, gout, k->Hg, k->gout_pad, k->Hgp, k->Hg, OH, 0, k->Tdec, d);
  if (!rc && k->qg_pad) rc = copy_heads(s, glse, k->Hg, k->glse_pad, k->Hgp, k->Hg, sizeof(float), 0, k->Tdec, d);
  return rc;
}

/* An all-gather over DCP on one device: slice o (`slice` bytes at
 * o·slice of the buffer `field` names) copied from DCP peer o's own copy. */
typedef enum { SLICE_GOUT, SLICE_GLSE, SLICE_CAND, SLICE_CAND_SCORE } slice_field;

static char *slice_base(const engine_rank *k, slice_field f) {
  switch (f) {
  case SLICE_GOUT: return (char *)k->gout;
  case SLICE_GLSE: return (char *)k->glse;
  case SLICE_CAND: return (char *)k->cand;
  default: return (char *)k->cand_score;
  }
}

static int copy_peer_slices(engine_step *s, const engine_rank *k, slice_field f, size_t slice, cplab_diag *d) {
  const int *mem = cplab_rank_table_members(s->t, CPLAB_GROUP_DCP, k->r);
  int rc = 0;
  for (int o = 0; o < k->D && !rc; o++)
    if (o != k->o)
      rc = cplab_dev_copy_async(slice_base(k, f) + (size_t)o * slice, slice_base(&s->ranks[mem[o]], f) + (size_t)o * slice,
                                slice, s->stream, d);
  return rc;
}

/* The DCP all-gather of the decode rows' local top-k candidates. */
static int piece_topk_comm(engine_step *s, const engine_rank *k, cplab_diag *d) {
  if (k->D == 1 || k->Tdec == 0) return 0;
  if (s->nccl) return engine_nccl_candidates(s, k, d);
  size_t n = (size_t)k->Tdec * (size_t)k->K;
  int rc = copy_peer_slices(s, k, SLICE_CAND, sizeof(int32_t) * n, d);
  return rc ? rc : copy_peer_slices(s, k, SLICE_CAND_SCORE, sizeof(float) * n, d);
}

/* The decode rows' exact top-k from every peer's candidates, converted in
 * the same launch into this rank's cache slots (what the top-k's own
 * conversion gives without DCP). */
static int piece_topk_merge(engine_step *s, const engine_rank *k, cplab_diag *d) {
  if (k->D == 1 || k->Tdec == 0) return 0;
  cplab_topk_convert conv = decode_conversion(k);
  return cplab_topk_merge(&(cplab_topk_merge_params){.cand_idx = k->cand, .cand_score = k->cand_score, .D = k->D,
                                                     .m = k->Tdec, .k = k->K, .interleave = k->in->par->interleave,
                                                     .idx = k->topk, .score = k->score, .convert = &conv},
                          s->stream, d);
}

/* The DCP all-gather of the decode partials. */
static int piece_part_comm(engine_step *s, const engine_rank *k, cplab_diag *d) {
  if (k->D == 1 || k->Tdec == 0) return 0;
  if (s->nccl) return engine_nccl_partials(s, k, d);
  size_t gq = (size_t)(k->Tdec * k->Hg);
  int rc = copy_peer_slices(s, k, SLICE_GOUT, sizeof(float) * gq * CPLAB_MLA_NOPE_DIM, d);
  return rc ? rc : copy_peer_slices(s, k, SLICE_GLSE, sizeof(float) * gq, d);
}

static int piece_combine(engine_step *s, const engine_rank *k, cplab_diag *d) {
  if (k->D == 1 || k->Tdec == 0) return 0;
  if (!k->fin)
    return cplab_lse_combine(&(cplab_lse_combine_params){.lse = k->glse, .out = k->gout, .D = k->D, .m = k->Tdec,
                                                         .heads = k->Hg, .final = k->attn_out}, s->stream, d);
  int rc = cplab_lse_combine(&(cplab_lse_combine_params){.lse = k->glse, .out = k->gout, .D = k->D, .m = k->Tdec,
                                                         .heads = k->Hg, .final = k->fin}, s->stream, d);
  size_t row = sizeof(float) * (size_t)k->Hl * CPLAB_MLA_NOPE_DIM;
  size_t group = sizeof(float) * (size_t)k->Hg * CPLAB_MLA_NOPE_DIM;
  /* this rank's heads of the group's result: one strided copy of Tdec rows */
  return rc ? rc
            : cplab_dev_copy2d_async(k->attn_out, row, k->fin + (size_t)k->head_off * CPLAB_MLA_NOPE_DIM, group, row,
                                     (size_t)k->Tdec, s->stream, d);
}

int engine_rank_piece(engine_step *s, int r, int piece, cplab_diag *d) {
  const engine_rank *k = &s->ranks[r];
  switch (piece) {
  case PIECE_PRE_COMM: case PIECE_MID_COMM: case PIECE_MOE_COMM: case PIECE_COUNT:
    return piece_copies(s, k, piece, d);
  case PIECE_PROJ_PRE: return engine_proj_pre(s, k, d);
  case PIECE_KEY_SHARD: return piece_key_shard(s, k, d);
  case PIECE_WS_SHARD: return piece_ws_shard(s, k, d);
  case PIECE_SHARD_COMM: return piece_shard_comm(s, k, d);
  case PIECE_INDEXER: return piece_indexer(s, k, d);
  case PIECE_ATTN: return piece_attention(s, k, d);
  case PIECE_TOPK_COMM: return piece_topk_comm(s, k, d);
  case PIECE_TOPK_MERGE: return piece_topk_merge(s, k, d);
  case PIECE_PART_COMM: return piece_part_comm(s, k, d);
  case PIECE_COMBINE: return piece_combine(s, k, d);
  case PIECE_PROJ_POST: return engine_proj_post(s, k, d);
  case PIECE_MOE: return k->moe_rows > 0 ? cplab_moe_run(k->moe_plan, k->moe_x, k->moe_out, s->stream, d) : 0;
  default: CPLAB_FAIL(d, CPLAB_EINTERNAL, "no piece %d", piece);
  }
}
