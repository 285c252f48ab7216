/* The single-device backend (exec.h): every logical rank in this process, on
 * one GPU. Rank r's caches are slice r of one allocation of world slices, so
 * a DCP peer's shard gather or cache read is an index into its slice, and an
 * all-gather is the rank-major order of the gathered rows. Index lists come
 * from the plan on the host (cplab/maps.h gives the sources of every gathered
 * row, the layout's ops the key order); kernels move and compute. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cplab/kv.h"
#include "cplab/kvformat.h"
#include "cplab/maps.h"
#include "cplab_kernels.h"
#include "exec.h"

struct exec_single {
  const cplab_rank_table *t;
  int world;
  int64_t num_slots; /* per rank */
  uint8_t *kv, *idx; /* [world][num_slots][656], [world][num_slots][132] */
};

/* Device allocations freed together. */
typedef struct arena {
  void *p[64];
  int n;
} arena;

static int arena_alloc(arena *a, void **out, size_t bytes, cplab_diag *d) {
  if (a->n == (int)(sizeof a->p / sizeof a->p[0])) CPLAB_FAIL(d, CPLAB_EINTERNAL, "device arena full");
  int rc = cplab_dev_alloc(out, bytes ? bytes : 16, d);
  if (!rc) a->p[a->n++] = *out;
  return rc;
}

static int arena_put(arena *a, void **out, const void *host, size_t bytes, cplab_diag *d) {
  int rc = arena_alloc(a, out, bytes, d);
  if (!rc && bytes) rc = cplab_dev_upload(*out, host, bytes, d);
  return rc;
}

static void arena_free(arena *a) {
  cplab_diag ignore = {0};
  while (a->n > 0) cplab_dev_free(a->p[--a->n], &ignore);
}

int exec_single_alloc(const cplab_scenario *s, const cplab_layout *layout, const cplab_rank_table *t, exec_single **out,
                      cplab_diag *d) {
  *out = NULL;
  int64_t max_block = 0;
  for (size_t step = 0; step < s->num_steps; step++) {
    cplab_step_input in = {&s->steps[step], step, s->seed, &s->par, &s->model, layout};
    cplab_rank_plan *p = NULL;
    int rc = cplab_rank_plan_derive(&in, 0, 0, &p, d);
    if (rc) return rc;
    for (int64_t i = 0; i < (int64_t)p->sched.num_requests * p->sched.max_blocks; i++)
      if (p->sched.block_table[i] > max_block) max_block = p->sched.block_table[i];
    cplab_rank_plan_free(p);
  }
  exec_single *x = calloc(1, sizeof *x);
  if (!x) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  x->t = t, x->world = t->world;
  x->num_slots = (max_block + 1) * s->par.block_size;
  size_t n = (size_t)x->world * (size_t)x->num_slots;
  int rc = cplab_dev_alloc((void **)&x->kv, n * CPLAB_MLA_ENTRY_BYTES, d);
  if (!rc) rc = cplab_dev_alloc((void **)&x->idx, n * CPLAB_IDX_ENTRY_BYTES, d);
  if (rc) {
    exec_single_free(x);
    return rc;
  }
  *out = x;
  return 0;
}

void exec_single_free(exec_single *x) {
  if (!x) return;
  cplab_diag ignore = {0};
  cplab_dev_free(x->kv, &ignore);
  cplab_dev_free(x->idx, &ignore);
  free(x);
}

/* The global slot (over all ranks' slices) of DCP peer o's slot of rank r's group. */
static int64_t global_slot(const exec_single *x, int r, int o, int64_t slot) {
  if (o < 0 || slot < 0 || slot >= x->num_slots) return -1;
  return (int64_t)cplab_rank_table_members(x->t, CPLAB_GROUP_DCP, r)[o] * x->num_slots + slot;
}

