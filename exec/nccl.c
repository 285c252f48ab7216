/* The NCCL backend (exec.h): one MPI rank per GPU, real collectives. Each
 * rank holds only its own caches; a gathered buffer is its own shard (gather
 * kernel) followed by ncclAllGather over the DCP group (ranks ordered by DCP
 * rank, so the result is rank-major); a decode row's top-k is the exact merge
 * of every peer's local top-k over its own keys (all-gathered over NCCL,
 * merged on the device by the batched engine's merge kernel), and its
 * partials meet through ncclAllGather before the combine kernel. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/cli.h"
#include "cplab/kv.h"
#include "cplab/kvformat.h"
#include "cplab/maps.h"
#include "cplab_kernels.h"
#include "rank.h"

/* NCCL's and CUDA's headers declare some functions without prototypes. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cuda_runtime.h>
#include <nccl.h>
#pragma GCC diagnostic pop

struct exec_nccl {
  int rank, world, device, mpi;
  cplab_rank_ids ids;
  ncclComm_t comm, tp, pcp, dcp;
  MPI_Comm mpi_dcp;
  int64_t num_slots;
  uint8_t *kv, *idx;
  int shared_heads;  /* every DCP member has this rank's TP rank (and so its heads) */
  int *member_tp;    /* [dcp] TP rank of each DCP member */
};

#define NCCL_TRY(call, d)                                                                                  \
  do {                                                                                                     \
    ncclResult_t r_ = (call);                                                                              \
    if (r_ != ncclSuccess) CPLAB_FAIL(d, CPLAB_ENCCL, "%s failed: %s", #call, ncclGetErrorString(r_));     \
  } while (0)

int exec_nccl_pick_device(int rank, int *device, cplab_diag *d) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0)
    CPLAB_FAIL(d, CPLAB_ENODEV, "no CUDA device: %s", e != cudaSuccess ? cudaGetErrorString(e) : "none visible");
  int rc = cplab_cli_pick_gpu(rank, count, device, d);
  if (rc) return rc;
  if ((e = cudaSetDevice(*device)) != cudaSuccess)
    CPLAB_FAIL(d, CPLAB_ECUDA, "cudaSetDevice(%d) failed: %s", *device, cudaGetErrorString(e));
  return 0;
}

/* The world communicator, then TP, PCP and DCP by ncclCommSplit, each keyed
 * by the position in its group (the DCP all-gathers come out rank-major). */
