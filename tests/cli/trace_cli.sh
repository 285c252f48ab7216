#!/bin/sh
# Traces end to end: cplab-sim -o writes a run, the same run twice gives the
# same bytes, cplab-trace validates, lists and dumps it with the documented
# exit codes, damaged files are rejected, and h5dump and h5py read it.
. "$top_srcdir/tests/lib.sh"
TRACE="$top_builddir/cplab-trace"

expect_exit 2 "-o into a missing directory" "$SIM" --scenario smoke -q -o "$WORK/missing/x.h5"
mkdir -p "$WORK/a" "$WORK/b"
expect_exit 0 "cplab-sim -o smoke.h5" "$SIM" --scenario smoke -q -o "$WORK/a/smoke.h5"
for f in smoke.h5 smoke.r0000.h5 smoke.r0001.h5; do
  [ -s "$WORK/a/$f" ] && pass "wrote $f" || fail "no $f"
done
ls "$WORK/a" | grep -q tmp && fail "temporary files left behind" || pass "no temporary files left"
cp "$WORK"/a/smoke.* "$WORK/b/"
"$SIM" --scenario smoke -q -o "$WORK/a/smoke.h5"  # the same command again
for f in smoke.h5 smoke.r0000.h5 smoke.r0001.h5; do
  cmp -s "$WORK/a/$f" "$WORK/b/$f" && pass "$f byte-identical across runs" || fail "$f differs between two runs"
done
expect_exit 2 "-o with another extension" "$SIM" --scenario smoke -o "$WORK/x.txt"
expect_grep "$WORK/err" "use NAME.h5 for a trace or NAME.json" "names the choice"

expect_exit 0 "validate the run" "$TRACE" validate "$WORK/a/smoke.h5"
expect_grep "$WORK/out" "valid cplab trace (schema 1.2.0)" "says valid"
expect_exit 0 "validate a rank file" "$TRACE" validate -q "$WORK/a/smoke.r0001.h5"
expect_exit 0 "ls" "$TRACE" ls "$WORK/a/smoke.h5"
expect_grep "$WORK/out" "run file from sim" "ls names the kind"
expect_grep "$WORK/out" "rank 1: 3 steps" "ls lists the ranks"
expect_exit 0 "dump" "$TRACE" dump "$WORK/a/smoke.h5" --rank 1 --step 1
expect_grep "$WORK/out" "step 1 of rank 1 (pcp 1, tp 0, dcp_rank 1)" "dump header"
expect_grep "$WORK/out" "mla_kv_gather" "dump lists the collectives"
# Schema 1.1: the rank's groups as its file records them (smoke: TP1/PCP2/DCP2).
expect_grep "$WORK/out" "^groups: pp_rank 0, pcp_rank 1, tp_rank 0, dcp_rank 1$" "dump shows the rank's ids"
expect_grep "$WORK/out" "^  TP group 1: 1$" "dump lists the TP group"
expect_grep "$WORK/out" "^  PCP group 0: 0 1$" "dump lists the PCP group"
expect_grep "$WORK/out" "^  DCP group 0: 0 1$" "dump lists the DCP group"
# Files of schema 1.0 (the fuzz corpus' smoke rank file) stay valid and dump without groups.
OLD="$top_srcdir/tests/fuzz/corpus/rank-smoke.h5"
expect_exit 0 "validate a schema 1.0 trace" "$TRACE" validate "$OLD"
expect_grep "$WORK/out" "valid cplab trace (schema 1.0.0)" "says valid, with its own version"
expect_exit 0 "dump a schema 1.0 trace" "$TRACE" dump "$OLD" --step 1
expect_grep "$WORK/out" "^groups: not recorded (schema 1.0.0)$" "says the groups are not recorded"
# The numeric pass stores each sampled row's valid top-k count (1.1), and cplab-diff compares it.
mkdir -p "$WORK/n"
expect_exit 0 "cplab-sim --numeric -o" "$SIM" --scenario smoke --numeric -q -o "$WORK/n/smoke.h5"
expect_exit 0 "validate the numeric trace (topk_valid agrees with topk)" "$TRACE" validate "$WORK/n/smoke.h5"
expect_exit 0 "diff the numeric trace with itself" "$top_builddir/cplab-diff" "$WORK/n/smoke.h5" "$WORK/n/smoke.h5"
expect_grep "$WORK/out" "^topk_valid  *28  *0 " "topk_valid is compared, row by row"