/* Poison both caches of every rank, then write each rank's owned context. */
static int fill_caches(exec_single *x, const cplab_step_input *in, cplab_rank_plan *const *plans, int layer,
                       cplab_diag *d) {
  size_t n = (size_t)x->world * (size_t)x->num_slots;
  int rc = cplab_poison_bytes(x->kv, n * CPLAB_MLA_ENTRY_BYTES, 0xFF, NULL, d);
  if (!rc) rc = cplab_poison_bytes(x->idx, n * CPLAB_IDX_ENTRY_BYTES, 0xFF, NULL, d);
  for (int r = 0; r < x->world && !rc; r++) {
    int64_t *slots = NULL, *pos = NULL, cnt = 0;
    int32_t *req = NULL, *req_id = NULL, *pos32 = NULL;
    arena a = {0};
    rc = cplab_maps_written(plans[r], &slots, &req, &pos, &cnt, d);
    if (!rc) {
      req_id = malloc(sizeof *req_id * (size_t)(cnt ? cnt : 1));
      pos32 = malloc(sizeof *pos32 * (size_t)(cnt ? cnt : 1));
      if (!req_id || !pos32) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
    }
    for (int64_t i = 0; !rc && i < cnt; i++) req_id[i] = (int32_t)in->step->requests[req[i]].id, pos32[i] = (int32_t)pos[i];
    void *dreq, *dpos, *dslot;
    if (!rc) rc = arena_put(&a, &dreq, req_id, sizeof *req_id * (size_t)cnt, d);
    if (!rc) rc = arena_put(&a, &dpos, pos32, sizeof *pos32 * (size_t)cnt, d);
    if (!rc) rc = arena_put(&a, &dslot, slots, sizeof *slots * (size_t)cnt, d);
    size_t off = (size_t)r * (size_t)x->num_slots;
    if (!rc && cnt)
      rc = cplab_gen_cache(in->seed, (uint32_t)layer, dreq, dpos, dslot, cnt, x->kv + off * CPLAB_MLA_ENTRY_BYTES,
                           x->idx + off * CPLAB_IDX_ENTRY_BYTES, x->num_slots, NULL, d);
    if (!rc) rc = cplab_dev_sync(NULL, d);
    arena_free(&a);
    free(slots), free(pos), free(req), free(req_id), free(pos32);
  }
  return rc;
}

void exec_layer_free(exec_layer *l) {
  free(l->tokens), free(l->topk), free(l->converted), free(l->scores), free(l->kth), free(l->out), free(l->lse);
  free(l->digests);
  memset(l, 0, sizeof *l);
}

static int layer_alloc(exec_layer *l, cplab_diag *d) {
  size_t n = (size_t)(l->rows ? l->rows : 1), k = (size_t)l->k, h = (size_t)l->heads;
  l->topk = malloc(sizeof(int32_t) * n * k);
  l->converted = malloc(sizeof(int32_t) * n * k);
  l->scores = malloc(sizeof(float) * n * k);
  l->kth = malloc(sizeof(float) * n);
  l->out = malloc(sizeof(float) * n * h * CPLAB_MLA_NOPE_DIM);
  l->lse = malloc(sizeof(float) * n * h);
  if (!l->topk || !l->converted || !l->scores || !l->kth || !l->out || !l->lse)
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for %lld rows", (long long)l->rows);
  return 0;
}

/* The lse of a combined decode row from the D shards' lse (stride H apart):
 * the log of the sum of their exponentials, NaN and +inf counting as empty
 * shards as in the combine kernel. */
static double merged_lse(const double *lse, int D, int H) {
  double top = -INFINITY, sum = 0;
  for (int o = 0; o < D; o++) {
    double v = lse[(size_t)o * (size_t)H];
    if (isfinite(v) && v > top) top = v;
  }
  for (int o = 0; o < D && top > -INFINITY; o++) {
    double v = lse[(size_t)o * (size_t)H];
    if (isfinite(v)) sum += exp(v - top);
  }
  return top > -INFINITY ? top + log(sum) : -INFINITY;
}

/* What one rank's rows need while they are computed. */
typedef struct rank_ctx {
  exec_single *x;
  const cplab_step_input *in;
  const cplab_rank_plan *rp;
  int layer, r, k, heads;
  uint16_t **ws;          /* [prefill chunk] gathered workspace on the device */
  int64_t *ws_rows;
  cplab_maps_sources *keys;  /* [indexer chunk] sources of the gathered keys */
} rank_ctx;

