#!/bin/sh
# Plan consensus of cplab-exec (no GPU needed): under mpirun every process
# derives its own ranks; a mutant whose ranks derive different plans or
# collectives is stopped at step 0 with the differing field named (exit 1)
# before any collective, on every process, quickly; correct layouts pass.
. "$top_srcdir/tests/lib.sh"
EXEC="$top_builddir/cplab-exec"
if [ "$HAVE_CUDA" != yes ]; then echo "SKIP: cplab-exec is built with CUDA only"; exit 77; fi

expect_exit 0 "one process: smoke agrees" "$EXEC" --plans-only --scenario smoke
expect_exit 1 "one process: rank-local plan stopped" "$EXEC" --plans-only --scenario smoke --layout mutant-rank-local-plan
expect_grep "$WORK/err" "step 0: rank 1 derived a different gathered prefill plan" "names the step, rank and field"
expect_exit 2 "--backend nccl needs one process per rank" "$EXEC" --backend nccl
expect_exit 2 "--plans-only with -o" "$EXEC" --plans-only -o x.h5
expect_exit 2 "--layers beyond the model" "$EXEC" --plans-only --scenario smoke --layers 2
if [ -z "$MPIRUN" ]; then echo "no mpirun: the MPI half is skipped"; finish; fi

for s in smoke mixed pr56157; do
  expect_exit 0 "mpirun -np 2: $s agrees" timeout 120 "$MPIRUN" -np 2 "$EXEC" --plans-only --scenario "$s"
done
expect_exit 0 "mpirun -np 3 (uneven): mixed agrees" timeout 120 "$MPIRUN" -np 3 "$EXEC" --plans-only --scenario mixed
catch() { # layout, scenario, what the message names
  start=$(date +%s%N)
  expect_exit 1 "mpirun -np 2: $1 stopped" timeout 120 "$MPIRUN" -np 2 "$EXEC" --plans-only --scenario "$2" --layout "$1"
  end=$(date +%s%N)
  expect_grep "$WORK/err" "$3" "$1: $3"
  echo "# $1 on $2: stopped after $(( (end - start) / 1000000 )) ms (mpirun start-up included)"
}
catch mutant-rank-local-plan smoke "different gathered prefill plan"
catch mutant-rank-local-plan mixed "would issue different DCP collectives\|different gathered prefill plan"
catch mutant-no-short-replication mixed "step 19: rank 2 derived a different"
finish
