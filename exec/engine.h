/* exec/engine.h: the executor's batched engine (engine*.c), the second
 * engine of exec/ beside the per-row reference pass (rank.h, exec.h).
 *
 * In: a scenario (its layout, parallel configuration and steps), a backend
 * (every logical rank on this process's device, or one MPI rank per GPU
 * over NCCL) and how often to run each step. Out: per step and repetition,
 * the device time of every launch unit of every rank, by layer, segment
 * and phase (exec_engine_times). What a step's time is made of those is
 * the caller's arithmetic (cplab-bench's steptime.h): the engine measures,
 * it does not report.
 *
 * What runs: every logical rank of the layout, each with its own caches
 * (the per-row pass's caches and index maps: exec_single / exec_nccl);
 * its plan's attention path batched over all its tokens (the same kernels
 * as the per-row pass), the projections and o_proj as cuBLASLt GEMMs at
 * the model's shapes, and its MoE shard on the path the plan chooses; the
 * DCP all-gathers of gathered blocks, top-k candidates and decode partials
 * carry real data (device copies between ranks on one device, NCCL on
 * several); the plan's other collectives are device copies of the bytes a
 * rank would receive on one device and NCCL calls of the plan's sizes on
 * several. A layer on a rank is EXEC_ENGINE_SEGMENTS segments between
 * collectives (engine_internal.h lists the pieces of each); each step is
 * prepared before timing (plans, index lists, MoE routing), so the timed
 * work is launches only, captured in CUDA graphs as the plan's runtime
 * mode says (NONE: eager; PIECEWISE: graphs around everything but
 * attention; FULL: the whole layer in graphs). The layers of a step are
 * identical (the same weights and caches).
 *
 * check_rows > 0: after timing a step, that many sampled rows of every rank
 * are run again by the per-row pass on the same plans and caches, and the
 * batched engine's top-k must equal theirs bit for bit and its attention
 * lie within the caller's bound (opts.close). */
#ifndef CPLAB_EXEC_ENGINE_H
#define CPLAB_EXEC_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "cplab/error.h"
#include "cplab/heads.h"
#include "cplab/scenario.h"

/* Phases a launch unit's time counts to, and segments of a layer. */
enum { EXEC_PHASE_PROJ, EXEC_PHASE_INDEXER, EXEC_PHASE_ATTENTION, EXEC_PHASE_MOE, EXEC_PHASE_COMM, EXEC_ENGINE_PHASES };
enum { EXEC_ENGINE_SEGMENTS = 6 };

typedef struct exec_engine exec_engine;

/* Where the ranks run: nccl 0, every rank in this process on one device;
 * nccl 1, this process is global rank `rank` of `size` (mpi: started by
 * mpirun; 0 only for size 1). */
typedef struct exec_engine_backend {
  int nccl, rank, size, mpi;
} exec_engine_backend;

/* 1 when attention out [heads][dv] / lse [heads] is close enough to
 * want_out / want_lse (the check's bound, the caller's policy). */
typedef int (*exec_engine_close)(const float *out, const float *want_out, const float *lse, const float *want_lse,
                                 size_t heads, size_t dv);

typedef struct exec_engine_opts {
  int reps;                /* timed repetitions of each step */
  int warmup;              /* untimed repetitions before them */
  int layers;              /* layers per step */
  int64_t check_rows;      /* > 0: compare that many sampled rows per step with the per-row pass */
  exec_engine_close close; /* the attention bound of the check (needed with check_rows) */
  int fp8;                 /* projections as fp8 GEMMs (e4m3, per-tensor scales) instead of bf16 */
  /* Query heads of the attention kernels (FlashMLA pads them, and vLLM runs
   * it so): 0 or 1, the real heads; N > 1, each attention call's heads (a
   * rank's, or under DCP its group's for the decode rows) rounded up to a
   * multiple of N (cplab_heads_run, cplab/heads.h), the padding heads zero-filled and their outputs
   * discarded: the real heads are copied into the padded queries and out of
   * the padded results inside the attention piece, so what runs after
   * attention (the DCP combine, W_UV, o_proj) sees the real heads only, as
   * vLLM slices FlashMLA's output before its DCP combine. */
  int head_pad;
} exec_engine_opts;

/* One repetition of one step, in milliseconds. Under NCCL every rank's
 * times reach every process (each the maximum over the processes, a rank's
 * own being the only non-zero one). */
typedef struct exec_engine_times {
  size_t step;
  int rep, layers, world;
  /* [layers][world][EXEC_ENGINE_SEGMENTS][EXEC_ENGINE_PHASES + 1]: per
   * layer, rank and segment the time of each phase's units and, last, of
   * all its units */
  const double *seg;
  const double *out;                /* [world] each rank's output gather after the layers */
  int mixed[EXEC_ENGINE_PHASES];    /* 1 where a graph merged the phase with another */
  double span;                      /* NCCL: the slowest rank's time from its first launch to its step's end;
                                     * NAN on one device */
} exec_engine_times;

/* Receives every timed repetition (a non-zero return stops the run). */
typedef int (*exec_engine_sink)(void *ctx, const exec_engine_times *t, cplab_diag *d);

typedef struct exec_engine_result {
  char runtime_mode[24]; /* what the plan's schedule resolved the graph mode to (first step) */
  int64_t checked_rows;  /* rows compared with the per-row pass, over every rank */
} exec_engine_result;

/* A stream and a cuBLASLt handle on this process's GPU (device 0, or under
 * NCCL its local rank's); CPLAB_ENODEV without a GPU, CPLAB_EUNSUPPORTED for
 * NCCL in a build without it. */
int exec_engine_alloc(const exec_engine_backend *be, exec_engine **out, cplab_diag *d);
void exec_engine_free(exec_engine *e);
/* The device, for the results' provenance. */
int exec_engine_card(char *card, size_t len, cplab_diag *d);
/* Production's head padding on this process's device (FlashMLA's: 64 on
 * sm90 and before, 128 on sm100 and later); CPLAB_ENODEV without a GPU. */
int exec_engine_head_pad_auto(int *pad, cplab_diag *d);
/* 0 when the engine can run layout `name` (registered, and every conversion
 * map the executor's kernels express: exec_layout_supported), else the
 * error naming it. Needs no GPU. */
int exec_engine_layout_supported(const char *name, cplab_diag *d);

/* Run scenario s's steps (under NCCL every process calls this together;
 * the layout must have as many ranks as there are processes, CPLAB_EUSAGE
 * otherwise), handing each timed repetition to sink. CPLAB_EMISMATCH when
 * the check finds the engine's top-k or attention differing from the
 * per-row pass's (the message names the rank, token and value). */
int exec_engine_run(exec_engine *e, const cplab_scenario *s, const exec_engine_opts *o, exec_engine_sink sink,
                    void *ctx, exec_engine_result *res, cplab_diag *d);

#endif
