/* The numeric pass of one rank (numeric.h): per sampled row, the indexer
 * top-k, the layout's conversion and sparse MLA attention, all read through
 * the memory model of numeric_mem.c. */
#include "numeric.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cplab/fp8.h"
#include "cplab/kv.h"
#include "indexer_ref.h"
#include "numeric_mem.h"
#include "cplab/maps.h"
#include "cplab/ranks.h"
#include "reference.h"

void sim_numeric_layer_free(sim_numeric_layer *l) {
  free(l->tokens), free(l->topk), free(l->converted), free(l->scores), free(l->kth), free(l->out), free(l->lse);
  free(l->valid), free(l->partial_out), free(l->partial_lse);
  free(l->digests);
  memset(l, 0, sizeof *l);
}

/* What one row needs while it is computed. */
typedef struct row_ctx {
  sim_mem *mem;
  const cplab_row *row;
  int64_t pos;         /* absolute position of the row's token */
  uint32_t id;         /* request id (keys the inputs) */
  int k, heads;
  double *scratch;     /* k rows of 576 */
  double q[64][CPLAB_IDX_DIM];
  double w[64];        /* folded head weights of the indexer query */
  int index_heads;
  int blocks;          /* head blocks of the rank's partials */
  const int *member_tp; /* [dcp] TP rank of each DCP member */
  float *pout, *plse;  /* this row's partials ([blocks][heads][512], [blocks][heads]); NULL: not stored */
} row_ctx;

static double logit(const row_ctx *c, const float *key /* sim_mem_key_row */) {
  double l = 0;
  for (int h = 0; h < c->index_heads; h++) {
    double dot = 0;
    for (int j = 0; j < CPLAB_IDX_DIM; j++) dot += c->q[h][j] * key[j];
    if (dot > 0 || dot != dot) l += c->w[h] * dot;
  }
  return l * key[CPLAB_IDX_DIM];
}

/* Where a row's indexer reads its keys: prefill rows with an indexer plan
 * from their chunk's gathered key buffer (keys != NULL) through the layout's
 * de-interleave of their region; the others from each key's owner. Resolved
 * once per row. */
typedef struct key_source {
  int region;
  const float *keys;
  int64_t rows;
} key_source;

static int row_key_source(row_ctx *c, key_source *ks, cplab_diag *d) {
  const cplab_indexer_plan *ip = &c->mem->rp->indexer;
  *ks = (key_source){-1, NULL, 0};
  if (!c->row->is_prefill || !ip->active) return 0;
  ks->region = cplab_indexer_region_of(ip, c->row->req);
  if (ks->region < 0)
    CPLAB_FAIL(d, CPLAB_EINTERNAL, "request %d has a prefill row but no indexer region", c->row->req);
  return sim_mem_keys(c->mem, ip->region_chunk[ks->region], &ks->keys, &ks->rows, d);
}

/* Key t of the row's request as the row's indexer reads it. */
static void read_key(const row_ctx *c, const key_source *ks, int64_t t, float key[CPLAB_IDX_DIM + 1]) {
  const cplab_rank_plan *rp = c->mem->rp;
  if (ks->keys) {
    int64_t r = cplab_layout_deinterleave(rp->layout, &rp->env, &rp->indexer, ks->region, t);
    if (r < 0 || r >= ks->rows) /* outside the buffer: read as padding (the executor's gather does the same) */
      memset(key, 0, sizeof(float) * (CPLAB_IDX_DIM + 1));
    else
      memcpy(key, ks->keys + (size_t)r * (CPLAB_IDX_DIM + 1), sizeof(float) * (CPLAB_IDX_DIM + 1));
    return;
  }
  const cplab_parallel *par = c->mem->in->par;
  int o = cplab_kv_owner(t, par->interleave, par->dcp);
  const int32_t *brow = rp->sched.block_table + (int64_t)c->row->req * rp->sched.max_blocks;
  uint8_t e[CPLAB_IDX_ENTRY_BYTES];
  sim_mem_idx_entry(c->mem, o, cplab_kv_slot_global(par, o, brow, rp->sched.max_blocks, t), e);
  sim_mem_key_row(e, key);
}