static int build_workspaces(rank_ctx *c, cplab_diag *d) {
  const cplab_prefill_plan *pl = &c->rp->prefill;
  int n = pl->active ? pl->num_chunks : 0, rc = 0;
  c->ws = calloc((size_t)n + 1, sizeof *c->ws);
  c->ws_rows = calloc((size_t)n + 1, sizeof *c->ws_rows);
  if (!c->ws || !c->ws_rows) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  for (int ch = 0; ch < n && !rc; ch++) {
    cplab_maps_sources src;
    arena a = {0};
    void *dslot;
    if ((rc = cplab_maps_workspace_sources(c->rp, ch, &src, d)) != 0) break;
    for (int64_t i = 0; i < src.rows; i++) src.slot[i] = global_slot(c->x, c->r, src.peer[i], src.slot[i]);
    rc = arena_put(&a, &dslot, src.slot, sizeof(int64_t) * (size_t)src.rows, d);
    if (!rc) rc = cplab_dev_alloc((void **)&c->ws[ch], sizeof(uint16_t) * CPLAB_MLA_ROW_DIM * (size_t)src.rows, d);
    c->ws_rows[ch] = src.rows;
    if (!rc && src.rows)
      rc = cplab_gather_mla(c->x->kv, (int64_t)c->x->world * c->x->num_slots, dslot, src.rows, c->ws[ch], NULL, d);
    if (!rc) rc = cplab_dev_sync(NULL, d);
    arena_free(&a);
    cplab_maps_sources_free(&src);
  }
  return rc;
}

static int key_sources(rank_ctx *c, cplab_diag *d) {
  const cplab_indexer_plan *ip = &c->rp->indexer;
  int n = ip->active ? ip->num_chunks : 0, rc = 0;
  c->keys = calloc((size_t)n + 1, sizeof *c->keys);
  if (!c->keys) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  for (int ch = 0; ch < n && !rc; ch++) rc = cplab_maps_key_sources(c->rp, ch, &c->keys[ch], d);
  return rc;
}

/* Global indexer slots of the row's keys 0 .. n-1 in logical order (-1: a
 * zero key): prefill rows through the layout's de-interleave of the gathered
 * keys, decode rows (and prefills without an indexer plan) from the owner. */
static int row_key_slots(rank_ctx *c, const cplab_row *row, int64_t n, int64_t *slots, cplab_diag *d) {
  const cplab_rank_plan *rp = c->rp;
  const cplab_indexer_plan *ip = &rp->indexer;
  const cplab_parallel *par = c->in->par;
  if (row->is_prefill && ip->active) {
    int k = 0;
    while (k < ip->num_regions && ip->region_req[k] != row->req) k++;
    if (k == ip->num_regions) CPLAB_FAIL(d, CPLAB_EINTERNAL, "request %d has no indexer region", row->req);
    const cplab_maps_sources *src = &c->keys[ip->region_chunk[k]];
    for (int64_t t = 0; t < n; t++) {
      int64_t g = cplab_layout_deinterleave(rp->layout, &rp->env, ip, k, t);
      slots[t] = g < 0 || g >= src->rows ? -1 : global_slot(c->x, c->r, src->peer[g], src->slot[g]);
    }
    return 0;
  }
  const int32_t *brow = rp->sched.block_table + (int64_t)row->req * rp->sched.max_blocks;
  for (int64_t t = 0; t < n; t++) {
    int o = cplab_kv_owner(t, par->interleave, par->dcp);
    slots[t] = global_slot(c->x, c->r, o, cplab_kv_slot_global(par, o, brow, rp->sched.max_blocks, t));
  }
  return 0;
}

static int prefill_region(const cplab_prefill_plan *pl, int req) {
  for (int k = 0; k < pl->num_regions; k++)
    if (pl->region_req[k] == req) return k;
  return -1;
}

/* Convert a row's top-k (device dtopk, host topk) for DCP rank o into dconv:
 * the device kernel where the layout keeps vLLM's rule, its own op otherwise. */
