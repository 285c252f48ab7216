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
# Every catch of the plan consensus that the mutants declare (their
# "cplab-exec --plans-only" claims, run in one process by tests/cli/mutants.sh)
# stops the run under mpirun too, with the message of the one-process run.
catch() { # layout, scenario, what the table says the consensus names
  "$EXEC" --plans-only --scenario "$2" --layout "$1" >/dev/null 2>"$WORK/one"
  start=$(date +%s%N)
  expect_exit 1 "mpirun -np 2: $1 on $2 stopped" timeout 120 "$MPIRUN" -np 2 "$EXEC" --plans-only --scenario "$2" --layout "$1"
  end=$(date +%s%N)
  expect_grep "$WORK/err" "different $3" "$1 on $2: names the $3"
  msg=$(sed -n 's/.*error: \(step [0-9]*: .*\)/\1/p' "$WORK/one" | head -1)
  if [ -n "$msg" ] && grep -qF -- "$msg" "$WORK/err"; then pass "$1 on $2: the message of the one-process run ($msg)"
  else fail "$1 on $2: not the one-process run's message '$msg'"; fi
  echo "# $1 on $2: stopped after $(( (end - start) / 1000000 )) ms (mpirun start-up included)"
}
catches=0
sh "$top_srcdir/tools/mutants-table.sh" --tsv "$top_builddir/cplab-sim" >"$WORK/mutants.tsv" || fail "no catalogue of mutants"
while IFS='	' read -r m bug breaks needs c1 c2 c3 c4 c5 cell <&3; do
  case $m in '#'* | '') continue ;; esac
  printf '%s\n' "$cell" | tr ';' '\n' >"$WORK/entries"
  while read -r s ex part <&4; do
    if [ "$ex" = 1 ]; then catch "$m" "$s" "$part"; catches=$((catches + 1)); fi
  done 4<"$WORK/entries"
done 3<"$WORK/mutants.tsv"
[ "$catches" -gt 0 ] && pass "$catches catches of the catalogue run under mpirun" || fail "no mutant declares a catch of the consensus"
finish