/* Indexer top-k of the row over positions [0, pos]; *valid = how many of
 * the k entries name a key (the row sees pos + 1). */
static int row_topk(row_ctx *c, int32_t *topk, float *scores, float *kth, int32_t *valid, cplab_diag *d) {
  const cplab_step_input *in = c->mem->in;
  sim_indexer_query q;
  int rc = sim_indexer_query_make(in->seed, (uint32_t)c->mem->layer, c->id, (uint32_t)c->pos, c->index_heads, &q, d);
  if (rc) return rc;
  for (int h = 0; h < c->index_heads; h++) {
    c->w[h] = q.weight[h];
    for (int j = 0; j < CPLAB_IDX_DIM; j++) c->q[h][j] = cplab_e4m3_to_f32(q.q[h][j]);
  }
  int64_t n = c->pos + 1;
  key_source ks;
  if ((rc = row_key_source(c, &ks, d)) != 0) return rc;
  sim_scored *all = malloc(sizeof *all * (size_t)n);
  if (!all) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for %lld logits", (long long)n);
  for (int64_t t = 0; t < n; t++) {
    float key[CPLAB_IDX_DIM + 1];
    read_key(c, &ks, t, key);
    all[t] = (sim_scored){logit(c, key), t};
  }
  if (!rc) {
    qsort(all, (size_t)n, sizeof *all, sim_indexer_by_score);
    for (int j = 0; j < c->k; j++) {
      topk[j] = j < n ? (int32_t)all[j].i : -1;
      scores[j] = j < n ? (float)all[j].s : -INFINITY;
    }
    *kth = n >= c->k ? (float)all[c->k - 1].s : -INFINITY;
    *valid = (int32_t)(n < c->k ? n : c->k);
  }
  free(all);
  return rc;
}

static void bf16_row_to_double(const uint16_t *bf, double *out) {
  for (int j = 0; j < CPLAB_MLA_ROW_DIM; j++) out[j] = cplab_bf16_to_f32(bf[j]);
}

static void entry_to_double(const uint8_t *e, double *out) {
  uint16_t bf[CPLAB_MLA_ROW_DIM];
  cplab_kvformat_mla_dequantize(e, bf);
  bf16_row_to_double(bf, out);
}

/* Convert the row's top-k as this rank's kernel does: rows on the local
 * shard (decodes; every row under DCP without PCP) through the block table,
 * keeping only this rank's tokens. */
static int row_convert(const row_ctx *c, const int32_t *topk, int32_t *conv, int dcp_rank, cplab_diag *d) {
  const cplab_rank_plan *rp = c->mem->rp;
  if (cplab_row_on_local_shard(&rp->env.par, c->row)) {
    const int32_t *brow = rp->sched.block_table + (int64_t)c->row->req * rp->sched.max_blocks;
    for (int j = 0; j < c->k; j++)
      conv[j] = cplab_layout_convert_decode(rp->layout, &rp->env, brow, rp->sched.max_blocks, topk[j], dcp_rank);
    return 0;
  }
  if (!rp->prefill.active) { /* no gathered workspace: the request's own rows */
    memcpy(conv, topk, sizeof *conv * (size_t)c->k);
    return 0;
  }
  int k = cplab_prefill_region_of(&rp->prefill, c->row->req);
  if (k < 0) CPLAB_FAIL(d, CPLAB_EINTERNAL, "request %d has a prefill row but no workspace region", c->row->req);
  for (int j = 0; j < c->k; j++)
    conv[j] = cplab_layout_convert_prefill(rp->layout, &rp->env, &rp->prefill, k, topk[j], dcp_rank);
  return 0;
}