static int make_comms(exec_nccl *x, cplab_diag *d) {
  ncclUniqueId id;
  if (x->rank == 0) NCCL_TRY(ncclGetUniqueId(&id), d);
  if (x->mpi && MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
    CPLAB_FAIL(d, CPLAB_EMPI, "MPI_Bcast of the NCCL id failed");
  NCCL_TRY(ncclCommInitRank(&x->comm, x->world, id, x->rank), d);
  NCCL_TRY(ncclCommSplit(x->comm, x->ids.tp_group, x->ids.tp, &x->tp, NULL), d);
  NCCL_TRY(ncclCommSplit(x->comm, x->ids.pcp_group, x->ids.pcp, &x->pcp, NULL), d);
  NCCL_TRY(ncclCommSplit(x->comm, x->ids.dcp_group, x->ids.dcp_rank, &x->dcp, NULL), d);
  x->mpi_dcp = MPI_COMM_NULL;
  if (x->mpi && MPI_Comm_split(MPI_COMM_WORLD, x->ids.dcp_group, x->ids.dcp_rank, &x->mpi_dcp) != MPI_SUCCESS)
    CPLAB_FAIL(d, CPLAB_EMPI, "MPI_Comm_split of the DCP group failed");
  return 0;
}

static int member_heads(exec_nccl *x, const cplab_parallel *par, cplab_diag *d) {
  x->member_tp = calloc((size_t)par->dcp, sizeof *x->member_tp);
  if (!x->member_tp) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  x->shared_heads = cplab_dcp_partial_blocks(par) == 1;
  return cplab_dcp_member_tp(par, x->rank, x->member_tp, d);
}

int exec_nccl_alloc(const cplab_scenario *s, const cplab_layout *layout, int rank, int mpi, exec_nccl **out,
                    cplab_diag *d) {
  *out = NULL;
  exec_nccl *x = calloc(1, sizeof *x);
  if (!x) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  x->rank = rank, x->world = cplab_parallel_world(&s->par), x->mpi = mpi;
  x->mpi_dcp = MPI_COMM_NULL;
  int rc = cplab_rank_ids_get(&s->par, rank, &x->ids, d);
  if (!rc) rc = member_heads(x, &s->par, d);
  if (!rc) rc = exec_nccl_pick_device(rank, &x->device, d);
  if (!rc) rc = exec_num_slots(s, layout, &x->num_slots, d);
  if (!rc) rc = make_comms(x, d);
  if (!rc) rc = cplab_dev_alloc((void **)&x->kv, (size_t)x->num_slots * CPLAB_MLA_ENTRY_BYTES, d);
  if (!rc) rc = cplab_dev_alloc((void **)&x->idx, (size_t)x->num_slots * CPLAB_IDX_ENTRY_BYTES, d);
  if (rc) {
    exec_nccl_free(x);
    return rc;
  }
  *out = x;
  return 0;
}

void exec_nccl_free(exec_nccl *x) {
  if (!x) return;
  cplab_diag ignore = {0};
  cplab_dev_free(x->kv, &ignore);
  cplab_dev_free(x->idx, &ignore);
  if (x->dcp) ncclCommDestroy(x->dcp);
  if (x->pcp) ncclCommDestroy(x->pcp);
  if (x->tp) ncclCommDestroy(x->tp);
  if (x->comm) ncclCommDestroy(x->comm);
  if (x->mpi_dcp != MPI_COMM_NULL && x->mpi) MPI_Comm_free(&x->mpi_dcp);
  free(x->member_tp);
  free(x);
}

int exec_nccl_device(const exec_nccl *x) { return x->device; }

void exec_nccl_caches(const exec_nccl *x, uint8_t **kv, uint8_t **idx, int64_t *num_slots) {
  *kv = x->kv, *idx = x->idx, *num_slots = x->num_slots;
}

int exec_nccl_fill(exec_nccl *x, const cplab_step_input *in, const cplab_rank_plan *plan, int layer, cplab_diag *d) {
  return exec_fill_cache(in, plan, layer, x->kv, x->idx, x->num_slots, d);
}

int exec_nccl_dcp_max(const exec_nccl *x, int64_t *v, int n, cplab_diag *d) {
  if (x->mpi && MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INT64_T, MPI_MAX, x->mpi_dcp) != MPI_SUCCESS)
    CPLAB_FAIL(d, CPLAB_EMPI, "MPI_Allreduce over the DCP group failed");
  return 0;
}

void *exec_nccl_comm(const exec_nccl *x, cplab_group_kind group) {
  return group == CPLAB_GROUP_TP ? x->tp : group == CPLAB_GROUP_PCP ? x->pcp : x->dcp;
}

static int64_t nccl_slot(const exec_rank *c, int o, int64_t slot) {
  const exec_nccl *x = c->be;
  return o == x->ids.dcp_rank && slot >= 0 && slot < x->num_slots ? slot : -1;
}

