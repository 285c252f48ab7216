/* sim/sim.h: the simulator program's parts (main.c drives them).
 *   rank_views.c  derive each rank's view, spreading ranks over MPI processes
 *   report.c      the text and JSON reports of a run
 */
#ifndef CPLAB_SIM_H
#define CPLAB_SIM_H

#include <jansson.h>
#include <stdio.h>

#include "cplab/error.h"
#include "cplab/ranks.h"
#include "cplab/scenario.h"

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

/* Every rank's ids and groups, each derived by the process that owns the rank
 * (global rank r is derived by process r mod size) from the layout alone, then
 * gathered on process 0. Other processes get *out = NULL. */
int sim_rank_views(const sim_procs *pr, const cplab_parallel *p, cplab_rank_table **out, cplab_diag *d);

/* The report: resolved scenario, workload summary, rank table. */
json_t *sim_report_json(const cplab_scenario *s, const cplab_rank_table *t);
void sim_report_text(FILE *out, const cplab_scenario *s, const cplab_rank_table *t);

#endif
