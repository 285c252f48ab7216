/* exec/exec.h: the per-row reference pass, one of the executor library's
 * two engines (the other, the batched engine, is engine.h's), and its
 * backends, which both engines run on (cplab-exec's main.c drives them).
 *   arena.c      the device arena of both engines (arena.h)
 *   consensus.c  plan digests exchanged before each step (no GPU needed)
 *   rank.c       one rank's numeric pass, common to the backends (rank.h)
 *   single.c     the single-device backend: every logical rank of the layout
 *                in one process on one GPU, each with its own caches and
 *                buffers; collectives are device copies in rank order
 *   nccl.c       the NCCL backend: one MPI rank per GPU, NCCL collectives
 *
 * What runs on the device per step and layer (sim/numeric.h describes the
 * same computation in the simulator, which the traces are diffed against;
 * the two share only the plans and the index maps of cplab/maps.h, never a
 * per-element body):
 * poison both caches of every rank, write every rank's owned context tokens
 * through its slots (generation kernel), gather each prefill chunk's
 * workspace rank-major from the peers' caches (gather + upconvert), then for
 * each sampled row: gather its request's keys in logical order, indexer
 * logits, top-k, conversion (the device kernel for layouts with vLLM's rule,
 * the layout's own op otherwise), and sparse MLA attention (prefill over the
 * workspace; decode per DCP peer over its cache, then the LSE combine). */
#ifndef CPLAB_EXEC_H
#define CPLAB_EXEC_H

#include "cplab/error.h"
#include "cplab/layout.h"
#include "cplab/maps.h"
#include "cplab/plan.h"
#include "cplab/ranks.h"
#include "cplab/trace.h"

typedef struct exec_single exec_single;

/* What one rank computed for one layer (host copies; cplab_trace_rows
 * views it for the trace). */
typedef struct exec_layer {
  int layer;
  int64_t rows;
  int k, heads;
  int64_t *tokens;
  int32_t *topk, *converted;
  float *scores, *kth, *out, *lse;
  int num_digests;
  uint64_t *digests;
  int32_t *valid; /* [rows] entries of the kernel's top-k before its first -1 */
  /* The rank's decode partials before the combine (SCHEMA.md
   * attn_partial_out): [rows][blocks·heads][512] and [rows][blocks·heads],
   * NaN on rows the combine does not see; NULL when no row is combined. */
  int blocks;
  float *partial_out, *partial_lse;
} exec_layer;
void exec_layer_free(exec_layer *l);

/* Device state for a run of the scenario's steps (caches sized for the
 * largest step's block table). */
int exec_single_alloc(const cplab_scenario *s, const cplab_layout *layout, const cplab_rank_table *t, exec_single **out,
                      cplab_diag *d);
void exec_single_free(exec_single *x);

/* Run one layer of one step on every rank: plans[world] derived from in;
 * out[world] receives what each rank computed (free with exec_layer_free). */
int exec_single_layer(exec_single *x, const cplab_step_input *in, cplab_rank_plan *const *plans, int layer,
                      int64_t sampled_rows, exec_layer *out, cplab_diag *d);

/* What the batched engine (engine*.c) borrows from this backend, so that
 * it runs on the same caches and index maps: the caches of every rank
 * ([world][num_slots] entries, rank r's at
 * r·num_slots) and their generated contents for one layer. */
void exec_single_caches(const exec_single *x, uint8_t **kv, uint8_t **idx, int64_t *num_slots);
int exec_single_fill(exec_single *x, const cplab_step_input *in, cplab_rank_plan *const *plans, int layer,
                     cplab_diag *d);

/* The NCCL backend (nccl.c; built with NCCL): this process is global rank
 * `rank` on its own GPU (local rank mod devices); mpi = 0 only for world 1. */
typedef struct exec_nccl exec_nccl;
int exec_nccl_alloc(const cplab_scenario *s, const cplab_layout *layout, int rank, int mpi, exec_nccl **out,
                    cplab_diag *d);
void exec_nccl_free(exec_nccl *x);
int exec_nccl_device(const exec_nccl *x);
/* The GPU global rank `rank` runs on (the MPI launcher's local rank, or
 * rank, modulo the devices), made current. CPLAB_ENODEV without a GPU. */
int exec_nccl_pick_device(int rank, int *device, cplab_diag *d);
/* For the batched engine: this rank's caches (num_slots entries each),
 * their generated contents for one layer, and the communicator of one of
 * its groups (an ncclComm_t). */
void exec_nccl_caches(const exec_nccl *x, uint8_t **kv, uint8_t **idx, int64_t *num_slots);
int exec_nccl_fill(exec_nccl *x, const cplab_step_input *in, const cplab_rank_plan *plan, int layer, cplab_diag *d);
void *exec_nccl_comm(const exec_nccl *x, cplab_group_kind group);
/* v[0 .. n) replaced by its elementwise maximum over this rank's DCP group
 * (its MPI communicator; nothing to do without MPI, world 1). */
int exec_nccl_dcp_max(const exec_nccl *x, int64_t *v, int n, cplab_diag *d);
/* One layer of one step on this rank (plan derived by this rank). */
int exec_nccl_layer(exec_nccl *x, const cplab_step_input *in, const cplab_rank_plan *plan, int layer,
                    int64_t sampled_rows, exec_layer *out, cplab_diag *d);

/* After the layers of a step: the PCP output all-gather (device copies /
 * ncclAllGather over PCP) and the restore to global order, checked bit for
 * bit against each token's own row (output.c); CPLAB_EMISMATCH if a token
 * lands elsewhere. Plans need token maps. */
int exec_single_output(exec_single *x, const cplab_step_input *in, cplab_rank_plan *const *plans, cplab_diag *d);
int exec_nccl_output(exec_nccl *x, const cplab_step_input *in, const cplab_rank_plan *plan, cplab_diag *d);

/* 0 when the executor's conversion kernel expresses layout l's map m (a
 * conversion: CPLAB_MAP_CONVERT_PREFILL or _DECODE), else CPLAB_EUNSUPPORTED
 * naming the layout and its own op (cplab_layout_departure); _supported:
 * both conversions, before anything runs. Needs no GPU. */
int exec_layout_expressed(const cplab_layout *l, cplab_layout_map m, cplab_diag *d);
int exec_layout_supported(const cplab_layout *l, cplab_diag *d);

/* The device's name and the CUDA versions, for the trace's provenance. */
int exec_device_describe(char *device, size_t dlen, char *cuda, size_t clen, cplab_diag *d);

#endif
