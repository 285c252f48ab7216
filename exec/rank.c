/* One rank's numeric pass on the device (rank.h): the flow every backend
 * shares. Index lists come from the plan on the host (cplab/maps.h, the
 * layout's ops); kernels move and compute. */
#include "rank.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cplab/kv.h"
#include "cplab/kvformat.h"
#include "cplab/maps.h"
#include "cplab_kernels.h"

void exec_layer_free(exec_layer *l) {
  free(l->tokens), free(l->topk), free(l->converted), free(l->scores), free(l->kth), free(l->out), free(l->lse);
  free(l->digests), free(l->valid), free(l->partial_out), free(l->partial_lse);
  memset(l, 0, sizeof *l);
}

static int layer_alloc(exec_layer *l, cplab_diag *d) {
  size_t n = (size_t)(l->rows ? l->rows : 1), k = (size_t)l->k, h = (size_t)l->heads;
  l->topk = malloc(sizeof(int32_t) * n * k);
  l->converted = malloc(sizeof(int32_t) * n * k);
  l->scores = malloc(sizeof(float) * n * k);
  l->kth = malloc(sizeof(float) * n);
  l->valid = malloc(sizeof(int32_t) * n);
  l->out = malloc(sizeof(float) * n * h * CPLAB_MLA_NOPE_DIM);
  l->lse = malloc(sizeof(float) * n * h);
  if (!l->topk || !l->converted || !l->scores || !l->kth || !l->valid || !l->out || !l->lse)
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for %lld rows", (long long)l->rows);
  return 0;
}

