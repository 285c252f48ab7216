/* cplab/ranks.h: global rank -> (pp, pcp, tp, dcp) ids and group members,
 * with vLLM's numbering (shared/reference/vllm-pcp-dcp.md §1):
 *   rank     = pp·PCP·TP + pcp·TP + tp          (TP fastest)
 *   TP group : same (pp, pcp), members by tp
 *   PCP group: same (pp, tp), members by pcp (stride TP)
 *   DCP group: within one pp slice, order ranks by tp·PCP + pcp and cut that
 *              list into runs of DCP: a DCP group spans PCP first, then TP;
 *              dcp_rank = (tp·PCP + pcp) mod DCP.
 *
 * Every function derives one rank's view from the layout alone (no table
 * needed); cplab_rank_table gathers all ranks for printing and checking.
 */
#ifndef CPLAB_RANKS_H
#define CPLAB_RANKS_H

#include "cplab/error.h"
#include "cplab/parallel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cplab_group_kind { CPLAB_GROUP_TP = 0, CPLAB_GROUP_PCP, CPLAB_GROUP_DCP } cplab_group_kind;

typedef struct cplab_rank_ids {
  int rank;
  int pp, pcp, tp;
  int dcp_rank;                           /* position in the DCP group */
  int tp_group, pcp_group, dcp_group;     /* group indices, 0-based, dense per kind */
} cplab_rank_ids;

/* Where decode queries gather their heads before attending (§1.4). */
typedef enum cplab_q_gather {
  CPLAB_Q_GATHER_NONE = 0, /* dcp == 1, or dcp == pcp: peers already hold the same heads */
  CPLAB_Q_GATHER_DCP,      /* pcp == 1: classic DCP inside TP */
  CPLAB_Q_GATHER_TP,       /* dcp == tp·pcp > pcp: heads gathered over TP */
} cplab_q_gather;

/* How decode partial outputs are combined after the LSE all-gather (§1.4). */
typedef enum cplab_combine {
  CPLAB_COMBINE_NONE = 0, /* dcp == 1 */
  CPLAB_COMBINE_AG_AR,    /* pcp > 1: all-gather lse, all-reduce out */
  CPLAB_COMBINE_AG_RS,    /* pcp == 1: all-gather lse, reduce-scatter out over heads */
} cplab_combine;

/* The ids of one global rank. The layout must have passed cplab_parallel_check. */
int cplab_rank_ids_get(const cplab_parallel *p, int rank, cplab_rank_ids *out, cplab_diag *d);

int cplab_group_size(const cplab_parallel *p, cplab_group_kind kind);
int cplab_group_count(const cplab_parallel *p, cplab_group_kind kind);
const char *cplab_group_name(cplab_group_kind kind);

/* Members of rank's group of the given kind, in rank-in-group order; members
 * must hold cplab_group_size() ints. */
int cplab_group_members(const cplab_parallel *p, cplab_group_kind kind, int rank, int *members, cplab_diag *d);

cplab_q_gather cplab_q_gather_group(const cplab_parallel *p);
/* The TP rank of each member of rank's DCP group, in dcp_rank order
 * (member_tp holds dcp ints): member o attends with the heads of TP rank
 * member_tp[o]. */
int cplab_dcp_member_tp(const cplab_parallel *p, int rank, int *member_tp, cplab_diag *d);
/* Head blocks of a rank's decode partial (traces/SCHEMA.md
 * attn_partial_out): 1 where the DCP peers hold the same heads
 * (cplab_q_gather_group NONE: dcp 1, or dcp = pcp), else dcp: after vLLM's
 * query all-gather a rank attends over its shard with the heads of every
 * member, block o being member o's. */
int cplab_dcp_partial_blocks(const cplab_parallel *p);
const char *cplab_q_gather_name(cplab_q_gather g);
cplab_combine cplab_combine_kind(const cplab_parallel *p);
const char *cplab_combine_name(cplab_combine c);

/* Every rank of a layout, with its group members. */
typedef struct cplab_rank_table {
  cplab_parallel par;
  int world;
  cplab_rank_ids *ids; /* [world] */
  int *members[3];     /* per kind: [world][group size]: row r = r's group */
} cplab_rank_table;

/* Every rank filled in (blank_alloc + fill_rank for each rank). */
cplab_rank_table *cplab_rank_table_alloc(const cplab_parallel *p, cplab_diag *d);
/* Storage only (ranks -1), for tables assembled from ranks derived elsewhere. */
cplab_rank_table *cplab_rank_table_blank_alloc(const cplab_parallel *p, cplab_diag *d);
/* Derive rank's row from the layout alone. */
int cplab_rank_table_fill_rank(cplab_rank_table *t, int rank, cplab_diag *d);
void cplab_rank_table_free(cplab_rank_table *t);

/* Row r of members[kind]. */
static inline const int *cplab_rank_table_members(const cplab_rank_table *t, cplab_group_kind kind, int rank) {
  return t->members[kind] + (size_t)rank * (size_t)cplab_group_size(&t->par, kind);
}

#ifdef __cplusplus
}
#endif
#endif /* CPLAB_RANKS_H */