static int row_convert(rank_ctx *c, const cplab_row *row, const int32_t *topk, const int32_t *dtopk, int o,
                       int32_t *dconv, arena *a, cplab_diag *d) {
  const cplab_rank_plan *rp = c->rp;
  const cplab_layout *l = rp->layout;
  const cplab_parallel *par = c->in->par;
  size_t kb = sizeof(int32_t) * (size_t)c->k;
  int32_t *conv = malloc(kb);
  if (!conv) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  int rc = 0, k = row->is_prefill ? prefill_region(&rp->prefill, row->req) : -1;
  const int32_t *brow = rp->sched.block_table + (int64_t)row->req * rp->sched.max_blocks;
  if (row->is_prefill && !rp->prefill.active) {
    rc = cplab_dev_upload(dconv, topk, kb, d);
  } else if (row->is_prefill && !l->convert_prefill) {
    const cplab_prefill_plan *pl = &rp->prefill;
    int32_t region = 0;
    int64_t start = pl->workspace_start[k], shard = pl->chunks[pl->region_chunk[k]].shard_rows;
    void *dreg, *dstart, *dshard;
    rc = arena_put(a, &dreg, &region, sizeof region, d);
    if (!rc) rc = arena_put(a, &dstart, &start, sizeof start, d);
    if (!rc) rc = arena_put(a, &dshard, &shard, sizeof shard, d);
    if (!rc)
      rc = cplab_convert_prefill_topk(dtopk, 1, c->k, dreg, dstart, dshard, NULL, 1, par->dcp, par->interleave, dconv,
                                      NULL, d);
  } else if (!row->is_prefill && !l->convert_decode) {
    int32_t zero = 0;
    void *dreq, *dbt;
    rc = arena_put(a, &dreq, &zero, sizeof zero, d);
    if (!rc) rc = arena_put(a, &dbt, brow, sizeof(int32_t) * (size_t)rp->sched.max_blocks, d);
    if (!rc)
      rc = cplab_convert_decode_topk(dtopk, 1, c->k, dreq, dbt, 1, rp->sched.max_blocks, par->block_size, par->dcp, o,
                                     par->interleave, dconv, NULL, d);
  } else { /* the layout's own rule, on the host */
    for (int j = 0; j < c->k; j++)
      conv[j] = row->is_prefill ? cplab_layout_convert_prefill(l, &rp->env, &rp->prefill, k, topk[j], o)
                                : cplab_layout_convert_decode(l, &rp->env, brow, rp->sched.max_blocks, topk[j], o);
    rc = cplab_dev_upload(dconv, conv, kb, d);
  }
  free(conv);
  return rc;
}

