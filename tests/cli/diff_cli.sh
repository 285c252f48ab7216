#!/bin/sh
# cplab-diff end to end: today's traces of the built-in scenarios agree with
# the golden ones; how divergences are reported (which mutant is caught where:
# the mutants' declarations (cplab-sim --list-mutants), run by tests/cli/mutants.sh); exit codes 0/1/2 like h5diff.
. "$top_srcdir/tests/lib.sh"
DIFF="$top_builddir/cplab-diff"
GOLDEN="$top_srcdir/tests/golden"

# The golden smoke trace carries the numeric pass (--numeric), pr56157's only plans.
for s in smoke pr56157; do
  numeric=; [ "$s" = smoke ] && numeric=--numeric
  "$SIM" --scenario "$s" $numeric -q -o "$WORK/$s.h5" 2>/dev/null
  expect_exit 0 "$s agrees with its golden trace" "$DIFF" -q "$GOLDEN/$s.h5" "$WORK/$s.h5"
  expect_exit 0 "$s golden trace is rank-invariant" "$DIFF" --ranks -q "$GOLDEN/$s.h5"
done
expect_exit 0 "numeric rank checks run" "$DIFF" --ranks "$GOLDEN/smoke.h5"
expect_grep "$WORK/out" "^decode combine  *[1-9]" "decode rows compared with single-device attention"
expect_grep "$WORK/out" "^replicated rows  *[1-9]" "replicated rows compared across ranks"

# A decode row's attention altered on one rank: both numeric rank checks fire.
PY=
for p in python3 /usr/bin/python3; do
  if [ -z "$PY" ] && "$p" -c 'import h5py' >/dev/null 2>&1; then PY=$p; fi
done
if [ -n "$PY" ]; then
  mkdir -p "$WORK/alt" && cp "$WORK"/smoke.*h5 "$WORK/alt/"
  "$PY" - "$WORK/alt/smoke.r0000.h5" <<'PYEOF'
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    a = f["steps/000001/layers/000/attn_out"]
    v = a[...]; v[0, 0, :] += 0.5; a[...] = v
PYEOF
  expect_exit 1 "an altered decode row is caught" "$DIFF" --ranks "$WORK/alt/smoke.h5"
  expect_grep "$WORK/out" "^decode-combine: rank 0 step 1 layer 0 local token 0" "as a wrong combine"
  expect_grep "$WORK/out" "^replicated-rows: step 1 layer 0: global token 0 differs between ranks 0 and 1" \
    "and as a replicated row that differs"
else
  echo "no h5py: the altered-trace case is skipped"
fi
expect_exit 0 "JSON report" "$DIFF" --json "$GOLDEN/smoke.h5" "$WORK/smoke.h5"
expect_grep "$WORK/out" '"differences": 0' "JSON says 0 differences"

# How --ranks words what it finds, on mixed (TP2/PCP2/DCP4, I=4); the rules
# each mutant breaks and where: the mutants' declarations (cplab-sim --list-mutants).
"$SIM" --scenario mixed -q -o "$WORK/mixed.h5" 2>/dev/null
words() { # mutant, then phrases its report must carry
  m=$1; shift
  "$SIM" --scenario mixed --layout "$m" -q -o "$WORK/$m.h5" 2>/dev/null
  "$DIFF" --ranks -n 1000 "$WORK/$m.h5" >"$WORK/out" 2>&1
  for w in "$@"; do expect_grep "$WORK/out" "$w" "$m: says $w"; done
}
words mutant-rank-local-plan "issue different DCP collectives: a real run hangs"
words mutant-no-short-replication "every rank needs a row of every prefill"
words mutant-empty-context "empty-context: layout mutant-empty-context accepted a prefill region of extent 0"

# Two layouts of one scenario compare what the layout does not decide (the
# numeric pass's top-k, scores, attention, cache digests): block-aligned
# agrees with vllm. Which mutant which diff catches on which scenario is
# the mutants' declarations (cplab-sim --list-mutants) (tests/cli/mutants.sh); here only how two of them are reported.
for l in vllm block-aligned mutant-no-short-replication mutant-prefill-block-bound; do
  "$SIM" --scenario smoke --layout "$l" --numeric -q -o "$WORK/num-$l.h5" 2>/dev/null
done
expect_exit 0 "block-aligned computes what vllm computes" "$DIFF" "$WORK/num-vllm.h5" "$WORK/num-block-aligned.h5"
expect_grep "$WORK/out" "^layout-specific" "says what it skipped"
"$DIFF" "$WORK/num-vllm.h5" "$WORK/num-mutant-no-short-replication.h5" >"$WORK/out" 2>&1
expect_grep "$WORK/out" "^sampled_tokens: rank 1 step 0" "a mutant's run that samples other rows: names rank and step"
"$DIFF" "$WORK/num-vllm.h5" "$WORK/num-mutant-prefill-block-bound.h5" >"$WORK/out" 2>&1
expect_grep "$WORK/out" "^attn_out: rank 0 step 0 layer 0 token 1 (request 0, position 1) head 0 column" \
  "the pre-fix conversion: in the attention output, named by token, request, position and head"

# Errors.
expect_exit 2 "runs of different scenarios" "$DIFF" "$WORK/smoke.h5" "$WORK/mixed.h5"
expect_grep "$WORK/err" "not comparable" "says why"
expect_exit 2 "a missing file" "$DIFF" "$WORK/none.h5" "$WORK/smoke.h5"
expect_exit 2 "--ranks on a rank file" "$DIFF" --ranks "$WORK/smoke.r0000.h5"
expect_exit 2 "one file without --ranks" "$DIFF" "$WORK/smoke.h5"
# --policy: a file that cannot be read is an I/O error with no line or
# column; only a file jansson parses has a position.
expect_exit 2 "a missing policy file" "$DIFF" --policy "$WORK/nofile.json" "$WORK/smoke.h5" "$WORK/smoke.h5"
expect_grep "$WORK/err" "cannot open '$WORK/nofile.json': No such file or directory \[CPLAB_EIO\]" \
  "is CPLAB_EIO, naming the file and the reason"
grep -q 'nofile.json:-\?[0-9]' "$WORK/err" && fail "a missing policy file has no line or column" ||
  pass "a missing policy file has no line or column"
expect_exit 2 "a directory as the policy" "$DIFF" --policy "$WORK" "$WORK/smoke.h5" "$WORK/smoke.h5"
expect_grep "$WORK/err" "is not a regular file \[CPLAB_EIO\]" "is CPLAB_EIO"
printf '{"attn_out": {"atol": 1e-3,\n  "rtol": }}\n' >"$WORK/bad.json"
expect_exit 2 "a malformed policy file" "$DIFF" --policy "$WORK/bad.json" "$WORK/smoke.h5" "$WORK/smoke.h5"
expect_grep "$WORK/err" "bad.json:2:11: .*\[CPLAB_ESYNTAX\]" "is CPLAB_ESYNTAX at its line and column"
printf '{"attn_out": {"atol": 1e-3}}\n' >"$WORK/ok.json"
expect_exit 0 "a valid policy file" "$DIFF" -q --policy "$WORK/ok.json" "$WORK/smoke.h5" "$WORK/smoke.h5"
finish
