#!/bin/sh
# Ranks spread over MPI processes derive the same report as one process
# looping over them (principle 1: local views), for more and fewer processes
# than ranks.
. "$top_srcdir/tests/lib.sh"
if [ -z "$MPIRUN" ]; then echo "SKIP: no mpirun"; exit 77; fi

for scenario in smoke pr56157 mixed; do
  "$SIM" --scenario "$scenario" --json >"$WORK/one.json" 2>"$WORK/err" || { fail "$scenario single process"; continue; }
  for np in 2 3 5; do
    if timeout 120 "$MPIRUN" -np "$np" "$SIM" --scenario "$scenario" --json >"$WORK/many.json" 2>"$WORK/err" &&
       cmp -s "$WORK/one.json" "$WORK/many.json"; then
      pass "$scenario: $np processes = 1 process"
    else
      fail "$scenario: $np processes differ from 1 process"; sed 's/^/  | /' "$WORK/err" | head -5
    fi
  done
done

# Under mpirun each process writes its own ranks' trace files: the same data
# (only /provenance, which names the MPI library, may differ).
mkdir -p "$WORK/one" "$WORK/many"
"$SIM" --scenario mixed -q -o "$WORK/one/t.h5" 2>/dev/null
timeout 120 "$MPIRUN" -np 3 "$SIM" --scenario mixed -q -o "$WORK/many/t.h5" 2>"$WORK/err"
if command -v h5diff >/dev/null 2>&1; then
  same=1
  for r in 0 1 2 3; do
    h5diff -q --exclude-path /provenance "$WORK/one/t.r000$r.h5" "$WORK/many/t.r000$r.h5" || same=0
  done
  [ $same = 1 ] && pass "rank trace files: 3 processes = 1 process (h5diff)" || fail "rank trace files differ under mpirun"
else
  echo "h5diff not installed: skipped the trace comparison"
fi
"$top_builddir/cplab-trace" validate -q "$WORK/many/t.h5" && pass "the MPI-written run validates" || fail "the MPI-written run is invalid"

# A mutant's disagreement is found the same way across processes.
"$SIM" --scenario mixed --layout mutant-no-short-replication --json >"$WORK/one.json" 2>/dev/null
timeout 120 "$MPIRUN" -np 3 "$SIM" --scenario mixed --layout mutant-no-short-replication --json \
  >"$WORK/many.json" 2>"$WORK/err"
if cmp -s "$WORK/one.json" "$WORK/many.json" && grep -q '"disagreements": [1-9]' "$WORK/many.json"; then
  pass "mutant disagreement: 3 processes = 1 process"
else fail "mutant disagreement differs under mpirun"; fi
expect_exit 2 "--check under mpirun is refused" timeout 120 "$MPIRUN" -np 2 "$SIM" --check -q
expect_grep "$WORK/err" "needs every rank's plans in one process" "says why"

# An error on every process is reported, and the job exits 2.
expect_exit 2 "mpirun with an invalid scenario" timeout 120 "$MPIRUN" -np 2 "$SIM" \
  --scenario "$top_srcdir/tests/scenarios/invalid/dcp_zero.json"
expect_grep "$WORK/err" "parallel.dcp: must be in \[1, 65536\], got 0" "error reported under mpirun"
finish