/* One sampled row: top-k, conversion, attention; results into out row i. */
static int row_run(rank_ctx *c, const cplab_row *row, int64_t pos, int64_t i, exec_layer *out, cplab_diag *d) {
  const cplab_step_input *in = c->in;
  const cplab_model *m = in->model;
  const cplab_parallel *par = in->par;
  exec_single *x = c->x;
  int K = c->k, H = c->heads, IH = (int)m->index_n_heads, D = par->dcp, rc = 0;
  int64_t n = pos + 1, all_slots = (int64_t)x->world * x->num_slots;
  int32_t id = (int32_t)in->step->requests[row->req].id, pos32 = (int32_t)pos, ks = 0, ke = (int32_t)n;
  float scale = (float)cplab_model_softmax_scale(m);
  arena a = {0};
  int64_t *kslots = malloc(sizeof *kslots * (size_t)n);
  float *fout = malloc(sizeof(float) * (size_t)D * H * CPLAB_MLA_NOPE_DIM), *flse = malloc(sizeof(float) * (size_t)D * H);
  float *fscore = malloc(sizeof(float) * (size_t)K);
  double *dlse = malloc(sizeof(double) * (size_t)D * H);
  if (!kslots || !fout || !flse || !fscore || !dlse) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  void *did, *dpos, *dks, *dke, *dkslots, *dkeys, *diq, *diw, *dis, *dlogits, *dtopk, *dscore, *dconv, *dq, *dout, *dl,
      *dfin;
  if (!rc) rc = row_key_slots(c, row, n, kslots, d);
  if (!rc) rc = arena_put(&a, &did, &id, sizeof id, d);
  if (!rc) rc = arena_put(&a, &dpos, &pos32, sizeof pos32, d);
  if (!rc) rc = arena_put(&a, &dks, &ks, sizeof ks, d);
  if (!rc) rc = arena_put(&a, &dke, &ke, sizeof ke, d);
  if (!rc) rc = arena_put(&a, &dkslots, kslots, sizeof *kslots * (size_t)n, d);
  if (!rc) rc = arena_alloc(&a, &dkeys, (size_t)n * CPLAB_IDX_ENTRY_BYTES, d);
  if (!rc) rc = arena_alloc(&a, &diq, (size_t)IH * CPLAB_IDX_DIM, d);
  if (!rc) rc = arena_alloc(&a, &dis, sizeof(float) * (size_t)IH, d);
  if (!rc) rc = arena_alloc(&a, &diw, sizeof(float) * (size_t)IH, d);
  if (!rc) rc = arena_alloc(&a, &dlogits, sizeof(float) * (size_t)n, d);
  if (!rc) rc = arena_alloc(&a, &dtopk, sizeof(int32_t) * (size_t)K, d);
  if (!rc) rc = arena_alloc(&a, &dscore, sizeof(float) * (size_t)K, d);
  if (!rc) rc = arena_alloc(&a, &dconv, sizeof(int32_t) * (size_t)K * (size_t)(D + 1), d);
  if (!rc) rc = arena_alloc(&a, &dq, sizeof(uint16_t) * (size_t)H * CPLAB_MLA_ROW_DIM, d);
  if (!rc) rc = arena_alloc(&a, &dout, sizeof(float) * (size_t)D * H * CPLAB_MLA_NOPE_DIM, d);
  if (!rc) rc = arena_alloc(&a, &dl, sizeof(float) * (size_t)D * H, d);
  if (!rc) rc = arena_alloc(&a, &dfin, sizeof(float) * (size_t)H * CPLAB_MLA_NOPE_DIM, d);
  /* Indexer: keys in logical order, logits, top-k. */
  if (!rc) rc = cplab_gather_idx(x->idx, all_slots, dkslots, n, dkeys, NULL, d);
  if (!rc) rc = cplab_gen_indexer_query(in->seed, (uint32_t)c->layer, did, dpos, 1, IH, diq, dis, diw, NULL, d);
  if (!rc) rc = cplab_indexer_logits(diq, diw, 1, IH, dkeys, n, dks, dke, dlogits, NULL, d);
  if (!rc) rc = cplab_topk(dlogits, 1, n, dks, dke, K, dtopk, dscore, NULL, d);
  int32_t *topk = out->topk + i * K;
  if (!rc) rc = cplab_dev_download(topk, dtopk, sizeof(int32_t) * (size_t)K, d);
  if (!rc) rc = cplab_dev_download(fscore, dscore, sizeof(float) * (size_t)K, d);
  for (int j = 0; !rc && j < K; j++) out->scores[i * K + j] = fscore[j];
  if (!rc) out->kth[i] = n >= K ? fscore[K - 1] : -INFINITY;
  /* Conversion by this rank, then attention. */
  int32_t *own = (int32_t *)dconv + (size_t)D * K;
  if (!rc) rc = row_convert(c, row, topk, dtopk, c->rp->ids.dcp_rank, own, &a, d);
  if (!rc) rc = cplab_dev_download(out->converted + i * K, own, sizeof(int32_t) * (size_t)K, d);
  if (!rc) rc = cplab_gen_mla_query(in->seed, (uint32_t)c->layer, did, dpos, 1, c->rp->ids.tp * H, H, dq, NULL, d);
  if (!rc && row->is_prefill) {
    int k = prefill_region(&c->rp->prefill, row->req);
    if (c->rp->prefill.active) {
      int ch = c->rp->prefill.region_chunk[k];
      rc = cplab_sparse_mla_prefill(dq, 1, H, c->ws[ch], c->ws_rows[ch], own, K, scale, dfin, dl, NULL, d);
    } else { /* no gathered workspace: the selected entries read from their owners' caches */
      int64_t *sel = malloc(sizeof *sel * (size_t)K);
      int32_t *idx = malloc(sizeof *idx * (size_t)K);
      void *dsel, *didx, *dws;
      if (!sel || !idx) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
      const int32_t *brow = c->rp->sched.block_table + (int64_t)row->req * c->rp->sched.max_blocks;
      for (int j = 0; !rc && j < K; j++) {
        int o = topk[j] < 0 ? -1 : cplab_kv_owner(topk[j], par->interleave, D);
        sel[j] = o < 0 ? -1 : global_slot(x, c->r, o, cplab_kv_slot_global(par, o, brow, c->rp->sched.max_blocks, topk[j]));
        idx[j] = topk[j] < 0 ? -1 : j;
      }
      if (!rc) rc = arena_put(&a, &dsel, sel, sizeof *sel * (size_t)K, d);
      if (!rc) rc = arena_put(&a, &didx, idx, sizeof *idx * (size_t)K, d);
      if (!rc) rc = arena_alloc(&a, &dws, sizeof(uint16_t) * CPLAB_MLA_ROW_DIM * (size_t)K, d);
      if (!rc) rc = cplab_gather_mla(x->kv, all_slots, dsel, K, dws, NULL, d);
      if (!rc) rc = cplab_sparse_mla_prefill(dq, 1, H, dws, K, didx, K, scale, dfin, dl, NULL, d);
      free(sel), free(idx);
    }
    if (!rc) rc = cplab_dev_download(flse, dl, sizeof(float) * (size_t)H, d);
    for (int h = 0; !rc && h < H; h++) out->lse[i * H + h] = flse[h];
  } else if (!rc) { /* decode: each DCP peer converts and attends over its own cache; then the combine */
    for (int o = 0; o < D && !rc; o++) {
      int32_t *peer = (int32_t *)dconv + (size_t)o * K;
      int64_t off = (int64_t)cplab_rank_table_members(x->t, CPLAB_GROUP_DCP, c->r)[o] * x->num_slots;
      rc = row_convert(c, row, topk, dtopk, o, peer, &a, d);
      if (!rc)
        rc = cplab_sparse_mla_decode(dq, 1, H, x->kv + (size_t)off * CPLAB_MLA_ENTRY_BYTES, x->num_slots, peer, K,
                                     scale, (float *)dout + (size_t)o * H * CPLAB_MLA_NOPE_DIM, (float *)dl + (size_t)o * H,
                                     NULL, d);
    }
    if (!rc) rc = cplab_lse_combine(dl, dout, D, 1, H, dfin, NULL, d);
    if (!rc) rc = cplab_dev_download(flse, dl, sizeof(float) * (size_t)D * H, d);
    for (int j = 0; !rc && j < D * H; j++) dlse[j] = flse[j];
    for (int h = 0; !rc && h < H; h++) out->lse[i * H + h] = (float)merged_lse(dlse + h, D, H);
  }
  if (!rc) rc = cplab_dev_download(fout, dfin, sizeof(float) * (size_t)H * CPLAB_MLA_NOPE_DIM, d);
  for (int j = 0; !rc && j < H * CPLAB_MLA_NOPE_DIM; j++) out->out[(size_t)i * H * CPLAB_MLA_NOPE_DIM + (size_t)j] = fout[j];
  if (!rc) rc = cplab_dev_sync(NULL, d);
  arena_free(&a);
  free(kslots), free(fout), free(flse), free(fscore), free(dlse);
  return rc;
}