/* Latent rows the converted indices of a prefill row point at. */
static int prefill_rows(row_ctx *c, const int32_t *conv, size_t *n, cplab_diag *d) {
  const cplab_rank_plan *rp = c->mem->rp;
  const cplab_parallel *par = c->mem->in->par;
  *n = 0;
  if (!rp->prefill.active) {
    const int32_t *brow = rp->sched.block_table + (int64_t)c->row->req * rp->sched.max_blocks;
    for (int j = 0; j < c->k; j++) {
      if (conv[j] < 0) continue;
      int o = cplab_kv_owner(conv[j], par->interleave, par->dcp);
      uint8_t e[CPLAB_MLA_ENTRY_BYTES];
      sim_mem_kv_entry(c->mem, o, cplab_kv_slot_global(par, o, brow, rp->sched.max_blocks, conv[j]), e);
      entry_to_double(e, c->scratch + (*n)++ * CPLAB_MLA_ROW_DIM);
    }
    return 0;
  }
  int k = cplab_prefill_region_of(&rp->prefill, c->row->req);
  const uint16_t *ws;
  int64_t rows;
  int rc = sim_mem_workspace(c->mem, rp->prefill.region_chunk[k], &ws, &rows, d);
  if (rc) return rc;
  for (int j = 0; j < c->k; j++) /* past the workspace counts as -1, as the kernel does */
    if (conv[j] >= 0 && conv[j] < rows) bf16_row_to_double(ws + (size_t)conv[j] * CPLAB_MLA_ROW_DIM, c->scratch + (*n)++ * CPLAB_MLA_ROW_DIM);
  return 0;
}

/* Latent rows of DCP peer o's cache at the slots of conv. */
static size_t shard_rows(row_ctx *c, int o, const int32_t *conv) {
  size_t n = 0;
  for (int j = 0; j < c->k; j++) {
    if (conv[j] < 0) continue;
    uint8_t e[CPLAB_MLA_ENTRY_BYTES];
    sim_mem_kv_entry(c->mem, o, conv[j], e);
    entry_to_double(e, c->scratch + n++ * CPLAB_MLA_ROW_DIM);
  }
  return n;
}

/* The row's queries of TP rank tp's heads: q [heads][576]. */
static void row_query(const row_ctx *c, int tp, double *q) {
  const cplab_step_input *in = c->mem->in;
  for (int h = 0; h < c->heads; h++) {
    uint16_t bf[CPLAB_MLA_ROW_DIM];
    cplab_kvformat_mla_query(in->seed, (uint32_t)c->mem->layer, c->id, (uint32_t)c->pos,
                             (uint32_t)(tp * c->heads + h), bf);
    bf16_row_to_double(bf, q + (size_t)h * CPLAB_MLA_ROW_DIM);
  }
}

static void round_to_float(const double *x, size_t n, float *f) {
  for (size_t i = 0; i < n; i++) f[i] = (float)x[i];
}

/* The rank's own partials of a combined row (SCHEMA.md attn_partial_out),
 * rounded to float: its shard's attention with its own heads (part[me],
 * computed for the combine), and where the DCP members hold other heads
 * (blocks = D) with each member's, as vLLM's query all-gather makes a rank
 * attend. q: scratch of heads·576. */
static int row_partials(row_ctx *c, const int32_t *conv, double scale, const double *part, const double *plse,
                        double *q, cplab_diag *d) {
  int H = c->heads, me = c->mem->rp->ids.dcp_rank;
  size_t ob = (size_t)H * SIM_MLA_V, n = c->blocks > 1 ? shard_rows(c, me, conv) : 0;
  double *tmp = c->blocks > 1 ? malloc(sizeof(double) * (ob + (size_t)H)) : NULL;
  if (c->blocks > 1 && !tmp) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for the decode partials");
  for (int g = 0; g < c->blocks; g++) {
    const double *po = part + (size_t)me * ob, *pl = plse + (size_t)me * H;
    if (c->blocks > 1 && g != me) {
      row_query(c, c->member_tp[g], q);
      sim_attention(q, H, c->scratch, n, scale, tmp, tmp + ob);
      po = tmp, pl = tmp + ob;
    }
    round_to_float(po, ob, c->pout + (size_t)g * ob);
    round_to_float(pl, (size_t)H, c->plse + (size_t)g * H);
  }
  free(tmp);
  return 0;
}

