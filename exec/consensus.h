/* exec/consensus.h: plan consensus before each step. Every rank reduces its
 * own plan to a few digests (the parts of the shared plan, and the ordered
 * collectives it will issue on its TP, PCP and DCP groups); the digests of all
 * ranks are exchanged over MPI (or compared in place when one process runs
 * every rank), and any disagreement stops every rank with the first differing
 * field named — instead of the hang the mismatched NCCL calls would cause.
 * Needs no GPU. */
#ifndef CPLAB_EXEC_CONSENSUS_H
#define CPLAB_EXEC_CONSENSUS_H

#include <stddef.h>
#include <stdint.h>

#include "cplab/error.h"
#include "cplab/plan.h"
#include "cplab/ranks.h"

#define EXEC_CONSENSUS_WORDS (CPLAB_PLAN_PART_COUNT + 3)

/* The words a rank contributes: the plan parts, then its collectives'
 * digests on the TP, PCP and DCP groups. */
void exec_consensus_words(const cplab_rank_plan *p, uint64_t w[EXEC_CONSENSUS_WORDS]);

/* Check the words of every rank ([world][EXEC_CONSENSUS_WORDS]): plan parts
 * equal to rank 0's, collectives equal within every group. 0, or
 * CPLAB_EDISAGREE naming the step, the ranks and the first differing field. */
int exec_consensus_check(const uint64_t *all, const cplab_rank_table *t, size_t step, cplab_diag *d);

/* MPI: process p contributes the words of the ranks it runs (nmine of them,
 * global ranks p, p + size, ...), every process receives all of them and
 * checks; all processes return the same result. */
int exec_consensus_mpi(const uint64_t *mine, int nmine, const cplab_rank_table *t, size_t step, cplab_diag *d);

#endif