/* Digests of the rank's caches and workspaces (SCHEMA.md), from device memory. */
static int rank_digests(rank_ctx *c, exec_layer *out, cplab_diag *d) {
  const cplab_prefill_plan *pl = &c->rp->prefill;
  out->num_digests = CPLAB_TRACE_DIGEST_WORKSPACE + (pl->active ? pl->num_chunks : 0);
  out->digests = calloc((size_t)out->num_digests, sizeof *out->digests);
  int64_t *slots = NULL, *pos = NULL, n = 0, ns = c->x->num_slots;
  int32_t *req = NULL;
  uint8_t *cache = malloc((size_t)ns * CPLAB_MLA_ENTRY_BYTES), *entries = NULL;
  int rc = out->digests && cache ? 0 : cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  if (!rc) rc = cplab_maps_written(c->rp, &slots, &req, &pos, &n, d);
  if (!rc && !(entries = malloc((size_t)(n ? n : 1) * CPLAB_MLA_ENTRY_BYTES)))
    rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  for (int which = 0; which < 2 && !rc; which++) {
    size_t bytes = which ? CPLAB_IDX_ENTRY_BYTES : CPLAB_MLA_ENTRY_BYTES;
    const uint8_t *src = (which ? c->x->idx : c->x->kv) + (size_t)c->r * (size_t)ns * bytes;
    rc = cplab_dev_download(cache, src, (size_t)ns * bytes, d);
    for (int64_t i = 0; !rc && i < n; i++) memcpy(entries + (size_t)i * bytes, cache + (size_t)slots[i] * bytes, bytes);
    if (!rc) out->digests[which ? CPLAB_TRACE_DIGEST_INDEX_K : CPLAB_TRACE_DIGEST_KV_CACHE] = cplab_maps_cache_digest(slots, entries, n, bytes);
  }
  for (int ch = 0; !rc && ch < out->num_digests - CPLAB_TRACE_DIGEST_WORKSPACE; ch++) {
    size_t bytes = sizeof(uint16_t) * CPLAB_MLA_ROW_DIM * (size_t)c->ws_rows[ch];
    uint8_t *ws = malloc(bytes ? bytes : 1);
    if (!ws) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
    if (!rc) rc = cplab_dev_download(ws, c->ws[ch], bytes, d);
    if (!rc) out->digests[CPLAB_TRACE_DIGEST_WORKSPACE + ch] = XXH3_64bits(ws, bytes);
    free(ws);
  }
  free(cache), free(entries), free(slots), free(req), free(pos);
  return rc;
}