/* My shard of a gathered buffer (rows [me·S, (me+1)·S) of the sources), all-gathered over DCP. */
static int shard_allgather(exec_rank *c, const cplab_maps_sources *src, int mla, void **gathered, cplab_diag *d) {
  const exec_nccl *x = c->be;
  int W = c->in->par->dcp, me = x->ids.dcp_rank;
  int64_t S = src->rows / W;
  size_t row = mla ? sizeof(uint16_t) * CPLAB_MLA_ROW_DIM : CPLAB_IDX_ENTRY_BYTES;
  exec_arena a = {0};
  void *dslot, *shard;
  int rc = exec_arena_put(&a, &dslot, src->slot + me * S, sizeof(int64_t) * (size_t)S, d);
  if (!rc) rc = exec_arena_alloc(&a, &shard, row * (size_t)S, d);
  if (!rc) rc = cplab_dev_alloc(gathered, row * (size_t)(W * S), d);
  if (!rc && S && mla)
    rc = cplab_gather_mla(&(cplab_gather_mla_params){.kv_cache = x->kv, .num_slots = x->num_slots, .slot = dslot,
                                                     .rows = S, .out = shard}, NULL, d);
  if (!rc && S && !mla)
    rc = cplab_gather_idx(&(cplab_gather_idx_params){.idx_cache = x->idx, .num_slots = x->num_slots, .slot = dslot,
                                                     .rows = S, .out = shard}, NULL, d);
  if (!rc && S) {
    ncclResult_t r = mla ? ncclAllGather(shard, *gathered, (size_t)S * CPLAB_MLA_ROW_DIM, ncclBfloat16, x->dcp, 0)
                         : ncclAllGather(shard, *gathered, (size_t)S * CPLAB_IDX_ENTRY_BYTES, ncclUint8, x->dcp, 0);
    if (r != ncclSuccess) rc = cplab_diag_set(d, CPLAB_ENCCL, "ncclAllGather of a %s shard failed: %s",
                                             mla ? "workspace" : "key", ncclGetErrorString(r));
  }
  if (!rc) rc = cplab_dev_sync(NULL, d);
  exec_arena_free(&a);
  return rc;
}

static int nccl_workspace(exec_rank *c, int ch, cplab_diag *d) {
  cplab_maps_sources src;
  int rc = cplab_maps_workspace_sources(c->rp, ch, &src, d);
  if (!rc) rc = shard_allgather(c, &src, 1, (void **)&c->ws[ch], d);
  c->ws_rows[ch] = src.rows;
  cplab_maps_sources_free(&src);
  return rc;
}

typedef struct nccl_keys {
  int n;
  uint8_t **buf; /* [indexer chunk] gathered keys on the device */
  int64_t *rows;
} nccl_keys;

static void nccl_keys_free(exec_rank *c) {
  nccl_keys *k = c->keys;
  cplab_diag ignore = {0};
  for (int ch = 0; k && ch < k->n; ch++) cplab_dev_free(k->buf[ch], &ignore);
  if (k) free(k->buf), free(k->rows);
  free(k);
  c->keys = NULL;
}

static int nccl_keys_prepare(exec_rank *c, cplab_diag *d) {
  const cplab_indexer_plan *ip = &c->rp->indexer;
  int n = ip->active ? ip->num_chunks : 0, rc = 0;
  nccl_keys *k = calloc(1, sizeof *k);
  if (k) k->buf = calloc((size_t)n + 1, sizeof *k->buf), k->rows = calloc((size_t)n + 1, sizeof *k->rows);
  c->keys = k;
  if (!k || !k->buf || !k->rows) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  for (; k->n < n && !rc; k->n++) {
    cplab_maps_sources src;
    rc = cplab_maps_key_sources(c->rp, k->n, &src, d);
    if (!rc) rc = shard_allgather(c, &src, 0, (void **)&k->buf[k->n], d);
    k->rows[k->n] = src.rows;
    cplab_maps_sources_free(&src);
  }
  return rc;
}

/* Decode rows: local logits and top-k over my own keys (local indices, in
 * position order), every DCP peer's list all-gathered rank-major, and their
 * exact merge on the device (cplab_topk_merge: the batched engine's
 * TOPK_MERGE, so both engines merge the same way; it gives what one top-k
 * over every key in position order gives, ties to the lower position, -1
 * and -inf after the valid entries). */
