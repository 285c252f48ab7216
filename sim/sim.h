/* sim/sim.h: the simulator program's parts (main.c drives them).
 *   rank_views.c  processes (one, or an MPI job), gathering rows of int64, rank table
 *   plans.c       every rank's plan of every step, derived by the process owning the rank
 *   check.c       the §10.1 invariants over all ranks of a step (check.h)
 *   report.c      the text and JSON reports of a run
 */
#ifndef CPLAB_SIM_H
#define CPLAB_SIM_H

#include <jansson.h>
#include <stdio.h>

#include "cplab/error.h"
#include "cplab/ranks.h"
#include "check.h"
#include "numeric.h"
#include "cplab/scenario.h"
#include "cplab/trace.h"

/* The processes this run is spread over: one, or an MPI job. */
typedef struct sim_procs {
  int rank, size; /* this process among size processes */
  int mpi;        /* 1 when MPI was initialised (launched by mpirun) */
} sim_procs;

/* Initialise MPI only when launched by mpirun, so that a plain run needs no
 * MPI runtime set-up. */
int sim_procs_init(sim_procs *pr, int *argc, char ***argv, cplab_diag *d);
void sim_procs_fini(sim_procs *pr);
/* Agree on an error: returns the first non-zero rc of any process (0 if none). */
int sim_procs_agree(const sim_procs *pr, int rc);

/* Totals on process 0: the sum of *count and the maximum of *seconds over
 * every process. */
int sim_procs_totals(const sim_procs *pr, int64_t *count, double *seconds, cplab_diag *d);

/* Gather fixed-length int64 rows from every process on process 0 (*all is
 * NULL elsewhere). */
int sim_gather_rows(const sim_procs *pr, const int64_t *mine, int nmine, int len, int64_t **all, int *nall,
                    cplab_diag *d);

/* Every rank's ids and groups, each derived by the process that owns the rank
 * (global rank r is derived by process r mod size) from the layout alone, then
 * gathered on process 0. Other processes get *out = NULL. */
int sim_rank_views(const sim_procs *pr, const cplab_parallel *p, cplab_rank_table **out, cplab_diag *d);

/* Where and how to write the trace (path NULL: no trace). Each process
 * writes the files of the ranks it derives; process 0 writes the run file
 * last, so that a complete run file means complete rank files. */
typedef struct sim_trace_target {
  const char *path;
  cplab_trace_provenance prov;
} sim_trace_target;

/* One rank's plan of one step, as the process that derived it reports it. */
enum {
  SIM_PR_RANK = 0,
  SIM_PR_ROWS,
  SIM_PR_DECODE_ROWS,
  SIM_PR_TOKENS,
  SIM_PR_DECODE_TOKENS,
  SIM_PR_PREFILL_CHUNKS,
  SIM_PR_INDEXER_CHUNKS,
  SIM_PR_COLLECTIVES,
  SIM_PR_SHARED_DIGEST,
  SIM_PR_COLL_DIGEST, /* three: TP, PCP, DCP */
  SIM_PR_FIELDS = SIM_PR_COLL_DIGEST + 3
};

/* What rank 0's plan says about a step (the shared schedule). */
typedef struct sim_step_info {
  int64_t padded_tokens, dispatch_rows, dispatch_tokens, dispatch_longest;
  int runtime_mode, moe_fast_path, all_rows_replicated;
} sim_step_info;

#define SIM_KEEP_DISAGREEMENTS 8

typedef struct sim_plans {
  size_t num_steps;
  int world;
  int64_t *rows;        /* process 0: [step][rank][SIM_PR_FIELDS] */
  sim_step_info *info;  /* process 0: [step] */
  int64_t disagreements; /* ranks whose shared digest or group collectives differ */
  int kept;
  char first[SIM_KEEP_DISAGREEMENTS][256];
  int checked;           /* full invariant check ran (--check) */
  int numeric_layers;    /* layers the numeric pass ran (0: none) */
  int64_t numeric_rows;  /* process 0: sampled rows the numeric pass computed (all processes) */
  double numeric_seconds; /* process 0: the slowest process's time in the numeric pass */
  cplab_check check;
} sim_plans;

/* Derive every rank's plan of every step (rank r by process r mod size),
 * run the numeric pass of the selected layers on each (numeric->enabled),
 * compare digests on process 0, and with full_check (one process only) check
 * every invariant over all ranks of each step. */
int sim_plans_run(const sim_procs *pr, const cplab_scenario *s, const cplab_layout *layout, const cplab_rank_table *t,
                  int full_check, const sim_numeric_opts *numeric, const sim_trace_target *trace, sim_plans *out,
                  cplab_diag *d);
void sim_plans_free(sim_plans *p);

/* The report: resolved scenario, workload summary, rank table, plans. */
json_t *sim_report_json(const cplab_scenario *s, const cplab_rank_table *t, const sim_plans *plans);
void sim_report_text(FILE *out, const cplab_scenario *s, const cplab_rank_table *t, const sim_plans *plans);

#endif