/* Attention of the row: a prefill row over the workspace (or, without DCP,
 * the whole context); a row on the local shard per DCP shard, each peer
 * converting the same top-k for itself, then the LSE combine. */
static int row_attention(row_ctx *c, const int32_t *topk, const int32_t *conv, double *out, double *lse,
                         cplab_diag *d) {
  const cplab_step_input *in = c->mem->in;
  const cplab_rank_plan *rp = c->mem->rp;
  int H = c->heads, D = in->par->dcp, rc = 0, shard = cplab_row_on_local_shard(in->par, c->row);
  double scale = cplab_model_softmax_scale(in->model);
  double *q = malloc(sizeof(double) * (size_t)H * CPLAB_MLA_ROW_DIM);
  double *part = malloc(sizeof(double) * (size_t)(D * H) * SIM_MLA_V);
  double *plse = malloc(sizeof(double) * (size_t)(D * H)), *fin = malloc(sizeof(double) * (size_t)H * SIM_MLA_V);
  int32_t *peer = malloc(sizeof(int32_t) * (size_t)c->k);
  if (!q || !part || !plse || !fin || !peer) {
    rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory for attention");
    goto done;
  }
  row_query(c, rp->ids.tp, q);
  if (!shard) {
    size_t n;
    if ((rc = prefill_rows(c, conv, &n, d)) != 0) goto done;
    sim_attention(q, H, c->scratch, n, scale, fin, plse);
  } else {
    for (int o = 0; o < D && !rc; o++) {
      if (o == rp->ids.dcp_rank) memcpy(peer, conv, sizeof *peer * (size_t)c->k);
      else rc = row_convert(c, topk, peer, o, d);
      size_t n = shard_rows(c, o, peer);
      sim_attention(q, H, c->scratch, n, scale, part + (size_t)o * H * SIM_MLA_V, plse + (size_t)o * H);
    }
    if (D > 1) sim_lse_combine(D, H, plse, part, fin);
    else memcpy(fin, part, sizeof(double) * (size_t)H * SIM_MLA_V);
    if (!rc && D > 1 && c->pout) rc = row_partials(c, conv, scale, part, plse, q, d);
  }
  memcpy(out, fin, sizeof(double) * (size_t)H * SIM_MLA_V);
  for (int h = 0; h < H; h++) lse[h] = !shard || D == 1 ? plse[h] : sim_lse_merge(D, plse + h, (size_t)H);
done:
  free(q), free(part), free(plse), free(fin), free(peer);
  return rc;
}

int sim_numeric_layer_alloc(sim_numeric_layer *l, cplab_diag *d) {
  size_t n = (size_t)(l->rows ? l->rows : 1), k = (size_t)l->k, h = (size_t)l->heads;
  l->topk = malloc(sizeof(int32_t) * n * k);
  l->converted = malloc(sizeof(int32_t) * n * k);
  l->scores = malloc(sizeof(float) * n * k);
  l->kth = malloc(sizeof(float) * n);
  l->valid = malloc(sizeof(int32_t) * n);
  l->out = malloc(sizeof(double) * n * h * SIM_MLA_V);
  l->lse = malloc(sizeof(double) * n * h);
  if (!l->topk || !l->converted || !l->scores || !l->kth || !l->valid || !l->out || !l->lse)
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for %lld sampled rows", (long long)l->rows);
  return 0;
}

