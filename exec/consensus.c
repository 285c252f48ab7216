/* Plan consensus: see consensus.h. */
#include "consensus.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

void exec_consensus_words(const cplab_rank_plan *p, uint64_t w[EXEC_CONSENSUS_WORDS]) {
  cplab_rank_plan_part_digests(p, w);
  for (int k = 0; k < 3; k++) w[CPLAB_PLAN_PART_COUNT + k] = cplab_rank_plan_collective_digest(p, (cplab_group_kind)k);
}

int exec_consensus_check(const uint64_t *all, const cplab_rank_table *t, size_t step, cplab_diag *d) {
  for (int r = 1; r < t->world; r++)
    for (int i = 0; i < CPLAB_PLAN_PART_COUNT; i++)
      if (all[(size_t)r * EXEC_CONSENSUS_WORDS + i] != all[i])
        CPLAB_FAIL(d, CPLAB_EDISAGREE,
                   "step %zu: rank %d derived a different %s than rank 0; stopping every rank before NCCL would hang",
                   step, r, cplab_plan_part_name((cplab_plan_part)i));
  for (int r = 0; r < t->world; r++)
    for (int k = 0; k < 3; k++) {
      int lead = cplab_rank_table_members(t, (cplab_group_kind)k, r)[0];
      size_t at = CPLAB_PLAN_PART_COUNT + (size_t)k;
      if (all[(size_t)r * EXEC_CONSENSUS_WORDS + at] != all[(size_t)lead * EXEC_CONSENSUS_WORDS + at])
        CPLAB_FAIL(d, CPLAB_EDISAGREE,
                   "step %zu: ranks %d and %d would issue different %s collectives (kind, size or order); stopping "
                   "every rank before NCCL would hang",
                   step, lead, r, cplab_group_name((cplab_group_kind)k));
    }
  return 0;
}

int exec_consensus_mpi(const uint64_t *mine, int nmine, const cplab_rank_table *t, size_t step, cplab_diag *d) {
  int size, me;
  if (MPI_Comm_size(MPI_COMM_WORLD, &size) != MPI_SUCCESS || MPI_Comm_rank(MPI_COMM_WORLD, &me) != MPI_SUCCESS)
    CPLAB_FAIL(d, CPLAB_EMPI, "cannot query MPI_COMM_WORLD");
  int per = (t->world + size - 1) / size, count = per * EXEC_CONSENSUS_WORDS;
  uint64_t *send = calloc((size_t)count, sizeof *send), *recv = calloc((size_t)count * (size_t)size, sizeof *recv);
  uint64_t *all = calloc((size_t)t->world * EXEC_CONSENSUS_WORDS, sizeof *all);
  int rc = 0;
  if (!send || !recv || !all) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory for consensus");
  if (!rc) {
    memcpy(send, mine, sizeof *send * (size_t)nmine * EXEC_CONSENSUS_WORDS);
    if (MPI_Allgather(send, count, MPI_UINT64_T, recv, count, MPI_UINT64_T, MPI_COMM_WORLD) != MPI_SUCCESS)
      rc = cplab_diag_set(d, CPLAB_EMPI, "step %zu: MPI_Allgather of plan digests failed", step);
  }
  /* Process p sent ranks p, p + size, ... in order. */
  for (int p = 0; !rc && p < size; p++)
    for (int j = 0, r = p; r < t->world; j++, r += size)
      memcpy(all + (size_t)r * EXEC_CONSENSUS_WORDS, recv + (size_t)p * count + (size_t)j * EXEC_CONSENSUS_WORDS,
             sizeof *all * EXEC_CONSENSUS_WORDS);
  if (!rc) rc = exec_consensus_check(all, t, step, d);
  free(send), free(recv), free(all);
  return rc;
}