head -c 30000 "$WORK/a/smoke.r0001.h5" >"$WORK/cut.h5"
expect_exit 1 "a truncated file is invalid" "$TRACE" validate "$WORK/cut.h5"
expect_grep "$WORK/err" "cut.h5" "names the file"
cp "$WORK/a/smoke.h5" "$WORK/alone.h5"
expect_exit 1 "a run file without its rank files is invalid" "$TRACE" validate "$WORK/alone.h5"
expect_exit 2 "a missing file is an error" "$TRACE" validate "$WORK/none.h5"
expect_exit 2 "unknown command" "$TRACE" frob "$WORK/a/smoke.h5"
# ls and dump judge nothing (validate does): a file they cannot read, or a
# step or rank that is not in it, is an error (exit 2, h5diff's), never 1.
expect_exit 2 "ls of a truncated file is an error" "$TRACE" ls "$WORK/cut.h5"
expect_grep "$WORK/err" "cut.h5: cannot open as HDF5 (truncated or damaged?)" "names the file and the damage"
expect_exit 2 "dump of a truncated file is an error" "$TRACE" dump "$WORK/cut.h5"
expect_exit 2 "ls of a run whose rank files are missing is an error" "$TRACE" ls "$WORK/alone.h5"
expect_grep "$WORK/err" "rank 0's file .*smoke.r0000.h5' is missing" "names the missing rank file"
expect_exit 2 "dump of a run whose rank files are missing is an error" "$TRACE" dump "$WORK/alone.h5"
expect_exit 2 "ls of a missing file is an error" "$TRACE" ls "$WORK/none.h5"
expect_exit 2 "dump of a step that does not exist" "$TRACE" dump "$WORK/a/smoke.h5" --step 9
expect_grep "$WORK/err" "no step 9 (the trace has 3)" "names the step"
expect_grep "$WORK/err" "\[CPLAB_EUSAGE\]" "as a usage error"
expect_exit 2 "dump of a step that does not exist in a rank file" "$TRACE" dump "$WORK/a/smoke.r0001.h5" --step 99
expect_grep "$WORK/err" "no step 99 (the trace has 3)" "names the step"
expect_exit 2 "dump of a rank that does not exist" "$TRACE" dump "$WORK/a/smoke.h5" --rank 7
expect_grep "$WORK/err" "no rank 7 in .*smoke.h5 (its world has 2)" "names the rank and the world"
expect_grep "$WORK/err" "\[CPLAB_EUSAGE\]" "as a usage error"

if command -v h5dump >/dev/null 2>&1; then
  expect_exit 0 "h5dump reads the header" h5dump -H "$WORK/a/smoke.r0000.h5"
  expect_grep "$WORK/out" 'ATTRIBUTE "cplab_schema"' "h5dump sees the schema version"
else
  echo "h5dump not installed: skipped that check"
fi
# Debian's python3-h5py lives in /usr/bin/python3, which another python3 on PATH may hide.
PY=""
for p in python3 /usr/bin/python3; do
  if [ -z "$PY" ] && "$p" -c 'import h5py' >/dev/null 2>&1; then PY=$p; fi
done
if [ -n "$PY" ]; then
  sed -n '/^```python$/,/^```$/p' "$top_srcdir/docs/traces-python.md" | sed '1d;$d' |
    sed "s|/tmp/smoke.h5|$WORK/a/smoke.h5|" >"$WORK/example.py"
  expect_exit 0 "the Python example of docs/traces-python.md" "$PY" "$WORK/example.py"
  expect_grep "$WORK/out" "^1.2.0 2 3$" "h5py reads the root attributes"
  expect_grep "$WORK/out" "^r0001 rows:" "h5py follows the rank links"
else
  echo "python3-h5py not installed: skipped that check"
fi
finish