static int local_topk_merge(exec_rank *c, const cplab_row *row, int64_t pos, int32_t *dtopk, float *dscore,
                            exec_arena *a, cplab_diag *d) {
  const exec_nccl *x = c->be;
  const cplab_parallel *par = c->in->par;
  const cplab_rank_plan *rp = c->rp;
  int K = c->k, D = par->dcp, me = x->ids.dcp_rank, rc = 0;
  int64_t n = pos + 1, nl = cplab_kv_local_len(n, me, par->interleave, D);
  const int32_t *brow = rp->sched.block_table + (int64_t)row->req * rp->sched.max_blocks;
  int64_t *slots = calloc((size_t)(nl ? nl : 1), sizeof *slots);
  int32_t *cand = NULL;
  float *cand_score = NULL;
  void *dslots, *dkeys;
  if (!slots) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  int64_t m = 0; /* my keys of the row in position order: local index m is the key at its position */
  for (int64_t t = 0; !rc && t < n; t++)
    if (cplab_kv_owner(t, par->interleave, D) == me) slots[m++] = cplab_kv_slot_global(par, me, brow, rp->sched.max_blocks, t);
  if (!rc) rc = exec_arena_put(a, &dslots, slots, sizeof *slots * (size_t)m, d);
  if (!rc) rc = exec_arena_alloc(a, &dkeys, (size_t)(m ? m : 1) * CPLAB_IDX_ENTRY_BYTES, d);
  if (!rc) rc = exec_arena_alloc(a, &cand, sizeof *cand * (size_t)K * (size_t)D, d);
  if (!rc) rc = exec_arena_alloc(a, &cand_score, sizeof *cand_score * (size_t)K * (size_t)D, d);
  if (!rc && m)
    rc = cplab_gather_idx(&(cplab_gather_idx_params){.idx_cache = x->idx, .num_slots = x->num_slots, .slot = dslots,
                                                     .rows = m, .out = dkeys}, NULL, d);
  /* My list at block me of the [D][K] candidates, the peers' gathered around it in place. */
  if (!rc) rc = exec_indexer_topk(c, row, pos, dkeys, m, cand + (size_t)me * K, cand_score + (size_t)me * K, a, d);
  if (!rc && D > 1) {
    ncclResult_t r = ncclGroupStart();
    if (r == ncclSuccess) r = ncclAllGather(cand + (size_t)me * K, cand, (size_t)K, ncclInt32, x->dcp, 0);
    if (r == ncclSuccess) r = ncclAllGather(cand_score + (size_t)me * K, cand_score, (size_t)K, ncclFloat32, x->dcp, 0);
    ncclResult_t e = ncclGroupEnd();
    if (r == ncclSuccess) r = e;
    if (r != ncclSuccess)
      rc = cplab_diag_set(d, CPLAB_ENCCL, "ncclAllGather of the local top-k failed: %s", ncclGetErrorString(r));
  }
  if (!rc) rc = cplab_topk_merge(&(cplab_topk_merge_params){.cand_idx = cand, .cand_score = cand_score, .D = D, .m = 1,
                                                            .k = K, .interleave = par->interleave, .idx = dtopk,
                                                            .score = dscore}, NULL, d);
  if (!rc) rc = cplab_dev_sync(NULL, d);
  free(slots);
  return rc;
}

static int nccl_topk(exec_rank *c, const cplab_row *row, int64_t pos, int32_t *dtopk, float *dscore, exec_arena *a,
                     cplab_diag *d) {
  const cplab_rank_plan *rp = c->rp;
  const cplab_indexer_plan *ip = &rp->indexer;
  if (!row->is_prefill || !ip->active) return local_topk_merge(c, row, pos, dtopk, dscore, a, d);
  /* Prefill rows: the gathered keys in logical order through the layout's de-interleave. */
  int k = cplab_indexer_region_of(ip, row->req);
  if (k < 0) CPLAB_FAIL(d, CPLAB_EINTERNAL, "request %d has no indexer region", row->req);
  const nccl_keys *keys = c->keys;
  int ch = ip->region_chunk[k];
  int64_t n = pos + 1, *rows = malloc(sizeof *rows * (size_t)n);
  void *drows, *dkeys;
  int rc = rows ? 0 : cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  for (int64_t t = 0; !rc && t < n; t++) {
    int64_t g = cplab_layout_deinterleave(rp->layout, &rp->env, ip, k, t);
    rows[t] = g < 0 || g >= keys->rows[ch] ? -1 : g;
  }
  if (!rc) rc = exec_arena_put(a, &drows, rows, sizeof *rows * (size_t)n, d);
  if (!rc) rc = exec_arena_alloc(a, &dkeys, (size_t)n * CPLAB_IDX_ENTRY_BYTES, d);
  if (!rc) rc = cplab_gather_idx(&(cplab_gather_idx_params){.idx_cache = keys->buf[ch], .num_slots = keys->rows[ch],
                                                            .slot = drows, .rows = n, .out = dkeys}, NULL, d);
  if (!rc) rc = exec_indexer_topk(c, row, pos, dkeys, n, dtopk, dscore, a, d);
  free(rows);
  return rc;
}