static int digests(sim_mem *mem, sim_numeric_layer *l, cplab_diag *d) {
  const cplab_prefill_plan *pl = &mem->rp->prefill;
  l->num_digests = CPLAB_TRACE_DIGEST_WORKSPACE + (pl->active ? pl->num_chunks : 0);
  l->digests = calloc((size_t)l->num_digests, sizeof *l->digests);
  if (!l->digests) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  int rc = sim_mem_cache_digest(mem, 0, &l->digests[CPLAB_TRACE_DIGEST_KV_CACHE], d);
  if (!rc) rc = sim_mem_cache_digest(mem, 1, &l->digests[CPLAB_TRACE_DIGEST_INDEX_K], d);
  for (int c = 0; !rc && c < l->num_digests - CPLAB_TRACE_DIGEST_WORKSPACE; c++) {
    const uint16_t *ws;
    int64_t rows;
    rc = sim_mem_workspace(mem, c, &ws, &rows, d);
    if (!rc) l->digests[CPLAB_TRACE_DIGEST_WORKSPACE + c] = XXH3_64bits(ws, sizeof(uint16_t) * CPLAB_MLA_ROW_DIM * (size_t)rows);
  }
  return rc;
}

int sim_numeric_compute(const cplab_step_input *in, const cplab_rank_plan *rp, int layer, int64_t sampled_rows,
                        sim_numeric_layer *out, cplab_diag *d) {
  memset(out, 0, sizeof *out);
  const cplab_model *m = in->model;
  out->layer = layer;
  out->k = (int)m->index_topk;
  out->heads = (int)(m->num_heads / in->par->tp);
  if (m->index_n_heads > 64) CPLAB_FAIL(d, CPLAB_EINVAL, "the numeric pass supports up to 64 indexer heads");
  sim_mem mem;
  int *member_tp = malloc(sizeof(int) * (size_t)in->par->dcp);
  int rc = member_tp ? 0 : cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  if (!rc) rc = cplab_maps_sample(in, rp, sampled_rows, &out->tokens, &out->rows, d);
  if (!rc) rc = sim_numeric_layer_alloc(out, d);
  if (!rc)
    rc = cplab_maps_partials_alloc(rp, out->tokens, out->rows, out->heads, &out->blocks, &out->partial_out,
                                   &out->partial_lse, d);
  if (!rc) rc = cplab_dcp_member_tp(in->par, rp->ids.rank, member_tp, d);
  if (!rc) rc = sim_mem_init(&mem, in, rp, layer, d);
  if (rc) {
    free(member_tp);
    sim_numeric_layer_free(out);
    return rc;
  }
  row_ctx c = {.mem = &mem, .k = out->k, .heads = out->heads, .index_heads = (int)m->index_n_heads,
               .blocks = out->blocks, .member_tp = member_tp};
  size_t gh = (size_t)out->blocks * (size_t)out->heads;
  c.scratch = malloc(sizeof(double) * (size_t)out->k * CPLAB_MLA_ROW_DIM);
  if (!c.scratch) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  for (int64_t i = 0; i < out->rows && !rc; i++) {
    c.row = cplab_split_row_of(&rp->split, out->tokens[i]);
    c.pos = c.row->start_pos + (out->tokens[i] - c.row->token_offset);
    c.id = (uint32_t)in->step->requests[c.row->req].id;
    int combined = out->partial_out && cplab_row_dcp_combined(in->par, c.row);
    c.pout = combined ? out->partial_out + (size_t)i * gh * SIM_MLA_V : NULL;
    c.plse = combined ? out->partial_lse + (size_t)i * gh : NULL;
    size_t k = (size_t)out->k, h = (size_t)out->heads;
    int32_t *topk = out->topk + i * (int64_t)k, *conv = out->converted + i * (int64_t)k;
    rc = row_topk(&c, topk, out->scores + i * (int64_t)k, &out->kth[i], &out->valid[i], d);
    if (!rc) rc = row_convert(&c, topk, conv, rp->ids.dcp_rank, d);
    if (!rc) rc = row_attention(&c, topk, conv, out->out + (size_t)i * h * SIM_MLA_V, out->lse + (size_t)i * h, d);
    if (rc) cplab_diag_prefix(d, "layer %d, local token %lld: ", layer, (long long)out->tokens[i]);
  }
  if (!rc) rc = digests(&mem, out, d);
  free(c.scratch);
  free(member_tp);
  sim_mem_fini(&mem);
  if (rc) sim_numeric_layer_free(out);
  return rc;
}
