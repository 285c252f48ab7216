/* Rank numbering and groups: see include/cplab/ranks.h. */
#include "cplab/ranks.h"

#include <stdlib.h>

static const char *const group_names[] = {"TP", "PCP", "DCP"};

const char *cplab_group_name(cplab_group_kind kind) {
  return (kind >= CPLAB_GROUP_TP && kind <= CPLAB_GROUP_DCP) ? group_names[kind] : "?";
}

int cplab_group_size(const cplab_parallel *p, cplab_group_kind kind) {
  switch (kind) {
    case CPLAB_GROUP_TP: return p->tp;
    case CPLAB_GROUP_PCP: return p->pcp;
    case CPLAB_GROUP_DCP: return p->dcp;
  }
  return 0;
}

int cplab_group_count(const cplab_parallel *p, cplab_group_kind kind) {
  int size = cplab_group_size(p, kind);
  return size > 0 ? cplab_parallel_world(p) / size : 0;
}

int cplab_rank_ids_get(const cplab_parallel *p, int rank, cplab_rank_ids *out, cplab_diag *d) {
  int world = cplab_parallel_world(p);
  if (rank < 0 || rank >= world)
    CPLAB_FAIL(d, CPLAB_ERANGE, "rank %d is outside the world [0, %d)", rank, world);
  int slice = p->pcp * p->tp;
  int tp = rank % p->tp;
  int pcp = (rank / p->tp) % p->pcp;
  int pp = rank / slice;
  int flat = tp * p->pcp + pcp; /* position in the DCP (transposed) order */
  *out = (cplab_rank_ids){
      .rank = rank,
      .pp = pp,
      .pcp = pcp,
      .tp = tp,
      .dcp_rank = flat % p->dcp,
      .tp_group = pp * p->pcp + pcp,
      .pcp_group = pp * p->tp + tp,
      .dcp_group = pp * (slice / p->dcp) + flat / p->dcp,
  };
  return 0;
}

int cplab_group_members(const cplab_parallel *p, cplab_group_kind kind, int rank, int *members, cplab_diag *d) {
  cplab_rank_ids id;
  int rc = cplab_rank_ids_get(p, rank, &id, d);
  if (rc) return rc;
  int base = id.pp * p->pcp * p->tp;
  switch (kind) {
    case CPLAB_GROUP_TP:
      for (int t = 0; t < p->tp; t++) members[t] = base + id.pcp * p->tp + t;
      return 0;
    case CPLAB_GROUP_PCP:
      for (int c = 0; c < p->pcp; c++) members[c] = base + c * p->tp + id.tp;
      return 0;
    case CPLAB_GROUP_DCP: {
      int first = (id.tp * p->pcp + id.pcp) / p->dcp * p->dcp;
      for (int j = 0; j < p->dcp; j++) {
        int flat = first + j;
        members[j] = base + (flat % p->pcp) * p->tp + flat / p->pcp;
      }
      return 0;
    }
  }
  CPLAB_FAIL(d, CPLAB_EINVAL, "unknown group kind %d", (int)kind);
}

cplab_q_gather cplab_q_gather_group(const cplab_parallel *p) {
  if (p->dcp == 1) return CPLAB_Q_GATHER_NONE;
  if (p->pcp == 1) return CPLAB_Q_GATHER_DCP;
  return p->dcp > p->pcp ? CPLAB_Q_GATHER_TP : CPLAB_Q_GATHER_NONE;
}

int cplab_dcp_partial_blocks(const cplab_parallel *p) {
  return cplab_q_gather_group(p) == CPLAB_Q_GATHER_NONE ? 1 : p->dcp;
}

int cplab_dcp_member_tp(const cplab_parallel *p, int rank, int *member_tp, cplab_diag *d) {
  int *m = malloc(sizeof *m * (size_t)p->dcp);
  if (!m) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  int rc = cplab_group_members(p, CPLAB_GROUP_DCP, rank, m, d);
  for (int o = 0; o < p->dcp && !rc; o++) {
    cplab_rank_ids id;
    rc = cplab_rank_ids_get(p, m[o], &id, d);
    member_tp[o] = id.tp;
  }
  free(m);
  return rc;
}

const char *cplab_q_gather_name(cplab_q_gather g) {
  switch (g) {
    case CPLAB_Q_GATHER_NONE: return "none";
    case CPLAB_Q_GATHER_DCP: return "DCP";
    case CPLAB_Q_GATHER_TP: return "TP";
  }
  return "?";
}

cplab_combine cplab_combine_kind(const cplab_parallel *p) {
  if (p->dcp == 1) return CPLAB_COMBINE_NONE;
  return p->pcp > 1 ? CPLAB_COMBINE_AG_AR : CPLAB_COMBINE_AG_RS;
}

const char *cplab_combine_name(cplab_combine c) {
  switch (c) {
    case CPLAB_COMBINE_NONE: return "none";
    case CPLAB_COMBINE_AG_AR: return "lse-allgather+out-allreduce";
    case CPLAB_COMBINE_AG_RS: return "lse-allgather+out-reducescatter";
  }
  return "?";
}

void cplab_rank_table_free(cplab_rank_table *t) {
  if (!t) return;
  free(t->ids);
  for (int k = 0; k < 3; k++) free(t->members[k]);
  free(t);
}

cplab_rank_table *cplab_rank_table_blank_alloc(const cplab_parallel *p, cplab_diag *d) {
  if (cplab_parallel_check(p, 0, d)) return NULL;
  cplab_rank_table *t = calloc(1, sizeof *t);
  if (!t) goto oom;
  t->par = *p;
  t->world = cplab_parallel_world(p);
  t->ids = calloc((size_t)t->world, sizeof *t->ids);
  if (!t->ids) goto oom;
  for (int r = 0; r < t->world; r++) t->ids[r].rank = -1;
  for (int k = 0; k < 3; k++) {
    t->members[k] = calloc((size_t)t->world * (size_t)cplab_group_size(p, (cplab_group_kind)k), sizeof(int));
    if (!t->members[k]) goto oom;
  }
  return t;
oom:
  cplab_diag_set(d, CPLAB_ENOMEM, "out of memory allocating the rank table for world %d", cplab_parallel_world(p));
  cplab_rank_table_free(t);
  return NULL;
}

int cplab_rank_table_fill_rank(cplab_rank_table *t, int rank, cplab_diag *d) {
  if (rank < 0 || rank >= t->world)
    CPLAB_FAIL(d, CPLAB_ERANGE, "rank %d is outside the world [0, %d)", rank, t->world);
  int rc = cplab_rank_ids_get(&t->par, rank, &t->ids[rank], d);
  for (int k = 0; !rc && k < 3; k++) {
    int *row = t->members[k] + (size_t)rank * (size_t)cplab_group_size(&t->par, (cplab_group_kind)k);
    rc = cplab_group_members(&t->par, (cplab_group_kind)k, rank, row, d);
  }
  return rc;
}

cplab_rank_table *cplab_rank_table_alloc(const cplab_parallel *p, cplab_diag *d) {
  cplab_rank_table *t = cplab_rank_table_blank_alloc(p, d);
  for (int r = 0; t && r < t->world; r++) {
    if (cplab_rank_table_fill_rank(t, r, d)) {
      cplab_rank_table_free(t);
      return NULL;
    }
  }
  return t;
}