/* Decode partials. Every DCP peer attends over its own cache with the query
 * of each member's heads (members on different TP ranks hold different heads:
 * vLLM gathers the query heads over TP there, §1.4), the blocks are
 * all-gathered, and this rank keeps, from every peer, the block of its own
 * heads: dout[p] = peer p's partial for my heads. Where all members share
 * their heads (one TP rank per group) each peer computes one block. The
 * blocks this rank sends are its contribution (own, own_lse). */
static int nccl_partials(exec_rank *c, const cplab_row *row, int64_t pos, const int32_t *topk, const int32_t *dtopk,
                         const uint16_t *dq, float *dout, float *dl, float *own, float *own_lse, exec_arena *a,
                         cplab_diag *d) {
  const exec_nccl *x = c->be;
  int K = c->k, H = c->heads, D = c->in->par->dcp, me = x->ids.dcp_rank, rc = 0;
  int blocks = x->shared_heads ? 1 : D; /* query blocks each peer computes */
  size_t ob = (size_t)H * CPLAB_MLA_NOPE_DIM;
  int32_t id = (int32_t)c->in->step->requests[row->req].id, pos32 = (int32_t)pos;
  void *dconv, *pout, *plse, *gout, *glse, *qo, *did, *dpos, *scratch = NULL;
  size_t scratch_bytes = 0;
  rc = exec_arena_alloc(a, &dconv, sizeof(int32_t) * (size_t)K, d);
  if (!rc) rc = cplab_sparse_mla_decode_scratch(1, H, K, 0, &scratch_bytes, d);
  if (!rc && scratch_bytes) rc = exec_arena_alloc(a, &scratch, scratch_bytes, d);
  if (!rc) rc = exec_arena_alloc(a, &pout, sizeof(float) * ob * (size_t)blocks, d);
  if (!rc) rc = exec_arena_alloc(a, &plse, sizeof(float) * (size_t)H * (size_t)blocks, d);
  if (!rc) rc = exec_arena_alloc(a, &gout, sizeof(float) * ob * (size_t)blocks * (size_t)D, d);
  if (!rc) rc = exec_arena_alloc(a, &glse, sizeof(float) * (size_t)H * (size_t)blocks * (size_t)D, d);
  if (!rc) rc = exec_arena_alloc(a, &qo, sizeof(uint16_t) * (size_t)H * CPLAB_MLA_ROW_DIM, d);
  if (!rc) rc = exec_arena_put(a, &did, &id, sizeof id, d);
  if (!rc) rc = exec_arena_put(a, &dpos, &pos32, sizeof pos32, d);
  if (!rc) rc = exec_row_convert(c, row, topk, dtopk, me, dconv, a, d);
  float scale = (float)cplab_model_softmax_scale(c->in->model);
  for (int o = 0; o < blocks && !rc; o++) {
    const uint16_t *q = dq;
    if (!x->shared_heads && o != me) { /* member o's heads */
      rc = cplab_gen_mla_query(&(cplab_gen_mla_query_params){.seed = c->in->seed, .layer = (uint32_t)c->layer,
                                                             .req = did, .pos = dpos, .m = 1,
                                                             .head0 = x->member_tp[o] * H, .heads_local = H, .q = qo},
                               NULL, d);
      q = qo;
    }
    if (!rc)
      rc = cplab_sparse_mla_decode_split(
          &(cplab_sparse_mla_decode_params){.q = q, .m = 1, .heads = H, .kv_cache = x->kv, .num_slots = x->num_slots,
                                            .slot = dconv, .k = K, .scale = scale, .out = (float *)pout + (size_t)o * ob,
                                            .lse = (float *)plse + (size_t)o * H, .scratch = scratch,
                                            .scratch_bytes = scratch_bytes},
          NULL, d);
  }
  if (!rc) {
    ncclResult_t r = ncclGroupStart();
    if (r == ncclSuccess) r = ncclAllGather(pout, gout, ob * (size_t)blocks, ncclFloat32, x->dcp, 0);
    if (r == ncclSuccess) r = ncclAllGather(plse, glse, (size_t)H * (size_t)blocks, ncclFloat32, x->dcp, 0);
    ncclResult_t e = ncclGroupEnd();
    if (r == ncclSuccess) r = e;
    if (r != ncclSuccess) rc = cplab_diag_set(d, CPLAB_ENCCL, "ncclAllGather of decode partials failed: %s",
                                             ncclGetErrorString(r));
  }
  if (!rc && own) rc = cplab_dev_copy(own, pout, sizeof(float) * ob * (size_t)blocks, d);
  if (!rc && own) rc = cplab_dev_copy(own_lse, plse, sizeof(float) * (size_t)H * (size_t)blocks, d);
  /* From peer p's blocks, the one for my heads. */
  int mine = x->shared_heads ? 0 : me;
  for (int p = 0; p < D && !rc; p++) {
    cudaError_t e = cudaMemcpy(dout + (size_t)p * ob, (float *)gout + ((size_t)p * blocks + (size_t)mine) * ob,
                               sizeof(float) * ob, cudaMemcpyDeviceToDevice);
    if (e == cudaSuccess)
      e = cudaMemcpy(dl + (size_t)p * H, (float *)glse + ((size_t)p * blocks + (size_t)mine) * H, sizeof(float) * (size_t)H,
                     cudaMemcpyDeviceToDevice);
    if (e != cudaSuccess) rc = cplab_diag_set(d, CPLAB_ECUDA, "cudaMemcpy of a partial failed: %s", cudaGetErrorString(e));
  }
  if (!rc) rc = cplab_dev_sync(NULL, d);
  return rc;
}

