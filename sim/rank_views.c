/* Rank views spread over processes: each process derives only the ranks it
 * owns, from the layout alone, and process 0 assembles what they derived.
 * With one process (no mpirun) it loops over every rank the same way. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/cli.h"
#include "sim.h"

int sim_procs_init(sim_procs *pr, int *argc, char ***argv, cplab_diag *d) {
  *pr = (sim_procs){0, 1, 0};
  if (!cplab_cli_under_mpirun()) return 0;
  if (MPI_Init(argc, argv) != MPI_SUCCESS) CPLAB_FAIL(d, CPLAB_EMPI, "MPI_Init failed");
  pr->mpi = 1;
  if (MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN) != MPI_SUCCESS ||
      MPI_Comm_rank(MPI_COMM_WORLD, &pr->rank) != MPI_SUCCESS ||
      MPI_Comm_size(MPI_COMM_WORLD, &pr->size) != MPI_SUCCESS)
    CPLAB_FAIL(d, CPLAB_EMPI, "cannot query MPI_COMM_WORLD");
  return 0;
}

void sim_procs_fini(sim_procs *pr) {
  if (pr->mpi) MPI_Finalize();
  pr->mpi = 0;
}

int sim_procs_totals(const sim_procs *pr, int64_t *count, double *seconds, cplab_diag *d) {
  if (!pr->mpi) return 0;
  int64_t c = *count;
  double t = *seconds;
  if (MPI_Reduce(&c, count, 1, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD) != MPI_SUCCESS ||
      MPI_Reduce(&t, seconds, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
    CPLAB_FAIL(d, CPLAB_EMPI, "cannot total the numeric pass over processes");
  return 0;
}

int sim_procs_agree(const sim_procs *pr, int rc) {
  if (!pr->mpi) return rc;
  int worst = rc;
  if (MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS) return CPLAB_EMPI;
  return worst;
}

/* One rank's row as ints: ids, then TP, PCP, DCP members. */
static int row_len(const cplab_parallel *p) { return 8 + p->tp + p->pcp + p->dcp; }

static void pack_row(const cplab_rank_table *t, int r, int64_t *row) {
  const cplab_rank_ids *id = &t->ids[r];
  const int head[8] = {id->rank, id->pp, id->pcp, id->tp, id->dcp_rank, id->tp_group, id->pcp_group, id->dcp_group};
  int off = 0;
  for (int i = 0; i < 8; i++) row[off++] = head[i];
  for (int k = 0; k < 3; k++) {
    int n = cplab_group_size(&t->par, (cplab_group_kind)k);
    const int *m = cplab_rank_table_members(t, (cplab_group_kind)k, r);
    for (int i = 0; i < n; i++) row[off++] = m[i];
  }
}

static int unpack_row(cplab_rank_table *t, const int64_t *row, cplab_diag *d) {
  int r = (int)row[0];
  if (r < 0 || r >= t->world) CPLAB_FAIL(d, CPLAB_EMPI, "a process sent rank %d outside the world", r);
  if (t->ids[r].rank != -1) CPLAB_FAIL(d, CPLAB_EMPI, "rank %d was derived by two processes", r);
  t->ids[r] = (cplab_rank_ids){(int)row[0], (int)row[1], (int)row[2], (int)row[3],
                                (int)row[4], (int)row[5], (int)row[6], (int)row[7]};
  int off = 8;
  for (int k = 0; k < 3; k++) {
    int n = cplab_group_size(&t->par, (cplab_group_kind)k);
    int *m = t->members[k] + (size_t)r * (size_t)n;
    for (int i = 0; i < n; i++) m[i] = (int)row[off++];
  }
  return 0;
}

int sim_gather_rows(const sim_procs *pr, const int64_t *mine, int nmine, int len, int64_t **all, int *nall,
                    cplab_diag *d) {
  int count = nmine * len, *counts = NULL, *displs = NULL, rc = 0;
  *all = NULL;
  *nall = 0;
  if (pr->rank == 0) {
    counts = calloc((size_t)pr->size, sizeof(int));
    displs = calloc((size_t)pr->size, sizeof(int));
    if (!counts || !displs) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  }
  if (MPI_Gather(&count, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
    rc = cplab_diag_set(d, CPLAB_EMPI, "MPI_Gather of row counts failed");
  int total = 0;
  if (pr->rank == 0 && !rc) {
    for (int i = 0; i < pr->size; i++) {
      displs[i] = total;
      total += counts[i];
    }
    *all = malloc((size_t)(total ? total : 1) * sizeof(int64_t));
    if (!*all) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  }
  if (MPI_Gatherv(mine, count, MPI_INT64_T, *all, counts, displs, MPI_INT64_T, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
    rc = cplab_diag_set(d, CPLAB_EMPI, "MPI_Gatherv of rows failed");
  *nall = total / len;
  free(counts);
  free(displs);
  return rc;
}

int sim_rank_views(const sim_procs *pr, const cplab_parallel *p, cplab_rank_table **out, cplab_diag *d) {
  *out = NULL;
  cplab_rank_table *mine = cplab_rank_table_blank_alloc(p, d);
  if (!mine) return d->code ? d->code : CPLAB_ENOMEM;
  int rc = 0, nmine = 0;
  for (int r = pr->rank; r < mine->world && !rc; r += pr->size, nmine++) rc = cplab_rank_table_fill_rank(mine, r, d);
  if (!pr->mpi) {
    if (rc) cplab_rank_table_free(mine);
    else *out = mine;
    return rc;
  }
  /* Enter the gathers together or not at all. */
  int any = sim_procs_agree(pr, rc);
  if (any) {
    cplab_rank_table_free(mine);
    return rc ? rc : cplab_diag_set(d, any, "another process failed to derive its ranks");
  }
  int len = row_len(p);
  int64_t *rows = calloc((size_t)(nmine ? nmine : 1) * (size_t)len, sizeof(int64_t));
  if (!rows) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  for (int i = 0; !rc && i < nmine; i++) pack_row(mine, pr->rank + i * pr->size, rows + (size_t)i * len);
  int64_t *all = NULL;
  int nall = 0;
  if (!rc) rc = sim_gather_rows(pr, rows, nmine, len, &all, &nall, d);
  free(rows);
  cplab_rank_table_free(mine);
  if (!rc && pr->rank == 0) {
    cplab_rank_table *t = cplab_rank_table_blank_alloc(p, d);
    if (!t) rc = d->code ? d->code : CPLAB_ENOMEM;
    for (int i = 0; !rc && i < nall; i++) rc = unpack_row(t, all + (size_t)i * len, d);
    for (int r = 0; !rc && t && r < t->world; r++)
      if (t->ids[r].rank != r) rc = cplab_diag_set(d, CPLAB_EMPI, "no process derived rank %d", r);
    if (rc) cplab_rank_table_free(t);
    else *out = t;
  }
  free(all);
  return rc;
}
