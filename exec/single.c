/* The single-device backend (exec.h): every logical rank in this process, on
 * one GPU. Rank r's caches are slice r of one allocation of world slices, so
 * a DCP peer's shard is an index range of its slice: a gathered buffer is one
 * gather kernel over the peers' slices in rank order (what the all-gather of
 * the shards would hold), and a decode row's partials are computed by each
 * peer over its own slice. */
#include <stdlib.h>
#include <string.h>

#include "cplab/kv.h"
#include "cplab/kvformat.h"
#include "cplab/maps.h"
#include "cplab/ranks.h"
#include "cplab_kernels.h"
#include "rank.h"

struct exec_single {
  const cplab_rank_table *t;
  int world;
  int64_t num_slots; /* per rank */
  uint8_t *kv, *idx; /* [world][num_slots][656], [world][num_slots][132] */
};

int exec_single_alloc(const cplab_scenario *s, const cplab_layout *layout, const cplab_rank_table *t, exec_single **out,
                      cplab_diag *d) {
  *out = NULL;
  exec_single *x = calloc(1, sizeof *x);
  if (!x) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  x->t = t, x->world = t->world;
  int rc = exec_num_slots(s, layout, &x->num_slots, d);
  size_t n = (size_t)x->world * (size_t)x->num_slots;
  if (!rc) rc = cplab_dev_alloc((void **)&x->kv, n * CPLAB_MLA_ENTRY_BYTES, d);
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

/* Peer o of rank r's DCP group: its slot in the all-ranks allocation (-1: none). */
static int64_t peer_slot(const exec_single *x, int r, int o, int64_t slot) {
  if (o < 0 || slot < 0 || slot >= x->num_slots) return -1;
  return (int64_t)cplab_rank_table_members(x->t, CPLAB_GROUP_DCP, r)[o] * x->num_slots + slot;
}

void exec_single_caches(const exec_single *x, uint8_t **kv, uint8_t **idx, int64_t *num_slots) {
  *kv = x->kv, *idx = x->idx, *num_slots = x->num_slots;
}

int exec_single_fill(exec_single *x, const cplab_step_input *in, cplab_rank_plan *const *plans, int layer,
                     cplab_diag *d) {
  int rc = 0;
  for (int r = 0; r < x->world && !rc; r++) /* every rank's cache before any rank reads a peer's */
    rc = exec_fill_cache(in, plans[r], layer, x->kv + (size_t)r * x->num_slots * CPLAB_MLA_ENTRY_BYTES,
                         x->idx + (size_t)r * x->num_slots * CPLAB_IDX_ENTRY_BYTES, x->num_slots, d);
  return rc;
}

/* Peer o of rank c->r's DCP group: its slot in the all-ranks allocation. */
static int64_t single_slot(const exec_rank *c, int o, int64_t slot) { return peer_slot(c->be, c->r, o, slot); }

static int single_workspace(exec_rank *c, int ch, cplab_diag *d) {
  cplab_maps_sources src;
  exec_arena a = {0};
  void *dslot;
  int rc = cplab_maps_workspace_sources(c->rp, ch, &src, d);
  if (rc) return rc;
  for (int64_t i = 0; i < src.rows; i++) src.slot[i] = single_slot(c, src.peer[i], src.slot[i]);
  rc = exec_arena_put(&a, &dslot, src.slot, sizeof(int64_t) * (size_t)src.rows, d);
  if (!rc) rc = cplab_dev_alloc((void **)&c->ws[ch], sizeof(uint16_t) * CPLAB_MLA_ROW_DIM * (size_t)src.rows, d);
  c->ws_rows[ch] = src.rows;
  if (!rc && src.rows)
    rc = cplab_gather_mla(&(cplab_gather_mla_params){.kv_cache = c->kv_read, .num_slots = c->read_slots, .slot = dslot,
                                                     .rows = src.rows, .out = c->ws[ch]}, NULL, d);
  if (!rc) rc = cplab_dev_sync(NULL, d);
  exec_arena_free(&a);
  cplab_maps_sources_free(&src);
  return rc;
}

/* The sources of every indexer chunk's gathered keys (host lists). */
typedef struct single_keys {
  int n;
  cplab_maps_sources *src;
} single_keys;

static void single_keys_free(exec_rank *c) {
  single_keys *k = c->keys;
  for (int ch = 0; k && ch < k->n; ch++) cplab_maps_sources_free(&k->src[ch]);
  if (k) free(k->src);
  free(k);
  c->keys = NULL;
}

static int single_keys_prepare(exec_rank *c, cplab_diag *d) {
  const cplab_indexer_plan *ip = &c->rp->indexer;
  single_keys *k = calloc(1, sizeof *k);
  int n = ip->active ? ip->num_chunks : 0, rc = 0;
  if (k) k->src = calloc((size_t)n + 1, sizeof *k->src);
  c->keys = k;
  if (!k || !k->src) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  for (; k->n < n && !rc; k->n++) rc = cplab_maps_key_sources(c->rp, k->n, &k->src[k->n], d);
  return rc;
}

/* The slots of a row's keys 0 .. n-1 in logical order (-1: a zero key), prefill
 * rows through the layout's de-interleave of the gathered keys (chunk_keys:
 * every indexer chunk's sources), other rows from each key's owner. */
static int key_slots(const exec_single *x, int r, const cplab_rank_plan *rp, const cplab_maps_sources *chunk_keys,
                     const cplab_row *row, int64_t n, int64_t *slots, cplab_diag *d) {
  const cplab_indexer_plan *ip = &rp->indexer;
  const cplab_parallel *par = &x->t->par;
  if (row->is_prefill && ip->active) {
    int k = cplab_indexer_region_of(ip, row->req);
    if (k < 0) CPLAB_FAIL(d, CPLAB_EINTERNAL, "request %d has no indexer region", row->req);
    const cplab_maps_sources *src = &chunk_keys[ip->region_chunk[k]];
    for (int64_t t = 0; t < n; t++) {
      int64_t g = cplab_layout_deinterleave(rp->layout, &rp->env, ip, k, t);
      slots[t] = g < 0 || g >= src->rows ? -1 : peer_slot(x, r, src->peer[g], src->slot[g]);
    }
    return 0;
  }
  const int32_t *brow = rp->sched.block_table + (int64_t)row->req * rp->sched.max_blocks;
  for (int64_t t = 0; t < n; t++) {
    int o = cplab_kv_owner(t, par->interleave, par->dcp);
    slots[t] = peer_slot(x, r, o, cplab_kv_slot_global(par, o, brow, rp->sched.max_blocks, t));
  }
  return 0;
}

static int single_topk(exec_rank *c, const cplab_row *row, int64_t pos, int32_t *dtopk, float *dscore, exec_arena *a,
                       cplab_diag *d) {
  int64_t n = pos + 1;
  int64_t *slots = malloc(sizeof *slots * (size_t)n);
  void *dslots, *dkeys;
  int rc = slots ? key_slots(c->be, c->r, c->rp, ((single_keys *)c->keys)->src, row, n, slots, d)
                 : cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  if (!rc) rc = exec_arena_put(a, &dslots, slots, sizeof *slots * (size_t)n, d);
  if (!rc) rc = exec_arena_alloc(a, &dkeys, (size_t)n * CPLAB_IDX_ENTRY_BYTES, d);
  if (!rc) rc = cplab_gather_idx(&(cplab_gather_idx_params){.idx_cache = c->idx_read, .num_slots = c->read_slots,
                                                            .slot = dslots, .rows = n, .out = dkeys}, NULL, d);
  if (!rc) rc = exec_indexer_topk(c, row, pos, dkeys, n, dtopk, dscore, a, d);
  free(slots);
  return rc;
}

/* Scratch of one row's decode over a DCP slice (cplab_sparse_mla_decode_split). */
typedef struct slice_decode {
  int64_t off;       /* the slice's first slot in the all-ranks caches */
  const void *dconv; /* the row's top-k converted for the slice's rank */
  void *scratch;
  size_t scratch_bytes;
} slice_decode;

/* Attention of query q (this rank's heads count) over one slice. */
static int decode_slice(const exec_rank *c, const slice_decode *s, const uint16_t *q, float *out, float *lse,
                        cplab_diag *d) {
  const exec_single *x = c->be;
  cplab_sparse_mla_decode_params p = {.q = q, .m = 1, .heads = c->heads,
                                      .kv_cache = x->kv + (size_t)s->off * CPLAB_MLA_ENTRY_BYTES,
                                      .num_slots = x->num_slots, .slot = s->dconv, .k = c->k,
                                      .scale = (float)cplab_model_softmax_scale(c->in->model), .out = out, .lse = lse,
                                      .scratch = s->scratch, .scratch_bytes = s->scratch_bytes};
  return cplab_sparse_mla_decode_split(&p, NULL, d);
}

/* What this rank contributes to the combine (rank.h): its own slice with
 * its own heads (dout[me], computed already), and where the DCP members
 * hold other heads, with each member's query: what the NCCL backend's rank
 * computes and all-gathers. s: this rank's own slice. */
static int single_own(exec_rank *c, const cplab_row *row, int64_t pos, const slice_decode *s, const float *dout,
                       const float *dl, float *own, float *own_lse, exec_arena *a, cplab_diag *d) {
  const exec_single *x = c->be;
  int H = c->heads, me = c->rp->ids.dcp_rank, G = cplab_dcp_partial_blocks(c->in->par), rc = 0;
  const int *members = cplab_rank_table_members(x->t, CPLAB_GROUP_DCP, c->r);
  int32_t id = (int32_t)c->in->step->requests[row->req].id, pos32 = (int32_t)pos;
  size_t ob = (size_t)H * CPLAB_MLA_NOPE_DIM;
  void *did, *dpos, *qo;
  rc = exec_arena_put(a, &did, &id, sizeof id, d);
  if (!rc) rc = exec_arena_put(a, &dpos, &pos32, sizeof pos32, d);
  if (!rc) rc = exec_arena_alloc(a, &qo, sizeof(uint16_t) * (size_t)H * CPLAB_MLA_ROW_DIM, d);
  for (int g = 0; g < G && !rc; g++) {
    if (G == 1 || g == me) {
      rc = cplab_dev_copy(own + (size_t)g * ob, dout + (size_t)me * ob, sizeof(float) * ob, d);
      if (!rc) rc = cplab_dev_copy(own_lse + (size_t)g * H, dl + (size_t)me * H, sizeof(float) * (size_t)H, d);
      continue;
    }
    int tp = x->t->ids[members[g]].tp; /* member g's heads */
    rc = cplab_gen_mla_query(&(cplab_gen_mla_query_params){.seed = c->in->seed, .layer = (uint32_t)c->layer, .req = did,
                                                           .pos = dpos, .m = 1, .head0 = tp * H, .heads_local = H,
                                                           .q = qo}, NULL, d);
    if (!rc) rc = decode_slice(c, s, qo, own + (size_t)g * ob, own_lse + (size_t)g * H, d);
  }
  return rc;
}

/* Each DCP peer converts the row's top-k for itself and attends over its own slice. */
static int single_partials(exec_rank *c, const cplab_row *row, int64_t pos, const int32_t *topk, const int32_t *dtopk,
                           const uint16_t *dq, float *dout, float *dl, float *own, float *own_lse, exec_arena *a,
                           cplab_diag *d) {
  int K = c->k, H = c->heads, rc = 0; /* every peer attends with this rank's query dq */
  void *dconv;
  slice_decode s = {0};
  rc = exec_arena_alloc(a, &dconv, sizeof(int32_t) * (size_t)K, d);
  s.dconv = dconv;
  if (!rc) rc = cplab_sparse_mla_decode_scratch(1, H, K, 0, &s.scratch_bytes, d);
  if (!rc && s.scratch_bytes) rc = exec_arena_alloc(a, &s.scratch, s.scratch_bytes, d);
  for (int o = 0; o < c->in->par->dcp && !rc; o++) {
    s.off = single_slot(c, o, 0);
    rc = exec_row_convert(c, row, topk, dtopk, o, dconv, a, d);
    if (!rc) rc = decode_slice(c, &s, dq, dout + (size_t)o * H * CPLAB_MLA_NOPE_DIM, dl + (size_t)o * H, d);
    if (!rc && own && o == c->rp->ids.dcp_rank) rc = single_own(c, row, pos, &s, dout, dl, own, own_lse, a, d);
  }
  return rc;
}

static const exec_ops single_ops = {single_workspace, single_keys_prepare, single_topk, single_partials, single_slot,
                                    single_keys_free};

int exec_single_layer(exec_single *x, const cplab_step_input *in, cplab_rank_plan *const *plans, int layer,
                      int64_t sampled_rows, exec_layer *out, cplab_diag *d) {
  int rc = exec_single_fill(x, in, plans, layer, d);
  for (int r = 0; r < x->world && !rc; r++) {
    exec_rank c = {.ops = &single_ops, .be = x, .in = in, .rp = plans[r], .layer = layer, .r = r,
                   .kv_read = x->kv, .idx_read = x->idx, .read_slots = (int64_t)x->world * x->num_slots,
                   .kv_own = x->kv + (size_t)r * x->num_slots * CPLAB_MLA_ENTRY_BYTES,
                   .idx_own = x->idx + (size_t)r * x->num_slots * CPLAB_IDX_ENTRY_BYTES, .num_slots = x->num_slots};
    rc = exec_rank_layer(&c, sampled_rows, &out[r], d);
  }
  return rc;
}

int exec_single_output(exec_single *x, const cplab_step_input *in, cplab_rank_plan *const *plans, cplab_diag *d) {
  int P = in->par->pcp, rc = 0;
  int64_t padded = plans[0]->sched.padded_num_tokens; /* shared by every rank */
  size_t row = sizeof(uint16_t) * CPLAB_MLA_ROW_DIM, block = row * (size_t)padded;
  exec_arena a = {0};
  void *rows, *gathered;
  rc = exec_arena_alloc(&a, &rows, block * (size_t)x->world, d);
  if (!rc) rc = exec_arena_alloc(&a, &gathered, block * (size_t)P, d);
  for (int r = 0; r < x->world && !rc; r++) rc = exec_output_rows(in, plans[r], (uint16_t *)((char *)rows + block * (size_t)r), d);
  for (int r = 0; r < x->world && !rc; r++) {
    /* The PCP all-gather as copies of the members' rows in PCP-rank order. */
    for (int p = 0; p < P && !rc; p++) {
      int member = cplab_rank_table_members(x->t, CPLAB_GROUP_PCP, r)[p];
      rc = cplab_dev_copy((char *)gathered + block * (size_t)p, (char *)rows + block * (size_t)member, block, d);
    }
    if (!rc) rc = exec_output_check(in, plans[r], gathered, (int64_t)P * padded, d);
  }
  exec_arena_free(&a);
  return rc;
}
