/* bench/layers/dryrun.h: cplab-bench --dry-run. For every configuration of
 * the matrix, every rank's plan-derived work per layer and step
 * (plancost.h), without a GPU: what each set of parallel sizes asks of each
 * rank, how even the ranks' shares are, and which graph mode and MoE path
 * each batch runs. */
#ifndef CPLAB_BENCH_DRYRUN_H
#define CPLAB_BENCH_DRYRUN_H

#include <stdio.h>

#include "matrix.h"
#include "plancost.h"

/* One configuration's work: per rank, averaged over the workload's steps. */
typedef struct cplab_bench_plan_cost {
  int world;
  cplab_bench_work *ranks;  /* [world] */
  char runtime_mode[24];    /* of the first step (every step of a workload runs in the same mode) */
  int moe_fast_path;
  int pcp;                  /* PCP size: the MoE's PCP paths exist only above 1 */
} cplab_bench_plan_cost;

/* Derive every rank's plans of every step of scenario s. */
int cplab_bench_plan_cost_of(const cplab_scenario *s, cplab_bench_plan_cost *out, cplab_diag *d);
void cplab_bench_plan_cost_free(cplab_bench_plan_cost *c);

/* One configuration of the matrix, with its scenario and plan cost. */
typedef struct cplab_bench_config {
  const cplab_bench_parallel *parallel;
  const cplab_bench_workload *workload;
  cplab_graph_mode graph;
  const cplab_scenario *scenario;
  const cplab_bench_plan_cost *cost; /* attn_flop_run with the matrix's head padding */
  cplab_bench_heads heads;           /* each rank's query heads, real and run */
  char title[256]; /* "pcp4, prefill 32768 in / 1 out, eager" */
} cplab_bench_config;

/* The head padding a matrix's configurations count (--dry-run, and
 * measuring once the device resolved auto): auto counts 64, none 0. */
int cplab_bench_head_pad_of(const cplab_bench_matrix *m);

/* Call fn for every configuration, parallel sizes outermost, then workloads, then
 * graph modes. A configuration whose batches would run in the same runtime
 * graph mode as an earlier mode of the same parallel sizes and workload (a
 * prefill under "full" runs piecewise) is skipped: it would be measured
 * twice. A nonzero return of fn stops the walk and is returned. */
typedef int (*cplab_bench_config_fn)(void *ctx, const cplab_bench_config *c, cplab_diag *d);
int cplab_bench_for_each(const cplab_bench_matrix *m, cplab_bench_config_fn fn, void *ctx, cplab_diag *d);

/* The dry run: a text table per configuration, or (json) one JSON document. */
int cplab_bench_dry_run(const cplab_bench_matrix *m, FILE *out, int json, cplab_diag *d);

#endif
