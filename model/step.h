/* model/step.h: a step's predicted time, from the plans' per-rank work.
 *
 * For every step of a scenario and every rank, the rank's plan is derived
 * and its work counted exactly as cplab-bench --dry-run does
 * (cplab_rank_plan_derive, cplab_bench_work_of). Each rank's layer is then
 * cut into cplab-bench's six segments between collectives
 * (exec/engine_internal.h), each segment's pieces costed:
 *   0  cache-insert and decode-query gathers; projections (all of them: the
 *      model does not split q_a..W_UK from W_UV/o_proj); the rank's
 *      prefill workspace shard (gather_upconvert)
 *   1  key and workspace all-gathers; indexer logits and top-k (prefill:
 *      causal pairs; decode: this DCP rank's own keys)
 *   2  the decode candidates' all-gather and merge (DCP); conversion and
 *      sparse MLA (prefill with the rank's H/T heads; decode-path rows with
 *      the DCP group's heads)
 *   3  the decode partials' gathers
 *   4  o_proj all-reduce and MoE dispatch gathers; the MoE block
 *   5  the MoE combine
 * and the step's time is cplab-bench's arithmetic (bench/layers/steptime.c,
 * called, not copied): the sum over segments of the slowest rank, times
 * the layers, plus the slowest rank's output gather; less the graph mode's
 * measured launch saving per layer. TPOT is the mean over the decode steps.
 *
 * Kernels come from the cost table (table.h). Projections and MoE have no
 * kernel-bench rows, so their times are lines fitted on cplab-bench's
 * measured phases (calib.h):
 *   proj = a + b * GFLOP;  moe = a + b * GB of expert weights read + c * GFLOP
 * (expert weights read: the shard's experts the rows touch, expected over
 * uniform routing, plus the shared expert's slice, in bf16). Collectives
 * come from the link model (link.h): NCCL tiers, or on the single-device
 * backend device copies at half the copy ceiling plus a fitted latency.
 * Overlap is not modelled: the executor does not overlap.
 */
#ifndef CPLAB_MODEL_STEP_H
#define CPLAB_MODEL_STEP_H

#include "cplab/error.h"
#include "cplab/heads.h"
#include "cplab/scenario.h"
#include "link.h"
#include "table.h"

enum { CPLAB_MODEL_PHASES = 5 }; /* proj, indexer, attention, moe, comm (cplab-bench's) */

typedef struct cplab_model_params {
  double proj_a_us, proj_us_per_gflop;
  double moe_a_us, moe_us_per_gb, moe_us_per_gflop;
  double copy_latency_us;    /* one device-copy collective of the single-device backend */
  /* Per layer and step, by graph mode (eager 0, piecewise, full) and step
   * kind (decode only 0, with a prefill 1): launches a graph saves. */
  double graph_saving_us[3][2];
} cplab_model_params;

typedef struct cplab_model_inputs {
  const cplab_model_table *table; /* NULL: features only (no kernel is looked up) */
  const cplab_model_link *link;   /* NCCL backend; NULL: the single-device backend */
  double copy_gbps;               /* single-device backend: the copy ceiling, read + write counted */
  const cplab_model_params *params;
  int layers;      /* decoder layers per step */
  int extrapolate; /* allow lookups outside the table (table.h) */
  /* A card not at hand, from its parameters (--card): kernel times and the
   * fitted lines divided by its compute and memory-bandwidth ratios to the
   * card the tables were measured on (0: 1). Compute-bound: prefill
   * attention and logits, GEMM FLOP terms; the others memory-bound. */
  double compute_scale, memory_scale;
  /* Memory (0: not reported): the card's bytes, the fraction a serving
   * engine may use (vLLM's gpu_memory_utilization), bytes per weight. */
  double card_gb, mem_util, weight_bytes;
  /* Sparse MLA's query heads a rank runs, rounded up to a multiple of
   * head_pad (0 or 1: the real heads; cplab/heads.h): FlashMLA's sparse kernels run 64 or
   * 128 heads a block, and vLLM pads a rank's heads up to them (64 on sm90,
   * 128 on sm100). The attention kernels are looked up at the padded heads;
   * the LSE combine runs the real ones. */
  int head_pad;
} cplab_model_inputs;

/* What calibration fits against, per step averaged: the slowest rank's. */
typedef struct cplab_model_features {
  double proj_gflop, moe_gb, moe_gflop;
  double copy_colls, copy_us; /* single-device comm: collectives, and their bytes at the copy rate */
} cplab_model_features;

typedef struct cplab_model_result {
  double step_ms;                       /* TTFT (a prefill) or TPOT (mean decode step) */
  double phase_ms[CPLAB_MODEL_PHASES];  /* summed as the step is */
  cplab_model_features features;
  int extrapolated; /* table lookups outside the measured shapes */
  /* The busiest rank's memory at the last step: weights (attention and
   * indexer from the plan's projection FLOP / 2 per token, its MoE shard,
   * embeddings split over TP) and its KV shard (656 + 132 B a token and
   * layer: the fp8_ds_mla entry and the indexer key); max_context: the
   * longest context per request of the batch that fits in card_gb *
   * mem_util beside the weights (0 when card_gb is 0 or nothing fits). */
  double weights_gb, kv_gb, max_context;
  int graph;        /* 0 eager, 1 piecewise, 2 full: the plan's runtime mode */
  int moe_fast_path;
} cplab_model_result;

const char *cplab_model_phase_name(int p); /* "proj", ..., "comm" */

int cplab_model_predict(const cplab_scenario *s, const cplab_model_inputs *in, cplab_model_result *out,
                        cplab_diag *d);

#endif