static const exec_ops nccl_ops = {nccl_workspace, nccl_keys_prepare, nccl_topk, nccl_partials, nccl_slot,
                                  nccl_keys_free};

int exec_nccl_layer(exec_nccl *x, const cplab_step_input *in, const cplab_rank_plan *plan, int layer,
                    int64_t sampled_rows, exec_layer *out, cplab_diag *d) {
  int rc = exec_nccl_fill(x, in, plan, layer, d);
  exec_rank c = {.ops = &nccl_ops, .be = x, .in = in, .rp = plan, .layer = layer, .r = x->rank, .kv_read = x->kv,
                 .idx_read = x->idx, .read_slots = x->num_slots, .kv_own = x->kv, .idx_own = x->idx,
                 .num_slots = x->num_slots};
  if (!rc) rc = exec_rank_layer(&c, sampled_rows, out, d);
  return rc;
}

int exec_nccl_output(exec_nccl *x, const cplab_step_input *in, const cplab_rank_plan *plan, cplab_diag *d) {
  int P = in->par->pcp;
  int64_t padded = plan->sched.padded_num_tokens;
  size_t block = sizeof(uint16_t) * CPLAB_MLA_ROW_DIM * (size_t)padded;
  exec_arena a = {0};
  void *rows, *gathered;
  int rc = exec_arena_alloc(&a, &rows, block, d);
  if (!rc) rc = exec_arena_alloc(&a, &gathered, block * (size_t)P, d);
  if (!rc) rc = exec_output_rows(in, plan, rows, d);
  if (!rc && padded) {
    ncclResult_t r = ncclAllGather(rows, gathered, (size_t)padded * CPLAB_MLA_ROW_DIM, ncclBfloat16, x->pcp, 0);
    if (r != ncclSuccess) rc = cplab_diag_set(d, CPLAB_ENCCL, "ncclAllGather of the step's output failed: %s", ncclGetErrorString(r));
  }
  if (!rc) rc = cplab_dev_sync(NULL, d);
  if (!rc) rc = exec_output_check(in, plan, gathered, (int64_t)P * padded, d);
  exec_arena_free(&a);
  return rc;
}