static void rank_ctx_fini(rank_ctx *c) {
  cplab_diag ignore = {0};
  const cplab_prefill_plan *pl = &c->rp->prefill;
  for (int ch = 0; c->ws && ch < (pl->active ? pl->num_chunks : 0); ch++) cplab_dev_free(c->ws[ch], &ignore);
  for (int ch = 0; c->keys && ch < (c->rp->indexer.active ? c->rp->indexer.num_chunks : 0); ch++)
    cplab_maps_sources_free(&c->keys[ch]);
  free(c->ws), free(c->ws_rows), free(c->keys);
}

static const cplab_row *row_of(const cplab_rank_plan *rp, int64_t t) {
  for (int i = 0; i < rp->split.num_rows; i++) {
    const cplab_row *r = &rp->split.rows[i];
    if (!r->dummy && t >= r->token_offset && t < r->token_offset + r->len) return r;
  }
  return NULL;
}

static int rank_layer(exec_single *x, const cplab_step_input *in, const cplab_rank_plan *rp, int r, int layer,
                      int64_t sampled_rows, exec_layer *out, cplab_diag *d) {
  memset(out, 0, sizeof *out);
  out->layer = layer;
  out->k = (int)in->model->index_topk;
  out->heads = (int)(in->model->num_heads / in->par->tp);
  rank_ctx c = {.x = x, .in = in, .rp = rp, .layer = layer, .r = r, .k = out->k, .heads = out->heads};
  int rc = cplab_maps_sample(in, rp, sampled_rows, &out->tokens, &out->rows, d);
  if (!rc) rc = layer_alloc(out, d);
  if (!rc) rc = build_workspaces(&c, d);
  if (!rc) rc = key_sources(&c, d);
  for (int64_t i = 0; i < out->rows && !rc; i++) {
    const cplab_row *row = row_of(rp, out->tokens[i]);
    rc = row_run(&c, row, row->start_pos + (out->tokens[i] - row->token_offset), i, out, d);
    if (rc) cplab_diag_prefix(d, "rank %d, layer %d, local token %lld: ", r, layer, (long long)out->tokens[i]);
  }
  if (!rc) rc = rank_digests(&c, out, d);
  rank_ctx_fini(&c);
  if (rc) exec_layer_free(out);
  return rc;
}

int exec_single_layer(exec_single *x, const cplab_step_input *in, cplab_rank_plan *const *plans, int layer,
                      int64_t sampled_rows, exec_layer *out, cplab_diag *d) {
  int rc = fill_caches(x, in, plans, layer, d);
  for (int r = 0; r < x->world && !rc; r++) rc = rank_layer(x, in, plans[r], r, layer, sampled_rows, &out[r], d);
  return rc;
}

int exec_device_describe(char *device, size_t dlen, char *cuda, size_t clen, cplab_diag *d) {
  cplab_gpu_info info;
  int rc = cplab_gpu_query(&info, d);
  if (rc) return rc;
  snprintf(device, dlen, "%s (sm_%d%d, %d SMs)", info.name, info.cc_major, info.cc_minor, info.sm_count);
  snprintf(cuda, clen, "CUDA runtime %d, driver %d", info.runtime_version, info.driver_version);
  return 0;
}