/* NaN and +inf count as empty shards, as in the combine kernel. */
double exec_merged_lse(const double *lse, int D, int H) {
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

int exec_num_slots(const cplab_scenario *s, const cplab_layout *layout, int64_t *out, cplab_diag *d) {
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
  *out = (max_block + 1) * s->par.block_size;
  return 0;
}

int exec_fill_cache(const cplab_step_input *in, const cplab_rank_plan *rp, int layer, uint8_t *kv, uint8_t *idx,
                    int64_t num_slots, cplab_diag *d) {
  int64_t *slots = NULL, *pos = NULL, cnt = 0;
  int32_t *req = NULL, *req_id = NULL, *pos32 = NULL;
  exec_arena a = {0};
  void *dreq, *dpos, *dslot;
  int rc = cplab_poison_bytes(kv, (size_t)num_slots * CPLAB_MLA_ENTRY_BYTES, 0xFF, NULL, d);
  if (!rc) rc = cplab_poison_bytes(idx, (size_t)num_slots * CPLAB_IDX_ENTRY_BYTES, 0xFF, NULL, d);
  if (!rc) rc = cplab_maps_written(rp, &slots, &req, &pos, &cnt, d);
  if (!rc) {
    req_id = malloc(sizeof *req_id * (size_t)(cnt ? cnt : 1));
    pos32 = malloc(sizeof *pos32 * (size_t)(cnt ? cnt : 1));
    if (!req_id || !pos32) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  }
  for (int64_t i = 0; !rc && i < cnt; i++) req_id[i] = (int32_t)in->step->requests[req[i]].id, pos32[i] = (int32_t)pos[i];
  if (!rc) rc = exec_arena_put(&a, &dreq, req_id, sizeof *req_id * (size_t)cnt, d);
  if (!rc) rc = exec_arena_put(&a, &dpos, pos32, sizeof *pos32 * (size_t)cnt, d);
  if (!rc) rc = exec_arena_put(&a, &dslot, slots, sizeof *slots * (size_t)cnt, d);
  if (!rc && cnt)
    rc = cplab_gen_cache(&(cplab_gen_cache_params){.seed = in->seed, .layer = (uint32_t)layer, .req = dreq, .pos = dpos,
                                                   .slot = dslot, .n = cnt, .kv_cache = kv, .idx_cache = idx,
                                                   .num_slots = num_slots}, NULL, d);
  if (!rc) rc = cplab_dev_sync(NULL, d);
  exec_arena_free(&a);
  free(slots), free(pos), free(req), free(req_id), free(pos32);
  return rc;
}

int exec_indexer_topk(exec_rank *c, const cplab_row *row, int64_t pos, const uint8_t *dkeys, int64_t n, int32_t *dtopk,
                      float *dscore, exec_arena *a, cplab_diag *d) {
  int IH = (int)c->in->model->index_n_heads;
  int32_t id = (int32_t)c->in->step->requests[row->req].id, pos32 = (int32_t)pos, ks = 0, ke = (int32_t)n;
  void *did, *dpos, *dks, *dke, *diq, *diw, *dis, *dlogits;
  int rc = exec_arena_put(a, &did, &id, sizeof id, d);
  if (!rc) rc = exec_arena_put(a, &dpos, &pos32, sizeof pos32, d);
  if (!rc) rc = exec_arena_put(a, &dks, &ks, sizeof ks, d);
  if (!rc) rc = exec_arena_put(a, &dke, &ke, sizeof ke, d);
  if (!rc) rc = exec_arena_alloc(a, &diq, (size_t)IH * CPLAB_IDX_DIM, d);
  if (!rc) rc = exec_arena_alloc(a, &dis, sizeof(float) * (size_t)IH, d);
  if (!rc) rc = exec_arena_alloc(a, &diw, sizeof(float) * (size_t)IH, d);
  if (!rc) rc = exec_arena_alloc(a, &dlogits, sizeof(float) * (size_t)(n ? n : 1), d);
  if (!rc)
    rc = cplab_gen_indexer_query(
        &(cplab_gen_indexer_query_params){.seed = c->in->seed, .layer = (uint32_t)c->layer, .req = did, .pos = dpos,
                                          .m = 1, .heads = IH, .q = diq, .scale = dis, .weight = diw}, NULL, d);
  /* Rows on the local shard (decodes; every row under DCP without PCP)
   * through the decode kernel (over the gathered keys as one block of a
   * one-row table), as cplab-bench reads them from the paged cache: both
   * kernels meet the double reference, but only the same kernel gives the
   * same bits, and cplab-bench checks those rows against these bit for bit. */
  int32_t zero = 0, bsize = (int32_t)(n > 0 ? n : 1);
  int shard = cplab_row_on_local_shard(c->in->par, row);
  void *dtab = NULL;
  if (!rc && shard) rc = exec_arena_put(a, &dtab, &zero, sizeof zero, d);
  if (!rc && n && !shard)
    rc = cplab_indexer_logits(&(cplab_indexer_logits_params){.q = diq, .weight = diw, .m = 1, .heads = IH,
                                                             .keys = dkeys, .n = n, .ks = dks, .ke = dke,
                                                             .logits = dlogits}, NULL, d);
  if (!rc && n && shard)
    rc = cplab_indexer_logits_decode(
        &(cplab_indexer_logits_decode_params){.q = diq, .weight = diw, .m = 1, .heads = IH, .idx_cache = dkeys,
                                              .num_slots = n, .block_table = dtab, .num_req = 1, .max_blocks = 1,
                                              .block_size = bsize, .row_req = dtab, .row_keys = dke, .n = n,
                                              .logits = dlogits}, NULL, d);
  if (!rc) rc = cplab_topk(&(cplab_topk_params){.logits = dlogits, .m = 1, .n = n, .ks = dks, .ke = dke, .k = c->k,
                                                .idx = dtopk, .score = dscore}, NULL, d);
  return rc;
}

int exec_row_convert(exec_rank *c, const cplab_row *row, const int32_t *topk, const int32_t *dtopk, int o,
                     int32_t *dconv, exec_arena *a, cplab_diag *d) {
  const cplab_rank_plan *rp = c->rp;
  const cplab_layout *l = rp->layout;
  const cplab_parallel *par = c->in->par;
  size_t kb = sizeof(int32_t) * (size_t)c->k;
  /* Rows on the local shard convert like decodes (vLLM's
   * triton_filter_and_convert_dcp_index); the others into the gathered
   * workspace, or (DCP 1) not at all. */
  int on_shard = cplab_row_on_local_shard(par, row), rc = 0;
  int k = on_shard ? -1 : cplab_prefill_region_of(&rp->prefill, row->req);
  const int32_t *brow = rp->sched.block_table + (int64_t)row->req * rp->sched.max_blocks;
  if (!on_shard && !rp->prefill.active) return cplab_dev_upload(dconv, topk, kb, d);
  rc = exec_layout_expressed(l, on_shard ? CPLAB_MAP_CONVERT_DECODE : CPLAB_MAP_CONVERT_PREFILL, d);
  if (rc) return rc;
  if (!on_shard) {
    const cplab_prefill_plan *pl = &rp->prefill;
    int32_t region = 0;
    int64_t start = pl->workspace_start[k], shard = pl->chunks[pl->region_chunk[k]].shard_rows;
    void *dreg, *dstart, *dshard;
    rc = exec_arena_put(a, &dreg, &region, sizeof region, d);
    if (!rc) rc = exec_arena_put(a, &dstart, &start, sizeof start, d);
    if (!rc) rc = exec_arena_put(a, &dshard, &shard, sizeof shard, d);
    if (!rc)
      rc = cplab_convert_prefill_topk(
          &(cplab_convert_prefill_topk_params){.topk = dtopk, .m = 1, .k = c->k, .row_region = dreg, .ws_start = dstart,
                                               .shard_rows = dshard, .extent = NULL, .num_regions = 1, .dcp = par->dcp,
                                               .interleave = par->interleave, .out = dconv}, NULL, d);
  } else {
    int32_t zero = 0;
    void *dreq, *dbt;
    rc = exec_arena_put(a, &dreq, &zero, sizeof zero, d);
    if (!rc) rc = exec_arena_put(a, &dbt, brow, sizeof(int32_t) * (size_t)rp->sched.max_blocks, d);
    if (!rc)
      rc = cplab_convert_decode_topk(
          &(cplab_convert_decode_topk_params){.topk = dtopk, .m = 1, .k = c->k, .row_req = dreq, .block_table = dbt,
                                              .num_req = 1, .max_blocks = rp->sched.max_blocks,
                                              .block_size = par->block_size, .dcp = par->dcp, .dcp_rank = o,
                                              .interleave = par->interleave, .out = dconv}, NULL, d);
  }
  return rc;
}

/* A prefill row without a gathered workspace (DCP 1): the selected entries
 * read from their owners' caches, in top-k order. */
static int prefill_direct(exec_rank *c, const cplab_row *row, const int32_t *topk, const uint16_t *dq, float *dfin,
                          float *dl, exec_arena *a, cplab_diag *d) {
  const cplab_parallel *par = c->in->par;
  int K = c->k, rc = 0;
  int64_t *sel = malloc(sizeof *sel * (size_t)K);
  int32_t *idx = malloc(sizeof *idx * (size_t)K);
  void *dsel, *didx, *dws;
  if (!sel || !idx) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  const int32_t *brow = c->rp->sched.block_table + (int64_t)row->req * c->rp->sched.max_blocks;
  for (int j = 0; !rc && j < K; j++) {
    int o = topk[j] < 0 ? -1 : cplab_kv_owner(topk[j], par->interleave, par->dcp);
    sel[j] = o < 0 ? -1 : c->ops->slot(c, o, cplab_kv_slot_global(par, o, brow, c->rp->sched.max_blocks, topk[j]));
    idx[j] = topk[j] < 0 ? -1 : j;
  }
  if (!rc) rc = exec_arena_put(a, &dsel, sel, sizeof *sel * (size_t)K, d);
  if (!rc) rc = exec_arena_put(a, &didx, idx, sizeof *idx * (size_t)K, d);
  if (!rc) rc = exec_arena_alloc(a, &dws, sizeof(uint16_t) * CPLAB_MLA_ROW_DIM * (size_t)K, d);
  if (!rc) rc = cplab_gather_mla(&(cplab_gather_mla_params){.kv_cache = c->kv_read, .num_slots = c->read_slots,
                                                            .slot = dsel, .rows = K, .out = dws}, NULL, d);
  if (!rc)
    rc = cplab_sparse_mla_prefill(&(cplab_sparse_mla_prefill_params){.q = dq, .m = 1, .heads = c->heads,
                                                                      .workspace = dws, .rows = K, .idx = didx, .k = K,
                                                                      .scale = (float)cplab_model_softmax_scale(c->in->model),
                                                                      .out = dfin, .lse = dl},
                                  NULL, d);
  free(sel), free(idx);
  return rc;
}

/* The valid entries of a top-k row as the kernel left it: those before its
 * first -1 (the kernel's contract puts every -1 last), so a kernel that
 * stops early or pads in the middle shows against the reference's count. */
static int32_t topk_valid(const int32_t *topk, int k) {
  int32_t n = 0;
  while (n < k && topk[n] != -1) n++;
  return n;
}

/* One sampled row: top-k, conversion, attention; results into out row i. */
static int row_run(exec_rank *c, const cplab_row *row, int64_t pos, int64_t i, exec_layer *out, cplab_diag *d) {
  const cplab_step_input *in = c->in;
  int K = c->k, H = c->heads, D = in->par->dcp, rc = 0;
  int G = out->blocks, keep = out->partial_out && cplab_row_dcp_combined(in->par, row); /* store its partials */
  int32_t id = (int32_t)in->step->requests[row->req].id, pos32 = (int32_t)pos;
  float scale = (float)cplab_model_softmax_scale(in->model);
  exec_arena a = {0};
  float *fout = malloc(sizeof(float) * (size_t)H * CPLAB_MLA_NOPE_DIM), *flse = malloc(sizeof(float) * (size_t)D * H);
  float *fscore = malloc(sizeof(float) * (size_t)K);
  double *dlse = malloc(sizeof(double) * (size_t)D * H);
  void *did, *dpos, *dtopk, *dscore, *dconv, *dq, *dout, *dl, *dfin, *dpart = NULL, *dpart_l = NULL;
  if (!fout || !flse || !fscore || !dlse) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  if (!rc) rc = exec_arena_put(&a, &did, &id, sizeof id, d);
  if (!rc) rc = exec_arena_put(&a, &dpos, &pos32, sizeof pos32, d);
  if (!rc) rc = exec_arena_alloc(&a, &dtopk, sizeof(int32_t) * (size_t)K, d);
  if (!rc) rc = exec_arena_alloc(&a, &dscore, sizeof(float) * (size_t)K, d);
  if (!rc) rc = exec_arena_alloc(&a, &dconv, sizeof(int32_t) * (size_t)K, d);
  if (!rc) rc = exec_arena_alloc(&a, &dq, sizeof(uint16_t) * (size_t)H * CPLAB_MLA_ROW_DIM, d);
  if (!rc) rc = exec_arena_alloc(&a, &dout, sizeof(float) * (size_t)D * H * CPLAB_MLA_NOPE_DIM, d);
  if (!rc) rc = exec_arena_alloc(&a, &dl, sizeof(float) * (size_t)D * H, d);
  if (!rc) rc = exec_arena_alloc(&a, &dfin, sizeof(float) * (size_t)H * CPLAB_MLA_NOPE_DIM, d);
  if (!rc && keep) rc = exec_arena_alloc(&a, &dpart, sizeof(float) * (size_t)G * H * CPLAB_MLA_NOPE_DIM, d);
  if (!rc && keep) rc = exec_arena_alloc(&a, &dpart_l, sizeof(float) * (size_t)G * H, d);
  /* Indexer top-k (the backend decides where the keys come from). */
  if (!rc) rc = c->ops->topk(c, row, pos, dtopk, dscore, &a, d);
  int32_t *topk = out->topk + i * K;
  if (!rc) rc = cplab_dev_download(topk, dtopk, sizeof(int32_t) * (size_t)K, d);
  if (!rc) rc = cplab_dev_download(fscore, dscore, sizeof(float) * (size_t)K, d);
  for (int j = 0; !rc && j < K; j++) out->scores[i * K + j] = fscore[j];
  if (!rc) out->kth[i] = pos + 1 >= K ? fscore[K - 1] : -INFINITY;
  if (!rc) out->valid[i] = topk_valid(topk, K);
  /* Conversion by this rank, then attention. */
  if (!rc) rc = exec_row_convert(c, row, topk, dtopk, c->rp->ids.dcp_rank, dconv, &a, d);
  if (!rc) rc = cplab_dev_download(out->converted + i * K, dconv, sizeof(int32_t) * (size_t)K, d);
  if (!rc)
    rc = cplab_gen_mla_query(&(cplab_gen_mla_query_params){.seed = in->seed, .layer = (uint32_t)c->layer, .req = did,
                                                           .pos = dpos, .m = 1, .head0 = c->rp->ids.tp * H,
                                                           .heads_local = H, .q = dq}, NULL, d);
  if (!rc && !cplab_row_on_local_shard(in->par, row)) {
    if (c->rp->prefill.active) {
      int ch = c->rp->prefill.region_chunk[cplab_prefill_region_of(&c->rp->prefill, row->req)];
      rc = cplab_sparse_mla_prefill(&(cplab_sparse_mla_prefill_params){.q = dq, .m = 1, .heads = H, .workspace = c->ws[ch],
                                                                        .rows = c->ws_rows[ch], .idx = dconv, .k = K,
                                                                        .scale = scale, .out = dfin, .lse = dl},
                                    NULL, d);
    } else {
      rc = prefill_direct(c, row, topk, dq, dfin, dl, &a, d);
    }
    if (!rc) rc = cplab_dev_download(flse, dl, sizeof(float) * (size_t)H, d);
    for (int h = 0; !rc && h < H; h++) out->lse[i * H + h] = flse[h];
  } else if (!rc) { /* on the local shard: every DCP peer's partial, then the combine */
    rc = c->ops->partials(c, row, pos, topk, dtopk, dq, dout, dl, dpart, dpart_l, &a, d);
    size_t gh = (size_t)G * H;
    if (!rc && keep) rc = cplab_dev_download(out->partial_out + (size_t)i * gh * CPLAB_MLA_NOPE_DIM, dpart,
                                             sizeof(float) * gh * CPLAB_MLA_NOPE_DIM, d);
    if (!rc && keep) rc = cplab_dev_download(out->partial_lse + (size_t)i * gh, dpart_l, sizeof(float) * gh, d);
    if (!rc) rc = cplab_lse_combine(&(cplab_lse_combine_params){.lse = dl, .out = dout, .D = D, .m = 1, .heads = H,
                                                                .final = dfin}, NULL, d);
    if (!rc) rc = cplab_dev_download(flse, dl, sizeof(float) * (size_t)D * H, d);
    for (int j = 0; !rc && j < D * H; j++) dlse[j] = flse[j];
    for (int h = 0; !rc && h < H; h++) out->lse[i * H + h] = (float)exec_merged_lse(dlse + h, D, H);
  }
  if (!rc) rc = cplab_dev_download(fout, dfin, sizeof(float) * (size_t)H * CPLAB_MLA_NOPE_DIM, d);
  if (!rc) memcpy(out->out + (size_t)i * H * CPLAB_MLA_NOPE_DIM, fout, sizeof(float) * (size_t)H * CPLAB_MLA_NOPE_DIM);
  if (!rc) rc = cplab_dev_sync(NULL, d);
  exec_arena_free(&a);
  free(fout), free(flse), free(fscore), free(dlse);
  return rc;
}

/* Digests of the rank's caches and workspaces (SCHEMA.md), from device memory. */
static int rank_digests(exec_rank *c, exec_layer *out, cplab_diag *d) {
  const cplab_prefill_plan *pl = &c->rp->prefill;
  out->num_digests = CPLAB_TRACE_DIGEST_WORKSPACE + (pl->active ? pl->num_chunks : 0);
  out->digests = calloc((size_t)out->num_digests, sizeof *out->digests);
  int64_t *slots = NULL, *pos = NULL, n = 0, ns = c->num_slots;
  int32_t *req = NULL;
  uint8_t *cache = malloc((size_t)ns * CPLAB_MLA_ENTRY_BYTES), *entries = NULL;
  int rc = out->digests && cache ? 0 : cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  if (!rc) rc = cplab_maps_written(c->rp, &slots, &req, &pos, &n, d);
  if (!rc && !(entries = malloc((size_t)(n ? n : 1) * CPLAB_MLA_ENTRY_BYTES)))
    rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  for (int which = 0; which < 2 && !rc; which++) {
    size_t bytes = which ? CPLAB_IDX_ENTRY_BYTES : CPLAB_MLA_ENTRY_BYTES;
    rc = cplab_dev_download(cache, which ? c->idx_own : c->kv_own, (size_t)ns * bytes, d);
    for (int64_t i = 0; !rc && i < n; i++) memcpy(entries + (size_t)i * bytes, cache + (size_t)slots[i] * bytes, bytes);
    if (!rc)
      out->digests[which ? CPLAB_TRACE_DIGEST_INDEX_K : CPLAB_TRACE_DIGEST_KV_CACHE] =
          cplab_maps_cache_digest(slots, entries, n, bytes);
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

int exec_rank_layer(exec_rank *c, int64_t sampled_rows, exec_layer *out, cplab_diag *d) {
  const cplab_rank_plan *rp = c->rp;
  memset(out, 0, sizeof *out);
  out->layer = c->layer;
  out->k = c->k = (int)c->in->model->index_topk;
  out->heads = c->heads = (int)(c->in->model->num_heads / c->in->par->tp);
  int nws = rp->prefill.active ? rp->prefill.num_chunks : 0;
  c->ws = calloc((size_t)nws + 1, sizeof *c->ws);
  c->ws_rows = calloc((size_t)nws + 1, sizeof *c->ws_rows);
  int rc = c->ws && c->ws_rows ? 0 : cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  if (!rc) rc = cplab_maps_sample(c->in, rp, sampled_rows, &out->tokens, &out->rows, d);
  if (!rc) rc = layer_alloc(out, d);
  if (!rc)
    rc = cplab_maps_partials_alloc(rp, out->tokens, out->rows, out->heads, &out->blocks, &out->partial_out,
                                   &out->partial_lse, d);
  for (int ch = 0; ch < nws && !rc; ch++) rc = c->ops->workspace(c, ch, d);
  if (!rc) rc = c->ops->keys_prepare(c, d);
  for (int64_t i = 0; i < out->rows && !rc; i++) {
    const cplab_row *row = cplab_split_row_of(&rp->split, out->tokens[i]);
    rc = row_run(c, row, row->start_pos + (out->tokens[i] - row->token_offset), i, out, d);
    if (rc) cplab_diag_prefix(d, "rank %d, layer %d, local token %lld: ", c->r, c->layer, (long long)out->tokens[i]);
  }
  if (!rc) rc = rank_digests(c, out, d);
  cplab_diag ignore = {0};
  for (int ch = 0; c->ws && ch < nws; ch++) cplab_dev_free(c->ws[ch], &ignore);
  free(c->ws), free(c->ws_rows);
  c->ws = NULL, c->ws_rows = NULL;
  c->ops->keys_free(c);
  if (rc) exec_layer_free(out);
  return rc;
}

/* The kernels express the gathered arrangement's maps. A layout that departs
 * from it is refused by name: running its rule on the host instead would
 * leave the diff comparing that rule with itself, proving nothing. */
int exec_layout_expressed(const cplab_layout *l, cplab_layout_map m, cplab_diag *d) {
  const char *own = cplab_layout_departure(l, m);
  if (own)
    CPLAB_FAIL(d, CPLAB_EUNSUPPORTED,
               "layout %s: its own %s is no map the %s conversion kernel expresses; the executor refuses it "
               "(cplab-exec and cplab-bench; cplab-sim runs it)",
               l->name, own, m == CPLAB_MAP_CONVERT_DECODE ? "decode" : "prefill");
  return 0;
}

int exec_layout_supported(const cplab_layout *l, cplab_diag *d) {
  int rc = exec_layout_expressed(l, CPLAB_MAP_CONVERT_PREFILL, d);
  return rc ? rc : exec_layout_expressed(l, CPLAB_MAP_CONVERT_DECODE, d);
}

int exec_device_describe(char *device, size_t dlen, char *cuda, size_t clen, cplab_diag *d) {
  cplab_gpu_info info;
  int rc = cplab_gpu_query(&info, d);
  if (rc) return rc;
  snprintf(device, dlen, "%s (sm_%d%d, %d SMs)", info.name, info.cc_major, info.cc_minor, info.sm_count);
  snprintf(cuda, clen, "CUDA runtime %d, driver %d", info.runtime_version, info.driver_version);
  return 0;
}
