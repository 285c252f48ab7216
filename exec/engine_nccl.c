/* The batched engine on several GPUs (engine_internal.h): one MPI rank
 * per GPU, and what crosses ranks as NCCL calls on the step's stream, so
 * that they are timed with the pieces and captured in the graphs with them.
 * The per-row pass's NCCL backend (nccl.c) owns the communicators; the
 * collectives here are the engine's: the DCP all-gathers of the gathered
 * buffers and decode partials, in place, and the plan's other collectives
 * at the plan's sizes on scratch buffers. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/kvformat.h"
#include "engine_internal.h"

/* NCCL's and CUDA's headers declare some functions without prototypes. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cuda_runtime.h>
#include <nccl.h>
#pragma GCC diagnostic pop

/* MPI runs where the process was started by mpirun; a single rank without it
 * (world 1) has nothing to agree with, and every reduction is the identity. */
static int mpi_on(void) {
  int on = 0;
  return MPI_Initialized(&on) == MPI_SUCCESS && on;
}

static int nccl_fail(ncclResult_t r, const char *what, cplab_diag *d) {
  return r == ncclSuccess ? 0 : cplab_diag_set(d, CPLAB_ENCCL, "%s failed: %s", what, ncclGetErrorString(r));
}

static ncclDataType_t nccl_type(cplab_dtype t) {
  return t == CPLAB_DT_BF16 ? ncclBfloat16 : t == CPLAB_DT_FP32 ? ncclFloat32 : ncclUint8;
}

/* In place: block `me` of buf (block_bytes each) to every member's block me. */
static ncclResult_t allgather_in_place(void *buf, size_t block_bytes, int me, ncclComm_t comm, cudaStream_t stream) {
  if (!buf || block_bytes == 0) return ncclSuccess;
  return ncclAllGather((char *)buf + (size_t)me * block_bytes, buf, block_bytes, ncclUint8, comm, stream);
}

int engine_nccl_shards(engine_step *s, const engine_rank *k, cplab_diag *d) {
  ncclComm_t dcp = exec_nccl_comm(s->nccl, CPLAB_GROUP_DCP);
  cudaStream_t st = s->stream;
  size_t ws_row = sizeof(uint16_t) * CPLAB_MLA_ROW_DIM;
  ncclResult_t r = ncclGroupStart();
  for (int ch = 0; ch < k->nws && r == ncclSuccess; ch++)
    r = allgather_in_place(k->ws[ch].buf, (size_t)k->ws[ch].block * ws_row, k->o, dcp, st);
  for (int c = 0; c < k->nkb && r == ncclSuccess; c++)
    r = allgather_in_place(k->kb[c].buf, (size_t)k->kb[c].block * CPLAB_IDX_ENTRY_BYTES, k->o, dcp, st);
  ncclResult_t e = ncclGroupEnd();
  return nccl_fail(r != ncclSuccess ? r : e, "the DCP all-gather of the gathered blocks", d);
}

int engine_nccl_candidates(engine_step *s, const engine_rank *k, cplab_diag *d) {
  ncclComm_t dcp = exec_nccl_comm(s->nccl, CPLAB_GROUP_DCP);
  size_t n = (size_t)k->Tdec * (size_t)k->K;
  ncclResult_t r = ncclGroupStart();
  if (r == ncclSuccess) r = allgather_in_place(k->cand, sizeof(int32_t) * n, k->o, dcp, s->stream);
  if (r == ncclSuccess) r = allgather_in_place(k->cand_score, sizeof(float) * n, k->o, dcp, s->stream);
  ncclResult_t e = ncclGroupEnd();
  return nccl_fail(r != ncclSuccess ? r : e, "the DCP all-gather of the decode rows' top-k candidates", d);
}

int engine_nccl_partials(engine_step *s, const engine_rank *k, cplab_diag *d) {
  ncclComm_t dcp = exec_nccl_comm(s->nccl, CPLAB_GROUP_DCP);
  size_t gq = (size_t)(k->Tdec * k->Hg);
  ncclResult_t r = ncclGroupStart();
  if (r == ncclSuccess) r = allgather_in_place(k->gout, sizeof(float) * gq * CPLAB_MLA_NOPE_DIM, k->o, dcp, s->stream);
  if (r == ncclSuccess) r = allgather_in_place(k->glse, sizeof(float) * gq, k->o, dcp, s->stream);
  ncclResult_t e = ncclGroupEnd();
  return nccl_fail(r != ncclSuccess ? r : e, "the DCP all-gather of the decode partials", d);
}

/* Elements the scratch holds for collective c on a group of g ranks: its
 * input and output side by side never exceed g·count. */
static size_t call_bytes(const cplab_collective *c, int g) {
  return (size_t)g * (size_t)c->count * (size_t)cplab_dtype_bytes(c->dtype);
}

