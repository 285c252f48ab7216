/* bench/layers/engine.h: cplab-bench's measurement engine (built with CUDA):
 * one configuration of the matrix (dryrun.h's cplab_bench_config) run on
 * the GPU and timed.
 *
 * What runs (engine_internal.h lists the pieces): every logical rank of the
 * layout, each with its own caches, either all on one device (cplab-exec's
 * single-device backend) or one MPI rank per GPU (its NCCL backend); its plan's batched attention path (the executor's
 * kernels over all its tokens), the projections and o_proj as cuBLASLt GEMMs
 * at the model's shapes, and its MoE shard on the path the plan chooses;
 * the DCP all-gathers of gathered blocks and decode partials carry real
 * data (device copies between ranks on one device, NCCL on several), the
 * plan's other collectives are device copies of the bytes a rank would
 * receive on one device and NCCL calls of the plan's sizes on several. Each
 * step is prepared before timing (plans, index lists, MoE routing), so the
 * timed work is launches only and can be captured in CUDA graphs: the
 * plan's runtime mode decides (NONE: eager; PIECEWISE: graphs around
 * everything but attention; FULL: the whole layer in graphs).
 *
 * Timing: CUDA events around each piece (eager) or graph (graph modes), per
 * rank. Ranks meet at the collectives, so on one device a segment between
 * two collectives lasts as long as its slowest rank: a step's time is the
 * sum over layers and segments of the slowest rank's segment time, plus the
 * step's output gather (steptime.h); under NCCL, where the collectives make
 * the ranks wait for each other, it is the slowest rank's time from its
 * first launch to its step's end, every rank started together. TTFT samples are prefill steps; a TPOT sample is
 * the mean step time of the workload's M decode steps. The layers of a step
 * are identical (the same weights and caches). */
#ifndef CPLAB_BENCH_ENGINE_H
#define CPLAB_BENCH_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cplab/error.h"
#include "dryrun.h"
#include "report.h"

typedef struct cplab_bench_engine cplab_bench_engine;

typedef struct cplab_bench_engine_opts {
  int reps;           /* timed repetitions (samples) */
  int warmup;         /* untimed repetitions before them */
  int layers;         /* layers per step */
  int64_t check_rows; /* > 0: after timing, compare that many sampled rows per step with cplab-exec's pass */
  int fp8;            /* projections as fp8 GEMMs (e4m3, per-tensor scales) instead of bf16 */
} cplab_bench_engine_opts;

typedef struct cplab_bench_measured {
  size_t n;
  double *samples_ms;                  /* [n] (malloc'd) */
  double phase_ms[CPLAB_BENCH_PHASES]; /* median per phase; NAN where graphs merge phases */
  char runtime_mode[24];
  int64_t checked_rows;                /* rows compared with the executor (0 without check_rows) */
} cplab_bench_measured;
void cplab_bench_measured_free(cplab_bench_measured *m);

/* A stream and a cuBLASLt handle on this process's GPU (device 0, or under
 * NCCL its local rank's); CPLAB_ENODEV without a GPU, CPLAB_EUNSUPPORTED for
 * NCCL in a build without it. */
int cplab_bench_engine_create(cplab_bench_engine **out, const cplab_bench_backend *be, cplab_diag *d);
void cplab_bench_engine_free(cplab_bench_engine *e);
/* The device, for the results' provenance. */
int cplab_bench_engine_card(char *card, size_t len, cplab_diag *d);

/* Measure configuration c (under NCCL every process calls this together;
 * the layout must have as many ranks as there are processes, CPLAB_EUSAGE
 * otherwise). CPLAB_EMISMATCH when a check finds the engine's top-k or
 * attention differing from the executor's (the message names the rank,
 * token and value). */
int cplab_bench_engine_measure(cplab_bench_engine *e, const cplab_bench_config *c, const cplab_bench_engine_opts *o,
                               cplab_bench_measured *out, cplab_diag *d);

/* Measure every configuration of matrix m (layouts, then workloads, then
 * graph modes; a graph mode whose batches run as an earlier one's is
 * measured once) into r (initialised by the caller; meta filled here from
 * the device, the date, the build's commit and `command`; finished, i.e.
 * with statistics). A progress line per configuration goes to progress
 * (NULL: none; under NCCL only rank 0 should pass one). Under NCCL every
 * layout must have as many ranks as there are processes (CPLAB_EUSAGE
 * before anything is measured otherwise). */
int cplab_bench_measure_matrix(const cplab_bench_matrix *m, const cplab_bench_engine_opts *o,
                               const cplab_bench_backend *be, const char *command, cplab_bench_results *r,
                               FILE *progress, cplab_diag *d);

#endif
