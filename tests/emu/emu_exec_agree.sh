#!/bin/sh
# cplab-exec (single-device backend) on the emulated kernels against
# cplab-sim --numeric, as tests/exec/exec_agree.sh does on a GPU: cplab-diff
# agreement (plans, conversions and digests exact; top-k modulo ties; floats
# by policy) and rank-invariance of the executor's trace, for smoke and for
# generated scenarios that span the layouts (TP1; PCP2; PCP2/DCP2 with
# interleave 64; PCP4/DCP4; TP2/DCP2; TP2/PCP2/DCP2). Then a mutant layout
# run through the executor differs from the simulator's correct one, and one
# whose conversion no kernel expresses is refused.
. "$top_srcdir/tests/lib.sh"
EXEC="$top_builddir/tests/emu/cplab-exec-emu"
DIFF="$top_builddir/cplab-diff"
sh "$top_srcdir/tools/gen-scenarios.sh" 8 "$WORK/gen"

for s in smoke "$WORK"/gen/gen-000.json "$WORK"/gen/gen-001.json "$WORK"/gen/gen-003.json \
  "$WORK"/gen/gen-004.json "$WORK"/gen/gen-006.json "$WORK"/gen/gen-007.json; do
  n=$(basename "$s" .json)
  expect_exit 0 "$n: sim --numeric" "$SIM" --scenario "$s" --numeric -q -o "$WORK/$n-sim.h5"
  expect_exit 0 "$n: exec (emulated kernels)" "$EXEC" --scenario "$s" -o "$WORK/$n-exec.h5"
  sed 's/^/  /' "$WORK/out"
  expect_exit 0 "$n: exec agrees with sim" "$DIFF" -n 20 "$WORK/$n-sim.h5" "$WORK/$n-exec.h5"
  sed 's/^/  /' "$WORK/out" | tail -11
  expect_exit 0 "$n: exec's trace is rank-invariant" "$DIFF" --ranks -q "$WORK/$n-exec.h5"
done

# The layout that de-interleaves the gathered indexer keys wrongly: the
# executor runs it (every rank derives the same wrong plan), and its trace
# differs from the correct layout's.
s="$WORK/gen/gen-003.json"
expect_exit 0 "mutant: exec runs mutant-bad-deinterleave" "$EXEC" --scenario "$s" --layout mutant-bad-deinterleave \
  -o "$WORK/mutant-exec.h5"
expect_exit 1 "mutant: exec's trace differs from sim's correct one" "$DIFF" -q "$WORK/gen-003-sim.h5" \
  "$WORK/mutant-exec.h5"

# A layout whose prefill conversion departs from the gathered arrangement
# (include/cplab/layout.h, .departs) is no map the conversion kernel
# expresses: the executor refuses it, naming the layout and the op, instead
# of running the layout's rule on the host (the diff would compare it with
# itself).
expect_exit 2 "mutant: exec refuses mutant-prefill-block-bound" "$EXEC" --scenario smoke \
  --layout mutant-prefill-block-bound -o "$WORK/refused.h5"
expect_grep "$WORK/err" "layout mutant-prefill-block-bound: its own convert_prefill is no map the prefill conversion" \
  "the refusal names the layout and the op"
finish