int engine_nccl_calls(engine_step *s, const engine_rank *k, int piece, cplab_diag *d) {
  int rc = 0;
  for (int i = 0; i < k->num_copies && !rc; i++) {
    const engine_copy *cp = &k->copies[i];
    const cplab_collective *c = &cp->coll;
    int g = cplab_group_size(k->in->par, c->group);
    if (cp->piece != piece || g < 2 || c->count <= 0) continue;
    ncclComm_t comm = exec_nccl_comm(s->nccl, c->group);
    size_t n = (size_t)c->count;
    ncclResult_t r;
    if (c->kind == CPLAB_COLL_ALL_GATHER)
      r = ncclAllGather(s->copy_src, s->copy_dst, n, nccl_type(c->dtype), comm, s->stream);
    else if (c->kind == CPLAB_COLL_REDUCE_SCATTER)
      r = ncclReduceScatter(s->copy_src, s->copy_dst, (n + (size_t)g - 1) / (size_t)g, nccl_type(c->dtype), ncclSum,
                            comm, s->stream);
    else
      r = ncclAllReduce(s->copy_src, s->copy_dst, n, nccl_type(c->dtype), ncclSum, comm, s->stream);
    rc = nccl_fail(r, cplab_coll_what_name(c->what), d);
  }
  return rc;
}

int engine_nccl_agree_counts(engine_step *s, engine_rank *k, cplab_diag *d) {
  int n[2] = {k->num_copies, -k->num_copies};
  if (mpi_on() && MPI_Allreduce(MPI_IN_PLACE, n, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
    CPLAB_FAIL(d, CPLAB_EMPI, "MPI_Allreduce of the collectives' number failed");
  if (n[0] != -n[1])
    CPLAB_FAIL(d, CPLAB_EDISAGREE, "the ranks' plans list %d to %d collectives; NCCL needs every rank to call the same",
               -n[1], n[0]);
  /* Each collective's what and group must match, its count is the largest rank's. */
  int64_t *v = calloc((size_t)k->num_copies * 3 + 1, sizeof *v);
  if (!v) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  for (int i = 0; i < k->num_copies; i++) {
    const cplab_collective *c = &k->copies[i].coll;
    int64_t code = (int64_t)c->what * 16 + (int64_t)c->group; /* the enums may be unsigned: negate as int64 */
    v[3 * i] = c->count, v[3 * i + 1] = code, v[3 * i + 2] = -code;
  }
  int rc = 0;
  if (mpi_on() && MPI_Allreduce(MPI_IN_PLACE, v, 3 * k->num_copies, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
    rc = cplab_diag_set(d, CPLAB_EMPI, "MPI_Allreduce of the collectives' counts failed");
  for (int i = 0; i < k->num_copies && !rc; i++) {
    cplab_collective *c = &k->copies[i].coll;
    if (v[3 * i + 1] != -v[3 * i + 2])
      rc = cplab_diag_set(d, CPLAB_EDISAGREE, "the ranks' plans differ at collective %d (%s here)", i,
                          cplab_coll_what_name(c->what));
    c->count = v[3 * i];
    size_t b = call_bytes(c, cplab_group_size(k->in->par, c->group));
    if (b > s->copy_bytes) s->copy_bytes = b;
  }
  free(v);
  return rc;
}

int engine_nccl_agree_shapes(engine_step *s, const engine_rank *k, cplab_diag *d) {
  enum { N = 6 };
  int64_t ws = 0, kb = 0, v[2 * N];
  for (int ch = 0; ch < k->nws; ch++) ws = ws * 31 + k->ws[ch].block;
  for (int c = 0; c < k->nkb; c++) kb = kb * 31 + (k->kb[c].buf ? k->kb[c].block : -1);
  int64_t mine[N] = {k->Tdec, k->Hg, k->nws, k->nkb, ws * 131 + kb, k->K};
  static const char *const field[N] = {"decode tokens", "group heads", "workspace chunks", "indexer-key chunks",
                                       "block sizes (a hash)", "top-k"};
  for (int i = 0; i < N; i++) v[i] = mine[i], v[N + i] = -mine[i];
  int rc = exec_nccl_dcp_max(s->nccl, v, 2 * N, d); /* the maxima, and minus the minima */
  for (int i = 0; i < N && !rc; i++)
    if (v[i] != -v[N + i])
      rc = cplab_diag_set(d, CPLAB_EDISAGREE, "rank %d: its DCP peers' gathered buffers differ in shape (%s: %lld "
                          "here); the in-place all-gathers need equal blocks", k->r, field[i], (long long)mine[i]);
  return rc;
}

int engine_nccl_max(double *v, size_t n, cplab_diag *d) {
  if (mpi_on() && MPI_Allreduce(MPI_IN_PLACE, v, (int)n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
    CPLAB_FAIL(d, CPLAB_EMPI, "MPI_Allreduce of the times failed");
  return 0;
}

int engine_nccl_sum(int64_t *v, size_t n, cplab_diag *d) {
  if (mpi_on() && MPI_Allreduce(MPI_IN_PLACE, v, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
    CPLAB_FAIL(d, CPLAB_EMPI, "MPI_Allreduce of the counts failed");
  return 0;
}

int engine_nccl_status(int rc, cplab_diag *d) {
  int all = rc;
  if (!mpi_on()) return rc;
  if (MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS && !rc)
    return cplab_diag_set(d, CPLAB_EMPI, "MPI_Allreduce of the ranks' status failed");
  if (rc) return rc;
  return all ? cplab_diag_set(d, all, "another rank failed (see its message)") : 0;
}

int engine_nccl_barrier(engine_step *s, cplab_diag *d) {
  int rc = cplab_dev_sync(s->stream, d);
  if (!rc && mpi_on() && MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) rc = cplab_diag_set(d, CPLAB_EMPI, "MPI_Barrier failed");
  return rc;
}
